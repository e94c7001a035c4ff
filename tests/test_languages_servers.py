"""The network servers speak the five languages as MQTT does: a `language` on HTTP's /api/tts
and in a Wyoming voice routes Han text along that language's voice chain, and every voice a
request may name (the `languages:` voices too) is listed with its language and licence."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from wyoming.audio import AudioStart
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeVoice

from edged.voice import PiperVoice
from tests.harness.http_daemon import HttpDaemon
from tests.harness.wyoming_server import read_until, serve

_HAN = "你好，明天见。"


def test_http_language_routes_han_text_along_its_chain(
        make_http: Callable[..., HttpDaemon]) -> None:
    """Han text is Mandarin by default (`languages.han`); `language: yue` makes it Cantonese,
    spoken by the Cantonese voice of the chain (espeak-ng's here; Kokoro's where edged[yue]
    is installed, as `make test-long` does: jm_kumo alone, as this daemon's voice folder has
    no pulled Mandarin style for the mix)."""
    from edged.synthesis.route import ESPEAK, NEURAL
    from edged.voice.kokoro import assets

    yue = NEURAL["yue"][-1] if assets.installed() else ESPEAK["yue"]
    http = make_http()
    with http.client() as client:
        plain = client.post("/api/tts", json={"text": _HAN})
        cantonese = client.post("/api/tts", json={"text": _HAN, "language": "yue"})
        bad = client.post("/api/tts", json={"text": _HAN, "language": "klingon"})
    assert plain.status_code == 200 and cantonese.status_code == 200, cantonese.text
    assert cantonese.headers["X-Edged-Voice"] == yue
    assert plain.headers["X-Edged-Voice"] != yue
    assert bad.status_code == 400 and "unknown language 'klingon'" in bad.json()["error"]


def test_http_voices_list_the_language_voices_with_their_licence(
        make_http: Callable[..., HttpDaemon]) -> None:
    """/api/voices: the configured voice first, then the voices `languages:` names."""
    http = make_http(languages={"yue": "espeak:yue"})
    with http.client() as client:
        voices = client.get("/api/voices").json()["voices"]
    assert [v["name"] for v in voices] == ["tiny", "espeak:yue"]
    yue = voices[1]
    assert (yue["language"], yue["rate_hz"], yue["default"]) == ("yue", 22050, False)
    assert "GPL-3.0-or-later" in yue["licence"]


def test_wyoming_describes_the_language_voices_and_routes_by_language(
        tmp_path: Path, tiny_voice_path: Path) -> None:
    """Home Assistant sees the Cantonese voice with its language and credit; a synthesize that
    asks for a language no listed voice has (Mandarin here) is routed along that language's
    chain instead of being refused: espeak-ng's 22050 Hz, not the tiny voice's 16000."""
    s = serve(tmp_path, PiperVoice.load(tiny_voice_path), more={"languages": {"yue": "espeak:yue"}})
    try:
        async def ask() -> tuple[Info, int]:
            async with s.client() as client:
                await client.write_event(Describe().event())
                info_event = await client.read_event()
                assert info_event is not None
                voice = SynthesizeVoice(language="zh")
                await client.write_event(Synthesize(text=_HAN, voice=voice).event())
                answer = await read_until(client, "audio-stop")
                return Info.from_event(info_event), AudioStart.from_event(answer.events[0]).rate

        info, rate = s.run(ask())
    finally:
        s.stop()
    voices = {v.name: v for v in info.tts[0].voices}
    assert sorted(voices) == ["espeak:yue", "tiny"]
    assert voices["espeak:yue"].languages == ["yue"]
    assert "credit: the espeak-ng contributors" in voices["espeak:yue"].attribution.name
    assert rate == 22050
