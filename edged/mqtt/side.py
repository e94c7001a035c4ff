"""A second broker connection for what is not a request: Home Assistant's status and the
device's settings commands (`<p>/set/volume`, `<p>/set/voice`).

A broker delivers one connection's messages in order. On the requests' connection, a flood of
settings or of Home Assistant `online` messages (anyone who may publish there can send tens of
thousands a second) queued every announcement behind it: a critical alarm waited minutes
behind a settings flood. Here the two streams are read by two network threads, so no flood of
one holds the other back.

- Clean session, QoS 1 subscriptions: the broker's receive-maximum window paces a flood and
  its queue limit drops the excess (a setting is a latest value: nothing is lost that counts).
  While the requests' connection has more waiting for the broker than it may, this one reads
  nothing more (a flood of bad settings would otherwise queue a `rejected` for each).
  Settings sent while the daemon was away are not kept for it (the device shows as
  unavailable in Home Assistant then).
- Publishes nothing itself: state, events and the device config go out on the requests'
  connection, where they keep their order with the other events.
- Client id `<mqtt.client_id>-settings`, same user, password and TLS.
- The daemon says `online` once both connections have their subscriptions: a setting sent
  after `online` is never lost.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, Final

import paho.mqtt.client as paho
from paho.mqtt.client import ConnectFlags, DisconnectFlags
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from ..config import Config
from .client_setup import ErrorOnce, new_client

_LOGGER = logging.getLogger(__name__)
_MAX_PACKET: Final = 8192
"""A setting or a status is a few bytes; the broker drops anything larger unsent."""
_RECEIVE_MAXIMUM: Final = 16
"""QoS 1 messages the broker may have in flight to us: the pace of a flood."""
SUFFIX: Final = "-settings"


class SideConnection:
    """Subscribes to `routes` on every connect and hands each payload to its route, on this
    connection's own network thread."""

    def __init__(self, config: Config, routes: dict[str, Callable[[bytes], None]],
                 pace: Callable[[], None], on_subscribed: Callable[[], None]) -> None:
        self._mqtt = config.mqtt
        self._routes = routes
        self._pace = pace
        self._on_subscribed = on_subscribed
        self.subscribed = threading.Event()
        """The broker confirmed the subscriptions: a setting sent now reaches us."""
        self._stopping = False
        self._errors = ErrorOnce(_LOGGER)
        client = new_client(config, config.client_id + SUFFIX)
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        self._client = client
        self._props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        self._props.ReceiveMaximum = _RECEIVE_MAXIMUM
        self._props.MaximumPacketSize = _MAX_PACKET

    def start(self) -> None:
        self._client.connect_async(self._mqtt.host, self._mqtt.port,
                                   keepalive=self._mqtt.keepalive_s, clean_start=True,
                                   properties=self._props)
        self._client.loop_start()

    def stop(self) -> None:
        self._stopping = True
        # The loop first: disconnecting under a running loop makes paho log an ERROR.
        self._client.loop_stop()
        self._client.disconnect()

    def _on_connect(self, client: paho.Client, _u: Any, _f: ConnectFlags, rc: ReasonCode,
                    _p: Properties | None) -> None:
        try:
            if rc.is_failure:
                self._errors.say(f"The broker refused the settings connection: {rc}")
                return
            self._errors.clear()
            client.subscribe([(topic, SubscribeOptions(qos=1)) for topic in self._routes])
        except Exception:
            _LOGGER.exception("Error in on_connect (settings)")

    def _on_subscribe(self, _c: paho.Client, _u: Any, _mid: int, codes: list[ReasonCode],
                      _p: Properties) -> None:
        try:
            for code in codes:
                if code.is_failure:
                    _LOGGER.error("The broker refused a settings subscription: %s", code)
            self.subscribed.set()
            self._on_subscribed()
        except Exception:
            _LOGGER.exception("Error in on_subscribe (settings)")

    def _on_connect_fail(self, _client: paho.Client, _u: Any) -> None:
        err = sys.exc_info()[1]
        self._errors.say(f"Cannot connect the settings connection: {err or 'connection failed'}")

    def _on_disconnect(self, _c: paho.Client, _u: Any, _f: DisconnectFlags, rc: ReasonCode,
                       _p: Properties | None) -> None:
        self.subscribed.clear()
        if not self._stopping:
            _LOGGER.warning("The settings connection was closed (%s); reconnecting", rc)

    def _on_message(self, _c: paho.Client, _u: Any, msg: paho.MQTTMessage) -> None:
        route = self._routes.get(msg.topic)
        if route is None:
            return
        try:
            self._pace()  # what a message here sends (state, a rejection) must find room
            route(bytes(msg.payload))
        except Exception:  # a payload must never end this thread
            _LOGGER.exception("Error handling a message on %s", msg.topic)
