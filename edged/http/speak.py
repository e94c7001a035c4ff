"""Speech over HTTP: `/api/tts` (body or query), `/api/tts-batch`, and the answer behind
OpenAI's `/v1/audio/speech` (openai_compat.py parses that one).

    stream = open_speech(...)         the request policy first (the device's voice, the memory
                                      budget: daemon/policy.py); cached: one chunk, no synthesis
                                      slot; miss: a slot of the "http" source (http.max_streams)
                                      or 429 at once
    wav/pcm: headers + first chunk    as soon as the first decoder window is ready, then each
                                      window as it is made (chunked transfer)
    mp3/flac/opus: the whole, encoded off the loop (formats.py says why)

A client that goes away closes the stream: the scheduler drops the work at its next window.
"""

from __future__ import annotations

import logging
import time
import zipfile
from collections.abc import AsyncIterator
from typing import Final

from aiohttp import web

from ..audio import Audio
from ..daemon.policy import Refused, RequestPolicy
from ..daemon.requests import Rules
from ..net import chunks, open_speech, run_blocking
from ..synthesis import Busy, SchedulerStopped, Speech, SpeechStream
from ..synthesis.sources import HTTP
from ..voice import VoiceError
from .connections import send
from .errors import HttpError, busy, refusal
from .formats import FORMATS, PcmOut, encode_whole, wav_header
from .metrics import Metrics
from .params import TtsParams, json_object, tts_params

_LOGGER = logging.getLogger(__name__)
_BATCH_COMMON: Final = ("voice", "speaker", "speed", "volume")
OUTCOME: Final = web.RequestKey("outcome", str)
"""What the metrics count a request as, when its status does not say it (a client that left)."""


