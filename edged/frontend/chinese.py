"""Mandarin and Cantonese text normalization: numbers, times, dates, units and money as the
Chinese characters a reader says, before the phonemizer sees them.

    normalize_chinese("明天 7:30 开会，温度 25°C", "zh") -> "明天 七点三十分 开会，温度 二十五摄氏度"

Integers are read with 万/亿 grouping and 零 for skipped places ("102" -> 一百零二, "10050"
-> 一万零五十); a leading 1 before 十 is dropped only for 10-19 ("15" -> 十五, "115" ->
一百一十五), as both Mandarin and Cantonese read them. Numbers of 5+ digits starting with 0 and
numbers over 12 digits (phone numbers, codes) are read digit by digit. Cantonese gets the
traditional characters its espeak-ng dictionary reads (點, 攝氏, 蚊 is left to the voice: 元).
Checked against cn2an (the reference converter) in tests/test_chinese_normalize.py.
"""

from __future__ import annotations

import re
from typing import Final

from .signs import SIGN, meridiem_first, plain_digits, range_pattern, read_ranges, wave_ranges

NORMALIZER_VERSION: Final = "zh-4"

_DIGITS: Final = "零一二三四五六七八九"
_SMALL: Final = ("", "十", "百", "千")
_LARGE: Final = ("", "万", "亿", "万亿")
_UNITS: Final = {
    "kg": "公斤", "g": "克", "mg": "毫克", "km": "公里", "m": "米", "cm": "厘米", "mm": "毫米",
    "ml": "毫升", "mL": "毫升", "L": "升", "kWh": "千瓦时", "kW": "千瓦", "Hz": "赫兹",
    "MB": "兆字节", "GB": "吉字节", "min": "分钟", "°C": "摄氏度", "°F": "华氏度", "℃": "摄氏度",
    "%": "", "％": "",
}
_CURRENCY: Final = {"¥": "元", "￥": "元", "$": "美元", "€": "欧元", "£": "英镑", "HK$": "港元"}
"""In Cantonese (Hong Kong) a bare $ is the local dollar: 元, not 美元."""
_TRADITIONAL: Final = str.maketrans({"两": "兩", "点": "點", "时": "時", "欧": "歐", "镑": "鎊", "华": "華",
                                     "摄": "攝", "里": "里", "钟": "鐘", "负": "負", "万": "萬",
                                     "亿": "億", "兆": "兆", "赫": "赫", "吉": "吉", "节": "節",
                                     "瓦": "瓦", "毫": "毫", "厘": "厘", "号": "號", "门": "門"})
_NUMBER: Final = r"\d+(?:\.\d+)?"
_TIME: Final = re.compile(r"(?<![\d:])([01]?\d|2[0-3])[:：]([0-5]\d)(?::([0-5]\d))?(?![\d:])")
_TIME_RANGE: Final = re.compile(r"(?<=[点分秒])\s?[-~～〜]\s?(?=[零一二三四五六七八九十两])")
"""Between two clock times once read (9:00-17:00 -> 九点到十七点)."""
_DATE: Final = re.compile(r"(?<!\d)(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})日?(?!\d)")
_MONEY: Final = re.compile(r"(HK\$|[¥￥$€£])\s?(" + _NUMBER + ")")
_MEASURE: Final = re.compile(r"((?:" + SIGN + ")?" + _NUMBER + r")\s?(°C|°F|℃|kWh|kW|kg|mg|km|cm|mm"
                             r"|ml|mL|MB|GB|Hz|min|g|m|L|%|％)(?![A-Za-z])")
_TWO_COUNTED: Final = re.compile(r"(?<![\d.第])2(?=\s?(?:个|個|小时|小時|天|次|人|位|岁|歲|分钟|分鐘|分|秒"
                                  r"|点|點|周|週|星期|件|本|张|張|杯|瓶|只|隻|条|條|辆|輛|台|部|斤|公斤"
                                  r"|公里|米|千|万|萬|亿|億|年(?!级|級)|种|種|块|塊|元|毛|遍|双|雙|份))")
