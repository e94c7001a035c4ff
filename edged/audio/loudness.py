"""Loudness of announcements: one gain per announcement, a peak limiter, fades; `Shaper`
turns one announcement's chunks into what the device gets (resample, level, fade, volume).

Samples here are float32 in [-1, 1) (int16 / 32768). Levels are dB relative to that full
scale: RMS of a full-scale square wave is 0 dB, of a full-scale sine -3 dB.

The rule with streaming (playback starts before the later sentences exist): the gain is
measured on the first chunk that has speech in it and then held for the whole announcement,
so sentences keep their natural relative loudness. A later sentence whose peaks would pass
`peak_dbfs` at that gain is limited (a smooth gain dip around the peak), never clipped.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import numpy as np

from .pcm import apply_volume, to_float
from .resample import Resampler, resample

if TYPE_CHECKING:
    from ..config import AudioConfig
    from .pcm import Audio

_FRAME_S: Final = 0.020
_ABSOLUTE_GATE_DB: Final = -60.0
"""Frames quieter than this are silence (pauses, breath), not speech."""
_RELATIVE_GATE_DB: Final = -20.0
"""Frames this far below the mean of the speech frames are ignored too (tails, noise)."""
_LIMITER_HALF_S: Final = 0.005
"""Half-width of the limiter's gain dip: longer than half a period of a low voice (100 Hz)."""


def db_to_amplitude(db: float) -> float:
    return float(10.0 ** (db / 20.0))


def gated_rms_db(samples: np.ndarray, rate_hz: int) -> float | None:
    """RMS level of the speech in `samples` (20 ms frames, gated); None when it is all silence."""
    n = max(1, int(rate_hz * _FRAME_S))
    count = max(1, len(samples) // n)
    x = samples[: count * n].astype(np.float64)
    if len(x) < count * n:  # shorter than one frame
        x = np.pad(x, (0, count * n - len(x)))
    power = np.mean(x.reshape(count, n) ** 2, axis=1)
    keep = power > 10.0 ** (_ABSOLUTE_GATE_DB / 10.0)
    if not keep.any():
        return None
    keep &= power > power[keep].mean() * 10.0 ** (_RELATIVE_GATE_DB / 10.0)
    return 10.0 * math.log10(power[keep].mean())


def limit(samples: np.ndarray, peak: float, rate_hz: int) -> np.ndarray:
    """Keep |samples| <= peak with a smooth gain dip (no clipping, no per-sample loop).

    The gain each sample needs is min-filtered over +-h and then averaged over +-h: every
    sample of the average is <= the need at its centre, so the limit holds exactly.
    """
    magnitude = np.abs(samples)
    if len(samples) == 0 or float(magnitude.max()) <= peak:
        return samples
    need = np.minimum(1.0, peak / np.maximum(magnitude, 1e-12)).astype(np.float32)
    half = max(1, int(rate_hz * _LIMITER_HALF_S))
    gain = _moving_average(_running_min(need, 2 * half + 1), 2 * half + 1)
    limited: np.ndarray = np.clip(samples * gain, -peak, peak)
    return limited


def _running_min(x: np.ndarray, width: int) -> np.ndarray:
    """Centred running minimum (van Herk / Gil-Werman: two cumulative passes per block)."""
    half = width // 2
    total = len(x) + 2 * half
    padded = np.pad(x, (half, half + (-total) % width), constant_values=1.0)
    blocks = padded.reshape(-1, width)
    forward = np.minimum.accumulate(blocks, axis=1).ravel()
    backward = np.minimum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
    n = len(x)
    return np.minimum(backward[:n], forward[width - 1 : width - 1 + n])


def _moving_average(x: np.ndarray, width: int) -> np.ndarray:
    half = width // 2
    padded = np.pad(x.astype(np.float64), (half + 1, half), mode="edge")
    sums = np.cumsum(padded)
    return ((sums[width:] - sums[:-width]) / width).astype(np.float32)


def ramp(n: int) -> np.ndarray:
    """Raised-cosine fade-in of n samples (reverse it for a fade-out)."""
    return (0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)).astype(np.float32)


