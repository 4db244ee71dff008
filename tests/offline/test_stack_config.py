"""The stack-file loader against issue 30's classes: a number where text belongs is refused at its key (never
made text), a scalar YAML 1.1 and 1.2 read apart reaches the program as the Pulumi CLI reads it (YAML 1.2; the
engine tests hold the two readers together), YAML types no stack config holds are refused at their line, and keys
that collapse into one once read are refused naming both. Values other than the issue's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import ROOT

from infra.__main__ import main as cli_main
from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.offline.stack_config import StackFileError, load_stack_config

DEV = json.loads(json.dumps(load_stack_config("dev").get("platform")))
PLACE = "@@RAW@@"


def _stack(tmp_path: Path, platform: Any, raw: str = "") -> Path:
    """A stack file holding `platform` as JSON (which is YAML), where the string PLACE becomes `raw` unquoted."""
    text = json.dumps({"config": {"gpu-ci:platform": platform}}, indent=2).replace(f'"{PLACE}"', raw)
    path = tmp_path / "Pulumi.probe.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    platform = json.loads(json.dumps(DEV))
    node = platform
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return platform


TEXT_FIELDS = [
    ("cluster", "version"),
    ("cluster", "name"),
    ("runner", "chart_version"),
    ("runner", "namespace"),
    ("ci", "stage"),
    ("profiles", "rl", "variables", "HYPEROPT_EPOCHS"),
    ("profiles", "supervised", "families", 0),
    ("runner", "tags", 1),
    ("gitlab", "project"),
]
"""Text fields of the dev spec, where YAML's numbers land when a value is not quoted."""
NUMBER_SPELLINGS = ["1.40", "2.10", "0644", "0x2A", "0b101", "2.0e+2", "+3", "-0", ".25", "1e3", "0O17"]
"""Unquoted numbers to the Pulumi CLI (the issue's: 1.30, 3.10, 0755, 0x1F, 1.0e+3); `.inf` is no number it can
pass on and `7_500` one YAML readers read apart, both refused by the loader (tests/support/stack_files.py)."""


@pytest.mark.parametrize("spelling", NUMBER_SPELLINGS)
@pytest.mark.parametrize("field", TEXT_FIELDS, ids=[".".join(map(str, f)) for f in TEXT_FIELDS])
def test_a_number_in_a_text_field_is_refused_at_its_key_never_converted(
    tmp_path: Path, field: tuple[str | int, ...], spelling: str
) -> None:
    config = load_stack_config("probe", ROOT, _stack(tmp_path, _with(field, PLACE), spelling))
    with pytest.raises(SpecError) as caught:
        load_platform(config.get("platform"))
    (line,) = str(caught.value).splitlines()
    key = ".".join(["platform", *map(str, field)])
    assert line.startswith(f"{key}="), line
    assert "is a number, and this key takes text: quote it as you typed it" in line


CLI_READINGS: dict[str, Any] = {
    "on": "on",
    "No": "No",
    "YES": "YES",
    "off": "off",
    "y": "y",
    "1e3": 1000,
    "0o17": 15,
    "-.5": -0.5,
    "1.5e3": 1500,
    "08": 8,
    "0X1F": 31,
    "+.5": 0.5,
}
"""Plain scalars PyYAML's YAML 1.1 and the CLI's YAML 1.2 read apart, as the CLI hands them to the program."""


@pytest.mark.parametrize(("raw", "cli"), CLI_READINGS.items())
def test_a_spelling_yaml_1_1_and_1_2_read_apart_reaches_the_program_as_the_cli_reads_it(
    tmp_path: Path, raw: str, cli: Any
) -> None:
    """Text stays the text written (`on` is no boolean to the CLI); a number stays a number, which a text field
    refuses at its key."""
    config = load_stack_config("probe", ROOT, _stack(tmp_path, _with(("cluster", "name"), PLACE), raw))
    value = config.get("platform")["cluster"]["name"]
    assert (value, type(value)) == (cli, type(cli))
    if not isinstance(cli, str):
        with pytest.raises(SpecError) as caught:
            load_platform(config.get("platform"))
        assert str(caught.value).startswith("platform.cluster.name="), str(caught.value)


