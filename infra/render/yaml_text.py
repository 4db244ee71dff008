"""YAML for people: `yaml.safe_dump` with multi-line strings as literal blocks (`|`) instead of escaped lines."""

from __future__ import annotations

from typing import Any

import yaml


class _BlockDumper(yaml.SafeDumper):
    """SafeDumper writing strings that span lines as `|` blocks, so embedded TOML or YAML stays readable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_BlockDumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    """Safe YAML, keys sorted, block style, long lines kept whole."""
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=True, default_flow_style=False, width=1000)
