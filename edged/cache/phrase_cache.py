"""Phrase cache: the phrases a house says every day, served from memory or disk in microseconds.

Tiers: an in-memory LRU of decoded PCM (`cache.memory_mb`) in front of checksummed files
(cache_store). Pinned phrases (`cache.phrases`; `warm` lists their keys in the folder's
pin list) are never evicted; every other entry is dynamic and evicted least-recently-used
beyond `cache.max_mb` (cache_folder). Keys: cache_keys. Disk trouble never stops speech:
the cache turns *degraded* (one warning, visible in stats), stops writing, and keeps
serving what it can from memory and from readable files.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ..audio import Audio
from ..config import CacheConfig
from . import folder, store
from .keys import KeyMemo

if TYPE_CHECKING:
    from ..voice import SynthesisSettings
    from ..voice.backend import VoiceBackend

_LOGGER = logging.getLogger(__name__)
_MB: Final = 1 << 20
_TOUCH_EVERY_S: Final = 60.0
"""A hit refreshes the file's mtime (the LRU clock that survives restarts) at most this often."""
_RESCAN_EVERY_S: Final = 30.0
_PASSING: Final = frozenset({errno.EMFILE, errno.ENFILE})
"""Errors that pass by themselves (out of descriptors): never a reason to degrade."""
_COUNTERS_EVERY_S: Final = 10.0
_EVICT_TO: Final = 0.9
"""Evict down to 90 % of max_mb, so a full cache does not rescan the folder on every put."""

@dataclass(slots=True)
class _Entry:
    size: int
    used: float
    """Last use (wall clock); merged with the file mtime on rescans."""
    touched: float
    """When the file mtime was last set."""


