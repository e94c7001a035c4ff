"""What `<prefix>/state` (retained) and the HTTP server's `/api/state` say about the device.

Cache figures are refreshed at most every 5 s (they may rescan a folder), and after each
announcement; the device settings and the last announcement's outcome are Home Assistant's
sensors; other rooms add parts of their own with `report` (the HTTP server: its address, or why
it is off).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

from .. import __version__
from ..cache import PhraseCache
from ..config import Config
from ..house import clock_state
from ..voice import LoadedVoices
from .device_state import DeviceSettings, Recent

_STATS_EVERY_S: Final = 5.0


class StateBoard:
    """Thread-safe."""

    def __init__(self, config: Config, pool: LoadedVoices, cache: PhraseCache,
                 settings: DeviceSettings, recent: Recent) -> None:
        self._config = config
        self._pool = pool
        self._cache = cache
        self._settings = settings
        self._recent = recent
        self._lock = threading.Lock()
        self._stats: tuple[float, dict[str, Any]] = (0.0, {})
        self._parts: dict[str, Any] = {}

    def report(self, part: str, value: Any) -> None:
        with self._lock:
            self._parts[part] = value

    def refresh_stats(self) -> None:
        """Read the cache figures afresh at the next build (an announcement just ended)."""
        with self._lock:
            self._stats = (0.0, self._stats[1])

    def build(self, *, speaking: bool, queue: int, paused: bool) -> dict[str, Any]:
        now = time.monotonic()
        with self._lock:
            refresh = now - self._stats[0] > _STATS_EVERY_S
            parts = dict(self._parts)
        if refresh:
            try:
                stats = self._cache.stats()
            except Exception as err:  # stats are nice to have; never worth a failed request
                stats = {"error": str(err)}
            with self._lock:
                self._stats = (now, stats)
        return {
            "state": "speaking" if speaking else "idle",
            "queue": queue,
            "paused": paused,
            "voice": self._pool.get().name,
            "voices": sorted(self._pool.names),
            "output": self._config.output,
            "cache": self._stats[1],
            "cache_hit_ratio": self._stats[1].get("hit_ratio"),
            "volume": self._settings.volume,
            "selected_voice": self._settings.voice or self._pool.choices[0],
            **self._recent.state(),
            "version": __version__,
            "device_id": self._config.device_id,
            "role": self._config.role,
            "profile": self._config.profile,
            "groups": list(self._config.groups),
            "clock": clock_state(),
            "ts": round(time.time(), 3),
            **parts,
        }
