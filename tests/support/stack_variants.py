"""A seeded generator of stack-file variants: one- and two-change edits of the committed stack files over the YAML
features where two readers drift apart (issue 36), for the differential test of the offline loader against the
CLI's reading (tests/engine/test_engine_stack_differential.py, tests/support/stack_differential.py).

No hand list: the places are found in each committed stack file (every block and flow `key: value`, every mapping
header, every list), and each change is drawn from generators of YAML forms (explicit tags, anchors, aliases and
merge keys, duplicate and non-text keys, complex keys, directives, quoting styles and escapes, block scalars,
number forms, dates, `secure:` holding other than text, `environment:`, top-level keys). Variant `i` of seed `s`
depends on nothing but `s` and `i`, so one variant is made again alone:

    venv/bin/python tests/support/stack_differential.py SEED INDEX
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from support.paths import ROOT

SEED = 36
"""The differential test's seed (the issue's number): change it to draw another corpus."""


def base_files(root: Path = ROOT) -> dict[str, str]:
    """The committed stack files the variants edit: the project's `Pulumi.<stack>.yaml` and any under tests/data."""
    paths = [*sorted(root.glob("Pulumi.*.yaml")), *sorted((root / "tests" / "data").rglob("Pulumi.*.yaml"))]
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in paths if p.name != "Pulumi.yaml"}


@dataclass(frozen=True)
class Site:
    """One place of a base file: `key: value` on line `line` (a block entry, or an entry of a flow mapping)."""

    line: int
    indent: int
    key: str
    value: str
    path: str
    """Where it is, as dotted keys from the root (`config.gpu-ci:platform.pools.system.min_size`)."""
    kind: str
    """`scalar`, `mapping` (a header whose entries follow), `list` (a flow list) or `flow` (in a flow mapping)."""
    end: int = 0
    """The line after a mapping's entries (for a header); for a flow entry, its span in the line: see `span`."""
    span: tuple[int, int] = (0, 0)


_BLOCK = re.compile(r"^(?P<indent> *)(?P<key>[^\s#\-{\[][^#]*?):(?: +(?P<value>[^#]*?))?\s*(?:#.*)?$")
_FLOW_ITEM = re.compile(r"(?P<key>[A-Za-z_][\w-]*): (?P<value>\"[^\"]*\"|[^,{}\[\]]+?)\s*(?=,|}|$)")


def find_sites(text: str) -> list[Site]:
    """Every place of a stack file written in the committed files' forms: block entries, flow entries, lists."""
    lines = text.split("\n")
    sites: list[Site] = []
    parents: list[tuple[int, str]] = []
    flow_path: str | None = None
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _BLOCK.match(line)
        start = 0
        if flow_path is None and match and (match["value"] or "").startswith("{"):
            indent = len(match["indent"])
            while parents and parents[-1][0] >= indent:
                parents.pop()
            flow_path = ".".join([*(k for _, k in parents), match["key"]])
            start = line.index("{") + 1
        if flow_path is not None:
            for item in _FLOW_ITEM.finditer(line, start):
                sites.append(
                    Site(
                        number,
                        0,
                        item["key"],
                        item["value"],
                        f"{flow_path}.{item['key']}",
                        "flow",
                        span=(item.start(), item.end()),
                    )
                )
            if "}" in line:
                flow_path = None
            continue
        if not match:
            continue
        indent = len(match["indent"])
        while parents and parents[-1][0] >= indent:
            parents.pop()
        key, value = match["key"], match["value"] or ""
        path = ".".join([*(k for _, k in parents), key])
        if not value:
            end = number + 1
            while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
                end += 1
            sites.append(Site(number, indent, key, "", path, "mapping", end=end))
            parents.append((indent, key))
        else:
            sites.append(Site(number, indent, key, value, path, "list" if value.startswith("[") else "scalar"))
    return sites


