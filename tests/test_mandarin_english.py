"""English words inside a Mandarin sentence: their consonants rewritten to the symbols Kokoro's
Mandarin voices were trained on (frontend/mandarin_english.py; docs/languages.md, stop 45)."""

from __future__ import annotations

import pytest

from edged.frontend.english_words import english_phonemes
from edged.frontend.letters import LETTERS, has_english_words
from edged.frontend.mandarin_english import in_mandarin, letter_in_mandarin


@pytest.mark.parametrize(("word", "said"), [
    ("iPad", "ˈI pʰˈæt"),       # English p aspirated (the voice's pʰ), d unaspirated (its t)
    ("Google", "kˈukəl"),        # g: the voice's unaspirated k
    ("Watch", "wˈɑꭧʰ"),          # ʧ: pinyin ch
    ("Gmail", "ꭧˈimˈAl"),        # ʤ: pinyin zh
    ("Zoom", "ʦˈum"),            # no z in Mandarin: pinyin z
    ("Teams", "tʰˈimʦ"),
])
def test_consonants_in_the_mandarin_voices_symbols(word: str, said: str) -> None:
    assert in_mandarin(english_phonemes(word)) == said


def test_a_stop_after_s_stays_unaspirated() -> None:
    said = in_mandarin(english_phonemes("Spotify"))
    assert said.startswith("sp") and "pʰ" not in said, said


def test_vowels_and_stress_stay_english() -> None:
    """Mandarin vowels and tones instead made the English pass hear fewer of the words."""
    english = english_phonemes("Netflix")
    said = in_mandarin(english)
    assert [c for c in said if c in "ˈˌæɑɛɪʊəIAOW"] == [c for c in english if c in "ˈˌæɑɛɪʊəIAOW"]
    assert in_mandarin("") == ""


@pytest.mark.parametrize(("text", "english"), [
    ("你的 Amazon 包裹已经到了。", True), ("Uber のドライバー", True), ("明日の meeting", True),
    ("G102次列车", False), ("请到4B房间", False), ("买了 10kg 大米", False),
    ("最低气温3°C", False), ("你好", False), ("USB 接口", False),
])
def test_english_words_told_from_codes_and_units(text: str, english: bool) -> None:
    """Only a sentence holding an English word is said with an English style mixed in."""
    assert has_english_words(text) is english


@pytest.mark.parametrize(("letter", "said"), [
    ("T", "tʰˈi"), ("K", "kʰˈA"), ("P", "pʰˈi"), ("Q", "kʰjˈu"),   # T11 was heard 低幺幺
    ("B", "bˈi"), ("D", "dˈi"), ("G", "ʤˈi"), ("X", "ˈɛks"), ("A", "ˈA"),  # unchanged
])
def test_a_code_letter_with_a_voiceless_stop_starts_aspirated(letter: str, said: str) -> None:
    assert letter_in_mandarin(LETTERS[letter]) == said


@pytest.mark.long  # needs edged[zh] (jieba, pypinyin): make test-long installs it
def test_a_train_code_said_with_an_aspirated_t() -> None:
    from edged.frontend.chinese import normalize_chinese
    from edged.frontend.kokoro_g2p import phonemizer_for

    said = phonemizer_for("zh")(normalize_chinese("T11次列车晚点了。"))
    assert said.startswith("tʰˈi jau→ jau→ "), said
