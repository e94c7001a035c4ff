"""Speech for the network servers: the same `Speech` (voice pool, phrase cache, synthesis
scheduler) as MQTT, reached from coroutines without blocking the loop.

    stream = await open_speech(speech, text, voice=..., rank=..., source="wyoming")
    async for chunk in chunks(stream): ...     # each next() waits on the executor
    # leaving the loop early (client gone, task cancelled) closes the stream: the scheduler
    # drops the work at its next decoder window

A cached phrase answers without a synthesis slot and without leaving the executor for more
than a file read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..audio import Audio
from ..synthesis import Speech, SpeechStream
from .loop import run_blocking


async def open_speech(speech: Speech, text: str, *, voice: str | None = None,
                      speaker: str | int | None = None, speed: float | None = None,
                      rank: int, source: str) -> SpeechStream:
    """VoiceError (bad voice or speaker), synthesis.Busy (the source's bound) as from Speech."""
    def open_() -> SpeechStream:
        utterance = speech.utterance(text, voice, speaker=speaker, speed=speed)
        return speech.open(utterance, rank=rank, source=source)

    return await run_blocking(open_)


async def chunks(stream: SpeechStream) -> AsyncIterator[Audio]:
    """The stream's chunks, each waited for on the executor; the stream is closed at the end,
    also when the consumer stops early or is cancelled."""
    try:
        while True:
            chunk = await run_blocking(_next_or_none, stream)
            if chunk is None:
                return
            yield chunk
    finally:
        stream.close()  # never blocks: the scheduler drops the work at its next step


def _next_or_none(stream: SpeechStream) -> Audio | None:
    return next(stream, None)  # StopIteration cannot cross run_in_executor's future
