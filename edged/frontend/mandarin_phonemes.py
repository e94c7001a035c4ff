"""Mandarin for Kokoro-82M: characters -> pinyin with the tones as spoken -> misaki's IPA.

    mandarin_phonemes("你好，请把雨伞带上。") -> "ni↗xau↓, ʨʰiŋ↓ pa↗ y↗sa↓n tai↘ʂaŋ↘."  (roughly)

Kokoro v1.0's Mandarin voices were trained on misaki's legacy G2P (jieba words, pypinyin
tones, its pinyin->IPA table with four tone arrows); this keeps that table and those symbols
and mends what it reads wrong before the voice sees it:
- tones as said, not as written: third-tone sandhi (你好 ni3 hao3 -> ni2 hao3; in a run of
  three, 2 2 3; across short words in a phrase: 很 好 -> hen2 hao3), 一 and 不 (一个 yi2, 一天
  yi4, 不要 bu2; 一 in numbers, dates and ordinals stays yi1);
- polyphones pypinyin reads wrong in a house's sentences (调到 tiao2, 变得 de5, 系好 ji4, ...);
- Latin letters of codes (G102, 4B: frontend/chinese.py reads their digits one by one) as
  their English names, and English words the sentence holds (你的 Amazon 包裹) in English
  phonemes (english_words.py), as a Mandarin speaker says them, instead of being dropped.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Final

from .english_words import english_phonemes
from .letters import LATIN_RUN, LETTERS, is_code
from .mandarin_english import in_mandarin, letter_in_mandarin

_HAN: Final = re.compile(r"[\u4e00-\u9fff]+")
_NUMERALS: Final = frozenset("零一二三四五六七八九十百千万亿两幺")
_WORDS: Final = {
    "变得": ["bian4", "de5"], "记得": ["ji4", "de5"], "觉得": ["jue2", "de5"],
    "显得": ["xian3", "de5"], "系好": ["ji4", "hao3"], "着火": ["zhao2", "huo3"],
    "睡着": ["shui4", "zhao2"], "还款": ["huan2", "kuan3"], "还书": ["huan2", "shu1"],
    "空调": ["kong1", "tiao2"], "调高": ["tiao2", "gao1"], "调低": ["tiao2", "di1"],
    "调到": ["tiao2", "dao4"], "调成": ["tiao2", "cheng2"], "调小": ["tiao2", "xiao3"],
    "调大": ["tiao2", "da4"], "幺": ["yao1"], "长": ["chang2"],
    "长得": ["zhang3", "de5"],
}
"""Words (as jieba cuts them, or their first characters) pypinyin reads wrong here."""
_AFTER: Final = {("调", "到"): "tiao2", ("调", "高"): "tiao2", ("调", "低"): "tiao2",
                 ("调", "成"): "tiao2", ("调", "至"): "tiao2", ("还", "信"): "huan2",
                 ("还", "书"): "huan2", ("还", "钱"): "huan2", ("系", "好"): "ji4",
                 ("系", "上"): "ji4", ("长", "时"): "chang2", ("长", "按"): "chang2",
                 ("长", "椅"): "chang2"}
"""A character read by the one after it, inside a word or across words."""
_BEFORE: Final = {(degree, "长"): "chang2" for degree in "很太较更最多么好挺"}
"""A character read by the one before it: 长 after a word of degree is "long" (很长, 太长,
多长时间), not "grow" (pypinyin's zhang3, as alone: 时间太长, 长按, 长时间 were all zhang3)."""


_PUNCTUATION: Final = str.maketrans({
    "、": ", ", "，": ", ", "。": ". ", "．": ". ", "！": "! ", "：": ": ", "；": "; ", "？": "? ",
    "«": " “", "»": "” ", "《": " “", "》": "” ", "「": " “", "」": "” ", "【": " “", "】": "” ",
    "（": " (", "）": ") "})
"""Full-width punctuation as the voices were trained to read it (misaki's legacy mapping)."""
_TONE_ARROWS: Final = (("˧˩˧", "↓"), ("˧˥", "↗"), ("˥˩", "↘"), ("˥", "→"),
                       ("\u027b\u0329", "ɨ"), ("\u0279\u0329", "ɨ"))
"""misaki's IPA tone letters as the four arrows of Kokoro's vocabulary (longest first), and
its syllabic approximants as ɨ."""
_indexed_cut: Callable[[str], list[str]] | None = None
"""The cut on the mapped word index (word_index.py), once `warm_up(cache_dir)` opened one."""


@cache
def _g2p() -> tuple[Callable[[str], list[str]], Callable[[str], list[str]], Any]:
    # misaki.transcription, not misaki.zh: the table is all we use, and misaki.zh imports cn2an
    # (0.17 s of a start).
    jieba = _import_jieba()
    from misaki.transcription import pinyin_to_ipa
    from pypinyin import Style, lazy_pinyin

    jieba.setLogLevel(logging.WARNING)

    def pinyin(word: str) -> list[str]:
        return list(lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True))

    return jieba.lcut, pinyin, pinyin_to_ipa


def _import_jieba() -> Any:
    """jieba, without the deprecated pkg_resources that its _compat imports (0.12 s of a start)
    only to open jieba's own files: when that import fails it opens them by path."""
    blocked = "pkg_resources" not in sys.modules
    if blocked:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # import -> ImportError
    try:
        import jieba
    finally:
        if blocked:
            del sys.modules["pkg_resources"]
    return jieba


