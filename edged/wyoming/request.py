"""What a Wyoming event asks for, checked: its text (the one text rule of every intake,
daemon/fields.py, within what is left of wyoming.max_chars) and its voice (by name, or by
language). A request that cannot be served raises `Refused`, whose message and code go back in
the `error` event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..daemon import fields
from ..daemon.policy import WYOMING_CODE
from ..daemon.requests import RequestError
from ..languages import LanguageError
from ..languages.codes import language_code, locale_language
from ..voice.catalog.listing import VoiceListing

MAX_NAME: Final = 64


class Refused(Exception):
    """A request that cannot be served; the message is sent in the `error` event."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def text(data: dict[str, Any], room: int, max_chars: int) -> str:
    """A text or a streamed part of one: at most `room` characters (what is left of
    wyoming.max_chars), and the one text rule of every intake (fields.py) for the characters:
    no control character but tab and newline (CR and C1 included), no lone surrogate."""
    value = data.get("text")
    if not isinstance(value, str):
        raise Refused("text must be a string", "bad-request")
    if len(value) > room:
        raise Refused(f"text is longer than wyoming.max_chars "
                      f"({max_chars} characters per request)", "too-long")
    try:
        return fields.check_text(value, room, empty_ok=True)
    except RequestError as err:
        raise Refused(str(err), WYOMING_CODE["too_large" if err.too_large else "invalid"]
                      ) from None


def voice(value: object, voices: Sequence[VoiceListing]
          ) -> tuple[str | None, str | None, str | None]:
    """(voice, speaker, language) a request asks for: a voice by name, or by language (a
    listed voice of exactly that tag, else the language's own voice chain, as MQTT routes it);
    no voice: the device's."""
    if value is None:
        return None, None, None
    if not isinstance(value, dict):
        raise Refused("voice must be an object", "bad-request")
    name = optional_text(value, "name")
    language = optional_text(value, "language")
    speaker = value.get("speaker")
    if speaker is not None and not (isinstance(speaker, str) and len(speaker) <= MAX_NAME):
        raise Refused("voice.speaker must be a name of at most 64 characters", "bad-request")
    if speaker is not None:
        _check_name("voice.speaker", speaker)
    listed = [v.name for v in voices]
    if name is not None:
        if name not in listed:
            raise Refused(f"unknown voice {name[:MAX_NAME]!r}; voices here: "
                          f"{', '.join(listed)}", "voice")
        return name, speaker, None
    if language is not None:
        for listing in voices:
            if listing.language == language:
                return listing.name, speaker, None
        try:
            return None, speaker, language_code(locale_language(language))
        except LanguageError:
            raise Refused(f"no voice for language {language[:MAX_NAME]!r}", "voice") from None
    return None, speaker, None


def optional_text(data: dict[str, Any], key: str) -> str | None:
    """A short name-like string (a voice name, a language, a ping's text), or None."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise Refused(f"{key} must be a string of at most {MAX_NAME} characters", "bad-request")
    return _check_name(key, value)


def _check_name(key: str, value: str) -> str:
    """The text rule for names too: a control character or a lone surrogate would end up in
    a log line or an answer that cannot be encoded."""
    try:
        return fields.check_text(value, MAX_NAME, name=key, empty_ok=True)
    except RequestError as err:
        raise Refused(str(err), WYOMING_CODE["invalid"]) from None
