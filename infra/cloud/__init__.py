"""Thin Pulumi ComponentResources that turn the spec and the rendered text into resources."""
