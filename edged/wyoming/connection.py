"""One Wyoming client connection: events in, audio out, both at once.

    reader (this task)                                 speaker (a task of this connection)
    describe            -> info                        for each queued (response, text):
    ping                -> pong                          open_speech (the request policy, then
                                                           the cache or the scheduler)
    synthesize          -> queue(text), queue(end)       audio-start once per response
    synthesize-start    -> a streamed response opens     audio-chunk per chunk as it is made
    synthesize-chunk    -> each completed sentence       end: audio-stop, and for a streamed
                           queued while the rest arrives      response synthesize-stopped
    synthesize-stop     -> the rest queued, then end
    synthesize (inside a stream): ignored: Home Assistant sends it for servers that cannot stream

Reading goes on while audio is made, so a client that leaves is noticed at once: its speech
stream is closed, and the scheduler drops the work at its next decoder window.

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

from ..daemon import fields
from ..daemon.policy import WYOMING_CODE, RequestPolicy
from ..daemon.policy import Refused as PolicyRefused
from ..daemon.requests import RequestError, SpeechRequest
from ..languages import LanguageError
from ..languages.codes import language_code, locale_language
from ..net import chunks, open_speech
from ..synthesis import Busy, SchedulerStopped, Speech
from ..synthesis.sources import WYOMING
from ..voice import VoiceError
from ..voice.catalog.listing import VoiceListing
from .framing import Bounds, FrameError, read_event
from .text_stream import SentenceBuffer

_LOGGER = logging.getLogger(__name__)
SAMPLES_PER_EVENT: Final = 4096
"""Audio is sent in events of at most this many samples (~0.19 s at 22050 Hz)."""
_MAX_NAME: Final = 64


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


class Refused(Exception):
    """A request that cannot be served; the message is sent in the `error` event."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


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


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 context: Context) -> None:
        self._reader = reader
        self._writer = writer
        self._ctx = context
        self._jobs: asyncio.Queue[tuple[_Response, str | None]] = asyncio.Queue()
        self._pending = 0
        """Jobs queued or being spoken: the connection is not idle while there are any."""
        self._stream: _Response | None = None
        self._buffer = SentenceBuffer()
        self._stream_chars = 0

    async def serve(self) -> None:
        speaker = asyncio.create_task(self._speak(), name="edged-wyoming-speaker")
        try:
            await self._read()
        except (ConnectionError, OSError) as err:
            _LOGGER.debug("Wyoming client gone: %s", err)
        finally:
            speaker.cancel()  # a client gone mid-stream: its speech stream is closed now
            await asyncio.gather(speaker, return_exceptions=True)
            self._writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._writer.wait_closed(), 1.0)

    # -- reading --------------------------------------------------------------------------------

    async def _read(self) -> None:
        ctx = self._ctx
        while not self._writer.is_closing():
            try:
                event = await read_event(self._reader, ctx.bounds, ctx.idle_timeout_s)
            except TimeoutError:
                if self._pending or self._stream is not None:
                    continue  # the client waits for audio or for its agent's next words
                _LOGGER.info("Wyoming client idle for %g s: closing", ctx.idle_timeout_s)
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

    async def _handle(self, event: Event) -> None:
        kind = event.type
        if Describe.is_type(kind):
            await self._send(self._ctx.info)
        elif Ping.is_type(kind):
            await self._send(Pong(text=_optional_text(event.data, "text")).event())
        elif Synthesize.is_type(kind):
            if self._stream is None:  # else the copy for servers that cannot stream
                response = self._open(event.data, streaming=False)
                text = self._text(event.data, self._ctx.max_chars)
                if not text.strip():
                    raise Refused("text is empty", "bad-request")
                self._queue(response, text)
                self._queue(response, None)
        elif SynthesizeStart.is_type(kind):
            if self._stream is not None:
                raise Refused("synthesize-start while a streamed request is open", "order")
            self._stream = self._open(event.data, streaming=True)
            self._buffer, self._stream_chars = SentenceBuffer(), 0
        elif SynthesizeChunk.is_type(kind):
            stream = self._streaming(kind)
            text = self._text(event.data, self._ctx.max_chars - self._stream_chars)
            self._stream_chars += len(text)
            for sentence in self._buffer.add(text):
                self._queue(stream, sentence)
        elif SynthesizeStop.is_type(kind):
            stream = self._streaming(kind)
            rest = self._buffer.finish()
            if rest:
                self._queue(stream, rest)
            self._queue(stream, None)
            self._stream = None
        else:  # unknown events are dropped, as the protocol asks of servers
            _LOGGER.debug("Wyoming: ignored a %r event", kind[:_MAX_NAME])

    def _streaming(self, kind: str) -> _Response:
        if self._stream is None:
            raise Refused(f"{kind} without synthesize-start", "order")
        return self._stream

    def _open(self, data: dict[str, Any], *, streaming: bool) -> _Response:
        voice, speaker, language = self._voice(data.get("voice"))
        return _Response(voice, speaker, streaming, time.monotonic(), language)

    def _voice(self, value: object) -> tuple[str | None, str | None, str | None]:
        """(voice, speaker, language) a request asks for: a voice by name, or by language (a
        listed voice of exactly that tag, else the language's own voice chain, as MQTT routes
        it); no voice: the device's."""
        if value is None:
            return None, None, None
        if not isinstance(value, dict):
            raise Refused("voice must be an object", "bad-request")
        name = _optional_text(value, "name")
        language = _optional_text(value, "language")
        speaker = value.get("speaker")
        if speaker is not None and not (isinstance(speaker, str) and len(speaker) <= _MAX_NAME):
            raise Refused("voice.speaker must be a name of at most 64 characters",
                               "bad-request")
        listed = [v.name for v in self._ctx.voices]
        if name is not None:
            if name not in listed:
                raise Refused(f"unknown voice {name[:_MAX_NAME]!r}; voices here: "
                                   f"{', '.join(listed)}", "voice")
            return name, speaker, None
        if language is not None:
            for listing in self._ctx.voices:
                if listing.language == language:
                    return listing.name, speaker, None
            try:
                return None, speaker, language_code(locale_language(language))
            except LanguageError:
                raise Refused(f"no voice for language {language[:_MAX_NAME]!r}",
                                   "voice") from None
        return None, speaker, None

    def _text(self, data: dict[str, Any], room: int) -> str:
        """A text or a streamed part of one: what is left of wyoming.max_chars, and the one
        text rule of every intake (fields.py) for the characters."""
        text = data.get("text")
        if not isinstance(text, str):
            raise Refused("text must be a string", "bad-request")
        if len(text) > room:
            raise Refused(f"text is longer than wyoming.max_chars "
                          f"({self._ctx.max_chars} characters per request)", "too-long")
        try:
            return fields.check_text(text, room, empty_ok=True)
        except RequestError as err:
            raise Refused(str(err), WYOMING_CODE["too_large" if err.too_large else "invalid"]
                          ) from None

    def _queue(self, response: _Response, text: str | None) -> None:
        self._pending += 1
        self._jobs.put_nowait((response, text))

    # -- speaking -------------------------------------------------------------------------------

    async def _speak(self) -> None:
        while True:
            response, text = await self._jobs.get()
            try:
                if text is None:
                    await self._end(response)
                else:
                    await self._say(response, text)
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

    async def _say(self, response: _Response, text: str) -> None:
        ctx = self._ctx
        request = SpeechRequest(text, response.voice, response.speaker,
                                priority=ctx.priority, language=response.language)
        stream = await open_speech(ctx.speech, ctx.policy, request, source=WYOMING)
        rate = stream.utterance.rate_hz
        response.cached = response.cached and stream.cached
        if not response.started:
            await self._send(AudioStart(rate=rate, width=2, channels=1).event())
            response.started = True
        elif response.streaming:  # the pause a voice makes between the sentences of one text
            pause = rate * stream.utterance.voice.sentence_pause_ms // 1000
            await self._send(AudioChunk(rate=rate, width=2, channels=1,
                                        audio=bytes(2 * pause)).event())
        async for chunk in chunks(stream):
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
        await async_write_event(event, self._writer)


def _code(err: Exception) -> str:
    if isinstance(err, Refused):
        return err.code
    if isinstance(err, PolicyRefused):
        return WYOMING_CODE[err.problem]
    return "busy" if isinstance(err, Busy) else type(err).__name__.lower()


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > _MAX_NAME:
        raise Refused(f"{key} must be a string of at most {_MAX_NAME} characters",
                           "bad-request")
    return value
