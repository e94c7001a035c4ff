"""Japanese text normalization before the frontend: what pyopenjtalk would misread.

pyopenjtalk reads numbers with their counters itself (7時30分 -> しちじさんじゅっぷん, 1500円
-> せんごひゃくえん); it does not read clock times, slashed dates, degrees or a bare percent
sign the way an announcement means them: "7:30" -> 7時30分, "2026/12/01" -> 2026年12月1日,
"25°C" -> 25度, "50%" -> 50パーセント; a minus before a number (-3度 -> マイナス3度; it was left
out) or a range before a unit (3-5度 -> 3から5度; the dash was left out: 三五度), and a code
after the word that names it digit by digit (認証コードは611015 was ろくじゅういちまん...).
"""

from __future__ import annotations

import re
from typing import Final

from .signs import (
    FAHRENHEIT,
    SIGN,
    currency_after,
    meridiem_first,
    plain_digits,
    range_pattern,
    read_ranges,
    wave_ranges,
)

NORMALIZER_VERSION: Final = "ja-3"

_TIME: Final = re.compile(r"(?<![\d:])([01]?\d|2[0-4])[:：]([0-5]\d)(?:[:：]([0-5]\d))?(?![\d:])")
_DATE: Final = re.compile(r"(?<!\d)(\d{4})[/-](\d{1,2})[/-](\d{1,2})(?!\d)")
_DEGREES: Final = re.compile(r"(\d)\s?(?:°C|℃|°)")
_PERCENT: Final = re.compile(r"(\d)\s?[%％]")
_RANGE: Final = range_pattern(r"度|°C|℃|°|%|％|パーセント|時間|時|分間|分|秒|日間|日|週間|か月|ヶ月"
                              r"|年間|歳|才|人|個|回|円|キロ|メートル|センチ|ミリ|km|kg|cm|mm|m|g")
_SIGN: Final = re.compile(SIGN + r"(?=\d)")
_CODE_NAMED: Final = re.compile(r"(コード|パスワード|暗証番号|認証番号|PIN)((?:は|が|を|：|:|\s)*)"
                                r"(\d{2,})(?![\d.,:\-])")
"""pyopenjtalk reads the digits after 番号 one by one itself, not after these words."""
_CURRENCIES: Final = {"$": "ドル", "US$": "米ドル", "HK$": "香港ドル", "¥": "円", "￥": "円",
                      "€": "ユーロ", "£": "ポンド", "₩": "ウォン"}


def normalize_japanese(text: str) -> str:
    text = plain_digits(text)
    text = _CODE_NAMED.sub(lambda m: m[1] + m[2] + " ".join(m[3]) + " ", text)  # spaced: one by one
    text = _DATE.sub(lambda m: f"{int(m[1])}年{int(m[2])}月{int(m[3])}日", text)
    text = meridiem_first(text, lambda pm, _hour: "午後" if pm else "午前", "時")
    text = _TIME.sub(lambda m: f"{int(m[1])}時" + (f"{int(m[2])}分" if int(m[2]) or m[3] else "")
                     + (f"{int(m[3])}秒" if m[3] and int(m[3]) else ""), text)
    text = currency_after(text, _CURRENCIES)
    text = FAHRENHEIT.sub(r"華氏\1度", text)  # 75°F was 75度 and the letter F
    text = read_ranges(text, _RANGE, "から")
    text = _SIGN.sub("マイナス", text)
    text = wave_ranges(text, "から")
    text = _DEGREES.sub(r"\1度", text)
    return _PERCENT.sub(r"\1パーセント", text)


def kana_reading(text: str) -> str:
    """Katakana reading of Japanese text (for espeak-ng's ja voice, which cannot read kanji),
    when pyopenjtalk (edged[ja]) is installed; else the text without its kanji."""
    try:
        import pyopenjtalk
    except ImportError:
        return re.sub(r"[\u4e00-\u9fff\u3400-\u4dbf々]", "", text)
    return str(pyopenjtalk.g2p(text, kana=True))
