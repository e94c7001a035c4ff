"""What every section of the schema is made of: the error, field bounds, path kinds, topic parts.

A field's type and its `metadata` are the schema: `min`/`max` bound numbers, and `path` says
what a path names, so the start-up checks (edged/checks.py) know how to check every file and
folder the config names without a list of keys of their own:

- "file": a regular file we read;  "secret": a small file holding a secret (never logged);
- "pem": a PEM certificate or key;  "wav": a 16-bit PCM WAV file;
- "folder": a folder we read (may be missing);  "state": a folder we write (made at start).
"""

from __future__ import annotations

import unicodedata
from dataclasses import field
from typing import Any

PATH_KINDS = ("file", "secret", "pem", "wav", "folder", "state")


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


def opt(default: Any, *, min: float | None = None, max: float | None = None) -> Any:
    return field(default=default, metadata={"min": min, "max": max})


def path(kind: str, default: Any = None) -> Any:
    assert kind in PATH_KINDS, kind
    return field(default=default, metadata={"path": kind})
