"""The daemon's side of Home Assistant's MQTT discovery, on the daemon's own MQTT link.

    on every connect       -> the device config, retained (or, with discovery off, the empty
                              retained payload that removes the device)
    <prefix>/status online -> the device config again, `online`, and the state: HA restarted and
                              may have lost what it knew (retained messages come back anyway,
                              but a broker without persistence forgets them); latest values, so
                              a burst of `online` republishes once
    <p>/set/volume  "40"   -> the device volume (0-100), saved in mqtt.state_dir, state published
    <p>/set/voice   NAME   -> the voice for requests that name none (every intake: the request
                              policy), saved, state published; refused when it cannot fit
                              limits.memory_mb

A bad settings payload gets a `rejected` event on `<p>/event` with the reason, like a bad
request. The status and the settings arrive on the link's second connection (mqtt/side.py),
on its own thread, so a flood of them never delays a request; a flood is logged at most once
a second (with the count of the others). Nothing here raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config import Config
from ..daemon.device_state import SettingError
from ..daemon.events import Rejected
from ..daemon.policy import RequestPolicy
from ..daemon.requests import new_id
from .discovery import Discovery, build_discovery, settings_topics

if TYPE_CHECKING:
    from ..daemon.core import Daemon

_LOGGER = logging.getLogger(__name__)
_MAX_SETTING_BYTES = 256
_STATUS_EVERY_S = 1.0
_TELL_EVERY_S = 1.0
"""At most one log line a second per kind of setting message."""


class _Burst:
    """Says yes at most once per `every_s`; counts the noes in between."""

    def __init__(self, every_s: float) -> None:
        self._every_s, self._at, self.held = every_s, -every_s, 0

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._at < self._every_s:
            self.held += 1
            return False
        self._at = now
        return True

    def note(self) -> str:
        """" (and N more since)" for what was held back, then starts counting again."""
        held, self.held = self.held, 0
        return f" (and {held} more since)" if held else ""


class HomeAssistantBridge:
    """Attach to a daemon's link before it starts; see the module docstring."""

    def __init__(self, config: Config, daemon: Daemon, policy: RequestPolicy,
                 voices: Sequence[str]) -> None:
        self._enabled = config.homeassistant.discovery
        self._daemon = daemon
        self._policy = policy
        self._link = daemon.link
        self.discovery: Discovery = build_discovery(config, voices)
        self._volume_topic, self._voice_topic = settings_topics(config.topic_prefix)
        self._announced_at = -_STATUS_EVERY_S
        self._told = {kind: _Burst(_TELL_EVERY_S) for kind in ("volume", "voice", "rejected")}

    def attach(self) -> None:
        self._link.add_on_connect(self.announce)
        self._link.add_route(self._volume_topic, self._on_volume)
        self._link.add_route(self._voice_topic, self._on_voice)
        if self._enabled:
            self._link.add_route(self.discovery.status_topic, self._on_status)

    def announce(self) -> None:
        """Publish the device config (retained), or remove the device when discovery is off.
        A latest value (mqtt/outbox.py): one in flight and one waiting at most, so a burst of
        `online` (20,000 of them left 40,000 messages of 6.8 KB waiting before events and
        announcements) republishes once, not once each."""
        payload = self.discovery.to_bytes() if self._enabled else b""
        if not self._link.publish(self.discovery.topic, payload, retain=True, latest=True):
            _LOGGER.warning("Could not publish the Home Assistant device config to %s",
                            self.discovery.topic)
        elif self._enabled:
            _LOGGER.info("Home Assistant device config published on %s", self.discovery.topic)

    def _on_status(self, payload: bytes) -> None:
        """Home Assistant (re)started: tell it about the device again, at most once a second
        (a flood of `online` must not queue a config for each ahead of events)."""
        if payload.strip() != b"online":
            return  # "offline": HA went away; nothing to do until it is back
        now = time.monotonic()
        if now - self._announced_at < _STATUS_EVERY_S:
            return  # a burst of `online`: HA has been told already
        self._announced_at = now
        _LOGGER.info("Home Assistant is online: announcing the device again")
        self.announce()
        self._link.publish(self._link.topics.availability, b"online", retain=True)
        self._daemon.publish_state()

    def _on_volume(self, payload: bytes) -> None:
        try:
            volume = self._daemon.settings.set_volume(_text(payload))
        except SettingError as err:
            self._reject(f"{self._volume_topic}: {err}")
            return
        if self._told["volume"].due():
            _LOGGER.info("Device volume set to %d%s", volume, self._told["volume"].note())
        self._daemon.publish_state()

    def _on_voice(self, payload: bytes) -> None:
        try:
            name = _text(payload).strip()
            if name and (why := self._policy.settable(name)):
                raise SettingError(why)
            self._daemon.settings.set_voice(name or None)
        except SettingError as err:
            self._reject(f"{self._voice_topic}: {err}")
            return
        if self._told["voice"].due():
            _LOGGER.info("Device voice set to %s%s", name or "the configured voice",
                         self._told["voice"].note())
        self._daemon.publish_state()

    def _reject(self, error: str) -> None:
        if self._told["rejected"].due():
            _LOGGER.warning("Rejected a setting: %s%s", error, self._told["rejected"].note())
        self._daemon.publish_event(Rejected(new_id(), error=error))


def _text(payload: bytes) -> str:
    if len(payload) > _MAX_SETTING_BYTES:
        raise SettingError(f"payload is {len(payload)} bytes; the limit is {_MAX_SETTING_BYTES}")
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingError("payload is not valid UTF-8") from None
