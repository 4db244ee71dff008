"""One Pulumi CLI version, pinned once: `tools/engine/go.mod`'s, which scripts/engine/build builds and tests/engine
runs, is the one the deploy image installs and the docs name (docs/operations.md, "One CLI version").

Each place that names the CLI's version is found by a pattern of its own below; a pattern that finds nothing fails
too, so a reworded line cannot slip out of the check. The built CLI's own answer is checked in tests/engine
(test_engine_readme.py), where it is built.
"""

from __future__ import annotations

import re

import pytest
from support.paths import ROOT
from support.pulumi_cli import GO_MOD, cli_version

ANALYZER_GO_MOD = ROOT / "tools" / "engine" / "analyzer" / "go.mod"
_VERSION = r"v?(\d+\.\d+\.\d+)"
NAMED = (
    (".gitlab-ci.yml", rf"pulumi/pulumi-python:{_VERSION}", "the deploy image", 1),
    (".gitlab-ci.yml", rf"pulumi-plugins-{_VERSION}-", "the preview job's plugin cache, by CLI version", 1),
    ("docs/operations.md", rf"get\.pulumi\.com \| sh -s -- --version {_VERSION}", "the install command", 1),
    ("docs/operations.md", rf"pulumi/pulumi-python:{_VERSION}", "the image, in the CI section", 2),
    ("docs/operations.md", rf"pulumi {_VERSION} and the policy analyzer shim", "what scripts/engine/build builds", 1),
    ("docs/operations.md", rf"pins the Pulumi CLI once, {_VERSION}", "the pin, in One CLI version", 1),
    ("docs/runbook.md", rf"pulumi/pulumi-python:{_VERSION}", "the image to check", 2),
    ("docs/runbook.md", rf"with CLI {_VERSION}", "the S3 backend's check", 1),
    ("README.md", rf"the real CLI \({_VERSION}, in `\.engine/bin/`\)", "the engine tests' CLI", 1),
)
"""(file, pattern whose group is a CLI version, what it is, how many times it appears at least)."""


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@pytest.mark.parametrize(("path", "pattern", "what", "at_least"), NAMED, ids=[f"{n[0]}: {n[2]}" for n in NAMED])
def test_each_place_names_the_pinned_cli(path: str, pattern: str, what: str, at_least: int) -> None:
    found = re.findall(pattern, (ROOT / path).read_text(encoding="utf-8"))
    assert len(found) >= at_least, f"{path}: {what} ({pattern}) found {len(found)} times, expected {at_least}+"
    assert set(found) == {cli_version()}, f"{path}: {what} names {sorted(set(found))}, tools/engine/go.mod pins"


def test_the_cli_is_built_from_one_release_of_pkg_and_sdk() -> None:
    """The CLI's sdk/v3 is the release of its pkg/v3 (go.mod's indirect line): not another SDK's Go code."""
    sdk = re.findall(r"^\tgithub\.com/pulumi/pulumi/sdk/v3 v(\S+) // indirect$", GO_MOD.read_text(), re.MULTILINE)
    assert sdk == [cli_version()]


def test_the_python_sdk_is_not_newer_than_the_cli() -> None:
    """An SDK newer than the CLI that runs it is not supported; an older one is (docs/operations.md says why the
    two differ). Both locks' `.in` files pin the same SDK."""
    pins = {
        name: re.findall(r"^pulumi==(\S+)$", (ROOT / name).read_text(encoding="utf-8"), re.MULTILINE)
        for name in ("requirements.in", "policy/requirements.in")
    }
    assert all(len(found) == 1 for found in pins.values()), pins
    [sdk] = {found[0] for found in pins.values()}
    assert _release(sdk) <= _release(cli_version())
    if sdk != cli_version():  # the docs say why, with the versions as they are
        operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
        assert f"`pulumi=={sdk}` in `requirements.in`" in operations


def test_the_docs_say_why_the_analyzer_shim_is_of_another_release() -> None:
    [shim] = re.findall(r"^require github\.com/pulumi/pulumi/sdk/v3 v(\S+)$", ANALYZER_GO_MOD.read_text(), re.M)
    if shim == cli_version():
        return
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert f"pins `sdk/v3` at v{shim}, the last release" in operations
    assert f"It cannot be of the CLI's\n  release: v{cli_version()}'s sdk module has no `python/dist/`" in operations
