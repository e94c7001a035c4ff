"""The schema of the one YAML config file: a frozen dataclass per section.

A field's type and its `metadata` are the schema: `min`/`max` bound numbers, and `path` says
what a path names, so the start-up checks (edged/checks.py) know how to check every file and
folder the config names without a list of keys of their own:

- "file": a regular file we read;  "secret": a small file holding a secret (never logged);
- "pem": a PEM certificate or key;  "wav": a 16-bit PCM WAV file;
- "folder": a folder we read (may be missing);  "state": a folder we write (made at start).
"""

from __future__ import annotations

import re
import socket
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

PATH_KINDS = ("file", "secret", "pem", "wav", "folder", "state")
_ORIGIN_RE = re.compile(r"https?://[^/\s?#*]+")


class ConfigError(Exception):
    """The config cannot be used. The message starts with the YAML key path."""


MAX_TOPIC_PART_BYTES = 256


def check_topic_part(key: str, value: str) -> None:
    """A topic prefix (or a part of one) must be a plain topic: no wildcard, no control
    character, not empty, not longer than 256 bytes."""
    for char in "+#":
        if char in value:
            raise ConfigError(f"{key}: must not contain {char!r}: {value[:80]!r}")
    bad = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise ConfigError(f"{key}: must not contain the control character U+{ord(bad):04X}")
    if not value.strip("/"):
        raise ConfigError(f"{key}: must not be empty")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_TOPIC_PART_BYTES:
        raise ConfigError(f"{key}: longer than {MAX_TOPIC_PART_BYTES} bytes")


def default_request_bytes(max_chars: int) -> int:
    """The largest request payload for `max_chars`: JSON may spell one character as a 12-byte
    surrogate-pair escape; 1 KiB for the other fields; at least 4 KiB."""
    return max(4096, 12 * max_chars + 1024)


def _opt(default: Any, *, min: float | None = None, max: float | None = None) -> Any:
    return field(default=default, metadata={"min": min, "max": max})


def _path(kind: str, default: Any = None) -> Any:
    assert kind in PATH_KINDS, kind
    return field(default=default, metadata={"path": kind})


@dataclass(frozen=True)
class VoiceConfig:
    """Which voice speaks, and how."""

    name: str = "en_US-joe-medium"
    """A voice name (searched in `dirs` and the installed voice packages) or a path to a `.onnx`."""
    dirs: tuple[Path, ...] = _path("folder", ())
    """Extra folders holding `<name>.onnx` + `<name>.onnx.json` voices."""
    speaker: str | None = None
    """Speaker name or id for multi-speaker voices; None: the voice's first speaker."""
    speed: float = _opt(1.0, min=0.5, max=2.0)
    """Speaking rate; 2.0 is twice as fast (Piper length_scale = 1/speed)."""
    noise_scale: float | None = _opt(None, min=0.0, max=2.0)
    noise_w: float | None = _opt(None, min=0.0, max=2.0)
    threads: int = _opt(0, min=0, max=16)
    """ONNX Runtime intra-op threads per inference (the encoder's; the decoder's too when
    `parallel_windows` is 1); 0: two on a multi-core CPU, else one (measured on 2 cores: RTF
    0.069 with 2 threads vs 0.100 with 1, +24 % CPU)."""
    parallel_windows: int = _opt(4, min=1, max=16)
    """Decoder windows of a prepared voice decoded at once, each on one core with one intra-op
    thread (fewer threads that wait on each other: less CPU per second of speech): the usable
    cores, at most this. 1: one window at a time on `threads` threads."""
    max_phonemes: int = _opt(100, min=20, max=5000)
    """Longest phoneme sequence one inference may get; longer sentences are split at clauses.
    Unprepared (`prepare: false`) it bounds activation memory: 100 cut peak RSS by 23-34 MB against
    400, at no WER cost. Prepared, the decoder runs in windows anyway (400 vs 100: +3 MB)."""
    sentence_pause_ms: int = _opt(200, min=0, max=5000)
    """Silence between sentences."""
    precision: Literal["float32", "int8"] = "int8"
    """int8 (the default): the prepared voice's weights are quantized to INT8, all but the
    decoder's (as `edged voices optimize`): 41 MB less for the default voice and a faster
    encoder; pocketsphinx WER and predicted MOS within their noise of float32 (docs/benchmarks.md).
    float32: the weights as the voice ships them. A voice that is not prepared (`prepare: false`,
    models under 1 MB) runs as float32."""
    prepare: bool = True
    """Prepare each voice once into `<cache.dir>/models/` (a child process, seconds): split into
    encoder and decoder, optimized ahead. Start-up then skips ORT's optimizer, and the decoder runs
    on fixed windows, so memory no longer grows with sentence length. false: load the .onnx as is
    (so are models under 1 MB, which load in milliseconds anyway)."""