class Speaker:
    """The speech endpoints' shared part: opening a stream and writing the answer."""

    def __init__(self, speech: Speech, policy: RequestPolicy, rules: Rules, metrics: Metrics,
                 max_streams: int, batch_max_items: int) -> None:
        self._speech = speech
        self._policy = policy
        self.rules = rules
        self._metrics = metrics
        self._max_streams = max_streams
        self._batch_max_items = batch_max_items

    async def open(self, params: TtsParams) -> SpeechStream:
        try:
            stream = await open_speech(self._speech, self._policy, params.speech, source=HTTP)
        except Refused as refused:
            raise refusal(refused) from None
        except VoiceError as err:
            raise HttpError(400, str(err)) from None
        except Busy:
            raise busy(f"busy: {self._max_streams} HTTP syntheses are running "
                       "(http.max_streams); cached phrases are still answered") from None
        except SchedulerStopped:
            raise HttpError(503, "the daemon is stopping") from None
        self._metrics.cache.labels("hit" if stream.cached else "miss").inc()
        return stream

    async def answer(self, request: web.Request, params: TtsParams) -> web.StreamResponse:
        started = time.monotonic()
        stream = await self.open(params)
        try:
            audio = chunks(stream)
            if params.format.streamed and not stream.cached:
                return await self._streamed(request, stream, audio, params, started)
            parts = [chunk async for chunk in audio]
            self._metrics.first_audio.observe(time.monotonic() - started)
            body, rate = await run_blocking(encode_whole, iter(parts), params.format,
                                            params.speech.volume, params.rate_hz)
            return web.Response(body=body, headers=_headers(params, rate, stream))
        finally:
            stream.close()  # at once, also when the client left or the task was cancelled
            self._metrics.synthesis.observe(stream.synth_s)

    async def _streamed(self, request: web.Request, stream: SpeechStream,
                        audio: AsyncIterator[Audio], params: TtsParams,
                        started: float) -> web.StreamResponse:
        first = await anext(audio, None)
        self._metrics.first_audio.observe(time.monotonic() - started)
        out = PcmOut(params.speech.volume, params.rate_hz)
        rate = out.out_rate(stream.utterance.rate_hz)
        response = web.StreamResponse(headers=_headers(params, rate, stream))
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            head = wav_header(rate, None) if params.format.name == "wav" else b""
            await send(request, response,
                       head + (out.convert(first) if first is not None else b""))
            async for chunk in audio:
                await send(request, response, out.convert(chunk))
            await send(request, response, out.flush())
            await response.write_eof()
        except ConnectionResetError:  # the client left: leaving the loop frees the stream
            _LOGGER.info("HTTP client %s left during its speech stream", request.remote)
            request[OUTCOME] = "disconnected"
        return response

    async def batch(self, request: web.Request) -> web.StreamResponse:
        """`{"texts": [...], "voice"?, "speaker"?, "speed"?, "volume"?}` -> a zip of WAVs, one
        per text (001.wav, ...). Made one at a time; each is cached, so a retry after a 429
        finds the ones already made."""
        data = await json_object(request)
        texts = data.pop("texts", None)
        if not isinstance(texts, list) or not texts:
            raise HttpError(400, "texts must be a non-empty list of strings")
        if len(texts) > self._batch_max_items:
            raise HttpError(413, f"texts has {len(texts)} items; the limit is "
                            f"{self._batch_max_items} (http.batch_max_items)")
        unknown = [k for k in data if k not in _BATCH_COMMON]
        if unknown:
            raise HttpError(400, f"unknown field {unknown[0][:40]!r}; allowed fields: texts, "
                            f"{', '.join(_BATCH_COMMON)}")
        items = []
        for i, text in enumerate(texts):
            try:
                items.append(tts_params({**data, "text": text}, self.rules))
            except HttpError as err:
                raise HttpError(err.status, f"texts[{i}]: {err}") from None
        return await self._zip_stream(request, items)

    async def _zip_stream(self, request: web.Request, items: list[TtsParams]) -> web.StreamResponse:
        """Each WAV is made, zipped and written before the next is made: a request holds one
        file, not all of them and the zip besides (six batches at once grew the daemon by
        ~640 MB and OOM-killed it under MemoryMax=512M). The answer starts after the first file,
        so a refusal of that one is still a status; one of a later file ends the zip early."""
        zipped = _ZipSink()
        response = web.StreamResponse(headers={
            "Content-Type": "application/zip",
            "Content-Disposition": 'attachment; filename="speech.zip"'})
        response.enable_chunked_encoding()
        for i, params in enumerate(items, 1):
            try:
                with await self.open(params) as stream:
                    parts = [chunk async for chunk in chunks(stream)]
            except HttpError as err:
                if not response.prepared:
                    raise
                _LOGGER.warning("HTTP batch: texts[%d] failed after the zip had begun, so the zip "
                                "ends early: %s", i - 1, err)
                request[OUTCOME] = str(err.status)
                return response
            data = await run_blocking(zipped.add, f"{i:03d}.wav", parts, params.speech.volume)
            del parts
            if not response.prepared:
                await response.prepare(request)
            await send(request, response, data)
        await send(request, response, await run_blocking(zipped.close))
        await response.write_eof()
        return response


class _ZipSink:
    """A zip written to memory one entry at a time; each call returns the bytes made since."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        # No tell/seek: zipfile writes a streamable zip (sizes after each entry's data).
        self._archive = zipfile.ZipFile(self, "w", zipfile.ZIP_STORED)  # type: ignore[call-overload]

    def write(self, data: bytes) -> int:
        self._buffer += data
        return len(data)

    def flush(self) -> None:
        pass

    def add(self, name: str, parts: list[Audio], volume: float) -> bytes:
        wav, _rate = encode_whole(iter(parts), FORMATS["wav"], volume)
        self._archive.writestr(name, wav)
        return self._take()

    def close(self) -> bytes:
        self._archive.close()
        return self._take()

    def _take(self) -> bytes:
        data = bytes(self._buffer)
        self._buffer.clear()
        return data


def _headers(params: TtsParams, rate_hz: int, stream: SpeechStream) -> dict[str, str]:
    headers = {"Content-Type": params.format.content_type, "Cache-Control": "no-store",
               "X-Edged-Cached": "true" if stream.cached else "false",
               "X-Edged-Voice": stream.utterance.voice.name}
    if params.format.name == "pcm":
        headers.update({"X-Sample-Rate": str(rate_hz), "X-Sample-Format": "s16le",
                        "X-Channels": "1"})
    return headers