@dataclass(frozen=True)
class Edit:
    """Lines `start:end` of a base file replaced by `lines` (start == end: inserted before line `start`)."""

    start: int
    end: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    what: str
    """What was changed, in words: `config.gpu-ci:platform.pools.system.min_size: !!float 0200`."""
    edits: tuple[Edit, ...]
    path: str
    """The place changed (the first of two), `(document)` for an edit of the whole file."""


@dataclass(frozen=True)
class Variant:
    seed: int
    index: int
    base: str
    changes: tuple[Change, ...]
    text: str

    @property
    def what(self) -> str:
        return f"{self.base}: " + "; ".join(c.what for c in self.changes)


# The forms a scalar is written in. Each generator returns YAML text for one value (`flow`: inside a flow
# collection, on one line), given the value it replaces.

_WORDS = (
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "Y",
    "N",
    "True",
    "TRUE",
    "tRUE",
    "false",
    "FALSE",
    "null",
    "Null",
    "NULL",
    "~",
    "",
    "=",
    "<<",
    "-",
    "?x",
    "@x",
    "`x",
)
_DATES = (
    "2026-1-3",
    "2026-01-03",
    "2026-01-03T10:00:00Z",
    "2026-1-3 1:02:03",
    "2001-12-14t21:59:43.10-05:00",
    "2026-01-03 10:00:00 +2",
    "2026-13-01",
    "2026-01-03T10:00:00",
    "20260103",
)
_NUMBER_BODIES = (
    "0",
    "1",
    "2",
    "3",
    "8",
    "15",
    "150",
    "200",
    "0200",
    "017",
    "09",
    "00",
    "007",
    "0x1F",
    "0X1f",
    "0x_1F",
    "0o17",
    "0O17",
    "0b101",
    "0B1",
    "1.5",
    ".5",
    "1.",
    "._34",
    "1.5e_2",
    "15e1_",
    "1e3",
    "1E+3",
    "1e-7",
    "1e400",
    "12345678.9",
    "0.0",
    "1.0",
    "2.50",
    "146.7",
    "0.34",
    ".inf",
    ".Inf",
    ".INF",
    ".nan",
    ".NaN",
    "1:30",
    "8:00",
    "1_000",
    "1__0",
    "0_x4",
    "4_",
    "_4",
    "1e21",
    "1e20",
    "9223372036854775807",
    "9223372036854775808",
    "9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "12345678901234567890",
    "36893488147419103232",
    "1" + "0" * 30,
)


def number_text(rng: random.Random) -> str:
    """A number in one of the forms YAML 1.1, YAML 1.2 and Go read apart: signs, underscores, leading zeros,
    prefixes, exponents, infinities, base 60, integers around 2^63 and 2^64."""
    body = rng.choice(_NUMBER_BODIES)
    if rng.random() < 0.2:
        at = rng.randrange(len(body) + 1)
        body = body[:at] + "_" + body[at:]
    if rng.random() < 0.12:
        body = "0" + body
    if rng.random() < 0.3:
        body = rng.choice("-+") + body
    if rng.random() < 0.08:
        body = body.replace("e", "E")
    return body


_ESCAPES = (
    "\\/",
    "\\x41",
    "\\u00e9",
    "\\U0001F600",
    "\\N",
    "\\_",
    "\\L",
    "\\P",
    "\\e",
    "\\0",
    "\\a",
    "\\t",
    "\\ ",
    '\\"',
    "\\\\",
    "\\q",
    "\\x4",
    "\\n",
    "\\r",
    "\\b",
    "\\v",
    "\\u12",
    "\\'",
)


def quoted_text(rng: random.Random, value: str) -> str:
    """`value` single- or double-quoted, maybe with an escape or a quote doubled inside."""
    plain = value.strip("\"'")
    at = rng.randrange(len(plain) + 1)
    if rng.random() < 0.5:
        inner = plain[:at] + rng.choice(_ESCAPES) + plain[at:] if rng.random() < 0.7 else plain
        return f'"{inner}"'
    inner = plain[:at] + "''" + plain[at:] if rng.random() < 0.4 else plain
    return f"'{inner}'"


