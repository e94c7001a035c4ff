"""Groups: one request on `<group_prefix>/group/<name>/say`, every member speaks it, each with its
own events (its device_id in every one); a start instant (play_at, or start_in_ms + sent_at) where
the player starts the first sample, to the frame, or says how late it was (groups_late).

The player tests play through a real PortAudio device (the ALSA file sink, tests/harness/alsa_sink.py)
and check the player's own account of when the first sample sounds against the instant: the
skew between two daemons is measured in bench/skew.py (timing stays out of the tests).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from edged.config import AudioConfig, ConfigError, parse_config
from edged.playback import Player
from tests.harness import alsa_sink
from tests.harness.alsa_sink import RATE
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.watcher import Watcher

_TIMEOUT_S = 20.0


def _rid() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


# -- the player: the first sample at the instant -------------------------------------------


def test_the_first_sample_sounds_at_the_instant_with_exact_silence_before_it(tmp_path, monkeypatch):
    """Protects: with `start_at`, the player writes silence up to the instant, to the frame,
    then the sound: by its own clock the first sample sounds at the instant (not late), and
    the silence written before it is exactly the time from the device start to the instant."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    player = Player(AudioConfig(preroll_ms=100, fade_ms=0, normalize=False))
    try:
        player.check_device()
        tone = alsa_sink.tone(440, 0.2)
        # Far enough ahead that opening the device on a loaded machine is not late.
        start_at = time.monotonic() + 1.5
        report = player.play(iter([tone]), start_at=start_at)
    finally:
        player.close()
    assert not report.skipped and report.late_s < 1 / RATE  # within a frame
    assert report.started_at is not None and abs(report.started_at - start_at) < 1 / RATE
    y = sink.samples()
    first = int(np.flatnonzero(y)[0])
    assert np.array_equal(y[first:first + len(tone.samples)], tone.samples)
    # The silence before the tone is the pre-roll's worth at most plus the write-ahead: the
    # device started shortly before the instant, not at the call.
    assert first <= int((0.1 + 0.04 + 0.01) * RATE) + 1


@pytest.mark.parametrize("skip", [False, True])
def test_a_start_instant_already_past_plays_late_or_is_skipped(tmp_path, monkeypatch,
                                                                skip: bool) -> None:
    """Protects: an instant that passed before the sound was ready: `play` starts at once
    and reports how late (late_s at least the time already past); `skip` plays nothing and
    says it skipped."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    player = Player(AudioConfig(preroll_ms=50, fade_ms=0, normalize=False))
    try:
        tone = alsa_sink.tone(440, 0.1)
        start_at = time.monotonic() - 0.5
        report = player.play(iter([tone]), start_at=start_at, skip_late=skip)
    finally:
        player.close()
    assert report.skipped is skip
    assert report.late_s >= 0.5
    played = sink.samples()
    if skip:
        assert not played.any()
    else:
        assert np.array_equal(played[np.flatnonzero(played)[0]:][:len(tone.samples)],
                              tone.samples)


# -- config -------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "message"), [
    ({"device_id": "group"}, "device_id: 'group' is reserved"),
    ({"device_id": "synth"}, "device_id: 'synth' is reserved"),
    ({"mqtt": {"topic_prefix": "edged/group/x"}}, "inside the house-wide topics"),
    ({"groups": ["up/down"]}, "groups[0]: a group name is one topic level"),
    ({"groups": ["all", "all"]}, "groups: a group is named twice"),
    ({"groups": ["a+"]}, "groups[0]: must not contain '+'"),
    ({"mqtt": {"group_prefix": "home/#"}}, "mqtt.group_prefix: must not contain '#'"),
    ({"groups_late": "maybe"}, "groups_late: expected one of play, skip"),
])
def test_group_config_errors_name_the_key(tmp_path: Path, data: dict, message: str) -> None:
    """Reserved device ids, group names that are not one topic level, a bad late policy."""
    with pytest.raises(ConfigError) as info:
        parse_config(data, tmp_path)
    assert message in str(info.value)


# -- daemons ------------------------------------------------------------------------------


@pytest.fixture
def house(unique_prefix: str) -> str:
    """A group prefix of this test's own (mqtt.group_prefix), so tests never share a group."""
    return f"{unique_prefix}-house"


def _member(make, house: str, name: str, **more) -> DaemonProc:
    return make(name, device_id=name, groups=["downstairs", "all"],
                mqtt={"group_prefix": house, "topic_prefix": f"{house}-dev/{name}"}, **more)


