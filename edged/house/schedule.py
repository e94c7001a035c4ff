"""Quiet hours and time-of-day volume, by the device's local time (an injectable clock).

    schedule.quiet: [{start: "22:00", end: "07:00", below: high}]
        announcements below `high` wait in the queue until 07:00 (`quiet_action: hold`; their own
        `ttl_s` still applies) or are refused at once (`quiet_action: drop`)
    schedule.volume: [{start: "21:00", end: "07:00", volume: 0.4}]
        the device volume (Home Assistant's number) times 0.4; critical keeps the device volume

The daemon asks `eligible_rank()` when it takes the next announcement and `volume_factor()`
when it plays one; `state()` is the `schedule` part of `<p>/state`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import ScheduleConfig, parse_hhmm
from ..daemon.priorities import PRIORITIES, rank


@dataclass(frozen=True)
class _Range:
    start: int
    end: int
    """Minutes after midnight; end <= start: the range crosses midnight."""
    label: tuple[str, str]

    def contains(self, minute: int) -> bool:
        if self.start < self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end


@dataclass(frozen=True)
class Quiet:
    """Quiet hours in force now."""

    below: str
    until: str
    """"HH:MM" at which they end."""

    def holds(self, priority: str) -> bool:
        return rank(priority) > rank(self.below)

    @property
    def held_priorities(self) -> list[str]:
        return [p for p in PRIORITIES if rank(p) > rank(self.below)]


class Schedule:
    """Thread-safe (immutable but for the clock, which is read, never set)."""

    def __init__(self, config: ScheduleConfig,
                 clock: Callable[[], dt.datetime] = dt.datetime.now) -> None:
        self.config = config
        self.clock = clock
        """Local time now; tests replace it (an injectable clock: no test waits for 22:00)."""
        self._quiet = [(_range("schedule.quiet", q.start, q.end), q.below) for q in config.quiet]
        self._volume = [(_range("schedule.volume", v.start, v.end), v.volume)
                        for v in config.volume]

    def _minute(self) -> int:
        now = self.clock()
        return now.hour * 60 + now.minute

    def quiet(self) -> Quiet | None:
        """The quiet hours in force now (the first range that contains the time), or None."""
        minute = self._minute()
        for span, below in self._quiet:
            if span.contains(minute):
                return Quiet(below, span.label[1])
        return None

    def eligible_rank(self) -> int | None:
        """The worst rank that may be spoken now; None: any."""
        quiet = self.quiet()
        return None if quiet is None else rank(quiet.below)

    def volume_factor(self, priority: str = "normal") -> float:
        """What the device volume is multiplied by now (critical: always 1)."""
        if priority == "critical":
            return 1.0
        minute = self._minute()
        return next((volume for span, volume in self._volume if span.contains(minute)), 1.0)

    def state(self, device_volume: int, held: int) -> dict[str, Any]:
        quiet = self.quiet()
        factor = self.volume_factor()
        return {
            "quiet": quiet is not None,
            "quiet_until": quiet.until if quiet else None,
            "holding": quiet.held_priorities if quiet else [],
            "quiet_action": self.config.quiet_action,
            "held": held,
            "volume_factor": factor,
            "effective_volume": round(device_volume * factor, 1),
        }


def _range(key: str, start: str, end: str) -> _Range:
    return _Range(parse_hhmm(f"{key}.start", start), parse_hhmm(f"{key}.end", end),
                  (start.strip(), end.strip()))
