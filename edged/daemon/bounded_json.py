"""Untrusted bytes to a JSON object, every cost bounded: the size before decoding, the nesting
before parsing, no duplicate fields, no NaN/Infinity; and the id of a payload that could not be
parsed, found at bounded cost so its rejection can still be matched (requests.py builds on it).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

MAX_DEPTH: Final = 4
"""Our schema is flat; a little depth is allowed so wrong types get a specific error."""
ID_RE: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_TOKEN_RE: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]', re.DOTALL)


class RequestError(ValueError):
    """A payload cannot be served; the message is a sentence safe to publish in an event."""

    def __init__(self, message: str, request_id: str | None = None, *,
                 kind: str = "invalid") -> None:
        super().__init__(message)
        self.request_id = request_id
        """The payload's id when it had a valid one, so the rejection can be matched."""
        self.kind = kind
        """What the daemon counts it as: "invalid", or "too_large" (the payload, or its text)."""

    @property
    def too_large(self) -> bool:
        """Over a size limit (HTTP answers 413, not 400)."""
        return self.kind == "too_large"


def decode(payload: bytes, max_bytes: int) -> str:
    if len(payload) > max_bytes:
        raise RequestError(f"payload is {len(payload)} bytes; the limit is {max_bytes}",
                           kind="too_large")
    try:
        return payload.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise RequestError(
            f"payload is not valid UTF-8: {err.reason} (byte 0x{payload[err.start]:02x} "
            f"at offset {err.start})"
        ) from None


def load_object(text: str) -> dict[str, Any]:
    if text.count("{") + text.count("[") > MAX_DEPTH:
        _check_depth(text)
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except RequestError:
        raise
    except ValueError as err:  # JSONDecodeError, and int() of a 5000-digit number
        raise RequestError(f"payload looks like JSON but is not valid: {err}") from None
    if not isinstance(data, dict):
        raise RequestError(f"a JSON payload must be an object, got {kind(data)}")
    return data


def _check_depth(text: str) -> None:
    depth = 0
    for token in _TOKEN_RE.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise RequestError(f"JSON is nested deeper than {MAX_DEPTH} levels")
        elif char in "]}":
            depth -= 1


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise RequestError(f"field {short(key)} appears twice")
        data[key] = value
    return data


def _no_constant(name: str) -> None:
    raise RequestError(f"{name} is not a valid JSON number")


def kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false",
             int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def recover_id(payload: bytes, max_bytes: int) -> str | None:
    """The id of a payload that could not be parsed (invalid or too deep JSON, a duplicate
    field, ...): exactly one top-level `"id"` whose value is a valid id, or None. Looks at
    most at `max_bytes` bytes, so a rejection can be matched to its request at bounded cost."""
    text = payload[:max_bytes].decode("utf-8", "replace")
    if not text.lstrip().startswith("{"):
        return None
    depth, prev, key, keys = 0, "", None, 0
    values: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        token = match.group()
        if token in ("{", "["):
            depth += 1
        elif token in ("}", "]"):
            depth -= 1
        elif depth == 1:
            if token == ":":
                key = _json_string(prev)
                keys += key == "id"
            elif token == ",":
                key = None
            elif prev == ":" and key == "id":
                values.append(token)
        prev = token
    value = _json_string(values[0]) if keys == 1 and len(values) == 1 else None
    return value if value is not None and ID_RE.fullmatch(value) else None


def _json_string(token: str) -> str | None:
    if not token.startswith('"'):
        return None
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None
