"""Issue 12, on the real daemon and broker: what an adversary broke stays fixed.

One test per class of defect: a payload larger than any request (1), a reload with a config
that would not start (3), a FIFO planted in the cache folder (9), rejections that lost the
request's id (10), control characters the docs forbid (11). The flood (2), the memory-limited
cgroup (1), the command line (4-8, 12) and the fuzz suites have modules of their own.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import yaml

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, peak_rss_mb, wait_log
from tests.harness.notify import NotifyListener
from tests.harness.watcher import Watcher

_MB = 1 << 20


def _rid() -> str:
    return f"h-{uuid.uuid4().hex[:10]}"


def _state(w: Watcher, pred: Callable[[dict], bool], start: int = 0) -> dict:
    topic = f"{w.prefix}/state"
    return w.wait(lambda m: m.topic == topic and pred(m.json()), start=start).json()


def _ping(w: Watcher, timeout: float = 10.0) -> None:
    rid = _rid()
    w.say({"text": "Still speaking.", "id": rid})
    assert w.final(rid, timeout)["event"] == "finished"


# -- 1: a payload larger than any request ----------------------------------------------------


def test_a_60_mb_payload_never_reaches_the_daemon_and_it_keeps_speaking(
        make_daemon, watcher: Watcher, broker: Broker) -> None:
    """The daemon announces its largest request as the MQTT 5 Maximum Packet Size: the broker
    drops a 60 MB publish instead of sending it (peak RSS grows by far less than 100 MB, the
    issue's bound), it is not redelivered after a restart, and the daemon keeps speaking."""
    d = make_daemon()
    d.start(watcher)
    _ping(watcher)
    before = peak_rss_mb(d.proc.pid)
    watcher.say(b"x" * (60 * _MB))
    _ping(watcher)
    grown = peak_rss_mb(d.proc.pid) - before
    print(f"peak RSS {before:.0f} MiB before the 60 MB payload, +{grown:.1f} MiB after")
    assert grown < 100, f"peak RSS grew by {grown:.0f} MiB for one message"
    d.signal(signal.SIGTERM)
    assert d.wait(15) == 0
    d.start(watcher)
    _ping(watcher)
    d.stop()
    assert "payload is" not in d.log_text()  # nothing of it ever reached the daemon
    broker.stop()  # mosquitto's log reaches the file when it exits
    client = d.config["mqtt"]["client_id"]
    dropped = f"Dropping too large outgoing PUBLISH for {client}"
    assert broker.log.read_text(errors="replace").count(dropped) == 1  # once, not at restart


def test_a_payload_over_the_request_limit_but_within_the_packet_is_refused_and_counted(
        make_daemon, watcher: Watcher) -> None:
    """What the broker lets through but the daemon refuses (the request limit plus the room
    for topic and header) is rejected under its id and counted in `refused` in the state."""
    make_daemon(limits={"max_chars": 100, "max_request_bytes": 2000}).start(watcher)
    rid = _rid()
    payload = json.dumps({"id": rid, "text": "Hi.", "pad": "x" * 2400}).encode()
    watcher.say(payload)
    event = watcher.final(rid)
    assert event["event"] == "rejected"
    assert event["error"] == f"payload is {len(payload)} bytes; the limit is 2000"
    state = _state(watcher, lambda s: s.get("refused", {}).get("too_large") == 1)
    assert state["refused"] == {"too_large": 1}


# -- 3: a reload with a config that would not start ------------------------------------------


def _bad_configs(d: DaemonProc, tmp_path: Path) -> list[tuple[str, str]]:
    """(config text, a piece of the reason) for configs `run` refuses: each once crashed or
    re-executed into a dead daemon."""
    def text(**change: dict) -> str:
        config = json.loads(json.dumps(d.config))
        for section, values in change.items():
            config[section].update(values)
        return yaml.safe_dump(config)

    secret = tmp_path / "latin1-password"
    secret.write_bytes(b"caf\xe9\n")
    return [
        (text(limits={"stop_timeout_s": "BIG"}).replace("BIG", "1" * 5000),
         "an integer of 5000 characters"),
        (text(mqtt={"topic_prefix": "edged/#"}), "mqtt.topic_prefix: must not contain '#'"),
        (text(limits={"stop_timeout_s": float("nan")}), "limits.stop_timeout_s: expected a finite"),
        (text(mqtt={"username": "u", "password_file": str(secret)}), "not UTF-8 text"),
        ("limits:\n  queue: 3\n  queue: 4\n", "key 'queue' appears twice"),
    ]


def test_a_refused_reload_keeps_the_daemon_running_and_says_why(
        make_daemon, watcher: Watcher, tmp_path: Path, monkeypatch) -> None:
    """SIGHUP with a config that would not start (a 5,000-digit integer, '#' in the topic
    prefix, NaN, a password file that is not UTF-8, a duplicate key): the same process keeps
    serving with its old config and says why in the log, STATUS= and `reload_error` in
    <p>/state; nothing goes offline."""
    listener = NotifyListener(tmp_path / "notify.sock")
    monkeypatch.setenv("NOTIFY_SOCKET", str(listener.path))
    try:
        d = make_daemon().start(watcher)
        pid = d.proc.pid
        for config, reason in _bad_configs(d, tmp_path):
            mark, notes = watcher.mark(), listener.mark()
            d.path.write_text(config)
            d.signal(signal.SIGHUP)
            _state(watcher, lambda s, r=reason: r in s.get("reload_error", ""), start=mark)
            listener.wait(lambda g, r=reason: "reload refused: " in g.fields.get("STATUS", "")
                          and r in g.fields["STATUS"], start=notes)
            wait_log(d, reason)
            assert "Reload refused, keeping the running config: " in d.log_text()
            _ping(watcher)
            assert d.alive() and d.proc.pid == pid
        offline = [m for m in watcher.messages if m.topic.endswith("/availability")
                   and m.payload == b"offline"]
        assert offline == []
        assert "Traceback" not in d.log_text()
    finally:
        listener.close()


# -- 9: a FIFO in the cache folder -----------------------------------------------------------


def test_a_fifo_in_place_of_a_cache_entry_is_replaced_not_waited_on(
        make_daemon, watcher: Watcher) -> None:
    """A FIFO planted under a cache entry's name is noticed (not a regular file), removed and
    the phrase made again; before, opening it blocked the announcer thread for ever."""
    d = make_daemon(cache={"memory_mb": 0}).start(watcher)  # every hit reads the file
    text = "The cache entry of this phrase becomes a FIFO."
    first = _rid()
    watcher.say({"text": text, "id": first})
    assert watcher.final(first)["event"] == "finished"
    entries = list((d.workdir / "cache").glob("??/*.pcm"))
    assert len(entries) == 1
    entries[0].unlink()
    os.mkfifo(entries[0])
    second = _rid()
    watcher.say({"text": text, "id": second})
    done = watcher.final(second)
    assert done["event"] == "finished" and done["cached"] is False
    assert entries[0].is_file()  # made again, as a regular file
    wait_log(d, "not a regular file")


# -- 10, 11: rejections keep the id; forbidden control characters ----------------------------


def test_rejections_of_unparsable_json_carry_the_payloads_valid_id(
        make_daemon, watcher: Watcher) -> None:
    """Duplicate fields, JSON nested too deep, invalid JSON and a bad control request: the
    `rejected` event carries the payload's valid id, so the sender can match it."""
    make_daemon().start(watcher)
    cases = [
        ("say", '{{"id": "{rid}", "text": "a", "text": "b"}}', "field 'text' appears twice"),
        ("say", '{{"id": "{rid}", "text": [[[[["deep"]]]]]}}', "nested deeper than 4"),
        ("say", '{{"id": "{rid}", "text": "unterminated}}', "not valid"),
        ("control", '{{"id": "{rid}", "action": "stop", "action": "skip"}}', "appears twice"),
        ("control", '{{"action": [[[[[1]]]]], "id": "{rid}"}}', "nested deeper than 4"),
    ]
    for topic, template, reason in cases:
        rid = _rid()
        watcher.publish(topic, template.format(rid=rid))
        event = watcher.final(rid)
        assert event["event"] == "rejected" and reason in event["error"], (template, event)


def test_control_characters_the_docs_forbid_are_rejected(
        make_daemon, watcher: Watcher) -> None:
    """Text may hold tab and newline only: CR, NEL (U+0085), CSI (U+009B), DEL and a lone
    surrogate are rejected naming the character; nothing of them is spoken."""
    make_daemon().start(watcher)
    for char, named in (("\r", "U+000D"), ("\u0085", "U+0085"), ("\u009b", "U+009B"),
                        ("\x7f", "U+007F"), ("\ud800", "U+D800")):
        rid = _rid()
        watcher.say(json.dumps({"id": rid, "text": f"Open{char}the door."}))
        event = watcher.final(rid)
        assert event["event"] == "rejected" and named in event["error"], (named, event)
        assert watcher.events(rid) == [event]
    plain = watcher.mark()
    watcher.say("Plain\u009btext.".encode())
    event = watcher.wait(lambda m: m.topic.endswith("/event"), start=plain).json()
    assert event["event"] == "rejected" and "U+009B" in event["error"]
    rid = _rid()
    watcher.say({"id": rid, "text": "Tab\tand\nnewline are fine."})
    assert watcher.final(rid)["event"] == "finished"
