"""Announcement and control requests: untrusted MQTT payloads turned into checked objects.

Everything here is pure: bytes in, `Request`/`Control` out, or a `RequestError` whose message
is a sentence safe to publish back ("text is 2400 characters; the limit is 500"). Sizes and
JSON nesting are bounded *before* parsing, so no payload can make the parser do unbounded work.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Final

from ..config import default_request_bytes
from ..house import Instant, check_reply_topic, start_instant
from ..languages import LanguageError, language_code
from .bounded_json import ID_RE, RequestError, decode, kind, load_object, recover_id, short
from .priorities import PRIORITIES, rank

__all__ = ["ACTIONS", "CONTROL_MAX_BYTES", "OUTPUTS", "Control", "Request", "RequestError", "Rules",
           "new_id", "parse_control", "parse_request", "recover_id"]

OUTPUTS: Final = ("play", "publish", "both")
ACTIONS: Final = ("stop", "skip", "clear", "pause", "resume")
REQUEST_FIELDS: Final = (
    "text", "id", "voice", "speaker", "speed", "volume", "priority", "output", "ttl_s", "language",
    "play_at", "start_in_ms", "sent_at", "reply_to",
)
MAX_START_IN_MS: Final = 60_000
_UNIX_MS: Final = (1e12, 1e14)
"""A Unix time in ms (2001..5138): a plausible range, so a value in seconds is refused."""
MAX_ID_CHARS: Final = 64
CONTROL_MAX_BYTES: Final = 4096
MAX_TTL_S: Final = 86400.0
_CONTROL_CHARS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""C0 and C1 controls but tab and newline (\\r, U+0085 NEL, U+009B CSI included), and lone
surrogates (a JSON escape can make one; no encoder takes it)."""


@dataclass(frozen=True)
class Rules:
    """What this daemon accepts; built from the config once."""

    max_chars: int = 500
    voices: Collection[str] = ()
    """Voice names a request may choose (empty: the field is not accepted at all)."""
    outputs: Collection[str] = OUTPUTS
    """Outputs this device can serve (no `play` without an audio device)."""
    max_request_bytes: int | None = None
    """limits.max_request_bytes; None: derived from max_chars (config.default_request_bytes)."""

    @property
    def max_bytes(self) -> int:
        return self.max_request_bytes or default_request_bytes(self.max_chars)


@dataclass(frozen=True)
class Request:
    """One announcement, as asked for. None means "the configured default"."""

    text: str
    id: str = field(default_factory=lambda: new_id())
    id_given: bool = False
    voice: str | None = None
    speaker: str | int | None = None
    speed: float | None = None
    volume: float = 1.0
    priority: str = "normal"
    output: str | None = None
    ttl_s: float | None = None
    language: str | None = None
    """The language of the text where its script does not say (Han, digits); a code."""
    play_at: float | None = None
    """The instant to start at, Unix time in ms (house/instants.py)."""
    start_in_ms: float | None = None
    """Start this long after `sent_at`, the moment the request was published (Unix ms)."""
    sent_at: float | None = None
    reply_to: str | None = None
    """Where its events and audio go (house/reply.py)."""

    @property
    def rank(self) -> int:
        return rank(self.priority)

    @property
    def instant(self) -> Instant | None:
        return start_instant(self.play_at, self.start_in_ms, self.sent_at)


@dataclass(frozen=True)
class Control:
    """A request on `<prefix>/control`."""

    action: str
    id: str = field(default_factory=lambda: new_id())


def new_id() -> str:
    return uuid.uuid4().hex


def parse_request(payload: bytes, rules: Rules) -> Request:
    """Plain UTF-8 text, or a JSON object (first non-blank character `{` or `[`)."""
    try:
        return _parse_request(payload, rules)
    except RequestError as err:
        if err.request_id is None:
            err.request_id = recover_id(payload, rules.max_bytes)
        raise


def parse_control(payload: bytes) -> Control:
    """`{"action": "stop"|"skip"|"clear"|"pause"|"resume", "id": str}` or the bare action word."""
    try:
        return _parse_control(payload)
    except RequestError as err:
        if err.request_id is None:
            err.request_id = recover_id(payload, CONTROL_MAX_BYTES)
        raise


def _parse_request(payload: bytes, rules: Rules) -> Request:
    text = decode(payload, rules.max_bytes)
    if text.lstrip()[:1] not in ("{", "["):
        return Request(text=_check_text(text.strip(), rules.max_chars))
    data = load_object(text)
    request_id = _take_id(data)
    try:
        return _build(data, request_id, rules)
    except RequestError as err:
        raise RequestError(str(err), request_id, kind=err.kind) from None


def _parse_control(payload: bytes) -> Control:
    text = decode(payload, CONTROL_MAX_BYTES)
    if text.lstrip()[:1] not in ("{", "["):
        return Control(_choice("action", text.strip(), ACTIONS))
    data = load_object(text)
    request_id = _take_id(data)
    try:
        _no_unknown(data, ("action", "id"))
        if "action" not in data:
            raise RequestError("'action' is missing; expected one of " + ", ".join(ACTIONS))
        action = _choice("action", data["action"], ACTIONS)
    except RequestError as err:
        raise RequestError(str(err), request_id, kind=err.kind) from None
    return Control(action, request_id or new_id())


# -- the JSON request ------------------------------------------------------------------------


