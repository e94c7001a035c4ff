"""The device config Home Assistant's MQTT integration discovers: one retained JSON message on
`<discovery_prefix>/device/<node_id>/config` that declares the device and all its entities.

Entities read what the daemon already publishes (`<p>/state`, retained JSON; `<p>/event`) through
value templates, and command what it already takes (`<p>/say`, `<p>/control`), plus two settings
topics (`<p>/set/volume`, `<p>/set/voice`). Checked against a real Home Assistant (2025.4.4):
- every command component carries its own `qos: 1`: HA does not copy a device-level qos down;
- the notify template goes through `to_json`, which keeps quotes, newlines and non-ASCII intact;
- the event entity ignores what renders empty (queued, started, control answers), so only final
  announcement outcomes become events.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from .. import __version__
from ..config import Config

PROJECT_URL: Final = "https://github.com/edged/edged"
"""Shown by Home Assistant as the origin's support link."""
_NODE_ID_RE: Final = re.compile(r"[^A-Za-z0-9_-]")

_STATE: Final = "{{ 'paused' if value_json.paused else value_json.state }}"
_LAST_TEXT: Final = "{{ value_json.last.text if value_json.last else 'None' }}"
_LAST_ID: Final = "{{ value_json.last.id if value_json.last else 'None' }}"
_LAST_ATTRS: Final = "{{ (value_json.last or {}) | tojson }}"
_HIT_RATIO: Final = ("{{ (100 * value_json.cache_hit_ratio) | round(1) "
                     "if value_json.cache_hit_ratio is not none else 'None' }}")
_FIRST_AUDIO: Final = ("{{ value_json.last_uncached_first_audio_ms "
                       "if value_json.last_uncached_first_audio_ms is not none else 'None' }}")
# Final outcomes of announcements only: control answers are "finished" too, but carry "action".
_OUTCOME: Final = ("{% if value_json.event in ['finished', 'failed', 'rejected'] "
                   "and value_json.action is not defined %}"
                   "{{ dict(value_json, event_type=value_json.event) | tojson }}{% endif %}")
EVENT_TYPES: Final = ("finished", "failed", "rejected")


@dataclass(frozen=True)
class Discovery:
    """Where the device config goes, and what it says."""

    topic: str
    status_topic: str
    """Home Assistant's birth/will topic: `online` there means "announce yourself again"."""
    payload: dict[str, Any]

    def to_bytes(self) -> bytes:
        return json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False).encode()


def node_id(device_id: str) -> str:
    """The device id as Home Assistant takes it in a discovery topic ([A-Za-z0-9_-])."""
    return _NODE_ID_RE.sub("_", device_id)


def settings_topics(prefix: str) -> tuple[str, str]:
    """The volume (0-100) and voice topics of a device with topic prefix `prefix`."""
    return f"{prefix}/set/volume", f"{prefix}/set/voice"


def build_discovery(config: Config, voices: Sequence[str]) -> Discovery:
    """The device config for `config`, offering `voices` in the voice select."""
    ha = config.homeassistant
    node = node_id(config.device_id)
    name = ha.device_name or socket.gethostname().split(".")[0] or config.device_id
    components = _components(config.topic_prefix, voices)
    for key, component in components.items():
        component["unique_id"] = f"{node}_{key}"
    payload = {
        "dev": {"ids": [f"edged_{node}"], "name": name, "mf": "edged",
                "mdl": "edged offline speech announcements", "sw": __version__},
        "o": {"name": "edged", "sw": __version__, "url": PROJECT_URL},
        "availability_topic": f"{config.topic_prefix}/availability",
        "payload_available": "online",
        "payload_not_available": "offline",
        "cmps": components,
    }
    return Discovery(f"{ha.discovery_prefix}/device/{node}/config",
                     f"{ha.discovery_prefix}/status", payload)


