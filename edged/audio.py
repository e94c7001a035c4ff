"""PCM audio as edged passes it around (int16 mono samples plus a rate), WAV in and out, and the
one rule for each conversion: float <-> int16, and a request's volume.

Samples as floats are in [-1, 1) with int16 / 32768, so int16 -> float -> int16 is exact.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from .files import FileTooLarge, read_bounded

Samples = npt.NDArray[np.int16]
Floats = npt.NDArray[np.float32]
_WAV_MAX_BYTES: Final = 16 << 20


class WavError(ValueError):
    """A WAV file or payload edged cannot use; the message says why."""


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


def to_wav_bytes(audio: Audio) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(audio.rate_hz)
        w.writeframes(audio.samples.astype("<i2", copy=False).tobytes())
    return buf.getvalue()


def from_wav_bytes(data: bytes, *, max_s: float | None = None) -> Audio:
    """A 16-bit PCM WAV, mono or stereo (averaged to mono); WavError otherwise."""
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            channels, width, rate, n = (w.getnchannels(), w.getsampwidth(), w.getframerate(),
                                        w.getnframes())
            if width != 2 or channels not in (1, 2):
                raise WavError(f"expected 16-bit mono or stereo PCM, got {8 * width}-bit with "
                               f"{channels} channels")
            if max_s is not None and n > max_s * rate:
                raise WavError(f"{n / rate:.1f} s long; at most {max_s:g} s")
            frames = np.frombuffer(w.readframes(n), dtype="<i2").reshape(-1, channels)
    except (wave.Error, EOFError) as err:
        raise WavError(f"not a WAV file edged can read: {err}") from None
    if channels == 1:
        return Audio(frames[:, 0].astype(np.int16), rate)
    return Audio(frames.mean(axis=1).round().astype(np.int16), rate)


def read_wav(path: Path, *, max_s: float | None = None) -> Audio:
    """The one WAV file loader (chimes, start-up checks): bounded, WavError or OSError."""
    try:
        data = read_bounded(path, _WAV_MAX_BYTES)
    except FileTooLarge:
        raise WavError(f"larger than {_WAV_MAX_BYTES >> 20} MiB") from None
    return from_wav_bytes(data, max_s=max_s)
