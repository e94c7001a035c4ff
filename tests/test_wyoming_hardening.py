"""The Wyoming door hardened (issue 28): requests pipelined without reading are not read ahead
of their answers, silent connections and silent streams are closed after the idle timeout, only
the allowed client addresses are served, and Wyoming refuses what MQTT and HTTP refuse. The real
daemon (`edged run`, the tiny voice), raw sockets and the `wyoming` library's own client; each
test failed on the code before the issue's work (the text rule excepted: see its docstring)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

from wyoming.client import AsyncTcpClient
from wyoming.event import Event, async_read_event
from wyoming.tts import Synthesize

from tests.harness.daemon import DaemonProc, peak_rss_mb
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher
from tests.harness.wyoming_server import read_until

_TIMEOUT_S = 30.0


def frame(kind: str, data: dict[str, Any] | None = None) -> bytes:
    """One event as raw bytes; JSON's own escapes for anything not ASCII (a lone surrogate
    can only arrive that way)."""
    return json.dumps({"type": kind, **({"data": data} if data is not None else {})}).encode() \
        + b"\n"


def start(make_daemon: Callable[..., DaemonProc], watcher: Watcher,
          **wyoming: Any) -> tuple[DaemonProc, int]:
    """A daemon with Wyoming on a free port (and `wyoming` options), online; and its port."""
    port = free_port()
    daemon = make_daemon(wyoming={"enabled": True, "port": port, "zeroconf": False, **wyoming})
    return daemon.start(watcher), port


def synthesize(port: int, text: str = "Still here.") -> list[str]:
    """A normal request from the `wyoming` library's client: the event types answered."""
    async def ask() -> list[str]:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Synthesize(text=text).event())
            return (await read_until(client, "audio-stop")).types

    return asyncio.run(asyncio.wait_for(ask(), _TIMEOUT_S))


# -- 1. requests pipelined without reading ------------------------------------------------------

_PIPELINED_MB = 20
_WORDS = "word " * 370


def _pipeline(port: int, payload: bytes, out: list[tuple[int, str]]) -> None:
    """Send `payload` as fast as the daemon takes it, reading nothing back; (bytes the
    kernel took, how it ended). A blocking socket: a daemon that stops reading makes send()
    wait, until the daemon drops the connection or the limit passes."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(_TIMEOUT_S * 2)
    sent, how = 0, "all taken"
    view = memoryview(payload)
    try:
        while sent < len(payload):
            sent += sock.send(view[sent:sent + 65536])
    except (ConnectionResetError, BrokenPipeError):
        how = "closed by the daemon"
    except TimeoutError:
        how = "stalled and never closed"
    out.append((sent, how))
    sock.close()


def test_requests_pipelined_without_reading_are_not_read_ahead_of_their_answers(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """Four clients pipeline 20 MB each of `synthesize` events (two of them of streamed
    requests: start, chunk, stop) and read nothing. The daemon reads a request only once the
    one before it is answered, and drops a client that has not read its audio for
    wyoming.idle_timeout_s: each client is closed, having sent a fraction of its flood, and the
    daemon's peak memory hardly moves. Before, the daemon read and queued everything (four such
    clients OOM-killed it in 22 s; here its peak grew by over 100 MB)."""
    daemon, port = start(make_daemon, watcher, idle_timeout_s=2)
    assert daemon.proc is not None
    daemon_pid = daemon.proc.pid
    assert synthesize(port) == ["audio-start", "audio-chunk", "audio-stop"]
    before = peak_rss_mb(daemon_pid)
    one = frame("synthesize", {"text": _WORDS + "end."})
    streamed = (frame("synthesize-start") + frame("synthesize-chunk", {
        "text": "This is a part. " * 110}) + frame("synthesize-stop"))
    floods = [one * (_PIPELINED_MB * 2**20 // len(one)),
              streamed * (_PIPELINED_MB * 2**20 // len(streamed))] * 2
    ends: list[tuple[int, str]] = []
    clients = [threading.Thread(target=_pipeline, args=(port, flood, ends)) for flood in floods]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    grown = peak_rss_mb(daemon_pid) - before
    print(f"pipelined {len(floods)} x {_PIPELINED_MB} MB: taken {[s >> 20 for s, _ in ends]} "
          f"MB, {[h for _, h in ends]}; the daemon's peak grew {grown:.1f} MB")
    assert synthesize(port) == ["audio-start", "audio-chunk", "audio-stop"]
    assert grown < 30, f"the daemon's peak memory grew {grown:.0f} MB under the floods"
    for sent, how in ends:
        assert how == "closed by the daemon", how
        assert sent < _PIPELINED_MB * 2**20 // 2


# -- 2. silent connections and silent streams ---------------------------------------------------

async def _until_closed(port: int, raw: bytes) -> list[Event]:
    """Send `raw`, then nothing: the events received until the daemon ends the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    events = []
    while (event := await async_read_event(reader)) is not None:
        events.append(event)
    writer.close()
    return events


def test_silent_connections_and_streams_are_closed_and_a_new_client_is_served(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """wyoming.max_connections: 4, idle_timeout_s: 1. Four clients take every slot and fall
    silent: one sent nothing, one opened a stream, one a stream with half a sentence, one a
    stream whose first sentence was spoken. Each is closed after the idle timeout (the streams
    with an `error` `timeout`), and a new client is served. Before, an open stream switched the
    timeout off: four silent streams locked Home Assistant out for good."""
    _daemon, port = start(make_daemon, watcher, idle_timeout_s=1, max_connections=4)
    start_ = frame("synthesize-start")
    silent = [b"", start_, start_ + frame("synthesize-chunk", {"text": "Half a sentence that"}),
              start_ + frame("synthesize-chunk", {"text": "This part is spoken. And this"})]

    async def all_silent() -> list[list[Event]]:
        return await asyncio.gather(*(_until_closed(port, raw) for raw in silent))

    answers = asyncio.run(asyncio.wait_for(all_silent(), _TIMEOUT_S))
    assert answers[0] == []
    for events in answers[1:]:
        assert events[-1].type == "error" and events[-1].data["code"] == "timeout", events
    assert [e.type for e in answers[3]][:2] == ["audio-start", "audio-chunk"]
    assert synthesize(port) == ["audio-start", "audio-chunk", "audio-stop"]
