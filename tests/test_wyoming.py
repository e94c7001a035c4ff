"""The Wyoming TTS server, spoken to by the `wyoming` library's own client over a real socket, the
way Home Assistant's Wyoming integration does: describe, synthesize, streamed synthesize, the
phrase cache, bounds and bad input.

The tiny test voice (1 s of a known signal per sentence) where the content does not matter; the
real default voice where timing must be real (audio streaming before the text is all spoken).
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from edged.audio import Audio
from edged.config import parse_config
from edged.voice import PiperVoice, load_voice
from tests.harness.streams import wait_streams
from tests.harness.voices import PreparedVoices
from tests.harness.wyoming_server import Answer, Served, read_until, serve

_TIMEOUT_S = 20.0
_STORY = ("The garage door is open. The washing machine has finished. Someone is at the front "
          "door. The bedroom window is open. It will rain this afternoon. The dishwasher is "
          "done. The car is charged. Good night.")


@pytest.fixture(scope="module")
def tiny(tiny_voice_path: Path) -> PiperVoice:
    return PiperVoice.load(tiny_voice_path)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory, default_voice_path: Path,
         prepared_voices: PreparedVoices) -> PiperVoice:
    """The default voice prepared as the daemon loads it (windows), once for this module."""
    root = tmp_path_factory.mktemp("real-voice")
    prepared_voices.seed(root / "c")
    config = parse_config({"voice": {"name": str(default_voice_path)}, "cache": {"dir": "c"}},
                          root)
    return load_voice(config)


@pytest.fixture
def served(tmp_path: Path, tiny: PiperVoice) -> Iterator[Served]:
    s = serve(tmp_path, tiny)
    yield s
    s.stop()


def test_describe_lists_one_streaming_tts_program_with_every_voice(
        tmp_path: Path, tiny: PiperVoice, tiny_voice_path: Path) -> None:
    """Home Assistant lists installed voices of the first installed tts program, by name, with
    their languages; every voice this daemon can speak is there, with its attribution."""
    other = tmp_path / "voices"
    other.mkdir()
    for suffix in (".onnx", ".onnx.json"):
        shutil.copy(f"{tiny_voice_path}"[: -len(".onnx")] + suffix, other / f"en_US-other-low{suffix}")
    s = serve(tmp_path, tiny, more={"voice": {"dirs": [str(other)]}, "voices": ["en_US-other-low"]})
    try:
        async def ask() -> Info:
            async with s.client() as client:
                await client.write_event(Describe().event())
                event = await client.read_event()
                assert event is not None
                return Info.from_event(event)

        info = s.run(ask())
    finally:
        s.stop()
    assert [p.name for p in info.tts] == ["edged"]
    program = info.tts[0]
    assert program.installed and program.supports_synthesize_streaming
    voices = {v.name: v for v in program.voices}
    assert sorted(voices) == ["en_US-other-low", "tiny"]
    assert voices["en_US-other-low"].description == "Other (en_US, low)"
    assert all(v.installed and v.languages == ["en_US"] for v in voices.values())
    assert "licence" in voices["tiny"].attribution.name


@pytest.mark.voice
def test_the_default_voice_is_advertised_with_its_licence(tmp_path: Path, real: PiperVoice) -> None:
    """The catalog's licence of the default voice reaches Home Assistant's voice list."""
    s = serve(tmp_path, real)
    try:
        async def ask() -> Info:
            async with s.client() as client:
                await client.write_event(Describe().event())
                event = await client.read_event()
                assert event is not None
                return Info.from_event(event)

        voice = s.run(ask()).tts[0].voices[0]
    finally:
        s.stop()
    assert voice.name == "en_US-joe-medium" and voice.description == "Joe (en_US, medium)"
    assert voice.attribution.name.startswith("en_US-joe-medium: CC0-1.0")
    assert voice.attribution.url == "https://github.com/NabuCasa/voice-datasets"


def test_synthesize_answers_the_voice_audio_in_the_announced_format(served: Served,
                                                                    tiny: PiperVoice) -> None:
    """audio-start with the voice's format, then the very samples the voice makes, then
    audio-stop: what Home Assistant writes into its WAV."""
    text = "Test one. Test two, three."

    async def ask() -> object:
        async with served.client() as client:
            await client.write_event(Synthesize(text=text).event())
            return await read_until(client, "audio-stop")

    answer = served.run(ask())
    assert answer.types == ["audio-start", "audio-chunk", "audio-stop"]
    start = answer.events[0].data
    assert (start["rate"], start["width"], start["channels"]) == (tiny.rate_hz, 2, 1)
    assert all(e.data["rate"] == tiny.rate_hz for e in answer.events if e.type == "audio-chunk")
    assert np.array_equal(answer.samples, tiny.synthesize(text).samples)


@pytest.mark.voice
def test_the_first_audio_leaves_before_the_text_is_all_synthesized(tmp_path: Path,
                                                                  real: PiperVoice) -> None:
    """Audio streams as the voice makes it: when the first chunk arrives, the scheduler is still
    working on the request and its whole audio is not in the cache yet (a server that speaks the
    whole text first, as wyoming-piper does, would fail both)."""
    s = serve(tmp_path, real)
    utterance = s.speech.utterance(_STORY)
    try:
        async def ask() -> tuple[int, bool, object]:
            async with s.client() as client:
                await client.write_event(Synthesize(text=_STORY).event())
                await read_until(client, "audio-chunk")
                working = s.speech.scheduler.open_streams()["wyoming"]
                complete = s.speech.cache.get(utterance.key) is not None
                rest = await read_until(client, "audio-stop")
                return working, complete, rest

        working, complete, _rest = s.run(ask(), _TIMEOUT_S)
    finally:
        s.stop()
    assert working == 1 and not complete
    assert s.speech.cache.get(utterance.key) is not None  # and cached once complete


def test_streamed_text_in_five_pieces_is_spoken_sentence_by_sentence(served: Served,
                                                                    tiny: PiperVoice) -> None:
    """synthesize-start, five synthesize-chunks cutting words and sentences anywhere, the
    `synthesize` copy HA sends for old servers, synthesize-stop: each sentence is spoken once,
    the first one before the rest of the text has arrived, and the answer ends with
    synthesize-stopped."""
    pieces = ["Dinner is rea", "dy. The oven", " is hot. Plea", "se wash your hands", ". Thanks"]
    sentences = ["Dinner is ready.", "The oven is hot.", "Please wash your hands.", "Thanks"]

    async def ask() -> tuple[Answer, Answer]:
        async with served.client() as client:
            await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="tiny")).event())
            for piece in pieces[:2]:
                await client.write_event(SynthesizeChunk(text=piece).event())
            early = await read_until(client, "audio-chunk")  # sentence 1, before pieces 3-5
            for piece in pieces[2:]:
                await client.write_event(SynthesizeChunk(text=piece).event())
            await client.write_event(Synthesize(text="".join(pieces)).event())
            await client.write_event(SynthesizeStop().event())
            return early, await read_until(client, "synthesize-stopped")

    early, rest = served.run(ask())
    assert early.types == ["audio-start", "audio-chunk"]
    assert rest.types == ["audio-chunk", "audio-stop", "synthesize-stopped"]
    heard = np.concatenate([early.samples, rest.samples])
    pause = Audio(np.zeros(tiny.rate_hz * tiny.sentence_pause_ms // 1000, np.int16), tiny.rate_hz)
    parts = [part for s in sentences for part in (pause, tiny.synthesize(s))][1:]
    spoken = Audio.join(parts, tiny.rate_hz).samples
    assert np.array_equal(heard, spoken)  # each sentence once, in order, nothing of the copy


def test_a_cached_phrase_answers_from_the_cache(served: Served, tiny: PiperVoice) -> None:
    """The phrase cache MQTT fills serves Wyoming too: the second request for a phrase is a
    cache hit and takes no synthesis (no new miss), with the same audio."""
    text = "Someone is at the front door."

    async def ask() -> Answer:
        async with served.client() as client:
            await client.write_event(Synthesize(text=text).event())
            return await read_until(client, "audio-stop")

    first = served.run(ask())
    before = served.speech.cache.stats()
    second = served.run(ask())
    after = served.speech.cache.stats()
    assert after["misses"] == before["misses"]
    assert sum(after["hits"].values()) == sum(before["hits"].values()) + 1
    assert np.array_equal(first.samples, second.samples)
    assert np.array_equal(second.samples, tiny.synthesize(text).samples)


def test_wyoming_work_ranks_below_a_critical_announcement(tmp_path: Path, tiny: PiperVoice) -> None:
    """At the one shared scheduler, a Wyoming request is taken after a critical announcement and
    before low-priority work that was waiting longer (wyoming.priority: high). With the worker
    held by a step of other work, all three wait; the order of their first steps shows the ranks.
    (That a critical stream waits for at most one step of anything else is test_scheduler's.)"""
    s = serve(tmp_path, tiny, sources={"wyoming": 1, "hold": 1, "low": 1, "critical": 1})
    scheduler = s.speech.scheduler
    release, holding = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def hold() -> Iterator[Audio]:
        holding.set()
        release.wait(_TIMEOUT_S)
        yield Audio(np.zeros(1, np.int16), 16000)

    def recording(name: str) -> Iterator[Audio]:
        seen[name] = scheduler.open_streams()["wyoming"]  # still waiting its turn: 1
        yield Audio(np.zeros(1, np.int16), 16000)

    try:
        held = scheduler.submit(lambda _lanes: hold(), rank=2, source="hold")
        assert holding.wait(_TIMEOUT_S)
        low = scheduler.submit(lambda _lanes: recording("low"), rank=3, source="low")

        async def ask() -> Answer:
            async with s.client() as client:
                await client.write_event(Synthesize(text="Hello.").event())
                await asyncio.to_thread(wait_streams, scheduler, "wyoming", 1)
                critical = scheduler.submit(lambda _lanes: recording("critical"), rank=0, source="critical")
                release.set()
                answer = await read_until(client, "audio-stop")
                assert len(await asyncio.to_thread(list, critical)) == 1
                return answer

        answer = s.run(ask())
        assert len(list(low)) == 1 and len(list(held)) == 1
    finally:
        release.set()
        s.stop()
    assert answer.types == ["audio-start", "audio-chunk", "audio-stop"]
    assert seen == {"critical": 1, "low": 0}


