"""Announcement priorities, and the one rule for when a new announcement cuts in."""

from __future__ import annotations

from typing import Final

CRITICAL: Final = "critical"
PRIORITIES: Final = (CRITICAL, "high", "normal", "low")
"""Best first; the index is the rank (0 = critical) in the announcement queue."""
BACKGROUND: Final = len(PRIORITIES)
"""Rank of work nobody waits for (warming pinned phrases): after every announcement."""


def rank(priority: str) -> int:
    return PRIORITIES.index(priority)


def preempts(new: str, current: str) -> bool:
    """Does an announcement of priority `new` interrupt one of `current` that is being spoken?
    Only a critical one does, and never another critical one: two alarms play in turn."""
    return new == "critical" and current != "critical"
