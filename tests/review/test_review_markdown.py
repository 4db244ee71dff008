"""GitLab Markdown escaping (`infra.review.markdown`): a value in the MR note renders as itself, and can
neither ping, reference, link, open HTML, start a block, nor close the code block or the marker it sits in."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.review.markdown import code, fenced, hidden, link, text
from infra.untrusted import first_hidden, printable

HOSTILE = [
    "@all",
    "@platform-team please look",
    "#123",
    "group/project!1",
    "~bug",
    "%v1.0",
    "$snippet",
    "&epic",
    "</details>",
    "<img src=x onerror=alert(1)>",
    "-->",
    "<!-- x",
    "[click](https://evil.example)",
    "![pixel](https://evil.example/p.png)",
    "[[_TOC_]]",
    "a | b | c",
    "```",
    "# heading",
    "- item",
    "+ item",
    "1. item",
    "> quote",
    "$x^2$",
    "{+inserted+}",
    "line\nbreak",
    "\u202eexe.pdf",
    "back\\slash\\@all",
]


def _unescaped(markdown: str, chars: str) -> list[str]:
    """Characters of `chars` in `markdown`, outside code spans, that no backslash escapes."""
    found, index = [], 0
    while index < len(markdown):
        if markdown[index] == "\\" and index + 1 < len(markdown):
            index += 2
            continue
        if markdown[index] == "`":  # a code span (text() writes addresses as spans): skip to its end
            fence = re.match(r"`+", markdown[index:])
            assert fence is not None
            close = re.compile(rf"(?<!`){fence[0]}(?!`)").search(markdown, index + len(fence[0]))
            index = close.end() if close else index + len(fence[0])
            continue
        if markdown[index] in chars:
            found.append(markdown[index])
        index += 1
    return found


def _rendered(markdown: str) -> tuple[str, list[str]]:
    """The text `markdown` shows, as CommonMark reads escapes and code spans, and the code spans in it."""
    shown, spans, index = [], [], 0
    while index < len(markdown):
        char = markdown[index]
        if char == "\\" and index + 1 < len(markdown) and markdown[index + 1] in PUNCTUATION:
            shown.append(markdown[index + 1])
            index += 2
        elif char == "`":
            fence = re.match(r"`+", markdown[index:])
            assert fence is not None
            close = re.compile(rf"(?<!`){fence[0]}(?!`)").search(markdown, index + len(fence[0]))
            assert close is not None, f"an unclosed code span in {markdown!r}"
            content = markdown[index + len(fence[0]) : close.start()]
            if content.startswith(" ") and content.endswith(" ") and content.strip(" "):
                content = content[1:-1]
            shown.append(content)
            spans.append(content)
            index = close.end()
        else:
            shown.append(char)
            index += 1
    return "".join(shown), spans


PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_in_prose_renders_as_itself_and_nothing_more(value: str) -> None:
    escaped = text(value)
    assert "\n" not in escaped and first_hidden(escaped) is None
    assert _unescaped(escaped, "@#!~%$&^<>[]|`*{}") == []
    shown, spans = _rendered(escaped)
    assert shown == printable(value, None).strip(" ")
    assert all("://" in span for span in spans)  # only addresses become code spans
    assert not re.match(r"[-+=]|[0-9]{1,9}[.)]( |$)", escaped)  # no list, rule or setext underline of its own


def test_an_address_is_a_code_span_so_gitlab_neither_links_it_nor_references_an_issue() -> None:
    assert text("see https://gitlab.com/g/p/-/issues/1 now") == "see `https://gitlab.com/g/p/-/issues/1` now"
    assert text("[x](https://e.example/`a`)") == "\\[x\\](``https://e.example/`a`)``"


def test_plain_names_and_paths_are_left_as_they_are() -> None:
    for value in ("ci-training", "plan-base.json: No such file or directory", "a_b_c", "/tmp/x_y/plan.json", "4.5"):
        assert text(value) == value
    assert text("__init__") == "\\_\\_init\\_\\_"  # at a word's edge, `_` is emphasis
    assert text("  indented") == "indented"  # four spaces would make a code block


def test_code_spans_cannot_be_closed_or_broken() -> None:
    assert code("dev") == "`dev`"
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"  # padded: a span may not start with its own fence
    assert code("x\n# heading") == "`x\\n# heading`"  # one line: no block can start inside
    assert code("") == "` `"


def test_code_blocks_keep_their_lines_and_cannot_be_closed() -> None:
    assert fenced("plain", "diff") == "```diff\nplain\n```"
    block = fenced("a\n````\n</details>\n\tb\x1b[31m")
    assert block == "`````\na\n````\n</details>\n\tb\\x1b[31m\n`````"
    with pytest.raises(ValueError, match="code block language"):
        fenced("x", "diff\n# heading")


def test_links_go_to_http_addresses_only_and_cannot_be_closed() -> None:
    assert (
        link("job log", "https://gitlab.example.com/g/p/-/jobs/9")
        == "[job log](https://gitlab.example.com/g/p/-/jobs/9)"
    )
    assert link("job log", "https://e.example/a b)[x](javascript:1)") == (
        "[job log](https://e.example/a%20b%29%5Bx%5D%28javascript:1%29)"
    )
    for url in ("javascript:alert(1)", "data:text/html,x", "//evil.example", "https://[::1", ""):
        assert link("job log", url) == "job log"


def test_the_hidden_marker_cannot_be_left() -> None:
    assert hidden("gpu-ci:mr-note stack=dev source=preview") == "<!-- gpu-ci:mr-note stack=dev source=preview -->"
    for content in ("x -->", "x --!>", "<!-- y", "a\nb", "@all"):
        with pytest.raises(ValueError, match="hidden comment"):
            hidden(content)


def test_control_characters_are_shown_not_sent() -> None:
    assert printable("a\x1b[2Jb\x00\u202e\u2028\ud800", None) == "a\\x1b[2Jb\\x00\\u202e\\u2028\\ud800"
    assert printable("keep\ttabs\nand lines", None, keep="\n\t") == "keep\ttabs\nand lines"
    assert printable("déjà vu, 東京, ✓", None) == "déjà vu, 東京, ✓"


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12)), max_size=6).map("".join))
def test_any_text_renders_as_itself_on_one_line(value: str) -> None:
    escaped = text(value)
    assert "\n" not in escaped and first_hidden(escaped) is None
    assert _unescaped(escaped, "@#!~%$&^<>[]|`*{}") == []
    shown, spans = _rendered(escaped)
    assert shown == printable(value, None).strip(" ") and all("://" in span for span in spans)
    span = code(value)
    fence = re.match(r"`+", span)
    assert fence is not None and "\n" not in span
    assert f"{fence[0]}" not in span[len(fence[0]) : -len(fence[0])]  # no run as long as the fence inside
