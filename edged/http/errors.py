"""Every error an HTTP client gets is JSON, `{"error": "<one sentence>"}`, with the status that
says whose problem it is: 400 a bad field (named), 401 the key, 403 an origin or host refused,
404, 405, 413 too large, 415 a format, 422 a voice that cannot fit the memory budget, 429 busy
(with Retry-After), 503 not ready or over the memory budget."""

from __future__ import annotations

from typing import Final

from aiohttp import web

from ..daemon.policy import HTTP_STATUS, Refused

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


def refusal(refused: Refused) -> HttpError:
    """A request the policy refused, with the status its problem has everywhere (policy.py)."""
    status = HTTP_STATUS[refused.problem]
    return busy(str(refused)) if status == 429 else HttpError(status, str(refused))


def error_response(status: int, message: str,
                   headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)
