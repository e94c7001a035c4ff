"""The schema's section for the house: quiet hours and time-of-day volume (docs/house.md).
Groups, `groups_late` and `role` are top-level keys (schema.Config)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .fields import ConfigError
from .fields import opt as _opt

_HHMM_RE = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])")


def parse_hhmm(key: str, value: str) -> int:
    """Minutes after midnight of "HH:MM"; ConfigError naming `key` otherwise."""
    match = _HHMM_RE.fullmatch(value.strip())
    if match is None:
        hint = (" (YAML reads an unquoted 22:00 as the number 1320: write \"22:00\")"
                if value.strip().isdigit() else "")
        raise ConfigError(f"{key}: expected a time of day \"HH:MM\", got {value[:40]!r}{hint}")
    return int(match.group(1)) * 60 + int(match.group(2))


@dataclass(frozen=True)
class QuietHours:
    """A time range (local time; may cross midnight) during which announcements below a
    priority wait (or are dropped: `schedule.quiet_action`)."""

    start: str = "22:00"
    """"HH:MM", local time."""
    end: str = "07:00"
    """"HH:MM"; before `start` means the next day."""
    below: Literal["low", "normal", "high", "critical"] = "high"
    """Announcements of a lower priority than this wait; this one and above are spoken."""

    def __post_init__(self) -> None:
        if parse_hhmm("schedule.quiet.start", self.start) == parse_hhmm("schedule.quiet.end",
                                                                         self.end):
            raise ConfigError("schedule.quiet: start and end are the same time")


@dataclass(frozen=True)
class VolumeRange:
    """A time range (local time; may cross midnight) and the factor the device volume is
    multiplied by during it."""

    start: str = "22:00"
    end: str = "07:00"
    volume: float = _opt(0.5, min=0.0, max=1.0)

    def __post_init__(self) -> None:
        if parse_hhmm("schedule.volume.start", self.start) == parse_hhmm(
                "schedule.volume.end", self.end):
            raise ConfigError("schedule.volume: start and end are the same time")


@dataclass(frozen=True)
class ScheduleConfig:
    """Quiet hours and time-of-day volume (docs/house.md)."""

    quiet: tuple[QuietHours, ...] = ()
    quiet_action: Literal["hold", "drop"] = "hold"
    """hold: announcements below the priority wait until the hours end (their own ttl_s still
    applies: `failed` "expired"); drop: they are refused at once (`rejected`)."""
    volume: tuple[VolumeRange, ...] = ()
    """The first range containing the time of day multiplies the device volume (Home
    Assistant's number entity); critical announcements keep the device volume."""
