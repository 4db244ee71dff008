"""From the measured tallies to the `platform.workload` to write: each profile's kinds, and each key written beside
the value it replaces (pure).

A kind written (`workload.profiles.<p>.kinds.<kind>`) is a job-name prefix of one class, with its jobs a day on
the days it runs, the median and p90 of its successful jobs' durations, its weekdays and its arrival window
(`measure`, `kinds`). On the way:

- **unknown class** (GitLab did not say the pipeline's source): the jobs take the class of the kind of that name
  in the stack file (a profile given by `jobs_per_day`/`minutes_per_job` has one: `train-validate`,
  merge_request); without one they are shown but not written;
- **both classes in one kind**: a class with under 10 % of the kind's jobs counts with the other (a manual run of
  a merge request's job); otherwise the kind is split, the class with more jobs keeps the name and the other is
  `<kind>-batch` or `<kind>-merge-request`;
- **no successful job**: the durations of the stack file's kind of that name are kept; without one it is not
  written;
- a profile holds at most `MAX_KINDS`: the busiest are written.

A profile with a kind written loses its profile-level `jobs_per_day`/`minutes_per_job` (the kinds replace them)
and the kinds the window did not see; `batches_per_day` stays only while a profile keeps the profile-level form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from infra.config.workload import LEGACY_KIND, MAX_KINDS, JobClass
from infra.workload.kinds import MAX_KIND, arrival_window, days_text, weekday_exposure
from infra.workload.measure import KindTally, Measurement

MINORITY_SHARE = 0.10
"""A class with fewer of a kind's jobs than this counts with the kind's other class instead of a kind of its own."""
SPLIT_SUFFIX: dict[JobClass, str] = {"batch": "batch", "merge_request": "merge-request"}
LEGACY_KEYS = ("jobs_per_day", "minutes_per_job")
"""A profile's keys that its kinds replace."""
REMOVED = "(removed)"


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def tidy(value: float) -> int | float:
    """30.0 -> 30 (the stack file's style), 37.5 stays."""
    return int(value) if float(value).is_integer() else value


@dataclass
class MeasuredKind:
    """One kind of a profile as measured, and what is written for it (`written` None: not written, `note` says
    why)."""

    profile: str
    name: str
    tally: KindTally
    job_class: JobClass | None
    per_day: float | None = None
    """Jobs a day on the days it runs."""
    days: str = ""
    window: tuple[str, str] | None = None
    written: dict[str, Any] | None = None
    note: str = ""
    class_from_stack: bool = False
    """The class is the stack file's kind's: GitLab said no source for any of its jobs."""

    def say(self, note: str) -> None:
        self.note = f"{self.note}; {note}" if self.note else note


