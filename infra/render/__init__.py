"""Pure text renderers: each turns the spec into one artifact (no Pulumi import)."""