def _components(p: str, voices: Sequence[str]) -> dict[str, dict[str, Any]]:
    state = f"{p}/state"
    volume_topic, voice_topic = settings_topics(p)
    return {
        "announce": _command("notify", "Announce", f"{p}/say",
                             command_template='{"text": {{ value | to_json }}}'),
        "state": _sensor(state, "State", _STATE, icon="mdi:account-voice"),
        "queue": _sensor(state, "Queue", "{{ value_json.queue }}", state_class="measurement",
                         icon="mdi:playlist-play"),
        "last_announcement": _sensor(state, "Last announcement", _LAST_TEXT,
                                     json_attributes_topic=state,
                                     json_attributes_template=_LAST_ATTRS,
                                     icon="mdi:message-text"),
        "last_announcement_id": _sensor(state, "Last announcement ID", _LAST_ID,
                                        icon="mdi:identifier"),
        "cache_hit_ratio": _sensor(state, "Cache hit ratio", _HIT_RATIO,
                                   unit_of_measurement="%", state_class="measurement",
                                   entity_category="diagnostic", icon="mdi:cached"),
        "first_audio": _sensor(state, "First audio (uncached)", _FIRST_AUDIO,
                               unit_of_measurement="ms", device_class="duration",
                               state_class="measurement", entity_category="diagnostic"),
        "stop": _command("button", "Stop", f"{p}/control", payload_press="stop",
                         icon="mdi:stop"),
        "skip": _command("button", "Skip", f"{p}/control", payload_press="skip",
                         icon="mdi:skip-next"),
        "clear": _command("button", "Clear queue", f"{p}/control", payload_press="clear",
                          icon="mdi:playlist-remove"),
        "pause": _command("switch", "Pause", f"{p}/control", payload_on="pause",
                          payload_off="resume", state_topic=state, state_on="ON",
                          state_off="OFF",
                          value_template="{{ 'ON' if value_json.paused else 'OFF' }}",
                          icon="mdi:pause"),
        "voice": _command("select", "Voice", voice_topic, options=list(voices),
                          state_topic=state, value_template="{{ value_json.selected_voice }}",
                          entity_category="config", icon="mdi:account-voice"),
        "volume": _command("number", "Volume", volume_topic, min=0, max=100, step=1,
                           mode="slider", unit_of_measurement="%", state_topic=state,
                           value_template="{{ value_json.volume }}", entity_category="config",
                           icon="mdi:volume-high"),
        "quiet_hours": {"p": "binary_sensor", "name": "Quiet hours", "state_topic": state,
                        "value_template": "{{ 'ON' if value_json.schedule.quiet else 'OFF' }}",
                        "json_attributes_topic": state,
                        "json_attributes_template": "{{ value_json.schedule | tojson }}",
                        "icon": "mdi:sleep"},
        "held": _sensor(state, "Held by quiet hours", "{{ value_json.schedule.held }}",
                        state_class="measurement", icon="mdi:timer-pause"),
        "time_of_day_volume": _sensor(state, "Time-of-day volume",
                                      "{{ (100 * value_json.schedule.volume_factor) | round(0) }}",
                                      unit_of_measurement="%", icon="mdi:volume-medium"),
        "effective_volume": _sensor(state, "Effective volume",
                                    "{{ value_json.schedule.effective_volume }}",
                                    unit_of_measurement="%", icon="mdi:volume-equal"),
        "clock_synchronized": {"p": "binary_sensor", "name": "Clock synchronized",
                               "state_topic": state, "entity_category": "diagnostic",
                               "value_template": "{{ 'ON' if value_json.clock.synchronized "
                                                 "else 'OFF' }}", "icon": "mdi:clock-check"},
        "announcement": {"p": "event", "name": "Announcement", "state_topic": f"{p}/event",
                         "event_types": list(EVENT_TYPES), "value_template": _OUTCOME,
                         "icon": "mdi:bullhorn"},
    }


def _sensor(state_topic: str, name: str, template: str, **extra: Any) -> dict[str, Any]:
    return {"p": "sensor", "name": name, "state_topic": state_topic, "value_template": template,
            **extra}


def _command(platform: str, name: str, topic: str, **extra: Any) -> dict[str, Any]:
    return {"p": platform, "name": name, "command_topic": topic, "qos": 1, **extra}
