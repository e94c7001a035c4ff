"""Reading Wyoming events from a client, bounded.

A Wyoming event is a JSON header line (`type`, optional `data`, `data_length`, `payload_length`),
then `data_length` bytes of JSON merged into `data`, then `payload_length` bytes of payload. The
`wyoming` library reads whatever lengths the client announces; a server must not: here the header
line, the data and the payload each have a bound, checked before anything is read. Writing goes
through the library (`async_write_event`), as Home Assistant's own client does.

    FrameError(fatal=False): the frame was read whole but makes no sense (not JSON, no type):
                             answer with an error and read the next one
    FrameError(fatal=True):  the stream cannot be followed any more (too long, cut short): close
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Final

from wyoming.event import Event

_MAX_NAME: Final = 64


class FrameError(Exception):
    """A frame that cannot be used; the message is safe to send back in an `error` event."""

    def __init__(self, message: str, *, fatal: bool) -> None:
        super().__init__(message)
        self.fatal = fatal


@dataclass(frozen=True)
class Bounds:
    """The largest header line, data and payload a client may send."""

    line_bytes: int = 16384
    data_bytes: int = 65536
    payload_bytes: int = 65536


async def read_event(reader: asyncio.StreamReader, bounds: Bounds,
                     timeout_s: float) -> Event | None:
    """The next event; None at a clean end of the stream; FrameError. TimeoutError when no
    header line arrives within `timeout_s` (nothing is lost: a line is consumed only whole, so
    the caller may wait again). Once a header is read, its body must follow within `timeout_s`."""
    try:
        async with asyncio.timeout(timeout_s):
            line = await reader.readuntil(b"\n")  # the reader's limit is bounds.line_bytes
    except asyncio.IncompleteReadError as err:
        if err.partial.strip():
            raise FrameError("the connection ended in the middle of an event", fatal=True) from None
        return None
    except asyncio.LimitOverrunError:
        raise FrameError(f"event header longer than {bounds.line_bytes} bytes",
                         fatal=True) from None
    header = _header(line)
    data_length = _length(header, "data_length", bounds.data_bytes)
    payload_length = _length(header, "payload_length", bounds.payload_bytes)
    try:
        async with asyncio.timeout(timeout_s):
            data_bytes = await reader.readexactly(data_length) if data_length else b""
            payload = await reader.readexactly(payload_length) if payload_length else None
    except (asyncio.IncompleteReadError, TimeoutError):
        raise FrameError("the event's data or payload did not arrive whole", fatal=True) from None
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise FrameError("the event's data is not a JSON object", fatal=False)
    if data_bytes:
        more = _json(data_bytes, "data")
        if not isinstance(more, dict):
            raise FrameError("the event's data is not a JSON object", fatal=False)
        data = {**data, **more}
    return Event(type=header["type"], data=data, payload=payload)


def _header(line: bytes) -> dict[str, Any]:
    header = _json(line, "header")
    if not isinstance(header, dict):
        raise FrameError("the event header is not a JSON object", fatal=False)
    kind = header.get("type")
    if not isinstance(kind, str) or not 0 < len(kind) <= _MAX_NAME:
        raise FrameError("the event header has no valid 'type'", fatal=False)
    return header


def _length(header: dict[str, Any], key: str, bound: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FrameError(f"{key} must be a byte count", fatal=True)
    if value > bound:
        raise FrameError(f"{key} is {value} bytes; the limit is {bound}", fatal=True)
    return value


def _json(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the C stack
        raise FrameError(f"the event {what} is not valid JSON", fatal=False) from None
