"""The merge-request note: the preview diff (or the offline plan diff), the capacity report, the warnings.

Pure: what to say and how, from text and plan data. Posting it is `gitlab_notes`'s job. One note per MR
and stack, found again on the next push by the hidden marker on its first line.

`pulumi preview --diff` and `python -m infra plan-diff` print the same layout (markers, a `Resources:`
summary), so `summarize` reads both: it decides whether there is anything to say, and the headline.

Every value the note quotes goes through `infra.review.markdown`: prose values (the headline's counts, a
pool, why there is no base) through `text`, the stack and the commit as code spans, the diff, the report
and the warnings as code blocks no line of theirs can close, the job log as a checked link, the stack in
the hidden marker only as a stack name; on a `<summary>` line, an HTML block where Markdown is not read, the
values are in HTML's forms (`html_code`, `html_text`). No value can mention anyone, reference an issue, add a heading,
open HTML or leave the marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from infra.render.gantt import gantt, rows
from infra.review.markdown import code, fenced, hidden, html_code, html_text, link, text
from infra.review.schema import STACK_NAME
from infra.sim.burst import BurstTimeline

MAX_LINES: Final = 400
"""Diff lines shown in the note; the rest is in the job log. A readability cap, far below GitLab's limit."""
MAX_CHARS: Final = 60_000
"""Characters of diff shown in the note (GitLab refuses notes over 1,000,000 characters)."""
OPEN_CHART_ROWS: Final = 24
"""A burst chart of more task rows than this is collapsed (its `<details>` closed): a long chart is hard to read."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_OP_LINE = re.compile(r"^\s+(?:[-+~<>=*]+\s*)?(\d+) to ([a-z][a-z-]{0,39})\s*$")
_UNCHANGED = re.compile(r"\b(\d+) unchanged\b")
MAX_COUNT_DIGITS: Final = 9
"""A count of more digits is no summary pulumi printed (and int() refuses 4,300 digits): the summary is
then unreadable, and the note says so rather than "no changes"."""
_OUTPUT_HEADERS = ("Outputs:", "--outputs:--")


SOURCES: Final = ("preview", "offline")
"""Who writes a note: the protected `preview` job, or the unprotected `plan-diff` job (offline)."""


def marker(stack: str, source: str = "preview") -> str:
    """The hidden first line that identifies this tool's note for `stack` on an MR, and which job wrote it.

    The two jobs post as two GitLab users, and each only ever looks for its own marker: the unprotected
    job cannot mistake the protected job's note for its own, let alone edit it.
    """
    if source not in SOURCES:
        raise ValueError(f"note source {source!r}: expected one of {SOURCES}")
    if not STACK_NAME.fullmatch(stack):
        raise ValueError(f"stack {stack!r}: not a stack name (letters, digits, '-', '_', '.')")
    return hidden(f"gpu-ci:mr-note stack={stack} source={source}")


def note_marker(note: NoteInput) -> str:
    """The marker of the note `note` renders to: its stack, and the job that writes it."""
    return marker(note.stack, "offline" if note.offline else "preview")


@dataclass(frozen=True)
class PreviewSummary:
    """The `Resources:` summary of a preview (or offline diff), and whether stack outputs change."""

    ops: dict[str, int] = field(default_factory=dict)
    """Operation (`create`, `update`, `replace`, ...) to count, in printed order."""
    unchanged: int = 0
    outputs_changed: bool = False
    found: bool = False
    """A `Resources:` summary was printed (a failed preview prints none)."""

    @property
    def changes(self) -> bool:
        return any(self.ops.values()) or self.outputs_changed

    def describe(self) -> str:
        """`1 to create, 2 to update, 10 unchanged` (or `no changes`)."""
        parts = [f"{count} to {op}" for op, count in self.ops.items()]
        if self.outputs_changed and not parts:
            parts.append("stack outputs change")
        if self.unchanged:
            parts.append(f"{self.unchanged} unchanged")
        return ", ".join(parts) or "no changes"


def clean(text: str) -> str:
    """Text without ANSI colours or carriage returns (in case a colour setting slipped through)."""
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def summarize(text: str) -> PreviewSummary:
    """Read the last `Resources:` summary and any changed stack output of a preview's text."""
    lines = clean(text).splitlines()
    headers = [i for i, line in enumerate(lines) if line.strip() == "Resources:"]
    ops: dict[str, int] = {}
    unchanged = 0
    if headers:
        for line in lines[headers[-1] + 1 :]:
            if not line.strip():
                break
            match = _OP_LINE.match(line) or _UNCHANGED.search(line)
            if match is None:
                continue
            if len(match[1]) > MAX_COUNT_DIGITS:
                return PreviewSummary(outputs_changed=_outputs_changed(lines))
            if match.re is _OP_LINE:
                ops[match[2]] = ops.get(match[2], 0) + int(match[1])
            else:
                unchanged = int(match[1])
    return PreviewSummary(ops, unchanged, _outputs_changed(lines), bool(headers))


def _outputs_changed(lines: list[str]) -> bool:
    in_outputs = False
    for line in lines:
        stripped = line.strip()
        if stripped in _OUTPUT_HEADERS:
            in_outputs = True
        elif not stripped:
            in_outputs = False
        elif in_outputs and stripped[0] in "+-~":
            return True
    return False


def clip(text: str, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS) -> tuple[str, int, int]:
    """The first lines of `text` within both limits: (shown text, lines shown, lines in total)."""
    lines = text.rstrip("\n").splitlines()
    shown: list[str] = []
    size = 0
    for line in lines[:max_lines]:
        if size + len(line) + 1 > max_chars:
            break
        shown.append(line)
        size += len(line) + 1
    return "\n".join(shown), len(shown), len(lines)


