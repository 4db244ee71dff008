"""The pinned requirement files, read the way pip reads ours: `name==version` lines and `-r` includes."""

from __future__ import annotations

from pathlib import Path

from support.paths import ROOT

RUNTIME = ROOT / "requirements.txt"
DEV = ROOT / "requirements-dev.txt"


def pins(path: Path, *, follow_includes: bool = True) -> dict[str, str]:
    """Package name (as written) to its pinned version; `-r FILE` lines are followed unless told not to."""
    found: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            if follow_includes:
                found |= pins(path.parent / line[3:].strip())
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{path.name}: {line!r} is not pinned with =="
        found[name.strip()] = version.strip()
    return found


def pin(package: str) -> str:
    """The version every venv of this repository installs, wherever the pin lives."""
    everything = pins(DEV)
    assert package in everything, f"{package} is pinned in neither requirements.txt nor requirements-dev.txt"
    return everything[package]
