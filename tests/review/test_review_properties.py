"""Property tests (hypothesis) of the review commands on generated hostile inputs: plan files for `plan-diff`
and `mr-note` (offline, without a token: it prints the note), previews for `guard-replacements`, and
hostile values in the note itself.

The invariant of each command: exit 0 with a plausible result, or 1/2 with short `error:` lines; never a
traceback (an exception out of `main`), never a token in the output. For the note: its Markdown, read the
way CommonMark reads it, has no mention, reference, heading, raw HTML or way out of the hidden marker that
comes from a value, and no value closes the code block it sits in.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import DATA
from support.plans import CommandRun, run_command

from infra.cloud.names import T
from infra.review.delta import render_delta
from infra.review.markdown import link
from infra.review.note import NoteInput, clean, clip, marker, render_note
from infra.untrusted import first_hidden, printable

SETTINGS = settings(max_examples=30, derandomize=True, deadline=None)
"""For the commands, run in-process: each example writes files and reads them back."""
NOTE_SETTINGS = settings(max_examples=60, derandomize=True, deadline=None)
"""For the renderer alone (pure, fast)."""
PREVIEWS = DATA / "preview"
SENTINEL = "glpat-SENTINELsentinel0123456789"
"""The other job's token, set while mr-note runs without its own: it must appear nowhere."""
JOB_URL = "https://gitlab.example.com/platform/gpu-ci/-/jobs/77"
MAX_ERROR = 400
"""An error line longer than this is no longer one clear line."""

URN = "urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-{}"
PLAN: dict[str, Any] = {
    "stack": "dev",
    "resources": [
        {
            "type": T.POOL,
            "name": f"kapsule-{name}",
            "urn": URN.format(name),
            "custom": True,
            "inputs": {"maxSize": size, "config": f"[[runners]]\nlimit = {size}\n", "tags": ["gpu", name]},
            "options": {"protect": True, "ignore_changes": ["size"]},
        }
        for name, size in (("ci-compile", 1), ("ci-training", 2))
    ],
    "outputs": {
        "cost": {"eur_per_day": 13.98, "makespan_minutes": 123.8, "failed_jobs": 0},
        "capacity": [{"pool": "ci-compile", "max_concurrent_jobs": 2}],
    },
    "capacity": [{"pool": "ci-compile", "max_concurrent_jobs": 2}, {"pool": "ci-training", "max_concurrent_jobs": 4}],
    "report": "Capacity (per node, while a pool is up):\npool  jobs\n",
    "warnings": ["platform.profiles.supervised.memory_limit='40Gi': overcommits"],
}
PLAN_FIELDS = [
    "stack",
    "resources",
    "resources.0",
    "resources.0.type",
    "resources.0.name",
    "resources.0.urn",
    "resources.0.inputs",
    "resources.0.inputs.config",
    "resources.0.inputs.tags",
    "resources.0.options",
    "resources.0.options.protect",
    "resources.0.options.ignore_changes",
    "resources.1.inputs.maxSize",
    "outputs",
    "outputs.cost",
    "outputs.cost.eur_per_day",
    "outputs.cost.failed_jobs",
    "outputs.capacity",
    "capacity",
    "capacity.0",
    "capacity.0.pool",
    "capacity.1.max_concurrent_jobs",
    "report",
    "warnings",
    "warnings.0",
]
PAYLOADS = [
    "@all",
    "#1",
    "!1",
    "~bug",
    "$x$",
    "&1",
    "</details>",
    "<!--",
    "-->",
    "[x](https://evil.example)",
    "![p](https://evil.example/p.png)",
    "| a |",
    "```",
    "\n```\n",
    "\n    ````\n",
    "# h",
    "- i",
    "1. i",
    "> q",
    "Resources:",
    "    + 9 to delete",
    SENTINEL[:6],
]
hostile_text = st.lists(
    st.one_of(
        st.sampled_from(PAYLOADS),
        st.text(alphabet=st.sampled_from(list("`@#!<>[]|\\-_*~ \n\r\t\x00\x1b\x85\u2028\u202eaZ09.:/")), max_size=8),
    ),
    max_size=5,
).map("".join)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e308, -1e308, 5e-324, 2.5, 0]),
    hostile_text,
)
json_values = st.one_of(
    st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
        max_leaves=8,
    ),
    st.integers(min_value=90, max_value=130).map(lambda depth: json.loads("[" * depth + "]" * depth)),
)
DELETE = object()