_TAGS = (
    "!!str",
    "!!int",
    "!!float",
    "!!bool",
    "!!null",
    "!!map",
    "!!seq",
    "!",
    "!!binary",
    "!!timestamp",
    "!!set",
    "!!omap",
    "!!merge",
    "!local",
    "!<tag:yaml.org,2002:str>",
    "!<tag:yaml.org,2002:int>",
    "!<tag:yaml.org,2002:bool>",
    "!!python/none",
    "!!pairs",
)


def tagged_text(rng: random.Random, value: str) -> str:
    """An explicit tag on the value, on a number, a word, a quoted text, nothing, or an empty collection."""
    tag = rng.choice(_TAGS)
    inner = rng.choice(
        [
            value,
            value,
            number_text(rng),
            rng.choice(_WORDS),
            quoted_text(rng, value),
            "",
            "[]",
            "{}",
            "[a]",
            "{a: 1}",
            rng.choice(_DATES),
            "Z3B1LWNp",
        ]
    )
    return f"{tag} {inner}".rstrip()


_SECURE_HELD = (
    "123",
    "[a]",
    "{a: 1}",
    "~",
    "true",
    "v1:YWJj",
    '"v1:YWJj"',
    "",
    "1.5",
    "[]",
    "{}",
    "!!str 5",
    "v1:YWJj, other: 1",
    "!!binary YWJj",
)


def secure_text(rng: random.Random, _: str) -> str:
    return "{secure: " + rng.choice(_SECURE_HELD) + "}"


def scalar_text(rng: random.Random, value: str) -> str:
    """One flow-safe form for a value."""
    return rng.choice(
        [
            lambda r, _: number_text(r),
            lambda r, _: number_text(r),
            tagged_text,
            tagged_text,
            quoted_text,
            secure_text,
            lambda r, _: r.choice(_WORDS),
            lambda r, _: r.choice(_DATES),
            lambda r, v: "[" + v + ", " + number_text(r) + "]",
            lambda r, v: "{" + v + ": 1}",
        ]
    )(rng, value)


def block_value_lines(rng: random.Random, value: str, indent: int) -> list[str]:
    """A value written in block form over several lines: block scalars (each chomping, with leading and trailing
    blank lines, indentation indicators), a folded plain or double-quoted scalar, `secure:` as a block."""
    inner = " " * (indent + 2)
    text = value.strip("\"'") or "x"
    choice = rng.randrange(4)
    if choice < 2:
        header = rng.choice(["|", "|-", "|+", ">", ">-", ">+", "|2", ">2", "|2-", "|-2", ">+2", "|1"])
        width = indent + (int(header[-1]) if header[-1].isdigit() else 2)
        lead = [""] * rng.choice([0, 0, 1, 2])
        body = [" " * width + text] if rng.random() < 0.6 else [" " * width + text, " " * width + number_text(rng)]
        if rng.random() < 0.2:
            body.insert(1, " " * (width + 2) + "more")
        trail = [""] * rng.choice([0, 1, 2])
        return [header, *lead, *body, *trail]
    if choice == 2:
        quote = rng.choice(['"', ""])
        second = rng.choice([text, "", number_text(rng), "b\\", "\\ b"])
        if quote:
            return [f'"{text}', *([""] if rng.random() < 0.3 else []), f'{inner}{second}"']
        return [text, *([""] if rng.random() < 0.3 else []), f"{inner}{second or 'b'}"]
    return ["", f"{inner}secure: {rng.choice(_SECURE_HELD)}"]


_KEYS = (
    "1",
    "1.0",
    "1e3",
    "0x1F",
    "010",
    "~",
    "null",
    "",
    ".inf",
    "-.inf",
    ".nan",
    "true",
    "yes",
    "on",
    "False",
    "12345678.9",
    "-0",
    "0.0",
    "2026-01-03",
    "1:30",
    "9223372036854775808",
    "18446744073709551615",
    "123456789012345678901",
    "0o17",
    "1_0",
    "+1",
    "!!str 1",
    "!!int 1",
    "!!str ~",
    "!!null",
    "!!bool true",
    "!!float 1",
    "!!int 1.5",
    "!!binary YWJj",
    '"1"',
    "'~'",
    "!local k",
    "&k k",
    "[a, b]",
    "{a: 1}",
    "<<",
)