class PhraseCache:
    """Thread-safe; several processes may share one folder."""

    def __init__(self, config: CacheConfig) -> None:
        self.root = Path(config.dir)
        self._root_s = os.fspath(self.root)
        self._max_bytes = config.max_mb * _MB
        self._mem_max = config.memory_mb * _MB
        self._lock = threading.Lock()
        self._keys = KeyMemo()
        self._memory: OrderedDict[str, Audio] = OrderedDict()
        self._mem_bytes = 0
        self._index: dict[str, _Entry] = {}
        self._pins: set[str] = set()
        self._scanned = 0.0
        self._counts = dict.fromkeys(
            ("memory_hits", "disk_hits", "misses", "corrupt", "writes", "evicted"), 0
        )
        self._bad_keys: set[str] = set()
        self._over_warned = False
        self._counters_saved = time.monotonic()
        self._started = time.time()
        self.degraded: str | None = None
        self._passing_warned = -_RESCAN_EVERY_S
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".probe.{os.getpid()}.tmp"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as err:
            self._degrade(f"cannot write to {self.root}: {err.strerror or err}", err)
        self._rescan()

    def key(self, voice: VoiceBackend, settings: SynthesisSettings, text: str) -> str:
        """sha256 over everything that changes the audio (see cache_keys); memoized per voice."""
        return self._keys.key(voice, settings, text)

    def get(self, key: str) -> Audio | None:
        """The cached audio for `key` (read-only samples), or None; counts hits and misses."""
        path = store.entry_file(self._root_s, key)
        with self._lock:
            audio = self._memory.get(key)
            if audio is not None:
                self._memory.move_to_end(key)
                self._counts["memory_hits"] += 1
        if audio is None:
            audio = self._read(key, path)
            with self._lock:
                self._counts["disk_hits" if audio is not None else "misses"] += 1
                if audio is not None:
                    self._remember(key, audio)
        if audio is not None:
            self._touch(key, path)
        if time.monotonic() - self._counters_saved >= _COUNTERS_EVERY_S:
            self._save_counters()
        return audio

    def put(self, key: str, audio: Audio, *, text: str, pinned: bool = False) -> None:
        """Keep `audio` under `key` in memory and on disk. Never raises on disk trouble."""
        path = store.entry_path(self.root, key)
        samples = np.array(audio.samples, dtype=np.int16, copy=True)
        samples.flags.writeable = False  # the caller keeps its array; ours is shared, frozen
        audio = Audio(samples, audio.rate_hz)
        with self._lock:
            self._remember(key, audio)
            new_pin = pinned and key not in self._pins
        if self.degraded or len(samples) > store.MAX_SAMPLES:  # too long for a valid entry
            return
        data = store.encode(audio, text)
        try:
            store.write_entry(path, data)
            if new_pin:
                pins = folder.edit_pins(self.root, lambda pins: pins | {key})
                with self._lock:
                    self._pins = pins
        except OSError as err:
            self._degrade(f"cannot write {path}: {err.strerror or err}", err)
            return
        now = time.time()
        with self._lock:
            self._index[key] = _Entry(len(data), now, now)
            self._counts["writes"] += 1
            self._bad_keys.discard(key)
            over = sum(e.size for e in self._index.values()) > self._max_bytes
        if over:
            self._evict()

    def pin_keys(self, voice: VoiceBackend, settings: SynthesisSettings,
                 phrases: Iterable[str]) -> dict[str, str]:
        """The cache key of each phrase (duplicates dropped), in order: what `warm` takes."""
        keyed: dict[str, str] = {}
        for text in phrases:
            keyed.setdefault(self.key(voice, settings, text), text)
        return keyed

    def set_pins(self, keys: Iterable[str]) -> None:
        """Replace the folder's pin list: these entries are never evicted (see warm.py)."""
        if self.degraded:
            return
        try:
            pinned = folder.edit_pins(self.root, lambda _old: set(keys))
        except OSError as err:
            self._degrade(f"cannot write the pin list in {self.root}: {err.strerror or err}",
                          err)
            return
        with self._lock:
            self._pins = pinned

    def stats(self) -> dict[str, Any]:
        """JSON-able figures for `cache stats` and the daemon's state topic."""
        if time.monotonic() - self._scanned > _RESCAN_EVERY_S:
            self._rescan()  # other processes may have added or evicted entries
        with self._lock:
            c = dict(self._counts)
            pinned = [e.size for k, e in self._index.items() if k in self._pins]
            dynamic = [e.size for k, e in self._index.items() if k not in self._pins]
            lookups = c["memory_hits"] + c["disk_hits"] + c["misses"]
            return {
                "dir": self._root_s,
                "degraded": self.degraded is not None,
                "degraded_reason": self.degraded,
                "entries": len(pinned) + len(dynamic),
                "bytes": sum(pinned) + sum(dynamic),
                "max_bytes": self._max_bytes,
                "pinned": {"entries": len(pinned), "bytes": sum(pinned)},
                "dynamic": {"entries": len(dynamic), "bytes": sum(dynamic)},
                "memory": {"entries": len(self._memory), "bytes": self._mem_bytes,
                           "max_bytes": self._mem_max},
                "hits": {"memory": c["memory_hits"], "disk": c["disk_hits"]},
                "misses": c["misses"],
                "hit_ratio": (c["memory_hits"] + c["disk_hits"]) / lookups if lookups else None,
                "corrupt": c["corrupt"],
                "writes": c["writes"],
                "evicted": c["evicted"],
                "since": self._started,
            }

    def entries(self) -> list[dict[str, Any]]:
        """Every entry on disk, least recently used first, with its text (for `cache list`)."""
        self._rescan()
        with self._lock:
            items = sorted(self._index.items(), key=lambda kv: kv[1].used)
            pins = set(self._pins)
        out = []
        for key, entry in items:
            try:
                text, duration = store.read_text(store.entry_path(self.root, key))
            except (OSError, store.CorruptEntry) as err:
                text, duration = f"<unreadable: {err}>", None
            out.append({"key": key, "pinned": key in pins, "bytes": entry.size,
                        "duration_s": duration, "used": entry.used, "text": text})
        return out

    def purge(self, *, dynamic_only: bool = False) -> tuple[int, int]:
        """Delete entries (all, or only the unpinned ones): (count, bytes). Raises OSError."""
        result = folder.purge(self.root, dynamic_only=dynamic_only)
        with self._lock:
            self._memory.clear()
            self._mem_bytes = 0
        self._rescan()
        return result

    def close(self) -> None:
        """Record the hit counters for `edged cache stats` (the daemon calls this at exit)."""
        self._save_counters()

    # -- internals ------------------------------------------------------------------------

    def _read(self, key: str, path: str) -> Audio | None:
        try:
            return store.read_entry(path)
        except FileNotFoundError:
            return None
        except store.CorruptEntry as err:
            with self._lock:
                self._counts["corrupt"] += 1
                first = key not in self._bad_keys
                self._bad_keys.add(key)
                self._index.pop(key, None)
            with contextlib.suppress(OSError):
                os.unlink(path)
            if first:
                _LOGGER.warning("Cache entry %s is damaged (%s): removed, will re-make", path, err)
            return None
        except OSError as err:  # e.g. the cache folder is a file, or an I/O error
            _LOGGER.debug("Cannot read cache entry %s: %s", path, err)
            return None

    def present(self, key: str) -> bool:
        """Is a valid entry on disk (or, when degraded, at least in memory)? No hit counting."""
        audio = self._read(key, store.entry_file(self._root_s, key))
        with self._lock:
            if audio is not None:
                self._remember(key, audio)
                return True
            return self.degraded is not None and key in self._memory

    def _remember(self, key: str, audio: Audio) -> None:
        """Into the memory LRU (lock held); drop the least recently used beyond memory_mb."""
        old = self._memory.pop(key, None)
        if old is not None:
            self._mem_bytes -= old.samples.nbytes
        if audio.samples.nbytes > self._mem_max:
            return
        self._memory[key] = audio
        self._mem_bytes += audio.samples.nbytes
        while self._mem_bytes > self._mem_max:
            _, dropped = self._memory.popitem(last=False)
            self._mem_bytes -= dropped.samples.nbytes

    def _touch(self, key: str, path: str) -> None:
        now = time.time()
        with self._lock:
            entry = self._index.get(key)
            if entry is None:
                return
            entry.used = now
            if now - entry.touched < _TOUCH_EVERY_S:
                return
            entry.touched = now
        with contextlib.suppress(OSError):  # a read-only cache still serves; it just forgets order
            os.utime(path)

    def _rescan(self, found: list[folder.EntryInfo] | None = None,
                pins: set[str] | None = None) -> None:
        found = list(folder.scan(self.root)) if found is None else found
        pins = folder.read_pins(self.root) if pins is None else pins
        with self._lock:
            old, self._index = self._index, {}
            for info in found:
                prev = old.get(info.key)
                used = max(info.mtime, prev.used if prev else 0.0)
                self._index[info.key] = _Entry(info.size, used, info.mtime)
            # Degraded, the pins we were given could not be written down: keep them here.
            self._pins = pins | (self._pins if self.degraded else set())
            self._scanned = time.monotonic()

    def _evict(self) -> None:
        with self._lock:
            used = {k: e.used for k, e in self._index.items()}
            protect = set(self._pins)
        try:
            result = folder.evict(self.root, max_bytes=self._max_bytes,
                                  target_bytes=int(self._max_bytes * _EVICT_TO),
                                  protect=protect, used=used)
        except OSError as err:
            self._degrade(f"cannot evict in {self.root}: {err.strerror or err}", err)
            return
        self._rescan(result.entries, result.pins)
        with self._lock:
            self._counts["evicted"] += len(result.evicted)
        if result.evicted:
            _LOGGER.debug("Evicted %d dynamic cache entries", len(result.evicted))
        if result.total_bytes > self._max_bytes and not self._over_warned:
            self._over_warned = True
            _LOGGER.warning("Pinned phrases alone take %.1f MB, more than cache.max_mb (%d)",
                            result.total_bytes / _MB, self._max_bytes // _MB)

    def _degrade(self, reason: str, err: OSError | None = None) -> None:
        if err is not None and err.errno in _PASSING:
            # Out of descriptors for a moment (a connection flood): this write is skipped, the
            # cache is not given up until restart for it.
            if time.monotonic() - self._passing_warned > _RESCAN_EVERY_S:
                self._passing_warned = time.monotonic()
                _LOGGER.warning("Phrase cache: %s; skipped, the cache goes on", reason)
            return
        with self._lock:
            if self.degraded is not None:
                return
            self.degraded = reason
        _LOGGER.warning("Phrase cache degraded, speech goes on without it: %s", reason)

    def _save_counters(self) -> None:
        self._counters_saved = time.monotonic()
        with self._lock:
            c = dict(self._counts)
        if self.degraded or not (c["memory_hits"] + c["disk_hits"] + c["misses"]):
            return
        folder.save_counters(self.root, {"pid": os.getpid(), "since": self._started,
                                         "saved": time.time(), **c})