def _mutated(document: Any, fields: list[str], changes: list[tuple[int, Any]]) -> Any:
    """`document` with the value at each chosen field replaced (or deleted), where that field still exists."""
    document = copy.deepcopy(document)
    for index, value in changes:
        *parents, last = [int(p) if p.isdigit() else p for p in fields[index % len(fields)].split(".")]
        node: Any = document
        try:
            for part in parents:
                node = node[part]
            if value is DELETE:
                del node[last]
            else:
                node[last] = value
        except (KeyError, IndexError, TypeError):
            continue
    return document


def _file_content(document: Any, corruption: int | None) -> bytes:
    """The document as a plan file writes it, or cut short / given a byte that is no UTF-8 at `corruption`."""
    data = json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if corruption is None:
        return data
    at = corruption % (len(data) + 1)
    return data[:at] if corruption % 2 else data[:at] + b"\xff" + data[at:]


changes = st.lists(st.tuples(st.integers(min_value=0), st.one_of(json_values, st.just(DELETE))), max_size=3)
corruptions = st.one_of(st.none(), st.none(), st.integers(min_value=0))


@contextmanager
def _files(**contents: bytes) -> Iterator[dict[str, str]]:
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, content in contents.items():
            path = Path(folder) / f"{name.replace('_', '-')}.json"
            path.write_bytes(content)
            paths[name] = str(path)
        yield paths


def _assert_short_errors(run: CommandRun, names: list[str]) -> None:
    lines = run.err.splitlines()
    assert lines, "an exit code without a reason"
    for line in lines:
        assert line.startswith("error: ") and len(line) <= MAX_ERROR, line
        assert "Traceback" not in line and first_hidden(line) is None
    assert any(lines[0].startswith(f"error: {name}") for name in names), lines[0]


def _assert_clean_output(run: CommandRun) -> None:
    assert SENTINEL not in run.out + run.err
    for line in (run.out + run.err).splitlines():
        assert first_hidden(line, allowed="\t") is None, line


# ---------------------------------------------------------------------------------------------------------
# plan-diff


@SETTINGS
@given(changes, changes, corruptions)
def test_plan_diff_on_hostile_plans(base: list[tuple[int, Any]], head: list[tuple[int, Any]], cut: int | None) -> None:
    contents = {
        "base": _file_content(_mutated(PLAN, PLAN_FIELDS, base), None),
        "head": _file_content(_mutated(PLAN, PLAN_FIELDS, head), cut),
    }
    with _files(**contents) as paths:
        run = run_command("plan-diff", paths["base"], paths["head"])
    _assert_clean_output(run)
    if run.code == 0:
        assert run.out.startswith("Offline plan diff of stack ") and "\nResources:\n" in run.out and run.err == ""
    else:
        assert run.code == 2 and run.out == ""
        _assert_short_errors(run, [paths["base"], paths["head"]])


# ---------------------------------------------------------------------------------------------------------
# mr-note, offline and without a token: the note is printed


