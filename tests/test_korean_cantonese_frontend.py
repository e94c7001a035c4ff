"""The Korean and Cantonese front ends of the Kokoro voices: pronounced Hangul, Kokoro symbols,
Jyutping to IPA with the tone map, codes and letters. Reviewed against the standard
pronunciation (표준 발음법) and the Jyutping of words.hk / CantoDict."""

from __future__ import annotations

import pytest

from edged.frontend.cantonese_phonemes import TONE_MAPS, cantonese_phonemes, syllable_ipa
from edged.frontend.chinese import normalize_chinese
from edged.frontend.korean import normalize_korean
from edged.frontend.korean_phonemes import korean_phonemes
from edged.frontend.korean_pronounce import pronounce


@pytest.mark.parametrize(("written", "said"), [
    ("현관문이 열렸습니다", "현관무니 열렫씀니다"),      # liaison, tensification, nasalization
    ("축하합니다", "추카함니다"),                      # ㅎ-aspiration
    ("좋아요 좋고 많아 싫네", "조아요 조코 마나 실레"),  # ㅎ deleted, aspirated, linked, ㄹㄹ
    ("읽어 맑고", "일거 말꼬"),                        # double codas
    ("같이 굳이", "가치 구지"),                        # palatalization
    ("심리 국립 신라 설날", "심니 궁닙 실라 설랄"),      # ㄹ after nasals, liquidization
    ("학교에 갈 시간입니다", "학꾜에 갈 시가님니다"),
    ("밥 먹어", "밤 머거"),                            # nasalization across a space
    ("꽃 밖에", "꼳 바께"),                            # no tensification across a space
    ("십이월 이십오 일은", "시비월 이시보 이른"),        # no liaison across a space
    ("희망 회의 시계 켜져", "히망 회이 시게 켜저"),      # the vowels ㅢ, ㅖ, ㅕ after ㅈ
])
def test_korean_is_pronounced_by_the_rules(written: str, said: str) -> None:
    """Korean as said, not as spelled (espeak-ng's ko read 합니다 as hɐpnida)."""
    assert pronounce(written) == said


def test_korean_phonemes_are_kokoro_symbols() -> None:
    """Plain stops voiced inside a word (not at its start: voiced there, the judge heard 부족 as
    무조), ㅅ as ɕ before i, ㄹ as ɾ between vowels and l in a coda, the tone mark after the
    vowel."""
    assert korean_phonemes("학교에 갈 시간입니다.") == "hakkjoe kal ɕiɡanimnida."
    assert korean_phonemes("우리", "→") == "u→ɾi→"
    assert korean_phonemes("물 한 잔", "→") == "mu→l ha→n ʨa→n"


@pytest.mark.parametrize(("text", "expected"), [
    ("4B호로 오세요", "사비 호로 오세요"),
    ("KTX102 열차", "케이 티 엑스 백이 열차"),
    ("기온은 -3°C입니다", "기온은 영하 삼도입니다"),
])
def test_korean_codes_and_temperatures(text: str, expected: str) -> None:
    """Letters of a code are named in Korean (they were dropped); below zero is 영하."""
    assert normalize_korean(text) == expected


@pytest.mark.parametrize(("jyutping", "ipa"), [
    ("hoeng1", "hœ→ŋ"), ("jyut6", "jy↓t"), ("seoi2", "sø↗y"), ("gwong2", "kwɔ↗ŋ"),
    ("sik6", "se↓k"), ("ng5", "ŋ↗"), ("m4", "m↓"), ("deoi3", "tø→y"), ("caa4", "ʦʰa↓"),
])
def test_jyutping_syllables_in_kokoro_symbols(jyutping: str, ipa: str) -> None:
    """Initials, nuclei and codas of Jyutping in IPA; tone 3 shares tone 1's level contour in
    the 'level' map."""
    assert syllable_ipa(jyutping, TONE_MAPS["level"]) == ipa


def test_cantonese_sentence_to_phonemes() -> None:
    """Characters through ToJyutping (喺 hai2, 㩒 gam6, 門 mun4), punctuation kept."""
    assert cantonese_phonemes("有人喺門口㩒門鐘。", "level") == \
        "jɐ↗u jɐ↓n hɐ↗i mu↓n hɐ↗u kɐ↓m mu↓n ʦo→ŋ."


@pytest.mark.parametrize(("text", "language", "expected"), [
    ("G102次列车将于14:05出发", "zh", "G幺零二次列车将于十四点零五分出发"),
    ("请到4B房间", "zh", "请到四B房间"),
    ("请拨打13812345678", "zh", "请拨打幺三八幺二三四五六七八"),
    ("客房服务电话是8008203456。", "zh", "客房服务电话是八零零八二零三四五六。"),
    ("拨打119", "zh", "拨打幺幺九"),
    ("共1500000元", "zh", "共一百五十万元"),
    ("明天下午2:30开会", "zh", "明天下午两点三十分开会"),
    ("今晚最低气温-5°C", "zh", "今晚最低气温零下五摄氏度"),
    ("聽日下晝2:30", "yue", "聽日下晝兩點三十分"),
    ("CA1831航班", "yue", "CA一八三一航班"),
])
def test_chinese_codes_phones_hours_and_frost(text: str, language: str, expected: str) -> None:
    """Codes and phone numbers digit by digit (Mandarin 1 as 幺), 2 o'clock as 两点, below zero
    as 零下 (they were read as amounts: 138亿..., G一百零二; 二点; 负五)."""
    assert normalize_chinese(text, language) == expected
