"""Segmentation and routing: mixed text -> language segments -> the voice of each (table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edged.config import parse_config
from edged.languages import LanguageError, check_tags, language_code, segment
from edged.synthesis.route import Router
from edged.voice import LoadedVoices

# (text, options, expected [(language, segment text)])
_TABLE: list[tuple[str, dict[str, str], list[tuple[str, str]]]] = [
    ("明天 7:30 开会，meeting in room 4B", {},
     [("zh", "明天 7:30 开会，"), ("en", "meeting in room 4B")]),
    ("The washing machine is done.", {}, [("en", "The washing machine is done.")]),
    ("  Padded English.  ", {}, [("en", "  Padded English.  ")]),
    ("123", {}, [("en", "123")]),
    ("你好，世界", {}, [("zh", "你好，世界")]),
    ("你好，世界", {"han": "yue"}, [("yue", "你好，世界")]),
    ("你好，世界", {"han": "ja"}, [("ja", "你好，世界")]),
    ("你好，世界", {"language": "yue"}, [("yue", "你好，世界")]),
    ("佢哋今日唔嚟", {}, [("yue", "佢哋今日唔嚟")]),
    ("佢哋今日唔嚟", {"language": "zh"}, [("zh", "佢哋今日唔嚟")]),
    ("明日は雨です。", {}, [("ja", "明日は雨です。")]),
    ("東京タワー", {}, [("ja", "東京タワー")]),
    ("明日の meeting は10時です", {}, [("ja", "明日の meeting は10時です")]),  # said by its voice
    ("你的 Amazon 包裹已经到了。", {}, [("zh", "你的 Amazon 包裹已经到了。")]),
    ("Tesla 已经充满电了。", {}, [("zh", "Tesla 已经充满电了。")]),
    ("Apple Watch のバッテリー", {}, [("ja", "Apple Watch のバッテリー")]),
    ("你好 hello", {}, [("zh", "你好"), ("en", "hello")]),
    ("佢哋 check 下", {}, [("yue", "佢哋"), ("en", "check"), ("yue", "下")]),
    ("오늘 3시 30분에 회의가 있습니다", {}, [("ko", "오늘 3시 30분에 회의가 있습니다")]),
    ("오늘 회의 in room 4B", {}, [("ko", "오늘 회의"), ("en", "in room 4B")]),
    ("Meeting at 7:30 明天", {}, [("en", "Meeting at 7:30"), ("zh", "明天")]),
    ("3 个人 are coming", {}, [("zh", "3 个人"), ("en", "are coming")]),
    ("温度 25°C, please close the window", {},
     [("zh", "温度 25°C,"), ("en", "please close the window")]),
    ("买了 10kg 大米", {}, [("zh", "买了 10kg 大米")]),
    ("G102次列车", {}, [("zh", "G102次列车")]),
    ("请到4B房间", {}, [("zh", "请到4B房间")]),
    ("<|zh|>你好<|en|>hello", {}, [("zh", "你好"), ("en", "hello")]),
    ("<|jp|>東京<|zh|>北京", {}, [("ja", "東京"), ("zh", "北京")]),
    ("<|JA|>東京", {}, [("ja", "東京")]),
    ("<|yue|>你好 hello", {}, [("yue", "你好"), ("en", "hello")]),
    ("<|ko|>123", {}, [("ko", "123")]),
    ("<|zh|>你好<|zh|>世界", {}, [("zh", "你好世界")]),
    ("<|en|>OK", {}, [("en", "OK")]),
    ("<|en|>你好", {}, [("zh", "你好")]),
    ("<|en|>你好", {"han": "yue"}, [("yue", "你好")]),
    ("hello <|ja|>東京", {}, [("en", "hello"), ("ja", "東京")]),
    ("東京。北京欢迎你", {}, [("zh", "東京。北京欢迎你")]),
    ("東京です。北京欢迎你", {}, [("ja", "東京です。"), ("zh", "北京欢迎你")]),
    ("你好 안녕 hello こんにちは", {},
     [("zh", "你好"), ("ko", "안녕"), ("en", "hello"), ("ja", "こんにちは")]),
    ("Café naïve résumé", {}, [("en", "Café naïve résumé")]),
    ("Привет, мир", {}, [("en", "Привет, мир")]),
    ("「你好」", {}, [("zh", "「你好」")]),
    ("价格是 ¥12.5", {}, [("zh", "价格是 ¥12.5")]),
    ("Room 4B 在二楼", {}, [("en", "Room 4B"), ("zh", "在二楼")]),
    ("ｶﾀｶﾅ test", {}, [("ja", "ｶﾀｶﾅ"), ("en", "test")]),
    ("2026-12-01 的会议", {}, [("zh", "2026-12-01 的会议")]),
    ("The 会议 starts now", {}, [("en", "The"), ("zh", "会议"), ("en", "starts now")]),
    ("서울 Seoul 首尔", {}, [("ko", "서울"), ("en", "Seoul"), ("zh", "首尔")]),
    ("!!!", {}, [("en", "!!!")]),
]


@pytest.mark.parametrize(("text", "options", "expected"), _TABLE, ids=[t[0] for t in _TABLE])
def test_segments(text: str, options: dict[str, str], expected: list[tuple[str, str]]) -> None:
    """Each mixed text is cut into the expected language segments (script, tags, options)."""
    assert len(_TABLE) >= 40
    got = segment(text, **options)
    assert [(s.language, s.text) for s in got] == expected


@pytest.mark.parametrize(("text", "message"), [
    ("<|fr|>bonjour", "tag <|fr|>: unknown language 'fr'"),
    ("ok <||>", "tag <||>: unknown language ''"),
    ("<|zh|>。", "nothing to say"),
])
def test_bad_tags_are_named(text: str, message: str) -> None:
    """An unknown tag (or nothing left to say) is an error that names it."""
    with pytest.raises(LanguageError, match=message.replace("|", r"\|")):
        segment(text)
    if "unknown" in message:
        with pytest.raises(LanguageError):
            check_tags(text)


def test_codes_and_aliases() -> None:
    """Codes are case-insensitive; jp, cmn, kr are aliases; anything else is refused."""
    assert [language_code(c) for c in ("ZH", "jp", "cmn", "kr", "yue", "en")] == \
        ["zh", "ja", "zh", "ko", "yue", "en"]
    with pytest.raises(LanguageError, match="unknown language 'de'"):
        language_code("de")


@pytest.fixture
def router(tiny_voice_path: Path, tmp_path: Path) -> Router:
    """Config: English the tiny voice, the others espeak-ng (zh through a missing Kokoro)."""
    config = parse_config({
        "voice": {"name": str(tiny_voice_path)},
        "languages": {"zh": "kokoro:zz_absent", "yue": "espeak:yue", "ko": "espeak:ko"},
        "cache": {"dir": str(tmp_path / "cache")},
    }, tmp_path)
    return Router(config, LoadedVoices(config, budget_mb=100_000))


_ROUTES = [
    ("明天 7:30 开会，meeting in room 4B", None, ["espeak:cmn", "tiny"]),
    ("오늘 회의 in room 4B", None, ["espeak:ko", "tiny"]),
    ("<|yue|>你好 hello", None, ["espeak:yue", "tiny"]),
    ("hello <|jp|>こんにちは", None, ["tiny", "kokoro:jf_alpha|espeak:ja"]),
    ("Only English.", None, ["tiny"]),
    ("你好", "espeak:yue", ["espeak:yue"]),
    ("你好 hello", "espeak:yue", ["espeak:cmn", "tiny"]),
    ("你好 안녕", "espeak:ko", ["espeak:cmn", "espeak:ko"]),
]


@pytest.mark.parametrize(("text", "voice", "voices"), _ROUTES, ids=[r[0] for r in _ROUTES])
def test_routes_pick_voices_along_the_chain(router: Router, text: str, voice: str | None,
                                            voices: list[str]) -> None:
    """Each segment gets its language's voice: configured, else the chain (a missing Kokoro
    voice falls back to espeak-ng); a named voice speaks its own language's segments (all of a
    one-segment text)."""
    got = [r.voice.name.removesuffix(".onnx") for r in router.route(text, voice=voice)]
    assert len(got) == len(voices)
    for name, allowed in zip(got, voices, strict=True):
        assert name in allowed.split("|"), (got, voices)


def test_fallback_is_logged_once(router: Router, caplog: pytest.LogCaptureFixture) -> None:
    """A configured voice that cannot load is reported once, not on every request."""
    for _ in range(3):
        router.route("你好")
    lines = [r.message for r in caplog.records if "kokoro:zz_absent not used" in r.message]
    assert len(lines) == 1 and "falling back to" in lines[0]


def test_chain_order(router: Router) -> None:
    """The chains: configured voice, the neural default, espeak-ng last."""
    assert router.chain("zh") == ["kokoro:zz_absent", "kokoro:zm_yunjian", "espeak:cmn"]
    assert router.chain("ja") == ["kokoro:jf_alpha", "espeak:ja"]
    assert router.chain("yue") == ["espeak:yue"]  # configured: the neural default not after it
    assert router.chain("ko") == ["espeak:ko"]
    assert router.chain("en")[-1] == "espeak:en-us"