@dataclass(frozen=True)
class FrontendConfig:
    """Text normalization."""

    date_order: Literal["mdy", "dmy"] = "mdy"
    """How 12/03 is read: month/day (mdy) or day/month (dmy)."""


@dataclass(frozen=True)
class LanguagesConfig:
    """Which voice speaks each language of a request (docs/languages.md). A language left
    unset, or whose voice is missing or does not fit `limits.memory_mb`, falls back along its
    chain: zh kokoro:zf_xiaoxiao, espeak:cmn; ja kokoro:jf_alpha, espeak:ja; yue espeak:yue;
    ko espeak:ko; en voice.name, espeak:en-us."""

    han: Literal["zh", "yue", "ja"] = "zh"
    """What Han text without Kana is: Mandarin (zh), Cantonese (yue) or Japanese (ja)."""
    en: str | None = None
    """English and any other Latin-script text; None: `voice.name`."""
    zh: str | None = None
    yue: str | None = None
    ja: str | None = None
    ko: str | None = None
    switch_pause_ms: int = _opt(150, min=0, max=2000)
    """Silence where one language hands over to the next."""

    def __post_init__(self) -> None:
        for code in ("en", "zh", "yue", "ja", "ko"):
            name = getattr(self, code)
            if name is not None and not name.strip():
                raise ConfigError(f"languages.{code}: must not be empty (leave it out instead)")

    def voices(self) -> set[str]:
        """The voices named here."""
        return {v for v in (self.en, self.zh, self.yue, self.ja, self.ko) if v}


@dataclass(frozen=True)
class TlsConfig:
    """TLS to the broker: a CA to verify it, and optionally a client certificate and key."""

    ca_file: Path | None = _path("pem")
    cert_file: Path | None = _path("pem")
    key_file: Path | None = _path("pem")
    """Unencrypted PEM key of cert_file (or the key inside cert_file when unset)."""

    def __post_init__(self) -> None:
        if self.key_file is not None and self.cert_file is None:
            raise ConfigError("mqtt.tls.key_file: set without mqtt.tls.cert_file")


@dataclass(frozen=True)
class MqttConfig:
    """Broker connection and topics."""

    host: str = "localhost"
    port: int = _opt(1883, min=1, max=65535)
    topic_prefix: str | None = None
    """Default: edged/<device_id>."""
    client_id: str | None = None
    """Default: edged-<device_id>."""
    username: str | None = None
    password_file: Path | None = _path("secret")
    """File holding the password (never put a password in this file)."""
    tls: TlsConfig = field(default_factory=TlsConfig)
    max_payload_bytes: int = _opt(262144, min=1024, max=268435455)
    keepalive_s: int = _opt(30, min=5, max=3600)
    session_expiry_s: int = _opt(86400, min=10, max=31_536_000)
    """How long the broker keeps the session (and queued requests) while the daemon is away;
    finished request ids are remembered as long, so a redelivery is never spoken twice."""
    reconnect_min_s: float = _opt(1.0, min=0.05, max=60.0)
    reconnect_max_s: float = _opt(30.0, min=0.05, max=3600.0)
    max_offline_messages: int = _opt(1000, min=10, max=1_000_000)
    """Audio parts kept while disconnected; more audio is dropped (events never are)."""
    offline_buffer_mb: int = _opt(16, min=1, max=4096)
    """Audio bytes waiting for the broker: while connected the announcer waits for the broker
    to take them; while disconnected more audio is dropped (events never are)."""
    max_outgoing_messages: int = _opt(1000, min=20, max=1_000_000)
    """Messages waiting for the broker's acknowledgement above which intake slows: QoS 1
    requests are acknowledged only once half of them went out (the broker then holds new
    ones back), QoS 0 requests are refused and counted (`overloaded` event)."""
    stream_audio: bool = False
    """Publish audio in parts as each sentence is synthesized (lower latency) instead of one WAV."""
    state_dir: Path = _path("state", Path("state"))
    """Where the daemon remembers finished request ids (done.jsonl)."""

    def __post_init__(self) -> None:
        if self.password_file is not None and self.username is None:
            raise ConfigError("mqtt.password_file: set without mqtt.username")


