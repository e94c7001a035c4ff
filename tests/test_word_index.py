"""Mandarin's word index (edged/frontend/word_index.py): jieba's table mapped from the cache gives
every word and prefix jieba's own frequency, jieba's cut on it is jieba's cut, and the phonemes
made without misaki.zh are misaki's. Long: needs edged[zh] (jieba, pypinyin, misaki), which
`make test-long` installs."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.long
_SETS = Path(__file__).parent / "data" / "intelligibility"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from edged.frontend.word_index import open_index

    made = open_index(tmp_path_factory.mktemp("cache"))  # built by the child process
    assert made is not None
    return made


def _mandarin_lines() -> list[str]:
    rows = [row for name in ("dev_zh.tsv", "heldout_zh.tsv", "dev_mixed.tsv", "heldout_mixed.tsv")
            for row in (_SETS / name).read_text(encoding="utf-8").splitlines()]
    return [row.split("\t")[0] for row in rows if row.strip() and not row.startswith("#")]


def test_every_word_and_prefix_has_jiebas_frequency(index: Any) -> None:
    import jieba

    from edged.frontend.word_index import jieba_dictionary

    with open(jieba_dictionary(), "rb") as f:
        freq, total = jieba.Tokenizer.gen_pfdict(f)
    assert len(index) == len(freq) and index.total == total
    assert all(index[word] == count for word, count in freq.items())
    absent = [word + suffix for word in list(freq)[:2000] for suffix in ("鿕", "zz")]
    assert not any(word in freq or word in index for word in absent)
    assert index.get("鿕鿕", "none") == "none"
    with pytest.raises(KeyError):
        index["鿕鿕"]


def test_jiebas_cut_on_the_index_is_jiebas_cut(index: Any) -> None:
    import jieba

    tokenizer = jieba.Tokenizer()
    tokenizer.FREQ, tokenizer.total, tokenizer.initialized = index, index.total, True
    lines = _mandarin_lines() + ["他说的确实在理", "南京市长江大桥", "结婚的和尚未结婚的"]
    assert len(lines) > 40
    for line in lines:
        assert tokenizer.lcut(line) == jieba.lcut(line), line


def test_the_phonemes_are_misakis_without_misaki_zh() -> None:
    """syllable_ipa and the punctuation map (misaki.zh is no longer imported: cn2an, 0.17 s)
    against misaki's own ZHG2P, on every syllable pypinyin gives the first 30,000 characters."""
    from misaki.zh import ZHG2P
    from pypinyin import Style, lazy_pinyin
    from pypinyin.constants import PINYIN_DICT

    from edged.frontend.mandarin_phonemes import _PUNCTUATION, syllable_ipa

    syllables = {s for code in list(PINYIN_DICT)[:30000]
                 for s in lazy_pinyin(chr(code), style=Style.TONE3, neutral_tone_with_five=True)}
    assert len(syllables) > 1000
    assert [syllable_ipa(s) for s in sorted(syllables)] == [ZHG2P.py2ipa(s)
                                                           for s in sorted(syllables)]
    marks = "开会、请到，三楼。．好！注意：明天；对吗？«书»《书》「话」【通知】（括号）"
    assert marks.translate(_PUNCTUATION).strip() == ZHG2P.map_punctuation(marks)


def test_a_damaged_index_falls_back_to_jiebas_dict_with_one_warning(
        index: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from edged.frontend.word_index import index_folder, jieba_dictionary, open_index

    folder = index_folder(tmp_path, jieba_dictionary())
    assert open_index(tmp_path) is not None
    offsets = folder / "offsets.u32"
    offsets.write_bytes(offsets.read_bytes()[:-8])
    with caplog.at_level(logging.WARNING):
        assert open_index(tmp_path) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"Mandarin word index: cannot use one in {tmp_path} ({folder}: the index files do not "
        "match each other); jieba loads its own dictionary (0.6 s, +62 MB)"]


def test_an_index_of_another_jieba_dictionary_is_removed_when_this_one_is_built(
        tmp_path: Path) -> None:
    from edged.frontend.word_index import open_index

    stale = tmp_path / "frontend" / "jieba-000000000000"
    stale.mkdir(parents=True)
    (stale / "index.json").write_text("{}")
    assert open_index(tmp_path) is not None
    assert [p.name for p in (tmp_path / "frontend").iterdir()] != ["jieba-000000000000"]
    assert not stale.exists()


def test_the_builder_says_how_to_call_it() -> None:
    done = subprocess.run([sys.executable, "-m", "edged.frontend.word_index"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "usage: python -m edged.frontend.word_index JIEBA_DICT FOLDER"
