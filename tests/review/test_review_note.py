"""The MR note's pure parts: reading a preview's summary, deciding whether to speak, rendering, clipping."""

from __future__ import annotations

import dataclasses
import html
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import DATA

from infra.review.note import (
    NoteInput,
    PreviewSummary,
    burst_chart,
    clip,
    fenced,
    has_something_to_say,
    marker,
    render_no_changes,
    render_note,
    summarize,
)
from infra.sim.burst import BurstTimeline
from infra.untrusted import printable

# Shaped after pulumi's diff display (pkg/backend/display): `    <prefix><n> to <op>` per operation, then
# `    <n> changes. <m> unchanged` when several kinds of change occur.
PREVIEW = """\
Previewing update (dev):
  pulumi:pulumi:Stack: (same)
    + scaleway:kubernetes/pool:Pool: (create)
        [urn=urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-h100]
        nodeType  : "H100-1-80G"
    +-scaleway:kubernetes/pool:Pool: (replace)
        [urn=urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-compile]
      ~ nodeType: "L4-1-24G" => "L40S-1-48G"
Resources:
    + 1 to create
    +-1 to replace
    2 changes. 6 unchanged
"""


def test_summary_of_a_preview_with_changes() -> None:
    summary = summarize(PREVIEW)
    assert summary == PreviewSummary({"create": 1, "replace": 1}, 6, outputs_changed=False, found=True)
    assert summary.describe() == "1 to create, 1 to replace, 6 unchanged"


def test_summary_ignores_colours_and_reads_the_last_summary() -> None:
    coloured = "\x1b[38;5;13m\x1b[1mResources:\x1b[0m\n    \x1b[38;5;3m~ 2 to update\x1b[0m\n    1 unchanged\n"
    summary = summarize("Resources:\n    + 9 to create\n\n" + coloured)
    assert summary.ops == {"update": 2} and summary.unchanged == 1


def test_output_only_changes_are_changes() -> None:
    text = "Outputs:\n  ~ capacity: [\n      ...\n    ]\n\nResources:\n    8 unchanged\n"
    summary = summarize(text)
    assert summary.outputs_changed and summary.changes
    assert summary.describe() == "stack outputs change, 8 unchanged"
    assert not summarize('Outputs:\n    cluster_id: "fr-par/1"\n\nResources:\n    8 unchanged\n').changes


@pytest.mark.parametrize(
    ("text", "exit_code", "expected"),
    [
        (PREVIEW, 0, True),
        ("Resources:\n    8 unchanged\n", 0, False),
        ("Resources:\n    8 unchanged\n", 1, True),  # failed after the summary: still worth saying
        ("error: could not load plugin scaleway\n", 255, True),
        ("something pulumi never prints\n", 0, True),  # no summary to read: say it rather than hide it
    ],
    ids=["changes", "no-changes", "failed", "failed-early", "unreadable"],
)
def test_when_there_is_something_to_say(text: str, exit_code: int, expected: bool) -> None:
    assert has_something_to_say(NoteInput("dev", text, exit_code=exit_code)) is expected


def test_clip_keeps_whole_lines_within_both_limits() -> None:
    text = "\n".join(f"line {i:03d}" for i in range(100))
    assert clip(text, max_lines=10, max_chars=10_000) == ("\n".join(f"line {i:03d}" for i in range(10)), 10, 100)
    shown, lines, total = clip(text, max_lines=1000, max_chars=25)
    assert shown == "line 000\nline 001" and (lines, total) == (2, 100)
    assert clip("a\nb\n") == ("a\nb", 2, 2)


def test_fence_is_longer_than_any_backticks_inside() -> None:
    assert fenced("plain", "diff") == "```diff\nplain\n```"
    block = fenced("a ```` b")
    assert block.startswith("`````\n") and block.endswith("\n`````")