@dataclass(frozen=True)
class NoteInput:
    """Everything a note says; all of it already masked (preview text, plan JSON)."""

    stack: str
    text: str
    """`pulumi preview --diff` output, or `python -m infra plan-diff` output when `offline`."""
    offline: bool = False
    exit_code: int = 0
    """Exit code of the command that printed `text` (a failed preview is worth a note)."""
    report: str | None = None
    """The capacity and cost report of the head (`report` of its `plan --json`)."""
    warnings: tuple[str, ...] = ()
    commit: str | None = None
    job_url: str | None = None
    delta: tuple[str, ...] = ()
    """The cost delta, base against head (`infra.review.delta.render_delta`): Markdown lines shown first."""
    bursts: tuple[tuple[str, BurstTimeline], ...] = ()
    """The busiest burst of each side's simulated week (`base`, `head`), drawn as Mermaid gantt charts."""

    @property
    def summary(self) -> PreviewSummary:
        return summarize(self.text)


def has_something_to_say(note: NoteInput) -> bool:
    """A failure, a change, or a preview whose summary cannot be read: worth a note. No change is not."""
    summary = note.summary
    return note.exit_code != 0 or not summary.found or summary.changes


def render_note(note: NoteInput, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS) -> str:
    """The note's markdown: marker, headline, the (clipped) diff, the capacity report, the warnings."""
    summary = note.summary
    parts = [note_marker(note), _heading(note), ""]
    if note.delta:
        parts += [*note.delta, ""]
    for side, burst in note.bursts:
        parts += [*burst_chart(side, burst), ""]
    parts.append(_headline(note, summary))
    if note.offline:
        parts += [
            "",
            "This pipeline has no cloud credentials (a fork, or a branch that does not receive the protected "
            "variables), so this compares what the program would register at the base and at this commit "
            "(`python -m infra plan --json`, under mocks), not the cloud's state. Changes of fields the providers "
            "replace on are marked `+-` (replace); a replacement decided from the cloud's state shows only in "
            "the `preview` job on the default branch, before `up`.",
        ]
    shown, shown_lines, total_lines = clip(clean(note.text), max_lines, max_chars)
    title = "Offline plan diff" if note.offline else "<code>pulumi preview --diff</code>"
    parts += ["", "<details open>", f"<summary>{title}</summary>", "", fenced(shown, "diff"), "", "</details>"]
    if shown_lines < total_lines:
        where = f"the {link('job log', note.job_url)}" if note.job_url else "the job log"
        parts += ["", f"Showing the first {shown_lines} of {total_lines} lines: the full output is in {where}."]
    if note.report:
        report, _, _ = clip(note.report, max_lines, max_chars)
        parts += [
            "",
            "<details open>",
            "<summary>Capacity and cost at this commit</summary>",
            "",
            fenced(report),
            "",
            "</details>",
        ]
    if note.warnings:
        warnings, _, _ = clip("\n".join(f"- {w}" for w in note.warnings), max_lines, max_chars)
        parts += ["", "**Warnings** of the platform spec at this commit:", "", fenced(warnings)]
    parts += ["", _footer()]
    return "\n".join(parts) + "\n"


def burst_chart(side: str, burst: BurstTimeline) -> list[str]:
    """A side's busiest burst as a Mermaid gantt chart in a `<details>` (closed when the chart is long)."""
    chart = gantt(burst, f"{side} - {burst.pipeline} queued {burst.clock}")
    summary = (  # an HTML line: its values in HTML's forms, where Markdown's would not hold (markdown.py)
        f"Busiest burst of the simulated week at the {html_text(side)}: {html_code(burst.pipeline)} queued "
        f"{html_text(burst.clock)}, "
        f"{float(burst.minutes):.1f} min to its last job's end ({len(burst.jobs)} jobs"
        + (f", {burst.omitted} more not drawn" if burst.omitted else "")
        + ")"
    )
    opened = " open" if rows(chart) <= OPEN_CHART_ROWS else ""
    return [f"<details{opened}>", f"<summary>{summary}</summary>", "", fenced(chart, "mermaid"), "", "</details>"]


def render_no_changes(note: NoteInput) -> str:
    """What replaces an earlier note once the MR no longer changes anything (the old diff would mislead)."""
    what = "the offline plan diff" if note.offline else "`pulumi preview`"
    at = f" as of commit {code(note.commit)}" if note.commit else ""
    return (
        "\n".join(
            [
                note_marker(note),
                _heading(note),
                "",
                f"No infrastructure changes{at}: {what} reports {text(note.summary.describe())}{_log(note)}.",
                "",
                _footer(),
            ]
        )
        + "\n"
    )


def _heading(note: NoteInput) -> str:
    return f"### Infrastructure preview: stack {code(note.stack)}"


def _log(note: NoteInput) -> str:
    return f" ({link('job log', note.job_url)})" if note.job_url else ""


def _headline(note: NoteInput, summary: PreviewSummary) -> str:
    at = f" at commit {code(note.commit)}" if note.commit else ""
    if note.exit_code != 0:
        what = "The offline plan diff" if note.offline else "`pulumi preview`"
        return f"**{what} failed** (exit code {note.exit_code}){at}{_log(note)}: its output is below."
    what = "Offline plan diff" if note.offline else "`pulumi preview`"
    if not summary.found:
        return f"**{what}**{at}: no `Resources:` summary could be read{_log(note)}; its output is below."
    return f"**{what}**{at}: {text(summary.describe())}{_log(note)}."


def _footer() -> str:
    return "<sub>Updated in place on each push by <code>python -m infra mr-note</code>.</sub>"
