"""Audio formats over HTTP: WAV and raw PCM streamed chunk by chunk as the voice makes them; MP3,
FLAC and Ogg Opus encoded whole by libsndfile (python-soundfile, wheels for x86_64 and aarch64).

Why the compressed ones are not streamed: libsndfile rewrites their first bytes when the file
is closed (MP3's LAME/Xing frame, FLAC's STREAMINFO), and Ogg Opus pages only leave it at close
for a sentence-sized input; a stream without the final header decoded to 12173 of 66150 samples
through libsndfile's own MP3 reader (docs/http.md). So their first byte comes after the whole
synthesis: ask for `wav` or `pcm` when the first byte matters. AAC has no encoder here (415).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import numpy as np
import soundfile

from ..audio import Audio, Samples, to_float, to_int16, with_volume
from ..audio.resample import Resampler, resample

_STREAMING_SIZE: Final = 0xFFFFFFFF
"""RIFF and data sizes of a WAV whose length is not known yet: "until the end of the stream"."""
_OPUS_RATE_HZ: Final = 24000
"""Opus takes 8, 12, 16, 24 or 48 kHz; 24 kHz keeps a 22.05 kHz voice whole."""


@dataclass(frozen=True)
class Format:
    name: str
    content_type: str
    streamed: bool
    sf_format: str = ""
    sf_subtype: str = ""


FORMATS: Final = {f.name: f for f in (
    Format("wav", "audio/wav", True),
    Format("pcm", "audio/pcm", True),
    Format("mp3", "audio/mpeg", False, "MP3", "MPEG_LAYER_III"),
    Format("flac", "audio/flac", False, "FLAC", "PCM_16"),
    Format("opus", "audio/ogg; codecs=opus", False, "OGG", "OPUS"),
)}
ALIASES: Final = {"ogg": "opus"}


def supported() -> str:
    return ", ".join([*FORMATS, *ALIASES])


def wav_header(rate_hz: int, frames: int | None) -> bytes:
    """A 44-byte header of 16-bit mono PCM; `frames=None`: length unknown (streaming)."""
    data = _STREAMING_SIZE if frames is None else 2 * frames
    riff = _STREAMING_SIZE if frames is None else 36 + data
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", riff, b"WAVE", b"fmt ", 16, 1, 1, rate_hz,
                       2 * rate_hz, 2, 16, b"data", data)


class PcmOut:
    """A request's chunks as little-endian 16-bit bytes: at its volume, and at `rate_hz` when
    one is asked for (OpenAI's pcm is 24 kHz); resampled chunk by chunk without seams."""

    def __init__(self, volume: float, rate_hz: int | None) -> None:
        self._volume = volume
        self._rate_hz = rate_hz
        self._resampler = Resampler(rate_hz) if rate_hz is not None else None

    def out_rate(self, voice_rate_hz: int) -> int:
        return self._rate_hz or voice_rate_hz

    def convert(self, chunk: Audio) -> bytes:
        if self._resampler is None:
            return _le_bytes(with_volume(chunk, self._volume).samples)
        floats = self._resampler.process(to_float(chunk.samples), chunk.rate_hz)
        return _le_bytes(to_int16(floats * np.float32(self._volume)))

    def flush(self) -> bytes:
        if self._resampler is None:
            return b""
        return _le_bytes(to_int16(self._resampler.flush() * np.float32(self._volume)))


def encode_whole(chunks: Iterator[Audio], fmt: Format, volume: float,
                 rate_hz: int | None = None) -> tuple[bytes, int]:
    """Every chunk, then the whole file in `fmt` (blocking: run it off the loop); the bytes and
    the rate they are at."""
    parts = [with_volume(chunk, volume) for chunk in chunks]
    rate = parts[0].rate_hz if parts else (rate_hz or 22050)
    samples = np.concatenate([p.samples for p in parts]) if parts else np.zeros(0, np.int16)
    if fmt.name == "opus":
        rate_hz = _OPUS_RATE_HZ
    if rate_hz is not None and rate_hz != rate:
        samples = to_int16(resample(to_float(samples), rate, rate_hz))
        rate = rate_hz
    if fmt.name == "wav":
        return wav_header(rate, len(samples)) + _le_bytes(samples), rate
    if fmt.name == "pcm":
        return _le_bytes(samples), rate
    buffer = io.BytesIO()
    with soundfile.SoundFile(buffer, "w", samplerate=rate, channels=1, format=fmt.sf_format,
                             subtype=fmt.sf_subtype) as sink:
        sink.write(samples)
    return buffer.getvalue(), rate


def _le_bytes(samples: Samples) -> bytes:
    return samples.astype("<i2", copy=False).tobytes()
