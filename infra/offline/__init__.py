"""Running the real Pulumi program in-process under recording mocks: the offline plan and the tests."""
