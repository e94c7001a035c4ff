"""edged.notify.Notifier against a real AF_UNIX datagram socket standing in for systemd."""

from __future__ import annotations

import logging
import os
import queue
import socket
import time
from pathlib import Path

import pytest

from edged.notify import Notifier

_TIMEOUT_S = 5.0
_WATCHDOG_USEC = 100_000  # pings every 50 ms: fast tests, same code path as WatchdogSec=30


class NotifySocket:
    """The listening end of NOTIFY_SOCKET: path or "@abstract" address, as systemd uses."""

    def __init__(self, addr: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + addr[1:] if addr.startswith("@") else addr)

    def recv(self, timeout: float = _TIMEOUT_S) -> dict[str, str]:
        self.sock.settimeout(timeout)
        data = self.sock.recv(4096).decode()
        return dict(line.split("=", 1) for line in data.splitlines() if line)

    def recv_until(self, key: str, timeout: float = _TIMEOUT_S) -> dict[str, str]:
        """The next message holding `key`, skipping others (watchdog pings)."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if key in msg:
                return msg

    def drain(self) -> list[dict[str, str]]:
        """Every message already queued, without waiting."""
        out = []
        self.sock.setblocking(False)
        try:
            while True:
                data = self.sock.recv(4096).decode()
                out.append(dict(line.split("=", 1) for line in data.splitlines() if line))
        except BlockingIOError:
            return out
        finally:
            self.sock.setblocking(True)


class Heartbeat:
    """A heartbeat whose value the test sets; every read is reported on a queue so the test can
    wait for the watchdog thread to have looked at a new value (no sleeping)."""

    def __init__(self) -> None:
        self.value = time.monotonic()
        self.reads: queue.Queue[None] = queue.Queue()

    def __call__(self) -> float:
        self.reads.put(None)
        return self.value

    def set(self, value: float) -> None:
        self.value = value
        # Reads already queued may have seen the old value; only count reads from now on.
        while not self.reads.empty():
            self.reads.get_nowait()

    def wait_reads(self, n: int) -> None:
        for _ in range(n):
            self.reads.get(timeout=_TIMEOUT_S)


@pytest.fixture(params=["path", "abstract"])
def notify_socket(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A datagram socket bound at a path or in the abstract namespace, named by NOTIFY_SOCKET."""
    if request.param == "path":
        addr = str(tmp_path / "notify.sock")
    else:
        addr = f"@edged-test-{os.getpid()}-{time.monotonic_ns()}"
    ns = NotifySocket(addr)
    monkeypatch.setenv("NOTIFY_SOCKET", addr)
    monkeypatch.setenv("WATCHDOG_USEC", str(_WATCHDOG_USEC))
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    yield ns
    ns.sock.close()


def test_lifecycle_messages_arrive_in_order_as_systemd_parses_them(notify_socket: NotifySocket) -> None:
    """STATUS, READY (with status), RELOADING with MONOTONIC_USEC, STOPPING arrive in order and
    exactly as systemd parses them; a newline in a status cannot inject another assignment."""
    with Notifier() as n:
        n.status("loading voice")
        assert notify_socket.recv() == {"STATUS": "loading voice"}
        n.ready("idle")
        assert notify_socket.recv() == {"READY": "1", "STATUS": "idle"}
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        n.reloading()
        msg = notify_socket.recv()
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        assert msg["RELOADING"] == "1"
        assert before <= int(msg["MONOTONIC_USEC"]) <= after
        n.ready()
        assert notify_socket.recv() == {"READY": "1"}
        n.status("bad\nREADY=1")
        assert notify_socket.recv() == {"STATUS": "bad READY=1"}
        n.stopping()
        assert notify_socket.recv() == {"STOPPING": "1"}


def test_watchdog_pings_while_heartbeat_fresh(notify_socket: NotifySocket) -> None:
    """WATCHDOG=1 is sent periodically, at WATCHDOG_USEC/2, while the heartbeat is fresh."""
    beat = Heartbeat()
    with Notifier() as n:
        assert n.start_watchdog(lambda: time.monotonic(), max_age_s=5.0)
        assert n.watchdog_interval_s == pytest.approx(_WATCHDOG_USEC / 2e6)
        for _ in range(5):
            assert notify_socket.recv() == {"WATCHDOG": "1"}
        assert not n.start_watchdog(beat, 5.0), "a second watchdog thread must not start"


