"""Korean text normalization: numbers in Hangul, native or Sino-Korean as the counter wants.

espeak-ng's `ko` voice reads every digit string as a Sino-Korean number ("3시" -> 삼 시), but
hours and counted things take native numbers: 3시 -> 세 시, 사과 5개 -> 사과 다섯 개, 2명 ->
두 명. Minutes, money, dates and plain numbers stay Sino-Korean (30분 -> 삼십 분, 1500원 ->
천오백 원). "7:30" is read as a time (일곱 시 삼십 분). A phone number (010-1234-5678) is read
digit by digit with 공 for 0, a date (2026-06-05) as 이천이십육년 유월 오일, a range before a
unit with 에서 (3~5도 -> 삼에서 오 도), a minus before a number as 마이너스 (영하 before degrees).
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

NORMALIZER_VERSION: Final = "ko-4"

_SINO_DIGITS: Final = "영일이삼사오육칠팔구"
_SINO_SMALL: Final = ("", "십", "백", "천")
_SINO_LARGE: Final = ("", "만", "억", "조")
_NATIVE_ONES: Final = ("", "한", "두", "세", "네", "다섯", "여섯", "일곱", "여덟", "아홉")
_NATIVE_TENS: Final = ("", "열", "스물", "서른", "마흔", "쉰", "예순", "일흔", "여든", "아흔")
_NATIVE_COUNTERS: Final = ("시간", "시", "개", "명", "살", "번째", "마리", "잔", "권", "병",
                           "사람", "달", "가지")
"""Counters read with native numbers (1-99). Not 번: "2번 출구" (exit 2) is Sino-Korean."""
_COUNTED: Final = re.compile(r"(?<![\d.])(\d{1,2})\s?(" + "|".join(_NATIVE_COUNTERS) + ")(?![월러])")
"""Not 개월 (months, Sino-Korean: 삼 개월) nor 달러 (dollars: 오 달러), which begin like 개, 달."""
_TIME: Final = re.compile(r"(?<![\d:])([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?(?![\d:])")
_TIME_RANGE: Final = re.compile(r"(?<=[시분])\s?[-~～〜]\s?(?=[가-힣]+ 시)")
"""Between two clock times once read (9:00-17:00 -> 아홉 시에서 다섯 시)."""
_PERCENT: Final = re.compile(r"(?<![\d.])((?:" + SIGN + r")?)(\d+(?:\.\d+)?)\s?[%％]")
_NUMBER: Final = re.compile(r"(?<![\d.])((?:" + SIGN + r")?)(\d+)(?:\.(\d+))?(?!\d)")
_BELOW_ZERO: Final = re.compile(SIGN + r"(?=\d+(?:\.\d+)?\s?(?:에서 -?\d+(?:\.\d+)?\s?)?(?:°C|℃|도))")
_DATE: Final = re.compile(r"(?<![\d.\-])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d|[.\-]\d)")
_MONTHS: Final = {6: "유월", 10: "시월"}
"""The months said apart from their number's reading (육월, 십월 are not said)."""
_RANGE: Final = range_pattern(r"°C|℃|도|%|％|시간|시|분|초|일|개월|주|년|살|세|명|개|번|층|원"
                              r"|km|kg|cm|mm|m|g")
_PHONE: Final = re.compile(r"(?<![\d.\-])\d{2,4}-\d{3,4}-\d{4}(?![\d\-])|(?<![\d.])0\d{8,10}(?!\d)")
_PHONE_DIGITS: Final = "공일이삼사오육칠팔구"
_SERVICE: Final = re.compile(r"(?<![\d.\-])\d{3,4}"
                             r"(?=\s?(?:번으로|번에|으로|로|에|번)?\s?(?:신고|전화|연락|문의))")
"""A number called (119에 신고, 1330으로 전화): read digit by digit (일일구), not as an amount
(백십구)."""
_CODE_NAMED: Final = re.compile(r"(비밀번호|비번|인증번호|인증 번호|인증코드|인증 코드|코드|핀 번호|핀번호"
                                r"|계좌번호|계좌 번호|전화번호|PIN)((?:은|는|이|가|를|을|:|：|\s)*)"
                                r"(\d{2,})(?![\d.,:\-]|\s?번)")
"""A code after the word that names it (비밀번호는 1121, 인증번호 611015): digit by digit, as it is
keyed in (일일이일), not as an amount (천백이십일)."""
_CURRENCIES: Final = {"$": "달러", "US$": "미국 달러", "HK$": "홍콩 달러", "¥": "엔", "￥": "엔",
                      "€": "유로", "£": "파운드", "₩": "원"}
