"""The HTTP server: aiohttp on the network servers' one asyncio loop (net/loop.py).

The socket is bound by `bind` in the composition root, before anything starts, so a port in use
is known at once (fatal only when `http.enabled` was set explicitly). Then `start` serves on it.

Requests pass, outermost first: errors (everything a client gets wrong is JSON, nothing it sends
raises past here) -> host guard (on loopback, only loopback host names: DNS rebinding) ->
origin guard (a POST from another site's page is refused unless its origin is listed in
`http.cors_origins`: a page elsewhere cannot make this device speak) -> CORS preflight -> the
API key -> the handler. Bodies are capped (413); every handler that may block awaits it off the
loop. Why aiohttp, with the measured figures: docs/http.md.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.resources
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from aiohttp import HttpVersion10, HttpVersion11, web

from ..config import Config
from ..daemon.core import Daemon
from ..daemon.policy import RequestPolicy
from ..daemon.requests import Rules
from ..net.descriptors import ACCEPT_BURST
from ..net.listen import url_of
from ..synthesis import Speech
from ..synthesis.sources import HTTP
from .announce import Announcements
from .connections import WRITE_TIMEOUT, Bounds, Gate, gate
from .errors import HttpError, error_response
from .metrics import Metrics
from .openai_compat import OpenAiSpeech
from .params import from_query, json_object, tts_params
from .speak import OUTCOME, Speaker
from .status import Health

_LOGGER = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_PAGE: Final = {"/": ("index.html", "text/html"), "/app.js": ("app.js", "text/javascript"),
                "/style.css": ("style.css", "text/css")}
_PUBLIC: Final = frozenset([*_PAGE, "/healthz"])
_LOOPBACK_NAMES: Final = ("localhost", "ip6-localhost")
_VERSIONS: Final = (HttpVersion10, HttpVersion11)


class HttpServer:
    """A `net.Server`; serves on the socket `bind` returned."""

    name = "http"

    def __init__(self, config: Config, daemon: Daemon, speech: Speech, policy: RequestPolicy,
                 sock: socket.socket, max_connections: int | None = None) -> None:
        self._config = config.http
        # The MQTT rules for what a speech request may ask (its text, voice, speaker, ...).
        rules = Rules(max_chars=config.limits.max_chars, voices=speech.planner.names)
        self._sock = sock
        self.url = url_of(sock)
        self._key = _read_key(config.http.api_key_file)
        self._loopback = _is_loopback(config.http.host)
        self._metrics = Metrics(daemon.state, lambda: speech.scheduler.open_streams()[HTTP])
        self._speaker = Speaker(speech, policy, rules, self._metrics, config.http.max_streams,
                                config.http.batch_max_items)
        self._announce = Announcements(daemon, config.http.max_event_streams)
        self._status = Health(config, daemon, speech.voices, self._metrics)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._gate: Gate | None = None
        self._max_connections = max_connections or config.http.max_connections
        self.app = self._make_app(max(65536, rules.max_bytes * config.http.batch_max_items))

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handler_cancellation=True,
                                     shutdown_timeout=2.0)
        await self._runner.setup()
        assert self._runner.server is not None
        self._gate = gate(self._runner.server, Bounds(
            self._max_connections, self._config.header_timeout_s, self._config.idle_timeout_s))
        self._listener = await asyncio.get_running_loop().create_server(
            self._gate, sock=self._sock, backlog=ACCEPT_BURST)
        _LOGGER.info("HTTP: listening on %s%s", self.url,
                     " (API key required)" if self._key else "")

    async def stop(self) -> None:
        self._status.stopping = True
        for task in list(self._announce.streams):
            task.cancel()  # event streams never end by themselves
        if self._listener is not None:
            self._listener.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def _make_app(self, max_body: int) -> web.Application:
        app = web.Application(client_max_size=max_body, middlewares=[
            self._errors, self._guard, self._auth, self._body])
        app.on_response_prepare.append(self._cors_headers)
        app[WRITE_TIMEOUT] = self._config.write_timeout_s
        speaker, openai, announce, status = (self._speaker, OpenAiSpeech(self._speaker),
                                             self._announce, self._status)
        app.router.add_routes([
            *(web.get(path, self._page) for path in _PAGE),
            web.get("/healthz", status.healthz), web.get("/readyz", status.readyz),
            web.get("/metrics", status.metrics), web.get("/api/voices", status.voices),
            web.post("/api/tts", self._tts_post), web.get("/api/tts", self._tts_get),
            web.post("/api/tts-batch", speaker.batch),
            web.post("/v1/audio/speech", openai.speech), web.get("/v1/models", openai.models),
            web.post("/api/say", announce.say), web.post("/api/control", announce.control),
            web.get("/api/state", announce.state), web.get("/api/events", announce.events),
        ])
        return app

    async def _tts_post(self, request: web.Request) -> web.StreamResponse:
        params = tts_params(await json_object(request), self._speaker.rules)
        return await self._speaker.answer(request, params)

    async def _tts_get(self, request: web.Request) -> web.StreamResponse:
        query = [(k, v) for k, v in request.query.items() if k != "key"]
        return await self._speaker.answer(request, tts_params(from_query(query),
                                                              self._speaker.rules))

    async def _page(self, request: web.Request) -> web.Response:
        name, content_type = _PAGE[request.path]
        body = importlib.resources.files(__package__).joinpath("static", name).read_bytes()
        return web.Response(body=body, content_type=content_type, charset="utf-8",
                            headers={"Cache-Control": "no-cache"})

    # -- middlewares, outermost first ---------------------------------------------------------

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        outcome = "500"
        try:
            response = await handler(request)
            outcome = request.get(OUTCOME, str(response.status))
            return response
        except HttpError as err:
            outcome = str(err.status)
            return error_response(err.status, str(err), err.headers)
        except web.HTTPException as err:  # aiohttp's own: 404, 405, 413 (body too large)
            outcome = str(err.status)
            return error_response(err.status, (err.text if err.status == 413 else None) or err.reason)
        except (asyncio.CancelledError, ConnectionResetError):
            outcome = "disconnected"
            raise
        except Exception:
            _LOGGER.exception("HTTP %s %s failed", request.method, request.path)
            return error_response(500, "internal error; see the daemon log")
        finally:
            route = request.match_info.route.resource
            endpoint = route.canonical if route is not None else "unmatched"
            self._metrics.requests.labels(endpoint, outcome).inc()

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.version not in _VERSIONS:
            raise HttpError(505, "only HTTP/1.0 and HTTP/1.1 are served here")
        host = _host_name(request.host or "")
        if self._loopback and not _is_loopback(host):
            raise HttpError(403, f"host {host[:60]!r} is not accepted: this server listens on "
                            "loopback only (a guard against DNS rebinding)")
        origin = request.headers.get("Origin")
        same = origin is not None and origin == f"{request.scheme}://{request.host}"
        listed = origin in self._config.cors_origins
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            if not listed:
                raise HttpError(403, f"origin {str(origin)[:60]!r} is not in http.cors_origins")
            return web.Response(status=204, headers={
                "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                "Access-Control-Allow-Headers": "Authorization, Content-Type",
                "Access-Control-Max-Age": "600"})
        if request.method == "POST" and origin is not None and not (same or listed):
            raise HttpError(403, f"origin {origin[:60]!r} may not post here; list it in "
                            "http.cors_origins")
        return await handler(request)

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._key is not None and request.path not in _PUBLIC:
            given = request.headers.get("Authorization", "")
            token = given[7:] if given[:7].lower() == "bearer " else None
            if token is None and self._config.allow_query_key:
                token = request.query.get("key")
            # surrogateescape: header bytes that are not UTF-8 make a wrong key, not an error
            if token is None or not hmac.compare_digest(
                    token.encode("utf-8", "surrogateescape"), self._key):
                raise HttpError(401, "missing or wrong API key (Authorization: Bearer <key>)",
                                {"WWW-Authenticate": "Bearer"})
        return await handler(request)

    @web.middleware
    async def _body(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The whole body, within http.body_timeout_s (handlers then read it from memory)."""
        if request.body_exists:
            try:
                await asyncio.wait_for(request.read(), self._config.body_timeout_s)
            except TimeoutError:
                response = error_response(408, "the request's body did not come whole within "
                                          "http.body_timeout_s")
                response.force_close()
                return response
        return await handler(request)

    async def _cors_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        # No other site may frame the page (clickjacking); the API answers say the same.
        response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
        response.headers["X-Frame-Options"] = "DENY"
        origin = request.headers.get("Origin")
        if origin is not None and origin in self._config.cors_origins:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = (
                "X-Sample-Rate, X-Sample-Format, X-Channels, X-Edged-Cached, X-Edged-Voice")
            response.headers["Vary"] = "Origin"


def _read_key(path: Path | None) -> bytes | None:
    # Readable and not empty: checked at start-up (checks.py, the "secret" kind).
    return path.read_bytes().strip() if path is not None else None


def _host_name(host: str) -> str:
    """The name in a Host header, without its port: `[::1]:80` and `[::1]` give `::1`."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
