"""Mandarin's word index (edged/frontend/word_index.py): jieba's table mapped from the cache gives
every word and prefix jieba's own frequency, jieba's cut on it is jieba's cut, and the phonemes
made without misaki.zh are misaki's. pypinyin's tables mapped (pinyin_index.py) read every
phrase, character and line as pypinyin's own. Long: needs edged[zh] (jieba, pypinyin, misaki), which
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


def test_the_dictionary_is_jiebas_own_found_without_importing_jieba() -> None:
    """Found before READY, where jieba's import must not be paid (test_startup's rule)."""
    probe = ("import sys; from edged.frontend.word_index import jieba_dictionary; "
             "print(jieba_dictionary()); print('jieba' in sys.modules)")
    found, imported = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                                     text=True, check=True).stdout.split()
    import jieba

    assert Path(found) == Path(jieba.__file__).parent / jieba.DEFAULT_DICT_NAME
    assert Path(found).is_file() and imported == "False"


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
    offsets = folder / "words.koff"
    offsets.write_bytes(offsets.read_bytes()[:-8])
    with caplog.at_level(logging.WARNING):
        assert open_index(tmp_path) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"Mandarin word index: cannot use one in {tmp_path} ({folder}: the files of table 'words' "
        "do not match each other); jieba loads its own dictionary (0.6 s, +62 MB)"]


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


# pypinyin's tables (edged/frontend/pinyin_index.py). Each side runs in a child: pypinyin takes
# its tables when it is first imported, and this process may have imported it already.
_READ_ALL = """
import json, sys
from pathlib import Path
if sys.argv[1] != "-":
    from edged.frontend.pinyin_index import import_mapped
    assert import_mapped(Path(sys.argv[1]))
from edged.frontend.mandarin_phonemes import mandarin_phonemes, warm_up
warm_up(None)
from pypinyin import Style, lazy_pinyin, pinyin
from pypinyin.constants import PHRASES_DICT, PINYIN_DICT
words = sorted(json.loads(sys.stdin.read()))
read = [lazy_pinyin(w, style=Style.TONE3, neutral_tone_with_five=True) for w in words]
chars = [pinyin(chr(c), heteronym=True) for c in sorted(PINYIN_DICT)]
lines = [mandarin_phonemes(line) for line in json.loads(sys.argv[2])]
print(json.dumps({"read": read, "chars": chars, "lines": lines,
                  "sizes": [len(PHRASES_DICT), len(PINYIN_DICT)],
                  "mapped": type(PHRASES_DICT).__name__}))
"""


def _read_all(cache: str, words: list[str]) -> dict[str, Any]:
    import json

    done = subprocess.run([sys.executable, "-c", _READ_ALL, cache, json.dumps(_mandarin_lines())],
                          input=json.dumps(words), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    made: dict[str, Any] = json.loads(done.stdout)
    return made


def test_pypinyin_on_the_mapped_tables_reads_every_phrase_character_and_line_as_its_own(
        tmp_path: Path) -> None:
    import json

    from edged.frontend.pinyin_index import index_folder, open_tables

    phrases, _chars = open_tables(tmp_path)  # built by the child process
    phrase_file = Path(__import__("pypinyin").__file__).parent / "phrases_dict.json"
    listed = list(json.loads(phrase_file.read_text(encoding="utf-8")))
    joined = ["".join(listed[i:i + 5]) for i in range(0, len(listed), 5)]  # mmseg's cut
    words = listed + joined
    own, mapped = _read_all("-", words), _read_all(str(tmp_path), words)
    assert (own["mapped"], mapped["mapped"]) == ("dict", "PhraseTable")
    assert mapped["sizes"] == own["sizes"] and own["sizes"][0] == len(phrases) == len(listed)
    for part in ("read", "chars", "lines"):
        assert mapped[part] == own[part], part
    assert len(own["lines"]) > 40 and (index_folder(tmp_path) / "index.json").exists()


def test_pypinyin_takes_its_own_tables_with_one_warning_when_they_cannot_be_mapped(
        tmp_path: Path) -> None:
    code = ("import logging, sys; from pathlib import Path; logging.basicConfig(); "
            "from edged.frontend.pinyin_index import import_mapped, index_folder, open_tables; "
            "open_tables(Path(sys.argv[1])); "
            "f = index_folder(Path(sys.argv[1])) / 'phrases.koff'; "
            "f.write_bytes(f.read_bytes()[:-4]); "
            "print(import_mapped(Path(sys.argv[1]))); "
            "from pypinyin import lazy_pinyin; from pypinyin.constants import PHRASES_DICT; "
            "print(type(PHRASES_DICT).__name__, lazy_pinyin('银行'))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False", "dict ['yin', 'hang']"]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and "the files of table 'phrases' do not match" in warnings[0]
    assert "pypinyin loads its own (0.2 s, +50 MB)" in warnings[0]


def test_pypinyin_imported_already_is_left_as_it_is(tmp_path: Path) -> None:
    import pypinyin  # noqa: F401

    from edged.frontend.pinyin_index import import_mapped

    assert import_mapped(tmp_path) is False
    assert not (tmp_path / "frontend").exists()
