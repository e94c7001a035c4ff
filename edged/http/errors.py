"""Every error an HTTP client gets is JSON, `{"error": "<one sentence>"}`, with the status that
says whose problem it is: 400 a bad field (named), 401 the key, 403 an origin or host refused,
404, 405, 413 too large, 415 a format, 429 busy (with Retry-After), 503 not ready."""

from __future__ import annotations

from typing import Final

from aiohttp import web

RETRY_AFTER_S: Final = 1
"""What a 429 asks the client to wait: a synthesis slot frees within about a sentence."""


class HttpError(Exception):
    """Raised by a handler; the error middleware turns it into the JSON answer."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


def busy(message: str) -> HttpError:
    return HttpError(429, message, {"Retry-After": str(RETRY_AFTER_S)})


def error_response(status: int, message: str,
                   headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)
