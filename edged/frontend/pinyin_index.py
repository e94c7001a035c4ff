"""pypinyin's phrase and character tables mapped from the cache (mapped_table.py), not loaded.

At its import pypinyin reads its 47,111 phrases and 41,923 characters from JSON into dicts,
copies both, and trains a set of every phrase's prefixes for its word cut: 0.2 s and about
+50 MB RSS in every process that speaks Mandarin. The same tables are written once into
`<cache>/frontend/pypinyin-<stamp>/` by a child (`python -m edged.frontend.pinyin_index`) and
handed to pypinyin before it is imported (`import_mapped`): its modules `pypinyin.phrases_dict`
and `pypinyin.pinyin_dict` are ours, holding the mapped tables, and its prefix set is the phrase
table's keys. pypinyin's own code runs on them, so the readings are pypinyin's (a test reads
every phrase and character both ways).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from . import mapped_table

_LOGGER = logging.getLogger(__name__)
_FORMAT: Final = "1"
_PHRASE: Final = b"="
"""A phrase's value starts with this; a key that is only a prefix of phrases has none."""


class PhraseTable:
    """`pypinyin.phrases_dict.phrases_dict` as pypinyin uses it: `in`, `[]` (a new list of each
    character's readings), `copy()` (itself: it cannot change), and `keys()`, which is empty:
    its one caller trains mmseg's prefix set, which `import_mapped` points at `prefixes`."""

    def __init__(self, folder: Path) -> None:
        self._table = mapped_table.MappedTable(folder, "phrases")
        self._count = int(self._table.meta["phrases"])
        self.prefixes = _Keys(self._table)

    def __contains__(self, phrase: object) -> bool:
        found = isinstance(phrase, str) and self._table.find(phrase)
        return bool(found) and found.startswith(_PHRASE)  # type: ignore[union-attr]

    def __getitem__(self, phrase: str) -> list[list[str]]:
        found = self._table.find(phrase)
        if not found or not found.startswith(_PHRASE):
            raise KeyError(phrase)
        return [readings.split(",") for readings in bytes(found[1:]).decode().split(" ")]

    def __len__(self) -> int:
        return self._count

    def keys(self) -> tuple[str, ...]:
        return ()

    def copy(self) -> PhraseTable:
        return self


class _Keys:
    """Every phrase and every prefix of one: mmseg's PrefixSet, mapped."""

    def __init__(self, table: mapped_table.MappedTable) -> None:
        self._table = table

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._table.find(key) is not None


class CharTable:
    """`pypinyin.pinyin_dict.pinyin_dict` (code point -> "reading,reading") as pypinyin uses
    it: `in`, `[]`, `get`, iteration, `copy()` (itself)."""

    def __init__(self, folder: Path) -> None:
        self._table = mapped_table.MappedTable(folder, "chars")

    def get(self, code: int, default: Any = None) -> Any:
        found = self._table.find(str(code)) if isinstance(code, int) else None
        return default if found is None else bytes(found).decode()

    def __contains__(self, code: object) -> bool:
        return isinstance(code, int) and self._table.find(str(code)) is not None

    def __getitem__(self, code: int) -> str:
        found = self.get(code)
        if found is None:
            raise KeyError(code)
        return str(found)

    def __iter__(self) -> Iterator[int]:
        return (int(key) for key in self._table)

    def __len__(self) -> int:
        return self._table.count

    def copy(self) -> CharTable:
        return self


def index_folder(cache_dir: Path) -> Path:
    """Named by pypinyin's data files' sizes and times: another pypinyin gets its own tables."""
    spec = importlib.util.find_spec("pypinyin")  # finds it without importing it
    if spec is None or spec.origin is None:
        raise OSError("pypinyin is not installed")
    package = Path(spec.origin).parent
    stats = [(package / name).stat() for name in ("phrases_dict.json", "pinyin_dict.json")]
    seen = ":".join(f"{st.st_size}:{st.st_mtime_ns}" for st in stats)
    stamp = hashlib.sha256(f"{_FORMAT}:{package}:{seen}".encode()).hexdigest()
    return cache_dir / "frontend" / f"pypinyin-{stamp[:12]}"


