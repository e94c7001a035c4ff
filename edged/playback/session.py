"""One announcement as the caller and the player thread share it, and what it reports."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Pcm = npt.NDArray[np.int16]


@dataclass
class PlaybackReport:
    interrupted: bool
    underruns: int
    """Times the voice was late (synthesis slower than playback); bridged with silence."""
    underrun_ms: float
    first_audio_s: float | None
    """From play() to the first non-silent sample written to the device."""
    duration_s: float
    """Audio written to the device: pre-roll, chime, speech and bridging silence."""
    device_errors: int = 0
    """Device failures survived by reopening it during this announcement."""
    wait_ms: float = 0.0
    """Silence written after the pre-roll and chime while the first sentence was synthesized."""
    started_at: float | None = None
    """With a start instant: when the first sample sounds, by the player's clock (monotonic)."""
    late_s: float = 0.0
    """With a start instant: how much later than it the first sample sounds."""
    skipped: bool = False
    """Not started: it would have been late and the policy was `skip`."""


class Session:
    """One announcement between play() (the caller pushes samples) and the player thread."""

    def __init__(self, chime: str | None, rate_hint: int, start_at: float | None = None,
                 skip_late: bool = False) -> None:
        self.chime, self.rate_hint = chime, rate_hint
        self.start_at = start_at
        """The instant (monotonic) the first sample should sound at; None: when ready."""
        self.skip_late = skip_late
        self.started_at: float | None = None
        self.skipped = False
        self.cond = threading.Condition()
        self.pending: deque[Pcm] = deque()  # int16 mono at the device rate
        self.voice = self.eof = self.abort = False
        self.ready, self.done = threading.Event(), threading.Event()
        self.rate = 0
        self.error: BaseException | None = None
        self.frames = self.underruns = self.underrun_frames = self.wait_frames = 0
        self.device_errors = 0
        self.first_sound: float | None = None

    def push(self, samples: Pcm, voice: bool = False) -> None:
        if len(samples):
            with self.cond:
                self.pending.append(samples)
                self.voice = self.voice or voice
                self.cond.notify_all()

    def finish(self) -> None:
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def cancel(self) -> None:
        with self.cond:
            self.abort = True
            self.cond.notify_all()

    def take(self, n: int) -> Pcm:
        """Up to n frames from the front of `pending` (call with cond held)."""
        parts, need = [], n
        while need > 0 and self.pending:
            head = self.pending[0]
            if len(head) <= need:
                parts.append(self.pending.popleft())
            else:
                parts.append(head[:need])
                self.pending[0] = head[need:]
            need -= len(parts[-1])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int16)