_CODE: Final = re.compile(r"(?<![A-Za-z])[A-Z]{1,3}(?=\d)|(?<=\d)[A-Z]{1,2}(?![A-Za-z])")
_LETTERS: Final = dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", [
    "에이", "비", "씨", "디", "이", "에프", "지", "에이치", "아이", "제이", "케이", "엘", "엠",
    "엔", "오", "피", "큐", "알", "에스", "티", "유", "브이", "더블유", "엑스", "와이", "제트"],
    strict=True))
"""The letters of a code written against its digits (4B, KTX102), as Korean names them."""


def sino_number(number: int) -> str:
    """Sino-Korean reading: 1500 -> 천오백, 10000 -> 만, 21 -> 이십일 (1 before a place is dropped);
    from 10^16 on (past 조) digit by digit."""
    if number == 0:
        return "영"
    if number >= 10 ** (4 * len(_SINO_LARGE)):
        return "".join(_SINO_DIGITS[int(d)] for d in str(number))
    words = ""
    group_index = 0
    while number:
        group = number % 10000
        if group:
            part = ""
            for place in range(3, -1, -1):
                digit = group // 10**place % 10
                if digit:
                    part += ("" if digit == 1 and place else _SINO_DIGITS[digit]) + _SINO_SMALL[place]
            if group == 1 and group_index == 1:
                part = ""  # 10000 is 만, not 일만
            words = part + _SINO_LARGE[group_index] + words
        number //= 10000
        group_index += 1
    return words


def native_number(number: int) -> str:
    """Native Korean (1-99) in the form before a counter: 1 -> 한, 20 -> 스무, 21 -> 스물한."""
    if not 0 < number < 100:
        return sino_number(number)
    tens, ones = divmod(number, 10)
    if number == 20:
        return "스무"
    return _NATIVE_TENS[tens] + _NATIVE_ONES[ones]


def normalize_korean(text: str) -> str:
    text = plain_digits(text)
    text = _CODE_NAMED.sub(lambda m: m[1] + m[2] + _phone_digits(m[3]), text)
    text = _SERVICE.sub(lambda m: _phone_digits(m[0]), text)
    text = _PHONE.sub(lambda m: " ".join(_phone_digits(group) for group in m[0].split("-")), text)
    text = _DATE.sub(lambda m: f"{sino_number(int(m[1]))}년 "
                             f"{_MONTHS.get(int(m[2]), sino_number(int(m[2])) + '월')} "
                             f"{sino_number(int(m[3]))}일", text)
    text = _CODE.sub(lambda m: " ".join(_LETTERS[c] for c in m[0]) + " ", text)
    text = read_ranges(text, _RANGE, "에서 ")
    text = _BELOW_ZERO.sub("영하 ", text)
    text = currency_after(text, _CURRENCIES)
    text = FAHRENHEIT.sub(r"화씨 \1도", text)  # 75°F was 칠십오°F: the sign not said
    text = text.replace("°C", "도").replace("℃", "도")
    text = meridiem_first(text, lambda pm, _hour: "오후 " if pm else "오전 ", "시")
    text = _TIME.sub(lambda m: f"{native_number(_hour12(int(m[1])))} 시"
                               + (f" {sino_number(int(m[2]))} 분" if int(m[2]) or m[3] else "")
                               + (f" {sino_number(int(m[3]))} 초" if m[3] and int(m[3]) else ""), text)
    text = _TIME_RANGE.sub("에서 ", text)
    text = _COUNTED.sub(_counted, text)
    text = _PERCENT.sub(lambda m: ("마이너스 " if m[1] else "") + f"{_sino_decimal(m[2])} 퍼센트", text)
    text = _NUMBER.sub(lambda m: ("마이너스 " if m[1] else "")
                       + _sino_decimal(m[2] + (f".{m[3]}" if m[3] else "")), text)
    return wave_ranges(text, "에서 ")


def _phone_digits(digits: str) -> str:
    """Digits as a number called is said: 119 -> 일일구, 010 -> 공일공."""
    return "".join(_PHONE_DIGITS[int(d)] for d in digits)


def _counted(match: re.Match[str]) -> str:
    number, counter = int(match[1]), match[2]
    if counter == "시" and number > 12:  # a 24-hour clock is read Sino-Korean: 15시 십오 시
        return f"{sino_number(number)} {counter}"
    return f"{native_number(number)} {counter}"


def _hour12(hour: int) -> int:
    return hour if 0 < hour <= 12 else (hour - 12 if hour > 12 else 12)


def _sino_decimal(text: str) -> str:
    whole, _, fraction = text.partition(".")
    words = sino_number(int(whole))
    if fraction:
        words += " 점 " + "".join(_SINO_DIGITS[int(d)] for d in fraction)
    return words