def fade(samples: np.ndarray, n_in: int = 0, n_out: int = 0) -> np.ndarray:
    out = samples.astype(np.float32, copy=True)
    if n_in > 0:
        k = min(n_in, len(out))
        out[:k] *= ramp(n_in)[:k]
    if n_out > 0:
        k = min(n_out, len(out))
        out[len(out) - k :] *= ramp(n_out)[::-1][n_out - k :]
    return out


class Leveler:
    """Gain for one announcement: decided on the first chunk with speech, then held."""

    def __init__(self, *, target_dbfs: float, peak_dbfs: float, max_gain_db: float,
                 normalize: bool = True) -> None:
        self.target_dbfs = target_dbfs
        self.peak = db_to_amplitude(peak_dbfs)
        self.max_gain = db_to_amplitude(max_gain_db)
        self.gain: float | None = None if normalize else 1.0

    def process(self, samples: np.ndarray, rate_hz: int) -> np.ndarray:
        if self.gain is None:
            level = gated_rms_db(samples, rate_hz)
            if level is None:
                return samples  # silence so far: nothing to measure, nothing to scale
            self.gain = min(db_to_amplitude(self.target_dbfs - level), self.max_gain)
        return limit(samples * np.float32(self.gain), self.peak, rate_hz)


class Shaper:
    """One announcement's chunks -> int16 at the device rate: resample, level, fade, volume.

    The last fade_ms of every chunk is held back until the next one arrives, so that the
    final fade-out lands on the true end of the announcement."""

    def __init__(self, config: AudioConfig, rate: int, volume: float) -> None:
        self._resampler = Resampler(rate)
        self._leveler = Leveler(target_dbfs=config.target_dbfs, peak_dbfs=config.peak_dbfs,
                                max_gain_db=config.max_gain_db, normalize=config.normalize)
        self._volume = volume
        self._fade_n = int(rate * config.fade_ms / 1000)
        self._carry = np.zeros(0, dtype=np.float32)  # held back for the final fade-out
        self._started = False

    def process(self, chunk: Audio) -> np.ndarray:
        samples = getattr(chunk, "samples", None)
        if not isinstance(samples, np.ndarray) or samples.dtype != np.int16 or samples.ndim != 1:
            raise TypeError(f"expected Audio with 1-D int16 samples, got {type(chunk).__name__}")
        if chunk.rate_hz <= 0:
            raise ValueError(f"bad sample rate {chunk.rate_hz}")
        return self._emit(self._resampler.process(to_float(samples), chunk.rate_hz))

    def finish(self) -> np.ndarray:
        return self._emit(self._resampler.flush(), last=True)

    def _emit(self, x: np.ndarray, last: bool = False) -> np.ndarray:
        x = self._leveler.process(x, self._resampler.out_rate)
        if len(self._carry):
            x = np.concatenate([self._carry, x])
        if not self._started and len(x):
            x, self._started = fade(x, n_in=self._fade_n), True
        if last:
            x, self._carry = fade(x, n_out=self._fade_n), x[:0]
        elif self._fade_n:
            x, self._carry = x[: -self._fade_n], x[-self._fade_n :]
        return apply_volume(x, self._volume)


def shape_chime(chime: Audio, rate: int, config: AudioConfig) -> np.ndarray:
    """A chime at the device rate, at the target loudness (its own gain), faded in and out."""
    x = resample(to_float(chime.samples), chime.rate_hz, rate)
    leveler = Leveler(target_dbfs=config.target_dbfs, peak_dbfs=config.peak_dbfs,
                      max_gain_db=config.max_gain_db, normalize=config.normalize)
    n = int(rate * config.fade_ms / 1000)
    return fade(leveler.process(x, rate), n_in=n, n_out=n)
