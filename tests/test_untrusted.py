"""The one escaper (`infra.untrusted`): one definition of what is shown as it is, the same line on every
surface, credentials redacted before anything is cut."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.config.credentials import redact_credentials
from infra.config.errors import Problem, format_value
from infra.untrusted import ELLIPSIS, first_hidden, printable, quoted, shown_as_is

HIDDEN = {
    "ESC": "\x1b",
    "BEL": "\x07",
    "NEL (C1)": "\x85",
    "CSI (C1)": "\x9b",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "zero-width space": "\u200b",
    "right-to-left mark": "\u200f",
    "left-to-right embedding": "\u202a",
    "right-to-left override": "\u202e",
    "first-strong isolate": "\u2068",
    "pop directional isolate": "\u2069",
    "byte-order mark": "\ufeff",
    "no-break space": "\xa0",
    "ideographic space": "\u3000",
    "lone surrogate": "\ud800",
    "private use": "\ue000",
    "tag character": "\U000e0041",
}


@pytest.mark.parametrize("char", HIDDEN.values(), ids=HIDDEN.keys())
def test_every_hiding_or_reordering_character_is_escaped_on_every_surface(char: str) -> None:
    value = f"ci{char}-compile"
    assert not shown_as_is(char)
    assert printable(value) == f"ci{repr(char)[1:-1]}-compile"
    assert first_hidden(value) == char
    assert char not in quoted(value, 60)
    assert char not in format_value(value)
    assert char not in str(Problem("platform.x", value, f"names {value}"))


def test_what_is_shown_as_is_agrees_with_repr_over_the_basic_plane() -> None:
    """`quoted` uses repr: the two definitions must be one (all of the BMP; the rest is sampled below)."""
    disagree = [hex(code) for code in range(0x10000) if shown_as_is(chr(code)) != (repr(chr(code))[1:-1] == chr(code))]
    assert disagree == [hex(ord("\\"))]  # repr doubles the backslash, which is shown as it is


@settings(max_examples=300, deadline=None)
@given(st.characters(min_codepoint=0x10000, max_codepoint=sys.maxunicode))
def test_what_is_shown_as_is_agrees_with_repr_beyond_it(char: str) -> None:
    assert shown_as_is(char) == (repr(char)[1:-1] == char)


def test_letters_of_any_script_stay_as_they_are() -> None:
    assert printable("déjà vu, 東京, ✓, ١٢٣ - a b") == "déjà vu, 東京, ✓, ١٢٣ - a b"


def test_the_cut_falls_between_escapes_and_the_limit_holds() -> None:
    assert printable("ab\x1b\x1b", 4) == "ab" + ELLIPSIS
    assert printable("ab\x1b\x1b", 6) == "ab\\x1b" + ELLIPSIS
    assert printable("x" * 10, 10) == "x" * 10
    assert printable("x" * 11, 10) == "x" * 10 + ELLIPSIS
    assert printable("x" * 10, None) == "x" * 10


def test_a_token_across_the_cut_is_redacted_not_shown_by_its_head() -> None:
    token = "glrt-" + "Zq9" * 8
    shown = printable("a" * 15 + token, 25)
    assert "glrt-" not in shown and "Zq9" not in shown


def test_keep_leaves_the_lines_of_a_block() -> None:
    assert printable("a\tb\nc\rd", None, keep="\n\t") == "a\tb\nc\\rd"


def test_the_environment_credentials_are_redacted_wherever_they_appear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCW_SECRET_KEY", "0a1b2c3d-aaaa-4bbb-8ccc-123456789abc")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("SCW_ACCESS_KEY", "SCWLOWERcase0123")  # not of the access key's shape: found by its name
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to redact anywhere
    monkeypatch.setenv("KUBECONFIG_TOKEN", "/home/me/.kube/config")  # a path, not a secret
    environ = "SCW_SECRET_KEY=0a1b2c3d-aaaa-4bbb-8ccc-123456789abc\x00AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/"
    shown = printable(environ + "bPxRfiCYEXAMPLEKEY\x00X=SCWLOWERcase0123 abc /home/me/.kube/config", None)
    assert shown == (
        "SCW_SECRET_KEY=<redacted>\\x00AWS_SECRET_ACCESS_KEY=<redacted>\\x00X=<redacted> abc /home/me/.kube/config"
    )


CREDENTIALS = st.sampled_from(
    [
        "glpat-" + "a1B2" * 5,
        "gldt-" + "x" * 20,
        "glptt-" + "0" * 20,
        "glcbt-64_" + "f" * 20,
        "glsoat-" + "Q" * 20,
        "GR1348941" + "a" * 20,
        "SCW" + "ABCDEF0123456789Z",
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=",
        "hf_" + "abc" * 7,
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(max_size=30),
    credential=CREDENTIALS,
    after=st.text(alphabet=" \n\x1b\u202e:/,\"'", max_size=5),
    limit=st.one_of(st.none(), st.integers(10, 80)),
)
def test_printable_never_shows_a_credential_nor_a_hidden_character(
    before: str, credential: str, after: str, limit: int | None
) -> None:
    shown = printable(before + " " + credential + after, limit)
    assert credential[:10] not in shown
    assert first_hidden(shown) is None
    assert limit is None or len(shown) <= limit + 1


def test_the_redactor_is_idempotent() -> None:
    once = redact_credentials("https://me:hunter2@gitlab.com glpat-" + "a" * 20)
    assert once == "https://<redacted>@gitlab.com <redacted>" == redact_credentials(once)
