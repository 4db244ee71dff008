"""The typed platform spec (pure: no Pulumi import). Entry point: `infra.spec.platform.load_spec`."""
