"""Korean as it is pronounced: written Hangul -> pronounced Hangul, by the standard rules.

    pronounce("현관문이 열렸습니다") -> "현관무니 열렫씀니다"

A Hangul syllable is (onset, vowel, coda) by Unicode arithmetic; the rules of the standard
pronunciation (표준 발음법) are applied at each syllable boundary of a word, and nasalization
also across a space (밥 먹어 -> 밤 머거); an announcement pauses between words, so there is no
liaison across them (linked, 십이월 이십오 일 was heard as 리시보일):
  ㅎ-aspiration (축하 -> 추카, 좋고 -> 조코), ㅎ-deletion (좋아 -> 조아), liaison with the double
  codas split (읽어 -> 일거), palatalization (같이 -> 가치), coda neutralization (꽃 -> 꼳),
  nasalization (합니다 -> 함니다), ㄹ after a nasal or obstruent (심리 -> 심니, 국립 -> 궁닙),
  liquidization (신라 -> 실라), tensification after an obstruent coda (학교 -> 학꾜), and the
  vowels 의 (희망 -> 히망, 회의 -> 회이) and ㅖ (시계 -> 시게).
What needs morphology is left out (ㄴ-insertion in compounds: 솜이불; tensification after
the adnominal -ㄹ: 갈 곳): the pronunciation stays the spelling there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

_BASE: Final = 0xAC00
ONSETS: Final = "ㄱㄲㄴㄷㄸㄹㅁㅂㅃㅅㅆㅇㅈㅉㅊㅋㅌㅍㅎ"
VOWELS: Final = "ㅏㅐㅑㅒㅓㅔㅕㅖㅗㅘㅙㅚㅛㅜㅝㅞㅟㅠㅡㅢㅣ"
CODAS: Final = ("", "ㄱ", "ㄲ", "ㄳ", "ㄴ", "ㄵ", "ㄶ", "ㄷ", "ㄹ", "ㄺ", "ㄻ", "ㄼ", "ㄽ", "ㄾ",
                "ㄿ", "ㅀ", "ㅁ", "ㅂ", "ㅄ", "ㅅ", "ㅆ", "ㅇ", "ㅈ", "ㅊ", "ㅋ", "ㅌ", "ㅍ", "ㅎ")
_NEUTRAL: Final = {"ㄲ": "ㄱ", "ㅋ": "ㄱ", "ㄳ": "ㄱ", "ㄺ": "ㄱ", "ㄵ": "ㄴ", "ㄶ": "ㄴ",
                   "ㅅ": "ㄷ", "ㅆ": "ㄷ", "ㅈ": "ㄷ", "ㅊ": "ㄷ", "ㅌ": "ㄷ", "ㅎ": "ㄷ",
                   "ㄼ": "ㄹ", "ㄽ": "ㄹ", "ㄾ": "ㄹ", "ㅀ": "ㄹ", "ㄻ": "ㅁ", "ㅍ": "ㅂ",
                   "ㅄ": "ㅂ", "ㄿ": "ㅂ"}
"""A coda before a consonant or at a pause keeps one of seven sounds."""
_SPLIT: Final = {"ㄳ": ("ㄱ", "ㅆ"), "ㄵ": ("ㄴ", "ㅈ"), "ㄺ": ("ㄹ", "ㄱ"), "ㄻ": ("ㄹ", "ㅁ"),
                 "ㄼ": ("ㄹ", "ㅂ"), "ㄽ": ("ㄹ", "ㅆ"), "ㄾ": ("ㄹ", "ㅌ"), "ㄿ": ("ㄹ", "ㅍ"),
                 "ㅄ": ("ㅂ", "ㅆ")}
"""A double coda before a vowel: the first stays, the second is the next onset."""
_ASPIRATE: Final = {"ㄱ": "ㅋ", "ㄷ": "ㅌ", "ㅂ": "ㅍ", "ㅈ": "ㅊ"}
_TENSE: Final = {"ㄱ": "ㄲ", "ㄷ": "ㄸ", "ㅂ": "ㅃ", "ㅅ": "ㅆ", "ㅈ": "ㅉ"}
_NASAL: Final = {"ㄱ": "ㅇ", "ㄷ": "ㄴ", "ㅂ": "ㅁ"}
_H_CODAS: Final = {"ㅎ": "", "ㄶ": "ㄴ", "ㅀ": "ㄹ"}


@dataclass
class Syllable:
    onset: str
    vowel: str
    coda: str


def decompose(char: str) -> Syllable | None:
    index = ord(char) - _BASE
    if not 0 <= index < 11172:
        return None
    return Syllable(ONSETS[index // 588], VOWELS[index % 588 // 28], CODAS[index % 28])


def compose(s: Syllable) -> str:
    coda = s.coda if s.coda in CODAS else _NEUTRAL.get(s.coda, "")
    return chr(_BASE + ONSETS.index(s.onset) * 588 + VOWELS.index(s.vowel) * 28
               + CODAS.index(coda))


def pronounce(text: str) -> str:
    """Pronounced Hangul of `text`; what is not Hangul passes through unchanged."""
    out: list[str | Syllable] = [decompose(c) or c for c in text]
    _vowels(out)
    for i, item in enumerate(out):
        if not isinstance(item, Syllable):
            continue
        nxt, spaced = _next_syllable(out, i)
        _boundary(item, nxt, spaced)
    return "".join(compose(x) if isinstance(x, Syllable) else x for x in out)


def _next_syllable(items: list[str | Syllable], i: int) -> tuple[Syllable | None, bool]:
    """The syllable after items[i] within the phrase (across spaces, not punctuation)."""
    spaced = False
    for item in items[i + 1:]:
        if isinstance(item, Syllable):
            return item, spaced
        if item != " ":
            return None, spaced
        spaced = True
    return None, spaced


def _vowels(items: list[str | Syllable]) -> None:
    for i, s in enumerate(items):
        if not isinstance(s, Syllable):
            continue
        first = i == 0 or not isinstance(items[i - 1], Syllable)
        if s.vowel == "ㅢ":
            if s.onset != "ㅇ":
                s.vowel = "ㅣ"      # 희망 -> 히망
            elif not first:
                s.vowel = "ㅣ"      # 회의 -> 회이 (the particle 의, said 에, needs morphology)
        elif s.vowel == "ㅖ" and s.onset not in "ㅇㄹ":
            s.vowel = "ㅔ"          # 시계 -> 시게
        elif s.vowel in "ㅕㅑㅛㅠ" and s.onset in "ㅈㅉㅊ":
            s.vowel = "ㅓㅏㅗㅜ"["ㅕㅑㅛㅠ".index(s.vowel)]  # 켜져 -> 켜저


def _boundary(s: Syllable, n: Syllable | None, spaced: bool) -> None:
    """Apply the rules between the coda of `s` and the onset of `n` (None: a pause)."""
    if n is None:
        s.coda = _NEUTRAL.get(s.coda, s.coda)
        return
    if s.coda in _H_CODAS:
        _h_coda(s, n)
        if n.onset != "ㅇ" or not s.coda:
            s.coda = _NEUTRAL.get(s.coda, s.coda)
            _consonants(s, n, spaced)
            return
    if n.onset == "ㅇ" and s.coda not in ("", "ㅇ"):
        if spaced:  # an announcement pauses between words: no liaison across them (linked,
            s.coda = _NEUTRAL.get(s.coda, s.coda)  # 십이월 이십오 일 was heard 리시보일)
        else:
            _liaison(s, n)
        return
    if n.onset == "ㅎ" and (s.coda in _ASPIRATE or _NEUTRAL.get(s.coda) in _ASPIRATE):
        coda = s.coda if s.coda in _ASPIRATE else _NEUTRAL[s.coda]
        s.coda = _SPLIT[s.coda][0] if s.coda in ("ㄺ", "ㄼ", "ㄵ") else ""
        n.onset = "ㅊ" if coda == "ㄷ" and n.vowel == "ㅣ" else _ASPIRATE[coda]  # 축하 -> 추카
        return
    if s.coda == "ㄺ" and n.onset == "ㄱ" and not spaced:
        s.coda, n.onset = "ㄹ", "ㄲ"  # 맑고 -> 말꼬
    s.coda = _NEUTRAL.get(s.coda, s.coda)
    _consonants(s, n, spaced)


def _h_coda(s: Syllable, n: Syllable) -> None:
    rest = _H_CODAS[s.coda]
    if n.onset in _ASPIRATE:
        n.onset = _ASPIRATE[n.onset]   # 좋고 -> 조코, 많다 -> 만타
        s.coda = rest
    elif n.onset == "ㅅ":
        n.onset = "ㅆ"                 # 좋습니다 -> 조씀니다
        s.coda = rest
    elif n.onset == "ㄴ":
        s.coda = rest or "ㄴ"          # 놓는 -> 논는, 않네 -> 안네
    elif n.onset == "ㅇ":
        s.coda = rest                  # 좋아 -> 조아, 많아 -> 만아 (linked next)


def _liaison(s: Syllable, n: Syllable) -> None:
    """A coda before a vowel becomes its onset."""
    if s.coda in _SPLIT:
        s.coda, n.onset = _SPLIT[s.coda]
    else:
        s.coda, n.onset = "", s.coda
    if n.vowel == "ㅣ" and n.onset in ("ㄷ", "ㅌ"):
        n.onset = "ㅈ" if n.onset == "ㄷ" else "ㅊ"  # 굳이 -> 구지, 같이 -> 가치


def _consonants(s: Syllable, n: Syllable, spaced: bool) -> None:
    """Neutral coda + consonant onset: ㄹ rules, nasalization, tensification (across a space
    only nasalization: 밥 먹어 -> 밤 머거)."""
    if spaced:
        if n.onset in ("ㄴ", "ㅁ") and s.coda in _NASAL:
            s.coda = _NASAL[s.coda]
        return
    if n.onset == "ㄹ":
        if s.coda == "ㄴ":
            s.coda = "ㄹ"              # 신라 -> 실라
        elif s.coda in ("ㅁ", "ㅇ"):
            n.onset = "ㄴ"             # 심리 -> 심니
        elif s.coda in _NASAL:
            n.onset = "ㄴ"             # 국립 -> 궁닙 (nasalized below)
    elif n.onset == "ㄴ" and s.coda == "ㄹ":
        n.onset = "ㄹ"                 # 설날 -> 설랄
    if n.onset in ("ㄴ", "ㅁ") and s.coda in _NASAL:
        s.coda = _NASAL[s.coda]        # 합니다 -> 함니다
    elif s.coda in _NASAL and n.onset in _TENSE:
        n.onset = _TENSE[n.onset]      # 학교 -> 학꾜
