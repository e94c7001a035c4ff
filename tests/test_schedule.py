"""Quiet hours and time-of-day volume, on an injectable clock (no test waits for 22:00).

The rules (house/schedule.py) are checked on their own; then on the whole daemon in this process
(the HTTP harness's `assemble` + `App.start`, real broker, tiny voice), whose schedule's clock the
test sets: held announcements, released when the hours end; dropped ones; a held one whose own
ttl_s runs out; the time-of-day volume multiplying the device volume (Home Assistant's number);
the `schedule` part of `<p>/state` as Home Assistant's entities render it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import jinja2
import numpy as np
import pytest

from edged.audio import from_wav_bytes, with_volume
from edged.config import ConfigError, QuietHours, ScheduleConfig, VolumeRange, parse_config
from edged.homeassistant.discovery import build_discovery
from edged.house import Schedule
from tests.harness.http_daemon import HttpDaemon
from tests.harness.watcher import Watcher

_QUIET = {"quiet": [{"start": "22:00", "end": "07:00", "below": "high"}],
          "volume": [{"start": "20:00", "end": "22:00", "volume": 0.5},
                     {"start": "21:00", "end": "23:59", "volume": 0.1}]}


class Clock:
    """The schedule's clock, set by the test."""

    def __init__(self, hour: int, minute: int = 0) -> None:
        self.now = dt.datetime(2026, 6, 1, hour, minute)

    def set(self, hour: int, minute: int = 0) -> None:
        self.now = self.now.replace(hour=hour, minute=minute)

    def __call__(self) -> dt.datetime:
        return self.now


def _rid() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


# -- the rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(("hour", "minute", "quiet", "factor"), [
    (21, 59, False, 0.5), (22, 0, True, 0.1), (23, 59, True, 1.0), (0, 0, True, 1.0),
    (6, 59, True, 1.0), (7, 0, False, 1.0), (12, 0, False, 1.0), (20, 0, False, 0.5),
])
def test_ranges_cross_midnight_and_the_first_volume_range_wins(hour: int, minute: int,
                                                                quiet: bool, factor: float) -> None:
    """A range from 22:00 to 07:00 holds at midnight and ends at 07:00 sharp; where volume
    ranges overlap (21:00-22:00) the first one listed applies."""
    config = ScheduleConfig(quiet=(QuietHours("22:00", "07:00", "high"),),
                            volume=(VolumeRange("20:00", "22:00", 0.5),
                                    VolumeRange("21:00", "23:59", 0.1)))
    schedule = Schedule(config, Clock(hour, minute))
    assert (schedule.quiet() is not None) is quiet
    assert schedule.volume_factor("normal") == factor
    assert schedule.volume_factor("critical") == 1.0
    if quiet:
        assert schedule.eligible_rank() == 1  # critical and high only
        assert schedule.state(80, 3)["holding"] == ["normal", "low"]


@pytest.mark.parametrize(("data", "message"), [
    ({"quiet": [{"start": 2200}]}, 'schedule.quiet.start: expected a time of day "HH:MM"'),
    ({"quiet": [{"start": "25:00"}]}, "schedule.quiet.start"),
    ({"quiet": [{"start": "07:00", "end": "07:00"}]}, "start and end are the same time"),
    ({"volume": [{"volume": 1.5}]}, "schedule.volume[0].volume: 1.5 is out of range"),
    ({"quiet_action": "shout"}, "schedule.quiet_action: expected one of hold, drop"),
    ({"quiet": [{"below": "urgent"}]}, "schedule.quiet[0].below: expected one of"),
])
def test_schedule_config_errors_name_the_key(tmp_path, data: dict, message: str) -> None:
    """Times are "HH:MM" (an unquoted YAML 22:00 is a number: the error says so), factors 0-1."""
    with pytest.raises(ConfigError) as info:
        parse_config({"schedule": data}, tmp_path)
    assert message in str(info.value)


# -- the daemon -----------------------------------------------------------------------------


@pytest.fixture
def clock() -> Clock:
    return Clock(23, 0)


def _house(make_http, w: Watcher, clock: Clock, **schedule: Any) -> HttpDaemon:
    mark = w.mark()
    daemon = make_http(schedule={**_QUIET, **schedule})
    assert daemon.app is not None
    daemon.app.daemon.schedule.clock = clock
    w.online(mark)
    return daemon


def _state(w: Watcher, check, start: int = 0) -> dict:
    """The first `<p>/state` from message `start` on that passes `check`."""
    return w.wait(lambda m: m.topic.endswith("/state") and check(m.json()), start=start).json()