@pytest.mark.parametrize(
    ("raw", "tag"),
    [
        ("!!binary Z2xwYXQtWHl6MTIzNDU2Nzg5MGFiY2RlZg==", "!!binary"),
        ("!!set {a: null}", "!!set"),
        ("!!omap [{a: 1}]", "!!omap"),
        ("!!pairs [{a: 1}]", "!!pairs"),
        ("!!python/tuple [1, 2]", "!!python/tuple"),
        ("!gpu-ci 1", "!gpu-ci"),
        ("!!float 0200", "!!float"),
        ("!!bool yes", "!!bool"),
        ("!!int 7", "!!int"),
        ('! "2"', "!"),
        ("!!map [1, 2]", "!!map"),
        ("!!str [1, 2]", "!!str"),
    ],
)
def test_a_yaml_type_no_stack_config_holds_is_one_line_at_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: str, tag: str
) -> None:
    path = _stack(tmp_path, _with(("registry", "namespace"), PLACE), raw)
    assert cli_main(["plan", "--json", "--config", str(path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {path.name}:"), line
    assert f"{tag} at config.gpu-ci:platform.registry.namespace is an explicit YAML tag" in line
    assert "glpat-" not in line and "Z2xwYXQt" not in line


def test_a_binary_mapping_key_is_refused_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.probe.yaml"
    path.write_text("config:\n  gpu-ci:platform:\n    pools:\n      ? !!binary Y2ktZ3B1\n      : {}\n")
    assert cli_main(["plan", "--json", "--config", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"error: {path.name}:4: !!binary at config.gpu-ci:platform.pools is an explicit YAML tag, which the YAML "
        "readers of Pulumi read apart: write the value without it (`!!str` on text is the one kept)\n"
    )


@pytest.mark.parametrize(
    ("first", "second", "read"),
    [
        ("7", "0o7", "'7'"),
        ("9", '"9"', "'9'"),
        ("0x10", "16", "'16'"),
        ("true", "TRUE", "'true'"),
        ("-0", "0", "'0'"),
        ("017", "15", "'15'"),
    ],
)
def test_two_keys_that_are_one_once_read_are_refused_naming_both(
    tmp_path: Path, first: str, second: str, read: str
) -> None:
    path = tmp_path / "Pulumi.probe.yaml"
    path.write_text(f"config:\n  gpu-ci:platform:\n    pools:\n      {first}: {{}}\n      {second}: {{}}\n")
    with pytest.raises(StackFileError) as caught:
        load_stack_config("probe", ROOT, path)
    message = str(caught.value)
    if first.strip('"') == second.strip('"'):
        assert message == f"{path.name}:5: duplicate key {read}"
    else:
        assert message == (
            f"{path.name}:5: duplicate key '{first}' (line 4) and '{second}', both read as {read}: keep one"
        )


def test_a_short_key_beside_its_namespaced_twin_is_refused_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.probe.yaml"
    path.write_text("config:\n  gitlab:baseUrl: https://gitlab.com/api/v4/\n  gpu-ci:slo: 1\n  slo: 2\n")
    with pytest.raises(StackFileError) as caught:
        load_stack_config("probe", ROOT, path)
    assert str(caught.value) == f"{path.name}:4: 'slo' and 'gpu-ci:slo' (line 3) are both gpu-ci:slo: keep one"


def test_numeric_keys_reach_the_program_as_text_as_json_has_them(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.probe.yaml"
    path.write_text("config:\n  gpu-ci:labels: {8: a, true: b, 0x10: c, -0: d}\n")
    config = load_stack_config("probe", ROOT, path)
    assert config.get("labels") == {"8": "a", "true": "b", "16": "c", "0": "d"}
    assert json.loads(config.as_pulumi_config()["gpu-ci:labels"]) == config.get("labels")


SCALARS = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.sampled_from(["yes", "off", "~", "null", "0o7", "0b1", "0x1f", "1_0", ".5", "1e2", "2024-01-02", "1:30"]),
    st.text(alphabet="0123456789._-+eExob:", min_size=1, max_size=8),
    st.sampled_from(["!!binary YWJj", "!!set {a: null}", "!!float 1", "!!str 1", "!!int 7", "!x y"]),
)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(raw=SCALARS, field=st.sampled_from(TEXT_FIELDS))
def test_any_unquoted_scalar_in_a_text_field_is_refused_or_reaches_the_spec_as_the_json_pulumi_sends(
    tmp_path_factory: pytest.TempPathFactory, raw: str, field: tuple[str | int, ...]
) -> None:
    """Whatever YAML makes of it: one line (the file's or the spec's), or the value JSON would carry; never a
    traceback, and never a number silently turned into text."""
    path = _stack(tmp_path_factory.mktemp("s"), _with(field, PLACE), raw)
    try:
        config = load_stack_config("probe", ROOT, path)
    except StackFileError as err:
        assert str(err).startswith(path.name) and "\n" not in str(err)
        return
    platform = config.get("platform")
    assert json.loads(config.as_pulumi_config()["gpu-ci:platform"]) == platform  # JSON round-trips it
    value: Any = platform
    for part in field:
        value = value[part]
    try:
        load_platform(platform)
    except SpecError as err:
        assert all(line.startswith("platform") for line in str(err).splitlines())
        if not isinstance(value, str):
            assert any(line.startswith(".".join(["platform", *map(str, field)])) for line in str(err).splitlines())
