"""The broker side of the daemon: the requests' paho client, its topics, and its rules (the
settings and Home Assistant's status come on a second connection: side.py).

- MQTT 5, persistent session (`clean_start=False` + a session expiry interval, or mosquitto
  forgets it) and manual acks: a request is acknowledged once it reached its final event.
- `connect_async` + `loop_start`: the daemon starts while the broker is down; subscriptions
  are renewed on every connect (a SIGKILLed broker forgets them).
- Never publish more than the broker accepts (paho 2.2 resends an oversized QoS 1 publish
  forever): `payload_limit` is the bound; sink.AudioSink sends larger audio in parts.
- Never receive more than a request can be: the CONNECT's MQTT 5 Maximum Packet Size (the
  largest request plus topic and header room) makes the broker drop a larger message, which
  paho would read whole into memory before anyone could look at its size.
- Nothing that reports an outcome is dropped; the intake is slowed instead (outbox.py).
- No exception leaves a paho callback.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, Final

import paho.mqtt.client as paho
from paho.mqtt.client import ConnectFlags, DisconnectFlags
from paho.mqtt.enums import MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from ..config import Config
from ..daemon.requests import CONTROL_MAX_BYTES
from .client_setup import ErrorOnce, Topics, new_client
from .intake import LinkHandler, Subscriptions, Ticket
from .outbox import Latest, Outbox
from .side import SideConnection

_LOGGER = logging.getLogger(__name__)
_PUBLISH_OVERHEAD: Final = 64
"""Fixed header, packet id and properties of a PUBLISH, on top of topic and payload."""
_INCOMING_HEADROOM: Final = 1024 + 16
"""Room for a request's PUBLISH header and MQTT 5 properties (a response topic, user
properties) on top of its topic and payload, in the Maximum Packet Size we announce."""
_AUDIO_WAIT_S: Final = 30.0
"""Longest the announcer waits for the broker to take pending audio before sending more."""


class MqttLink:
    """Thread-safe publishing and acknowledging; callbacks arrive on paho's network thread."""

    def __init__(self, config: Config, handler: LinkHandler | None = None, *,
                 receive_maximum: int) -> None:
        self._config = config
        self._mqtt = config.mqtt
        self.handler = handler
        """Who gets what arrives (the daemon); set before start()."""
        self.topics = Topics(config.topic_prefix)
        self.connected = threading.Event()
        self._generation = 0
        self._max_packet: int | None = None
        self._outbox: Outbox[Ticket] = Outbox(self._mqtt.max_outgoing_messages)
        self._net_thread: int | None = None
        self._stopping = False
        self._errors = ErrorOnce(_LOGGER)
        self._dropped = 0
        self.intake = Subscriptions(config, self.topics.say, self.topics.control)
        self._on_connect_hooks: list[Callable[[], None]] = []
        self._routes: dict[str, Callable[[bytes], None]] = {}
        self._side: SideConnection | None = None

        client = new_client(config, config.client_id, manual_ack=True)
        # No cap in paho: its cap drops whatever comes next, final events included, and it
        # applies while connected too. The bounds are the intake's and the audio's (outbox.py).
        client.max_queued_messages_set(0)
        client.will_set(self.topics.availability, b"offline", qos=1, retain=True)
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_publish = self._on_publish
        client.on_subscribe = self._on_subscribe
        self._client = client
        self._connect_props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        self._connect_props.SessionExpiryInterval = self._mqtt.session_expiry_s
        self._connect_props.ReceiveMaximum = receive_maximum
        self._connect_props.MaximumPacketSize = self.max_incoming_packet

    def add_route(self, topic: str, on_message: Callable[[bytes], None]) -> None:
        """Hand `topic`'s payloads to `on_message` on the second connection (side.py: no flood
        there delays a request): HA's status and the settings commands; before start()."""
        self._routes[topic] = on_message

    def add_on_connect(self, hook: Callable[[], None]) -> None:
        """Call `hook` on paho's thread after every (re)connect, once `online` is published."""
        self._on_connect_hooks.append(hook)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Connect in the background; returns at once, also when the broker is down."""
        _LOGGER.info("Connecting to mqtt://%s:%d as %s (prefix %s)", self._mqtt.host,
                     self._mqtt.port, self._config.client_id, self.topics.prefix)
        if self._routes:
            # Made before this connection starts: its on_connect must see that `online` waits
            # for the settings subscriptions (made after, a setting sent right after `online`
            # could come before them and be lost).
            self._side = SideConnection(self._config, self._routes, self._wait_for_room,
                                        self._say_online)
            self._side.start()
        self._client.connect_async(
            self._mqtt.host, self._mqtt.port, keepalive=self._mqtt.keepalive_s,
            clean_start=False, properties=self._connect_props,
        )
        self._client.loop_start()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Leave the synthesis pool, say `offline`, let queued packets (acks, events) go out,
        disconnect cleanly."""
        self._stopping = True
        if self.intake.pool_filter is not None and self.connected.is_set():
            # Leave the pool first: while we are away new requests go to the other members
            # (what we hold, unacknowledged, stays in our session for the next start).
            self._client.unsubscribe(self.intake.pool_filter)
        info, _ = self._send(self.topics.availability, b"offline", retain=True)
        if info is not None and self.connected.is_set():
            # RuntimeError: not connected after all; the will says offline for us then.
            with contextlib.suppress(RuntimeError, ValueError):
                info.wait_for_publish(timeout_s)
        self._client.disconnect()
        self._client.loop_stop()
        if self._side is not None:
            self._side.stop()

    @property
    def max_incoming_packet(self) -> int:
        """The MQTT 5 Maximum Packet Size we announce: the largest request or control payload,
        the longer of our two topics, header and properties."""
        body = max(self._config.limits.request_bytes, CONTROL_MAX_BYTES)
        return body + len(self.topics.control.encode()) + _INCOMING_HEADROOM

    def overloaded(self) -> bool:
        """More is waiting for the broker than `mqtt.max_outgoing_messages`: take in no QoS 0
        request now (QoS 1 intake is slowed by deferring acknowledgements)."""
        return self._outbox.overloaded()

    def _wait_for_room(self) -> None:
        """The settings connection's pace while overloaded: 1 s at most (its keep-alive)."""
        if self.connected.is_set() and self._outbox.overloaded():
            self._outbox.wait_room(1.0, self.connected)

    @property
    def outgoing(self) -> int:
        """Messages waiting for the broker's acknowledgement."""
        return len(self._outbox)

    # -- outgoing ------------------------------------------------------------------------

    def ack(self, ticket: Ticket) -> None:
        """Acknowledge a received request, now or, while overloaded, once the backlog is
        down to half (the broker sends no new request past the receive maximum meanwhile)."""
        if ticket.qos == 0 or ticket.generation != self._generation:
            return
        if not self._outbox.defer(ticket):
            self._ack_now(ticket)

    def _ack_now(self, ticket: Ticket) -> None:
        if ticket.generation != self._generation:
            return
        rc = self._client.ack(ticket.mid, ticket.qos)
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
            _LOGGER.debug("PUBACK %d not sent (%s); the broker will redeliver", ticket.mid, rc)

    def publish_json(self, topic: str, data: dict[str, Any], *, retain: bool = False,
                     latest: bool = False, correlation: bytes | None = None) -> bool:
        payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
        return self.publish(topic, payload, retain=retain, latest=latest, correlation=correlation)

    def publish(self, topic: str, payload: bytes, *, retain: bool = False,
                bulky: bool = False, latest: bool = False,
                correlation: bytes | None = None) -> bool:
        """QoS 1, kept by paho while disconnected. `bulky` (audio): bounded in bytes, dropped
        while disconnected beyond the offline buffer (False). `latest` (state): only the
        newest value waits behind the one in flight."""
        if latest:
            value = Latest(topic, payload, retain)
            if self._outbox.claim_latest(value):
                self._publish_latest(value)
            return True
        return self._send(topic, payload, retain=retain, bulky=bulky,
                          correlation=correlation)[0] is not None

    def _publish_latest(self, value: Latest | None) -> None:
        while value is not None:
            _info, value = self._send(value.topic, value.payload, retain=value.retain,
                                      latest=True)

    def _send(self, topic: str, payload: bytes, *, retain: bool = False, bulky: bool = False,
              latest: bool = False, correlation: bytes | None = None,
              ) -> tuple[paho.MQTTMessageInfo | None, Latest | None]:
        """Hand one message to paho: its info (None: refused) and, for a latest-value topic,
        the value due next. Never called with a lock of ours held (see outbox.py)."""
        limit = self.payload_limit(topic)
        if len(payload) > limit:  # a bug upstream; refuse rather than wedge the client
            _LOGGER.error("Not publishing %d bytes to %s: the limit is %d", len(payload), topic,
                          limit)
            return None, self._outbox.release_latest(topic) if latest else None
        if bulky and not self._room_for_audio(topic, len(payload)):
            return None, None
        props = None
        if correlation is not None:  # MQTT 5 Correlation Data: the requester's own tag
            props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
            props.CorrelationData = correlation
        info = self._client.publish(topic, payload, qos=1, retain=retain, properties=props)
        if info.rc not in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN):
            self._note_drop(topic, paho.error_string(info.rc))
            return None, self._outbox.release_latest(topic) if latest else None
        return info, self._outbox.sent(info.mid, topic, len(payload), latest=latest)

    def _room_for_audio(self, topic: str, size: int) -> bool:
        """Connected: wait (off the network thread) until the broker took enough of the audio
        before. Disconnected: audio beyond the offline buffer is dropped."""
        limit = self._mqtt.offline_buffer_mb << 20
        target = max(limit - size, 1)
        if (self.connected.is_set() and threading.get_ident() != self._net_thread
                and self._outbox.pending_bytes >= target
                and not self._outbox.wait_bytes(target, _AUDIO_WAIT_S, self.connected)
                and self.connected.is_set()):
            _LOGGER.warning("The broker took no audio for %.0f s; sending more anyway",
                            _AUDIO_WAIT_S)
        if self.connected.is_set():
            return True
        if (self._outbox.pending_bytes + size > limit
                or len(self._outbox) >= self._mqtt.max_offline_messages):
            self._note_drop(topic, "the offline buffer (mqtt.offline_buffer_mb, "
                                   "mqtt.max_offline_messages) is full")
            return False
        return True

    def payload_limit(self, topic: str) -> int:
        """The largest payload for `topic` that both the config and the broker accept."""
        limit = self._mqtt.max_payload_bytes
        if self._max_packet:
            limit = min(limit, self._max_packet - len(topic.encode()) - _PUBLISH_OVERHEAD)
        return limit

    def _note_drop(self, topic: str, reason: str) -> None:
        self._dropped += 1
        if self._dropped in (1, 10, 100) or self._dropped % 1000 == 0:
            _LOGGER.warning("Dropped a message for %s: %s (%d dropped so far)", topic, reason,
                            self._dropped)

    # -- paho callbacks (network thread) ---------------------------------------------------

    def _on_connect(self, client: paho.Client, _u: Any, flags: ConnectFlags, rc: ReasonCode,
                    props: Properties | None) -> None:
        try:
            if rc.is_failure:
                self._errors.say(f"The broker refused the connection: {rc} (check "
                                 "mqtt.username, mqtt.password_file, mqtt.client_id and the "
                                 "broker's ACL)")
                return
            self._net_thread = threading.get_ident()
            if not flags.session_present:
                self._generation += 1  # acks of messages from the old session are void now
            self._max_packet = getattr(props, "MaximumPacketSize", None)
            for batch in self.intake.subscriptions():
                client.subscribe(batch)
            if self._routes and flags.session_present:
                # An older edged subscribed to these here; the session keeps them.
                client.unsubscribe(list(self._routes))
            self._errors.clear()
            self.connected.set()
            self._say_online()
            _LOGGER.info("Connected to the broker (session %s)",
                         "resumed" if flags.session_present else "new")
            if self.handler is not None:
                self.handler.on_connected(bool(flags.session_present))
            for hook in self._on_connect_hooks:
                hook()
        except Exception:
            _LOGGER.exception("Error in on_connect")

    def _say_online(self) -> None:
        """`online` once this connection is up and the settings connection subscribed."""
        if self.connected.is_set() and (self._side is None or self._side.subscribed.is_set()):
            self._send(self.topics.availability, b"online", retain=True)

    def _on_connect_fail(self, _client: paho.Client, _u: Any) -> None:
        try:
            err = sys.exc_info()[1]  # paho calls us from inside its `except OSError`
            self._errors.say(f"Cannot connect to mqtt://{self._mqtt.host}:{self._mqtt.port}: "
                             f"{err or 'connection failed'}; retrying")
        except Exception:
            _LOGGER.exception("Error in on_connect_fail")

    def _on_disconnect(self, _c: paho.Client, _u: Any, _f: DisconnectFlags, rc: ReasonCode,
                       _p: Properties | None) -> None:
        self.connected.clear()
        self._outbox.wake()
        if self._stopping:
            return
        if getattr(rc, "value", None) == 142:  # Session taken over
            _LOGGER.error("Another client connected with client id %r and took over the "
                          "session; is a second edged running with the same mqtt.client_id?",
                          self._config.client_id)
        else:
            _LOGGER.warning("Disconnected from the broker (%s); reconnecting", rc)

    def _on_subscribe(self, _c: paho.Client, _u: Any, _mid: int, codes: list[ReasonCode],
                      _p: Properties) -> None:
        for code in codes:
            if code.is_failure:
                _LOGGER.error("The broker refused a subscription: %s", code)

    def _on_publish(self, _c: paho.Client, _u: Any, mid: int, rc: ReasonCode,
                    _p: Properties) -> None:
        try:
            topic, due, released = self._outbox.acked(mid)
            if rc.is_failure:
                _LOGGER.warning("The broker refused a publish to %s: %s", topic, rc)
            for ticket in released:  # the backlog is down: take requests in again
                self._ack_now(ticket)
            self._publish_latest(due)
        except Exception:
            _LOGGER.exception("Error in on_publish")

    def _on_message(self, client: paho.Client, _u: Any, msg: paho.MQTTMessage) -> None:
        ticket = Ticket(msg.mid, msg.qos, self._generation, bool(msg.dup))
        try:
            if self.handler is None:  # not started by a daemon: nothing can answer it
                self.ack(ticket)
            elif self.intake.dispatch(self.handler, msg.topic, bytes(msg.payload), ticket,
                                      msg.properties):
                pass
            else:  # a subscription left over from an older config in the same session
                self.ack(ticket)
        except Exception:
            # A payload that crashes us would crash us again on every redelivery: ack it.
            _LOGGER.exception("Error handling a message on %s", msg.topic)
            self.ack(ticket)
