"""Per-request synthesis settings, and the one place where a request's overrides meet the config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import SPEED_RANGE
from .errors import VoiceError

if TYPE_CHECKING:
    from ..config import Config
    from .backend import VoiceBackend


@dataclass(frozen=True)
class SynthesisSettings:
    """Everything per request that changes the audio."""

    speaker_id: int | None
    length_scale: float
    noise_scale: float
    noise_w: float

    def cache_fields(self) -> dict[str, Any]:
        return {
            "speaker_id": self.speaker_id,
            "length_scale": round(self.length_scale, 6),
            "noise_scale": round(self.noise_scale, 6),
            "noise_w": round(self.noise_w, 6),
        }


def check_speed(speed: float | None) -> None:
    """The one speaking-rate range (config.SPEED_RANGE), for every voice; VoiceError beyond."""
    lo, hi = SPEED_RANGE
    if speed is not None and not lo <= speed <= hi:
        raise VoiceError(f"speed {speed:g} is out of range {lo:g}..{hi:g}")


def check_one_speaker(name: str, speaker: str | int | None) -> None:
    """A voice with one speaker accepts no speaker but its own (none, "" or 0)."""
    if speaker not in (None, "", 0, "0"):
        raise VoiceError(f"voice {name} has one speaker; got speaker {speaker!r}")


def default_settings(config: Config, voice: VoiceBackend, *, speaker: str | int | None = None,
                     speed: float | None = None) -> SynthesisSettings:
    """The config's speaker/speed/noise applied to `voice`; a request's speaker or speed,
    when given, wins over the config's. VoiceError for a speaker the voice does not have."""
    return voice.settings(
        speaker=speaker if speaker is not None else config.voice.speaker,
        speed=speed if speed is not None else config.voice.speed,
        noise_scale=config.voice.noise_scale,
        noise_w=config.voice.noise_w,
    )
