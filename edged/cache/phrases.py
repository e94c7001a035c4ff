"""Pinned phrases from `cache.phrases`: plain strings and templates with enumerated slots.

A template is `{text: "The {room} window is open", slots: {room: [kitchen, bedroom]}}`;
it expands to every combination of slot values. The total number of phrases is capped
(`cache.max_expansions`) so a typo like a 20x20x20 template cannot fill the disk.
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Iterable
from typing import Any, Final

from ..config import ConfigError

_KEY: Final = "cache.phrases"
_MAX_SLOT_VALUES: Final = 10_000


def expand_phrases(phrases_config: Iterable[Any], max_expansions: int) -> list[str]:
    """Every pinned phrase, templates expanded, duplicates dropped, config order kept.

    Raises ConfigError naming `cache.phrases[i]` for a malformed entry, and for the entry
    at which the running total passes `max_expansions`.
    """
    out: dict[str, None] = {}
    total = 0
    for i, item in enumerate(phrases_config):
        key = f"{_KEY}[{i}]"
        text, slots = _parse_item(item, key)
        fields = _fields(text, key)
        if isinstance(item, str) and fields:
            raise ConfigError(
                f"{key}: has slot {{{fields[0]}}} but no values; write it as "
                f"{{text: ..., slots: {{{fields[0]}: [...]}}}}"
            )
        unused = sorted(set(slots) - set(fields))
        if unused:
            raise ConfigError(f"{key}.slots.{unused[0]}: slot is not used in the text")
        missing = [f for f in fields if f not in slots]
        if missing:
            raise ConfigError(f"{key}.slots: no values for slot {{{missing[0]}}}")
        count = math.prod(len(slots[f]) for f in fields)
        total += count
        if total > max_expansions:
            raise ConfigError(
                f"{key}: expands to {count} phrase(s), bringing the total to {total}, "
                f"more than cache.max_expansions ({max_expansions})"
            )
        for combo in itertools.product(*(slots[f] for f in fields)):
            out.setdefault(text.format_map(dict(zip(fields, combo, strict=True))), None)
    return list(out)


def _parse_item(item: object, key: str) -> tuple[str, dict[str, list[str]]]:
    text: object
    raw_slots: object
    if isinstance(item, str):
        text, raw_slots = item, {}
    elif isinstance(item, dict):
        unknown = sorted(set(item) - {"text", "slots"})
        if unknown:
            raise ConfigError(f"{key}.{unknown[0]}: unknown key; known keys: slots, text")
        text, raw_slots = item.get("text"), item.get("slots") or {}
        if not isinstance(text, str):
            raise ConfigError(f"{key}.text: expected a string")
        if not isinstance(raw_slots, dict):
            raise ConfigError(f"{key}.slots: expected a mapping of slot name to a list of values")
    else:
        raise ConfigError(f"{key}: expected a string or {{text: ..., slots: ...}}")
    if not text.strip():
        raise ConfigError(f"{key}: the phrase is empty")
    slots: dict[str, list[str]] = {}
    for name, values in raw_slots.items():
        skey = f"{key}.slots.{name}"
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{skey}: expected a non-empty list of values")
        if len(values) > _MAX_SLOT_VALUES:
            raise ConfigError(f"{skey}: more than {_MAX_SLOT_VALUES} values")
        for j, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, str | int | float):
                raise ConfigError(f"{skey}[{j}]: expected a string or number")
        slots[str(name)] = [str(v) for v in values]
    return text, slots


def _fields(text: str, key: str) -> list[str]:
    """Slot names in order of first use; only bare `{name}` is allowed (`{{` is a brace)."""
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        raise ConfigError(f"{key}: bad braces in {text!r}: {err}") from err
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ConfigError(f"{key}: slot {{{name}}} must be a plain name like {{room}}")
        if name not in names:
            names.append(name)
    return names
