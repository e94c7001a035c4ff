"""Speech and announcement requests: untrusted fields turned into typed, checked objects.

    SpeechRequest   what every intake asks to be said: text, voice, speaker, speed, language,
                    priority, volume (HTTP /api/tts and /v1/audio/speech, Wyoming, edged say)
    Request         an announcement (MQTT say, the group and pool topics, HTTP /api/say): a
                    SpeechRequest with an id, an output, a timeout, a start instant, a reply topic
    Control         a request on `<prefix>/control`

Everything here is pure: bytes or a mapping in, a request out, or a `RequestError` whose message
is a sentence safe to publish back ("text is 2400 characters; the limit is 500"). Each field's
rule is in fields.py; payload sizes and JSON nesting are bounded before parsing
(bounded_json.py). What the device then makes of a request (its selected voice, the memory
budget) is the policy's (policy.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..config import default_request_bytes
from ..house import Instant, check_reply_topic, start_instant
from . import fields
from .bounded_json import RequestError, decode, kind, load_object, recover_id
from .priorities import rank

__all__ = ["ACTIONS", "CONTROL_MAX_BYTES", "OUTPUTS", "SPEECH_FIELDS", "Control", "Request",
           "RequestError", "Rules", "SpeechRequest", "new_id", "parse_control", "parse_request",
           "recover_id", "speech_request"]

OUTPUTS: Final = ("play", "publish", "both")
ACTIONS: Final = ("stop", "skip", "clear", "pause", "resume")
SPEECH_FIELDS: Final = ("text", "voice", "speaker", "speed", "volume", "priority", "language")
REQUEST_FIELDS: Final = (
    "text", "id", "voice", "speaker", "speed", "volume", "priority", "output", "ttl_s", "language",
    "play_at", "start_in_ms", "sent_at", "reply_to",
)
MAX_START_IN_MS: Final = 60_000
_UNIX_MS: Final = (1e12, 1e14)
"""A Unix time in ms (2001..5138): a plausible range, so a value in seconds is refused."""
CONTROL_MAX_BYTES: Final = 4096
MAX_TTL_S: Final = 86400.0


@dataclass(frozen=True)
class Rules:
    """What this device accepts; built from the config once."""

    max_chars: int = 500
    voices: Collection[str] | None = ()
    """Voice names a request may choose (empty: none may be named; None: any, for `edged
    say`, which speaks any installed voice or file)."""
    outputs: Collection[str] = OUTPUTS
    """Outputs this device can serve (no `play` without an audio device)."""
    max_request_bytes: int | None = None
    """limits.max_request_bytes; None: derived from max_chars (config.default_request_bytes)."""
    reply_prefix: str = "edged/reply"
    """Where `reply_to` may point (config.reply_prefix; house/reply.py)."""

    @property
    def max_bytes(self) -> int:
        return self.max_request_bytes or default_request_bytes(self.max_chars)


@dataclass(frozen=True)
class SpeechRequest:
    """What to say and how, as asked. None means "the device's default"."""

    text: str
    voice: str | None = None
    speaker: str | int | None = None
    speed: float | None = None
    volume: float = 1.0
    priority: str = "normal"
    language: str | None = None
    """The language of the text where its script does not say (Han, digits); a code."""

    @property
    def rank(self) -> int:
        return rank(self.priority)


@dataclass(frozen=True)
class Request(SpeechRequest):
    """One announcement, as asked for."""

    id: str = field(default_factory=lambda: new_id())
    id_given: bool = False
    output: str | None = None
    ttl_s: float | None = None
    play_at: float | None = None
    """The instant to start at, Unix time in ms (house/instants.py)."""
    start_in_ms: float | None = None
    """Start this long after `sent_at`, the moment the request was published (Unix ms)."""
    sent_at: float | None = None
    reply_to: str | None = None
    """Where its events and audio go (house/reply.py)."""

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


def speech_request(data: Mapping[str, Any], rules: Rules,
                   allowed: tuple[str, ...] = SPEECH_FIELDS) -> SpeechRequest:
    """A JSON object or a query (values already typed) as a SpeechRequest: only `allowed`
    fields, a null field as absent; RequestError."""
    fields.no_unknown(data, allowed)
    return SpeechRequest(**_speech_fields(data, rules))


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
        return Request(text=fields.text(text, rules.max_chars))
    data = load_object(text)
    request_id = fields.request_id(data["id"]) if data.get("id") is not None else None
    try:
        fields.no_unknown(data, REQUEST_FIELDS)
        values = _speech_fields(data, rules) | _announcement_fields(data, rules) | _timing(data)
    except RequestError as err:
        raise RequestError(str(err), request_id, kind=err.kind) from None
    if request_id is not None:
        values.update(id=request_id, id_given=True)
    return Request(**values)


def _parse_control(payload: bytes) -> Control:
    text = decode(payload, CONTROL_MAX_BYTES)
    if text.lstrip()[:1] not in ("{", "["):
        return Control(fields.choice("action", text.strip(), ACTIONS))
    data = load_object(text)
    request_id = fields.request_id(data["id"]) if data.get("id") is not None else None
    try:
        fields.no_unknown(data, ("action", "id"))
        if "action" not in data:
            raise RequestError("'action' is missing; expected one of " + ", ".join(ACTIONS))
        action = fields.choice("action", data["action"], ACTIONS)
    except RequestError as err:
        raise RequestError(str(err), request_id, kind=err.kind) from None
    return Control(action, request_id or new_id())


def _speech_fields(data: Mapping[str, Any], rules: Rules) -> dict[str, Any]:
    if "text" not in data:
        raise RequestError("'text' is missing")
    values: dict[str, Any] = {"text": fields.text(data["text"], rules.max_chars)}
    given = {k: v for k, v in data.items() if v is not None}
    if "voice" in given:
        values["voice"] = fields.voice(given["voice"], rules.voices)
    if "speaker" in given:
        values["speaker"] = fields.speaker(given["speaker"])
    if "speed" in given:
        values["speed"] = fields.speed(given["speed"])
    if "volume" in given:
        values["volume"] = fields.volume(given["volume"])
    if "priority" in given:
        values["priority"] = fields.priority(given["priority"])
    if "language" in given:
        values["language"] = fields.language(given["language"])
    return values


def _announcement_fields(data: Mapping[str, Any], rules: Rules) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if data.get("output") is not None:
        output = fields.choice("output", data["output"], OUTPUTS)
        wanted = {"play", "publish"} if output == "both" else {output}
        missing = sorted(w for w in wanted if w not in rules.outputs)
        if missing:
            raise RequestError(
                f"output {output!r} is not available here: this daemon cannot {missing[0]} "
                f"(its outputs: {', '.join(sorted(rules.outputs))})"
            )
        values["output"] = output
    if data.get("ttl_s") is not None:
        ttl = fields.number("ttl_s", data["ttl_s"], 0.0, MAX_TTL_S)
        if ttl <= 0:
            raise RequestError("ttl_s must be greater than 0")
        values["ttl_s"] = ttl
    if data.get("reply_to") is not None:
        topic = data["reply_to"]
        if not isinstance(topic, str):
            raise RequestError(f"reply_to must be a string, got {kind(topic)}")
        problem = check_reply_topic(topic, rules.reply_prefix)
        if problem:
            raise RequestError(problem)
        values["reply_to"] = topic
    return values


def _timing(data: Mapping[str, Any]) -> dict[str, float]:
    """play_at, or start_in_ms with sent_at (house/instants.py)."""
    values = {}
    for name in ("play_at", "sent_at"):
        if data.get(name) is not None:
            values[name] = fields.number(name, data[name], *_UNIX_MS)
    if data.get("start_in_ms") is not None:
        values["start_in_ms"] = fields.number("start_in_ms", data["start_in_ms"], 0,
                                              MAX_START_IN_MS)
    if "play_at" in values and "start_in_ms" in values:
        raise RequestError("give play_at or start_in_ms, not both")
    if "start_in_ms" in values and "sent_at" not in values:
        raise RequestError("start_in_ms needs sent_at (Unix time in ms when the request was "
                           "published), so every member computes the same instant; or give "
                           "play_at")
    return values