"""2 of a thing is 两 (两个, 两小时, 两千), not 二; a count, not a name: not 第2, 2楼, 2层 (on
floor 2, more often than two floors), 2号, 2月, 2年级."""
_LEFT_DIGITS: Final = re.compile(r"\d+")
_PLAIN: Final = re.compile(r"(?<![\d.])(-?)(\d+)(?:\.(\d+))?(?![\d])")
_CODE: Final = re.compile(r"(?<![A-Za-z\d])([A-Z]{1,3})[-\s]?(\d+)(?![\d.:])|(?<![\d.])(\d+)([A-Z]{1,2})"
                          r"(?![A-Za-z])")
_NUMBER_NAMED: Final = re.compile(r"(拨打|撥打|致电|電話|电话|号码|號碼|热线|熱線|手机|手機|分机|分機"
                                  r"|(?:密|验证|驗證|取件|取货|取貨|提货|提貨|取餐|门禁|門禁|开门|開門"
                                  r"|兑换|兌換|邀请|邀請)[码碼]"
                                  r"|编号|編號|单号|單號|房间|房間|房号|房號"
                                  r"|车次|車次|航班|巴士|公交|路线|路線)"
                                  r"(是|為|为|已经|已經|已|改为|改為|改成|设为|設為|设置为|設置為|：|:|\s)*"
                                  r"(\+?\d{2,}(?:[ -]\d{2,})*)(?![\d.:])")
"""A number after a word that names a phone number or a code (取件码是1011, 密码已经改为1121) is
read digit by digit, not as an amount (一千零一十一)."""
_AIRLINE: Final = re.compile(r"(?<![A-Za-z\d])(\d)([A-Z])(\d{2,4})(?![\d.:A-Za-z])")
"""An airline whose code starts with a digit (3U8811, 9C8888): every digit one by one."""
_PHONE: Final = re.compile(r"(?<![\d.\-+])(?:\+\d{1,3}[ -]?)?(?:\d{3,4}-\d{3,4}-\d{4}|0\d{2,3}-\d{7,8})"
                           r"(?![\d\-])")
"""A phone number in dashed groups (138-1234-5678, 0755-12345678): read digit by digit; its
dashes were read as minus signs (幺三八负一千二百三十四). Two short groups are a range (100-200元)."""
_LONG_DIGITS: Final = re.compile(r"(?<![\d.])\d{7,}(?![\d.]|\s?[元块塊万萬亿億])")
_RANGE: Final = range_pattern(r"°C|°F|℃|度|%|％|kWh|kW|kg|mg|km|cm|mm|ml|mL|MB|GB|Hz|min|g|m|L"
                              r"|分钟|分鐘|小时|小時|秒|天|日|个|個|人|元|块|塊|岁|歲|次|层|層|公里|米|周|週")
_BELOW_ZERO: Final = re.compile(SIGN + "(" + _NUMBER + r")\s?(?=(?:到-?" + _NUMBER + r"\s?)?(?:°C|°F|℃|度))")


def integer_words(number: int) -> str:
    """An integer in Chinese characters (simplified), e.g. 10050 -> 一万零五十."""
    if number < 0:
        return "负" + integer_words(-number)
    if number == 0:
        return "零"
    groups: list[int] = []
    while number:
        groups.append(number % 10000)
        number //= 10000
    words = ""
    need_zero = False
    for index in range(len(groups) - 1, -1, -1):
        group = groups[index]
        if group == 0:
            need_zero = bool(words)
            continue
        if words and (need_zero or group < 1000):
            words += "零"
        words += _group_words(group) + _LARGE[index]
        need_zero = False
    if words.startswith("一十"):
        words = words[1:]  # 10-19 (and 十万...): 十五, not 一十五
    return words


def _group_words(group: int) -> str:
    """0 < group < 10000, with 零 for skipped places inside the group."""
    words = ""
    zero = False
    for place in range(3, -1, -1):
        digit = group // 10**place % 10
        if digit == 0:
            zero = bool(words)
            continue
        if zero:
            words += "零"
            zero = False
        words += _DIGITS[digit] + _SMALL[place]
    return words


def digit_words(digits: str) -> str:
    return "".join(_DIGITS[int(d)] for d in digits if d.isdigit())


