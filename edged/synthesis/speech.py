"""Text to audio for every source: the voice from the pool, the phrase cache first, a miss made by
the synthesis scheduler and kept in the cache once it is complete.

    utterance = speech.utterance(text, voice, speaker, speed)   # VoiceError: unknown speaker ...
    with speech.open(utterance, rank=..., source=...) as stream:  # Busy: the source's bound
        for chunk in stream: ...                                  # cached: one chunk at once

A cached phrase takes no synthesis slot: it is read (from memory or disk) on the caller's thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..audio import Audio
from ..cache import PhraseCache, WarmReport, warm
from ..config import Config
from ..priorities import BACKGROUND
from ..voice import SynthesisSettings, Voice, VoicePool, default_settings
from .scheduler import AudioStream, Scheduler


@dataclass(frozen=True)
class Utterance:
    """What to say, with which voice and settings, and its cache key."""

    text: str
    voice: Voice
    settings: SynthesisSettings
    key: str


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

    def __init__(self, config: Config, pool: VoicePool, cache: PhraseCache,
                 scheduler: Scheduler) -> None:
        self._config = config
        self.pool = pool
        self.cache = cache
        self.scheduler = scheduler

    def utterance(self, text: str, voice: str | None = None, *, speaker: str | int | None = None,
                  speed: float | None = None) -> Utterance:
        """Resolve the voice (loading it if needed: seconds) and the settings; VoiceError."""
        loaded = self.pool.get(voice)
        settings = self.settings(loaded, speaker=speaker, speed=speed)
        return Utterance(text, loaded, settings, self.cache.key(loaded, settings, text))

    def settings(self, voice: Voice, *, speaker: str | int | None = None,
                 speed: float | None = None) -> SynthesisSettings:
        """The configured voice gets the config's voice settings under the request's; another
        voice its own defaults under the request's (the config's speaker names the default's)."""
        if self.pool.is_default(voice):
            return default_settings(self._config, voice, speaker=speaker, speed=speed)
        return voice.settings(speaker=speaker, speed=speed)

    def open(self, utterance: Utterance, *, rank: int, source: str) -> SpeechStream:
        """The utterance's audio as a stream; scheduler.Busy when `source` is at its bound."""
        audio = self.cache.get(utterance.key)
        if audio is not None:
            return SpeechStream(utterance, audio, None)
        steps = self._made_and_kept(utterance)
        return SpeechStream(utterance, None, self.scheduler.submit(steps, rank=rank, source=source))

    def synthesize(self, utterance: Utterance, *, rank: int, source: str) -> Audio:
        """The whole utterance at once (through the cache and the scheduler)."""
        with self.open(utterance, rank=rank, source=source) as stream:
            return Audio.join(list(stream), utterance.voice.rate_hz)

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
        parts: list[Audio] = []
        for chunk in utterance.voice.stream(utterance.text, utterance.settings):
            parts.append(chunk)
            yield chunk
        if parts:
            self.cache.put(utterance.key, Audio.join(parts, utterance.voice.rate_hz),
                           text=utterance.text)
