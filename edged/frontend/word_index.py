"""jieba's word table as sorted files mapped from the cache, instead of a 500,000-entry dict.

On its first cut jieba loads its prefix dictionary (498,113 words and word prefixes with their
frequencies) into a Python dict: 0.6 s from its own marshal cache and +62 MB RSS here, in every
process that speaks Mandarin (a Pi: seconds). The same table, sorted by key, is written once
into `<cache>/frontend/jieba-<stamp>/` by a child process (`python -m edged.frontend.word_index`,
using jieba's own reader of its dictionary) and then mapped and searched by bisection: nothing to
load, pages shared between processes, a few microseconds a lookup (a line makes a few hundred).
The cut itself stays jieba's (its DAG, route and HMM code run on this table), so the words are
jieba's: tests check every key's frequency and the cut of the development sets.

Files: `keys.bin` (the keys as UTF-8, in byte order), `offsets.u32` (where each key starts, one
more for the end), `freqs.u32`, `index.json` (count, total, byte order, the dictionary's sha256).
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

_LOGGER = logging.getLogger(__name__)
_INDEX: Final = "index.json"
_LOOKUPS_KEPT: Final = 1 << 16
"""Lookups remembered (a DAG asks for each fragment two or three times)."""
_BUILD_TIMEOUT_S: Final = 600


class WordIndex:
    """The mapped table, with the part of dict's interface jieba's Tokenizer uses (`in`, `[]`,
    `get`) and its `total`. ValueError when the folder's files do not hold together."""

    def __init__(self, folder: Path) -> None:
        meta = json.loads((folder / _INDEX).read_text(encoding="utf-8"))
        if meta.get("byteorder") != sys.byteorder:
            raise ValueError(f"{folder}: written on a {meta.get('byteorder')}-endian machine")
        self.total, self._count = int(meta["total"]), int(meta["count"])
        self._maps = [_map(folder / name) for name in ("keys.bin", "offsets.u32", "freqs.u32")]
        self._keys = self._maps[0]
        self._offsets = memoryview(self._maps[1]).cast("I")
        self._freqs = memoryview(self._maps[2]).cast("I")
        if len(self._offsets) != self._count + 1 or len(self._freqs) != self._count \
                or self._offsets[-1] != len(self._keys):
            raise ValueError(f"{folder}: the index files do not match each other")
        self._lookup = lru_cache(maxsize=_LOOKUPS_KEPT)(self._find)

    def _find(self, word: str) -> int | None:
        key, keys, offsets = word.encode("utf-8"), self._keys, self._offsets
        lo, hi = 0, self._count
        while lo < hi:
            mid = (lo + hi) // 2
            if keys[offsets[mid]:offsets[mid + 1]] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < self._count and keys[offsets[lo]:offsets[lo + 1]] == key:
            return int(self._freqs[lo])
        return None

    def get(self, word: str, default: Any = None) -> Any:
        found = self._lookup(word)
        return default if found is None else found

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._lookup(word) is not None

    def __getitem__(self, word: str) -> int:
        found = self._lookup(word)
        if found is None:
            raise KeyError(word)
        return found

    def __len__(self) -> int:
        return self._count


def _map(path: Path) -> mmap.mmap:
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def jieba_dictionary() -> Path:
    import jieba

    return Path(jieba.__file__).parent / str(jieba.DEFAULT_DICT_NAME)


def index_folder(cache_dir: Path, dictionary: Path) -> Path:
    """Named by the dictionary's size and time (a stat, not a read of its 5 MB at every start):
    another jieba's dictionary gets its own index."""
    st = dictionary.stat()
    stamp = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    return cache_dir / "frontend" / f"jieba-{stamp[:12]}"


def open_index(cache_dir: Path) -> WordIndex | None:
    """The index of jieba's dictionary in `cache_dir`, built first when missing (about 2 s here,
    once); None, with a warning, when it cannot be (jieba then loads its own dict)."""
    try:
        dictionary = jieba_dictionary()
        folder = index_folder(cache_dir, dictionary)
        if not (folder / _INDEX).exists():
            _build_in_child(dictionary, folder)
        return WordIndex(folder)
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as err:
        _LOGGER.warning("Mandarin word index: cannot use one in %s (%s); jieba loads its own "
                        "dictionary (0.6 s, +62 MB)", cache_dir, err)
        return None


def _build_in_child(dictionary: Path, folder: Path) -> None:
    """A child builds it: jieba's dict of the whole table (+60 MB) must not stay in our heap."""
    done = subprocess.run([sys.executable, "-m", "edged.frontend.word_index", str(dictionary),
                           str(folder)], capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
    if done.returncode != 0:
        raise OSError(done.stderr.strip().splitlines()[-1] if done.stderr.strip()
                      else f"the builder exited {done.returncode}")


def build(dictionary: Path, folder: Path) -> None:
    """Write the index of `dictionary` (jieba's format) into `folder`, atomically."""
    import jieba

    with open(dictionary, "rb") as f:
        freq, total = jieba.Tokenizer.gen_pfdict(f)
    items = sorted((word.encode("utf-8"), count) for word, count in freq.items())
    del freq
    work = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    work.mkdir(parents=True, exist_ok=True)
    try:
        offsets, at = [], 0
        with open(work / "keys.bin", "wb") as keys:
            for key, _ in items:
                offsets.append(at)
                keys.write(key)
                at += len(key)
        offsets.append(at)
        (work / "offsets.u32").write_bytes(memoryview(_u32(offsets)))
        (work / "freqs.u32").write_bytes(memoryview(_u32([count for _, count in items])))
        (work / _INDEX).write_text(json.dumps({
            "count": len(items), "total": total, "byteorder": sys.byteorder,
            "dictionary_sha256": hashlib.sha256(dictionary.read_bytes()).hexdigest()}))
        try:
            work.rename(folder)
        except OSError:  # another process built it meanwhile
            if not (folder / _INDEX).exists():
                raise
        for old in folder.parent.glob("jieba-*"):  # another jieba's (a process using one
            if old != folder:                      # keeps its mapped files)
                shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _u32(values: list[int]) -> Any:
    from array import array

    made = array("I", values)
    if made.itemsize != 4:
        raise ValueError("no 4-byte unsigned int on this platform")
    return made


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m edged.frontend.word_index JIEBA_DICT FOLDER", file=sys.stderr)
        return 2
    try:
        build(Path(args[0]), Path(args[1]))
    except (OSError, ValueError) as err:
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
