"""Attention chimes per priority: loaded once at start, shaped once per device rate."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from ..audio import Audio, WavError, apply_volume, read_wav
from ..audio.loudness import shape_chime
from ..config import AudioConfig, ConfigError

CHIME_MAX_S: Final = 10.0


def load_chime(path: Path, key: str) -> Audio:
    """A chime file, as the start-up checks and the player read it; ConfigError naming `key`."""
    try:
        return read_wav(path, max_s=CHIME_MAX_S)
    except (OSError, WavError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise ConfigError(f"{key}: {path}: not a usable chime: {reason}") from None


class Chimes:
    """The configured chimes; ConfigError at construction for a file that cannot be used."""

    def __init__(self, config: AudioConfig) -> None:
        self._config = config
        self._audio = {f.name: load_chime(path, f"audio.chimes.{f.name}")
                       for f in dataclasses.fields(config.chimes)
                       if (path := getattr(config.chimes, f.name)) is not None}
        self._shaped: dict[tuple[str, int], npt.NDArray[np.float32]] = {}

    def __contains__(self, priority: str) -> bool:
        return priority in self._audio

    def at(self, priority: str, rate: int, volume: float) -> npt.NDArray[np.int16]:
        """The chime of `priority` at the device rate, target level and the request's volume."""
        key = (priority, rate)
        if key not in self._shaped:
            self._shaped[key] = shape_chime(self._audio[priority], rate, self._config)
        return apply_volume(self._shaped[key], volume)
