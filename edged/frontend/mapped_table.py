"""Sorted key -> value tables in files, mapped from the cache and searched by bisection.

A front end's large dictionary (jieba's words, pypinyin's phrases) loaded into a Python dict
costs every process that speaks the language tens of MB and a fraction of a second (seconds on
a Pi). Written once, sorted, by a child process and then mapped, it costs nothing to load, its
pages are shared between processes and a lookup takes microseconds.

Files of a table NAME in a folder: `NAME.keys` (the keys as UTF-8, in byte order), `NAME.koff`
(u32: where each key starts, one more for the end), `NAME.vals` and `NAME.voff` (the values,
the same way), and the folder's `index.json` (each table's count, the byte order, what the
builder adds), written last and renamed into place with the folder: a folder with it is whole.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import subprocess
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

INDEX: Final = "index.json"
_LOOKUPS_KEPT: Final = 1 << 16
"""Lookups remembered per table (a line asks for each fragment two or three times)."""
_BUILD_TIMEOUT_S: Final = 600
BUILD_ERRORS: Final = (OSError, ValueError, KeyError, subprocess.SubprocessError)
"""What making or opening a folder of tables raises when it cannot (its caller falls back)."""


class MappedTable:
    """Table `name` of `folder`; ValueError when its files do not hold together."""

    def __init__(self, folder: Path, name: str) -> None:
        self.meta = _read_meta(folder)
        self.count = int(self.meta["tables"][name])
        self._maps = [_map(folder / f"{name}.{part}") for part in ("keys", "koff", "vals", "voff")]
        self._keys, self._values = self._maps[0], self._maps[2]
        self._key_at = memoryview(self._maps[1]).cast("I")
        self._value_at = memoryview(self._maps[3]).cast("I")
        if len(self._key_at) != self.count + 1 or len(self._value_at) != self.count + 1 \
                or self._key_at[-1] != len(self._keys) or self._value_at[-1] != len(self._values):
            raise ValueError(f"{folder}: the files of table {name!r} do not match each other")
        self.find = lru_cache(maxsize=_LOOKUPS_KEPT)(self._find)

    def _find(self, key: str) -> bytes | None:
        """The value of `key`, None when it is not in the table."""
        wanted, keys, at = key.encode("utf-8", "surrogatepass"), self._keys, self._key_at
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if keys[at[mid]:at[mid + 1]] < wanted:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.count and keys[at[lo]:at[lo + 1]] == wanted:
            return self._values[self._value_at[lo]:self._value_at[lo + 1]]
        return None

    def __iter__(self) -> Iterator[bytes]:
        """Every key, in order."""
        at = self._key_at
        return (self._keys[at[i]:at[i + 1]] for i in range(self.count))


def _map(path: Path) -> mmap.mmap | bytes:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:  # no values at all: mmap cannot map 0 bytes
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _read_meta(folder: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    if meta.get("byteorder") != sys.byteorder:
        raise ValueError(f"{folder}: written on a {meta.get('byteorder')}-endian machine")
    return meta


def write_table(work: Path, name: str, items: Iterable[tuple[bytes, bytes]]) -> int:
    """Table `name` of `items` (keys unique) into the folder being built; its count."""
    ordered = sorted(items)
    key_at, value_at = [0], [0]
    with open(work / f"{name}.keys", "wb") as keys, open(work / f"{name}.vals", "wb") as values:
        for key, value in ordered:
            keys.write(key)
            values.write(value)
            key_at.append(key_at[-1] + len(key))
            value_at.append(value_at[-1] + len(value))
    (work / f"{name}.koff").write_bytes(memoryview(_u32(key_at)))
    (work / f"{name}.voff").write_bytes(memoryview(_u32(value_at)))
    return len(ordered)


def _u32(values: list[int]) -> array[int]:
    made = array("I", values)
    if made.itemsize != 4:
        raise ValueError("no 4-byte unsigned int on this platform")
    return made


def work_folder(folder: Path) -> Path:
    work = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    work.mkdir(parents=True, exist_ok=True)
    return work


def finish(work: Path, folder: Path, meta: dict[str, Any], stale: str) -> None:
    """Write `index.json` and move the built folder into place; remove the other folders of
    the `stale` glob (built from another version of the data: a process using one keeps its
    mapped files)."""
    (work / INDEX).write_text(json.dumps({**meta, "byteorder": sys.byteorder}))
    try:
        work.rename(folder)
    except OSError:  # another process built it meanwhile
        if not (folder / INDEX).exists():
            raise
    for old in folder.parent.glob(stale):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)


def ensure_built(folder: Path, module: str, *args: str) -> None:
    """`folder` built by `python -m module args...` unless it is whole already: the dict the
    builder reads must not stay in our heap. OSError with the child's last line of error when
    it fails."""
    if (folder / INDEX).exists():
        return
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=_BUILD_TIMEOUT_S)
    if done.returncode != 0:
        raise OSError(done.stderr.strip().splitlines()[-1] if done.stderr.strip()
                      else f"the builder exited {done.returncode}")


def builder_main(module: str, names: tuple[str, ...], build: Callable[..., None],
                 args: list[str]) -> int:
    """A builder child's `main`: `build(*paths)` from `args`; exit 2 and the usage when they are
    not `names`, 1 and the error on one line when the build fails."""
    if len(args) != len(names):
        print(f"usage: python -m {module} {' '.join(names)}", file=sys.stderr)
        return 2
    try:
        build(*(Path(arg) for arg in args))
    except (OSError, ValueError) as err:
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0
