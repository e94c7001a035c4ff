"""How the paho client is set up: the daemon's topics, the password file, TLS, the socket."""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
from pathlib import Path
from typing import Any, Final

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from ..config import Config, ConfigError, check_topic_part
from ..files import read_bounded

_MAX_SECRET_BYTES: Final = 4096


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


def no_delay(_client: paho.Client, _u: Any, sock: socket.socket | Any) -> None:
    # paho leaves Nagle's algorithm on: an event written right after another one would wait
    # for the broker's delayed ACK (40 ms on Linux) before leaving.
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _NotConnectedNoise(logging.Filter):
    """paho 2.2 logs an ERROR ("Client is not connected ...") at every reconnect attempt while
    the broker is away: four a second with two connections. `on_connect_fail` says it once."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Client is not connected")


_PAHO_LOG = logging.getLogger("edged.paho")
_PAHO_LOG.addFilter(_NotConnectedNoise())


def new_client(config: Config, client_id: str, *, manual_ack: bool = False) -> paho.Client:
    """An MQTT 5 paho client as both of the daemon's connections use it: exceptions kept in,
    paho's log under edged.paho, the configured backoff, credentials and TLS, no Nagle delay.
    ConfigError from the password or TLS files."""
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                         protocol=MQTTProtocolVersion.MQTTv5, manual_ack=manual_ack)
    client.suppress_exceptions = True  # backstop: our callbacks catch everything anyway
    client.enable_logger(_PAHO_LOG)
    # paho's stub says int; its backoff arithmetic takes float seconds as well.
    client.reconnect_delay_set(config.mqtt.reconnect_min_s,  # type: ignore[arg-type]
                               config.mqtt.reconnect_max_s)  # type: ignore[arg-type]
    set_credentials(client, config)
    client.on_socket_open = no_delay
    return client


def set_credentials(client: paho.Client, config: Config) -> None:
    """The configured user, password (from its file) and TLS files on `client`; ConfigError."""
    if config.mqtt.username:
        client.username_pw_set(config.mqtt.username, read_password(config.mqtt.password_file))
    set_tls(client, config)


def read_password(path: Path | None) -> str | None:
    return None if path is None else read_secret(path, "mqtt.password_file")


def read_secret(path: Path, key: str) -> str:
    """A password from its file, as the link uses it (the start-up checks call this too):
    a regular file of at most 4 KiB, UTF-8, one trailing newline dropped, not empty."""
    try:
        raw = read_bounded(path, _MAX_SECRET_BYTES)
        text = raw.decode("utf-8").rstrip("\r\n")
    except OSError as err:
        raise ConfigError(f"{key}: cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{key}: {path}: not UTF-8 text (byte 0x{raw[err.start]:02x} at "
                          f"offset {err.start})") from None
    if not text.strip():
        raise ConfigError(f"{key}: {path} is empty")
    return text


def set_tls(client: paho.Client, config: Config) -> None:
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


class ErrorOnce:
    """Logs an error once until it changes or is cleared: a broker that stays away or keeps
    refusing is said once, not at every retry."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger, self._last = logger, ""

    def say(self, message: str) -> None:
        if message != self._last:
            self._last = message
            self._logger.error(message)

    def clear(self) -> None:
        self._last = ""
