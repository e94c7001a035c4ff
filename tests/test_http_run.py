"""`edged run` and its HTTP port: loopback by default, shown in <prefix>/state; a port in use is
one warning when http was left at its default, and a one-line start-up failure when
`http.enabled` was set explicitly. A connected event stream does not hold up SIGTERM."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another program is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]


def _state(watcher: Watcher) -> dict:
    topic = f"{watcher.prefix}/state"
    return watcher.wait(lambda m: m.topic == topic and "http" in m.json()).json()


def test_http_listens_on_loopback_and_says_so_in_state(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """With only a port set, HTTP listens on 127.0.0.1; its URL is in <prefix>/state."""
    port = free_port()
    make_daemon(http={"port": port}).start(watcher)
    state = _state(watcher)
    assert state["http"] == {"state": "listening", "url": f"http://127.0.0.1:{port}/"}
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json() == {"status": "alive"}


def test_default_http_on_a_taken_port_warns_and_runs_on(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher, taken_port: int) -> None:
    """http.enabled left at its default: one warning, the daemon serves MQTT, state says why
    HTTP is off."""
    daemon = make_daemon(http={"port": taken_port}).start(watcher)
    state = _state(watcher)
    assert state["http"]["state"] == "off"
    assert f"cannot listen on 127.0.0.1:{taken_port}" in state["http"]["error"]
    wait_log(daemon, f"http: cannot listen on 127.0.0.1:{taken_port}")
    watcher.say({"text": "Still here.", "id": "s1"})
    assert watcher.final("s1")["event"] == "finished"


def test_explicit_http_on_a_taken_port_fails_the_start_in_one_line(
        make_daemon: Callable[..., DaemonProc], taken_port: int) -> None:
    """http.enabled: true set in the file: exit 2 and one line naming the port."""
    daemon = make_daemon(http={"enabled": True, "port": taken_port}).start()
    assert daemon.wait(60) == 2
    last = daemon.log_text().strip().splitlines()[-1]
    assert last.startswith("edged: http.port: cannot listen on 127.0.0.1:")
    assert str(taken_port) in last


def test_sigterm_ends_the_daemon_with_an_event_stream_open(
        make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> None:
    """An SSE client never ends by itself; the server ends it, and the daemon exits 0."""
    port = free_port()
    daemon = make_daemon(http={"port": port}).start(watcher)
    opened = threading.Event()
    ended = threading.Event()

    def follow() -> None:
        try:
            with httpx.stream("GET", f"http://127.0.0.1:{port}/api/events",
                              timeout=httpx.Timeout(10, read=None)) as response:
                opened.set()
                for _ in response.iter_lines():
                    pass
        except httpx.HTTPError:
            pass
        ended.set()

    threading.Thread(target=follow, daemon=True).start()
    assert opened.wait(10)
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(30) == 0
    assert ended.wait(10)
