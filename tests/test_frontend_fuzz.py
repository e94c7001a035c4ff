"""Every Kokoro language's front end (normalizer, then phonemizer) reads any text without an
exception, and says any number as written: the Japanese one raised an AssertionError for every
digit OpenJTalk reads on its own (0度, 305号室, 03-1234-5678: the whole announcement failed) and
a KeyError for a small kana after a long mark (ーょ), the Korean one an IndexError past 10^16.
Long: needs edged[ja,zh,ko,yue,en] (make test-long installs them); no model is loaded."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edged.frontend.kokoro_g2p import phonemizer_for
from edged.frontend.normalizers import normalizer_for
from edged.voice.kokoro.voice import _SENTENCE

pytestmark = pytest.mark.long

_WORDS = {
    "ja": ["気温は", "です。", "時", "分", "号室", "円", "、", "に電話", "度", "体温は"],
    "zh": ["气温", "度。", "点", "分", "号房间", "元", "，", "电话", "次列车", "体温"],
    "ko": ["기온은 ", "도입니다.", "시 ", "분", "호실", "원", ", ", "번으로 전화", "개"],
    "yue": ["氣溫", "度。", "點", "分", "號房", "蚊", "，", "電話", "號巴士"],
    "en": ["It is ", " degrees.", " o'clock", " minutes", " room ", " dollars", ", ", "call "],
}
_NUMBERS = ["0", "00", "007", "03-1234-5678", "-3", "−3", "－3", "3-5", "3~5", "3〜5", "0.5",
            "38.5", "10.05", "1,000", "1.2.3", "12:00", "0:30", "24:00", "2026-12-05",
            "2026/12/05", "12/5", "5%", "-5%", "3.", ".5", "99999999999999999999", "A1",
            "4B", "G102", "No.5", "+81", "١٢", "３", "Ⅳ", "①", "3°", "-0", "--3", "3--5", "3 -5"]
_SCRIPT = {
    "ja": "気温はです時分号室円電話度体温あいうえおカタカナ漢字ー・「」『』（）！？。ゃっゎゐゑヴヵヶ々〆〇",
    "zh": "气温度点分号房间元电话次列车你好我们的了吗呢啊〇零一二三，。！？、“”（）《》",
    "ko": "기온은도입니다시분호실원번으로전화개가나다ㄱㄴㄷㅏㅑ한국어 ,.?!",
    "yue": "氣溫度點分號房蚊電話巴士嘅咗喺佢哋冇唔係，。！？",
    "en": "abcdefghijklmnopqrstuvwxyz ABC.,!?'-",
}
_ANY = ("0123456789-−~〜%°C.:/ ,+#@&*()[]{}<>=_|\\^$€£¥😀👍🏽\u200b\u200d\u0301\u202e\t\nÅéñßØ"
        "\uff10\u0661ⅫⅣ①½³\ufeff\U0001F1EFÿ")
_PHONEMIZERS: dict[str, object] = {}


def _say(language: str, text: str) -> list[str]:
    """The phoneme strings of `text`'s sentences, as the Kokoro voice makes them."""
    if language not in _PHONEMIZERS:
        _PHONEMIZERS[language] = phonemizer_for(language)
    phonemize = _PHONEMIZERS[language]
    normalize, _ = normalizer_for(language)
    return [phonemize(s) for s in _SENTENCE.findall(normalize(text))  # type: ignore[operator]
            if any(c.isalnum() for c in s)]


@pytest.mark.parametrize("language", sorted(_WORDS))
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_number_between_words_is_said(language: str, data: st.DataObject) -> None:
    words = st.sampled_from(_WORDS[language])
    parts = data.draw(st.lists(st.one_of(words, st.sampled_from(_NUMBERS)), min_size=1, max_size=6))
    text = "".join(parts)
    said = _say(language, text)
    assert all(isinstance(s, str) for s in said)
    # English's normalizer (unchanged: its phrase cache) reads ASCII digits; the others fold
    # every script's decimal digits to them first
    if any(c.isascii() and c.isdigit() or language != "en" and c.isdecimal() for c in text):
        assert "".join(said).strip(), f"{text!r} said nothing"


@pytest.mark.parametrize("language", sorted(_WORDS))
@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_text_is_read(language: str, data: st.DataObject) -> None:
    text = data.draw(st.text(st.sampled_from(_SCRIPT[language] + _ANY), max_size=40))
    assert all(isinstance(s, str) for s in _say(language, text))


@pytest.mark.parametrize(("text", "phonemes"), [
    ("コーヒーょ", ["koːçiː"]),                                   # KeyError: 'ー'
    ("気温は0度です。", ["kʲioɴ βa ʣeɾo do desɨ."]),
    ("305号室", ["saɴ maɾɯ ɡo ɡoːɕiʦɨ"]),
    ("03-1234-5678に電話", ["ʣeɾo saɴ iʨi ɲiː saɴ joɴ ɡoː ɾokɯ nana haʨi ɲi deɴβa"]),
    ("0時30分です。", ["ʣeɾo ʥi saɲʥɨʔpɯɴ desɨ."]),
    # A decimal point ended the sentence: 38 and 5度, the point (てん) never said
    ("体温は38.5度です。", ["taioɴ βa saɲʥɨːhaʔteɴ ɡo do desɨ."]),
    ("気温は-3度です。", ["kʲioɴ βa mainasɨ saɴ do desɨ."]),     # the minus was left out
])
def test_japanese_digits_openjtalk_reads_alone(text: str, phonemes: list[str]) -> None:
    assert _say("ja", text) == phonemes
