"""Cutting text into language segments: explicit tags, then the script of each character.

    segment("明天 7:30 开会，meeting in room 4B")
      -> [Segment("zh", "明天 7:30 开会，"), Segment("en", "meeting in room 4B")]

- Tags `<|zh|>`, `<|yue|>`, `<|ja|>` (alias `<|jp|>`), `<|ko|>`, `<|en|>` set the language of
  the text after them, up to the next tag; a request's `language` is a tag before the text.
- A script that only one of our languages writes decides by itself: Hangul is Korean, Kana
  Japanese, Latin (and any other alphabet) the configured English voice. No voice of another
  language can say those letters (Kokoro's Mandarin frontend drops Latin letters).
- Han characters are Japanese when their sentence also has Kana; otherwise the tag's language
  when it is one written in Han (zh, yue, ja); otherwise Cantonese when the sentence has a
  character only written Cantonese uses (嘅, 咗, 唔, ...); otherwise `han` (config
  `languages.han`, default zh).
- Digits, spaces, punctuation and symbols attach to their neighbours: to both when both have
  the same language, to the next one at the start, else to the one before. A unit written
  straight after a number (`10kg`, `25°C`) counts as a symbol, and so do the capitals of a
  code written against its digits (`G102`, `4B`, `CA1831`): "G102次列车" is one Mandarin
  segment, whose voice says the letters (a Mandarin speaker says "G" in Chinese speech).
- A few English words inside a Mandarin sentence (你的 Amazon 包裹, Tesla 已经充满电了) belong
  to that sentence, and so do a few in a Japanese one (Amazon の荷物): its voice says them in
  one breath, as a speaker of it does. An English clause (明天开会，meeting in room 4B) stays
  English.
- Text that is one segment and has no tag comes back exactly as given, so English-only
  requests keep their cache keys.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from .codes import HAN_LANGUAGES, LanguageError, language_code

_TAG: Final = re.compile(r"<\|([^|<>]{0,12})\|>")
_SENTENCE_END: Final = frozenset("。！？!?\n")
_CANTONESE_ONLY: Final = frozenset("嘅咗唔佢冇喺啲嚟咁嘢乜嗰哋咩噉睇攞搵啱嘥冚")
_UNITS: Final = frozenset({"kg", "g", "mg", "km", "m", "cm", "mm", "ml", "mL", "L", "kWh",
                           "kW", "Hz", "MB", "GB", "min", "C", "F"})
"""Unit symbols after a number (C and F only after a degree sign)."""

_NEUTRAL, _LATIN, _HANGUL, _KANA, _HAN = "neutral", "latin", "hangul", "kana", "han"
SAYS_ENGLISH: Final = ("zh", "ja")
"""The languages whose voice says the English words inside their sentences."""


@dataclass(frozen=True)
class Segment:
    """A run of text in one language."""

    language: str
    text: str


def segment(text: str, *, han: str = "zh", language: str | None = None,
            says_english: tuple[str, ...] = SAYS_ENGLISH) -> list[Segment]:
    """`text` as language segments in order; LanguageError for an unknown tag or language.
    `says_english`: the languages whose sentences keep their few English words."""
    spans = _spans(text, language)
    tagged = len(spans) > 1 or spans[0][0] is not None
    runs: list[tuple[str | None, str]] = []
    for explicit, span in spans:
        runs += _span_runs(span, explicit, han, says_english)
    segments = _merge(runs)
    if len(segments) == 1 and not tagged:
        return [Segment(segments[0].language, text)]
    kept = [Segment(s.language, s.text.strip()) for s in segments if _sayable(s.text)]
    if not kept:
        raise LanguageError("nothing to say: the text has only language tags and punctuation")
    return kept


def check_tags(text: str) -> None:
    """LanguageError naming the first unknown `<|xx|>` tag (for checking requests early)."""
    for match in _TAG.finditer(text):
        language_code(match.group(1), f"tag {match.group(0)}")


def _spans(text: str, language: str | None) -> list[tuple[str | None, str]]:
    """(explicit language or None, text) between the tags."""
    current = language_code(language) if language else None
    spans: list[tuple[str | None, str]] = []
    position = 0
    for match in _TAG.finditer(text):
        if match.start() > position:
            spans.append((current, text[position:match.start()]))
        current = language_code(match.group(1), f"tag {match.group(0)}")
        position = match.end()
    if position < len(text) or not spans:
        spans.append((current, text[position:]))
    return spans


def script(char: str, previous: str = _NEUTRAL) -> str:
    """The script class of one character."""
    code = ord(char)
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return _HANGUL
    if (0x3040 <= code <= 0x30FF and code != 0x30FB) or 0x31F0 <= code <= 0x31FF \
            or 0xFF66 <= code <= 0xFF9D:
        return _KANA
    if (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF
            or 0x20000 <= code <= 0x2FFFF or char in "々〇"):
        return _HAN
    if char.isalpha():
        return _LATIN
    if unicodedata.category(char).startswith("M"):
        return previous  # a combining mark belongs to its letter
    return _NEUTRAL


def _classes(text: str) -> list[tuple[str, str]]:
    """Runs of (script class, text), with units after numbers made neutral."""
    runs: list[tuple[str, str]] = []
    previous = _NEUTRAL
    for char in text:
        kind = script(char, previous)
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1] + char)
        else:
            runs.append((kind, char))
        previous = kind
    for i, (kind, chunk) in enumerate(runs):
        before = runs[i - 1][1] if i else ""
        after = runs[i + 1][1] if i + 1 < len(runs) else ""
        if kind == _LATIN and (_is_unit(chunk, before) or _is_code(chunk, before, after)):
            runs[i] = (_NEUTRAL, chunk)
    return runs


def _is_code(letters: str, before: str, after: str) -> bool:
    """1-3 capitals written against digits: G102, 4B, CA1831."""
    return (len(letters) <= 3 and letters.isascii() and letters.isupper()
            and (before[-1:].isdigit() or after[:1].isdigit()))


def _is_unit(letters: str, before: str) -> bool:
    if letters in ("C", "F"):
        return before.endswith("°")
    return letters in _UNITS and before[-1:].isdigit()


def _span_runs(text: str, explicit: str | None, han: str,
               says_english: tuple[str, ...]) -> list[tuple[str | None, str]]:
    """(language or None for neutral, text) for one span between tags."""
    runs = _classes(text)
    languages: list[str | None] = [None] * len(runs)
    block: list[int] = []  # indices of one sentence's Han/Kana runs (and neutrals among them)
    embedded = _embedded_latin(runs)
    for i, (kind, chunk) in enumerate(runs):
        if kind in (_HAN, _KANA) or i in embedded:
            block.append(i)
            continue
        if kind == _LATIN:
            languages[i] = "en"
        elif kind == _HANGUL:
            languages[i] = "ko"
        if kind != _NEUTRAL or _SENTENCE_END & set(chunk):
            _resolve_block(runs, block, languages, explicit, han, says_english)
            block = []
    _resolve_block(runs, block, languages, explicit, han, says_english)
    if all(lang is None for lang in languages):
        return [(explicit or "en", text)]
    return list(zip(languages, (chunk for _kind, chunk in runs), strict=True))


def _resolve_block(runs: list[tuple[str, str]], block: list[int], languages: list[str | None],
                   explicit: str | None, han: str, says_english: tuple[str, ...]) -> None:
    if not block:
        return
    kinds = {runs[i][0] for i in block}
    chars = "".join(runs[i][1] for i in block)
    if _KANA in kinds:
        language = "ja"
    elif explicit in HAN_LANGUAGES:
        language = explicit
    elif _CANTONESE_ONLY & set(chars):
        language = "yue"
    else:
        language = han
    for i in block:
        # English words in a Mandarin or Japanese sentence are said by its voice, in English
        # phonemes with an English style mixed in (synthesis/route.py english_mix; the CJK part
        # of mixed lines: zh 0.133 -> 0.071, ja 0.175-0.234 -> 0.168 on the judge, stop 45). In
        # Japanese, read in katakana by OpenJTalk, they had cost more than they gained.
        languages[i] = language
        if language not in says_english and runs[i][0] == _LATIN:
            languages[i] = "en"
            if i >= 2 and languages[i - 2] == "en" and runs[i - 1][1].isspace():
                languages[i - 1] = "en"  # the space inside "Apple Watch"


def _embedded_latin(runs: list[tuple[str, str]]) -> set[int]:
    """Indices of the runs of short English phrases inside a CJK sentence ("你的 Amazon 包裹",
    "Tesla 已经充满电了"): at most 3 words between Han/Kana, or 1-2 capitalized words at the
    sentence's edge written right against it; only when every English phrase of the sentence
    is such (else the sentence is mixed English and CJK, each said by its own voice)."""
    out: set[int] = set()
    sentence: list[list[int]] = []
    phrase: list[int] = []
    for i, (kind, chunk) in enumerate(runs + [(_NEUTRAL, "\n")]):
        if kind == _LATIN or (phrase and kind == _NEUTRAL and chunk.isspace()):
            phrase.append(i)
            continue
        if phrase:
            while runs[phrase[-1]][0] != _LATIN:
                phrase.pop()
            sentence.append(phrase)
            phrase = []
        if kind == _NEUTRAL and _SENTENCE_END & set(chunk):
            if sentence and all(_embedded(runs, p) for p in sentence):
                out.update(i for p in sentence for i in p)
            sentence = []
    return out


def _embedded(runs: list[tuple[str, str]], phrase: list[int]) -> bool:
    words = [runs[i][1] for i in phrase if runs[i][0] == _LATIN]
    before = _neighbour(runs, range(phrase[0] - 1, -1, -1))
    after = _neighbour(runs, range(phrase[-1] + 1, len(runs)))
    cjk = (_HAN, _KANA)
    if before[0] in cjk and after[0] in cjk:
        return len(words) <= 3
    touching = (before[0] in cjk and before[1] and after[0] is None) or \
               (after[0] in cjk and after[1] and before[0] is None)
    return touching and len(words) <= 2 and all(w != w.lower() for w in words)


def _neighbour(runs: list[tuple[str, str]], indices: range) -> tuple[str | None, bool]:
    """(script of the first non-neutral run in the sentence that way or None, whether only
    spaces lie between)."""
    spaces = True
    for i in indices:
        kind, chunk = runs[i]
        if kind != _NEUTRAL:
            return kind, spaces
        if _SENTENCE_END & set(chunk):
            return None, spaces
        spaces = spaces and chunk.isspace()
    return None, spaces


def _merge(runs: list[tuple[str | None, str]]) -> list[Segment]:
    """Neutral runs attached to their neighbours, then same-language runs joined."""
    filled: list[str] = []
    for i, (language, _chunk) in enumerate(runs):
        if language is None:  # the one before, or at the start the next one
            language = filled[-1] if filled else next(
                (lang for lang, _ in runs[i + 1:] if lang is not None), "en")
        filled.append(language)
    segments: list[Segment] = []
    for language, (_lang, chunk) in zip(filled, runs, strict=True):
        if segments and segments[-1].language == language:
            segments[-1] = Segment(language, segments[-1].text + chunk)
        else:
            segments.append(Segment(language, chunk))
    return segments


def _sayable(text: str) -> bool:
    return any(char.isalnum() for char in text)
