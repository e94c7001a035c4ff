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
from functools import cache
from typing import Any, Final

from .english_words import english_phonemes
from .letters import LETTERS

_HAN: Final = re.compile(r"[\u4e00-\u9fff]+")
_LATIN: Final = re.compile(r"[A-Za-z][A-Za-z'’]*")
_NUMERALS: Final = frozenset("零一二三四五六七八九十百千万亿两幺")
_WORDS: Final = {
    "变得": ["bian4", "de5"], "记得": ["ji4", "de5"], "觉得": ["jue2", "de5"],
    "显得": ["xian3", "de5"], "系好": ["ji4", "hao3"], "着火": ["zhao2", "huo3"],
    "睡着": ["shui4", "zhao2"], "还款": ["huan2", "kuan3"], "还书": ["huan2", "shu1"],
    "空调": ["kong1", "tiao2"], "调高": ["tiao2", "gao1"], "调低": ["tiao2", "di1"],
    "调到": ["tiao2", "dao4"], "调成": ["tiao2", "cheng2"], "调小": ["tiao2", "xiao3"],
    "调大": ["tiao2", "da4"], "幺": ["yao1"],
}
"""Words (as jieba cuts them, or their first characters) pypinyin reads wrong here."""
_AFTER: Final = {("调", "到"): "tiao2", ("调", "高"): "tiao2", ("调", "低"): "tiao2",
                 ("调", "成"): "tiao2", ("调", "至"): "tiao2", ("还", "信"): "huan2",
                 ("还", "书"): "huan2", ("还", "钱"): "huan2", ("系", "好"): "ji4",
                 ("系", "上"): "ji4"}
"""A character read by the one after it, inside a word or across words."""


@cache
def _g2p() -> tuple[Any, Any, Any]:
    import jieba
    from misaki.zh import ZHG2P
    from pypinyin import Style, lazy_pinyin

    jieba.setLogLevel(logging.WARNING)

    def pinyin(word: str) -> list[str]:
        return list(lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True))

    return jieba.lcut, pinyin, ZHG2P


def warm_up() -> None:
    """Import the Mandarin stack now (ImportError when edged[zh] is missing)."""
    _g2p()


def words_pinyin(text: str) -> list[tuple[str, list[str]]]:
    """(word, pinyin with spoken tones) of each word of a run of Han characters."""
    cut, pinyin, _ = _g2p()
    words = [w for w in cut(text) if w]
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
        fixed = _AFTER.get((chars[k], chars[k + 1] if k + 1 < len(chars) else ""))
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
    if word.isupper() and len(word) <= 3:
        return " " + " ".join(LETTERS[c] for c in word) + " "
    return " " + english_phonemes(word) + " "


def mandarin_phonemes(text: str) -> str:
    """Kokoro phonemes of Mandarin text (numbers already words: frontend/chinese.py)."""
    _, _, zhg2p = _g2p()
    text = zhg2p.map_punctuation(text)
    out = []
    for chunk in re.split(r"([\u4e00-\u9fff]+)", text):
        if _HAN.fullmatch(chunk):
            out.append(" ".join("".join(zhg2p.py2ipa(s) for s in syl)
                                for _, syl in words_pinyin(chunk)))
        else:
            out.append(_LATIN.sub(_latin, chunk))
    return re.sub(r" +", " ", "".join(out)).replace(chr(815), "").strip()
