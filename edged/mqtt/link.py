"""The broker side of the daemon: one paho client, its topics, and the rules that keep it sane.

- MQTT 5, persistent session (`clean_start=False` + a session expiry interval: without the
  interval mosquitto forgets the session at disconnect) and manual acknowledgements, so a
  request is acknowledged only once it reached its final event.
- `connect_async` + `loop_start`: the daemon starts while the broker is down; paho reconnects
  with backoff; subscriptions are renewed on every connect (a SIGKILLed broker forgets them).
- Never publish more than the broker accepts: paho 2.2 answers an oversized QoS 1 publish by
  reconnecting and resending it forever. `payload_limit` is the bound (sink.AudioSink
  sends audio that does not fit in parts).
- No exception leaves a paho callback.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import paho.mqtt.client as paho
from paho.mqtt.client import ConnectFlags, DisconnectFlags
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from ..config import Config, ConfigError, check_topic_part

_LOGGER = logging.getLogger(__name__)
_PUBLISH_OVERHEAD: Final = 64
"""Fixed header, packet id and properties of a PUBLISH, on top of topic and payload."""


@dataclass(frozen=True)
class Ticket:
    """What acknowledging one received QoS 1 message takes."""

    mid: int
    qos: int
    generation: int
    """Session generation: a PUBACK for a session the broker has forgotten must not be sent
    (the same packet id may already name a different message in the new session)."""
    dup: bool


class LinkHandler(Protocol):
    def on_say(self, payload: bytes, ticket: Ticket) -> None: ...
    def on_control(self, payload: bytes, ticket: Ticket) -> None: ...
    def on_connected(self, session_present: bool) -> None: ...


class Topics:
    """The daemon's topics under its prefix."""

    def __init__(self, prefix: str) -> None:
        check_topic_part("mqtt.topic_prefix", prefix)
        self.prefix = prefix
        self.say = f"{prefix}/say"
        self.control = f"{prefix}/control"
        self.event = f"{prefix}/event"
        self.state = f"{prefix}/state"
        self.availability = f"{prefix}/availability"

    def audio(self, request_id: str) -> str:
        return f"{self.prefix}/audio/{request_id}"


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
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[str, int]] = {}
        self._pending_bytes = 0
        self._acked_early: set[int] = set()
        self._stopping = False
        self._last_error = ""
        self._dropped = 0
        self._routes: dict[str, Callable[[bytes], None]] = {}
        self._on_connect_hooks: list[Callable[[], None]] = []

        client = paho.Client(
            CallbackAPIVersion.VERSION2, client_id=config.client_id,
            protocol=MQTTProtocolVersion.MQTTv5, manual_ack=True,
        )
        client.suppress_exceptions = True  # backstop: our callbacks catch everything anyway
        client.enable_logger(logging.getLogger("edged.paho"))
        # paho's stub says int; its backoff arithmetic takes float seconds as well.
        client.reconnect_delay_set(self._mqtt.reconnect_min_s,  # type: ignore[arg-type]
                                   self._mqtt.reconnect_max_s)  # type: ignore[arg-type]
        client.max_queued_messages_set(self._mqtt.max_offline_messages)
        client.will_set(self.topics.availability, b"offline", qos=1, retain=True)
        set_credentials(client, config)
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_publish = self._on_publish
        client.on_subscribe = self._on_subscribe
        client.on_socket_open = _no_delay
        self._client = client
        self._connect_props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        self._connect_props.SessionExpiryInterval = self._mqtt.session_expiry_s
        self._connect_props.ReceiveMaximum = receive_maximum

    def add_route(self, topic: str, on_message: Callable[[bytes], None]) -> None:
        """Also subscribe to `topic` (on every connect) and hand its payloads to `on_message`, on
        paho's thread (acknowledged after it returns). For integrations beside the requests
        (Home Assistant's status and its settings commands); call before start()."""
        self._routes[topic] = on_message

    def add_on_connect(self, hook: Callable[[], None]) -> None:
        """Call `hook` on paho's thread after every (re)connect, once `online` is published."""
        self._on_connect_hooks.append(hook)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Connect in the background; returns at once, also when the broker is down."""
        _LOGGER.info("Connecting to mqtt://%s:%d as %s (prefix %s)", self._mqtt.host,
                     self._mqtt.port, self._config.client_id, self.topics.prefix)
        self._client.connect_async(
            self._mqtt.host, self._mqtt.port, keepalive=self._mqtt.keepalive_s,
            clean_start=False, properties=self._connect_props,
        )
        self._client.loop_start()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Say `offline`, let queued packets (acks, events) go out, disconnect cleanly."""
        self._stopping = True
        info = self._send(self.topics.availability, b"offline", retain=True)
        if info is not None and self.connected.is_set():
            # RuntimeError: not connected after all; the will says offline for us then.
            with contextlib.suppress(RuntimeError, ValueError):
                info.wait_for_publish(timeout_s)
        self._client.disconnect()
        self._client.loop_stop()

    # -- outgoing ------------------------------------------------------------------------

    def ack(self, ticket: Ticket) -> None:
        if ticket.qos == 0 or ticket.generation != self._generation:
            return
        rc = self._client.ack(ticket.mid, ticket.qos)
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
            _LOGGER.debug("PUBACK %d not sent (%s); the broker will redeliver", ticket.mid, rc)

    def publish_json(self, topic: str, data: dict[str, Any], *, retain: bool = False) -> bool:
        payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
        return self.publish(topic, payload, retain=retain)

    def publish(self, topic: str, payload: bytes, *, retain: bool = False,
                bulky: bool = False) -> bool:
        """QoS 1; queued by paho while disconnected (bounded). False when dropped."""
        return self._send(topic, payload, retain=retain, bulky=bulky) is not None

    def _send(self, topic: str, payload: bytes, *, retain: bool = False,
              bulky: bool = False) -> paho.MQTTMessageInfo | None:
        limit = self.payload_limit(topic)
        if len(payload) > limit:  # a bug upstream; refuse rather than wedge the client
            _LOGGER.error("Not publishing %d bytes to %s: the limit is %d", len(payload), topic,
                          limit)
            return None
        if bulky and not self.connected.is_set():
            with self._lock:
                full = self._pending_bytes + len(payload) > self._mqtt.offline_buffer_mb << 20
            if full:
                self._note_drop(topic, "the offline buffer (mqtt.offline_buffer_mb) is full")
                return None
        # Never call paho while holding self._lock: paho holds its message lock while it
        # calls on_publish, which takes self._lock (a lock-order deadlock otherwise).
        info = self._client.publish(topic, payload, qos=1, retain=retain)
        if info.rc not in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN):
            self._note_drop(topic, paho.error_string(info.rc))
            return None
        with self._lock:
            if info.mid in self._acked_early:  # PUBACK came before we got here
                self._acked_early.discard(info.mid)
            else:
                self._pending[info.mid] = (topic, len(payload))
                self._pending_bytes += len(payload)
        return info

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
                self._log_once(f"The broker refused the connection: {rc} (check mqtt.username, "
                               "mqtt.password_file, mqtt.client_id and the broker's ACL)")
                return
            if not flags.session_present:
                self._generation += 1  # acks of messages from the old session are void now
            self._max_packet = getattr(props, "MaximumPacketSize", None)
            # A retained request (a publisher's mistake) would otherwise be replayed, and
            # spoken again, on every (re)subscribe: take requests only as they are published.
            options = SubscribeOptions(qos=1, retainHandling=SubscribeOptions.RETAIN_DO_NOT_SEND)
            client.subscribe([(self.topics.say, options), (self.topics.control, options)])
            if self._routes:  # retained messages welcome here (Home Assistant's status)
                client.subscribe([(topic, SubscribeOptions(qos=1)) for topic in self._routes])
            self._send(self.topics.availability, b"online", retain=True)
            self._last_error = ""
            self.connected.set()
            _LOGGER.info("Connected to the broker (session %s)",
                         "resumed" if flags.session_present else "new")
            if self.handler is not None:
                self.handler.on_connected(bool(flags.session_present))
            for hook in self._on_connect_hooks:
                hook()
        except Exception:
            _LOGGER.exception("Error in on_connect")

    def _on_connect_fail(self, _client: paho.Client, _u: Any) -> None:
        try:
            err = sys.exc_info()[1]  # paho calls us from inside its `except OSError`
            self._log_once(f"Cannot connect to mqtt://{self._mqtt.host}:{self._mqtt.port}: "
                           f"{err or 'connection failed'}; retrying")
        except Exception:
            _LOGGER.exception("Error in on_connect_fail")

    def _on_disconnect(self, _c: paho.Client, _u: Any, _f: DisconnectFlags, rc: ReasonCode,
                       _p: Properties | None) -> None:
        self.connected.clear()
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
        with self._lock:
            topic, size = self._pending.pop(mid, ("?", -1))
            if size < 0:
                self._acked_early.add(mid)
            else:
                self._pending_bytes -= size
        if rc.is_failure:
            _LOGGER.warning("The broker refused a publish to %s: %s", topic, rc)

    def _on_message(self, client: paho.Client, _u: Any, msg: paho.MQTTMessage) -> None:
        ticket = Ticket(msg.mid, msg.qos, self._generation, bool(msg.dup))
        try:
            if self.handler is None:  # not started by a daemon: nothing can answer it
                self.ack(ticket)
            elif msg.topic == self.topics.say:
                self.handler.on_say(bytes(msg.payload), ticket)
            elif msg.topic == self.topics.control:
                self.handler.on_control(bytes(msg.payload), ticket)
            elif msg.topic in self._routes:
                self._routes[msg.topic](bytes(msg.payload))
                self.ack(ticket)
            else:  # a subscription left over from an older config in the same session
                self.ack(ticket)
        except Exception:
            # A payload that crashes us would crash us again on every redelivery: ack it.
            _LOGGER.exception("Error handling a message on %s", msg.topic)
            self.ack(ticket)

    def _log_once(self, message: str) -> None:
        if message != self._last_error:
            self._last_error = message
            _LOGGER.error(message)


