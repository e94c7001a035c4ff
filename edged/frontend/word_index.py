"""jieba's word table as sorted files mapped from the cache, instead of a 500,000-entry dict.

On its first cut jieba loads its prefix dictionary (498,113 words and word prefixes with their
frequencies) into a Python dict: 0.6 s from its own marshal cache and +62 MB RSS here, in every
process that speaks Mandarin (a Pi: seconds). The same table, sorted by key, is written once
into `<cache>/frontend/jieba-<stamp>/` by a child process (`python -m edged.frontend.word_index`,
using jieba's own reader of its dictionary) and then mapped and searched by bisection: nothing to
load, pages shared between processes, a few microseconds a lookup (a line makes a few hundred).
The cut itself stays jieba's (its DAG, route and HMM code run on this table), so the words are
jieba's: tests check every key's frequency and the cut of the development sets.

The table is a `mapped_table.MappedTable` ("words": each word or prefix -> its frequency).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import shutil
import sys
from pathlib import Path
from typing import Any, Final

from . import mapped_table

_LOGGER = logging.getLogger(__name__)
_FORMAT: Final = "2"
"""Part of the folder's name: an index written in an older layout is built again."""


class WordIndex:
    """The mapped table, with the part of dict's interface jieba's Tokenizer uses (`in`, `[]`,
    `get`) and its `total`. ValueError when the folder's files do not hold together."""

    def __init__(self, folder: Path) -> None:
        self._table = mapped_table.MappedTable(folder, "words")
        self.total = int(self._table.meta["total"])

    def _count(self, word: str) -> int | None:
        found = self._table.find(word)
        return None if found is None else int(found)

    def get(self, word: str, default: Any = None) -> Any:
        found = self._count(word)
        return default if found is None else found

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._table.find(word) is not None

    def __getitem__(self, word: str) -> int:
        found = self._count(word)
        if found is None:
            raise KeyError(word)
        return found

    def __len__(self) -> int:
        return self._table.count


def jieba_dictionary() -> Path:
    """jieba's own dictionary (its DEFAULT_DICT_NAME), found without importing jieba: a start
    prepares the index before READY and must not pay jieba's import there (test_startup)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise OSError("jieba is not installed")
    return Path(spec.origin).parent / "dict.txt"


def index_folder(cache_dir: Path, dictionary: Path) -> Path:
    """Named by the dictionary's size and time (a stat, not a read of its 5 MB at every start):
    another jieba's dictionary gets its own index."""
    st = dictionary.stat()
    stamp = hashlib.sha256(f"{_FORMAT}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    return cache_dir / "frontend" / f"jieba-{stamp[:12]}"


def open_index(cache_dir: Path) -> WordIndex | None:
    """The index of jieba's dictionary in `cache_dir`, built first when missing (about 2 s here,
    once); None, with a warning, when it cannot be (jieba then loads its own dict)."""
    try:
        dictionary = jieba_dictionary()
        folder = index_folder(cache_dir, dictionary)
        mapped_table.ensure_built(folder, __name__, str(dictionary), str(folder))
        return WordIndex(folder)
    except mapped_table.BUILD_ERRORS as err:
        _LOGGER.warning("Mandarin word index: cannot use one in %s (%s); jieba loads its own "
                        "dictionary (0.6 s, +62 MB)", cache_dir, err)
        return None


def build(dictionary: Path, folder: Path) -> None:
    """Write the index of `dictionary` (jieba's format) into `folder`, atomically."""
    import jieba

    with open(dictionary, "rb") as f:
        freq, total = jieba.Tokenizer.gen_pfdict(f)
    items = [(word.encode("utf-8"), str(count).encode()) for word, count in freq.items()]
    del freq
    work = mapped_table.work_folder(folder)
    try:
        count = mapped_table.write_table(work, "words", items)
        sha256 = hashlib.sha256(dictionary.read_bytes()).hexdigest()
        mapped_table.finish(work, folder, {"tables": {"words": count}, "total": total,
                                           "dictionary_sha256": sha256}, "jieba-*")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    return mapped_table.builder_main("edged.frontend.word_index",
                                     ("JIEBA_DICT", "FOLDER"), build,
                                     sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
