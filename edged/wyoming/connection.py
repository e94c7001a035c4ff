"""One Wyoming client connection: events in, audio out, both at once.

    reader (this task)                                 speaker (a task of this connection)
    describe            -> info                        for each queued (response, text):
    ping                -> pong                          open_speech (the request policy, then
                                                           the cache or the scheduler)
    synthesize          -> queue(text), queue(end)       audio-start once per response
    synthesize-start    -> a streamed response opens     audio-chunk per chunk as it is made
    synthesize-chunk    -> each completed sentence       end: audio-stop, and for a streamed
                           queued while the rest arrives      response synthesize-stopped
                           (the first part may be a clause: text_stream.py)
    synthesize-stop     -> the rest queued, then end
    synthesize (inside a stream): ignored: Home Assistant sends it for servers that cannot stream

Reading goes on while audio is made, so a client that leaves is noticed at once: its speech
stream is closed, and the scheduler drops the work at its next decoder window.

Bounded per connection (issue 28): a new response (`synthesize`, `synthesize-start`) is read
only once the one before it is spoken (backpressure: a client pipelining requests fills the
socket's buffers and waits), so what is held is one response's text (wyoming.max_chars), one
event and the transport's buffers. Audio for a client that does not read waits in the
transport's buffer for at most wyoming.idle_timeout_s, then the connection is dropped. A
connection with nothing being spoken that sends nothing for wyoming.idle_timeout_s is closed,
an open stream included (with an `error` `timeout`): silent clients cannot hold the slots.

Errors: a frame that makes no sense gets an `error` event and the connection goes on. A request
that cannot be served (unknown voice, text too long or with control characters, events out of
order, refused by the request policy, synthesis failing) gets an `error` event (its code from
policy.WYOMING_CODE where the policy or the field rules refused it) and the connection is closed:
the client is
waiting for an audio-stop or synthesize-stopped that will not come (Home Assistant waits without
a timeout), and a closed connection tells it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
)

from ..daemon.policy import WYOMING_CODE, RequestPolicy
from ..daemon.policy import Refused as PolicyRefused
from ..daemon.requests import SpeechRequest
from ..net import chunks, open_speech
from ..synthesis import Busy, SchedulerStopped, Speech, SpeechStream
from ..synthesis.sources import WYOMING
from ..voice import VoiceError
from ..voice.catalog.listing import VoiceListing
from . import request
from .framing import Bounds, FrameError, read_event
from .request import Refused
from .text_stream import SentenceBuffer

_LOGGER = logging.getLogger(__name__)
SAMPLES_PER_EVENT: Final = 4096
"""Audio is sent in events of at most this many samples (~0.19 s at 22050 Hz)."""
_MAX_NAME: Final = request.MAX_NAME
FIRST_CLAUSE_WORDS: Final = 3
"""A streamed answer's first part may be a clause of at least this many words (text_stream.py)."""


@dataclass(frozen=True)
class Context:
    """What every connection of one server shares."""

    speech: Speech
    policy: RequestPolicy
    info: Event
    voices: tuple[VoiceListing, ...]
    bounds: Bounds
    max_chars: int
    idle_timeout_s: float
    priority: str
    """wyoming.priority: the protocol has no priority of its own (policy.py)."""


class Stalled(ConnectionError):
    """The client read nothing for wyoming.idle_timeout_s while we had something to send."""