def built_folder(cache_dir: Path) -> Path:
    """The tables' folder in `cache_dir`, built first when missing (about 1 s here, once);
    mapped_table.BUILD_ERRORS when it cannot be."""
    folder = index_folder(cache_dir)
    mapped_table.ensure_built(folder, __name__, str(folder))
    return folder


def open_tables(cache_dir: Path) -> tuple[PhraseTable, CharTable]:
    """The mapped tables in `cache_dir` (built_folder); mapped_table.BUILD_ERRORS."""
    folder = built_folder(cache_dir)
    return PhraseTable(folder), CharTable(folder)


def import_mapped(cache_dir: Path) -> bool:
    """Import pypinyin on the mapped tables of `cache_dir`. False, with pypinyin as it comes,
    when it was imported already, or (with a warning) when the tables cannot be made or
    pypinyin is not laid out as this expects."""
    if "pypinyin" in sys.modules:
        return False
    try:
        phrases, chars = open_tables(cache_dir)
    except mapped_table.BUILD_ERRORS as err:
        _LOGGER.warning("pypinyin's tables: cannot map them from %s (%s); pypinyin loads its "
                        "own (0.2 s, +50 MB)", cache_dir, err)
        return False
    for name, table in (("phrases_dict", phrases), ("pinyin_dict", chars)):
        module = types.ModuleType(f"pypinyin.{name}")
        setattr(module, name, table)
        sys.modules[module.__name__] = module
    try:
        from pypinyin.seg import mmseg

        if mmseg.seg._prefix_set is not mmseg.p_set:
            raise AttributeError("mmseg's cut has a prefix set of its own")
        prefix_set: Any = mmseg.p_set  # its set is only asked `in`
        prefix_set._set = phrases.prefixes
    except (ImportError, AttributeError) as err:
        for name in [name for name in sys.modules if name.split(".")[0] == "pypinyin"]:
            del sys.modules[name]  # imported again, whole, by whoever needs it
        _LOGGER.warning("pypinyin's tables: this pypinyin cannot use mapped ones (%s); it loads "
                        "its own (0.2 s, +50 MB)", err)
        return False
    return True


def build(folder: Path) -> None:
    """Write pypinyin's phrase and character tables into `folder`, atomically."""
    from pypinyin.constants import PHRASES_DICT, PINYIN_DICT

    rows: dict[bytes, bytes] = {}
    for phrase, readings in PHRASES_DICT.items():
        for end in range(1, len(phrase)):
            rows.setdefault(phrase[:end].encode("utf-8", "surrogatepass"), b"")
        rows[phrase.encode("utf-8", "surrogatepass")] = _PHRASE + _encoded(phrase, readings)
    work = mapped_table.work_folder(folder)
    try:
        counts = {"phrases": mapped_table.write_table(work, "phrases", rows.items()),
                  "chars": mapped_table.write_table(
                      work, "chars", ((str(code).encode(), str(value).encode())
                                      for code, value in PINYIN_DICT.items()))}
        mapped_table.finish(work, folder, {"tables": counts, "phrases": len(PHRASES_DICT)},
                            "pypinyin-*")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _encoded(phrase: str, readings: list[list[str]]) -> bytes:
    if not readings or any(not one or any(not r or " " in r or "," in r for r in one)
                           for one in readings):
        raise ValueError(f"pypinyin's phrase {phrase!r}: readings {readings!r} cannot be written")
    return " ".join(",".join(one) for one in readings).encode()


def main(argv: list[str] | None = None) -> int:
    return mapped_table.builder_main("edged.frontend.pinyin_index",
                                     ("FOLDER",), build,
                                     sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
