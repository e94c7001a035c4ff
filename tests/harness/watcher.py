"""A recording MQTT client: every message under a prefix, in order, with its arrival time."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

TIMEOUT_S = 10.0
_FINAL = ("finished", "failed", "rejected")


@dataclass
class Message:
    topic: str
    payload: bytes
    retain: bool
    at: float
    """time.monotonic() when the client received it (before it waited for any lock)."""
    _parsed: Any = field(default=None, repr=False, compare=False)

    def json(self) -> Any:
        """The payload as JSON (parsed once: waits test many messages many times)."""
        if self._parsed is None:
            self._parsed = json.loads(self.payload)
        return self._parsed


class Watcher:
    """Subscribes to `<prefix>/#` (or to `<prefix>/<t>` for each of `topics`) and records every
    message, in order; publishes requests."""

    def __init__(self, port: int, prefix: str, *, username: str | None = None,
                 password: str | None = None, tls_ca: Path | None = None,
                 tls_cert: Path | None = None, tls_key: Path | None = None,
                 persistent: bool = False, topics: tuple[str, ...] = ("#",)) -> None:
        self.prefix = prefix
        self.messages: list[Message] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"watch-{uuid.uuid4().hex[:8]}",
                        protocol=MQTTProtocolVersion.MQTTv5)
        props = None
        if persistent:  # messages published while we are away are kept for us
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 300
        if username:
            c.username_pw_set(username, password)
        if tls_ca:
            c.tls_set(ca_certs=str(tls_ca), certfile=tls_cert and str(tls_cert),
                      keyfile=tls_key and str(tls_key))
        c.on_connect = lambda c, u, f, rc, p: c.subscribe([(f"{prefix}/{t}", 1) for t in topics])
        c.on_subscribe = lambda c, u, mid, rcs, p: self._subscribed.set()
        c.on_disconnect = lambda *a: self._subscribed.clear()
        c.on_message = self._on_message
        c.on_socket_open = lambda c, u, sock: sock.setsockopt(
            socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms Nagle/delayed-ACK stalls
        c.reconnect_delay_set(0.1, 0.5)
        c.connect_async("127.0.0.1", port, keepalive=10, clean_start=not persistent,
                        properties=props)
        c.loop_start()
        self.client = c
        assert self._subscribed.wait(TIMEOUT_S), "watcher could not subscribe"

    def _on_message(self, _c: Any, _u: Any, msg: mqtt.MQTTMessage) -> None:
        at = time.monotonic()
        with self._cond:
            self.messages.append(Message(msg.topic, msg.payload, msg.retain, at))
            self._cond.notify_all()

    def wait_subscribed(self, timeout: float = TIMEOUT_S) -> None:
        assert self._subscribed.wait(timeout), "watcher did not (re)subscribe"

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    # -- publishing ------------------------------------------------------------------------

    def publish(self, suffix: str, payload: bytes | str | dict, qos: int = 1,
                retain: bool = False, *, confirm: bool = True) -> float:
        """Publish on `<prefix>/<suffix>`; returns the moment just before it was handed to the
        client. `confirm`: and wait until the broker has it (QoS 1 and 2)."""
        if isinstance(payload, dict):
            payload = json.dumps(payload)
        sent = time.monotonic()
        info = self.client.publish(f"{self.prefix}/{suffix}", payload, qos=qos, retain=retain)
        if qos and confirm:
            info.wait_for_publish(TIMEOUT_S)
        return sent

    def say(self, payload: bytes | str | dict) -> float:
        return self.publish("say", payload)

    def control(self, action: str, control_id: str | None = None) -> dict:
        control_id = control_id or f"c-{uuid.uuid4().hex[:8]}"
        self.publish("control", {"action": action, "id": control_id})
        return self.event(control_id, "finished")

    # -- waiting ---------------------------------------------------------------------------

    def wait(self, pred: Callable[[Message], bool], timeout: float = TIMEOUT_S,
             start: int = 0) -> Message:
        """The first message from index `start` on that matches; AssertionError on timeout.
        Each message is tested once (a long wait over many messages stays linear)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = start
            while True:
                for m in self.messages[seen:]:
                    if pred(m):
                        return m
                seen = max(seen, len(self.messages))
                left = deadline - time.monotonic()
                if left <= 0:
                    tail = [(m.topic, m.payload[:120]) for m in self.messages[-8:]]
                    raise AssertionError(f"timed out after {timeout} s; last messages: {tail}")
                self._cond.wait(left)

    def mark(self) -> int:
        with self._cond:
            return len(self.messages)

    def events(self, request_id: str | None = None) -> list[dict]:
        with self._cond:
            found = [m.json() for m in self.messages if m.topic == f"{self.prefix}/event"]
        return [e for e in found if request_id is None or e.get("id") == request_id]

    def event_message(self, request_id: str, kind: str | tuple[str, ...],
                      timeout: float = TIMEOUT_S, start: int = 0) -> Message:
        """The first `<prefix>/event` message of `request_id` of one of `kind` (with its
        arrival time)."""
        kinds = (kind,) if isinstance(kind, str) else kind
        topic = f"{self.prefix}/event"

        def match(m: Message) -> bool:
            if m.topic != topic:
                return False
            e = m.json()
            return e.get("id") == request_id and e.get("event") in kinds

        return self.wait(match, timeout, start)

    def event(self, request_id: str, kind: str | tuple[str, ...],
              timeout: float = TIMEOUT_S) -> dict:
        return self.event_message(request_id, kind, timeout).json()

    def final(self, request_id: str, timeout: float = TIMEOUT_S) -> dict:
        return self.event(request_id, _FINAL, timeout)

    def audio(self, request_id: str, timeout: float = TIMEOUT_S) -> Message:
        """The WAV of `request_id` (`<prefix>/audio/<id>`, audio not streamed)."""
        topic = f"{self.prefix}/audio/{request_id}"
        return self.wait(lambda m: m.topic == topic, timeout)

    def first_audio(self, request_id: str, timeout: float = TIMEOUT_S, start: int = 0) -> Message:
        """The first audio message of `request_id`: its WAV, or the first part of its stream."""
        whole = f"{self.prefix}/audio/{request_id}"
        return self.wait(lambda m: m.topic == whole or m.topic.startswith(f"{whole}/"),
                         timeout, start)

    def online(self, start: int = 0, timeout: float = TIMEOUT_S) -> None:
        topic = f"{self.prefix}/availability"
        self.wait(lambda m: m.topic == topic and m.payload == b"online", timeout, start)

    def offline(self, start: int = 0, timeout: float = TIMEOUT_S) -> None:
        topic = f"{self.prefix}/availability"
        self.wait(lambda m: m.topic == topic and m.payload == b"offline", timeout, start)