@dataclass(frozen=True)
class LimitsConfig:
    """Bounds on work, time and memory."""

    queue: int = _opt(10, min=1, max=1000)
    task_timeout_s: float = _opt(60.0, min=1.0, max=3600.0)
    max_chars: int = _opt(500, min=1, max=100000)
    max_request_bytes: int | None = _opt(None, min=1024, max=4 << 20)
    """Largest request payload accepted. Announced to the broker (MQTT 5 Maximum Packet Size,
    with room for the topic and properties), so a larger message never reaches the daemon:
    the broker drops it (mosquitto without telling anyone). None: 12 x max_chars + 1 KiB,
    at least 4 KiB."""
    memory_mb: int = _opt(400, min=64, max=65536)
    stop_timeout_s: float = _opt(10.0, min=0.0, max=300.0)
    synthesis_workers: int = _opt(0, min=0, max=16)
    """Threads that run inferences for every source (MQTT, pinned phrases, the network
    servers); 0: one per window lane when windows are decoded in parallel (the usable cores, at
    most `voice.parallel_windows`, one per 200 MB of `memory_mb`), else one per `voice.threads`
    cores, at most one per 200 MB of `memory_mb`."""
    heartbeat_max_age_s: float = _opt(90.0, min=1.0, max=3600.0)
    """The worker counts as hung when its heartbeat is older than this: edged stops the
    systemd watchdog pings and systemd restarts it. Keep above the longest single step
    (one inference, one chunk of playback)."""

    def __post_init__(self) -> None:
        if self.max_request_bytes is not None and self.max_request_bytes < self.max_chars:
            raise ConfigError(f"limits.max_request_bytes: {self.max_request_bytes} is less than "
                              f"limits.max_chars ({self.max_chars}): no text of that length "
                              "would fit")

    @property
    def request_bytes(self) -> int:
        """The largest request payload: max_request_bytes, or derived from max_chars."""
        return self.max_request_bytes or default_request_bytes(self.max_chars)


@dataclass(frozen=True)
class CacheConfig:
    """The phrase cache (and the prepared voices, under `dir/models`)."""

    dir: Path = _path("state", Path("cache"))
    phrases: tuple[Any, ...] = ()
    """Pinned phrases: a string, or {text: "The {room} window is open", slots: {room: [a, b]}}."""
    max_mb: int = _opt(200, min=1, max=1_000_000)
    memory_mb: int = _opt(32, min=0, max=65536)
    max_expansions: int = _opt(500, min=1, max=100000)


@dataclass(frozen=True)
class ChimesConfig:
    """Attention chime per priority: a 16-bit PCM WAV (mono or stereo, at most 10 s), or None."""

    critical: Path | None = _path("wav")
    high: Path | None = _path("wav")
    normal: Path | None = _path("wav")
    low: Path | None = _path("wav")


@dataclass(frozen=True)
class AudioConfig:
    """Local playback: the device, levels, chimes, and what to do when it fails."""

    device: str | None = None
    """Output device: name substring or index (as listed by `edged devices`); None: default."""
    preroll_ms: int = _opt(150, min=0, max=5000)
    rate_hz: int | None = _opt(None, min=8000, max=384000)
    """Device sample rate; None: the voice's rate if the device takes it, else the device's
    default rate (audio is converted with soxr)."""
    buffer_ms: int = _opt(40, min=20, max=2000)
    """How far ahead of the loudspeaker the player writes; also the audible delay of a stop."""
    fade_ms: int = _opt(10, min=0, max=500)
    """Fade-in at the start, fade-out at the end and on an interrupt."""
    normalize: bool = True
    """One gain per announcement so that its speech comes out at target_dbfs."""
    target_dbfs: float = _opt(-20.0, min=-60.0, max=-3.0)
    """Gated RMS level of speech after normalizing (dB relative to full scale)."""
    peak_dbfs: float = _opt(-1.0, min=-30.0, max=0.0)
    """Peak limit: louder samples are limited, never clipped."""
    max_gain_db: float = _opt(20.0, min=0.0, max=40.0)
    """Most amplification normalizing may apply (quiet voices, near-silence)."""
    chimes: ChimesConfig = field(default_factory=ChimesConfig)
    retries: int = _opt(3, min=0, max=20)
    """Attempts to reopen a device that failed before the announcement fails."""
    retry_backoff_ms: int = _opt(250, min=10, max=60000)
    """Wait before the first reopen attempt; doubles with each further attempt."""
    fallback_to_publish: bool = False
    """When playing fails on the device, publish the audio on MQTT instead (daemon)."""


