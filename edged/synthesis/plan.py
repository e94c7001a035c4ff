"""What a request will sound like, decided in one place for every source (the daemon's `Speech`
and `edged say`): its language parts, each part's voice, settings and cache key.

    utterance = planner.utterance(text, voice, speaker=..., speed=..., language=...)
    for chunk in spoken(utterance, lambda part, lanes: ...): ...   # the parts joined in order

- Parts: the text cut into language segments, each with the voice the router picks (route.py).
- Settings: the configured voice gets the config's speaker, speed and noise under the request's;
  any other voice its own defaults under the request's.
- Speaker: a request's speaker names a Piper voice's speaker; it goes to every Piper part, and to
  the one part of a text that is one segment (Kokoro and espeak-ng voices have one speaker each:
  naming another is refused by the voice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..audio import Audio
from ..cache.keys import make_key
from ..languages import LanguageError, check_tags
from ..voice import SynthesisSettings, VoiceError, default_settings
from ..voice.backend import VoiceBackend
from ..voice.lanes import Lanes
from .join import Joiner
from .route import Router

if TYPE_CHECKING:
    from ..config import Config
    from ..voice import LoadedVoices

KeyOf = Callable[[VoiceBackend, SynthesisSettings, str], str]
PartAudio = Callable[["SpeechPart", "Lanes | None"], Iterator[Audio]]


@dataclass(frozen=True)
class SpeechPart:
    """One language segment of an utterance: its text, voice, settings and cache key."""

    language: str
    text: str
    voice: VoiceBackend
    settings: SynthesisSettings
    key: str


@dataclass(frozen=True)
class Segment:
    """What the finished event tells of each part: its language, the voice that spoke it (after
    any fallback) and its length."""

    language: str
    voice: str
    chars: int

    def to_json(self) -> dict[str, Any]:
        return {"language": self.language, "voice": self.voice, "chars": self.chars}


@dataclass(frozen=True)
class Utterance:
    """What to say, in parts; `voice`, `settings` and `key` are its first part's."""

    text: str
    parts: tuple[SpeechPart, ...]
    switch_pause_ms: int = 0
    rate_hz: int = field(default=0)
    """The rate of its audio: its voice's, or for several parts the highest of theirs."""

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("an utterance has at least one part")
        if not self.rate_hz:
            object.__setattr__(self, "rate_hz", max(p.voice.rate_hz for p in self.parts))

    @property
    def voice(self) -> VoiceBackend:
        return self.parts[0].voice

    @property
    def settings(self) -> SynthesisSettings:
        return self.parts[0].settings

    @property
    def key(self) -> str:
        return self.parts[0].key

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(Segment(p.language or p.voice.language, p.voice.name, len(p.text))
                     for p in self.parts)


class Planner:
    """Thread-safe."""

    def __init__(self, config: Config, voices: LoadedVoices, key: KeyOf = make_key) -> None:
        self._config = config
        self.voices = voices
        self._key = key
        self.router = Router(config, voices)

    def utterance(self, text: str, voice: str | None = None, *, speaker: str | int | None = None,
                  speed: float | None = None, language: str | None = None) -> Utterance:
        """Cut `text` into language parts and resolve their voices (loading them if needed:
        seconds) and settings; VoiceError (also for an unknown language or tag)."""
        try:
            routed = self.router.route(text, voice=voice, language=language)
        except LanguageError as err:
            raise VoiceError(str(err)) from None
        parts = []
        for item in routed:
            own = speaker if len(routed) == 1 or item.voice.backend == "piper" else None
            settings = self.settings(item.voice, speaker=own, speed=speed)
            parts.append(SpeechPart(item.language, item.text, item.voice, settings,
                                    self._key(item.voice, settings, item.text)))
        return Utterance(text, tuple(parts), self._config.languages.switch_pause_ms)

    def settings(self, voice: VoiceBackend, *, speaker: str | int | None = None,
                 speed: float | None = None) -> SynthesisSettings:
        """The configured voice gets the config's voice settings under the request's; another
        voice its own defaults under the request's (the config's speaker names the default's)."""
        if self.voices.is_default(voice):
            return default_settings(self._config, voice, speaker=speaker, speed=speed)
        return voice.settings(speaker=speaker, speed=speed)

    def problem(self, text: str, voice: str | None, *, speaker: str | int | None = None,
                speed: float | None = None) -> str | None:
        """Why a request cannot be spoken, as far as can be told before its turn: its language
        tags, and the configured voice's speaker and speed (another voice is loaded, and its
        speaker checked, when its turn comes)."""
        try:
            check_tags(text)
        except LanguageError as err:
            return str(err)
        if voice is not None and voice not in self.voices.default_names:
            return None
        try:
            self.settings(self.voices.get(), speaker=speaker, speed=speed)
        except VoiceError as err:
            return str(err)
        return None


def spoken(utterance: Utterance, part_audio: PartAudio,
           lanes: Lanes | None = None) -> Iterator[Audio]:
    """The utterance's audio in order: one part as its voice makes it, several joined (one
    rate, one level, a pause at each switch)."""
    if len(utterance.parts) == 1:
        yield from part_audio(utterance.parts[0], lanes)
        return
    joiner = Joiner(utterance.rate_hz, utterance.switch_pause_ms)
    for part in utterance.parts:
        yield from joiner.part(part_audio(part, lanes))
