"""Nothing lost, nothing spoken twice: daemon killed, broker killed, broker restarted."""

from __future__ import annotations

import signal
import uuid
from collections import Counter
from pathlib import Path

from edged.audio import from_wav_bytes
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.voices import PreparedVoices
from tests.harness.watcher import Watcher


def _ids(n: int) -> list[str]:
    tag = uuid.uuid4().hex[:6]
    return [f"{tag}-{i}" for i in range(n)]


def _queue_paused(w: Watcher, ids: list[str]) -> None:
    w.control("pause")
    for i, rid in enumerate(ids):
        w.say({"text": f"Request number {i + 1}.", "id": rid})
        w.event(rid, "queued")


def _assert_exactly_once(w: Watcher, ids: list[str]) -> None:
    finals = Counter((e["id"], e["event"]) for e in w.events()
                     if e["event"] in ("finished", "failed", "rejected"))
    for rid in ids:
        assert finals[(rid, "finished")] == 1, (rid, finals)
        assert finals[(rid, "failed")] == finals[(rid, "rejected")] == 0, (rid, finals)
        audio = [m for m in w.messages if m.topic == f"{w.prefix}/audio/{rid}"]
        assert len(audio) == 1, rid
        assert from_wav_bytes(audio[0].payload).duration_s > 0


def test_sigkilled_daemon_with_five_queued_finishes_each_exactly_once(
        make_daemon, watcher: Watcher) -> None:
    """SIGKILL with 5 requests received but unfinished (so unacknowledged): `availability`
    goes offline at once (last will); after a restart the broker redelivers them and each
    is spoken exactly once."""
    d = make_daemon().start(watcher)
    ids = _ids(5)
    _queue_paused(watcher, ids)
    mark = watcher.mark()
    d.signal(signal.SIGKILL)
    d.wait()
    watcher.offline(mark, timeout=5)
    d.start(watcher)  # same client id and state dir; not paused any more
    for rid in ids:
        assert watcher.final(rid)["event"] == "finished"
    ping = f"ping-{uuid.uuid4().hex[:6]}"  # anything redelivered late would precede this
    watcher.say({"text": "Ping.", "id": ping})
    watcher.final(ping)
    _assert_exactly_once(watcher, ids)
    assert all(Counter(e["event"] for e in watcher.events(rid))["started"] == 1 for rid in ids)


def test_sigkilled_broker_mid_queue_every_request_finishes(
        make_daemon, watcher: Watcher, broker: Broker) -> None:
    """A broker killed with SIGKILL forgets sessions and subscriptions: the daemon keeps the
    requests it holds, reconnects, subscribes again (or `resume` could never reach it) and
    finishes every request once; acks for the forgotten session are not sent."""
    d = make_daemon().start(watcher)
    ids = _ids(5)
    _queue_paused(watcher, ids)
    broker.stop(signal.SIGKILL)
    mark = watcher.mark()
    broker.start()
    watcher.wait_subscribed()
    watcher.online(mark)  # the daemon is back: it re-published its retained `online`
    watcher.control("resume")
    for rid in ids:
        assert watcher.final(rid)["event"] == "finished"
    _assert_exactly_once(watcher, ids)
    log = d.log_text()
    assert "session new" in log.split("Disconnected", 1)[1]
    assert d.alive()


def test_events_made_while_the_broker_is_down_arrive_after_it_returns(
        tmp_path: Path, broker: Broker, unique_prefix: str,
        default_voice_path: Path, prepared_voices: PreparedVoices) -> None:
    """With the real default voice: the broker stops (SIGTERM, sessions saved) while the
    daemon works through its queue. The daemon keeps speaking, holds events and audio,
    and delivers them after reconnecting; requests the broker redelivers on the resumed
    session are recognised as finished and not spoken again."""
    w = Watcher(broker.port, unique_prefix, persistent=True)
    prepared_voices.seed(tmp_path / "d" / "cache")
    d = DaemonProc(tmp_path / "d", broker.port, unique_prefix, default_voice_path)
    try:
        d.start(w)
        ids = _ids(4)
        texts = [f"This is announcement number {i + 1}, made while the broker may be down."
                 for i in range(len(ids))]
        for rid, text in zip(ids, texts, strict=True):
            w.say({"text": text, "id": rid})
        for rid in ids:  # each one in the daemon's hands before the broker goes
            w.event(rid, "queued")
        w.event(ids[0], "started")
        broker.stop(signal.SIGTERM)
        wait_log(d, "Disconnected from the broker")
        for rid in ids:
            wait_log(d, f"Finished request {rid}", timeout=30)
        log = d.log_text()
        assert log.index("Disconnected from the broker") < log.index(f"Finished request {ids[-1]}")
        # paho 2.2 logs an ERROR at each reconnect attempt; the daemon says it once instead
        assert "Client is not connected" not in log
        broker.start()
        for rid in ids:
            assert w.final(rid)["event"] == "finished"
        ping = f"ping-{uuid.uuid4().hex[:6]}"
        w.say({"text": "Ping.", "id": ping})
        w.final(ping, timeout=20)
        _assert_exactly_once(w, ids)
        audio = from_wav_bytes(w.audio(ids[-1]).payload)
        assert audio.rate_hz == 22050 and 2.0 < audio.duration_s < 10.0
        assert "delivered again; already handled" in d.log_text()
    finally:
        d.stop()
        w.close()