def _build(data: dict[str, Any], request_id: str | None, rules: Rules) -> Request:
    _no_unknown(data, REQUEST_FIELDS)
    if "text" not in data:
        raise RequestError("'text' is missing")
    text = data["text"]
    if not isinstance(text, str):
        raise RequestError(f"text must be a string, got {kind(text)}")
    values: dict[str, Any] = {"text": _check_text(text.strip(), rules.max_chars)}
    if request_id is not None:
        values.update(id=request_id, id_given=True)
    if data.get("voice") is not None:
        voice = data["voice"]
        if not isinstance(voice, str):
            raise RequestError(f"voice must be a string, got {kind(voice)}")
        if voice not in rules.voices:
            known = ", ".join(sorted(rules.voices)) or "none"
            raise RequestError(f"unknown voice {short(voice)}; configured voices: {known}")
        values["voice"] = voice
    if data.get("speaker") is not None:
        values["speaker"] = _speaker(data["speaker"])
    if data.get("speed") is not None:
        values["speed"] = _number("speed", data["speed"], 0.5, 2.0)
    if data.get("volume") is not None:
        values["volume"] = _number("volume", data["volume"], 0.0, 1.0)
    if data.get("priority") is not None:
        values["priority"] = _choice("priority", data["priority"], PRIORITIES)
    if data.get("output") is not None:
        output = _choice("output", data["output"], OUTPUTS)
        wanted = {"play", "publish"} if output == "both" else {output}
        missing = sorted(w for w in wanted if w not in rules.outputs)
        if missing:
            raise RequestError(
                f"output {output!r} is not available here: this daemon cannot {missing[0]} "
                f"(its outputs: {', '.join(sorted(rules.outputs))})"
            )
        values["output"] = output
    if data.get("ttl_s") is not None:
        ttl = _number("ttl_s", data["ttl_s"], 0.0, MAX_TTL_S)
        if ttl <= 0:
            raise RequestError("ttl_s must be greater than 0")
        values["ttl_s"] = ttl
    if data.get("language") is not None:
        values["language"] = _language(data["language"])
    values.update(_timing(data))
    if data.get("reply_to") is not None:
        topic = data["reply_to"]
        if not isinstance(topic, str):
            raise RequestError(f"reply_to must be a string, got {kind(topic)}")
        problem = check_reply_topic(topic)
        if problem:
            raise RequestError(problem)
        values["reply_to"] = topic
    return Request(**values)


def _timing(data: dict[str, Any]) -> dict[str, float]:
    """play_at, or start_in_ms with sent_at (house/instants.py)."""
    values = {}
    for name in ("play_at", "sent_at"):
        if data.get(name) is not None:
            values[name] = _number(name, data[name], *_UNIX_MS)
    if data.get("start_in_ms") is not None:
        values["start_in_ms"] = _number("start_in_ms", data["start_in_ms"], 0, MAX_START_IN_MS)
    if "play_at" in values and "start_in_ms" in values:
        raise RequestError("give play_at or start_in_ms, not both")
    if "start_in_ms" in values and "sent_at" not in values:
        raise RequestError("start_in_ms needs sent_at (Unix time in ms when the request was "
                           "published), so every member computes the same instant; or give "
                           "play_at")
    return values


def _language(value: object) -> str:
    if not isinstance(value, str):
        raise RequestError(f"language must be a string, got {kind(value)}")
    try:
        return language_code(value)
    except LanguageError as err:
        raise RequestError(str(err)) from None


def _take_id(data: dict[str, Any]) -> str | None:
    if data.get("id") is None:
        return None
    value = data["id"]
    if not isinstance(value, str):
        raise RequestError(f"id must be a string, got {kind(value)}")
    if len(value) > MAX_ID_CHARS:
        raise RequestError(f"id is {len(value)} characters; the limit is {MAX_ID_CHARS}")
    if not ID_RE.fullmatch(value):
        # The id becomes part of the topic <prefix>/audio/<id>: no '/', '+', '#' or spaces.
        raise RequestError(
            "id may only contain letters, digits, '.', '_', ':' and '-' "
            f"(it names the topic <prefix>/audio/<id>); got {short(value)}"
        )
    return value


def _check_text(text: str, max_chars: int) -> str:
    if not text:
        raise RequestError("text is empty")
    if len(text) > max_chars:
        raise RequestError(f"text is {len(text)} characters; the limit is {max_chars}",
                           kind="too_large")
    bad = _CONTROL_CHARS.search(text)
    if bad:
        what = "an unpaired surrogate" if "\ud800" <= bad.group() <= "\udfff" else \
            "the control character"
        raise RequestError(f"text contains {what} U+{ord(bad.group()):04X} at position "
                           f"{bad.start()}")
    return text


def _speaker(value: object) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RequestError(f"speaker must be a name or a number, got {kind(value)}")
    if isinstance(value, int) and not 0 <= value < 100000:
        raise RequestError(f"speaker {value} is out of range")
    if isinstance(value, str) and len(value) > MAX_ID_CHARS:
        raise RequestError(f"speaker is {len(value)} characters; the limit is {MAX_ID_CHARS}")
    return value


def _number(name: str, value: object, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(f"{name} must be a number, got {kind(value)}")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise RequestError(f"{name} is {value}; it must be between {lo:g} and {hi:g}")
    return float(value)


def _choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        shown = short(value) if isinstance(value, str) else kind(value)
        raise RequestError(f"{name} is {shown}; expected one of {', '.join(choices)}")
    return value


def _no_unknown(data: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        names = ", ".join(short(k) for k in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        noun = "field" if len(unknown) == 1 else "fields"
        raise RequestError(f"unknown {noun} {names}; allowed fields: {', '.join(allowed)}")
