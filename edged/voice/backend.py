"""The voice backend interface: what the pool, the cache, the scheduler and the joiner need of a
voice, whatever makes its sound.

Three implementations: `piper.Voice` (VITS on ONNX Runtime, espeak-ng phonemes), `kokoro.
KokoroVoice` (Kokoro-82M on ONNX Runtime, a style vector per voice, a phonemizer per language)
and `espeak.EspeakVoice` (espeak-ng's formant synthesizer). Voice names say the backend:
`kokoro:jf_alpha`, `espeak:yue`; any other name is a Piper voice (a file name or a path).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Protocol

from ..audio import Audio
from .settings import SynthesisSettings

KOKORO_PREFIX: Final = "kokoro:"
ESPEAK_PREFIX: Final = "espeak:"


class VoiceBackend(Protocol):
    """One loaded voice. `stream` yields one bounded step of work per `next()` (one decoder
    window, one Kokoro piece of at most ~100 tokens, one espeak-ng sentence), so the synthesis
    scheduler can put a critical announcement first between any two steps."""

    name: str
    backend: str
    """piper, kokoro or espeak."""
    language: str
    """Our language code (en, zh, yue, ja, ko), or the locale's prefix for others (de)."""
    rate_hz: int
    sentence_pause_ms: int
    max_phonemes: int
    hash_memo: Path | None

    @property
    def fingerprint(self) -> str:
        """Changes whenever the audio may (model, style, frontend versions)."""
        ...

    @property
    def normalizer_version(self) -> str: ...

    def cache_recipe(self) -> dict[str, Any]:
        """Fields added to this voice's cache keys ({} for Piper: its keys stay as they were)."""
        ...

    def normalize(self, text: str) -> str: ...

    def settings(self, *, speaker: str | int | None = None, speed: float | None = None,
                 noise_scale: float | None = None,
                 noise_w: float | None = None) -> SynthesisSettings: ...

    def stream(self, text: str, settings: SynthesisSettings | None = None) -> Iterator[Audio]: ...

    def synthesize(self, text: str, settings: SynthesisSettings | None = None) -> Audio: ...


def backend_of(name: str) -> str:
    """Which backend a voice name belongs to."""
    if name.startswith(KOKORO_PREFIX):
        return "kokoro"
    if name.startswith(ESPEAK_PREFIX):
        return "espeak"
    return "piper"


def speed_settings(name: str, speed: float | None, speaker: str | int | None) -> SynthesisSettings:
    """Settings of a backend that only knows a speaking rate (Kokoro, espeak-ng)."""
    from .errors import VoiceError

    if speaker not in (None, "", 0, "0"):
        raise VoiceError(f"voice {name} has one speaker; got speaker {speaker!r}")
    if speed is not None and not 0.1 <= speed <= 10:
        raise VoiceError(f"speed {speed} is out of range 0.1..10")
    return SynthesisSettings(speaker_id=None, length_scale=1.0 / (speed or 1.0),
                             noise_scale=0.0, noise_w=0.0)
