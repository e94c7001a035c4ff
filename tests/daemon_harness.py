"""Test harness for the MQTT daemon: a recording MQTT client and `edged run` as a subprocess.

Imported by test_daemon*.py (fixtures re-exported there); not a test module itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
import yaml
from conftest import EDGED, ROOT, Broker
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

TIMEOUT_S = 10.0


@dataclass
class Message:
    topic: str
    payload: bytes
    retain: bool
    at: float

    def json(self) -> Any:
        return json.loads(self.payload)


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
        with self._cond:
            self.messages.append(Message(msg.topic, msg.payload, msg.retain, time.monotonic()))
            self._cond.notify_all()

    def wait_subscribed(self, timeout: float = TIMEOUT_S) -> None:
        assert self._subscribed.wait(timeout), "watcher did not (re)subscribe"

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    # -- publishing ------------------------------------------------------------------------

    def publish(self, suffix: str, payload: bytes | str | dict, qos: int = 1,
                retain: bool = False) -> float:
        if isinstance(payload, dict):
            payload = json.dumps(payload)
        info = self.client.publish(f"{self.prefix}/{suffix}", payload, qos=qos, retain=retain)
        sent = time.monotonic()
        if qos:
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
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for m in self.messages[start:]:
                    if pred(m):
                        return m
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

    def event(self, request_id: str, kind: str | tuple[str, ...],
              timeout: float = TIMEOUT_S) -> dict:
        kinds = (kind,) if isinstance(kind, str) else kind
        topic = f"{self.prefix}/event"

        def match(m: Message) -> bool:
            if m.topic != topic:
                return False
            e = m.json()
            return e.get("id") == request_id and e.get("event") in kinds

        return self.wait(match, timeout).json()

    def final(self, request_id: str, timeout: float = TIMEOUT_S) -> dict:
        return self.event(request_id, ("finished", "failed", "rejected"), timeout)

    def audio(self, request_id: str, timeout: float = TIMEOUT_S) -> Message:
        topic = f"{self.prefix}/audio/{request_id}"
        return self.wait(lambda m: m.topic == topic, timeout)

    def online(self, start: int = 0, timeout: float = TIMEOUT_S) -> None:
        topic = f"{self.prefix}/availability"
        self.wait(lambda m: m.topic == topic and m.payload == b"online", timeout, start)

    def offline(self, start: int = 0, timeout: float = TIMEOUT_S) -> None:
        topic = f"{self.prefix}/availability"
        self.wait(lambda m: m.topic == topic and m.payload == b"offline", timeout, start)


class DaemonProc:
    """`edged run` in a subprocess with a generated config (output: publish by default)."""

    def __init__(self, workdir: Path, port: int, prefix: str, voice_path: Path, **overrides: Any):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "device_id": "test",
            "output": "publish",
            "log_level": "info",
            "voice": {"name": str(voice_path)},
            "mqtt": {"host": "127.0.0.1", "port": port, "topic_prefix": prefix,
                     "client_id": f"edged-{uuid.uuid4().hex[:8]}", "keepalive_s": 5,
                     "reconnect_min_s": 0.1, "reconnect_max_s": 0.5},
            "limits": {"stop_timeout_s": 5},
            "cache": {"dir": "cache"},
        }
        config["mqtt"]["state_dir"] = "state"  # next to the config file, not in the repo
        for section, values in overrides.items():
            if isinstance(values, dict):
                config.setdefault(section, {}).update(values)
            else:
                config[section] = values
        self.config = config
        self.path = workdir / "edged.yaml"
        self.log = workdir / "daemon.log"
        self.proc: subprocess.Popen | None = None
        self.launcher: list[str] = []
        """Words before `python -m edged run ...` (e.g. a shell that joins a cgroup first)."""

    def write(self) -> None:
        self.path.write_text(yaml.safe_dump(self.config))

    def start(self, watcher: Watcher | None = None, *args: str) -> DaemonProc:
        self.write()
        mark = watcher.mark() if watcher else 0
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*self.launcher, *EDGED, "run", "--config", str(self.path), *args],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        if watcher is not None:
            try:
                watcher.online(mark, timeout=60)
            except AssertionError:
                raise AssertionError(f"daemon not online; log:\n{self.log_text()}") from None
        return self

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = TIMEOUT_S) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def wait_log(daemon: DaemonProc, text: str, timeout: float = TIMEOUT_S) -> None:
    """Wait until the daemon's log shows `text` (polling a file: there is no event)."""
    deadline = time.monotonic() + timeout
    while text not in daemon.log_text():
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in the daemon log:\n{daemon.log_text()[-3000:]}")
        time.sleep(0.05)


@pytest.fixture
def watcher(broker: Broker, unique_prefix: str):
    """A recording client on `<prefix>/#` of the test broker."""
    w = Watcher(broker.port, unique_prefix)
    yield w
    w.close()


@pytest.fixture
def make_daemon(tmp_path: Path, broker: Broker, unique_prefix: str, tiny_voice_path: Path):
    """Factory for daemons on the test broker with the tiny voice; all stopped at the end."""
    made: list[DaemonProc] = []

    def make(name: str = "d", **overrides: Any) -> DaemonProc:
        d = DaemonProc(tmp_path / name, broker.port, unique_prefix, tiny_voice_path, **overrides)
        made.append(d)
        return d

    yield make
    for d in made:
        d.stop()


@pytest.fixture
def daemon(make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> DaemonProc:
    """One running daemon (tiny voice, output: publish), online."""
    return make_daemon().start(watcher)
