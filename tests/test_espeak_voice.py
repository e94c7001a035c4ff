"""The espeak-ng backend: each language's reference sentences, one sentence per step."""

from __future__ import annotations

import numpy as np
import pytest

from edged.audio.loudness import gated_rms_db
from edged.frontend.phonemes import phonemize
from edged.voice.espeak import EspeakVoice

# (espeak voice, reference sentence, shortest, longest plausible seconds)
_REFERENCE = [
    ("cmn", "明天七点三十分开会，我们在四楼见。", 2.0, 7.0),
    ("yue", "聽日七點半開會，我哋喺四樓見。", 1.5, 7.0),
    ("ko", "오늘 세 시에 회의가 있습니다.", 1.2, 6.0),
    ("ja", "あしたは しちじに かいぎが あります。", 1.5, 8.0),
    ("en-us", "The washing machine is done.", 1.0, 4.0),
]


@pytest.mark.parametrize(("espeak_voice", "text", "low", "high"), _REFERENCE,
                         ids=[r[0] for r in _REFERENCE])
def test_reference_sentences_speak(espeak_voice: str, text: str, low: float,
                                   high: float) -> None:
    """Each language's reference sentence: a plausible duration, speech (not silence) all
    through, at espeak-ng's rate."""
    voice = EspeakVoice(espeak_voice)
    audio = voice.synthesize(text)
    assert audio.rate_hz == 22050
    assert low < audio.duration_s < high, audio.duration_s
    level = gated_rms_db(audio.samples.astype(np.float32) / 32768, audio.rate_hz)
    assert level is not None and level > -35
    quarters = np.array_split(audio.samples.astype(np.float64), 4)
    assert all(np.sqrt(np.mean(q**2)) > 100 for q in quarters[:3])  # no long silent stretch


def test_one_step_per_sentence() -> None:
    """`stream` yields one chunk per sentence (bounded work per step), the pause between."""
    voice = EspeakVoice("yue", sentence_pause_ms=200)
    chunks = list(voice.stream("你好。今日天氣好好。我哋去飲茶！"))
    assert len(chunks) == 3
    pause = 22050 * 200 // 1000
    assert not chunks[0].samples[-pause:].any() and chunks[-1].samples[-pause:].any()


def test_speed_shortens_and_numbers_are_read() -> None:
    """Speed 1.5 is shorter; a Korean time is read as words (native hour), not dropped."""
    voice = EspeakVoice("ko")
    slow = voice.synthesize("회의가 있습니다.")
    fast = voice.synthesize("회의가 있습니다.", voice.settings(speed=1.5))
    assert fast.duration_s < slow.duration_s * 0.85
    assert voice.normalize("3:30") == "세 시 삼십 분"
    assert voice.synthesize("3:30").duration_s > 0.8


def test_unknown_espeak_voice_is_an_error() -> None:
    """A voice espeak-ng does not have is a VoiceError naming it."""
    from edged.voice import VoiceError

    with pytest.raises(VoiceError, match="espeak:xx-nope"):
        EspeakVoice("xx-nope")


# Reviewed against the dictionaries: 明天开会 míng tiān kāi huì (pinyin initials and finals;
# espeak-ng marks tone 2 as ɜ and levels 1 and 4 alike in its IPA output); 聽日開會 ting1 jat6
# hoi1 wui2 (CantoDict: 開會 is read wui2 in speech); 안녕하세요 annyeonghaseyo; こんにちは
# konnichiwa.
# Japanese through espeak-ng needs OpenJTalk's reading first (は as the particle "wa"): the `ja`
# extra, which `make test-long` installs.
_GOLDEN = [
    pytest.param("cmn", "明天开会。", "mˈiɜŋ thˈiɛ5n khˈai5 χˈuei5", id="cmn"),
    pytest.param("yue", "聽日開會。", "tˈinɡɜ jˈa6t hˈoi1 wˈui2", id="yue"),
    pytest.param("ko", "안녕하세요.", "ˈɐnnjʌŋhˌɐsejˌo.", id="ko"),
    pytest.param("ja", "こんにちは。", "kˌo̞nnitɕˈiwä", id="ja", marks=pytest.mark.long),
]


@pytest.mark.parametrize(("espeak_voice", "text", "phonemes"), _GOLDEN)
def test_golden_phonemes(espeak_voice: str, text: str, phonemes: str) -> None:
    """espeak-ng's reading of each language's reference words (an upgrade shows up here)."""
    voice = EspeakVoice(espeak_voice)
    got = "".join(p for sentence in phonemize(voice.normalize(text), espeak_voice)
                  for p in sentence)
    import unicodedata

    assert unicodedata.normalize("NFC", got) == unicodedata.normalize("NFC", phonemes)
