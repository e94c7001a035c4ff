"""What the daemon is made of: every part built by the composition root (assembly.py) and passed
in, so the daemon constructs nothing and the same parts can be read in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..house import Schedule
from ..mqtt import MqttLink
from ..playback import Player
from .admission import Admission
from .announcer import Announcer, Heartbeat
from .device_state import DeviceSettings
from .job import Job
from .jobqueue import JobQueue
from .outcomes import Outcomes
from .quiet import QuietKeeper
from .state import StateBoard


class Closable(Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class Parts:
    """What the daemon is made of, built by the composition root (assembly.py)."""

    admission: Admission
    queue: JobQueue[Job]
    quiet: QuietKeeper
    announcer: Announcer
    outcomes: Outcomes
    board: StateBoard
    link: MqttLink
    player: Player | None
    settings: DeviceSettings
    """Device volume and selected voice (Home Assistant's number and select)."""
    schedule: Schedule
    """Quiet hours and time-of-day volume; its `clock` is injectable."""
    heartbeat: Heartbeat
    closing: tuple[Closable, ...] = ()
    """Closed last when the daemon stops (the phrase cache, the done-log)."""
