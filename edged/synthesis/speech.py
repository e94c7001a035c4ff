"""Text to audio for every source: the plan (plan.py: parts, voices, settings, keys), the phrase
cache first, a miss made by the synthesis scheduler and kept in the cache once it is complete.

    utterance = speech.utterance(text, voice, speaker=..., speed=..., rank=...)  # VoiceError
    with speech.open(utterance, rank=..., source=...) as stream:       # Busy: the source's bound
        for chunk in stream: ...                                       # cached: one chunk at once

A cached phrase takes no synthesis slot: it is read (from memory or disk) on the caller's thread.

Text in several languages ("明天 7:30 开会，meeting in room 4B") becomes one part per language
segment with its own cache key, so a mixed phrase reuses the parts it shares with others; the
parts are joined into one stream (join.py). A text of one segment is one part: its audio, cache
key and path are what they were before there were languages.

Planning may load a voice, and a voice just loaded runs a first inference on the scheduler
(assembly.py, `load_rank`): ahead of all other work (a request waits for it, and any other that
needs a voice not loaded yet waits behind the load, a critical one's load next; the voices
loaded are at hand meanwhile, voice/loaded.py), but cutting in on the inferences other work runs
(voice/preempt.py) only for a critical request, as its own stream would.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Final

from ..audio import Audio
from ..cache import PhraseCache, WarmReport, warm
from ..voice.lanes import Lanes
from .plan import Planner, SpeechPart, Utterance, spoken
from .scheduler import Scheduler
from .streams import AudioStream

if TYPE_CHECKING:
    from ..config import Config
    from ..voice import LoadedVoices

LOAD_RANK: Final = 1
"""A voice's first inference: ahead of every rank but critical (0), which cuts in; it was 0
for every load, so a voice loaded for a normal request stopped other work like an alarm."""
_load_rank: contextvars.ContextVar[int] = contextvars.ContextVar("edged_load_rank",
                                                                 default=LOAD_RANK)


def load_rank() -> int:
    """The rank a voice loaded now runs its first inference at: 0 while a critical request is
    planned on this thread, else LOAD_RANK."""
    return _load_rank.get()


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

    def __init__(self, config: Config, voices: LoadedVoices, cache: PhraseCache,
                 scheduler: Scheduler) -> None:
        self.voices = voices
        self.cache = cache
        self.scheduler = scheduler
        self.planner = Planner(config, voices, cache.key)
        self.problem = self.planner.problem

    def utterance(self, text: str, voice: str | None = None, *, speaker: str | int | None = None,
                  speed: float | None = None, language: str | None = None,
                  rank: int = LOAD_RANK) -> Utterance:
        """The plan of a request of `rank` (plan.Planner.utterance); a voice it loads runs its
        first inference at `load_rank`."""
        token = _load_rank.set(min(rank, LOAD_RANK))
        try:
            return self.planner.utterance(text, voice, speaker=speaker, speed=speed,
                                          language=language)
        finally:
            _load_rank.reset(token)

    def open(self, utterance: Utterance, *, rank: int, source: str) -> SpeechStream:
        """The utterance's audio as a stream; scheduler.Busy when `source` is at its bound.
        All its parts cached: at once, without a synthesis slot; else one scheduler stream that
        takes the cached parts as they are and makes the others."""
        cached = {part.key: self.cache.get(part.key) for part in utterance.parts}

        def part_audio(part: SpeechPart, lanes: Lanes | None) -> Iterator[Audio]:
            audio = cached[part.key]
            return iter([audio]) if audio is not None else self._made_and_kept(part, lanes)

        if all(audio is not None for audio in cached.values()):
            whole = cached[utterance.key] if len(utterance.parts) == 1 else Audio.join(
                list(spoken(utterance, part_audio)), utterance.rate_hz)
            return SpeechStream(utterance, whole, None)
        scheduled = self.scheduler.submit(lambda lanes: spoken(utterance, part_audio, lanes),
                                          rank=rank, source=source)
        return SpeechStream(utterance, None, scheduled)

    def warm(self, phrases: Iterable[str], *, rank: int, source: str) -> WarmReport:
        """Pin the phrases in the cache and make the missing ones, at `rank`."""
        voice = self.voices.get()
        settings = self.planner.settings(voice)

        def make(text: str) -> Audio:
            with self.scheduler.submit(lambda lanes: voice.stream(text, settings, lanes),
                                       rank=rank, source=source) as stream:
                return Audio.join(list(stream), voice.rate_hz)

        return warm(self.cache, self.cache.pin_keys(voice, settings, phrases), make)

    def _made_and_kept(self, part: SpeechPart, lanes: Lanes | None) -> Iterator[Audio]:
        """Runs on a scheduler worker: the voice's chunks, then the whole into the cache. A
        stream dropped early (GeneratorExit) keeps nothing: only complete audio is cached."""
        chunks: list[Audio] = []
        for chunk in part.voice.stream(part.text, part.settings, lanes):
            chunks.append(chunk)
            yield chunk
        if chunks:
            self.cache.put(part.key, Audio.join(chunks, part.voice.rate_hz), text=part.text)