@dataclass
class Resolution:
    """Every kind measured (written or not), in report order, and the notes on how classes were decided."""

    kinds: list[MeasuredKind] = field(default_factory=list)
    unknown_note: str = ""
    """What became of the jobs whose class is unknown, or ""."""
    notes: list[str] = field(default_factory=list)
    """Kinds folded or left out, one line each."""

    def written(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Profile -> kind -> its keys, for the kinds written."""
        result: dict[str, dict[str, dict[str, Any]]] = {}
        for kind in self.kinds:
            if kind.written is not None:
                result.setdefault(kind.profile, {})[kind.name] = kind.written
        return result


def assumed_kinds(profile: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """A stack file's kinds of one profile; the profile-level form is its one kind, `train-validate`."""
    if not profile:
        return {}
    if profile.get("kinds"):
        return {name: dict(kind) for name, kind in profile["kinds"].items()}
    if profile.get("jobs_per_day") is not None:
        legacy = {key: profile.get(key) for key in LEGACY_KEYS if profile.get(key) is not None}
        return {LEGACY_KIND: {"class": "merge_request", **legacy}}
    return {}


@dataclass
class _ClassBook:
    """What became of the jobs whose class was not their pipeline's: counted for the notes."""

    from_stack: int = 0
    left_out: int = 0
    folded: list[str] = field(default_factory=list)


def resolve(measurement: Measurement, assumed: Mapping[str, Any] | None) -> Resolution:
    """The kinds to write, from the tallies and the stack file's workload (`assumed`, as written there)."""
    profiles = (assumed or {}).get("profiles") or {}
    exposure = weekday_exposure(measurement.observed_from, measurement.until, measurement.zone)
    resolution, book = Resolution(), _ClassBook()
    for name, figures in measurement.profiles.items():
        known = assumed_kinds(profiles.get(name))
        by_name: dict[str, dict[JobClass | None, KindTally]] = {}
        for (kind_name, job_class), tally in figures.kinds.items():
            by_name.setdefault(kind_name, {})[job_class] = tally
        kinds: list[MeasuredKind] = []
        for kind_name, classes in by_name.items():
            kinds += _classes(kind_name, classes, profile=name, known=known, names=set(by_name), book=book)
        for kind in kinds:
            _figures(kind, exposure, known.get(kind.name))
        writable = sorted((k for k in kinds if k.written is not None), key=lambda k: (-k.tally.jobs, k.name))
        rest = writable[MAX_KINDS:]
        for kind in rest:
            kind.written = None
            kind.say(f"the spec holds {MAX_KINDS} kinds a profile: not written")
        if rest:
            resolution.notes.append(
                f"{len(rest)} kinds of {name} ({sum(k.tally.jobs for k in rest)} jobs) are not written: the spec "
                f"holds {MAX_KINDS} kinds a profile, the busiest are"
            )
        resolution.kinds += sorted(kinds, key=lambda k: (k.written is None, -k.tally.jobs, k.name))
    parts = []
    if book.from_stack:
        parts.append(f"{book.from_stack} counted in the class of their kind in the stack file")
    if book.left_out:
        parts.append(f"{book.left_out} not written (no kind of that name in the stack file)")
    if parts:
        resolution.unknown_note = "of the jobs whose pipeline's source is unknown, " + ", ".join(parts)
    if book.folded:
        resolution.notes.append(
            "a class with under 10 % of its kind's jobs counts with the other: " + "; ".join(book.folded)
        )
    return resolution


def _classes(
    kind: str,
    classes: dict[JobClass | None, KindTally],
    *,
    profile: str,
    known: Mapping[str, Mapping[str, Any]],
    names: set[str],
    book: _ClassBook,
) -> list[MeasuredKind]:
    """One measured kind's tallies by class, as the kinds to write: the unknown class resolved or set apart, two
    classes folded into one or split in two."""
    result: list[MeasuredKind] = []
    from_stack: JobClass | None = None
    unclassed = classes.pop(None, None)
    if unclassed is not None:
        stack_class = (known.get(kind) or {}).get("class")
        if stack_class in SPLIT_SUFFIX:
            if stack_class not in classes:
                from_stack = stack_class
            classes.setdefault(stack_class, KindTally(kind, job_class=stack_class)).absorb(unclassed)
            book.from_stack += unclassed.jobs
        else:
            book.left_out += unclassed.jobs
            result.append(MeasuredKind(profile, kind, unclassed, None, note="class unknown: not written"))
    if len(classes) == 2:
        major, minor = sorted(classes.values(), key=lambda t: (-t.jobs, t.job_class != "merge_request"))
        suffix = SPLIT_SUFFIX[minor.job_class or "batch"]
        split = f"{kind[: MAX_KIND - 1 - len(suffix)].rstrip('-_')}-{suffix}"
        if minor.jobs < MINORITY_SHARE * (major.jobs + minor.jobs) or split in names:
            major.absorb(minor)
            book.folded.append(f"{profile} {kind}: {minor.jobs} {minor.job_class} jobs counted as {major.job_class}")
        else:
            result.append(MeasuredKind(profile, split, minor, minor.job_class))
        classes = {major.job_class: major}
    for job_class, tally in classes.items():
        result.append(MeasuredKind(profile, kind, tally, job_class, class_from_stack=job_class == from_stack))
        if job_class == from_stack:
            result[-1].say("class from the stack file (no source)")
    return result


def _figures(kind: MeasuredKind, exposure: tuple[float, ...], stack_kind: Mapping[str, Any] | None) -> None:
    """Fill in a kind's figures and what is written for it, if anything can be."""
    tally = kind.tally
    if tally.jobs == 0:
        kind.say("no job a runner took: not written")
        return
    days = sorted(tally.weekdays)
    kind.per_day = tally.jobs / sum(exposure[day] for day in days)
    kind.days, kind.window = days_text(days), arrival_window(tally.arrivals)
    if kind.job_class is None:
        return
    p50, p90 = tally.duration_minutes(50), tally.duration_minutes(90)
    stack_kind = stack_kind or {}
    if p50 and p90:
        durations: dict[str, Any] = {"minutes_per_job": tidy(p50), "minutes_p90": tidy(p90)}
    elif stack_kind.get("minutes_per_job"):
        durations = {key: stack_kind[key] for key in ("minutes_per_job", "minutes_p90") if key in stack_kind}
        kind.say("no successful job: durations kept from the stack file")
    else:
        kind.say("no successful job, and no kind of that name in the stack file: not written")
        return
    assert kind.window is not None  # it ran, so it arrived
    kind.written = {
        "class": kind.job_class,
        "jobs_per_day": max(1, round_half_up(kind.per_day)),
        **durations,
        "days": kind.days,
        "from": kind.window[0],
        "to": kind.window[1],
    }


# --- what is written, beside what it replaces ------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One `platform.workload` key: what the stack assumes, what was measured, what gets written."""

    key: str
    assumed: object
    measured: str
    written: object
    note: str = ""


@dataclass(frozen=True)
class WorkloadEdit:
    """What `--write` changes in `platform.workload`."""

    kinds: dict[str, dict[str, dict[str, Any]]]
    """Profile -> its kinds as written (each profile's `kinds` becomes exactly these)."""
    batches_per_day: int | None
    """Written while a profile keeps the profile-level form; None: removed (the kinds say when jobs arrive)."""


def workload_edit(measurement: Measurement, resolution: Resolution, assumed: Mapping[str, Any] | None) -> WorkloadEdit:
    kinds = resolution.written()
    profiles = (assumed or {}).get("profiles") or {}
    legacy_left = any(not (load or {}).get("kinds") and name not in kinds for name, load in profiles.items())
    bursts = max(1, round_half_up(measurement.bursts_per_day)) if legacy_left else None
    return WorkloadEdit(kinds, bursts)


def comparison(
    measurement: Measurement, resolution: Resolution, edit: WorkloadEdit, assumed: Mapping[str, Any] | None
) -> list[Figure]:
    """Every key the edit sets or removes, with the value it replaces (None: not set) and the measured one."""
    assumed = assumed or {}
    profiles = assumed.get("profiles") or {}
    bursts = f"{measurement.bursts_per_day:.1f}"
    if edit.batches_per_day is not None:
        rows = [Figure("batches_per_day", assumed.get("batches_per_day"), bursts, edit.batches_per_day, "pipelines")]
    elif assumed.get("batches_per_day") is not None:
        rows = [Figure("batches_per_day", assumed["batches_per_day"], bursts, REMOVED, "every profile has kinds")]
    else:
        rows = []
    measured = {(k.profile, k.name): k for k in resolution.kinds if k.written is not None}
    for name in measurement.profiles:
        old = profiles.get(name) or {}
        if name not in edit.kinds:
            if old:
                rows.append(Figure(f"profiles.{name}", "(set)", "-", "(kept)", "no kind of it measured"))
            continue
        prefix = f"profiles.{name}"
        rows += [
            Figure(f"{prefix}.{key}", old[key], "-", REMOVED, "kinds replace it") for key in LEGACY_KEYS if key in old
        ]
        old_kinds = old.get("kinds") or {}
        for kind_name, written in edit.kinds[name].items():
            rows += _kind_rows(f"{prefix}.kinds.{kind_name}", measured[(name, kind_name)], written, old_kinds)
        rows += [
            Figure(f"{prefix}.kinds.{kind}", "(set)", "-", REMOVED, "no job of it in the window")
            for kind in old_kinds
            if kind not in edit.kinds[name]
        ]
        if old.get("gpu_utilization") is not None:
            kept = old["gpu_utilization"]
            rows.append(
                Figure(f"{prefix}.gpu_utilization", kept, "-", kept, "not measurable from GitLab (nvidia-smi): kept")
            )
    return rows


def _kind_rows(key: str, kind: MeasuredKind, written: Mapping[str, Any], old_kinds: Mapping[str, Any]) -> list[Figure]:
    old = old_kinds.get(kind.name) or {}
    p50, p90 = kind.tally.duration_minutes(50), kind.tally.duration_minutes(90)
    measured = {
        "class": "-" if kind.class_from_stack else str(kind.job_class),
        "jobs_per_day": f"{kind.per_day:.1f}",
        "minutes_per_job": "-" if not p50 else f"{p50:.1f}",
        "minutes_p90": "-" if not p90 else f"{p90:.1f}",
        "days": kind.days,
        "from": kind.window[0] if kind.window else "-",
        "to": kind.window[1] if kind.window else "-",
    }
    rows = []
    for field_name, value in written.items():
        note = kind.note if measured[field_name] == "-" else ""
        rows.append(Figure(f"{key}.{field_name}", old.get(field_name), measured[field_name], value, note))
    return rows
