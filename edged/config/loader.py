"""Reading the config file: YAML -> the schema's dataclasses, every value checked.

The file is read with a bound (a regular file of at most 1 MiB: never a FIFO or /dev/zero),
its YAML bounded in depth and expanded size (bounded_yaml.py), and every value checked:
numbers in range and finite, no NUL in any string or path, each error one line that names
the key and shows at most a few dozen characters of the value. Unknown keys are errors that
name the key and the known ones. Relative paths are resolved
against the folder of the config file, so a config can be moved together with its voices and
cache. Cross-field rules live with the sections they concern (`__post_init__` in schema.py),
so a Config built in code is checked the same way.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any, Final, Literal

from ..files import read_bounded
from .bounded_yaml import load_yaml, short
from .fields import ConfigError
from .profiles import with_profile
from .schema import Config

_MAX_FILE_BYTES: Final = 1 << 20
_MAX_STRING_CHARS: Final = 4096
_PATH_MAX: Final = 4096
_NAME_MAX: Final = 255


def load_config(path: Path | str) -> Config:
    """Read and validate a YAML config file."""
    path = Path(path)
    if "\0" in str(path):
        raise ConfigError(f"{short(str(path))}: a file name cannot contain a NUL byte")
    try:
        raw = read_bounded(path, _MAX_FILE_BYTES)
    except OSError as err:
        raise ConfigError(f"{path}: cannot read config file: {err.strerror or err}") from None
    data = load_yaml(raw, str(path)) or {}
    config = parse_config(data, base_dir=path.resolve().parent)
    return dataclasses.replace(config, source=path.resolve())


def parse_config(data: object, base_dir: Path) -> Config:
    """Validate a mapping (already parsed YAML) into a Config, over its profile's defaults."""
    if isinstance(data, dict):
        data = with_profile(data)
    config: Config = _build(Config, data, "", base_dir)
    return config


def _build(cls: type, data: object, prefix: str, base_dir: Path) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix.rstrip('.') or '<top>'}: expected a mapping, got {_kind(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    unknown = [k for k in data if k not in fields]
    if unknown:
        name = unknown[0]
        label = name if isinstance(name, str) and len(name) <= 40 and name.isprintable() \
            else short(name)
        raise ConfigError(f"{prefix}{label}: unknown key; known keys: {', '.join(sorted(fields))}")
    # An internal field with `given: KEY` records whether the file set KEY (not its default).
    values: dict[str, Any] = {f.name: f.metadata["given"] in data for f in dataclasses.fields(cls)
                              if f.metadata.get("internal") and "given" in f.metadata}
    for name, f in fields.items():
        if name in data:
            values[name] = _convert(hints[name], data[name], f"{prefix}{name}", base_dir, f.metadata)
        elif dataclasses.is_dataclass(hints[name]):
            values[name] = _build(hints[name], {}, f"{prefix}{name}.", base_dir)
        elif isinstance(f.default, Path) and not f.default.is_absolute():
            # Defaults such as cache.dir = "cache" are relative to the file, like given paths.
            values[name] = base_dir / f.default
    return cls(**values)


def _convert(tp: Any, value: object, key: str, base_dir: Path, meta: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, key, base_dir, meta)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build(tp, value, key + ".", base_dir)
    if origin is Literal:
        if not isinstance(value, str) or value not in args:
            choices = ", ".join(str(a) for a in args)
            raise ConfigError(f"{key}: expected one of {choices}, got {short(value)}")
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list, got {_kind(value)}")
        return tuple(_convert(args[0], v, f"{key}[{i}]", base_dir, {}) for i, v in enumerate(value))
    if tp is Any:
        return value
    if tp is Path:
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{key}: expected a path (string), got {_kind(value)}")
        _check_string(key, value)
        if len(value.encode("utf-8", "surrogatepass")) >= _PATH_MAX or any(
                len(part.encode("utf-8", "surrogatepass")) > _NAME_MAX for part in value.split("/")):
            raise ConfigError(f"{key}: a path longer than the system allows: {short(value)}")
        path = Path(value).expanduser()
        return path if path.is_absolute() else base_dir / path
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {short(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {_kind(value)} {short(value)}")
        return _check_range(key, value, meta)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {_kind(value)} {short(value)}")
        if not math.isfinite(value):
            raise ConfigError(f"{key}: expected a finite number, got {value}")
        return _check_range(key, float(value), meta)
    if tp is str:
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ConfigError(f"{key}: expected a string, got {_kind(value)}")
        _check_string(key, str(value))
        return str(value)
    raise ConfigError(f"{key}: unsupported type {tp!r}")  # a bug in this module, not the file


def _check_range(key: str, value: float, meta: Any) -> Any:
    lo, hi = (meta or {}).get("min"), (meta or {}).get("max")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ConfigError(f"{key}: {value} is out of range {lo}..{hi}")
    return value


def _check_string(key: str, value: str) -> None:
    # A NUL passes YAML ("\0" in double quotes) but no file name, topic or C library takes it.
    if "\0" in value:
        raise ConfigError(f"{key}: contains a NUL character: {short(value)}")
    if len(value) > _MAX_STRING_CHARS:
        raise ConfigError(f"{key}: {len(value)} characters; a setting has at most "
                          f"{_MAX_STRING_CHARS}")


def _kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), type(value).__name__
    )
