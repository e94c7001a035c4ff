"""The HTTP door hardened (issue 28): clear errors and no tracebacks for malformed requests,
bounds on connections and event streams, timeouts for slow clients, descriptors kept in reserve,
a batch that does not hold every file at once. The real daemon (`edged run`) on a real socket,
raw requests where a client library would refuse to send them; each test failed on the code
before the issue's work."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.harness.daemon import DaemonProc, peak_rss_mb, wait_log
from tests.harness.poll import until
from tests.harness.ports import free_port
from tests.harness.raw_http import RawResponse, exchange, parse_all, request
from tests.harness.watcher import Watcher

KEY = "s3cret-key-for-tests"
_TIMEOUT_S = 30.0


@pytest.fixture
def keyed(make_daemon: Callable[..., DaemonProc], watcher: Watcher,
          tmp_path: Path) -> Iterator[tuple[DaemonProc, int]]:
    """A daemon with HTTP on a free port and an API key."""
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    port = free_port()
    d = make_daemon(http={"enabled": True, "port": port, "api_key_file": str(key_file)})
    d.start(watcher)
    wait_log(d, "HTTP: listening")  # it starts right after READY
    yield d, port


def _auth(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}", **(extra or {})}


def _reason(r: RawResponse, status: int) -> str:
    assert r.status == status, (r.status, r.body[:300])
    assert r.headers.get("content-type", "").startswith("application/json"), r.headers
    return str(r.json()["error"])


def test_malformed_requests_are_one_warning_line_not_a_traceback(
        keyed: tuple[DaemonProc, int]) -> None:
    """A broken request line, a header without a colon, a bad chunk size: 400 with a JSON
    reason and one warning line each; before, aiohttp logged an ERROR with a traceback."""
    d, port = keyed
    for raw in (b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
                b"POST /api/tts HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                b"\r\nzz\r\n\r\n"):
        answers = parse_all(exchange(port, raw))
        assert answers and answers[0].status == 400, (raw, answers)
        assert "error" in answers[0].json()
    _alive_request(port)
    log = d.log_text()
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
    assert log.count("HTTP: malformed request") >= 3, log[-3000:]


def test_a_non_utf8_api_key_is_401(keyed: tuple[DaemonProc, int]) -> None:
    """A key that is not UTF-8 is a wrong key (401), not an internal error (500)."""
    d, port = keyed
    raw = (b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
           b"Authorization: Bearer \xff\xfe\xc3\r\n\r\n")
    (answer,) = parse_all(exchange(port, raw))
    assert "API key" in _reason(answer, 401)
    assert "Traceback" not in d.log_text()


def test_a_repeated_query_parameter_and_a_duplicate_json_key_are_400(
        keyed: tuple[DaemonProc, int]) -> None:
    """`?text=a&text=b` and `{"text": "a", "text": "b"}` name the field given twice; before,
    the last one silently won."""
    _d, port = keyed
    answer = request(port, "GET", "/api/tts?text=One.&text=Two.", headers=_auth())
    assert "text" in _reason(answer, 400) and "twice" in _reason(answer, 400)
    body = b'{"text": "One.", "voice": "x", "text": "Two."}'
    for path in ("/api/tts", "/v1/audio/speech", "/api/tts-batch"):
        answer = request(port, "POST", path, body, _auth({"Content-Type": "application/json"}))
        assert "twice" in _reason(answer, 400), (path, answer.body)


def test_host_ipv6_loopback_without_a_port_is_accepted(keyed: tuple[DaemonProc, int]) -> None:
    """`Host: [::1]` is loopback (before: 403, the brackets were taken for a port)."""
    _d, port = keyed
    for host in ("[::1]", f"[::1]:{port}", "localhost", "127.0.0.1"):
        answer = request(port, "GET", "/api/state", headers=_auth({"Host": host}))
        assert answer.status == 200, (host, answer.status, answer.body[:200])
    assert request(port, "GET", "/api/state",
                   headers=_auth({"Host": "evil.example"})).status == 403


def test_the_page_may_not_be_framed_by_another_site(keyed: tuple[DaemonProc, int]) -> None:
    """The page and its API answers say no framing: CSP frame-ancestors 'none' and
    X-Frame-Options DENY (before: none, a site could frame the page and click for the user)."""
    _d, port = keyed
    for path in ("/", "/healthz"):
        answer = request(port, "GET", path)
        assert answer.status == 200
        assert "frame-ancestors 'none'" in answer.headers.get("content-security-policy", "")
        assert answer.headers.get("x-frame-options") == "DENY"


def _alive_request(port: int) -> None:
    answer = request(port, "GET", "/healthz")
    assert answer.status == 200 and json.loads(answer.body) == {"status": "alive"}


_FD_LIMIT = 200


def _flood_connections(port: int, events: int, plain: int) -> list[socket.socket]:
    """`events` clients asking for /api/events and `plain` that connect and say nothing; all
    kept open (the caller closes them)."""
    held = []
    ask = f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    failed = 0
    for n in range(events + plain):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:  # the backlog is full: a refused connect is an answer too
            failed += 1
            if failed >= 3:
                break
            continue
        sock.settimeout(_TIMEOUT_S)
        held.append(sock)
        if n < events:
            with contextlib.suppress(OSError):
                sock.sendall(ask)
    return held


def test_a_connection_flood_leaves_descriptors_for_the_broker_and_the_cache(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """The daemon under a descriptor limit of 200 (http.max_connections, 128, is lowered to fit
    beside the reserve, with a warning), flooded with 300 event-stream clients and 100 silent
    connections: those beyond http.max_event_streams get 503 with a reason, those
    beyond http.max_connections 503 (or wait in the backlog); a cached and a critical MQTT
    request still end `finished`, the phrase cache is not degraded, the log has no traceback
    and stays small. Before, the flood took every descriptor: asyncio logged a traceback per
    failed accept, requests were acknowledged and dropped, the cache degraded until restart."""
    port = free_port()
    d = make_daemon(http={"enabled": True, "port": port})
    d.launcher = [shutil.which("prlimit") or "prlimit", f"--nofile={_FD_LIMIT}:{_FD_LIMIT}", "--"]
    d.start(watcher)
    wait_log(d, "HTTP: listening")
    wait_log(d, "http.max_connections lowered from 128 to ")
    watcher.say({"text": "Cached before the flood.", "id": "warm"})
    assert watcher.final("warm", _TIMEOUT_S)["event"] == "finished"
    held = _flood_connections(port, 300, 100)
    try:
        for rid, body in (("cached", {"text": "Cached before the flood."}),
                          ("alarm", {"text": "Fire in the kitchen.", "priority": "critical"})):
            watcher.say({**body, "id": rid})
            assert watcher.final(rid, _TIMEOUT_S)["event"] == "finished", rid
        statuses = [_first_status(sock) for sock in held[:300]]
        assert statuses.count(200) <= 8, statuses  # http.max_event_streams
        assert statuses.count(503) >= 250, statuses
        answer = request(port, "GET", "/api/state")
        assert answer.status in (200, 503), answer
    finally:
        for sock in held:
            sock.close()
    assert d.proc is not None and d.alive()
    assert len(os.listdir(f"/proc/{d.proc.pid}/fd")) < _FD_LIMIT
    _alive_request(port)
    topic = f"{watcher.prefix}/state"
    state = watcher.wait(lambda m: m.topic == topic, _TIMEOUT_S, watcher.mark() - 1).json()
    assert not state["cache"]["degraded"], state["cache"]
    log = d.log_text()
    assert "Traceback" not in log, log[-3000:]
    assert len(log) < 100_000, len(log)


def _first_status(sock: socket.socket) -> int:
    """The status of the first answer on `sock` (0: closed without one)."""
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n" not in data:
            part = sock.recv(4096)
            if not part:
                break
            data += part
    head = data.split(b"\r\n", 1)[0].split()
    return int(head[1]) if len(head) > 1 and head[1].isdigit() else 0


def _recv_all(sock: socket.socket) -> bytes:
    """Everything until the server closes (the socket's timeout is the generous limit)."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while part := sock.recv(65536):
            data += part
    return data


def test_slow_headers_slow_bodies_and_idle_connections_are_closed(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """With small configured timeouts: headers that never end get 408 and the connection is
    closed, so does a body that never comes whole; a kept-alive connection left idle is closed.
    Before, each held its descriptor for as long as the client liked."""
    port = free_port()
    d = make_daemon(http={"enabled": True, "port": port, "header_timeout_s": 0.5,
                          "body_timeout_s": 0.5, "idle_timeout_s": 0.5})
    d.start(watcher)
    wait_log(d, "HTTP: listening")
    host = f"Host: 127.0.0.1:{port}\r\n".encode()
    cases = [(b"GET /healthz HTTP/1.1\r\n" + host, 408, b"header_timeout_s"),
             (b"POST /api/say HTTP/1.1\r\n" + host + b"Content-Length: 100\r\n\r\n{\"te", 408,
              b"body_timeout_s"),
             (b"GET /healthz HTTP/1.1\r\n" + host + b"\r\n", 200, b"alive")]
    for sent, status, said in cases:
        with socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT_S) as sock:
            sock.sendall(sent)
            answers = parse_all(_recv_all(sock))  # returns: the server closed the connection
        assert [a.status for a in answers] == [status], (sent, answers)
        assert said in answers[0].body, answers[0].body
    log = d.log_text()
    assert "Traceback" not in log, log[-3000:]


def test_connections_and_event_streams_beyond_their_bounds_get_503_with_a_reason(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """http.max_event_streams 1: a second /api/events gets 503 naming the option; with
    http.max_connections 4 taken, a fifth connection gets 503 naming it and is closed; once
    they are gone a request is served again."""
    port = free_port()
    d = make_daemon(http={"enabled": True, "port": port, "max_connections": 4,
                          "max_event_streams": 1})
    d.start(watcher)
    wait_log(d, "HTTP: listening")
    ask = f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    first = socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT_S)
    held = [first]
    try:
        first.sendall(ask)
        assert _first_status(first) == 200
        with socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT_S) as second:
            second.sendall(ask)  # keep-alive asked: closed all the same
            (refused_stream,) = parse_all(_recv_all(second))
        assert "http.max_event_streams" in _reason(refused_stream, 503)
        held += [socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT_S)
                 for _ in range(3)]
        with socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT_S) as fifth:
            (refused,) = parse_all(_recv_all(fifth))
        assert "http.max_connections" in _reason(refused, 503)
    finally:
        for sock in held:
            sock.close()
    # The daemon sees the closes a moment later (no event to await here).
    assert until(lambda: request(port, "GET", "/healthz").status == 200, 10, 0.05)


