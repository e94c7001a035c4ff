"""The broker section: where to connect, how to authenticate, TLS, topics and the bounds on what
waits for the broker."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .fields import ConfigError, check_topic_part, opt, path_of


@dataclass(frozen=True)
class TlsConfig:
    """TLS to the broker: a CA to verify it, and optionally a client certificate and key."""

    ca_file: Path | None = path_of("pem")
    cert_file: Path | None = path_of("pem")
    key_file: Path | None = path_of("pem")
    """Unencrypted PEM key of cert_file (or the key inside cert_file when unset)."""

    def __post_init__(self) -> None:
        if self.key_file is not None and self.cert_file is None:
            raise ConfigError("mqtt.tls.key_file: set without mqtt.tls.cert_file")


@dataclass(frozen=True)
class MqttConfig:
    """Broker connection and topics."""

    host: str = "localhost"
    port: int = opt(1883, min=1, max=65535)
    topic_prefix: str | None = None
    """Default: edged/<device_id>."""
    client_id: str | None = None
    """Default: edged-<device_id>."""
    username: str | None = None
    password_file: Path | None = path_of("secret")
    """File holding the password (never put a password in this file)."""
    tls: TlsConfig = field(default_factory=TlsConfig)
    max_payload_bytes: int = opt(262144, min=1024, max=268435455)
    keepalive_s: int = opt(30, min=5, max=3600)
    session_expiry_s: int = opt(86400, min=10, max=31_536_000)
    """How long the broker keeps the session (and queued requests) while the daemon is away;
    finished request ids are remembered as long, so a redelivery is never spoken twice."""
    reconnect_min_s: float = opt(1.0, min=0.05, max=60.0)
    reconnect_max_s: float = opt(30.0, min=0.05, max=3600.0)
    max_offline_messages: int = opt(1000, min=10, max=1_000_000)
    """Audio parts kept while disconnected; more audio is dropped (events never are)."""
    offline_buffer_mb: int = opt(16, min=1, max=4096)
    """Audio bytes waiting for the broker: while connected the announcer waits for the broker
    to take them; while disconnected more audio is dropped (events never are)."""
    max_outgoing_messages: int = opt(1000, min=20, max=1_000_000)
    """Messages waiting for the broker's acknowledgement above which intake slows: QoS 1
    requests are acknowledged only once half of them went out (the broker then holds new
    ones back), QoS 0 requests are refused and counted (`overloaded` event)."""
    group_prefix: str = "edged"
    """First part of the house-wide topics: `<group_prefix>/group/<name>/say` (groups) and
    the synthesis pool's `<group_prefix>/synth/say`."""
    reply_prefix: str | None = None
    """Where a request's `reply_to` (or MQTT 5 Response Topic) may point: topics under it only
    (`<reply_prefix>/...`), which no topic of edged's or Home Assistant's is. None:
    `<group_prefix>/reply`. A broker ACL can then let requesters read there and members write
    there, and nothing else (docs/security.md)."""
    stream_audio: bool = False
    """Publish audio in parts as each sentence is synthesized (lower latency) instead of one WAV."""
    state_dir: Path = path_of("state", Path("state"))
    """Where the daemon remembers finished request ids (done.jsonl)."""

    def __post_init__(self) -> None:
        if self.password_file is not None and self.username is None:
            raise ConfigError("mqtt.password_file: set without mqtt.username")
        check_topic_part("mqtt.group_prefix", self.group_prefix)
        if self.reply_prefix is not None:
            check_topic_part("mqtt.reply_prefix", self.reply_prefix)
            if self.reply_prefix.startswith("$"):
                raise ConfigError("mqtt.reply_prefix: must not start with '$' (the broker's)")