@dataclass(frozen=True)
class HttpConfig:
    """The HTTP server: `/api/tts`, OpenAI's `/v1/audio/speech`, `/api/say`, the web page."""

    enabled: bool = True
    """On by default, on loopback only. Left at its default, a port that cannot be bound is one
    warning and the daemon runs on without HTTP; set explicitly, it fails the start."""
    host: str = "127.0.0.1"
    """Address to listen on; 0.0.0.0 or a LAN address exposes it (set api_key_file then)."""
    port: int = _opt(8093, min=0, max=65535)
    """TCP port; 0: any free port (the one taken is shown in <prefix>/state)."""
    api_key_file: Path | None = _path("secret")
    """File holding the API key; when set, every API endpoint needs `Authorization: Bearer
    <key>` (/healthz and the page's static files do not)."""
    cors_origins: tuple[str, ...] = ()
    """Origins (`https://host:port`) whose pages may call the API; empty: none (CORS off)."""
    allow_query_key: bool = False
    """Accept the key as `?key=` too, for media players that cannot send a header. The key then
    shows in URLs: browser history, proxy logs, the Referer of a page."""
    max_streams: int = _opt(2, min=1, max=64)
    """Uncached syntheses HTTP may run at once (cached answers take none); more get 429."""
    batch_max_items: int = _opt(20, min=1, max=1000)
    """Texts one /api/tts-batch request may hold."""
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
    choice: the protocol has no authentication)."""
    port: int = _opt(10200, min=1, max=65535)
    zeroconf: bool = True
    """Advertise `_wyoming._tcp` over mDNS so Home Assistant discovers the server, only when
    it listens beyond loopback."""
    max_connections: int = _opt(4, min=1, max=64)
    """Clients connected at once; one more gets an `error` event and is closed. Also the bound
    on Wyoming's synthesis streams at the scheduler (one per connection)."""
    max_chars: int = _opt(2000, min=1, max=100000)
    """Longest text of one `synthesize`, or of one streamed response in total. Sentences are
    synthesized one at a time, so memory does not grow with it."""
    idle_timeout_s: float = _opt(60.0, min=1.0, max=3600.0)
    """A connection that sends nothing for this long while nothing is being spoken is closed."""
    priority: Literal["high", "normal", "low"] = "high"
    """Rank of Wyoming synthesis at the scheduler; a critical MQTT announcement always goes
    first (it waits for at most one decoder window of Wyoming work)."""


@dataclass(frozen=True)
class Config:
    """The whole file."""

    device_id: str = field(default_factory=lambda: socket.gethostname().split(".")[0] or "edged")
    output: Literal["play", "publish", "both"] = "play"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    voice: VoiceConfig = field(default_factory=VoiceConfig)
    voices: tuple[str, ...] = ()
    """Other voices a request may name (loaded on first use, unloaded LRU within limits.memory_mb)."""
    frontend: FrontendConfig = field(default_factory=FrontendConfig)
    languages: LanguagesConfig = field(default_factory=LanguagesConfig)
    mqtt: MqttConfig = field(default_factory=MqttConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    audio: AudioConfig = field(default_factory=AudioConfig)
    http: HttpConfig = field(default_factory=HttpConfig)
    homeassistant: HomeAssistantConfig = field(default_factory=HomeAssistantConfig)
    wyoming: WyomingConfig = field(default_factory=WyomingConfig)
    source: Path | None = field(default=None, metadata={"internal": True})
    """The file this config was read from (not a key)."""

    def __post_init__(self) -> None:
        # The device id names the default prefix and the client id, and shows in the state.
        check_topic_part("device_id", self.device_id)
        if self.mqtt.topic_prefix is not None:
            check_topic_part("mqtt.topic_prefix", self.mqtt.topic_prefix)

    @property
    def topic_prefix(self) -> str:
        return self.mqtt.topic_prefix or f"edged/{self.device_id}"

    @property
    def client_id(self) -> str:
        return self.mqtt.client_id or f"edged-{self.device_id}"