def key_text(rng: random.Random, key: str) -> str:
    """Another spelling of a key: a non-text key (number, null, infinity, boolean, float), a quoted or tagged
    one, or one with a character more."""
    return rng.choice(
        [
            *_KEYS,
            f'"{key}"',
            f"'{key}'",
            f"!!str {key}",
            f"! {key}",
            f"{key}\\n",
            f'"{key}\\t"',
            f"{key}:x",
            f"&k {key}",
            f"{key} ",
            f"{key}#",
        ]
    )


# The changes: each picks its places among a base's sites and returns the edits.


def _render(
    lines: list[str], site: Site, key: str | None = None, value: str | None = None, value_lines: list[str] | None = None
) -> Edit:
    """Site's line with another key or value (a value of several lines for a block site)."""
    key = site.key if key is None else key
    line = lines[site.line] if site.line < len(lines) else ""
    if site.kind == "flow":
        start, end = site.span
        return Edit(
            site.line,
            site.line + 1,
            (line[:start] + f"{key}: {value if value is not None else site.value}" + line[end:],),
        )
    prefix = " " * site.indent
    first, *rest = value_lines if value_lines is not None else [site.value if value is None else value]
    head: tuple[str, ...]
    if key.startswith(("[", "{", "? ")) or key == "?":
        head = (f"{prefix}? {key.removeprefix('? ')}", f"{prefix}:" + (f" {first}" if first else ""))
    else:
        head = (f"{prefix}{key}:" + (f" {first}" if first else ""),)
    return Edit(site.line, site.line + 1, (*head, *rest))


