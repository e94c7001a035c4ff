"""Joining the parts of a mixed-language announcement into one audio stream: one rate, one
loudness, a short pause where the language changes.

Each part comes from its own voice (Piper at 22050 Hz, Kokoro at 24000, espeak-ng at 22050),
at its own level. The joined stream is at the highest rate among the parts (soxr, streaming:
chunks join without clicks), and each part is brought to the same speech level (gain measured
on its first chunk with speech and held for the part, peaks limited, as the player does for a
whole announcement). An announcement of one part is not joined: its audio is the voice's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import numpy as np

from ..audio import Audio, to_float, to_int16
from ..audio.loudness import Leveler
from ..audio.resample import Resampler

TARGET_DBFS: Final = -20.0
"""Speech level every part is brought to (the player's default target)."""
_PEAK_DBFS: Final = -1.0
_MAX_GAIN_DB: Final = 20.0


class Joiner:
    """One announcement's parts, in order, as chunks at `rate_hz`."""

    def __init__(self, rate_hz: int, switch_pause_ms: int) -> None:
        self.rate_hz = rate_hz
        self._pause = np.zeros(rate_hz * switch_pause_ms // 1000, dtype=np.int16)
        self._parts = 0

    def part(self, chunks: Iterator[Audio]) -> Iterator[Audio]:
        """One part's chunks, converted, one out per chunk in (then the converter's tail); the
        switch pause goes before every part but the first."""
        resampler = Resampler(self.rate_hz)
        leveler = Leveler(target_dbfs=TARGET_DBFS, peak_dbfs=_PEAK_DBFS,
                          max_gain_db=_MAX_GAIN_DB)
        pending: np.ndarray | None = self._pause if self._parts else None
        self._parts += 1
        for chunk in chunks:
            samples = self._convert(resampler, leveler, chunk)
            if pending is not None:
                samples, pending = np.concatenate([pending, samples]), None
            yield Audio(samples, self.rate_hz)
        tail = to_int16(leveler.process(resampler.flush(), self.rate_hz))
        if pending is not None:
            tail = np.concatenate([pending, tail])
        if len(tail):
            yield Audio(tail, self.rate_hz)

    def _convert(self, resampler: Resampler, leveler: Leveler, chunk: Audio) -> np.ndarray:
        converted = resampler.process(to_float(chunk.samples), chunk.rate_hz)
        return to_int16(leveler.process(converted, self.rate_hz))
