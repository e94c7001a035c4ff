"""The voice backend interface: what the loaded voices, the cache, the scheduler and the joiner need of a
voice, whatever makes its sound.

Three implementations: `piper.Voice` (VITS on ONNX Runtime, espeak-ng phonemes), `kokoro.
KokoroVoice` (Kokoro-82M on ONNX Runtime, a style vector per voice, a phonemizer per language)
and `espeak.EspeakVoice` (espeak-ng's formant synthesizer). Voice names say the backend:
`kokoro:jf_alpha`, `espeak:yue`; any other name is a Piper voice (a file name or a path).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, Protocol

from ..audio import Audio
from ..frontend.normalizers import normalizer_for
from .lanes import Lanes
from .settings import SynthesisSettings, check_one_speaker, check_speed

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

    def stream(self, text: str, settings: SynthesisSettings | None = None,
               lanes: Lanes | None = None) -> Iterator[Audio]:
        """Audio chunks in order, one bounded step of work per `next()`; `lanes`: a scheduler
        stream's spare workers, which a voice may give independent work to (Piper's windows)."""
        ...

    def synthesize(self, text: str, settings: SynthesisSettings | None = None) -> Audio: ...

    def reclaim(self) -> None:
        """Give back what ONNX Runtime's arena keeps from earlier peaks (nothing to do for a
        voice without one); called when synthesis goes idle after heavy work."""
        ...


def backend_of(name: str) -> str:
    """Which backend a voice name belongs to."""
    if name.startswith(KOKORO_PREFIX):
        return "kokoro"
    if name.startswith(ESPEAK_PREFIX):
        return "espeak"
    return "piper"


class OneSpeakerVoice:
    """What the Kokoro and espeak-ng voices share: one speaker, a speaking rate and nothing else
    per request, their language's normalizer, cache keys that name the backend, and
    `synthesize` as their stream joined. A subclass sets `name`, `language`, `rate_hz` and
    `sentence_pause_ms`, calls `_use_normalizer`, and writes `stream` and `fingerprint`."""

    backend: str = ""
    hash_memo: Path | None = None
    name: str
    language: str
    rate_hz: int
    _normalize: Callable[[str], str]
    _normalizer_version: str

    def _use_normalizer(self, date_order: str) -> None:
        self._normalize, self._normalizer_version = normalizer_for(self.language, date_order)

    @property
    def normalizer_version(self) -> str:
        return self._normalizer_version

    def cache_recipe(self) -> dict[str, Any]:
        return {"backend": self.backend}

    def normalize(self, text: str) -> str:
        return self._normalize(text)

    def settings(self, *, speaker: str | int | None = None, speed: float | None = None,
                 noise_scale: float | None = None,
                 noise_w: float | None = None) -> SynthesisSettings:
        """A speaking rate; VoiceError for another speaker or a rate out of range (noise
        scales are Piper's: ignored)."""
        check_one_speaker(self.name, speaker)
        check_speed(speed)
        return SynthesisSettings(speaker_id=None, length_scale=1.0 / (speed or 1.0),
                                 noise_scale=0.0, noise_w=0.0)

    def stream(self, text: str, settings: SynthesisSettings | None = None,
               lanes: Lanes | None = None) -> Iterator[Audio]:
        raise NotImplementedError

    def synthesize(self, text: str, settings: SynthesisSettings | None = None) -> Audio:
        return Audio.join(list(self.stream(text, settings)), self.rate_hz)

    def reclaim(self) -> None:
        """espeak-ng keeps no arena; Kokoro's model does (KokoroVoice.reclaim)."""
