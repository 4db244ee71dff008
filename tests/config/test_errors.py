"""Error lines stay short and on one line whatever the value or the key."""

from __future__ import annotations

from infra.config.errors import MAX_SHOWN, Problem, Redacted, format_value, key_path


def test_a_huge_value_is_quoted_to_about_200_characters() -> None:
    shown = format_value("x" * 9_200_000)
    assert len(shown) == MAX_SHOWN and shown.endswith("…")
    assert len(format_value(list(range(100_000)))) == MAX_SHOWN
    assert format_value({"a": "b" * 1000}).startswith("{a: 'bbb")


def test_a_huge_integer_is_described_not_printed() -> None:
    assert format_value(10**5000 - 1) == "<an integer of about 5000 digits>"


def test_keys_and_reasons_with_newlines_stay_on_one_line() -> None:
    line = str(Problem(key_path("pools", "ci-compile\n"), "x", "no such pool (pools: ci-compile\n, system)"))
    assert line == "platform.pools.'ci-compile\\n'='x': no such pool (pools: ci-compile\\n, system)"
    assert len(key_path("pools", "p" * 10_000)) < 100


def test_a_credential_is_never_echoed() -> None:
    assert str(Problem("platform.ci.variables.HF_TOKEN", Redacted("hf_secret"), "looks like")) == (
        "platform.ci.variables.HF_TOKEN=<redacted>: looks like"
    )
