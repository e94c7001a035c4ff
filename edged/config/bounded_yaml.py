"""YAML from an untrusted file, with every cost bounded before it is paid.

PyYAML's `safe_load` is safe from code execution, not from cost: an alias bomb ("billion
laughs") expands to billions of values the moment anything walks or prints it, deep nesting
overflows the composer's recursion, a 5,000-digit integer raises ValueError, duplicate keys
are silently merged. So the document is first *parsed* (PyYAML's parser is a state machine,
not recursive) while counting depth and the number of values it stands for once every alias
is expanded; only a document within the bounds is built, by a loader that refuses duplicate
keys and over-long integers. Every error is a `ConfigError` of one line that never formats a
value whole.
"""

from __future__ import annotations

import reprlib
from typing import Any, Final

import yaml

from .fields import ConfigError

MAX_DEPTH: Final = 32
MAX_VALUES: Final = 100_000
"""Values in the document with every alias expanded: a config has a few hundred."""
MAX_INT_CHARS: Final = 40

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 4
_SHORT.maxlevel = 2


def short(value: object) -> str:
    """A bounded repr: whatever the value, a few dozen characters, computed in bounded time."""
    return _SHORT.repr(value)


def load_yaml(raw: bytes, name: str) -> Any:
    """The document in `raw` (bytes of a file called `name`), or ConfigError."""
    try:
        _check_shape(raw, name)
        return yaml.load(raw, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except _Refused as err:
        raise ConfigError(f"{name}: {err}") from None
    except yaml.MarkedYAMLError as err:
        raise ConfigError(f"{name}: not valid YAML: {_one_line(err)}") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as err:
        # ValueError: a timestamp such as 2024-13-45; RecursionError: a backstop only, the
        # depth is bounded above.
        raise ConfigError(f"{name}: not valid YAML: {' '.join(str(err).split())[:200]}") from None


def _check_shape(raw: bytes, name: str) -> None:
    """Depth and expanded size from the event stream, before anything is built."""
    depth = 0
    total = 0
    sizes: dict[str, int] = {}  # anchor -> values it stands for
    open_: list[tuple[str | None, int]] = []  # collections being read: (anchor, total at start)
    for event in yaml.parse(raw, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            anchor = event.anchor or ""
            if any(a == anchor for a, _ in open_):
                raise ConfigError(f"{name}: line {_line(event)}: alias *{short(anchor)[1:-1]} "
                                  "refers to a collection that contains it")
            total += sizes.get(anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            total += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"{name}: line {_line(event)}: nested deeper than "
                                  f"{MAX_DEPTH} levels")
            open_.append((event.anchor, total))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            opened, start = open_.pop()
            if opened:
                sizes[opened] = total - start + 1
        if total > MAX_VALUES:
            raise ConfigError(f"{name}: line {_line(event)}: more than {MAX_VALUES} values "
                              "once aliases are expanded; a config needs far fewer")


class _Refused(ConfigError):
    """Raised while building the document; load_yaml adds the file's name."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and integers too long to be a setting."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, str]] = set()
        for key_node, _value in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise _Refused(f"line {key_node.start_mark.line + 1}: key "
                                      f"{short(key_node.value)} appears twice")
                seen.add(key)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_INT_CHARS:
            raise _Refused(f"line {node.start_mark.line + 1}: an integer of "
                              f"{len(node.value)} characters is out of any range")
        value: int = super().construct_yaml_int(node)
        return value


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _line(event: yaml.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 0


def _one_line(err: yaml.MarkedYAMLError) -> str:
    """PyYAML's message spans lines (and quotes the file); one line, with line and column."""
    parts = [p for p in (err.context, err.problem) if p]
    text = " ".join(" ".join(parts).split()) or "cannot parse"
    mark = err.problem_mark or err.context_mark
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return text[:200] + where
