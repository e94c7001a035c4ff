"""Health, readiness, voices and metrics.

    GET /healthz      200 {"status": "alive"}: the process answers (no key needed)
    GET /readyz       200 when the configured voice is loaded and the server is not stopping,
                      else 503; with the broker's state and the queue either way
    GET /api/voices   [{name, language, speakers, rate_hz, licence, default}]
    GET /metrics      Prometheus text format (metrics.py)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from ..config import Config
from ..daemon import Daemon
from ..net import run_blocking
from ..voice import Voice, VoiceError, VoicePool, find_voice
from ..voice.catalog import CatalogError, load_catalog
from ..voice.piper_config import read_piper_config
from .metrics import Metrics


class Status:
    def __init__(self, config: Config, daemon: Daemon, pool: VoicePool, metrics: Metrics) -> None:
        self._config = config
        self._daemon = daemon
        self._pool = pool
        self._metrics = metrics
        self.stopping = False

    async def healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "alive"})

    async def readyz(self, _request: web.Request) -> web.Response:
        voice = self._pool.peek()
        state = await run_blocking(self._daemon.state)
        ready = voice is not None and not self.stopping
        body = {"ready": ready, "voice": voice.name if voice is not None else None,
                "broker": "connected" if self._daemon.link.connected.is_set() else "disconnected",
                "queue": state["queue"], "state": state["state"]}
        return web.json_response(body, status=200 if ready else 503)

    async def voices(self, _request: web.Request) -> web.Response:
        return web.json_response({"voices": await run_blocking(self._voice_list)})

    async def metrics(self, _request: web.Request) -> web.Response:
        body = await run_blocking(self._metrics.render)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _voice_list(self) -> list[dict[str, Any]]:
        default = self._pool.get()
        names = [default.name, *(n for n in self._config.voices if n != default.name)]
        try:
            catalog = load_catalog()
        except CatalogError:
            catalog = {}
        listed = []
        for name in names:
            entry: dict[str, Any] = {"name": name, "default": name == default.name}
            voice = self._pool.peek(name)
            try:
                piper = voice.config if isinstance(voice, Voice) else read_piper_config(
                    Path(f"{find_voice(name, self._config.voice.dirs)}.json"))
            except VoiceError as err:
                listed.append({**entry, "error": str(err)})
                continue
            known = catalog.get(name)
            listed.append({**entry, "language": piper.language, "rate_hz": piper.rate_hz,
                           "speakers": sorted(piper.speakers, key=piper.speakers.__getitem__)
                           or piper.num_speakers,
                           "licence": known.license if known is not None else None})
        return listed
