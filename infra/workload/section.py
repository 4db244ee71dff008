"""What `workload --write` makes of a stack file's `workload:` section: the section as it is, with the measured
figures in (pure data; the one stack-file editor, `infra.offline.stack_edit.write_section`, writes it in place).

Only what is measured changes: each measured profile's `kinds` become exactly the kinds measured (one already
there keeps its place and its keys' order, a new one goes after them, one not measured goes), the profile-level
`jobs_per_day`/`minutes_per_job` they replace go (`kinds` taking the place of the first), and `batches_per_day`
is set while a profile keeps the profile-level form, else removed. `gpu_utilization`, `time_zone`, `baseline`
and every profile not measured stay as they are; a profile or a section that is not there yet is added at the
end of its mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.workload.figures import LEGACY_KEYS, WorkloadEdit

KIND_KEYS = ("class", "jobs_per_day", "minutes_per_job", "minutes_p90", "days", "from", "to")
"""A kind's keys, in the order they are written (a key new to a kind goes after the one before it here)."""


def measured_section(assumed: Mapping[str, Any] | None, edit: WorkloadEdit) -> dict[str, Any]:
    """The `workload:` section `assumed` (as the stack file holds it, or None) with `edit` in."""
    section = dict(assumed or {})
    if edit.batches_per_day is not None:
        section["batches_per_day"] = edit.batches_per_day
    else:
        section.pop("batches_per_day", None)
    if edit.kinds:
        profiles = dict(section.get("profiles") or {})
        for name, kinds in edit.kinds.items():
            profiles[name] = _profile(profiles.get(name), kinds)
        section["profiles"] = profiles
    return section


def _profile(profile: Mapping[str, Any] | None, kinds: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A profile with exactly `kinds`, in place of its profile-level keys (at the first's place) if it had them."""
    profile = dict(profile or {}) if isinstance(profile, Mapping) else {}
    old = profile.get("kinds") if isinstance(profile.get("kinds"), Mapping) else {}
    assert isinstance(old, Mapping)
    ordered = [name for name in old if name in kinds] + [name for name in kinds if name not in old]
    written = {name: {key: kinds[name][key] for key in KIND_KEYS if key in kinds[name]} for name in ordered}
    result: dict[str, Any] = {}
    for key, value in profile.items():
        if key in LEGACY_KEYS or key == "kinds":
            if "kinds" not in result:
                result["kinds"] = written
            continue
        result[key] = value
    result.setdefault("kinds", written)
    return result