def test_note_layout_marker_first_then_diff_report_warnings() -> None:
    note = NoteInput(
        "dev",
        PREVIEW,
        report="Capacity (per node, while a pool is up):\npool  ...\n",
        warnings=("platform.profiles.supervised.memory_limit='40Gi': overcommits",),
        commit="abc12345",
        job_url="https://gitlab.example.com/g/p/-/jobs/9",
    )
    body = render_note(note)
    assert body.splitlines()[0] == marker("dev") == "<!-- gpu-ci:mr-note stack=dev source=preview -->"
    offline = render_note(NoteInput("dev", PREVIEW, offline=True))
    assert offline.splitlines()[0] == marker("dev", "offline") == "<!-- gpu-ci:mr-note stack=dev source=offline -->"
    with pytest.raises(ValueError, match="note source 'fork'"):
        marker("dev", "fork")
    assert (
        "**`pulumi preview`** at commit `abc12345`: 1 to create, 1 to replace, 6 unchanged "
        "([job log](https://gitlab.example.com/g/p/-/jobs/9))."
    ) in body
    assert "```diff\n" + PREVIEW.rstrip("\n") + "\n```" in body
    assert body.index("```diff") < body.index("Capacity and cost") < body.index("Warnings of the platform spec")
    assert "- platform.profiles.supervised.memory_limit='40Gi': overcommits" in body
    assert "Showing the first" not in body
    assert "no cloud credentials" not in body


def test_long_diffs_are_truncated_with_a_pointer_to_the_job_log() -> None:
    long = "\n".join(f"~ resource-{i}" for i in range(1000)) + "\nResources:\n    ~ 1000 to update\n"
    body = render_note(NoteInput("dev", long, job_url="https://gitlab.example.com/j/1"), max_lines=50)
    assert "~ resource-49\n```" in body and "resource-50" not in body
    assert (
        "Showing the first 50 of 1002 lines: the full output is in the [job log](https://gitlab.example.com/j/1)."
    ) in body
    assert "1000 to update" in body  # the headline keeps the whole summary
    huge = "x" * 500_000 + "\n" + long
    assert len(render_note(NoteInput("dev", huge))) < 100_000  # far below GitLab's 1,000,000 characters


def test_offline_note_says_what_it_cannot_see() -> None:
    body = render_note(NoteInput("dev", "Resources:\n    + 1 to create\n", offline=True))
    assert "**Offline plan diff**: 1 to create." in body
    assert "a replacement decided from the cloud's state shows only in the `preview` job" in body


def test_no_changes_note_replaces_a_stale_diff() -> None:
    body = render_no_changes(NoteInput("dev", "Resources:\n    8 unchanged\n", commit="abc12345"))
    assert body.startswith(marker("dev") + "\n")
    assert "No infrastructure changes as of commit `abc12345`: `pulumi preview` reports 8 unchanged." in body


# --- a `<summary>` line is HTML, where Markdown's escapes and code spans protect nothing ---

_GOLDEN_BURST = json.loads((DATA / "golden" / "plan-dev.json").read_text())["outputs"]["cost"]["burst"]
_OUR_TAGS = re.compile(r"</?(?:summary|code)>")


def _summary_line(pipeline: str) -> str:
    burst = dataclasses.replace(BurstTimeline.from_json(_GOLDEN_BURST), pipeline=pipeline)
    (line,) = [line for line in burst_chart("head", burst) if line.startswith("<summary>")]
    return line


@pytest.mark.parametrize(
    "pipeline",
    [
        "deploy</summary></details><script>alert(document.domain)</script>",
        'x" onmouseover="alert(1)',
        "<img src=x onerror=alert(2)>@group/team #12 !3 ~bug &epic",
        "a\n\n# heading\n@all",
        "`</summary>`<svg onload=alert(3)>",
    ],
)
def test_a_pipeline_name_on_the_summary_line_stays_text_inside_code(pipeline: str) -> None:
    line = _summary_line(pipeline)
    outside = _OUR_TAGS.sub("", line)
    assert "<" not in outside and ">" not in outside and '"' not in outside  # no element, no attribute of its own
    spans = re.findall(r"<code>(.*?)</code>", line)
    assert [html.unescape(span) for span in spans] == [printable(pipeline, None)]  # the whole name, as text
    assert not re.search(r"[@#!~&]", re.sub(r"<code>.*?</code>", "", line).replace("&lt;", "").replace("&gt;", ""))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=40))
def test_any_pipeline_name_leaves_the_summary_line_one_summary(pipeline: str) -> None:
    line = _summary_line(pipeline)
    assert "\n" not in line and line.count("<summary>") == 1 and line.endswith("</summary>")
    assert "<" not in _OUR_TAGS.sub("", line)