def warm_up(cache_dir: Path | None = None) -> None:
    """Import the Mandarin stack now (ImportError when edged[zh] is missing); with `cache_dir`,
    jieba's and pypinyin's tables mapped from there (word_index.py, pinyin_index.py: no 0.8 s,
    110 MB of dicts)."""
    global _indexed_cut
    if cache_dir is not None:
        from .pinyin_index import import_mapped

        import_mapped(cache_dir)  # before misaki or anyone imports pypinyin whole
    _g2p()
    if cache_dir is not None and _indexed_cut is None:
        from .word_index import open_index

        index = open_index(cache_dir)
        if index is not None:
            tokenizer = _import_jieba().Tokenizer()
            tokenizer.FREQ, tokenizer.total, tokenizer.initialized = index, index.total, True
            _indexed_cut = tokenizer.lcut


def syllable_ipa(syllable: str) -> str:
    """A pinyin syllable with its tone number (hao3) in Kokoro's symbols (ˈxau↓)."""
    _, _, to_ipa = _g2p()
    return "".join(_arrows(phone) for phone in to_ipa(syllable)[0])


def _arrows(phone: str) -> str:
    for letters, arrow in _TONE_ARROWS:
        phone = phone.replace(letters, arrow)
    return phone


def words_pinyin(text: str) -> list[tuple[str, list[str]]]:
    """(word, pinyin with spoken tones) of each word of a run of Han characters."""
    cut, pinyin, _ = _g2p()
    words = [w for w in (_indexed_cut or cut)(text) if w]
    out = [(word, ["de5"] if word == "得" else list(_WORDS.get(word) or pinyin(word)))
           for word in words]  # 得 alone is the particle
    _polyphones(out)
    _yi_bu(out)
    _third_tones(out)
    return out


def _polyphones(words: list[tuple[str, list[str]]]) -> None:
    chars = "".join(word for word, _ in words)
    slots = [(w, i) for w, (_, syl) in enumerate(words) for i in range(len(syl))]
    if len(chars) != len(slots):
        return  # a word pypinyin read with a different syllable count: leave it
    for k, (w, i) in enumerate(slots):
        fixed = (_AFTER.get((chars[k], chars[k + 1] if k + 1 < len(chars) else ""))
                 or _BEFORE.get((chars[k - 1] if k else "", chars[k])))
        if fixed:
            words[w][1][i] = fixed


def _yi_bu(words: list[tuple[str, list[str]]]) -> None:
    """一 and 不 take tone 2 before a fourth tone, 一 tone 4 before the others; 一 counting or
    naming a number (一二三, 第一, 十一, 一月, 一号) stays tone 1."""
    flat = [(w, i) for w, (_, syl) in enumerate(words) for i in range(len(syl))]
    chars = "".join(word for word, _ in words)
    for k, (w, i) in enumerate(flat):
        char = chars[k] if len(chars) == len(flat) else ""
        if char not in ("一", "不"):
            continue
        nxt = words[flat[k + 1][0]][1][flat[k + 1][1]] if k + 1 < len(flat) else ""
        syl = words[w][1]
        if char == "一" and (_numeric(chars, k) or not nxt):
            syl[i] = "yi1"
        elif nxt[-1:] == "4":
            syl[i] = "yi2" if char == "一" else "bu2"
        elif char == "一" and nxt[-1:] in "123":
            syl[i] = "yi4"
        elif char == "不":
            syl[i] = "bu4"


def _numeric(chars: str, k: int) -> bool:
    before = chars[k - 1] if k else ""
    after = chars[k + 1] if k + 1 < len(chars) else ""
    later = chars[k + 2] if k + 2 < len(chars) else ""
    clock = after == "点" and (before in "午晨夜上晚早" or later in _NUMERALS or later in "钟半整")
    return (before in _NUMERALS or before == "第" or after in _NUMERALS
            or after in "月日号楼层" or clock)


def _third_tones(words: list[tuple[str, list[str]]]) -> None:
    """Third-tone sandhi: inside a word every third tone before another becomes second (all
    but the last of a run), then across two short neighbouring words (<= 4 syllables)."""
    for _, syl in words:
        written = list(syl)
        for i in range(len(syl) - 1):
            if written[i].endswith("3") and written[i + 1].endswith("3"):
                syl[i] = syl[i][:-1] + "2"
    for (_, left), (_, right) in zip(words, words[1:], strict=False):
        if left[-1].endswith("3") and right[0].endswith("3") and len(left) + len(right) <= 4:
            left[-1] = left[-1][:-1] + "2"


def _latin(match: re.Match[str]) -> str:
    """A code's capitals by their names (G, TV, USB), a word as English (iPad, Amazon)."""
    word = match[0]
    if is_code(word):
        return " " + " ".join(letter_in_mandarin(LETTERS[c]) for c in word) + " "
    return " " + in_mandarin(english_phonemes(word)) + " "


def mandarin_phonemes(text: str) -> str:
    """Kokoro phonemes of Mandarin text (numbers already words: frontend/chinese.py)."""
    text = text.translate(_PUNCTUATION).strip()
    out = []
    for chunk in re.split(r"([\u4e00-\u9fff]+)", text):
        if _HAN.fullmatch(chunk):
            out.append(" ".join("".join(syllable_ipa(s) for s in syl)
                                for _, syl in words_pinyin(chunk)))
        else:
            out.append(LATIN_RUN.sub(_latin, chunk))
    return re.sub(r" +", " ", "".join(out)).replace(chr(815), "").strip()
