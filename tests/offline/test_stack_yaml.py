"""The stack-file subset (infra/offline/stack_yaml.py): whatever the text, `load_stack_config` returns a config or
raises its one error (`StackFileError`, one line naming the file); plain scalars and numbers as the Pulumi CLI
reads and writes them (each case checked against pulumi 3.274.1: tests/engine/test_engine_stack_files.py holds
the two readers together on the corpus); the line of each key for the messages that name it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import ROOT

from infra.__main__ import main as cli_main
from infra.offline.go_values import PlainScalarError, go_json_number, resolve_plain
from infra.offline.stack_config import StackFileError, load_stack_config

DEV_TEXT = (ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")
PIECES = [
    "!!bool ", "!!bool", "!!map ", "!!float 0", "! ", "!!str ", "!!binary ", "!x ", "<<: ", '"<<": ', "!!merge ",
    "&a ", "*a", "*b", "? ", "? [a, b]\n", '"\\/"', '"\\q', "|-\n\n", ">\n", "|+\n", "%YAML 1.2\n---\n", "%TAG ! x\n",
    "---\n", "...\n", "1e400", "1_0", "_", "~", ".inf", ".nan", "2026-1-3", "8:00", "9" * 30, "0x", "0o", "-0", ": ",
    "- ", "{", "}", "[", "]", ",", "\t", "\ufeff", "\x00", "\u2028", "\x85", "secure: ", "{secure: 1}",
    "environment:\n", "config:\n", "gpu-ci:", "\n", "  ", "#", "'", '"', "\\", "null", "true", "1.0", "-_0",
]  # fmt: skip
"""Pieces of YAML the readers disagree on, or that break a document: inserted into the dev stack's text."""


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """The dev stack with one to three edits: a piece inserted, a span deleted, or a span repeated."""
    text = DEV_TEXT
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "repeat"]))
        if kind == "insert":
            text = text[:at] + draw(st.sampled_from(PIECES)) + text[at:]
        else:
            end = min(len(text), at + draw(st.integers(1, 40)))
            text = text[:at] + (text[at:end] * 2 if kind == "repeat" else "") + text[end:]
    return text


ANY_TEXT = st.one_of(
    mutated(),
    st.lists(st.sampled_from([*PIECES, "a", "1", " ", "config:\n  gpu-ci:x: "]), max_size=30).map("".join),
    st.text(max_size=200).map(lambda t: "config:\n  gpu-ci:x: " + t),
)


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=ANY_TEXT)
def test_whatever_the_text_only_the_loaders_one_line_error_leaves_it(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("s") / "Pulumi.dev.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        config = load_stack_config("dev", path=path)
    except StackFileError as err:  # any other exception fails the test with its traceback
        message = str(err)
        assert message.startswith(path.name) and "\n" not in message, message
        return
    assert set(config.as_pulumi_config()) == set(config.values)


@pytest.mark.parametrize(
    ("plain", "value"),
    [
        ("", None), ("~", None), ("Null", None), ("TRUE", True), ("yes", "yes"), ("on", "on"), ("0755", 0o755),
        ("017", 15), ("08", 8.0), ("0X1F", 31), ("-0b11", -3), ("0o17", 15), ("+12", 12), ("1e3", 1000.0),
        (".5", 0.5), ("-.5", -0.5), ("1.", 1.0), ("9223372036854775807", 2**63 - 1), ("0x", "0x"), ("-", "-"),
        ("1.2.3", "1.2.3"), ("8:00x", "8:00x"), ("a_b", "a_b"), ("2026", 2026), ("1e", "1e"),
    ],
)  # fmt: skip
def test_a_plain_scalar_is_what_yaml_v3_makes_of_it(plain: str, value: object) -> None:
    got = resolve_plain(plain)
    assert (got, type(got)) == (value, type(value))


@pytest.mark.parametrize(
    "plain",
    ["1_000", "-_0", "0_x4", "._34", "15e1_", "9223372036854775808", "-9223372036854775809", "0x1" + "0" * 16,
     "1e400", "1e-400", ".inf", "-.Inf", ".NaN", "2026-1-3", "2026-01-03 10:00:00", "8:00", "1:30.5", "9" * 101],
)  # fmt: skip
def test_a_plain_scalar_outside_the_subset_is_refused(plain: str) -> None:
    with pytest.raises(PlainScalarError):
        resolve_plain(plain)


@pytest.mark.parametrize(
    ("number", "go"),
    [
        (1.0, "1"), (-0.0, "0"), (1e20, "100000000000000000000"), (1e21, "1e+21"), (1e-7, "1e-7"),
        (0.00001, "0.00001"), (2.5e-300, "2.5e-300"), (123456789.123, "123456789.123"), (-1.5e300, "-1.5e+300"),
        (0.1, "0.1"), (2**53 + 1, "9007199254740993"),
    ],
)  # fmt: skip
def test_a_top_level_number_is_the_text_go_writes(number: float, go: str) -> None:
    """As `pulumi config --json` hands them (tests/support/stack_files.py, `floats-top-level`)."""
    assert go_json_number(number) == go


def test_each_key_and_item_has_its_line_and_a_key_the_file_lacks_its_nearest_parents(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(
        "config:\n  platform:\n    pools:\n      a: &p\n        max_sise: 1\n      b:\n        <<: *p\n"
        "    tags: [x,\n      y]\n"
    )
    config = load_stack_config("dev", path=path)
    assert config.line_of(("gpu-ci:platform", "pools", "a", "max_sise")) == 5
    assert config.line_of(("platform", "pools", "b")) == 6
    assert config.line_of(("platform", "pools", "b", "max_sise")) == 5  # merged from a: written there
    assert config.line_of(("platform", "tags", 1)) == 9
    assert config.line_of(("platform", "pools", "c", "min_size")) == 3
    assert config.line_of(("gitlab:baseUrl",)) is None


def test_plan_names_the_file_and_line_of_a_mistyped_spec_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39, item 3: `max_sise` is refused at the line the stack file writes it."""
    lines = DEV_TEXT.splitlines(keepends=True)
    at = next(
        i for i, line in enumerate(lines) if line.strip() == "max_size: 1" and "ci-compile" in "".join(lines[i - 4 : i])
    )
    lines[at] = lines[at].replace("max_size", "max_sise")
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("".join(lines), encoding="utf-8")
    assert cli_main(["plan", "--json", "--config", str(path)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert any(
        e.startswith(f"error: Pulumi.dev.yaml:{at + 1}: platform.pools.ci-compile.max_sise=1: ") for e in errors
    ), errors
