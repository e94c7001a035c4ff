"""What a speech request asks for, from a JSON body or a query string, checked by the same field
rules as an MQTT announcement (daemon/requests.py, daemon/fields.py), plus the answer's format.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web

from ..daemon.requests import RequestError, Rules, SpeechRequest, speech_request
from .errors import HttpError
from .formats import ALIASES, FORMATS, Format, supported

TTS_FIELDS: Final = ("text", "voice", "speaker", "speed", "volume", "language", "format")
_SPEECH_FIELDS: Final = tuple(f for f in TTS_FIELDS if f != "format")
_NUMBERS: Final = ("speed", "volume")


@dataclass(frozen=True)
class TtsParams:
    speech: SpeechRequest
    format: Format
    rate_hz: int | None = None
    """Resample to this rate (OpenAI's pcm is 24 kHz); None: the voice's own."""


async def json_object(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object (its size is capped by the server: 413 beyond)."""
    raw = await request.read()
    try:
        data = json.loads(raw, object_pairs_hook=_no_twice)
    except _Twice as twice:
        raise HttpError(400, f"{str(twice)[:40]!r} is given twice in the JSON body") from None
    except (ValueError, RecursionError) as err:  # RecursionError: absurdly nested arrays
        raise HttpError(400, f"the body is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise HttpError(400, "the body must be a JSON object")
    return data


class _Twice(ValueError):
    """A JSON object names a key twice (json.loads would silently keep the last)."""


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _Twice(key)
        data[key] = value
    return data


def from_query(query: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """`?text=...&speed=1.2`: numbers and a numeric speaker made numbers, the rest as given;
    a parameter given twice is 400 (not the last one silently)."""
    data: dict[str, Any] = {}
    for key, value in query:
        if key in data:
            raise HttpError(400, f"{key} is given twice")
        data[key] = value
    for key in _NUMBERS:
        if key in data:
            try:
                data[key] = float(data[key])
            except ValueError:
                raise HttpError(400, f"{key} must be a number, got {data[key][:40]!r}") from None
    if isinstance(data.get("speaker"), str) and data["speaker"].isdigit():
        data["speaker"] = int(data["speaker"])
    return data


def tts_params(data: dict[str, Any], rules: Rules) -> TtsParams:
    """/api/tts's fields: a SpeechRequest (at normal priority) and a format; 400/413/415."""
    unknown = [k for k in data if k not in TTS_FIELDS]
    if unknown:
        raise HttpError(400, f"unknown field {unknown[0][:40]!r}; allowed fields: "
                        f"{', '.join(TTS_FIELDS)}")
    rest = dict(data)
    fmt = pick_format(rest.pop("format", "wav"))
    return TtsParams(checked(rest, rules), fmt)


def pick_format(name: object, field: str = "format") -> Format:
    if not isinstance(name, str):
        raise HttpError(400, f"{field} must be a string")
    fmt = FORMATS.get(ALIASES.get(name, name))
    if fmt is None:
        raise HttpError(415, f"{field} {name[:40]!r} is not supported; supported: {supported()}")
    return fmt


def checked(data: dict[str, Any], rules: Rules) -> SpeechRequest:
    """`data` through the request fields' rules: a SpeechRequest, or 400/413 with their
    sentence."""
    try:
        return speech_request(data, rules, allowed=_SPEECH_FIELDS)
    except RequestError as err:
        raise HttpError(413 if err.too_large else 400, str(err)) from None
