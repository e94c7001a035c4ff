"""PCM audio as edged passes it around (int16 mono samples plus a rate), and the one rule for
each conversion: float <-> int16, and a request's volume.

Samples as floats are in [-1, 1) with int16 / 32768, so int16 -> float -> int16 is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Samples = npt.NDArray[np.int16]
Floats = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Audio:
    """Mono 16-bit PCM."""

    samples: Samples
    """int16, shape (n,)."""
    rate_hz: int

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.rate_hz

    @classmethod
    def join(cls, parts: list[Audio], rate_hz: int) -> Audio:
        if not parts:
            return cls(np.zeros(0, dtype=np.int16), rate_hz)
        return cls(np.concatenate([p.samples for p in parts]), rate_hz)


def to_float(samples: npt.NDArray[np.int16]) -> Floats:
    return samples.astype(np.float32) / np.float32(32768.0)


def to_int16(samples: npt.NDArray[np.floating]) -> Samples:
    """Round to the nearest step; what would pass full scale is clipped."""
    return np.clip(np.round(samples * 32768.0), -32768, 32767).astype(np.int16)


def apply_volume(samples: Floats, volume: float) -> Samples:
    """A request's volume (0-1) on float samples, as int16: the last step of every output."""
    return to_int16(samples * np.float32(volume))


def with_volume(audio: Audio, volume: float) -> Audio:
    if volume >= 1.0:
        return audio
    return Audio(apply_volume(to_float(audio.samples), volume), audio.rate_hz)
