"""Thin Pulumi ComponentResources that turn their slice of the spec and the derived platform, and the text
`build_platform` rendered for them, into resources (a component imports no renderer)."""