def test_quiet_hours_hold_lower_priorities_until_they_end(make_http, watcher: Watcher,
                                                          clock: Clock) -> None:
    """At 23:00 a normal announcement is queued but held (state: quiet, held 1) while a high
    one is spoken; at 07:00 the held one is spoken, and the state says the hours ended."""
    _house(make_http, watcher, clock)
    held, urgent = _rid(), _rid()
    watcher.say({"text": "Laundry is done.", "id": held})
    watcher.event(held, "queued")
    _state(watcher, lambda s: s["schedule"]["quiet"] and s["schedule"]["held"] == 1)
    watcher.say({"text": "Door open.", "id": urgent, "priority": "high"})
    assert watcher.final(urgent)["event"] == "finished"
    assert [e["event"] for e in watcher.events(held)] == ["queued"]
    clock.set(7, 0)
    assert watcher.final(held)["event"] == "finished"
    state = _state(watcher, lambda s: not s["schedule"]["quiet"])
    assert state["schedule"]["quiet_until"] is None and state["schedule"]["held"] == 0


def test_quiet_hours_drop_with_a_reason_and_held_ones_expire_by_their_ttl(
        make_http, watcher: Watcher, clock: Clock) -> None:
    """quiet_action: drop refuses a normal announcement at once, saying until when; with hold,
    a held announcement whose own ttl_s runs out fails as expired (never spoken)."""
    daemon = _house(make_http, watcher, clock, quiet_action="drop")
    dropped = _rid()
    watcher.say({"text": "Dropped.", "id": dropped})
    event = watcher.final(dropped)
    assert event["event"] == "rejected" and "quiet hours until 07:00" in event["error"]
    daemon.stop()
    _house(make_http, watcher, clock)
    expiring = _rid()
    watcher.say({"text": "Soon stale.", "id": expiring, "ttl_s": 0.2})
    event = watcher.final(expiring)
    assert event["event"] == "failed" and event["error"].startswith("expired"), event
    assert [e["event"] for e in watcher.events(expiring)] == ["queued", "failed"]


def test_time_of_day_volume_multiplies_the_device_volume(make_http, watcher: Watcher,
                                                         clock: Clock) -> None:
    """Device volume 50 (Home Assistant's number) at 20:30 (factor 0.5): the published audio
    is the full-volume audio at 0.25; a critical announcement keeps the device volume (0.5);
    the state's `effective_volume` says 25."""
    daemon = _house(make_http, watcher, clock)
    app = daemon.app
    assert app is not None
    text = "The same words."
    clock.set(12, 0)
    full = _spoken(watcher, {"text": text})
    app.daemon.settings.set_volume(50)
    clock.set(20, 30)
    # States from here on: the daemon's first states were made on the real clock (the test's
    # is set after it starts), and between 20:00 and 22:00 they said factor 0.5 at volume 100.
    mark = watcher.mark()
    evening = _spoken(watcher, {"text": text})
    alarm = _spoken(watcher, {"text": text, "priority": "critical"})
    assert np.array_equal(evening, with_volume(from_samples(full), 0.25).samples)
    assert np.array_equal(alarm, with_volume(from_samples(full), 0.5).samples)
    state = _state(watcher, lambda s: s["schedule"]["volume_factor"] == 0.5, mark)
    assert state["schedule"]["effective_volume"] == 25.0 and state["volume"] == 50


def from_samples(samples: np.ndarray):
    from edged.audio import Audio

    return Audio(samples, 16000)


def _spoken(w: Watcher, request: dict) -> np.ndarray:
    rid = _rid()
    w.say({**request, "id": rid})
    assert w.final(rid)["event"] == "finished"
    return from_wav_bytes(w.audio(rid).payload).samples


def test_home_assistant_entities_render_the_schedule_state(make_http, watcher: Watcher,
                                                           clock: Clock) -> None:
    """The discovery's quiet-hours binary sensor, held count, time-of-day and effective volume
    render (jinja2, as Home Assistant's value templates) to ON, 1, 10 and 10.0 at 23:00 with one
    announcement held."""
    daemon = _house(make_http, watcher, clock)
    rid = _rid()
    watcher.say({"text": "Held.", "id": rid})
    watcher.event(rid, "queued")
    state = _state(watcher, lambda s: s["schedule"]["held"] == 1)
    assert daemon.app is not None
    components = build_discovery(daemon.config, ["tiny"]).payload["cmps"]
    env = jinja2.Environment(autoescape=False)
    env.filters["tojson"] = lambda v: __import__("json").dumps(v)

    def render(key: str) -> str:
        return env.from_string(components[key]["value_template"]).render(value_json=state)

    assert [render(k) for k in ("quiet_hours", "held", "time_of_day_volume",
                                "effective_volume")] == ["ON", "1", "10.0", "10.0"]
