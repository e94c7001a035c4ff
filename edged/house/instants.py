"""When a group's members start: one instant every member computes from the request alone.

    play_at: 1767225600000                 the instant itself (Unix time, ms)
    start_in_ms: 1500, sent_at: 17672...   the moment the request was published + a delay

Each member converts the instant to its own monotonic clock when its turn comes and starts
the first sample there (playback/player.py). Members on different machines agree as well as
their clocks do (NTP: a few ms on a LAN; `clock` in `<p>/state` says whether the kernel
counts its clock as synchronized). Nothing here reads a clock but `start_instant`'s caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MAX_AHEAD_S: Final = 60.0
"""How far ahead an instant may be: the member holds its loudspeaker while it waits."""


@dataclass(frozen=True)
class Instant:
    """A start instant on the wall clock and, once converted, on the monotonic clock."""

    wall_s: float
    """Unix time in seconds."""

    def monotonic(self, now_wall: float, now_mono: float) -> float:
        return now_mono + (self.wall_s - now_wall)

    @property
    def ms(self) -> int:
        return round(self.wall_s * 1000)


def start_instant(play_at_ms: float | None, start_in_ms: float | None,
                  sent_at_ms: float | None) -> Instant | None:
    """The instant a request asks for; None: start when ready."""
    if play_at_ms is not None:
        return Instant(play_at_ms / 1000)
    if start_in_ms is not None and sent_at_ms is not None:
        return Instant((sent_at_ms + start_in_ms) / 1000)
    return None


def too_far_ahead(instant: Instant, now_wall: float) -> str | None:
    """Why an instant cannot be accepted now (None: it can)."""
    ahead = instant.wall_s - now_wall
    if ahead > MAX_AHEAD_S:
        return (f"the start instant is {ahead:.0f} s ahead; at most {MAX_AHEAD_S:.0f} s "
                "(the loudspeaker is held while waiting)")
    return None


def late_error(late_s: float, policy: str) -> str:
    """The `failed` error of an announcement skipped for being late."""
    return (f"late: could not start until {1000 * late_s:.0f} ms after its instant; "
            f"skipped (groups_late: {policy})")