def test_stale_heartbeat_stops_pings_and_fresh_resumes(
    notify_socket: NotifySocket, caplog: pytest.LogCaptureFixture
) -> None:
    """A hung worker (heartbeat older than max_age_s) gets no WATCHDOG=1, so systemd restarts
    the daemon; when the heartbeat is fresh again the pings resume. One warning each way."""
    caplog.set_level(logging.WARNING, logger="edged.notify")
    beat = Heartbeat()
    with Notifier() as n:
        assert n.start_watchdog(beat, max_age_s=30.0)
        assert notify_socket.recv() == {"WATCHDOG": "1"}

        beat.set(time.monotonic() - 60.0)  # the worker's last sign of life: a minute ago
        # After the 2nd read of the stale value, any ping decided on the old value is queued.
        beat.wait_reads(2)
        before = notify_socket.drain()
        beat.wait_reads(4)
        after = notify_socket.drain()
        assert [m for m in after if "WATCHDOG" in m] == [], "pings went on with a stale heartbeat"
        said = [m["STATUS"] for m in before + after if "STATUS" in m]
        assert len(said) == 1 and said[0].startswith("watchdog: worker hung: worker heartbeat is")
        stopped = [r for r in caplog.records if "stopped pinging" in r.getMessage()]
        assert len(stopped) == 1

        beat.set(time.monotonic() + 3600.0)  # fresh (for the rest of this test)
        assert notify_socket.recv()["STATUS"].startswith("watchdog: worker healthy again")
        assert notify_socket.recv() == {"WATCHDOG": "1"}
        resumed = [r for r in caplog.records if "pings resumed" in r.getMessage()]
        assert len(resumed) == 1


def test_broken_heartbeat_counts_as_stale(
    notify_socket: NotifySocket, caplog: pytest.LogCaptureFixture
) -> None:
    """A heartbeat callback that raises means an unhealthy daemon: no pings, no crashed thread."""
    reads: queue.Queue[None] = queue.Queue()

    def broken() -> float:
        reads.put(None)
        raise RuntimeError("worker state gone")

    with Notifier() as n:
        assert n.start_watchdog(broken, max_age_s=30.0)
        for _ in range(3):
            reads.get(timeout=_TIMEOUT_S)
        sent = notify_socket.drain()
        assert [m for m in sent if "WATCHDOG" in m] == []
        assert [m["STATUS"][:21] for m in sent] == ["watchdog: worker hung"]
    assert any("heartbeat callback failed" in r.getMessage() for r in caplog.records)


def test_watchdog_pid_of_another_process(
    notify_socket: NotifySocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WATCHDOG_PID naming another process (we are its child) means: do not ping; our own pid
    means: ping."""
    monkeypatch.setenv("WATCHDOG_PID", str(os.getppid()))
    with Notifier() as n:
        assert not n.start_watchdog(time.monotonic, 5.0)
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    with Notifier() as n:
        assert n.start_watchdog(time.monotonic, 5.0)
        assert notify_socket.recv() == {"WATCHDOG": "1"}


@pytest.mark.parametrize("usec", ["", "0", "soon"])
def test_no_watchdog_requested(
    notify_socket: NotifySocket, monkeypatch: pytest.MonkeyPatch, usec: str
) -> None:
    """Without a usable WATCHDOG_USEC no thread starts, and other messages still work."""
    monkeypatch.setenv("WATCHDOG_USEC", usec)
    with Notifier() as n:
        assert not n.start_watchdog(time.monotonic, 5.0)
        assert n.watchdog_interval_s is None
        n.ready()
        assert notify_socket.recv() == {"READY": "1"}


def test_no_notify_socket_is_a_noop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run by hand (no NOTIFY_SOCKET): every call is silent and nothing starts."""
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.setenv("WATCHDOG_USEC", "100000")
    n = Notifier()
    assert not n.enabled
    n.status("x")
    n.ready("y")
    n.reloading()
    n.stopping()
    assert not n.start_watchdog(time.monotonic, 5.0)
    n.close()
    n.close()


def test_notifier_created_before_env_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket is opened at the first message, not in __init__ (sdnotify connects once)."""
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    n = Notifier()
    ns = NotifySocket(str(tmp_path / "late.sock"))
    try:
        monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "late.sock"))
        n.ready()
        assert ns.recv() == {"READY": "1"}
    finally:
        n.close()
        ns.sock.close()


def test_missing_listener_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """NOTIFY_SOCKET naming nothing: one warning, no exception, later calls stay quiet."""
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "nobody-listens.sock"))
    with Notifier() as n:
        n.ready()
        n.status("still fine")
        n.stopping()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "cannot connect" in warnings[0].getMessage()


def test_close_stops_the_watchdog(notify_socket: NotifySocket) -> None:
    """After close() no more pings arrive and no thread is left behind."""
    n = Notifier()
    assert n.start_watchdog(time.monotonic, 5.0)
    assert notify_socket.recv() == {"WATCHDOG": "1"}
    thread = n._thread
    n.close()
    assert thread is not None and not thread.is_alive()
    notify_socket.drain()
    n.ready()  # after close: nothing is sent
    # A marker sent after it is the next datagram: nothing came between (no waiting for an
    # absence; the pinging thread is already gone).
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as marker:
        marker.sendto(b"MARKER=1", notify_socket.sock.getsockname())
    assert notify_socket.recv() == {"MARKER": "1"}