_BATCH_TEXT = " ".join(["The quick brown fox jumps over the lazy dog."] * 60)  # ~2,700 chars
_BATCHES = 6
_BATCH_ITEMS = 20


def test_six_concurrent_cached_batches_stay_in_bounded_memory(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """Six /api/tts-batch requests at once, each 20 cached long texts (a 23 MB zip each):
    every zip comes whole, and the daemon's peak RSS grows by far less than the zips' sum, as
    each entry is written as it is made. Before, each request held its chunks, every WAV and
    the whole zip at once: peak RSS grew by 2.5x the zips' sum (639 MB for six 43 MB zips;
    OOM-killed under MemoryMax=512M); now by 54 MB for those."""
    port = free_port()
    d = make_daemon(http={"enabled": True, "port": port, "batch_max_items": _BATCH_ITEMS},
                    limits={"max_chars": 3000, "memory_mb": 8000, "stop_timeout_s": 5})
    d.start(watcher)
    wait_log(d, "HTTP: listening")
    body = json.dumps({"texts": [_BATCH_TEXT] * _BATCH_ITEMS, "speed": 0.5}).encode()
    headers = {"Content-Type": "application/json"}
    first = request(port, "POST", "/api/tts-batch", body, headers)  # made once, then cached
    assert first.status == 200, first.body[:300]
    size = len(first.body)
    assert d.proc is not None
    before = peak_rss_mb(d.proc.pid)
    with ThreadPoolExecutor(_BATCHES) as pool:
        answers = list(pool.map(lambda _n: request(port, "POST", "/api/tts-batch", body, headers),
                                range(_BATCHES)))
    grown = peak_rss_mb(d.proc.pid) - before
    for answer in answers:
        assert answer.status == 200 and len(answer.body) == size
        archive = zipfile.ZipFile(io.BytesIO(answer.body))
        assert archive.namelist() == [f"{i:03d}.wav" for i in range(1, _BATCH_ITEMS + 1)]
        assert archive.testzip() is None
    total_mb = _BATCHES * size / 2**20
    print(f"batch: {size / 2**20:.1f} MB each, {_BATCHES} at once; peak RSS grew {grown:.0f} MB")
    assert grown < total_mb / 4, (grown, total_mb)
    assert "Traceback" not in d.log_text()


def test_a_descriptor_shortage_loses_no_acknowledged_request(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """The running daemon's descriptor limit lowered to what it has open (prlimit on its pid):
    no file can be opened anywhere. A cached and an uncached critical MQTT request still end
    `finished`, with no traceback; with the limit back, the cache is not degraded. Before, the
    memory guard's read of /proc raised EMFILE in the MQTT handler: the request was
    acknowledged and dropped; a cache write failing on EMFILE degraded the cache until
    restart."""
    d = make_daemon().start(watcher)
    assert d.proc is not None
    pid = d.proc.pid
    wait_log(d, "HTTP: listening")  # its imports come after READY: a start-up, not a request
    watcher.say({"text": "Cached before the shortage.", "id": "warm"})
    assert watcher.final("warm", _TIMEOUT_S)["event"] == "finished"
    prlimit = shutil.which("prlimit") or "prlimit"
    hard = int(Path(f"/proc/{pid}/limits").read_text().split("Max open files")[1].split()[1])
    subprocess.run([prlimit, f"--pid={pid}", f"--nofile={len(os.listdir(f'/proc/{pid}/fd'))}:"
                    f"{hard}"], check=True)
    try:
        for rid, body in (("cached", {"text": "Cached before the shortage."}),
                          ("alarm", {"text": "Smoke in the hall.", "priority": "critical"})):
            watcher.say({**body, "id": rid})
            assert watcher.final(rid, _TIMEOUT_S)["event"] == "finished", rid
    finally:
        subprocess.run([prlimit, f"--pid={pid}", f"--nofile={hard}:{hard}"], check=True)
    watcher.say({"text": "After the shortage.", "id": "after"})
    assert watcher.final("after", _TIMEOUT_S)["event"] == "finished"
    topic = f"{watcher.prefix}/state"
    state = watcher.wait(lambda m: m.topic == topic, _TIMEOUT_S, watcher.mark() - 1).json()
    assert not state["cache"]["degraded"], state["cache"]
    assert "Traceback" not in d.log_text(), d.log_text()[-3000:]


def _http_streams(port: int) -> int:
    return int(request(port, "GET", "/api/state").json()["synthesis_streams"]["http"])


def test_a_client_that_does_not_read_its_audio_is_cut_off(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """A client asks for ~10 MB of speech and reads none of it: after http.write_timeout_s
    (0.5 s here) without progress it is cut off and its synthesis slot is free again (the next
    uncached request is served, not 429). Before, it held the slot for as long as it liked:
    http.max_streams such clients shut HTTP speech out."""
    port = free_port()
    d = make_daemon(http={"enabled": True, "port": port, "write_timeout_s": 0.5,
                          "max_streams": 1},
                    limits={"max_chars": 20000, "memory_mb": 8000, "stop_timeout_s": 5})
    d.start(watcher)
    wait_log(d, "HTTP: listening")
    body = json.dumps({"text": _BATCH_TEXT * 7, "speed": 0.5}).encode()
    with socket.socket() as idle:
        idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: it fills
        idle.connect(("127.0.0.1", port))
        idle.sendall(b"POST /api/tts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/"
                     b"json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        assert until(lambda: _http_streams(port) == 1, _TIMEOUT_S), "the stream never opened"
        assert until(lambda: _http_streams(port) == 0, _TIMEOUT_S), "the reader that never reads kept it"
        answer = request(port, "GET", "/api/tts?text=Next+in+line.")
    assert answer.status == 200, answer.body[:200]
    assert "Traceback" not in d.log_text()
