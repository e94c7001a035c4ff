"""Text to audio for every source: the voice from the pool, the phrase cache first, a miss made by
the synthesis scheduler and kept in the cache once it is complete.

    utterance = speech.utterance(text, voice, speaker, speed)   # VoiceError: unknown speaker ...
    with speech.open(utterance, rank=..., source=...) as stream:  # Busy: the source's bound
        for chunk in stream: ...                                  # cached: one chunk at once

A cached phrase takes no synthesis slot: it is read (from memory or disk) on the caller's thread.

Text in several languages ("明天 7:30 开会，meeting in room 4B") becomes one part per language
segment, each with the voice the router picks (languages/route.py) and its own cache key, so a
mixed phrase reuses the parts it shares with others. The parts are joined into one stream
(join.py). A text of one segment is one part: its audio, cache key and path are what they were
before there were languages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..audio import Audio
from ..cache import PhraseCache, WarmReport, warm
from ..config import Config
from ..daemon.priorities import BACKGROUND
from ..languages import LanguageError, check_tags
from ..voice import LoadedVoices, SynthesisSettings, VoiceError, default_settings
from ..voice.backend import VoiceBackend
from .join import Joiner
from .route import Router
from .scheduler import AudioStream, Scheduler


@dataclass(frozen=True)
class SpeechPart:
    """One language segment of an utterance: its text, voice, settings and cache key."""

    language: str
    text: str
    voice: VoiceBackend
    settings: SynthesisSettings
    key: str


@dataclass(frozen=True)
class Utterance:
    """What to say, with which voice and settings, and its cache key (of its first part)."""

    text: str
    voice: VoiceBackend
    settings: SynthesisSettings
    key: str
    parts: tuple[SpeechPart, ...] = ()
    switch_pause_ms: int = 0
    rate_hz: int = field(default=0)
    """The rate of its audio: its voice's, or for several parts the highest of theirs."""

    def __post_init__(self) -> None:
        if not self.rate_hz:
            rates = [p.voice.rate_hz for p in self.parts] or [self.voice.rate_hz]
            object.__setattr__(self, "rate_hz", max(rates))

    @property
    def segments(self) -> list[dict[str, Any]]:
        """What the finished event tells: language, voice and length of each part."""
        parts = self.parts or (SpeechPart("", self.text, self.voice, self.settings, self.key),)
        return [{"language": p.language or p.voice.language, "voice": p.voice.name,
                 "chars": len(p.text)} for p in parts]


