"""Sample-rate conversion to the device's rate with libsoxr (python-soxr), chunk by chunk.

A streaming resampler keeps its filter state between chunks, so the converted chunks join
without gaps or clicks; its output equals converting the joined audio in one go.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import soxr

QUALITY: Final = "HQ"
"""soxr's high quality (20-bit); 22050 -> 48000 Hz costs under 1 ms per second of audio on
one x86 core (bench/results/playback.json)."""


class Resampler:
    """Float32 mono chunks at any rate in, float32 at `out_rate` out."""

    def __init__(self, out_rate: int) -> None:
        self.out_rate = out_rate
        self._in_rate: int | None = None
        self._stream: soxr.ResampleStream | None = None

    def process(self, samples: np.ndarray, rate_hz: int) -> np.ndarray:
        out = []
        if rate_hz != self._in_rate:
            out.append(self.flush())  # a chunk at another rate: finish the previous stream
            self._in_rate = rate_hz
            if rate_hz != self.out_rate:
                self._stream = soxr.ResampleStream(rate_hz, self.out_rate, 1,
                                                   dtype="float32", quality=QUALITY)
        if self._stream is None:
            out.append(samples.astype(np.float32, copy=False))
        else:
            out.append(self._stream.resample_chunk(samples.astype(np.float32), last=False))
        return _join(out)

    def flush(self) -> np.ndarray:
        """The converter's delayed tail; call once at the end of the announcement."""
        stream, self._stream, self._in_rate = self._stream, None, None
        if stream is None:
            return np.zeros(0, dtype=np.float32)
        tail: np.ndarray = stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
        return tail


def resample(samples: np.ndarray, in_rate: int, out_rate: int) -> np.ndarray:
    """One-shot conversion of float32 samples (used for chimes)."""
    if in_rate == out_rate:
        return samples.astype(np.float32, copy=False)
    converted: np.ndarray = soxr.resample(samples.astype(np.float32), in_rate, out_rate,
                                          quality=QUALITY)
    return converted


def _join(parts: list[np.ndarray]) -> np.ndarray:
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros(0, dtype=np.float32)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
