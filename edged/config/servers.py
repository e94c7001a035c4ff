"""The sections of the network servers and integrations: HTTP, Home Assistant, Wyoming."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .fields import ConfigError, check_topic_part, opt, path_of

_ORIGIN_RE = re.compile(r"https?://[^/\s?#*]+")


@dataclass(frozen=True)
class HttpConfig:
    """The HTTP server: `/api/tts`, OpenAI's `/v1/audio/speech`, `/api/say`, the web page."""

    enabled: bool = True
    """On by default, on loopback only. Left at its default, a port that cannot be bound is one
    warning and the daemon runs on without HTTP; set explicitly, it fails the start."""
    host: str = "127.0.0.1"
    """Address to listen on; 0.0.0.0 or a LAN address exposes it (set api_key_file then)."""
    port: int = opt(8093, min=0, max=65535)
    """TCP port; 0: any free port (the one taken is shown in <prefix>/state)."""
    api_key_file: Path | None = path_of("secret")
    """File holding the API key; when set, every API endpoint needs `Authorization: Bearer
    <key>` (/healthz and the page's static files do not)."""
    cors_origins: tuple[str, ...] = ()
    """Origins (`https://host:port`) whose pages may call the API; empty: none (CORS off)."""
    allow_query_key: bool = False
    """Accept the key as `?key=` too, for media players that cannot send a header. The key then
    shows in URLs: browser history, proxy logs, the Referer of a page."""
    max_streams: int = opt(2, min=1, max=64)
    """Uncached syntheses HTTP may run at once (cached answers take none); more get 429."""
    batch_max_items: int = opt(20, min=1, max=1000)
    """Texts one /api/tts-batch request may hold."""
    max_connections: int = opt(128, min=4, max=8192)
    """Connections open at once (event streams included); one more gets 503 and is closed.
    Lowered at start-up, with a warning, when the descriptor limit cannot hold it beside the
    reserve for the broker, the audio device and the cache (docs/http.md)."""
    max_event_streams: int = opt(8, min=1, max=1024)
    """/api/events subscribers at once; one more gets 503."""
    header_timeout_s: float = opt(10.0, min=0.1, max=300.0)
    """A new connection's first request must have sent its headers within this; else 408 and
    closed."""
    body_timeout_s: float = opt(30.0, min=0.1, max=600.0)
    """A request's body must have come whole within this; else 408 and closed."""
    write_timeout_s: float = opt(30.0, min=0.1, max=600.0)
    """A client that does not read a part of its answer (audio, events) within this is cut
    off, freeing its synthesis slot or event stream."""
    idle_timeout_s: float = opt(15.0, min=0.1, max=3600.0)
    """A kept-alive connection with no request under way is closed after this (a later
    request's headers must also come within it)."""
    enabled_given: bool = field(default=False, metadata={"internal": True, "given": "enabled"})
    """Whether the file set `enabled` (not a key): only then is a port in use fatal."""

    def __post_init__(self) -> None:
        if not self.host.strip():
            raise ConfigError("http.host: must not be empty")
        for i, origin in enumerate(self.cors_origins):
            if not _ORIGIN_RE.fullmatch(origin):
                raise ConfigError(f"http.cors_origins[{i}]: {origin!r} is not an origin "
                                  "(scheme://host[:port], no path; '*' is not accepted)")


@dataclass(frozen=True)
class HomeAssistantConfig:
    """MQTT discovery: the device and its entities appear in Home Assistant by themselves."""

    discovery: bool = True
    """Publish the device config (retained) on connect and when Home Assistant comes back;
    false: publish the empty config that removes the device."""
    discovery_prefix: str = "homeassistant"
    """Home Assistant's discovery prefix (its MQTT integration's setting); the device config
    goes to <discovery_prefix>/device/<device_id>/config."""
    device_name: str | None = None
    """The device's name in Home Assistant; default: the host name."""

    def __post_init__(self) -> None:
        check_topic_part("homeassistant.discovery_prefix", self.discovery_prefix)
        if self.device_name is not None and not self.device_name.strip():
            raise ConfigError("homeassistant.device_name: must not be empty")


@dataclass(frozen=True)
class WyomingConfig:
    """A Wyoming text-to-speech server (Home Assistant's Assist, `tts.speak`) on the shared voices."""

    enabled: bool = False
    host: str = "127.0.0.1"
    """Address to listen on; 0.0.0.0 for a Home Assistant on another machine (a conscious
    choice: the protocol has no authentication; list its address in allowed_clients too)."""
    port: int = opt(10200, min=1, max=65535)
    allowed_clients: tuple[str, ...] = ("127.0.0.0/8", "::1/128")
    """Client addresses served (CIDRs or single addresses); any other connection is closed at
    once, unanswered. The protocol has no authentication: this list is its only gate.
    Default: loopback only, so a Home Assistant on another machine needs its address here."""
    zeroconf: bool = True
    """Advertise `_wyoming._tcp` over mDNS so Home Assistant discovers the server, only when
    it listens beyond loopback."""
    max_connections: int = opt(4, min=1, max=64)
    """Clients connected at once; one more gets an `error` event and is closed. Also the bound
    on Wyoming's synthesis streams at the scheduler (one per connection)."""
    max_chars: int = opt(2000, min=1, max=100000)
    """Longest text of one `synthesize`, or of one streamed response in total. Sentences are
    synthesized one at a time, so memory does not grow with it."""
    idle_timeout_s: float = opt(60.0, min=1.0, max=3600.0)
    """A connection that sends nothing for this long while nothing is being spoken is closed,
    an open stream included (its client gets an `error` `timeout`); a client that reads none of
    its audio for this long is dropped."""
    priority: Literal["high", "normal", "low"] = "high"
    """Rank of Wyoming synthesis at the scheduler; a critical MQTT announcement always goes
    first (it waits for at most one decoder window of Wyoming work)."""

    def __post_init__(self) -> None:
        if not self.allowed_clients:
            raise ConfigError("wyoming.allowed_clients: must not be empty (to serve no one, "
                              "set wyoming.enabled: false)")
        for i, network in enumerate(self.allowed_clients):
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise ConfigError(f"wyoming.allowed_clients[{i}]: {network!r} is not an "
                                  "address or a network (192.168.1.20, 192.168.1.0/24, "
                                  "fd00::/8)") from None
