"""The stack-file corpus: files the offline loader (infra/offline/stack_config.py) and the real Pulumi CLI must read
alike (tests/engine/test_engine_stack_files.py), and the one line `plan` refuses the broken ones with
(tests/config/test_hostile_config.py). It grows with every reading difference found.

Three parts: broken files (each with the start of `plan`'s one error line), files whose plain scalars YAML 1.1
and YAML 1.2 type apart (yes/on, 1e3, 0o17, 1.0, 64-bit overflow, tags), and every invalid spec of the
bad-input corpus (tests/support/bad_inputs.py) written as a stack file.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from typing import Any

import yaml

from support.bad_inputs import ALL_CASES
from support.paths import ROOT

DEV_STACK = (ROOT / "Pulumi.dev.yaml").read_bytes()


@dataclass(frozen=True)
class StackFile:
    id: str
    content: bytes
    offline_error: str | None = None
    """The start of the one line `plan --config FILE` fails with (after `error: stack.yaml:`), where it refuses it."""
    refused_at: str | None = None
    """The config key the program must refuse a value at (never silently changed), e.g. `platform.cluster.version`."""
    stricter_offline: str | None = None
    """Why the offline loader refuses a file the CLI reads and the program cannot tell from a plain one (a YAML tag
    the CLI decodes away): the one kind of disagreement allowed, each named here with its reason."""


def _dev_with(old: str, new: str) -> bytes:
    text = DEV_STACK.decode()
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1).encode()


BROKEN = [
    StackFile("syntax", b"config:\n  gpu-ci:platform: {a: 1\n", "3: not valid YAML: "),
    StackFile("top-level-list", b"- 1\n- 2\n", "1: must be a mapping with a config: key, not list"),
    StackFile("config-list", b"config: [1, 2]\n", "1: config must be a mapping of keys to values, not list"),
    StackFile("not-utf8", b'config:\n  x: "\xff\xfe"\n', "2: not UTF-8 text (byte 0xff)"),
    StackFile("duplicate", b"config:\n  gpu-ci:x: 1\n  gpu-ci:x: 2\n", "3: duplicate key 'gpu-ci:x'"),
    StackFile("huge-int", b"config:\n  gpu-ci:x: " + b"9" * 5000 + b"\n", "2: a number of 5000 characters"),
    StackFile("recursive", b"config: &a\n  x: *a\n", "2: a recursive or undefined alias *a"),
    StackFile("deep", b"config:\n  x: " + b"[" * 100 + b"]" * 100 + b"\n", "2: nested more than 64 levels deep"),
    StackFile(
        "token",
        b"config:\n  gitlab:token: glpat-abcdefabcdef\n",
        "2: gitlab:token is a credential stored in plain text",
    ),
    StackFile("key", b"config:\n  1: 2\n", "2: config key 1 is not a key like gpu-ci:platform"),
    StackFile("control-character", b'config:\n  x: "a\x00b"\n', "2: not a readable stack file: control characters"),
    StackFile(
        "base-60-time",
        b"config:\n  gpu-ci:platform:\n    x: {from: 8:00}\n",
        "3: 8:00 at config.gpu-ci:platform.x.from unquoted is a base-60 number to YAML 1.1 readers and text to "
        "Pulumi: quote it",
    ),
    StackFile(
        "date",
        b"config:\n  gpu-ci:platform:\n    days: 2024-01-01\n",
        "3: 2024-01-01 at config.gpu-ci:platform.days unquoted is a date to YAML (the Pulumi CLI hands Go's time "
        "text): quote it",
    ),
    StackFile(
        "infinity",
        b"config:\n  gpu-ci:x: {a: .inf}\n",
        "2: .inf at config.gpu-ci:x.a is no number the Pulumi CLI can pass on (JSON has none)",
    ),
    StackFile(
        "not-a-number",
        b"config:\n  gpu-ci:x: .nan\n",
        "2: .nan at config.gpu-ci:x is no number the Pulumi CLI can pass on",
    ),
    StackFile(
        "two-documents",
        b"config:\n  gpu-ci:x: 1\n---\nconfig: {}\n",
        "3: not valid YAML: a second document",
    ),
    StackFile("duplicate-config", b"config:\n  gpu-ci:x: a\nconfig:\n  gpu-ci:y: b\n", "3: duplicate key 'config'"),
    StackFile("duplicate-nested", b"config:\n  gpu-ci:x: {a: 1, a: 2}\n", "2: duplicate key 'a'"),
]
"""Files `plan` refuses, with the start of the error line."""


READ_APART = [
    StackFile("dev", DEV_STACK),
    StackFile("yes-no-on-off", b"config:\n  gpu-ci:x: {a: yes, b: no, c: on, d: off, e: Yes, f: true, g: FALSE}\n"),
    StackFile("yes-top-level", b"config:\n  gpu-ci:x: yes\n  gpu-ci:y: off\n"),
    StackFile("bool-keys", b"config:\n  gpu-ci:x: {on: 1, yes: 2, 1: 3, true: 4}\n"),
    StackFile(
        "number-forms",
        b"config:\n  gpu-ci:x: {a: 0755, b: 0o17, c: 0x1F, d: 0b1010, f: +12, g: 012, h: 09}\n",
    ),
    StackFile("number-prefixes-upper", b"config:\n  gpu-ci:x: {a: 0X1F, b: 0B11, c: 0O17, d: -0X10}\n"),
    StackFile(
        "float-forms", b"config:\n  gpu-ci:x: {a: 1e3, b: .5, c: 1., d: 1.0, e: -0.0, f: 1e21, g: 1e20, h: 1e-7}\n"
    ),
    StackFile("whole-floats-top-level", b"config:\n  gpu-ci:x: 1.0\n  gpu-ci:y: 1e3\n  gpu-ci:z: 2.50\n"),
    StackFile(
        "int64-bounds", b"config:\n  gpu-ci:x: {c: -9223372036854775808, d: 9223372036854775807}\n  gpu-ci:y: -1\n"
    ),
    StackFile(
        "floats-top-level", b"config:\n  gpu-ci:a: 1e-7\n  gpu-ci:b: 0.00001\n  gpu-ci:c: 1e20\n  gpu-ci:d: 2.5e-300\n"
    ),
    StackFile("null-top-level", b"config:\n  gpu-ci:x:\n  gpu-ci:y: null\n  gpu-ci:z: ~\n"),
    StackFile("null-nested", b"config:\n  gpu-ci:x: {a: null, b: ~, c: }\n"),
    StackFile("non-ascii-digits", "config:\n  gpu-ci:x: ١٢\n  gpu-ci:y: {a: ١٢}\n".encode()),
    StackFile("times-quoted", b'config:\n  gpu-ci:x: {from: "8:00", to: "2024-01-01"}\n'),
    StackFile("merge-key", b"config:\n  gpu-ci:x: {a: &x [1], b: *x, <<: {c: 3}}\n"),
    StackFile("other-top-level-keys", b"config:\n  gpu-ci:x: 1\nencryptionsalt: v1:abc\nfoo: 1\n"),
    StackFile("secure-nested", b"config:\n  gpu-ci:p: {a: {secure: v1:YWJj}}\n  gpu-ci:q: {secure: v1:YWJj}\n"),
    StackFile("empty-config", b"config: {}\n"),
    StackFile("comments-only", b"# nothing here\n"),
    StackFile("crlf", b"config:\r\n  gpu-ci:x: {a: 1}\r\n"),
    StackFile("bom", b"\xef\xbb\xbfconfig:\n  gpu-ci:x: 1\n"),
    StackFile("tab-in-value", b'config:\n  gpu-ci:x: "a\tb"\n'),
    StackFile("project-namespace", b"config:\n  x: 1\n  gpu-ci:y: 2\n  other:z: 3\n"),
    StackFile(
        "aliased-zones",
        _dev_with("zone: fr-par-2", "zone: &zone fr-par-2").replace(b"zone: fr-par-2", b"zone: *zone"),
    ),
    # Written unquoted, a version, a zone and a tag are numbers, floats or booleans to YAML; the program must refuse
    # them at their key rather than deploy `1.3` for `1.30`.
    StackFile("version-unquoted", _dev_with('version: "1.36"', "version: 1.30"), refused_at="platform.cluster.version"),
    StackFile(
        "chart-version-unquoted",
        _dev_with("chart_version: 0.86.0", "chart_version: 0.86"),
        refused_at="platform.runner.chart_version",
    ),
    StackFile(
        "tag-unquoted", _dev_with("tags: [kapsule, gpu]", "tags: [kapsule, 1.10]"), refused_at="platform.runner.tags.1"
    ),
    StackFile("tag-yes", _dev_with("tags: [kapsule, gpu]", "tags: [kapsule, yes]")),
    # YAML tags: the CLI decodes !!binary and reads !!set as a mapping of nulls and !!timestamp as Go's time text.
    # The offline loader refuses them all (a tag hides what a reviewer reads: `Z3B1LWNp` is `gpu-ci`, a token would
    # pass a reviewer as well); under the CLI the program sees the decoded value and judges it as any other.
    StackFile(
        "binary-tag",
        _dev_with("name: gpu-ci", "name: !!binary Z3B1LWNp"),
        stricter_offline="!!binary: the CLI hands the decoded text, which a reviewer of the file never read",
    ),
    StackFile(
        "set-tag",
        DEV_STACK + b"  gpu-ci:x: !!set {a, b}\n",
        stricter_offline="!!set: the CLI hands a mapping of nulls, a YAML type no stack config is meant to hold",
    ),
    StackFile(
        "timestamp-tag", _dev_with("name: gpu-ci", "name: !!timestamp 2024-01-01"), refused_at="platform.cluster.name"
    ),
    StackFile("str-tag", _dev_with('version: "1.36"', "version: !!str 1.36")),
    # Outside the subset (infra/offline/stack_yaml.py, docs/operations.md): forms the CLI reads one way and other
    # YAML readers (PyYAML, editors, reviewers) another. Each is refused offline; where the CLI reads it, the case
    # says how.
    StackFile(
        "float-tag",
        DEV_STACK + b"  gpu-ci:x: {v: !!float 1, w: !!float 0200}\n",
        stricter_offline="!!float: 0200 is octal (128) to the CLI, 200 to YAML 1.1 readers",
    ),
    StackFile(
        "bang-tag",
        DEV_STACK + b'  gpu-ci:x: {a: ! "2", b: ! 2}\n',
        stricter_offline="!: text to one reader, 2 to another",
    ),
    StackFile("bool-tag", b"config:\n  gpu-ci:x: {a: !!bool yes}\n"),
    StackFile("map-tag-on-list", b"config:\n  gpu-ci:x: !!map [1, 2]\n"),
    StackFile(
        "yaml-1.1-directive",
        b"%YAML 1.1\n---\n" + DEV_STACK,
        stricter_offline="%YAML: the CLI takes 1.1 and refuses 1.2; a directive says how to read the file",
    ),
    StackFile("yaml-1.2-directive", b"%YAML 1.2\n---\nconfig:\n  gpu-ci:x: 1\n"),
    StackFile(
        "tag-directive",
        b"%TAG !e! tag:example.com,2000:\n---\n" + DEV_STACK,
        stricter_offline="%TAG: a directive for tags, which the subset refuses",
    ),
    StackFile(
        "beyond-64-bits",
        DEV_STACK
        + b"  gpu-ci:x: {a: 36893488147419103232, b: 18446744073709551615}\n  gpu-ci:y: 9223372036854775808\n",
        stricter_offline="beyond int64: exact to the CLI at the root, rounded nested, and rounded by YAML 1.1 readers",
    ),
    StackFile(
        "underscores",
        DEV_STACK + b"  gpu-ci:x: {a: -_0, b: +_4, c: 0_x4, d: 1.5e_2, e: 15e1_, f: ._34, g: 1_000}\n",
        stricter_offline="_: Go drops every underscore (0_x4 is 4), YAML 1.1 readers some, `._34` is text to Go",
    ),
    StackFile(
        "float-overflow",
        DEV_STACK + b"  gpu-ci:x: 1e400\n",
        stricter_offline="beyond float64: text to the CLI, infinity to YAML 1.1 readers",
    ),
    StackFile(
        "dates",
        DEV_STACK + b"  gpu-ci:x: 2026-1-3\n  gpu-ci:y: {a: 2026-01-03 10:00:00}\n",
        stricter_offline="a date: Go's time text to the CLI, a date or text to other readers",
    ),
    StackFile(
        "float-and-null-keys",
        DEV_STACK + b"  gpu-ci:x: {1e3: a, 12345678.9: b}\n  gpu-ci:y: {~: c}\n",
        stricter_offline="float and null keys: Go's %v (1000, 1.23456789e+07, <nil>), JSON's elsewhere",
    ),
    StackFile(
        "equal-keys",
        DEV_STACK + b"  gpu-ci:x: {1: a, 0x1: b}\n",
        stricter_offline="keys equal as values: the CLI keeps the last, other readers refuse or keep the first",
    ),
    StackFile("complex-key", b"config:\n  gpu-ci:x:\n    ? [a, b]\n    : 1\n"),
    StackFile("two-merges", b"config:\n  gpu-ci:x: {<<: {a: 1}, <<: {b: 2}}\n"),
    StackFile(
        "quoted-merge",
        DEV_STACK + b'  gpu-ci:x: {"<<": {a: 1}}\n',
        stricter_offline='"<<" quoted: a merge to the CLI, a key to YAML 1.1 readers',
    ),
    StackFile("merge-tag", b"config:\n  gpu-ci:x: {!!merge a: {b: 1}}\n"),
    StackFile("merge-list", b"config:\n  gpu-ci:x: {<<: [{a: 1}, {a: 3, b: 2}], c: 3, b: 4}\n"),
    StackFile("merge-scalar", b"config:\n  gpu-ci:x: {<<: 1}\n"),
    StackFile("unknown-escape", b'config:\n  gpu-ci:x: "a\\/b"\n'),
    StackFile("known-escapes", b'config:\n  gpu-ci:x: "\\t\\x41\\u0042\\N\\_\\e\\0\\ \\"\\\\ x\\\n    y"\n'),
    StackFile(
        "block-scalar-blank-first-line",
        DEV_STACK + b"  gpu-ci:x: |-\n\n    8\n  gpu-ci:y: |+\n\n  gpu-ci:z: 1\n",
        stricter_offline="a block scalar's first blank line: the CLI drops it, YAML 1.1 readers keep it",
    ),
    StackFile("top-level-key-not-text", b"config:\n  gpu-ci:x: 1\ntrue: 1\n"),
    StackFile("top-level-key-number", b"config:\n  gpu-ci:x: 1\nfoo: {1: a}\n0x10: b\n"),
    StackFile(
        "text-opening-on-a-line-break",
        DEV_STACK + b'  gpu-ci:x: "\\n5m"\n  gpu-ci:y: {"\\nk": 1}\n  gpu-ci:z: "\\u2028a\\nb"\n',
        stricter_offline="text with a line break that opens on one: the CLI writes the file again and drops it",
    ),
    StackFile("text-opening-on-a-tab", b'config:\n  gpu-ci:x: "\\t5m\\nx"\n'),
    StackFile("line-breaks-inside", b'config:\n  gpu-ci:x: " 5m\\nx"\n  gpu-ci:y: "a\\n\\tb"\n  gpu-ci:z: "\\ta"\n'),
    StackFile("alias-inside-its-anchor", b"config:\n  gpu-ci:x: &m {a: 1}\n  gpu-ci:y: &m {<<: *m}\n"),
    StackFile(
        "block-scalars",
        b"config:\n  gpu-ci:x: >\n    a\n      b\n    c\n\n    d\n  gpu-ci:y: |+\n    a\n\n  gpu-ci:z: >-\n    a\n",
    ),
    StackFile(
        "secure-not-text",
        DEV_STACK + b"  gpu-ci:a: {secure: 123}\n  gpu-ci:b: {x: {secure: [1]}}\n  gpu-ci:c: {secure: v1:YWJj, d: 1}\n",
        stricter_offline="secure: not text or not alone: a plain mapping to the CLI, a secret to a reader's eye",
    ),
    StackFile("environment", b"config:\n  gpu-ci:x: 1\nenvironment:\n  - dev-env\n"),
]
"""Files whose plain scalars PyYAML (YAML 1.1) and the CLI (YAML 1.2) may read apart."""


@dataclass(frozen=True)
class BadInputFile(StackFile):
    platform: Any = None
    """The invalid spec itself (what `content` holds at gpu-ci:platform)."""


def bad_input_files() -> list[BadInputFile]:
    """Each invalid spec of the bad-input corpus as a stack file (the offline loader and the CLI read the same spec).

    Built when asked, not at import: writing them all takes seconds (one holds 20,000 pools)."""
    files = []
    digits = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # a spec with a 5,000-digit integer: YAML writes it, the readers must refuse it
    try:
        for case in ALL_CASES:
            document = yaml.safe_load(DEV_STACK)
            platform = copy.deepcopy(document["config"]["gpu-ci:platform"])
            case.edit(platform)
            document["config"]["gpu-ci:platform"] = platform
            text = yaml.safe_dump(document, allow_unicode=True)
            files.append(BadInputFile(bad_input_id(case.id), text.encode(), platform=platform))
    finally:
        sys.set_int_max_str_digits(digits)
    return files


def bad_input_id(case_id: str) -> str:
    return f"spec-{case_id}"


BAD_INPUT_IDS = [bad_input_id(case.id) for case in ALL_CASES]
