"""The derived platform (pure): `platform.derive(spec) -> Platform`, made of pools, profiles and runners, and the
checks that only the derived platform can make."""
