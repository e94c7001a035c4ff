"""A Wyoming server in this process (the daemon's parts: scheduler, speech, net loop) and a real
client for it: the `wyoming` library over a real socket, as Home Assistant connects.

Used by test_wyoming*.py and test_languages_servers.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from wyoming.client import AsyncTcpClient
from wyoming.event import Event, async_read_event

from edged.cache import PhraseCache
from edged.config import Config, parse_config
from edged.daemon.policy import RequestPolicy
from edged.net import NetLoop
from edged.synthesis import Scheduler, Speech
from edged.voice import LoadedVoices, PiperVoice
from edged.wyoming import WyomingServer, list_voices

from .ports import free_port

TIMEOUT_S = 10.0


@dataclass
class Served:
    """A running Wyoming server and the parts behind it."""

    config: Config
    speech: Speech
    server: WyomingServer
    net: NetLoop
    port: int

    def stop(self) -> None:
        self.net.stop()
        self.speech.scheduler.stop()

    def run(self, coroutine: Coroutine[Any, Any, Any], timeout: float = TIMEOUT_S) -> Any:
        """Run a client coroutine in this thread's own event loop, bounded."""
        return asyncio.run(asyncio.wait_for(coroutine, timeout))

    def client(self) -> AsyncTcpClient:
        return AsyncTcpClient("127.0.0.1", self.port)


def serve(tmp_path: Path, voice: PiperVoice, *, sources: dict[str, int] | None = None,
          more: dict[str, Any] | None = None, **wyoming: Any) -> Served:
    """A server speaking with `voice` (loaded once by the caller: the real voice takes seconds);
    `more`: other config sections."""
    port = free_port()
    config = parse_config({
        "voice": {"name": str(voice.onnx_path), **(more or {}).pop("voice", {})},
        "cache": {"dir": "cache"}, "wyoming": {"enabled": True, "port": port, **wyoming},
        **(more or {}),
    }, tmp_path)
    scheduler = Scheduler(1, sources or {"wyoming": config.wyoming.max_connections})
    scheduler.start()
    pool = LoadedVoices(config, default=voice)
    speech = Speech(config, pool, PhraseCache(config.cache), scheduler)
    server = WyomingServer(config, speech, RequestPolicy(speech.planner),
                           list_voices(config, pool.listed, {voice.name: voice.onnx_path}))
    net = NetLoop([server])
    net.start()
    return Served(config, speech, server, net, port)


@dataclass
class Answer:
    """What the server sent for one request, in order."""

    events: list[Event] = field(default_factory=list)

    @property
    def types(self) -> list[str]:
        """Event types with runs of audio-chunk collapsed to one."""
        out: list[str] = []
        for e in self.events:
            if not (e.type == "audio-chunk" and out and out[-1] == "audio-chunk"):
                out.append(e.type)
        return out

    @property
    def pcm(self) -> bytes:
        return b"".join(e.payload or b"" for e in self.events if e.type == "audio-chunk")

    @property
    def samples(self) -> np.ndarray:
        return np.frombuffer(self.pcm, dtype="<i2")


async def read_until(client: AsyncTcpClient, last: str) -> Answer:
    """Events until one of type `last` (included); AssertionError at the end of the stream."""
    answer = Answer()
    while True:
        event = await client.read_event()
        assert event is not None, f"connection closed before {last}; got {answer.types}"
        answer.events.append(event)
        if event.type == last:
            return answer


async def read_raw(reader: asyncio.StreamReader) -> Event | None:
    return await async_read_event(reader)
