"""The schema's building blocks: what a field's `metadata` says, the config's one exception,
and the rules more than one section uses.

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
from typing import Any, Final

PATH_KINDS = ("file", "secret", "pem", "wav", "folder", "state")
MAX_TOPIC_PART_BYTES = 256


class ConfigError(Exception):
    """The config cannot be used. The message starts with the YAML key path."""


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


SPEED_RANGE: Final = (0.5, 2.0)
"""Speaking rates edged accepts anywhere (the config, every request, `edged say`, every voice):
2.0 is twice as fast. Outside it the voices garble; OpenAI's API allows 0.25-4, and is refused
beyond ours rather than clamped silently."""


def default_request_bytes(max_chars: int) -> int:
    """The largest request payload for `max_chars`: JSON may spell one character as a 12-byte
    surrogate-pair escape; 1 KiB for the other fields; at least 4 KiB."""
    return max(4096, 12 * max_chars + 1024)


def opt(default: Any, *, min: float | None = None, max: float | None = None) -> Any:
    """A field with bounds (checked by the loader)."""
    return field(default=default, metadata={"min": min, "max": max})


def path_of(kind: str, default: Any = None) -> Any:
    """A path field and what it names (checked at start-up by its kind)."""
    assert kind in PATH_KINDS, kind
    return field(default=default, metadata={"path": kind})
