"""The Wyoming server under bad input and load: every bad event gets an `error` event, then either
the connection goes on or it closes cleanly, and the server keeps serving; a client that leaves
mid-stream frees its synthesis; connections, text and idle time are bounded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from wyoming.error import Error
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.info import Describe
from wyoming.tts import Synthesize

from edged.config import parse_config
from edged.voice import PiperVoice, load_voice
from tests.harness.voices import PreparedVoices
from tests.harness.wyoming_server import Served, read_until, serve

_TIMEOUT_S = 20.0
_MAX_CHARS = 300


def _frame(kind: str, data: dict | None = None, **header: object) -> bytes:
    return json.dumps({"type": kind, **({"data": data} if data is not None else {}),
                       **header}).encode() + b"\n"


_SAY = "synthesize"
# (what, raw bytes sent, whether the connection is still usable afterwards)
_BAD_EVENTS = [
    ("header not JSON", b"this is not json\n", True),
    ("header a list", b"[1, 2, 3]\n", True),
    ("no type", b'{"data": {"text": "hi"}}\n', True),
    ("type not a string", b'{"type": 5}\n', True),
    ("data not an object", b'{"type": "describe", "data": [1]}\n', True),
    ("data bytes not JSON", b'{"type": "describe", "data_length": 5}\nxxxxx', True),
    ("JSON nested past the stack", b"[" * 5000 + b"]" * 5000 + b"\n", True),
    ("text not a string", _frame(_SAY, {"text": 5}), False),
    ("text missing", _frame(_SAY, {}), False),
    ("text blank", _frame(_SAY, {"text": "   "}), False),
    ("text too long", _frame(_SAY, {"text": "a" * (_MAX_CHARS + 1)}), False),
    ("control character", _frame(_SAY, {"text": "bell \x07 here"}), False),
    ("unknown voice", _frame(_SAY, {"text": "hi", "voice": {"name": "nobody"}}), False),
    ("voice not an object", _frame(_SAY, {"text": "hi", "voice": "tiny"}), False),
    ("speaker the voice lacks", _frame(_SAY, {"text": "hi", "voice": {"name": "tiny",
                                                                      "speaker": "bob"}}), False),
    ("language nobody speaks", _frame(_SAY, {"text": "hi", "voice": {"language": "xx_XX"}}), False),
    ("chunk without start", _frame("synthesize-chunk", {"text": "hi"}), False),
    ("stop without start", _frame("synthesize-stop"), False),
    ("start twice", _frame("synthesize-start") + _frame("synthesize-start"), False),
    ("stream longer than max_chars", _frame("synthesize-start") + b"".join(
        _frame("synthesize-chunk", {"text": "word " * 20}) for _ in range(4)), False),
    ("negative data_length", b'{"type": "describe", "data_length": -4}\n', False),
    ("data_length past the bound", b'{"type": "describe", "data_length": 99999999}\n', False),
    ("payload past the bound", b'{"type": "audio-chunk", "payload_length": 99999999}\n', False),
    ("header line past the bound", b'{"type": "describe", "x": "' + b"y" * 20000 + b'"}\n', False),
]


@pytest.fixture
def served(tmp_path: Path, tiny_voice_path: Path) -> Iterator[Served]:
    s = serve(tmp_path, PiperVoice.load(tiny_voice_path), max_chars=_MAX_CHARS)
    yield s
    s.stop()


@pytest.mark.parametrize(("what", "raw", "survives"), _BAD_EVENTS, ids=[b[0] for b in _BAD_EVENTS])
def test_a_bad_event_gets_an_error_and_never_stops_the_server(served: Served, what: str,
                                                               raw: bytes, survives: bool) -> None:
    """Each bad event is answered with `error`; a frame that was read whole leaves the connection
    usable, a request that cannot be served (or a stream that cannot be followed) closes it
    cleanly; either way the server goes on answering new clients."""
    async def send() -> tuple[Event | None, Event | None]:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(raw)
        await writer.drain()
        first = await async_read_event(reader)
        if survives:
            await async_write_event(Describe().event(), writer)
        after = await async_read_event(reader)  # info, or the end of the stream
        writer.close()
        return first, after

    first, after = served.run(send())
    assert first is not None and first.type == "error", f"{what}: got {first}"
    assert Error.from_event(first).text
    if survives:
        assert after is not None and after.type == "info"
    else:
        assert after is None, f"{what}: the connection should be closed, got {after}"
    assert served.server.wait_connections(0, _TIMEOUT_S)
    assert served.speech.scheduler.open_streams()["wyoming"] == 0

    async def still_serving() -> list[str]:
        async with served.client() as client:
            await client.write_event(Synthesize(text="Still here.").event())
            return (await read_until(client, "audio-stop")).types

    assert served.run(still_serving()) == ["audio-start", "audio-chunk", "audio-stop"]


def test_unknown_event_types_are_dropped_as_the_protocol_asks(served: Served) -> None:
    """Events of types a TTS server does not know (another program's, a newer protocol's) are
    ignored, not errors: the next request is answered as if they were not there."""
    async def send() -> str:
        async with served.client() as client:
            await client.write_event(Event("select-program", {"name": "edged"}))
            await client.write_event(Event("transcribe"))
            await client.write_event(Describe().event())
            event = await client.read_event()
            assert event is not None
            return event.type

    assert served.run(send()) == "info"


@pytest.mark.voice
def test_a_client_that_leaves_mid_stream_frees_its_synthesis(
        tmp_path: Path, default_voice_path: Path, prepared_voices: PreparedVoices) -> None:
    """The client hangs up after the first chunk of a long text: its connection ends, the
    scheduler's stream is closed (no slot held, no more windows made) and nothing incomplete is
    cached."""
    prepared_voices.seed(tmp_path / "voice" / "c")
    config = parse_config({"voice": {"name": str(default_voice_path)}, "cache": {"dir": "c"}},
                          tmp_path / "voice")
    s = serve(tmp_path, load_voice(config))
    text = " ".join(f"This is sentence number {n} of a long answer." for n in range(1, 12))
    key = s.speech.utterance(text).key
    try:
        async def hang_up() -> None:
            async with s.client() as client:
                await client.write_event(Synthesize(text=text).event())
                await read_until(client, "audio-chunk")

        s.run(hang_up(), _TIMEOUT_S)
        assert s.server.wait_connections(0, _TIMEOUT_S)
        assert s.speech.scheduler.open_streams()["wyoming"] == 0
        assert s.speech.cache.get(key) is None
    finally:
        s.stop()


def test_connections_beyond_the_limit_get_busy_and_are_closed(tmp_path: Path,
                                                              tiny_voice_path: Path) -> None:
    """With wyoming.max_connections: 2, a third client gets `error` (busy) and the end of the
    stream; once one of the two leaves, a new client is served."""
    s = serve(tmp_path, PiperVoice.load(tiny_voice_path), max_connections=2)

    async def crowd() -> tuple[Event | None, Event | None, str]:
        first, second = s.client(), s.client()
        await first.connect()
        await second.connect()
        for client in (first, second):  # both accepted and answering
            await client.write_event(Describe().event())
            assert (await client.read_event()) is not None
        third = s.client()
        await third.connect()
        refused, end = await third.read_event(), await third.read_event()
        await third.disconnect()
        await first.disconnect()
        await asyncio.to_thread(s.server.wait_connections, 1, _TIMEOUT_S)
        async with s.client() as fourth:
            await fourth.write_event(Describe().event())
            answer = await fourth.read_event()
        await second.disconnect()
        return refused, end, answer.type if answer else "nothing"

    try:
        refused, end, answer = s.run(crowd())
    finally:
        s.stop()
    assert refused is not None and refused.type == "error"
    assert Error.from_event(refused).code == "busy" and end is None
    assert answer == "info"


def test_an_idle_client_is_closed(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A connection that sends nothing for wyoming.idle_timeout_s is closed by the server."""
    s = serve(tmp_path, PiperVoice.load(tiny_voice_path), idle_timeout_s=1.0)

    async def idle() -> Event | None:
        async with s.client() as client:
            return await client.read_event()  # nothing sent: the server ends it

    try:
        assert s.run(idle(), _TIMEOUT_S) is None
        assert s.server.wait_connections(0, _TIMEOUT_S)
    finally:
        s.stop()