@SETTINGS
@given(changes, changes, hostile_text, st.booleans())
def test_mr_note_on_hostile_plans_prints_a_safe_note(
    base: list[tuple[int, Any]], head: list[tuple[int, Any]], diff_text: str, base_exists: bool
) -> None:
    contents = {
        "plan_base": _file_content(_mutated(PLAN, PLAN_FIELDS, base), None),
        "plan_head": _file_content(_mutated(PLAN, PLAN_FIELDS, head), None),
        "plan_diff": (diff_text + "\nResources:\n    ~ 1 to update\n").encode("utf-8", "surrogatepass"),
    }
    env = {
        "CI_SERVER_URL": "http://127.0.0.1:9",  # never reached: there is no token to post with
        "CI_MERGE_REQUEST_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_COMMIT_SHA": "a" * 40,
        "CI_JOB_URL": JOB_URL,
        "PULUMI_STACK": "dev",
        "GITLAB_PREVIEW_NOTE_TOKEN": SENTINEL,
    }
    with _files(**contents) as paths, mock.patch.dict(os.environ, env):
        os.environ.pop("GITLAB_NOTE_TOKEN", None)
        if not base_exists:
            Path(paths["plan_base"]).unlink()
        args = ["--plan-diff", paths["plan_diff"], "--plan", paths["plan_head"], "--base-plan", paths["plan_base"]]
        run = run_command("mr-note", *args)
    _assert_clean_output(run)
    if run.code == 0:
        assert run.err == (
            "mr-note: $GITLAB_NOTE_TOKEN is not set (a fork's pipeline has no project variables): "
            "the note above was not posted\n"
        )
        _assert_safe_note(run.out, marker("dev", "offline"), JOB_URL)
    else:
        assert run.code == 2 and run.out == ""
        _assert_short_errors(run, [paths["plan_head"], paths["plan_diff"]])


# ---------------------------------------------------------------------------------------------------------
# guard-replacements

PREVIEWS_KEPT = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(PREVIEWS.glob("*.json"))]
PREVIEW_FIELDS = [
    "steps",
    "steps.0",
    "steps.0.op",
    "steps.0.urn",
    "steps.0.newState",
    "steps.0.newState.type",
    "steps.0.oldState",
    "steps.0.replaceReasons",
    "steps.0.replaceReasons.0",
    "steps.1.op",
    "steps.1.oldState.type",
    "changeSummary",
]
ops = st.sampled_from(["same", "delete", "replace", "create-replacement", "discard", "rm", ""])


step_changes = st.lists(st.tuples(st.integers(min_value=0), st.one_of(json_values, ops, st.just(DELETE))), max_size=3)


@SETTINGS
@given(st.sampled_from(PREVIEWS_KEPT), step_changes, corruptions)
def test_guard_replacements_on_hostile_previews(
    preview: dict[str, Any], mutations: list[tuple[int, Any]], cut: int | None
) -> None:
    content = _file_content(_mutated(preview, PREVIEW_FIELDS, mutations), cut)
    with _files(preview=content) as paths, mock.patch.dict(os.environ):
        os.environ.pop("GPU_CI_ALLOW_REPLACE", None)
        run = run_command("guard-replacements", paths["preview"])
    _assert_clean_output(run)
    if run.code == 0:
        assert run.out.startswith("guard-replacements: no pool, namespace, runner registration or cluster is ")
    elif run.code == 1:
        *found, last = run.err.splitlines()
        assert found and all(line.startswith("error: the plan ") for line in found)
        assert last.startswith("error: running jobs would be lost")
    else:
        assert run.code == 2 and run.out == ""
        _assert_short_errors(run, [paths["preview"]])


