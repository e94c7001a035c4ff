"""The HTTP server's connections: how many, for how long, and what a broken one costs.

    accept ─► fewer than http.max_connections open? ─► a `Connection` (aiohttp's handler):
             │                                          the first request's headers within
             │                                          http.header_timeout_s, else 408 and
             │                                          closed; idle between requests at most
             │                                          http.idle_timeout_s
             └► else `Refusal`: 503 with a JSON reason, closed (at most REFUSING at once;
                                beyond that closed at once, so a flood cannot hold descriptors)

A request aiohttp cannot parse is one warning line and a JSON 400 (its own handler logs an
ERROR traceback and answers text). Every descriptor the server may hold is counted against the
process's limit at start-up (descriptors.py): the broker, the audio device and the cache keep
theirs whatever the clients do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from ..net.descriptors import REFUSING

_LOGGER = logging.getLogger(__name__)
_REFUSAL_LINGER_S: Final = 1.0
"""How long a refused connection may stay to read its 503."""


WRITE_TIMEOUT: Final = web.AppKey("write_timeout_s", float)


async def send(request: web.Request, response: web.StreamResponse, data: bytes) -> None:
    """Write part of an answer; a client that does not read it within http.write_timeout_s is
    cut off (ConnectionResetError, as for a client that left): it would otherwise hold its
    synthesis slot or event stream for good."""
    try:
        await asyncio.wait_for(response.write(data), request.app[WRITE_TIMEOUT])
    except TimeoutError:
        if request.protocol is not None:
            request.protocol.force_close()
        raise ConnectionResetError("the client did not read its answer within "
                                   "http.write_timeout_s") from None


@dataclass(frozen=True)
class Bounds:
    max_connections: int
    header_timeout_s: float
    idle_timeout_s: float


def raw_json(status: int, reason: str, message: str) -> bytes:
    """A whole `Connection: close` response with a JSON `{"error": ...}` body."""
    body = json.dumps({"error": message}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


class _Budget:
    """At most `lines` log lines per `per_s`: a flood of garbage is not a flood of log."""

    def __init__(self, lines: int, per_s: float) -> None:
        self._lines, self._per_s = lines, per_s
        self._since = -per_s
        self._used = self._held = 0

    def take(self) -> int | None:
        """None: do not log; else log, saying how many were held back before."""
        now = time.monotonic()
        if now - self._since >= self._per_s:
            self._since, self._used = now, 0
        if self._used >= self._lines:
            self._held += 1
            return None
        self._used += 1
        held, self._held = self._held, 0
        return held


_MALFORMED: Final = _Budget(10, 10.0)


class Connection(RequestHandler):
    """aiohttp's handler, with a deadline for the first request's headers and JSON errors."""

    def __init__(self, server: web.Server, header_timeout_s: float,
                 on_lost: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self._header_timeout_s = header_timeout_s
        self._on_lost: Callable[[], None] | None = on_lost
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # Until the first request's headers, this deadline rules (aiohttp's idle one, armed
        # here too, would close silently); aiohttp re-arms its own after each response.
        if self._keepalive_handle is not None:
            self._keepalive_handle.cancel()
            self._keepalive_handle = None
        self._header_timer = self._loop.call_later(self._header_timeout_s, self._headers_due)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        if self._on_lost is not None:
            self._on_lost()
            self._on_lost = None
        super().connection_lost(exc)

    def _headers_due(self) -> None:
        self._header_timer = None
        if self._request_count == 0 and self.transport is not None:
            self.transport.write(raw_json(408, "Request Timeout", "the request's headers did "
                                          "not come within http.header_timeout_s"))
            self.force_close()

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        """A request aiohttp could not parse (or a handler error past the error middleware):
        one warning line, a JSON answer, the connection closed."""
        first = ((str(message or exc or "").strip() or "bad request").splitlines() or [""])[0]
        first = first[:200]
        held = _MALFORMED.take()
        if held is not None:
            _LOGGER.warning("HTTP: malformed request from %s: %s%s", request.remote, first,
                            f" ({held} more not logged)" if held else "")
        if request.writer.output_size > 0:
            raise ConnectionError("a response was already under way")
        text = first if status < 500 else "internal error; see the daemon log"
        response = web.json_response({"error": text}, status=status)
        response.force_close()
        return response


class Refusal(asyncio.Protocol):
    """A connection beyond http.max_connections: 503 and a JSON reason, then closed."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._gate.refusing += 1
        transport.write(self._gate.refusal)
        if self._gate.refusing > REFUSING:
            transport.abort()
            return
        transport.write_eof()
        self._timer = asyncio.get_running_loop().call_later(_REFUSAL_LINGER_S, transport.abort)

    def data_received(self, data: bytes) -> None:
        pass  # the request is not read: it is refused whatever it says

    def eof_received(self) -> bool:
        return False  # the client is done: close

    def connection_lost(self, exc: BaseException | None) -> None:
        self._gate.refusing -= 1
        if self._timer is not None:
            self._timer.cancel()


class Gate:
    """The protocol factory of the listening socket: a Connection while there is room."""

    def __init__(self, server: web.Server, bounds: Bounds, **handler_kwargs: Any) -> None:
        self._server = server
        self._bounds = bounds
        self._kwargs = handler_kwargs
        self.open = 0
        """Connections made and not yet lost (counted here: asyncio announces a connection to
        its protocol a loop turn after accepting it, and accepts many per turn)."""
        self.refusing = 0
        self.refused = 0
        self.refusal = raw_json(503, "Service Unavailable", f"too many connections: "
                                f"{bounds.max_connections} are open (http.max_connections); "
                                "try again shortly")

    def __call__(self) -> asyncio.Protocol:
        if self.open >= self._bounds.max_connections:
            self.refused += 1
            return Refusal(self)
        self.open += 1
        return Connection(self._server, self._bounds.header_timeout_s, self._lost,
                          loop=asyncio.get_running_loop(),
                          keepalive_timeout=self._bounds.idle_timeout_s, **self._kwargs)


    def _lost(self) -> None:
        self.open -= 1


def gate(server: web.Server, bounds: Bounds) -> Gate:
    return Gate(server, bounds, access_log=None, lingering_time=1.0)
