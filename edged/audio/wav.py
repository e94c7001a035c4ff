"""WAV in and out: the one writer and the one bounded reader (chimes, start-up checks, say -o)."""

from __future__ import annotations

import io
import wave
from pathlib import Path
from typing import Final

import numpy as np

from ..files import FileTooLarge, read_bounded
from .pcm import Audio

_WAV_MAX_BYTES: Final = 16 << 20


class WavError(ValueError):
    """A WAV file or payload edged cannot use; the message says why."""


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