@dataclass
class _Response:
    """One answer: the audio of a `synthesize`, or of a whole streamed request."""

    voice: str | None
    speaker: str | None
    streaming: bool
    received: float
    language: str | None = None
    """Our code for a language no listed voice carries: routed along its voice chain."""
    started: bool = False
    """audio-start was sent."""
    first_audio: float | None = None
    cached: bool = True
    parts: int = 0
    """Parts of a streamed text queued so far."""


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 context: Context) -> None:
        self._reader = reader
        self._writer = writer
        self._ctx = context
        self._jobs: asyncio.Queue[tuple[_Response, str | None, bool]] = asyncio.Queue()
        self._pending = 0
        """Jobs queued or being spoken: the connection is not idle while there are any."""
        self._stream: _Response | None = None
        self._buffer = SentenceBuffer(FIRST_CLAUSE_WORDS)
        self._stream_chars = 0
        self._room = asyncio.Event()
        """Set while no response is in work (or the speaker has ended): the next may open."""
        self._room.set()

    async def serve(self) -> None:
        speaker = asyncio.create_task(self._speak(), name="edged-wyoming-speaker")
        speaker.add_done_callback(lambda _task: self._room.set())
        try:
            await self._read()
        except (ConnectionError, OSError) as err:
            _LOGGER.debug("Wyoming client gone: %s", err)
        finally:
            speaker.cancel()  # a client gone mid-stream: its speech stream is closed now
            await asyncio.gather(speaker, return_exceptions=True)
            self._writer.close()
            try:
                await asyncio.wait_for(self._writer.wait_closed(), 1.0)
            except Exception:  # noqa: BLE001 - a client not reading: what is unsent is dropped
                self._writer.transport.abort()

    # -- reading --------------------------------------------------------------------------------

    async def _read(self) -> None:
        ctx = self._ctx
        while not self._writer.is_closing():
            try:
                event = await read_event(self._reader, ctx.bounds, ctx.idle_timeout_s)
            except TimeoutError:
                if self._pending:
                    continue  # the client waits for audio (a client not reading it: _send)
                await self._idle()
                return
            except FrameError as err:
                await self._send(Error(text=str(err), code="bad-event").event())
                if err.fatal:
                    return
                continue
            if event is None:
                return
            try:
                await self._handle(event)
            except Refused as err:
                _LOGGER.warning("Wyoming request refused: %s", err)
                await self._send(Error(text=str(err), code=err.code).event())
                return

    async def _idle(self) -> None:
        """Nothing arrived for wyoming.idle_timeout_s and nothing is being spoken: a silent
        connection, or a stream whose next words never came, holds a connection slot."""
        timeout = self._ctx.idle_timeout_s
        if self._stream is None:
            _LOGGER.info("Wyoming client idle for %g s: closing", timeout)
            return
        _LOGGER.info("Wyoming stream silent for %g s: closing", timeout)
        await self._send(Error(text=f"no synthesize-chunk or synthesize-stop for {timeout:g} s "
                                    "(wyoming.idle_timeout_s)", code="timeout").event())

    async def _wait_for_room(self) -> bool:
        """Backpressure: a new response opens only once the one before it is spoken, so a
        client pipelining requests is not read ahead of its answers (the socket's buffers
        fill, and the client waits). False when the connection ended meanwhile."""
        await self._room.wait()
        return not self._writer.is_closing()

    async def _handle(self, event: Event) -> None:
        kind = event.type
        if Describe.is_type(kind):
            await self._send(self._ctx.info)
        elif Ping.is_type(kind):
            await self._send(Pong(text=request.optional_text(event.data, "text")).event())
        elif Synthesize.is_type(kind):
            if self._stream is None and await self._wait_for_room():  # else HA's copy in a stream
                response = self._open(event.data, streaming=False)
                text = self._text(event.data, self._ctx.max_chars)
                if not text.strip():
                    raise Refused("text is empty", "bad-request")
                self._queue(response, text)
                self._queue(response, None)
        elif SynthesizeStart.is_type(kind):
            if self._stream is not None:
                raise Refused("synthesize-start while a streamed request is open", "order")
            if not await self._wait_for_room():
                return
            self._stream = self._open(event.data, streaming=True)
            self._buffer, self._stream_chars = SentenceBuffer(FIRST_CLAUSE_WORDS), 0
        elif SynthesizeChunk.is_type(kind):
            stream = self._streaming(kind)
            text = self._text(event.data, self._ctx.max_chars - self._stream_chars)
            self._stream_chars += len(text)
            for part in self._buffer.add(text):
                self._queue_part(stream, part)
        elif SynthesizeStop.is_type(kind):
            stream = self._streaming(kind)
            rest = self._buffer.finish()
            if rest:
                self._queue_part(stream, rest)
            self._queue(stream, None)
            self._stream = None
        else:  # unknown events are dropped, as the protocol asks of servers
            _LOGGER.debug("Wyoming: ignored a %r event", kind[:_MAX_NAME])

    def _streaming(self, kind: str) -> _Response:
        if self._stream is None:
            raise Refused(f"{kind} without synthesize-start", "order")
        return self._stream

    def _open(self, data: dict[str, Any], *, streaming: bool) -> _Response:
        voice, speaker, language = request.voice(data.get("voice"), self._ctx.voices)
        return _Response(voice, speaker, streaming, time.monotonic(), language)

    def _text(self, data: dict[str, Any], room: int) -> str:
        return request.text(data, room, self._ctx.max_chars)

    def _queue(self, response: _Response, text: str | None, pause: bool = True) -> None:
        self._pending += 1
        self._room.clear()
        self._jobs.put_nowait((response, text, pause))

    def _queue_part(self, stream: _Response, text: str) -> None:
        """A part of a streamed answer; the one after a first clause joins it without a pause."""
        stream.parts += 1
        self._queue(stream, text, not (stream.parts == 2 and self._buffer.first_was_clause))

    # -- speaking -------------------------------------------------------------------------------

    async def _speak(self) -> None:
        while True:
            response, text, pause = await self._jobs.get()
            try:
                if text is None:
                    await self._end(response)
                else:
                    await self._say(response, text, pause)
            except (Refused, PolicyRefused, VoiceError, Busy, SchedulerStopped) as err:
                await self._fail(str(err), _code(err))
                return
            except (ConnectionError, OSError):
                self._writer.close()
                return
            except Exception:
                _LOGGER.exception("Wyoming synthesis failed")
                await self._fail("synthesis failed; see the daemon's log", "internal")
                return
            finally:
                self._pending -= 1
                if not self._pending:
                    self._room.set()

    async def _say(self, response: _Response, text: str, pause: bool = True) -> None:
        ctx = self._ctx
        request = SpeechRequest(text, response.voice, response.speaker,
                                priority=ctx.priority, language=response.language)
        stream = await open_speech(ctx.speech, ctx.policy, request, source=WYOMING)
        try:
            await self._audio(response, stream, pause)
        finally:
            # Whatever ends the answer (the client gone while audio-start or a chunk is
            # written, a cancel), the stream gives its scheduler slot back now: an async
            # generator left by an exception is only closed when the garbage collector gets to
            # it (fuzzing found every slot held by no connection, all requests refused busy).
            stream.close()

    async def _audio(self, response: _Response, stream: SpeechStream, pause: bool) -> None:
        rate = stream.utterance.rate_hz
        response.cached = response.cached and stream.cached
        if not response.started:
            await self._send(AudioStart(rate=rate, width=2, channels=1).event())
            response.started = True
        elif response.streaming and pause:  # a voice's pause between the sentences of a text
            silence = rate * stream.utterance.voice.sentence_pause_ms // 1000
            await self._send(AudioChunk(rate=rate, width=2, channels=1,
                                        audio=bytes(2 * silence)).event())
        async with contextlib.aclosing(chunks(stream)) as audio:
            async for chunk in audio:
                if response.first_audio is None:
                    response.first_audio = time.monotonic()
                samples = chunk.samples.astype("<i2", copy=False)
                for at in range(0, len(samples), SAMPLES_PER_EVENT):
                    part = np.ascontiguousarray(samples[at:at + SAMPLES_PER_EVENT])
                    await self._send(AudioChunk(rate=rate, width=2, channels=1,
                                                audio=part.tobytes()).event())

    async def _end(self, response: _Response) -> None:
        if response.started:
            await self._send(AudioStop().event())
        if response.streaming:
            await self._send(SynthesizeStopped().event())
        if response.first_audio is not None:
            _LOGGER.info("Wyoming: first audio after %.0f ms (%s), done after %.0f ms",
                         1000 * (response.first_audio - response.received),
                         "cached" if response.cached else "synthesized",
                         1000 * (time.monotonic() - response.received))

    async def _fail(self, text: str, code: str) -> None:
        _LOGGER.warning("Wyoming request failed: %s", text)
        with contextlib.suppress(ConnectionError, OSError):
            await self._send(Error(text=text, code=code).event())
        self._writer.close()  # the reader sees the end of the stream and the connection ends

    async def _send(self, event: Event) -> None:
        """Bounded: what waits for a client that does not read is the transport's buffer (its
        high-water mark, then `drain` waits), for at most wyoming.idle_timeout_s; then Stalled
        and the connection is dropped with what it had not read."""
        timeout = self._ctx.idle_timeout_s
        try:
            async with asyncio.timeout(timeout):
                await async_write_event(event, self._writer)
        except TimeoutError:
            _LOGGER.info("Wyoming client read nothing for %g s: closing", timeout)
            self._writer.transport.abort()
            raise Stalled(f"the client read nothing for {timeout:g} s") from None


def _code(err: Exception) -> str:
    if isinstance(err, Refused):
        return err.code
    if isinstance(err, PolicyRefused):
        return WYOMING_CODE[err.problem]
    return "busy" if isinstance(err, Busy) else type(err).__name__.lower()
