"""The typed platform spec (pure: no Pulumi import). Entry point: `infra.config.platform.load_spec`."""
