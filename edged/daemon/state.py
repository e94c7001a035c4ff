"""What `<prefix>/state` (retained) and the HTTP server's `/api/state` say about the device: one
frozen `State`, assembled in one place (`StateBoard.snapshot`) from what it reads.

Cache figures are refreshed at most every 5 s (they may rescan a folder), and after each
announcement; the device settings and the last announcement's outcome are Home Assistant's
sensors; a network server's address (or why it is off) is set once at start (`set_server`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from .. import __version__
from ..house import clock_state
from .device_state import DeviceSettings, Last, Recent

if TYPE_CHECKING:
    from ..cache import PhraseCache
    from ..config import Config
    from ..voice import LoadedVoices

_STATS_EVERY_S: Final = 5.0


@dataclass(frozen=True)
class ServerState:
    """A network server as the state shows it."""

    state: Literal["listening", "off"]
    url: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in (("state", self.state), ("url", self.url),
                                  ("error", self.error)) if v is not None}


@dataclass(frozen=True)
class State:
    """The device now. `to_json` is the retained `<p>/state` payload (what Home Assistant's
    entities read): keys whose value is None are left out where marked optional."""

    state: Literal["speaking", "idle"]
    queue: int
    paused: bool
    voice: str
    """The configured voice."""
    voices: tuple[str, ...]
    """Every voice a request may name."""
    output: str
    cache: Mapping[str, Any]
    """The phrase cache's figures (PhraseCache.stats), or {"error": ...}."""
    volume: int
    selected_voice: str
    last: Last | None
    last_uncached_first_audio_ms: float | None
    device_id: str
    role: str
    profile: str
    groups: tuple[str, ...]
    clock: Mapping[str, Any]
    refused: Mapping[str, int]
    outgoing: int
    """Messages waiting for the broker."""
    synthesis_streams: Mapping[str, int]
    """Open synthesis streams per source (synthesis/sources.py)."""
    schedule: Mapping[str, Any]
    """Quiet hours and time-of-day volume now (house/schedule.py)."""
    servers: Mapping[str, ServerState] = field(default_factory=dict)
    """"http" (and others): listening where, or why not; each a key of its own in the JSON."""
    reload_error: str | None = None
    version: str = __version__
    ts: float = field(default_factory=lambda: round(time.time(), 3))

    @property
    def cache_hit_ratio(self) -> float | None:
        ratio = self.cache.get("hit_ratio")
        return ratio if isinstance(ratio, int | float) else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "state": self.state, "queue": self.queue, "paused": self.paused,
            "voice": self.voice, "voices": list(self.voices), "output": self.output,
            "cache": dict(self.cache), "cache_hit_ratio": self.cache_hit_ratio,
            "volume": self.volume, "selected_voice": self.selected_voice,
            "last": self.last.to_json() if self.last is not None else None,
            "last_uncached_first_audio_ms": self.last_uncached_first_audio_ms,
            "version": self.version, "device_id": self.device_id, "role": self.role,
            "profile": self.profile, "groups": list(self.groups), "clock": dict(self.clock),
            "ts": self.ts, "refused": dict(self.refused), "outgoing": self.outgoing,
            "synthesis_streams": dict(self.synthesis_streams), "schedule": dict(self.schedule),
        }
        data.update({name: server.to_json() for name, server in self.servers.items()})
        if self.reload_error is not None:
            data["reload_error"] = self.reload_error
        return data

    def status_line(self, broker_connected: bool) -> str:
        """One line for systemd's STATUS=."""
        reload = f"; reload refused: {self.reload_error}" if self.reload_error else ""
        return (f"{self.state}, {self.queue} waiting{', paused' if self.paused else ''}, "
                f"broker {'connected' if broker_connected else 'disconnected'}{reload}")


@dataclass(frozen=True)
class Readings:
    """Where the board reads what is not its own (other rooms' counters), each when asked."""

    refused: Callable[[], Mapping[str, int]]
    outgoing: Callable[[], int]
    streams: Callable[[], Mapping[str, int]]


class StateBoard:
    """Thread-safe."""

    def __init__(self, config: Config, voices: LoadedVoices, cache: PhraseCache,
                 settings: DeviceSettings, recent: Recent, readings: Readings) -> None:
        self._config = config
        self._voices = voices
        self._cache = cache
        self._settings = settings
        self._recent = recent
        self._readings = readings
        self._lock = threading.Lock()
        self._stats: tuple[float, Mapping[str, Any]] = (0.0, {})
        self._servers: dict[str, ServerState] = {}
        self._reload_error: str | None = None

    def set_server(self, name: str, server: ServerState) -> None:
        with self._lock:
            self._servers[name] = server

    def reload_refused(self, reason: str) -> None:
        """A SIGHUP's config was refused: `reload_error` says why until the next start."""
        with self._lock:
            self._reload_error = reason[:500]

    def refresh_stats(self) -> None:
        """Read the cache figures afresh at the next snapshot (an announcement just ended)."""
        with self._lock:
            self._stats = (0.0, self._stats[1])

    def snapshot(self, *, speaking: bool, queue: int, paused: bool,
                 schedule: Mapping[str, Any]) -> State:
        last, first_audio_ms = self._recent.last()
        readings = self._readings
        with self._lock:
            servers, reload_error = dict(self._servers), self._reload_error
        return State(
            state="speaking" if speaking else "idle", queue=queue, paused=paused,
            voice=self._voices.get().name, voices=tuple(sorted(self._voices.names)),
            output=self._config.output, cache=self._cache_stats(),
            volume=self._settings.volume,
            selected_voice=self._settings.voice or self._voices.choices[0],
            last=last, last_uncached_first_audio_ms=first_audio_ms,
            device_id=self._config.device_id, role=self._config.role,
            profile=self._config.profile, groups=tuple(self._config.groups),
            clock=clock_state(), refused=readings.refused(), outgoing=readings.outgoing(),
            synthesis_streams=readings.streams(), schedule=schedule, servers=servers,
            reload_error=reload_error)

    def _cache_stats(self) -> Mapping[str, Any]:
        now = time.monotonic()
        with self._lock:
            at, stats = self._stats
        if now - at <= _STATS_EVERY_S:
            return stats
        try:
            stats = self._cache.stats()
        except Exception as err:  # stats are nice to have; never worth a failed request
            stats = {"error": str(err)}
        with self._lock:
            self._stats = (now, stats)
        return stats
