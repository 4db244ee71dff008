"""Helpers the tests share (not tests): fakes, builders and recorded inputs."""
