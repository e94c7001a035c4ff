"""Health, readiness, voices and metrics.

    GET /healthz      200 {"status": "alive"}: the process answers (no key needed)
    GET /readyz       200 when the configured voice is loaded and the server is not stopping,
                      else 503; with the broker's state and the queue either way
    GET /api/voices   [{name, language, speakers, rate_hz, licence, default}]
    GET /metrics      Prometheus text format (metrics.py)
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from ..config import Config
from ..daemon.core import Daemon
from ..net import run_blocking
from ..voice import LoadedVoices, PiperVoice
from ..voice.catalog.listing import voice_listings
from .metrics import Metrics


class Health:
    def __init__(self, config: Config, daemon: Daemon, voices: LoadedVoices,
                 metrics: Metrics) -> None:
        self._config = config
        self._daemon = daemon
        self._voices = voices
        self._metrics = metrics
        self.stopping = False

    async def healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "alive"})

    async def readyz(self, _request: web.Request) -> web.Response:
        voice = self._voices.peek()
        state = await run_blocking(self._daemon.state)
        ready = voice is not None and not self.stopping
        body = {"ready": ready, "voice": voice.name if voice is not None else None,
                "broker": "connected" if self._daemon.link.connected.is_set() else "disconnected",
                "queue": state.queue, "state": state.state}
        return web.json_response(body, status=200 if ready else 503)

    async def voices(self, _request: web.Request) -> web.Response:
        return web.json_response({"voices": await run_blocking(self._voice_list)})

    async def metrics(self, _request: web.Request) -> web.Response:
        body = await run_blocking(self._metrics.render)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _voice_list(self) -> list[dict[str, Any]]:
        """Every voice a request may name (voice/catalog/listing.py), the device's default first."""
        default = self._voices.get()
        paths = {default.name: default.onnx_path} if isinstance(default, PiperVoice) else {}
        return [{"name": v.name, "default": v.name == default.name, "language": v.language,
                 "rate_hz": v.rate_hz, "speakers": list(v.speakers) or v.num_speakers,
                 "licence": v.licence or None}
                for v in voice_listings(self._config, self._voices.listed, paths)]