def _no_delay(_client: paho.Client, _u: Any, sock: socket.socket | Any) -> None:
    # paho leaves Nagle's algorithm on: an event written right after another one would wait
    # for the broker's delayed ACK (40 ms on Linux) before leaving.
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def set_credentials(client: paho.Client, config: Config) -> None:
    """The configured user, password (from its file) and TLS files on `client`; ConfigError."""
    if config.mqtt.username:
        client.username_pw_set(config.mqtt.username, _read_password(config.mqtt.password_file))
    _set_tls(client, config)


def _read_password(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise ConfigError(f"mqtt.password_file: cannot read {path}: {reason}") from None


def _set_tls(client: paho.Client, config: Config) -> None:
    tls = config.mqtt.tls
    if not (tls.ca_file or tls.cert_file or tls.key_file):
        return
    try:
        client.tls_set(
            ca_certs=str(tls.ca_file) if tls.ca_file else None,
            certfile=str(tls.cert_file) if tls.cert_file else None,
            keyfile=str(tls.key_file) if tls.key_file else None,
            tls_version=ssl.PROTOCOL_TLS_CLIENT,
        )
    except (OSError, ssl.SSLError, ValueError) as err:
        raise ConfigError(f"mqtt.tls: cannot load the TLS files: {err}") from None
