"""Speech for the network servers: the same request policy and `Speech` (loaded voices, phrase
cache, synthesis scheduler) as MQTT, reached from coroutines without blocking the loop.

    stream = await open_speech(speech, policy, request, source="wyoming")
    async for chunk in chunks(stream): ...     # each next() waits on the executor
    # leaving the loop early (client gone, task cancelled) closes the stream: the scheduler
    # drops the work at its next decoder window

A cached phrase answers without a synthesis slot and without leaving the executor for more
than a file read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import nullcontext

from ..audio import Audio
from ..daemon.policy import RequestPolicy
from ..daemon.requests import SpeechRequest
from ..synthesis import Speech, SpeechStream
from ..voice import WouldLoad, without_loads
from .loop import run_blocking, run_planning


async def open_speech(speech: Speech, policy: RequestPolicy, request: SpeechRequest, *,
                      source: str) -> SpeechStream:
    """The request admitted by the policy, planned and opened, off the loop: on the executor
    the other blocking calls share when its voices are loaded, else on the planning threads
    (planning then loads a voice, or waits for one). Refused, VoiceError (bad voice or
    speaker), synthesis.Busy (the source's bound) as from Speech."""
    admitted: list[SpeechRequest] = []

    def open_(loads: bool) -> SpeechStream:
        if not admitted:
            admitted.append(policy.admit(request))
        ask = admitted[0]
        with nullcontext() if loads else without_loads():
            utterance = speech.utterance(ask.text, ask.voice, speaker=ask.speaker,
                                         speed=ask.speed, language=ask.language, rank=ask.rank)
        return speech.open(utterance, rank=ask.rank, source=source)

    try:
        return await _opened(asyncio.get_running_loop().run_in_executor(None, open_, False))
    except WouldLoad:
        return await _opened(run_planning(open_, True))


async def _opened(opening: asyncio.Future[SpeechStream]) -> SpeechStream:
    try:
        return await asyncio.shield(opening)
    except asyncio.CancelledError:
        # The executor cannot stop open_() once it runs: close what it opens, or the stream would
        # hold its scheduler slot (and a worker) with no one to read it.
        opening.add_done_callback(_close_opened)
        raise


async def chunks(stream: SpeechStream) -> AsyncGenerator[Audio, None]:
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


def _close_opened(opening: asyncio.Future[SpeechStream]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def _next_or_none(stream: SpeechStream) -> Audio | None:
    return next(stream, None)  # StopIteration cannot cross run_in_executor's future
