"""Values in GitLab Markdown: the one place that decides how a value from a plan, a preview or the spec is
written into the MR note, so that no value can ping, link or restructure it (pure).

GitLab renders a note as CommonMark with its own extensions (GitLab Flavored Markdown), then links
references and mentions in the text nodes that are not inside `code`, `pre` or `a`. Hence three forms:

- `text(value)`: prose. Backslash escapes for every character that starts a construct: `@` (mentions,
  `@all` pings everyone), the reference characters `# ! ~ % $ & ^` (`#123`, `!1`, `~label`, `%milestone`,
  `$snippet`, `&epic`; `$` also opens math), `<` (raw HTML: `</details>`, `<img>`, `<!--`), `[` `]` (links,
  images, footnotes, task boxes), `` ` `` (code spans), `*` `_` `{` `}` (emphasis, GitLab's inline diff),
  `|` (tables) and `\\` itself; a leading `-`, `+`, `=`, `>` or `1.` (a list, a rule, a quote); line breaks
  and other control characters shown as `\\n`, `\\x1b`, ... so a value stays on its line. GitLab keeps a
  backslash-escaped reference character literal (its EscapedCharFilter), so `\\@all` pings nobody. An
  address (`https://...`) is written as a code span: GitLab links neither addresses nor references there
  (an issue's address in text becomes a reference, and the issue a "mentioned in" note).
- `code(value)`: an inline code span, its backtick fence longer than any run inside.
- `fenced(text)`: a code block, likewise; the content keeps its lines, control characters made visible.

Inside an HTML block (a `<summary>` line: CommonMark reads no Markdown there, so neither a backslash
escape nor a code span protects anything) a value goes through `html_code`: `<code>` with `& < > " '`
written as entities, so it can neither close the element nor open another, and GitLab links no mention or
reference inside `code`. `html_text` is prose there: the same entities, and a value holding a character
that starts a reference or a mention (`@ # ! ~ % $ & ^`) is written as `html_code` (an entity would not
help: the reference filters read the text as parsed, `&#64;all` is `@all` to them).

Every form first writes the value through `infra.untrusted.printable` (credentials redacted, characters
that are not shown as they are escaped): the note says what a terminal says.

`link(label, url)` and `hidden(content)` build the two constructs the note makes itself: a link to the job
log (http(s) only, its address percent-encoded so it cannot close the link), and the hidden marker comment
(its content limited to characters that cannot close the comment).
"""

from __future__ import annotations

import html
import re
from typing import Final
from urllib.parse import quote, urlsplit

from infra.config.credentials import redact_credentials
from infra.untrusted import printable

_ALWAYS: Final = frozenset("\\`*[]<>{}|#@!~$%&^")
"""Characters escaped wherever they are (see the module docstring)."""
_LEADING: Final = frozenset("-+=")
"""Characters that start a block (a list, a setext underline) only at the start of a value."""
_ORDERED: Final = re.compile(r"\A([0-9]{1,9})([.)])(?=[ \t]|\Z)")
_BACKTICKS: Final = re.compile(r"`+")
_ADDRESS: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://\S*")
_HIDDEN_SAFE: Final = re.compile(r"\A[A-Za-z0-9_.:=/ -]*\Z")
_URL_SAFE: Final = "/:?#&=+%,;@!$'*~._-"
"""Characters of a URL kept as they are in a link destination; everything else is percent-encoded."""


def text(value: object) -> str:
    """`value` as Markdown prose that renders as itself (see the module docstring): one line, no mention,
    reference, HTML, link, emphasis, table cell or block of its own. An address in it
    (`https://...`) becomes a code span: GitLab would otherwise link it, and turn an issue's address into a
    reference that notifies the issue."""
    plain = printable(str(value), None).strip(" ")  # leading spaces would indent it into a code block
    pieces, start = [], 0
    for address in _ADDRESS.finditer(plain):
        pieces += [_escaped(plain[start : address.start()]), code(address[0])]
        start = address.end()
    escaped = "".join([*pieces, _escaped(plain[start:])])
    if escaped[:1] in _LEADING:
        return "\\" + escaped
    if match := _ORDERED.match(escaped):  # `1.` or `1)` would start an ordered list
        return f"{match[1]}\\{match[2]}{escaped[match.end() :]}"
    return escaped


def _escaped(plain: str) -> str:
    return "".join(
        "\\" + char if char in _ALWAYS or (char == "_" and _at_word_edge(plain, index)) else char
        for index, char in enumerate(plain)
    )


def _at_word_edge(text: str, index: int) -> bool:
    """Whether `_` at `index` could open or close emphasis: GitLab ignores it inside a word (`ci_training`)."""
    before = text[index - 1] if index > 0 else " "
    after = text[index + 1] if index + 1 < len(text) else " "
    return not (before.isalnum() and after.isalnum())


def code(value: object) -> str:
    """`value` as an inline code span: references, mentions and HTML are not read inside one; its fence is
    longer than any backtick run in the value, and the value stays on one line. (In a table, `|` would
    still end the cell: use `text` there.)"""
    content = printable(str(value), None)
    if not content.strip(" "):
        return "` `"
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if content[0] in "` " or content[-1] in "` " else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def fenced(content: str, info: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside, so the content cannot close it; its
    lines kept, control characters (but tabs) made visible. `info` names the language (`diff`, `mermaid`)."""
    if not re.fullmatch(r"[A-Za-z0-9_+-]*", info):
        raise ValueError(f"code block language {info!r}: letters, digits, '_', '+' and '-' only")
    body = printable(content, None, keep="\n\t")
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


_REFERENCE_START: Final = frozenset("@#!~%$&^")


def html_code(value: object) -> str:
    """`value` as `<code>` inside an HTML block (see the module docstring): one line, entities for markup."""
    return f"<code>{html.escape(printable(str(value), None), quote=True)}</code>"


def html_text(value: object) -> str:
    """`value` as prose inside an HTML block; as `html_code` if it holds a reference or mention character."""
    shown = printable(str(value), None)
    if _REFERENCE_START & set(shown):
        return html_code(value)
    return html.escape(shown, quote=True)


def link(label: str, url: str) -> str:
    """`[label](url)` for an http(s) URL, its address percent-encoded where it could end the link or hide in
    it (spaces, brackets, quotes, controls, non-ASCII); the label alone, as text, for any other URL."""
    url = redact_credentials(url)  # `https://user:password@host/...`, or a token in the query
    try:
        parts = urlsplit(url)
    except ValueError:
        return text(label)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return text(label)
    return f"[{text(label)}]({quote(url, safe=_URL_SAFE)})"


def hidden(content: str) -> str:
    """An HTML comment GitLab does not show (the note's marker). Its content may only hold letters, digits,
    spaces and `_ . : = / -`: nothing that could close it early (`-->`, `--!>`) or open another."""
    if not _HIDDEN_SAFE.fullmatch(content):
        raise ValueError(f"hidden comment {content!r}: letters, digits, spaces and '_.:=/-' only")
    return f"<!-- {content} -->"
