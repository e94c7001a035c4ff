"""The network servers' loop: its own thread, servers started and stopped on it, and speech from
the shared scheduler reached without ever blocking the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from edged.audio import Audio
from edged.cache import PhraseCache
from edged.config import parse_config
from edged.daemon.policy import RequestPolicy
from edged.daemon.requests import SpeechRequest
from edged.net import NetLoop, chunks, open_speech
from edged.synthesis import Scheduler, Speech, SpeechStream
from edged.voice import LoadedVoices, PiperVoice

_TIMEOUT_S = 10.0


class _Recorder:
    """A server that records where and when it was started and stopped."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self._log = name, log

    async def start(self) -> None:
        self._log.append(f"start {self.name} on {threading.current_thread().name}")

    async def stop(self) -> None:
        self._log.append(f"stop {self.name}")


def test_servers_start_on_the_loop_thread_and_stop_in_reverse() -> None:
    """Servers run on "edged-net", never on the caller's thread; the last started stops first."""
    log: list[str] = []
    net = NetLoop([_Recorder("wyoming", log), _Recorder("http", log)])
    assert net.start() == ["wyoming", "http"]
    net.stop()
    assert log == ["start wyoming on edged-net", "start http on edged-net", "stop http",
                   "stop wyoming"]



async def _open(speech: Speech, text: str) -> SpeechStream:
    """What the network servers do: the request policy, then the speech stream, off the loop."""
    return await open_speech(speech, RequestPolicy(speech.planner), SpeechRequest(text),
                             source="net")

@pytest.fixture
def speech(tmp_path: Path, tiny_voice_path: Path) -> Iterator[Speech]:
    config = parse_config({"voice": {"name": str(tiny_voice_path)}, "cache": {"dir": "c"}},
                          tmp_path)
    scheduler = Scheduler(1, {"net": 1})
    scheduler.start()
    voice = PiperVoice.load(tiny_voice_path)
    yield Speech(config, LoadedVoices(config, default=voice), PhraseCache(config.cache), scheduler)
    scheduler.stop()


def test_speech_streams_on_the_loop_like_the_voice(speech: Speech) -> None:
    """open_speech + chunks give the voice's own audio, and free the stream's slot at the end."""
    net = NetLoop([])
    net.start()
    text = "One, two. Three four five. Six."

    async def speak() -> int:
        stream = await _open(speech, text)
        return sum([len(chunk.samples) async for chunk in chunks(stream)])

    try:
        frames = net.call(speak(), _TIMEOUT_S)
    finally:
        net.stop()
    assert frames == len(speech.voices.get().synthesize(text).samples)
    assert speech.scheduler.open_streams()["net"] == 0


def test_waiting_for_a_chunk_leaves_the_loop_free(speech: Speech) -> None:
    """The second chunk can only be made after a coroutine on the loop has run: if waiting for
    it blocked the loop, this would never finish."""
    net = NetLoop([])
    net.start()
    gate = threading.Event()
    utterance = speech.utterance("Gate.")

    def steps() -> Iterator[Audio]:
        yield Audio(np.ones(10, dtype=np.int16), 16000)
        assert gate.wait(_TIMEOUT_S), "the loop never ran the coroutine that opens the gate"
        yield Audio(np.full(10, 2, dtype=np.int16), 16000)

    async def open_gate() -> None:
        gate.set()

    async def consume() -> list[int]:
        scheduled = speech.scheduler.submit(lambda _lanes: steps(), rank=2, source="net")
        got = []
        async for chunk in chunks(SpeechStream(utterance, None, scheduled)):
            got.append(int(chunk.samples[0]))
            if len(got) == 1:
                asyncio.get_running_loop().call_soon(asyncio.ensure_future, open_gate())
        return got

    try:
        assert net.call(consume(), _TIMEOUT_S) == [1, 2]
    finally:
        net.stop()


def test_a_cancelled_consumer_frees_its_synthesis_slot(speech: Speech) -> None:
    """A client that goes away mid-stream (its task cancelled) closes the stream: the scheduler
    drops the work and the source may open another one."""
    net = NetLoop([])
    net.start()
    long_text = " ".join(["This is a rather long sentence, with clauses."] * 6)

    async def abandon() -> int:
        stream = await _open(speech, long_text)
        got = asyncio.Event()

        async def consume() -> None:
            async for _chunk in chunks(stream):
                got.set()
                await asyncio.Event().wait()  # a client that stops reading

        task = asyncio.create_task(consume())
        await asyncio.wait_for(got.wait(), _TIMEOUT_S)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return speech.scheduler.open_streams()["net"]

    try:
        assert net.call(abandon(), _TIMEOUT_S) == 0
    finally:
        net.stop()


def test_network_streams_get_the_short_first_window_and_parallel_windows(tmp_path: Path) -> None:
    """HTTP and Wyoming reach speech through open_speech: with a prepared voice their first
    chunk is the short first window, and through two workers the chunks join to the audio the
    voice makes alone."""
    from edged.voice.catalog.hashes import file_sha256
    from edged.voice.piper.prepared import ensure_prepared
    from edged.voice.piper.windows import FIRST_WINDOW_FRAMES
    from tests.harness.tiny_voice import VITS_HOP, make_tiny_vits_voice

    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx", flow="local")
    config = parse_config({"voice": {"name": str(onnx_path)}, "cache": {"dir": "c"}}, tmp_path)
    prepared = ensure_prepared(onnx_path, file_sha256(onnx_path), tmp_path / "c")
    voice = PiperVoice.load(onnx_path, prepared=prepared, lanes=2, memory_mb=64)
    scheduler = Scheduler(2, {"net": 1})
    scheduler.start()
    speech = Speech(config, LoadedVoices(config, default=voice), PhraseCache(config.cache), scheduler)
    net = NetLoop([])
    net.start()
    text = "The quick brown fox jumps over the lazy dog, and then it runs into the woods."

    async def speak() -> list[int]:
        stream = await _open(speech, text)
        return [len(chunk.samples) async for chunk in chunks(stream)]

    try:
        sizes = net.call(speak(), _TIMEOUT_S)
    finally:
        net.stop()
        scheduler.stop()
    assert sizes[0] == FIRST_WINDOW_FRAMES * VITS_HOP and len(sizes) > 2
    assert sum(sizes) == len(voice.synthesize(text).samples)
