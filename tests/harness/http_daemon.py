"""Test harness for the HTTP server: the whole daemon (`assemble` + `App.start`, as `edged run`
does) in this process, on a real loopback socket, with the test broker and the tiny voice.

In-process so a test can see the scheduler and the cache behind the server (work freed when a
client leaves); the port rules and start-up failures are tested on `edged run` itself
(test_http_run.py). Its fixtures (`make_http`, `http`) are in harness.fixtures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from edged.assembly import App, assemble
from edged.config import parse_config

from .kokoro_seed import seed_cache
from .streams import wait_streams

TIMEOUT_S = 10.0


class HttpDaemon:
    """The daemon with HTTP on port 0 (a free port); `url` once started."""

    def __init__(self, workdir: Path, broker_port: int, prefix: str, voice_path: Path,
                 **overrides: Any) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {
            "device_id": "test", "output": "publish", "log_level": "info",
            "voice": {"name": str(voice_path)},
            "mqtt": {"host": "127.0.0.1", "port": broker_port, "topic_prefix": prefix,
                     "state_dir": "state", "reconnect_min_s": 0.1, "reconnect_max_s": 0.5},
            # The memory guard reads this process's RSS, which holds every test's doings too:
            # a budget the daemon alone would never reach (tests of the guard set their own).
            "limits": {"stop_timeout_s": 5, "memory_mb": 4000},
            "cache": {"dir": "cache"},
            "http": {"port": 0},
        }
        for section, values in overrides.items():
            if isinstance(values, dict):
                data.setdefault(section, {}).update(values)
            else:
                data[section] = values
        self.config = parse_config(data, workdir)
        self.app: App | None = None
        self.url = ""

    def start(self) -> HttpDaemon:
        seed_cache(self.config.cache.dir)  # not 35 s of preparing Kokoro in this process
        self.app = assemble(self.config, status=_no_status)
        self.app.start()
        self.url = (self.app.daemon.state().servers["http"].url or "").rstrip("/")
        return self

    def stop(self) -> None:
        if self.app is not None:
            self.app.stop()
            self.app = None

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=TIMEOUT_S, **kwargs)

    def wait_streams(self, source: str, count: int) -> None:
        """Until `source` has `count` synthesis streams open at the scheduler."""
        assert self.app is not None
        wait_streams(self.app.speech.scheduler, source, count, TIMEOUT_S)


class SseReader:
    """Reads `/api/events` on a thread of its own and records each event, in order."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.opened = threading.Event()
        self._cond = threading.Condition()
        self._client = httpx.Client(timeout=httpx.Timeout(TIMEOUT_S, read=None))
        self._thread = threading.Thread(target=self._read, args=(url, headers or {}),
                                        daemon=True)
        self._thread.start()
        assert self.opened.wait(TIMEOUT_S), "the event stream did not open"

    def _read(self, url: str, headers: dict[str, str]) -> None:
        import json

        try:
            with self._client.stream("GET", url, headers=headers) as response:
                self.status = response.status_code
                self.opened.set()
                kind = ""
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:"):
                        with self._cond:
                            self.events.append((kind, json.loads(line[5:])))
                            self._cond.notify_all()
        except httpx.HTTPError:
            pass  # closed by the test

    def wait(self, pred: Callable[[str, dict[str, Any]], bool]) -> tuple[str, dict[str, Any]]:
        with self._cond:
            found: list[tuple[str, dict[str, Any]]] = []

            def seen() -> bool:
                found[:] = [e for e in self.events if pred(*e)]
                return bool(found)

            assert self._cond.wait_for(seen, TIMEOUT_S), f"not seen; events: {self.events}"
            return found[0]

    def close(self) -> None:
        self._client.close()


def _no_status(text: str, *, busy_s: float | None = None) -> None:
    """Start-up progress goes nowhere in tests (the daemon's goes to systemd)."""
