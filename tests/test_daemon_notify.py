"""The real `edged run` talking sd_notify to a datagram socket standing in for systemd.

No systemd runs here (PID 1 is not systemd), so the test binds the NOTIFY_SOCKET itself and
reads what the daemon sends, with the sender's PID from SCM_CREDENTIALS (SO_PASSCRED), the
way systemd checks NotifyAccess=main.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.notify import NotifyListener
from tests.harness.watcher import Message, Watcher

_WATCHDOG_USEC = 400_000
_PING_S = _WATCHDOG_USEC / 2e6  # the daemon pings every WATCHDOG_USEC / 2
_TIMEOUT_S = 15.0
# One sentence without punctuation: a single inference of a few hundred phonemes, several
# seconds with the real voice on this class of CPU (12 s for 850 phonemes here), while the
# heartbeat limit is 1 s. The speaker beats only between chunks, so the heartbeat goes stale.
_LONG_TEXT = " ".join(["the quick brown fox jumps over the lazy dog and keeps on running"] * 4)


@pytest.fixture
def notify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """NOTIFY_SOCKET and WATCHDOG_USEC for the daemons this test starts (they inherit os.environ)."""
    listener = NotifyListener(tmp_path / "notify.sock")
    monkeypatch.setenv("NOTIFY_SOCKET", str(listener.path))
    monkeypatch.setenv("WATCHDOG_USEC", str(_WATCHDOG_USEC))
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    yield listener
    listener.close()


def _say(watcher: Watcher, text: str, timeout: float = _TIMEOUT_S) -> dict:
    rid = f"r-{uuid.uuid4().hex[:8]}"
    watcher.say({"id": rid, "text": text})
    return watcher.final(rid, timeout)


def _wait_pings(notify: NotifyListener, start: int, n: int) -> list[float]:
    for _ in range(n):
        start = notify.wait_key("WATCHDOG", start, timeout=5 * _PING_S + 2) + 1
    return notify.pings(0, start)[-n:]


def test_lifecycle_status_ready_watchdog_reload_stop(tmp_path: Path, broker: Broker,
                                                     unique_prefix: str, tiny_voice_path: Path,
                                                     notify: NotifyListener) -> None:
    """Protects the systemd contract of `edged run`: STATUS before READY, READY only once the
    voice is loaded and warmed (and the daemon then answers), periodic WATCHDOG pings, SIGHUP ->
    RELOADING then READY from the same PID, SIGTERM -> STOPPING and exit 0."""
    watcher = Watcher(broker.port, unique_prefix)
    daemon = DaemonProc(tmp_path / "d", broker.port, unique_prefix, tiny_voice_path)
    try:
        daemon.start()
        pid = daemon.proc.pid
        ready = notify.wait_key("READY")
        # The log line is written before READY is sent: if READY came earlier it would be missing.
        assert "warmed up" in daemon.log_text(), daemon.log_text()[-2000:]
        before = [d.fields for d in notify.got[:ready]]
        assert before and all("READY" not in f and "WATCHDOG" not in f for f in before), before
        assert any("voice" in f.get("STATUS", "") for f in before), before
        assert notify.got[ready].pid == pid
        assert all(d.pid == pid for d in notify.got[: ready + 1])

        watcher.online(timeout=_TIMEOUT_S)
        assert _say(watcher, "Hello right after ready.")["event"] == "finished"

        _wait_pings(notify, ready + 1, 5)
        # The period is systemd's: WATCHDOG_USEC / 2 (the pings' spacing is timing, for bench/).
        assert f"Watchdog: pinging every {_PING_S:.3f} s" in daemon.log_text()

        mark, online_mark = notify.mark(), watcher.mark()
        daemon.signal(signal.SIGHUP)
        reloading = notify.wait_key("RELOADING", mark)
        assert "MONOTONIC_USEC" in notify.got[reloading].fields
        ready2 = notify.wait_key("READY", reloading + 1, timeout=30)
        assert {notify.got[reloading].pid, notify.got[ready2].pid} == {pid}
        assert daemon.alive() and daemon.proc.pid == pid
        watcher.online(online_mark, timeout=_TIMEOUT_S)
        assert _say(watcher, "Still here after the reload.")["event"] == "finished"
        _wait_pings(notify, ready2 + 1, 3)

        mark = notify.mark()
        daemon.signal(signal.SIGTERM)
        stopping = notify.wait_key("STOPPING", mark)
        assert notify.got[stopping].pid == pid
        assert daemon.wait(_TIMEOUT_S) == 0
    finally:
        daemon.stop()
        watcher.close()


def test_watchdog_pings_stop_while_the_worker_hangs(tmp_path: Path, broker: Broker,
                                                    unique_prefix: str, default_voice_path: Path,
                                                    notify: NotifyListener) -> None:
    """Protects the point of the watchdog: while one inference keeps the announcer thread from
    beating for longer than limits.heartbeat_max_age_s, no WATCHDOG=1 is sent (so systemd
    would restart edged), and pings resume once the worker is healthy again.

    The voice is loaded as it is (`prepare: false`): a prepared voice hands over audio window by
    window, and the speaker beats at every window; one whole-graph inference does not."""
    watcher = Watcher(broker.port, unique_prefix)
    daemon = DaemonProc(tmp_path / "d", broker.port, unique_prefix, default_voice_path,
                        # one thread: the single long inference must outlast the max age
                        voice={"max_phonemes": 2000, "threads": 1, "prepare": False},
                        limits={"heartbeat_max_age_s": 1.0})
    try:
        daemon.start(watcher)
        ready = notify.wait_key("READY")
        _wait_pings(notify, ready + 1, 3)  # healthy and idle: pinging

        rid = "hang-1"
        watcher.say({"id": rid, "text": _LONG_TEXT})
        topic = f"{unique_prefix}/event"

        def event(*kinds: str) -> Callable[[Message], bool]:
            return lambda m: (m.topic == topic and m.json().get("id") == rid
                              and m.json().get("event") in kinds)

        watcher.wait(event("started"))
        hung = notify.wait(lambda d: d.fields.get("STATUS", "").startswith("watchdog: worker hung"),
                           ready, timeout=60)
        healthy = notify.wait(lambda d: d.fields.get("STATUS", "").startswith(
            "watchdog: worker healthy again"), hung, timeout=60)
        done = watcher.wait(event("finished", "failed"), timeout=60).json()
        assert done["event"] == "finished", done
        # The watchdog's own order of events: no ping between "hung" and "healthy again".
        assert notify.pings(hung, healthy) == [], done
        _wait_pings(notify, healthy, 3)  # pinging again
        wait_log(daemon, "stopped pinging")
        wait_log(daemon, "pings resumed")
    finally:
        daemon.stop()
        watcher.close()


def test_first_start_prepares_the_voice_and_says_so(tmp_path: Path, broker: Broker, unique_prefix: str,
                                                   default_voice_path: Path,
                                                   notify: NotifyListener) -> None:
    """A new cache dir: STATUS says the voice is being prepared before READY (it takes seconds,
    minutes on a small board), and the same datagram extends systemd's start timeout by the
    preparer's own bound and a minute (EXTEND_TIMEOUT_USEC: TimeoutStartSec=120 would otherwise
    kill a Pi Zero's first start while it prepares). The next start finds it prepared and says
    nothing of the kind."""
    watcher = Watcher(broker.port, unique_prefix)
    daemon = DaemonProc(tmp_path / "d", broker.port, unique_prefix, default_voice_path)
    try:
        for start in ("first", "second"):
            mark = notify.mark()
            daemon.start(watcher)
            ready = notify.wait(lambda d: d.fields.get("READY") == "1", mark)
            statuses = [d.fields.get("STATUS", "") for d in notify.got[mark:ready]]
            preparing = [d.fields for d in notify.got[mark:ready] if d.fields.get(
                "STATUS", "").startswith("preparing voice en_US-joe-medium.onnx")]
            assert bool(preparing) == (start == "first"), (start, statuses)
            assert [p.get("EXTEND_TIMEOUT_USEC") for p in preparing] == (
                ["660000000"] if start == "first" else [])
            daemon.signal(signal.SIGTERM)
            assert daemon.wait(_TIMEOUT_S) == 0
        models = (tmp_path / "d" / "cache" / "models").iterdir()  # Kokoro's too, when installed
        assert len([m for m in models if m.name.startswith("en_US-joe-medium")]) == 1
    finally:
        daemon.stop()
        watcher.close()