class SpeechStream(Iterator[Audio]):
    """An utterance's audio: from the cache (`cached`) or from the scheduler."""

    def __init__(self, utterance: Utterance, cached: Audio | None,
                 scheduled: AudioStream | None) -> None:
        self.utterance = utterance
        self.cached = cached is not None
        self._chunks: Iterator[Audio] = iter([cached] if cached is not None else [])
        self._scheduled = scheduled

    @property
    def synth_s(self) -> float:
        """Inference time spent on it so far (0 for a cached phrase)."""
        return self._scheduled.work_s if self._scheduled is not None else 0.0

    def __next__(self) -> Audio:
        if self._scheduled is not None:
            return next(self._scheduled)
        return next(self._chunks)

    def close(self) -> None:
        if self._scheduled is not None:
            self._scheduled.close()

    def __enter__(self) -> SpeechStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Speech:
    """Thread-safe; every source's way to audio."""

    def __init__(self, config: Config, pool: LoadedVoices, cache: PhraseCache,
                 scheduler: Scheduler) -> None:
        self._config = config
        self.pool = pool
        self.cache = cache
        self.scheduler = scheduler
        self.router = Router(config, pool)

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
            # A speaker names a Piper voice's speaker; the other backends have one each.
            own = speaker if len(routed) == 1 or item.voice.backend == "piper" else None
            settings = self.settings(item.voice, speaker=own, speed=speed)
            parts.append(SpeechPart(item.language, item.text, item.voice, settings,
                              self.cache.key(item.voice, settings, item.text)))
        first = parts[0]
        return Utterance(text, first.voice, first.settings, first.key, tuple(parts),
                         self._config.languages.switch_pause_ms)

    def problem(self, text: str, voice: str | None, *, speaker: str | int | None = None,
                speed: float | None = None) -> str | None:
        """Why a request cannot be spoken, as far as can be told before its turn: its language
        tags, and the configured voice's speaker and speed (another voice is loaded, and its
        speaker checked, when its turn comes)."""
        try:
            check_tags(text)
        except LanguageError as err:
            return str(err)
        if voice is not None and voice not in self.pool.default_names:
            return None
        try:
            self.settings(self.pool.get(), speaker=speaker, speed=speed)
        except VoiceError as err:
            return str(err)
        return None

    def settings(self, voice: VoiceBackend, *, speaker: str | int | None = None,
                 speed: float | None = None) -> SynthesisSettings:
        """The configured voice gets the config's voice settings under the request's; another
        voice its own defaults under the request's (the config's speaker names the default's)."""
        if self.pool.is_default(voice):
            return default_settings(self._config, voice, speaker=speaker, speed=speed)
        return voice.settings(speaker=speaker, speed=speed)

    def open(self, utterance: Utterance, *, rank: int, source: str) -> SpeechStream:
        """The utterance's audio as a stream; scheduler.Busy when `source` is at its bound."""
        if len(utterance.parts) > 1:
            return self._open_joined(utterance, rank=rank, source=source)
        audio = self.cache.get(utterance.key)
        if audio is not None:
            return SpeechStream(utterance, audio, None)
        steps = self._made_and_kept(utterance)
        return SpeechStream(utterance, None, self.scheduler.submit(steps, rank=rank, source=source))

    def _open_joined(self, utterance: Utterance, *, rank: int, source: str) -> SpeechStream:
        """Several parts: all cached, joined now without a synthesis slot; else one scheduler
        stream that takes cached parts as they are and makes the others."""
        cached = [self.cache.get(part.key) for part in utterance.parts]
        joiner = Joiner(utterance.rate_hz, utterance.switch_pause_ms)
        if all(audio is not None for audio in cached):
            chunks = [c for audio in cached if audio is not None for c in joiner.part(iter([audio]))]
            return SpeechStream(utterance, Audio.join(chunks, utterance.rate_hz), None)
        steps = self._joined(utterance, cached, joiner)
        return SpeechStream(utterance, None, self.scheduler.submit(steps, rank=rank, source=source))

    def _joined(self, utterance: Utterance, cached: list[Audio | None],
                joiner: Joiner) -> Iterator[Audio]:
        """Runs on a scheduler worker: each part from the cache or its voice, joined."""
        for part, audio in zip(utterance.parts, cached, strict=True):
            made = iter([audio]) if audio is not None else self._part_made_and_kept(part)
            yield from joiner.part(made)

    def synthesize(self, utterance: Utterance, *, rank: int, source: str) -> Audio:
        """The whole utterance at once (through the cache and the scheduler)."""
        with self.open(utterance, rank=rank, source=source) as stream:
            return Audio.join(list(stream), utterance.rate_hz)

    def warm(self, phrases: Iterable[str], source: str) -> WarmReport:
        """Pin the phrases in the cache and make the missing ones, after every announcement."""
        voice = self.pool.get()
        settings = self.settings(voice)

        def make(text: str) -> Audio:
            with self.scheduler.submit(voice.stream(text, settings), rank=BACKGROUND,
                                       source=source) as stream:
                return Audio.join(list(stream), voice.rate_hz)

        return warm(self.cache, self.cache.pin_keys(voice, settings, phrases), make)

    def _made_and_kept(self, utterance: Utterance) -> Iterator[Audio]:
        """Runs on a scheduler worker: the voice's chunks, then the whole into the cache. A
        stream dropped early (GeneratorExit) keeps nothing: only complete audio is cached."""
        return self._part_made_and_kept(SpeechPart("", utterance.text, utterance.voice,
                                             utterance.settings, utterance.key))

    def _part_made_and_kept(self, part: SpeechPart) -> Iterator[Audio]:
        chunks: list[Audio] = []
        for chunk in part.voice.stream(part.text, part.settings):
            chunks.append(chunk)
            yield chunk
        if chunks:
            self.cache.put(part.key, Audio.join(chunks, part.voice.rate_hz), text=part.text)