def test_one_group_request_is_spoken_by_every_member_each_with_its_device_id(
        make_daemon, broker: Broker, house: str) -> None:
    """Two members of `all`: one message on <group_prefix>/group/all/say, each member queues,
    starts and finishes it on its own <p>/event with its own device_id in every event, and
    publishes its own audio; a group it is not in does not reach it."""
    names = ("kitchen", "hall")
    watchers = [Watcher(broker.port, f"{house}-dev/{n}") for n in names]
    try:
        for name, w in zip(names, watchers, strict=True):
            _member(make_daemon, house, name).start(w)
        sender = Watcher(broker.port, f"{house}/group", topics=("none",))
        rid, other = _rid(), _rid()
        sender.publish("upstairs/say", {"text": "Not for us.", "id": other})
        sender.publish("all/say", {"text": "Dinner is ready.", "id": rid})
        for name, w in zip(names, watchers, strict=True):
            assert w.final(rid, _TIMEOUT_S)["event"] == "finished"
            events = w.events(rid)
            assert [e["event"] for e in events] == ["queued", "started", "finished"]
            assert {e["device_id"] for e in events} == {name}
            assert events[0]["group"] == "all"
            assert w.audio(rid).payload[:4] == b"RIFF"
            assert w.events(other) == []
        sender.close()
    finally:
        for w in watchers:
            w.close()


def test_start_in_ms_needs_sent_at_and_far_instants_are_refused(daemon, watcher) -> None:
    """start_in_ms without sent_at, and an instant more than 60 s ahead, are rejected with
    their reason (the member would otherwise hold its loudspeaker, or guess the instant)."""
    now_ms = time.time() * 1000
    cases = [({"start_in_ms": 500}, "start_in_ms needs sent_at"),
             ({"play_at": now_ms + 3_600_000}, "at most 60 s"),
             ({"play_at": now_ms, "start_in_ms": 1, "sent_at": now_ms}, "not both")]
    for extra, reason in cases:
        rid = _rid()
        watcher.say({"text": "Timed.", "id": rid, **extra})
        event = watcher.final(rid)
        assert event["event"] == "rejected" and reason in event["error"], event


def test_a_group_request_plays_at_its_instant_on_each_member(
        make_daemon, broker: Broker, house: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """output: play through the ALSA file sink: a group request with start_in_ms + sent_at
    finishes with play_at = sent_at + start_in_ms and late_ms 0 (by the member's clock); one
    whose instant passed is played late (late_ms) by a `play` member and skipped (failed,
    late_ms) by a `skip` member."""
    alsa_sink.install(tmp_path, monkeypatch, rate=16000)
    members = {"early": "play", "strict": "skip"}
    watchers = {n: Watcher(broker.port, f"{house}-dev/{n}") for n in members}
    try:
        for name, policy in members.items():
            _member(make_daemon, house, name, output="play", groups_late=policy,
                    audio={"preroll_ms": 50}).start(watchers[name])
        sender = Watcher(broker.port, f"{house}/group", topics=("none",))
        on_time, past = _rid(), _rid()
        sent = time.time() * 1000
        sender.publish("all/say", {"text": "On time.", "id": on_time, "start_in_ms": 1500,
                                   "sent_at": sent})
        sender.publish("all/say", {"text": "Too late.", "id": past, "play_at": sent - 2000})
        for name, w in watchers.items():
            done = w.final(on_time, _TIMEOUT_S)
            assert done["event"] == "finished" and done["late_ms"] == 0.0, done
            assert done["play_at"] == round(sent + 1500)
            late = w.final(past, _TIMEOUT_S)
            assert late["late_ms"] >= 2000, late
            assert late["event"] == ("finished" if members[name] == "play" else "failed"), late
            if late["event"] == "failed":
                assert late["error"].startswith("late:") and "groups_late: skip" in late["error"]
        sender.close()
    finally:
        for w in watchers.values():
            w.close()


def test_clock_state_and_groups_are_in_the_state(daemon, watcher) -> None:
    """<p>/state says the device's role, groups and what the kernel says of its clock
    (adjtimex: synchronized or not, and the error bounds)."""
    state = watcher.wait(lambda m: m.topic.endswith("/state")).json()
    assert state["role"] == "play" and state["groups"] == []
    clock = state["clock"]
    assert isinstance(clock["synchronized"], bool)
    assert clock["max_error_ms"] >= 0 and clock["est_error_ms"] >= 0
    assert set(clock) == {"synchronized", "max_error_ms", "est_error_ms"}  # docs/mqtt.md's block
