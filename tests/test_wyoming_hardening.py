"""The Wyoming door hardened (issue 28): requests pipelined without reading are not read ahead
of their answers, silent connections and silent streams are closed after the idle timeout, only
the allowed client addresses are served, and Wyoming refuses what MQTT and HTTP refuse. The real
daemon (`edged run`, the tiny voice), raw sockets and the `wyoming` library's own client; each
test failed on the code before the issue's work (the text rule excepted: see its docstring)."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.event import Event, async_read_event
from wyoming.tts import Synthesize

from edged.config import ConfigError, parse_config
from edged.daemon import fields
from edged.daemon.requests import RequestError
from edged.voice import PiperVoice
from edged.wyoming.gate import ClientGate
from tests.harness.daemon import DaemonProc, peak_rss_mb, wait_log
from tests.harness.internals import wait_connections
from tests.harness.ports import free_port
from tests.harness.streams import wait_streams
from tests.harness.watcher import Watcher
from tests.harness.wyoming_server import Served, read_until, serve

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


# -- 3. who may connect ---------------------------------------------------------------------------

def _from(address: str, port: int) -> bytes:
    """Connect from `address` (all of 127/8 is this machine's), say describe, and read what
    comes back until the daemon ends the connection."""
    with socket.socket() as sock:
        sock.settimeout(_TIMEOUT_S)
        sock.bind((address, 0))
        sock.connect(("127.0.0.1", port))
        received = b""
        try:
            sock.sendall(frame("describe"))
            while chunk := sock.recv(65536):
                received += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass
        return received


def test_clients_outside_allowed_clients_are_closed_at_once_and_logged_once(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """wyoming.allowed_clients: [127.0.0.1/32], max_connections: 1. 300 connections from
    127.0.0.2 are each closed at once, unanswered, with one log line for all of them (the rest
    counted into the next line, a minute later); none takes the one connection slot: a client
    from 127.0.0.1 is then served. Before, the protocol had no gate at all (the key did not
    exist: the daemon refused the config)."""
    daemon, port = start(make_daemon, watcher, allowed_clients=["127.0.0.1/32"],
                         max_connections=1)
    for _ in range(300):
        assert _from("127.0.0.2", port) == b""
    wait_log(daemon, "not in wyoming.allowed_clients")
    assert synthesize(port) == ["audio-start", "audio-chunk", "audio-stop"]
    lines = [line for line in daemon.log_text().splitlines()
             if "refused a connection from" in line]
    assert 1 <= len(lines) <= 2, lines  # two only if the refusals straddled a minute
    assert "127.0.0.2" in lines[0] and "Traceback" not in daemon.log_text()


@pytest.mark.parametrize(("allowed", "peer", "admitted"), [
    (("127.0.0.0/8", "::1/128"), ("127.0.0.1", 5), True),
    (("127.0.0.0/8", "::1/128"), ("::1", 5, 0, 0), True),
    (("127.0.0.0/8", "::1/128"), ("::ffff:127.0.0.1", 5, 0, 0), True),
    (("127.0.0.0/8", "::1/128"), ("192.168.1.20", 5), False),
    (("192.168.1.0/24",), ("::ffff:192.168.1.20", 5, 0, 0), True),
    (("fe80::/10",), ("fe80::1%eth0", 5, 0, 2), True),
    (("192.168.1.20",), ("192.168.1.21", 5), False),
    (("0.0.0.0/0",), None, False),
    (("0.0.0.0/0",), "/run/a-unix-socket", False),
])
def test_the_gate_reads_every_form_of_a_peer_address(allowed: tuple[str, ...], peer: object,
                                                     admitted: bool) -> None:
    """asyncio's peername in each form a listening socket gives (IPv4, IPv6 with flow and
    scope, IPv4 mapped into IPv6 on a dual-stack socket, a zone); none known: refused."""
    assert (ClientGate(allowed).admits(peer) is not None) == admitted


def test_allowed_clients_must_be_addresses_or_networks(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"wyoming.allowed_clients\[1\]: 'lan'"):
        parse_config({"wyoming": {"allowed_clients": ["10.0.0.0/8", "lan"]}}, tmp_path)
    with pytest.raises(ConfigError, match="must not be empty"):
        parse_config({"wyoming": {"allowed_clients": []}}, tmp_path)
    assert parse_config({}, tmp_path).wyoming.allowed_clients == ("127.0.0.0/8", "::1/128")


# -- 4. one text rule -----------------------------------------------------------------------------

@pytest.fixture
def served(tmp_path: Path, tiny_voice_path: Path) -> Iterator[Served]:
    s = serve(tmp_path, PiperVoice.load(tiny_voice_path))
    yield s
    s.stop()


_REFUSED_CHARACTERS = [("CR", "\r", "the control character U+000D"),
                       ("C1 NEL", "\u0085", "the control character U+0085"),
                       ("C1 CSI", "\u009b", "the control character U+009B"),
                       ("lone surrogate", "\ud800", "an unpaired surrogate U+D800")]
_START, _STOP = frame("synthesize-start"), frame("synthesize-stop")
_WAYS = [("synthesize", lambda t: frame("synthesize", {"text": t})),
         ("synthesize-chunk", lambda t: _START + frame("synthesize-chunk", {"text": "Hello. "})
          + frame("synthesize-chunk", {"text": t}) + _STOP),
         ("voice name", lambda t: frame("synthesize", {"text": "Hi.", "voice": {"name": t}})),
         ("speaker", lambda t: frame("synthesize", {"text": "Hi.", "voice": {"speaker": t}})),
         ("ping text", lambda t: frame("ping", {"text": t}))]


@pytest.mark.parametrize(("way", "send"), _WAYS, ids=[w[0] for w in _WAYS])
def test_wyoming_refuses_what_mqtt_and_http_refuse_by_the_one_text_rule(
        served: Served, way: str, send: Callable[[str], bytes]) -> None:
    """CR, C1 controls and a lone surrogate (a raw JSON escape, as only a hostile client sends
    it) in a `synthesize`, a streamed `synthesize-chunk`, a voice's name or speaker, or a
    ping's text: an `error` event (`bad-request`) naming the character by the rule of
    daemon/fields.py, the one MQTT and HTTP use, and the connection closed. The texts were
    refused already by the one request policy (issue 24, before this work); the names were
    not: a lone surrogate in a ping's text was echoed into a pong that could not be encoded
    (a traceback in the log, the connection dropped unanswered)."""
    for name, character, named in _REFUSED_CHARACTERS:
        text = f"Beware{character}here"
        events = served.run(_until_closed(served.port, send(text)))
        errors = [e for e in events if e.type == "error"]
        assert errors, f"{way} with {name}: no error, got {[e.type for e in events]}"
        assert errors[-1].data["code"] == "bad-request"
        with pytest.raises(RequestError) as rule:  # the one rule's own words
            fields.check_text(text, 100)
        said = str(rule.value).split(" contains ", 1)[1]
        assert said == f"{named} at position 6"
        assert errors[-1].data["text"].endswith(f" contains {said}"), errors[-1].data


# -- 5. found by the fuzz suite -------------------------------------------------------------------

_LONG_ANSWER = " ".join(f"This is sentence {n} of a long answer." for n in range(12))


def test_clients_that_hang_up_as_their_answer_starts_leave_no_synthesis_slot(
        served: Served) -> None:
    """200 clients each ask for a text and hang up (a reset) at once or within a few ms, so that
    some leave just as the answer's audio-start goes out. Every synthesis stream is closed: the
    slots (wyoming.max_connections of them at the scheduler) are all free again and a new
    client is served. Before, a client gone while audio-start was being written left its
    stream open for good (test_fuzz_wyoming, seed 1380530354: after 10,000 cases every slot was
    held by no connection and every request was refused `busy`)."""
    rng = random.Random(7)

    def hang_up(delay_ms: float) -> None:
        with socket.create_connection(("127.0.0.1", served.port)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.sendall(frame("synthesize", {"text": _LONG_ANSWER}))
            time.sleep(delay_ms / 1000)  # spreads the hang-ups over the answer's start

    for _ in range(200):
        hang_up(rng.choice([0.0, 0.0, rng.uniform(0, 3), rng.uniform(0, 10)]))
    assert wait_connections(served.server, 0, _TIMEOUT_S)
    # A stream still being opened when its client left is closed as its opening ends.
    wait_streams(served.speech.scheduler, "wyoming", 0, _TIMEOUT_S)

    async def still_serving() -> list[str]:
        async with served.client() as client:
            await client.write_event(Synthesize(text="Still here.").event())
            return (await read_until(client, "audio-stop")).types

    assert served.run(still_serving()) == ["audio-start", "audio-chunk", "audio-stop"]