# ---------------------------------------------------------------------------------------------------------
# The note, from hostile values straight into the renderer (the commands refuse most of them earlier)

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,})([^`]*)$")
_KNOWN_HTML = (
    "<details open>",
    "<details>",
    "</details>",
    "<summary>Offline plan diff: cost and waits, policy, outputs</summary>",
    "<summary>Offline plan diff</summary>",
    "<summary><code>pulumi preview --diff</code></summary>",
    "<summary>Capacity and cost at this commit</summary>",
    "<sub>Updated in place on each push by <code>python -m infra mr-note</code>.</sub>",
)
FOOTER = _KNOWN_HTML[-1]
_WARNINGS_SUMMARY = re.compile(r"<summary>Warnings of the platform spec at this commit \(\d+\)</summary>")


def _read_markdown(note: str) -> tuple[list[str], list[str]]:
    """The note's prose lines and its code blocks' contents, split where CommonMark splits them: a block
    ends at the first line of at least as many backticks as its opening fence."""
    prose, blocks = [], []
    lines = note.split("\n")
    index = 0
    while index < len(lines):
        if opening := _FENCE_OPEN.match(lines[index]):
            closing = re.compile(rf"^ {{0,3}}`{{{len(opening[1])},}} *$")
            content, index = [], index + 1
            while index < len(lines) and not closing.match(lines[index]):
                content.append(lines[index])
                index += 1
            blocks.append("\n".join(content))
        else:
            prose.append(lines[index])
        index += 1
    return prose, blocks


def _without_code_spans(line: str) -> str:
    """The line with its code spans (and backslash-escaped characters) taken out, as CommonMark pairs them."""
    out, index = [], 0
    while index < len(line):
        if line[index] == "\\" and index + 1 < len(line) and line[index + 1] in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~":
            index += 2
            continue
        if line[index] == "`":
            run = re.match(r"`+", line[index:])
            assert run is not None
            closing = re.search(rf"(?<!`){run[0]}(?!`)", line[index + len(run[0]) :])
            if closing:
                index += len(run[0]) + closing.end()
                continue
            index += len(run[0])
            out.append("`")
            continue
        out.append(line[index])
        index += 1
    return "".join(out)


def _assert_safe_note(note: str, first_line: str, job_url: str | None) -> list[str]:
    prose, blocks = _read_markdown(note)
    assert prose[0] == first_line  # the marker, whole, first
    assert prose[-2:] == [FOOTER, ""]  # nothing swallowed the end of the note
    assert prose[1].startswith("### Infrastructure preview: stack `")
    for number, line in enumerate(prose[1:], start=1):
        ours = line.removeprefix("### ") if number == 1 else line  # the note's own heading
        if ours is line and re.match(r" {0,3}(#|>|=+ *$|-{3,} *$|\d{1,9}[.)] )", line):
            raise AssertionError(f"a heading, quote, rule or list of its own: {line!r}")
        for html in _KNOWN_HTML:
            ours = ours.replace(html, "")
        ours = _WARNINGS_SUMMARY.sub("", ours)
        if job_url:
            ours = ours.replace(link("job log", job_url), "")
        rest = _without_code_spans(ours)
        assert not re.search(r"[@#!~%$&^<\[\]|`]", rest), (line, rest)  # mentions, references, HTML, links
        assert "-->" not in line
    return blocks


@NOTE_SETTINGS
@given(
    diff=hostile_text,
    report=hostile_text,
    warnings=st.lists(hostile_text, max_size=3),
    summary=st.sampled_from(["", "Resources:\n    + 1 to create\n"]),
    pool=hostile_text,
    why=hostile_text,
    job_url=st.one_of(st.none(), hostile_text, st.just(JOB_URL)),
    offline=st.booleans(),
)
def test_hostile_values_cannot_ping_or_restructure_the_note(
    *,
    diff: str,
    report: str,
    warnings: list[str],
    summary: str,
    pool: str,
    why: str,
    job_url: str | None,
    offline: bool,
) -> None:
    base = {"capacity": [{"pool": pool, "max_concurrent_jobs": 1}, {"pool": "ci-a", "max_concurrent_jobs": 1}]}
    head = {"capacity": [{"pool": pool + "x", "max_concurrent_jobs": 2}, {"pool": "ci-a", "max_concurrent_jobs": 3}]}
    note = NoteInput(
        stack="dev",
        text=diff + summary,
        offline=offline,
        report=report or None,
        warnings=tuple(warnings),
        commit="abc12345",
        job_url=job_url,
        delta=(*render_delta(base, head), *render_delta(None, head, no_base=why)),
    )
    body = render_note(note)
    blocks = _assert_safe_note(body, marker("dev", "offline" if offline else "preview"), job_url)
    expected = [printable(clip(clean(note.text))[0], None, keep="\n\t")]
    if note.report:
        expected.append(printable(clip(note.report)[0], None, keep="\n\t"))
    if warnings:
        expected.append(printable(clip("\n".join(f"- {w}" for w in warnings))[0], None, keep="\n\t"))
    assert blocks == expected  # each value stays inside its own block, whole
