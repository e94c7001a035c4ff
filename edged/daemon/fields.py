"""The rule for each field of a speech request, written once: whatever the intake (MQTT and HTTP
JSON, an HTTP query string, a Wyoming event, `edged say`'s arguments), a text, a speed, a voice
name, a speaker, a language or a priority is accepted or refused here, with the same sentence.

Each function takes the untrusted value and returns it checked, or raises `RequestError` whose
message is safe to send back ("speed is 9; it must be between 0.5 and 2").
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Final

from ..config import SPEED_RANGE
from ..languages import LanguageError, language_code
from .bounded_json import ID_RE, RequestError, kind, short
from .priorities import PRIORITIES

MAX_NAME_CHARS: Final = 64
"""Ids, speaker names: they end up in topics, logs and the state."""
_CONTROL_CHARS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""C0 and C1 controls but tab and newline (\\r, U+0085 NEL, U+009B CSI included), and lone
surrogates (a JSON escape can make one; no encoder takes it)."""


def text(value: object, max_chars: int, *, name: str = "text") -> str:
    """The text to speak, stripped: a non-empty string of at most `max_chars` characters with
    no control character but tab and newline, and no lone surrogate."""
    if not isinstance(value, str):
        raise RequestError(f"{name} must be a string, got {kind(value)}")
    return check_text(value.strip(), max_chars, name=name)


def check_text(value: str, max_chars: int, *, name: str = "text", empty_ok: bool = False) -> str:
    """`value` as it is, or RequestError (`empty_ok`: a streamed part may be blank)."""
    if not value and not empty_ok:
        raise RequestError(f"{name} is empty")
    if len(value) > max_chars:
        raise RequestError(f"{name} is {len(value)} characters; the limit is {max_chars}",
                           kind="too_large")
    bad = _CONTROL_CHARS.search(value)
    if bad:
        what = "an unpaired surrogate" if "\ud800" <= bad.group() <= "\udfff" else \
            "the control character"
        raise RequestError(f"{name} contains {what} U+{ord(bad.group()):04X} at position "
                           f"{bad.start()}")
    return value


def voice(value: object, known: Collection[str] | None) -> str:
    """A voice name this device may speak with (`known`; None: any, for `edged say`)."""
    if not isinstance(value, str):
        raise RequestError(f"voice must be a string, got {kind(value)}")
    if known is not None and value not in known:
        if value.replace(" ", "+") in known:  # a mix of Kokoro styles, typed into a URL
            raise RequestError(f"unknown voice {short(value)}: did you mean "
                               f"{value.replace(' ', '+')}? A + in a URL's query string arrives "
                               f"as a space: write it %2B")
        names = ", ".join(sorted(known)) or "none"
        raise RequestError(f"unknown voice {short(value)}; configured voices: {names}")
    return value


def speaker(value: object) -> str | int:
    """A speaker's name or number (whether the voice has it is the voice's to say)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RequestError(f"speaker must be a name or a number, got {kind(value)}")
    if isinstance(value, int) and not 0 <= value < 100000:
        raise RequestError(f"speaker {value} is out of range")
    if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
        raise RequestError(f"speaker is {len(value)} characters; the limit is {MAX_NAME_CHARS}")
    return value


def speed(value: object, *, name: str = "speed") -> float:
    return number(name, value, *SPEED_RANGE)


def volume(value: object) -> float:
    return number("volume", value, 0.0, 1.0)


def priority(value: object) -> str:
    return choice("priority", value, PRIORITIES)


def language(value: object) -> str:
    """Our code for a language or one of its aliases (`jp` -> `ja`)."""
    if not isinstance(value, str):
        raise RequestError(f"language must be a string, got {kind(value)}")
    try:
        return language_code(value)
    except LanguageError as err:
        raise RequestError(str(err)) from None


def request_id(value: object) -> str:
    if not isinstance(value, str):
        raise RequestError(f"id must be a string, got {kind(value)}")
    if len(value) > MAX_NAME_CHARS:
        raise RequestError(f"id is {len(value)} characters; the limit is {MAX_NAME_CHARS}")
    if not ID_RE.fullmatch(value):
        # The id becomes part of the topic <prefix>/audio/<id>: no '/', '+', '#' or spaces.
        raise RequestError(
            "id may only contain letters, digits, '.', '_', ':' and '-' "
            f"(it names the topic <prefix>/audio/<id>); got {short(value)}"
        )
    return value


def number(name: str, value: object, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(f"{name} must be a number, got {kind(value)}")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise RequestError(f"{name} is {value}; it must be between {lo:g} and {hi:g}")
    return float(value)


def choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        shown = short(value) if isinstance(value, str) else kind(value)
        raise RequestError(f"{name} is {shown}; expected one of {', '.join(choices)}")
    return value


def no_unknown(data: Collection[str], allowed: tuple[str, ...]) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        names = ", ".join(short(k) for k in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        noun = "field" if len(unknown) == 1 else "fields"
        raise RequestError(f"unknown {noun} {names}; allowed fields: {', '.join(allowed)}")
