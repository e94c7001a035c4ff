"""A Piper voice's `.onnx.json`, read and checked in one place (loading, listing, preparing)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ...files import FileTooLarge, read_bounded
from ..errors import VoiceError

_MAX_BYTES: Final = 4 << 20
"""The default voice's is 7 KB; a multi-speaker voice with hundreds of names stays far below."""


@dataclass(frozen=True)
class PiperConfig:
    """What edged uses of a voice's JSON config."""

    rate_hz: int
    espeak_voice: str
    phoneme_id_map: dict[str, list[int]]
    noise_scale: float = 0.667
    length_scale: float = 1.0
    noise_w: float = 0.8
    num_speakers: int = 1
    speakers: dict[str, int] = field(default_factory=dict)
    """Speaker name -> id (multi-speaker voices)."""
    language: str = ""


def read_piper_config(json_path: Path) -> PiperConfig:
    """Parse `<voice>.onnx.json`; VoiceError naming the file and what is wrong."""
    try:
        raw = read_bounded(json_path, _MAX_BYTES)
    except FileTooLarge:
        raise VoiceError(f"{json_path}: larger than {_MAX_BYTES >> 20} MiB; not a voice config"
                         ) from None
    except OSError as err:
        raise VoiceError(f"{json_path}: cannot read: {err.strerror or err}") from err
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise VoiceError(f"{json_path}: not valid JSON: {err}") from err
    if not isinstance(data, dict):
        raise VoiceError(f"{json_path}: expected a JSON object")
    try:
        return _from_json(data)
    except (KeyError, TypeError, ValueError) as err:
        raise VoiceError(f"{json_path}: {err}") from None


def _from_json(data: dict[str, Any]) -> PiperConfig:
    for path in (("audio", "sample_rate"), ("espeak", "voice"), ("phoneme_id_map",)):
        node: Any = data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"missing {'.'.join(path)}")
            node = node[part]
    id_map = data["phoneme_id_map"]
    if not isinstance(id_map, dict) or "^" not in id_map:
        raise ValueError("phoneme_id_map is not a Piper map (no '^')")
    inference = data.get("inference") or {}
    return PiperConfig(
        rate_hz=int(data["audio"]["sample_rate"]),
        espeak_voice=str(data["espeak"]["voice"]),
        phoneme_id_map={str(k): [int(i) for i in v] for k, v in id_map.items()},
        noise_scale=float(inference.get("noise_scale", 0.667)),
        length_scale=float(inference.get("length_scale", 1.0)),
        noise_w=float(inference.get("noise_w", 0.8)),
        num_speakers=int(data.get("num_speakers", 1)),
        speakers={str(k): int(v) for k, v in (data.get("speaker_id_map") or {}).items()},
        language=str((data.get("language") or {}).get("code", "")),
    )
