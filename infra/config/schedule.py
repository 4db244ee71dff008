"""Times of the week in the spec: days (`Mon-Fri`), clock times (`08:00`), windows, IANA time zones.

Used by the workload's arrival hours (`workload.profiles.<p>.kinds.<kind>`) and the pools' warm windows
(`pools.<p>.warm`). A window is `days` x [`from`, `to`) in one day: it never crosses midnight (give two),
`to` may be `24:00`. Times are in `workload.time_zone` (an IANA name such as `Europe/Paris`); the week the
simulation runs starts on Monday 00:00 there, and ignores daylight-saving shifts (a week has 7 x 24 h).
"""

from __future__ import annotations

import re
import zoneinfo
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from infra.config.base import SpecModel

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY
_CLOCK = re.compile(r"(?P<h>[01][0-9]|2[0-4]):(?P<m>[0-5][0-9])")
"""ASCII digits only: `\\d` would also take other scripts' digits (U+0668, an Arabic-Indic 8), which `int()` reads."""
_DAY_PART = re.compile(r"(?P<first>[A-Za-z]{3})(?:-(?P<last>[A-Za-z]{3}))?")


def parse_days(value: Any) -> str:
    """`Mon-Fri`, `Sat,Sun`, `Mon,Wed-Fri` (English three-letter names, any case): checked, kept as written."""
    if not isinstance(value, str):
        raise ValueError("not days like Mon-Fri or Sat,Sun")
    weekdays(value)
    return value


def weekdays(text: str) -> frozenset[int]:
    """The days of `text` (0 = Monday); ValueError for a name that is no day, or a day listed twice."""
    if len(text) > 64:
        raise ValueError("not days like Mon-Fri or Sat,Sun")
    days: list[int] = []
    for part in text.split(","):
        match = _DAY_PART.fullmatch(part.strip(" "))  # spaces only: "Mon-Fri\n" is refused like any trailing newline
        names = [match["first"], match["last"] or match["first"]] if match else []
        if not names or any(name.lower() not in WEEKDAYS for name in names):
            raise ValueError(f"{part.strip(' ')[:16]!r} is not a day or a range of days like Mon-Fri (Mon ... Sun)")
        first, last = (WEEKDAYS.index(name.lower()) for name in names)
        if last < first:
            raise ValueError(f"{part.strip(' ')!r} runs backwards: a range goes from Mon towards Sun")
        days += range(first, last + 1)
    if len(set(days)) != len(days):
        raise ValueError("names a day twice")
    return frozenset(days)


def parse_clock(value: Any) -> str:
    """`HH:MM` from 00:00 to 24:00."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MINUTES_PER_DAY:
        hours, minutes = divmod(value, 60)
        raise ValueError(
            f'is how YAML reads {hours}:{minutes:02d} unquoted (base 60): write "{hours:02d}:{minutes:02d}"'
        )
    match = _CLOCK.fullmatch(value) if isinstance(value, str) else None
    if match is None or (match["h"] == "24" and match["m"] != "00"):
        raise ValueError("not a time of day like 08:00 (00:00 to 24:00, quoted in YAML)")
    return value


def clock_minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
"""Files of a zoneinfo directory that name no place: `localtime` is the machine's own zone (another on the
cluster, or none), `posixrules` a template, `Factory` the "-00" of an unset clock."""


def parse_time_zone(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 64 or value in NOT_ZONES or value not in _time_zones():
        raise ValueError("not an IANA time zone like Europe/Paris or UTC")
    return value


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


Days = Annotated[str, BeforeValidator(parse_days)]
"""Days of the week: `Mon-Fri`, `Sat,Sun`, `Mon,Wed-Fri`."""
ClockTime = Annotated[str, BeforeValidator(parse_clock)]
"""A time of day, `HH:MM` (00:00 to 24:00), in the workload's time zone."""
TimeZone = Annotated[str, AfterValidator(parse_time_zone)]
"""An IANA time zone name (`Europe/Paris`, `UTC`)."""


class WindowSpec(SpecModel):
    """Some days of the week, from one time of day to a later one."""

    days: Days = "Mon-Sun"
    """Days of the week: `Mon-Fri`, `Sat,Sun`, `Mon,Wed-Fri`."""
    start: ClockTime = Field("00:00", alias="from")
    """Start, `HH:MM` in the workload's time zone."""
    end: ClockTime = Field("24:00", alias="to")
    """End, `HH:MM`, after `from` (`24:00`: midnight; a window does not cross midnight: give two)."""

    @model_validator(mode="after")
    def _ordered(self) -> WindowSpec:
        if clock_minutes(self.end) <= clock_minutes(self.start):
            raise ValueError(f"to={self.end} is not after from={self.start} (a window ends the day it starts)")
        return self

    def intervals(self) -> list[tuple[int, int]]:
        """[start, end) minutes from Monday 00:00, one per day, in week order."""
        start, end = clock_minutes(self.start), clock_minutes(self.end)
        return [(day * MINUTES_PER_DAY + start, day * MINUTES_PER_DAY + end) for day in sorted(weekdays(self.days))]