def code_digits(digits: str, language: str = "zh") -> str:
    """Digits of a code or phone number one by one; in Mandarin 1 is 幺 (yao1), as said in
    phone, room, bus and train numbers (it cannot be misheard as 七)."""
    words = digit_words(digits)
    return words.replace("一", "幺") if language == "zh" else words


def number_words(text: str) -> str:
    """An integer or decimal as written ("3.5", "-2") in characters."""
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("-").partition(".")
    words = integer_words(int(whole)) + ("点" + digit_words(fraction) if fraction else "")
    return ("负" if negative else "") + words


def normalize_chinese(text: str, language: str = "zh") -> str:
    """Numbers, times, dates, units and money in `text` as words; `language` zh or yue.
    Codes (G102, 4B, CA1831), phone numbers (7+ digits, or after 电话/拨打/房间/航班...) are
    read digit by digit; an hour of 2 is 两点, and 2 of a thing 两 (两个, 两小时); a range
    before a unit is 到 ("3-5度" -> 三到五度), a temperature below zero 零下."""
    text = plain_digits(text)
    text = _DATE.sub(lambda m: f"{digit_words(m[1])}年{integer_words(int(m[2]))}月"
                               f"{integer_words(int(m[3]))}日", text)
    text = _AIRLINE.sub(lambda m: code_digits(m[1], language) + m[2] + code_digits(m[3], language),
                        text)
    text = _CODE.sub(lambda m: (m[1] + code_digits(m[2], language)) if m[1]
                     else code_digits(m[3], language) + m[4], text)
    text = _NUMBER_NAMED.sub(lambda m: m[0][:len(m[0]) - len(m[3])]
                             + _grouped_digits(m[3], language), text)
    text = _PHONE.sub(lambda m: _grouped_digits(m[0], language), text)
    text = _LONG_DIGITS.sub(lambda m: code_digits(m[0], language), text)
    text = read_ranges(text, _RANGE, "到", frozenset("%％"))
    text = _BELOW_ZERO.sub(lambda m: "零下" + m[1], text)
    text = meridiem_first(text, _part_of_day, "点")
    text = _TIME.sub(_time, text)
    text = _TIME_RANGE.sub("到", text)
    text = _MONEY.sub(lambda m: number_words(m[2]) + ("元" if language == "yue" and m[1] == "$"
                                                      else _CURRENCY[m[1]]), text)
    text = _MEASURE.sub(_measure, text)
    text = _TWO_COUNTED.sub("两", text)
    text = _PLAIN.sub(_plain, text)
    text = _LEFT_DIGITS.sub(lambda m: digit_words(m[0]), text)  # ".5", "1.2.3": never dropped
    text = wave_ranges(text, "到")
    return text.translate(_TRADITIONAL) if language == "yue" else text


def _grouped_digits(number: str, language: str) -> str:
    """A phone number's groups digit by digit, a space (a pause) between them; its country code's
    plus left out (+86 is said 八六)."""
    return " ".join(code_digits(group, language) for group in re.split(r"[ -]", number.lstrip("+"))
                    if group)


def _part_of_day(pm: bool, hour: int) -> str:
    """What Mandarin and Cantonese say before a 12-hour time: 7:30 PM is 晚上七点三十分."""
    if pm:
        return "中午" if hour == 12 else "下午" if hour < 6 else "晚上"
    return "凌晨" if hour == 12 or hour < 6 else "上午"


def _time(match: re.Match[str]) -> str:
    hour, minute, second = int(match[1]), int(match[2]), match[3]
    words = ("两" if hour == 2 else integer_words(hour)) + "点"
    if minute:
        words += ("零" if minute < 10 else "") + integer_words(minute) + "分"
    if second and int(second):
        words += integer_words(int(second)) + "秒"
    return words


def _measure(match: re.Match[str]) -> str:
    unit = match[2]
    if unit in ("%", "％"):
        return "百分之" + number_words(match[1])
    return number_words(match[1]) + _UNITS[unit]


def _plain(match: re.Match[str]) -> str:
    sign, whole, fraction = match[1], match[2], match[3]
    if fraction is None and ((len(whole) >= 5 and whole.startswith("0")) or len(whole) > 12):
        return sign + digit_words(whole)  # a phone number or a code, not an amount
    return number_words(f"{sign}{whole}" + (f".{fraction}" if fraction else ""))
