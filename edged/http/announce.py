"""The loudspeaker over HTTP: the twins of MQTT `say` and `control`, the state, and the daemon's
events as Server-Sent Events.

    POST /api/say      the same payload as MQTT `say` (text, or JSON with id, priority, ...)
                       202 {"id", "status": "queued"}; 200 "duplicate" when its id was handled;
                       400/413 invalid, 429 queue full (Retry-After), 503 stopping/over budget
    POST /api/control  {"action": "stop"|"skip"|"clear"|"pause"|"resume"} -> the `finished` event
    GET  /api/state    what <prefix>/state says
    GET  /api/events   text/event-stream: `event: <queued|started|finished|failed|rejected>`,
                       `data: <the MQTT event JSON>`

Each SSE client listens through its own bounded buffer (events.Fanout). One that falls
`_SSE_BUFFER` events behind is cut off: it gets `event: overflow` and the stream ends (a
browser's EventSource reconnects by itself); the daemon and the other clients never wait for it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Final

from aiohttp import web

from ..daemon.core import Daemon
from ..daemon.events import Event
from ..daemon.outcomes import SayOutcome
from ..daemon.policy import Refused
from ..daemon.requests import RequestError
from ..net import run_blocking
from .connections import send
from .errors import HttpError, busy, error_response, refusal

_SSE_BUFFER: Final = 256
_KEEPALIVE_S: Final = 15.0
"""A comment line this often keeps proxies and idle timeouts from closing a quiet stream."""
_STATUS: Final = {"invalid": 400, "too_large": 413, "unavailable": 503}


class Announcements:
    def __init__(self, daemon: Daemon, max_streams: int) -> None:
        self._daemon = daemon
        self._max_streams = max_streams
        self.streams: set[asyncio.Task[object]] = set()
        """Running event streams, ended by the server when it stops."""

    async def say(self, request: web.Request) -> web.Response:
        intake: SayOutcome = await run_blocking(self._daemon.say, await request.read())
        if intake.outcome == "rejected":
            if intake.problem == "busy":
                raise busy(intake.error)
            raise HttpError(_STATUS.get(intake.problem, 400), intake.error)
        return web.json_response({"id": intake.id, "status": intake.outcome},
                                 status=202 if intake.outcome == "queued" else 200)

    async def control(self, request: web.Request) -> web.Response:
        try:
            done = await run_blocking(self._daemon.control, await request.read())
        except RequestError as err:
            raise HttpError(413 if err.too_large else 400, str(err)) from None
        except Refused as refused:
            raise refusal(refused) from None
        return web.json_response(done.to_json())

    async def state(self, _request: web.Request) -> web.Response:
        state = await run_blocking(self._daemon.state)
        return web.json_response(state.to_json())

    async def events(self, request: web.Request) -> web.StreamResponse:
        if len(self.streams) >= self._max_streams:
            refused = error_response(503, f"too many event streams: {self._max_streams} are "
                                     "open (http.max_event_streams)", {"Retry-After": "5"})
            refused.force_close()  # its connection is not kept for another try
            return refused
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        listener = self._daemon.fanout.listen(lambda: loop.call_soon_threadsafe(wake.set),
                                              maxlen=_SSE_BUFFER)
        task = asyncio.current_task()
        assert task is not None
        self.streams.add(task)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store"})
        try:
            await response.prepare(request)
            await send(request, response, b"retry: 2000\n: edged events\n\n")
            while True:
                try:
                    await asyncio.wait_for(wake.wait(), _KEEPALIVE_S)
                except TimeoutError:
                    await send(request, response, b": keep-alive\n\n")
                    continue
                wake.clear()
                for event in listener.take():
                    await send(request, response, _sse(event))
                if listener.overflowed:
                    await send(request, response, b'event: overflow\ndata: {"error": "this client fell '
                                         b'behind the events and was cut off"}\n\n')
                    return response
        except ConnectionResetError:
            return response  # the client left
        finally:
            listener.close()
            self.streams.discard(task)


def _sse(event: Event) -> bytes:
    data = json.dumps(event.to_json(), separators=(",", ":"), ensure_ascii=False)
    return f"event: {event.kind}\ndata: {data}\n\n".encode()
