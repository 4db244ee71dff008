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
GITLAB_NOTE_LIMIT: Final = 1_000_000
"""Characters GitLab accepts in one note: a longer note is refused, so whatever the change, the note is cut below it."""
SCREEN_LINES: Final = 40
"""Lines of one screen: the note's visible part (outside closed `<details>`) stays within it; the diff is folded
when it would not."""
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


def render_note(
    note: NoteInput, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS, limit: int = GITLAB_NOTE_LIMIT
) -> str:
    """The note's markdown: marker, headline, the (clipped) diff, the capacity report, the warnings.

    What is visible without a click (`visible_lines`) stays within one screen: the report and the warnings are
    folded, the diff too when it would not fit. The whole stays within `limit` (GitLab's note size): sections
    are left out, last first, each with a line saying so."""
    summary = note.summary
    sections: list[tuple[str, list[str]]] = [("head", [note_marker(note), _heading(note), ""])]
    if note.delta:
        sections.append(("delta", [*note.delta, ""]))
    for side, burst in note.bursts:
        sections.append(("burst", [*burst_chart(side, burst), ""]))
    intro = [_headline(note, summary)]
    if note.offline:
        intro += [
            "",
            "This pipeline has no cloud credentials (a fork, or a branch that does not receive the protected "
            "variables), so this compares what the program would register at the base and at this commit "
            "(`python -m infra plan --json`, under mocks), not the cloud's state. Changes of fields the providers "
            "replace on are marked `+-` (replace); a replacement decided from the cloud's state shows only in "
            "the `preview` job on the default branch, before `up`.",
        ]
    sections.append(("intro", intro))
    shown, shown_lines, total_lines = clip(clean(note.text), max_lines, max_chars)
    title = "Offline plan diff" if note.offline else "<code>pulumi preview --diff</code>"
    changes, rest = split_offline(shown) if note.offline else (shown, "")
    diff = ["", "<details open>", f"<summary>{title}</summary>", "", fenced(changes, "diff"), "", "</details>"]
    if rest:
        diff += ["", *_folded(f"{title}: cost and waits, policy, outputs", fenced(rest, "diff"))]
    if shown_lines < total_lines:
        where = f"the {link('job log', note.job_url)}" if note.job_url else "the job log"
        diff += ["", f"Showing the first {shown_lines} of {total_lines} lines: the full output is in {where}."]
    sections.append(("diff", diff))
    if note.report:
        report, _, _ = clip(note.report, max_lines, max_chars)
        sections.append(("report", ["", *_folded("Capacity and cost at this commit", fenced(report))]))
    if note.warnings:
        warnings, _, _ = clip("\n".join(f"- {w}" for w in note.warnings), max_lines, max_chars)
        title = f"Warnings of the platform spec at this commit ({len(note.warnings)})"
        sections.append(("warnings", ["", *_folded(title, fenced(warnings))]))
    sections.append(("footer", ["", _footer()]))
    body = _join(sections)
    if len(visible_lines(body)) > SCREEN_LINES:  # fold the diff: the headline still says what it counts
        diff[1] = "<details>"
        body = _join(sections)
    return _within(sections, limit) if len(body) > limit else body


def split_offline(text: str) -> tuple[str, str]:
    """An offline plan diff (`infra.review.diff`) as its resources up to their `Resources:` summary, and the
    rest (the cost and waits, the policy, the outputs): the first is what a reviewer reads first."""
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if line == "Resources:"]
    if not headers:
        return text, ""
    end = headers[-1] + 1
    while end < len(lines) and lines[end].strip():
        end += 1
    return "\n".join(lines[:end]), "\n".join(lines[end:]).strip("\n")


def _folded(title: str, block: str) -> list[str]:
    return ["<details>", f"<summary>{title}</summary>", "", block, "", "</details>"]


def _join(sections: list[tuple[str, list[str]]]) -> str:
    return "\n".join(line for _, lines in sections for line in lines) + "\n"


LEFT_OUT: Final = ("burst", "warnings", "report", "delta", "diff")
"""The sections left out, in this order, of a note that would exceed GitLab's size."""


def _within(sections: list[tuple[str, list[str]]], limit: int) -> str:
    """The note with sections left out (`LEFT_OUT`) until it fits in `limit` characters, each with a line."""
    said = (
        f"(Left out here: the note would exceed GitLab's limit of {GITLAB_NOTE_LIMIT:,} characters; "
        "the job log has it all.)"
    )
    sections = list(sections)
    for name in LEFT_OUT:
        for index, (key, _) in enumerate(sections):
            if key == name:
                sections[index] = ("cut", [said, ""])
        body = _join(sections)
        if len(body) <= limit:
            return body
    return body[: max(0, limit - len(said) - 1)] + said + "\n"  # only the fixed parts are left: cannot happen


def visible_lines(markdown: str) -> list[str]:
    """The note's lines a reader sees without a click: everything outside closed `<details>` but for blank lines
    of prose, and the `<summary>` lines of closed ones (how long the note is on screen)."""
    seen: list[str] = []
    depth = closed = 0
    fence = ""
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence:  # in a code block: every line shows, blank or not, and nothing in it is HTML
            fence = "" if stripped.startswith(fence) and not stripped.strip("`") else fence
            if not closed:
                seen.append(line)
            continue
        if stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
        elif stripped.startswith("<details"):
            depth += 1
            if not closed and stripped != "<details open>":
                closed = depth
            continue
        elif stripped == "</details>":
            closed = 0 if closed == depth else closed
            depth -= 1
            continue
        summary = stripped.startswith("<summary>") and closed == depth
        if stripped and (not closed or summary):
            seen.append(line)
    return seen


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
