"""The sorted tables mapped from the cache (edged/frontend/mapped_table.py) that Mandarin's word
cut and pinyin read instead of dicts: every key gives its value, no other key gives one, and
files that do not hold together are refused."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from edged.frontend import mapped_table


def _built(folder: Path, rows: dict[bytes, bytes]) -> mapped_table.MappedTable:
    work = mapped_table.work_folder(folder)
    count = mapped_table.write_table(work, "t", rows.items())
    mapped_table.finish(work, folder, {"tables": {"t": count}}, "x-*")
    return mapped_table.MappedTable(folder, "t")


def test_every_key_finds_its_value_and_no_other_key_finds_one(tmp_path: Path) -> None:
    rng = random.Random(7)
    alphabet = "ab中国人民\U00020000é"  # one, two, three and four UTF-8 bytes
    keys = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(3000)}
    rows = {k.encode(): (b"" if i % 5 == 0 else f"v{i}".encode())
            for i, k in enumerate(sorted(keys))}
    table = _built(tmp_path / "x-1", rows)
    assert table.count == len(rows)
    assert all(table.find(k.decode()) == v for k, v in rows.items())
    assert list(table) == sorted(rows)
    others = {k + tail for k in list(keys)[:500] for tail in ("z", "\U00020001")} - keys
    assert others and not any(table.find(k) is not None for k in others | {"", "zzz"})


def test_a_table_of_empty_values_maps(tmp_path: Path) -> None:
    table = _built(tmp_path / "x-1", {b"a": b"", b"b": b""})
    assert table.find("a") == b"" and table.find("c") is None


def test_files_that_do_not_match_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "x-1"
    _built(folder, {b"a": b"1", b"b": b"2"})
    offsets = folder / "t.voff"
    offsets.write_bytes(offsets.read_bytes()[:-4])
    with pytest.raises(ValueError, match="the files of table 't' do not match each other"):
        mapped_table.MappedTable(folder, "t")


def test_a_new_build_removes_the_stale_folders_and_leaves_no_work(tmp_path: Path) -> None:
    stale = tmp_path / "x-old"
    stale.mkdir()
    (stale / "index.json").write_text("{}")
    _built(tmp_path / "x-new", {b"a": b"1"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x-new"]


def test_a_builder_that_fails_says_why(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="usage: python -m edged.frontend.word_index"):
        mapped_table.ensure_built(tmp_path / "x-1", "edged.frontend.word_index")