def change_value(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    site = rng.choice([s for s in sites if s.kind in ("scalar", "flow", "list")])
    if site.kind == "list" and rng.random() < 0.5:
        items = [i.strip() for i in site.value.strip("[]").split(",")]
        items[rng.randrange(len(items))] = scalar_text(rng, items[0])
        text = rng.choice(["", "!!seq ", "!!map ", "&l ", "!!set "]) + "[" + ", ".join(items) + "]"
        return Change(f"{site.path}: {text}", (_render(lines, site, value=text),), site.path)
    if site.kind != "flow" and rng.random() < 0.3:
        block = block_value_lines(rng, site.value, site.indent)
        shown = "\\n".join(block)
        return Change(f"{site.path}: {shown}", (_render(lines, site, value_lines=block),), site.path)
    text = scalar_text(rng, site.value)
    return Change(f"{site.path}: {text}", (_render(lines, site, value=text),), site.path)


def change_key(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    site = rng.choice(sites)
    key = key_text(rng, site.key)
    if site.kind == "flow" and key.startswith(("[", "{")):
        key = f"? {key}"
    return Change(f"{site.path}: key {key!r}", (_render(lines, site, key=key),), site.path)


def duplicate_key(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    """The same key twice in one mapping, written alike or apart (`x`, `"x"`, `!!str x`), at once or later."""
    site = rng.choice([s for s in sites if s.kind in ("scalar", "list", "mapping")])
    spelling = rng.choice([site.key, site.key, f'"{site.key}"', f"'{site.key}'", f"!!str {site.key}", f"? {site.key}"])
    value = scalar_text(rng, site.value) if site.kind != "mapping" else "{}"
    after = site.end if site.kind == "mapping" else site.line + 1
    line = _render(lines, Site(after, site.indent, site.key, value, site.path, "scalar"), key=spelling, value=value)
    return Change(f"{site.path}: again as {spelling}: {value}", (Edit(after, after, line.lines),), site.path)


def anchor_alias(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    """An anchor on one value and an alias of it (or of a name never anchored) at another place."""
    values = [s for s in sites if s.kind in ("scalar", "flow", "list")]
    first, second = rng.sample(values, 2)
    if first.line == second.line:
        return change_value(rng, lines, sites)
    name = rng.choice(["a", "x1", "pool", "a.b", "a-b"])
    alias = rng.choice([f"*{name}", f"*{name}", "*nope", f"[*{name}]", f"{{k: *{name}}}", f"!!str *{name}"])
    anchored = f"&{name} {rng.choice([first.value, first.value, scalar_text(rng, first.value)])}"
    edits = (_render(lines, first, value=anchored), _render(lines, second, value=alias))
    return Change(f"{first.path}: {anchored}; {second.path}: {alias}", edits, first.path)


_MERGES = (
    "<<: *m",
    "<<: [*m]",
    '"<<": *m',
    "'<<': *m",
    "!!str <<: *m",
    "!!merge <<: *m",
    "? <<\n: *m",
    "<<: {min_size: 3, extra: 1}",
    "<<: *m\n<<: *m",
    "<<: [*m, {max_size: 2}]",
    "<<: 5",
    "<<: [1]",
    "<< : *m",
    "!!merge x: *m",
    "<<: !!map {a: 1}",
    "<<: ~",
    "<<: []",
    "<<: *nope",
    "<<: !!str *m",
    "<<: [*m, *m]",
    "! <<: *m",
    "<<: &n {min_size: 1}",
    "<<: {<<: *m}",
)


def merge_keys(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    """A mapping anchored, merged (`<<`) into another in one of many forms, or a mapping aliased whole."""
    mappings = [s for s in sites if s.kind == "mapping" and s.line > 0 and s.end > s.line + 1]
    source, target = rng.sample(mappings, 2)
    if source.line < target.line < source.end or target.line < source.line < target.end:
        return anchor_alias(rng, lines, sites)
    anchor = _render(lines, source, value="&m")
    if rng.random() < 0.25:  # the target replaced by an alias of the source
        alias = rng.choice(["*m", "*m", "!!map *m", "{<<: *m}"])
        edit = Edit(target.line, target.end, _render(lines, target, value=alias).lines)
        return Change(f"{source.path}: &m; {target.path}: {alias}", (anchor, edit), source.path)
    form = rng.choice(_MERGES)
    child = " " * (target.indent + 2)
    where = rng.choice([target.line + 1, target.end])
    inserted = tuple(child + part for part in form.split("\n"))
    return Change(f"{source.path}: &m; {target.path}: {form!r}", (anchor, Edit(where, where, inserted)), source.path)


def mapping_form(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    """A mapping header tagged (`!!map`, `!!seq`, `!!omap`, `!!set`, `!`), anchored, or a list written in block
    form or tagged."""
    site = rng.choice([s for s in sites if s.kind in ("mapping", "list")])
    if site.kind == "list":
        items = [i.strip() for i in site.value.strip("[]").split(",")]
        tag = rng.choice(["", "", "!!seq", "!!map", "!!set", "&l"])
        block = [tag] + [" " * (site.indent + rng.choice([0, 2])) + "- " + item for item in items]
        return Change(f"{site.path}: block list {tag}", (_render(lines, site, value_lines=block),), site.path)
    tag = rng.choice(["!!map", "!!seq", "!!omap", "!!set", "!", "&unused", "!!map &a", "!local", "!!str"])
    return Change(f"{site.path}: {tag}", (_render(lines, site, value=tag),), site.path)


_NEW_KEYS = ("gpu-ci:extra", "extra", "gitlab:extra", "other:x")


def new_key(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    """A key added beside an existing one: a config key at the root of `config:`, a CI variable, a spec key."""
    site = rng.choice([s for s in sites if s.kind in ("scalar", "mapping") and s.indent <= 8])
    key = rng.choice([*_NEW_KEYS, "NEW_VARIABLE", key_text(rng, "x")]) if site.indent == 2 else "NEW_VARIABLE"
    value = rng.choice([number_text(rng), scalar_text(rng, "x"), str(2**63 + rng.randrange(2**63))])
    at = site.end if site.kind == "mapping" else site.line + 1
    edit = _render(lines, Site(at, site.indent, key, value, site.path, "scalar"), value=value)
    return Change(f"beside {site.path}: {key}: {value}", (Edit(at, at, edit.lines),), site.path)


_HEADS = (
    "%YAML 1.2\n---",
    "%YAML 1.1\n---",
    "%YAML 1.3\n---",
    "%TAG !e! tag:example.com,2000:\n---",
    "---",
    "--- # a comment",
    "%FOO bar\n---",
    "--- !!map",
    "--- &root",
    "\ufeff",
)
_TAILS = (
    "...",
    "environment:\n  - dev",
    "environment: [a]",
    "environment: {imports: [a]}",
    "environment: ~",
    "environment: []",
    "environment: dev",
    "1: x",
    "~: x",
    "true: 1",
    ".inf: 1",
    "? [a]\n: 1",
    "12345678.9: x",
    "secretsprovider: passphrase",
    "encryptionsalt: 5",
    "encryptionsalt: v1:abc",
    "config2: 1",
    "other: {a: 1}",
    "2026-01-03: x",
    "!!str 1: x",
    "? {a: 1}\n: 2",
    "--- \nconfig: {}",
)


def document_edit(rng: random.Random, lines: list[str], sites: list[Site]) -> Change:
    """A directive or marker before the document, a key of the root after `config:`, CRLF line ends."""
    choice = rng.randrange(5)
    if choice == 0:
        head = rng.choice(_HEADS)
        return Change(f"before the document: {head!r}", (Edit(0, 0, tuple(head.split("\n"))),), "(document)")
    if choice == 4:
        return Change(
            "CRLF line ends",
            tuple(Edit(i, i + 1, (line + "\r",)) for i, line in enumerate(lines) if line),
            "(document)",
        )
    tail = rng.choice(_TAILS)
    end = len(lines) - (1 if lines and lines[-1] == "" else 0)
    return Change(f"after config: {tail!r}", (Edit(end, end, tuple(tail.split("\n"))),), "(document)")


CHANGES: tuple[tuple[Callable[[random.Random, list[str], list[Site]], Change], int], ...] = (
    (change_value, 10),
    (change_key, 4),
    (duplicate_key, 2),
    (anchor_alias, 3),
    (merge_keys, 3),
    (mapping_form, 2),
    (new_key, 2),
    (document_edit, 2),
)
"""Each kind of change with its weight."""


def _overlap(first: Change, second: Change) -> bool:
    return any(a.start == b.start or (a.start < b.end and b.start < a.end) for a in first.edits for b in second.edits)


def apply(text: str, edits: list[Edit]) -> str:
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        lines[edit.start : edit.end] = edit.lines
    return "\n".join(lines)


def variant(index: int, seed: int = SEED, bases: dict[str, str] | None = None) -> Variant:
    """Variant `index` of `seed`: one change (or two at different places) of one base file."""
    bases = bases if bases is not None else base_files()
    rng = random.Random(f"{seed}:{index}")
    name = rng.choice(sorted(bases))
    text = bases[name]
    lines = text.split("\n")
    sites = find_sites(text)
    kinds, weights = zip(*CHANGES, strict=True)
    changes: list[Change] = []
    for _ in range(1 if rng.random() < 0.5 else 2):
        for _attempt in range(10):
            change = rng.choices(kinds, weights)[0](rng, lines, sites)
            if not any(_overlap(change, other) for other in changes):
                changes.append(change)
                break
    edits = [e for c in changes for e in c.edits]
    return Variant(seed, index, name, tuple(changes), apply(text, edits))


def variants(count: int, seed: int = SEED) -> list[Variant]:
    bases = base_files()
    return [variant(i, seed, bases) for i in range(count)]
