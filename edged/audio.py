"""PCM audio as the rest of edged passes it around: int16 mono samples plus a rate."""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Audio:
    """Mono 16-bit PCM."""

    samples: np.ndarray
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


def silence(duration_s: float, rate_hz: int) -> Audio:
    return Audio(np.zeros(int(round(duration_s * rate_hz)), dtype=np.int16), rate_hz)


def to_wav_bytes(audio: Audio) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(audio.rate_hz)
        w.writeframes(audio.samples.astype("<i2", copy=False).tobytes())
    return buf.getvalue()


def from_wav_bytes(data: bytes) -> Audio:
    """Decode a 16-bit mono WAV (as written by to_wav_bytes); raises wave.Error/EOFError otherwise."""
    with wave.open(io.BytesIO(data), "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise wave.Error("expected 16-bit mono WAV")
        frames = w.readframes(w.getnframes())
        return Audio(np.frombuffer(frames, dtype="<i2").astype(np.int16), w.getframerate())


def write_wav(path: Path, audio: Audio) -> None:
    Path(path).write_bytes(to_wav_bytes(audio))
