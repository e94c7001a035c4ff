"""The phrase-cache folder as several processes share it: scan, pin list, eviction, purge.

Next to the entries (`<key[:2]>/<key>.pcm`, see cache_store) live `pinned.keys` (the keys
the last `warm` pinned, one per line), `.lock` (flock taken for eviction, purge and pin-list
edits, so two processes never evict from under each other's decisions) and `.counters.json`
(the daemon's hit counters, for `edged cache stats`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..files import atomic_write, read_bounded
from .store import KEY_RE, SUFFIX, entry_path

PIN_FILE: Final = "pinned.keys"
LOCK_FILE: Final = ".lock"
COUNTERS_FILE: Final = ".counters.json"
_TMP_MAX_AGE_S: Final = 3600.0
_PINS_MAX_BYTES: Final = 16 << 20
_COUNTER_FIELDS: Final = ("pid", "since", "memory_hits", "disk_hits", "misses")


@dataclass
class EntryInfo:
    """What a folder scan knows about one entry (unverified)."""

    key: str
    size: int
    mtime: float
    """Last use as far as the folder knows: hits refresh it (see PhraseCache._touch)."""


def scan(root: Path) -> Iterator[EntryInfo]:
    """Every entry file under `root`; removes temp files a crash left (old ones only)."""
    try:
        subdirs = list(os.scandir(root))
    except OSError:
        return
    now = time.time()
    for sub in subdirs:
        if len(sub.name) != 2 or not sub.is_dir(follow_symlinks=False):
            continue
        try:
            files = list(os.scandir(sub.path))
        except OSError:
            continue
        for f in files:
            try:
                st = f.stat(follow_symlinks=False)
            except OSError:
                continue
            if f.name.endswith(".tmp"):
                if now - st.st_mtime > _TMP_MAX_AGE_S:  # a young one may be a write in progress
                    with contextlib.suppress(OSError):
                        os.unlink(f.path)
                continue
            key = f.name[: -len(SUFFIX)]
            if f.name.endswith(SUFFIX) and KEY_RE.fullmatch(key) and key[:2] == sub.name:
                yield EntryInfo(key, st.st_size, st.st_mtime)


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """An exclusive flock on `<root>/.lock`, shared by every process using this folder."""
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_pins(root: Path) -> set[str]:
    try:
        words = read_bounded(root / PIN_FILE, _PINS_MAX_BYTES).decode("utf-8", "replace").split()
    except OSError:
        return set()
    return {k for k in words if KEY_RE.fullmatch(k)}


def edit_pins(root: Path, change: Callable[[set[str]], set[str]]) -> set[str]:
    """Replace the pin list by `change(current)`, atomically and under the lock. OSError."""
    with locked(root):
        pins = change(read_pins(root))
        atomic_write(root / PIN_FILE, "".join(k + "\n" for k in sorted(pins)))
    return pins


@dataclass
class Eviction:
    entries: list[EntryInfo]
    """What is left in the folder."""
    pins: set[str]
    evicted: list[str]
    total_bytes: int


def evict(root: Path, *, max_bytes: int, target_bytes: int, protect: set[str],
          used: Mapping[str, float]) -> Eviction:
    """If the folder holds more than `max_bytes`, delete unpinned entries, least recently
    used first (`used` may know later uses than the mtimes), down to `target_bytes`.

    Decides on a fresh scan under the lock: other processes write here too. OSError.
    """
    with locked(root):
        entries = list(scan(root))
        pins = read_pins(root) | protect
        total = sum(e.size for e in entries)
        evicted: set[str] = set()
        if total > max_bytes:
            dynamic = [e for e in entries if e.key not in pins]
            dynamic.sort(key=lambda e: max(e.mtime, used.get(e.key, 0.0)))
            for e in dynamic:
                if total <= target_bytes:
                    break
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry_path(root, e.key))
                total -= e.size
                evicted.add(e.key)
    left = [e for e in entries if e.key not in evicted]
    return Eviction(left, pins, sorted(evicted), total)


def purge(root: Path, *, dynamic_only: bool) -> tuple[int, int]:
    """Delete all entries (and the pin list), or only the unpinned ones: (count, bytes)."""
    removed = freed = 0
    with locked(root):
        pins = read_pins(root)
        for info in scan(root):
            if dynamic_only and info.key in pins:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry_path(root, info.key))
                removed, freed = removed + 1, freed + info.size
        if not dynamic_only:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / PIN_FILE)
    return removed, freed


def save_counters(root: Path, record: dict[str, Any]) -> None:
    """Advisory figures: no fsync, errors ignored."""
    with contextlib.suppress(OSError):
        atomic_write(root / COUNTERS_FILE, json.dumps(record), sync=False)


def recorded_counters(root: Path) -> dict[str, Any] | None:
    """The hit counters the last cache user with lookups (the daemon) saved, or None."""
    try:
        data = json.loads(read_bounded(Path(root) / COUNTERS_FILE, 1 << 16).decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if not all(isinstance(data.get(k), int | float) for k in _COUNTER_FIELDS):
        return None
    return data
