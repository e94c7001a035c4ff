"""What `describe` answers: one TTS program, edged, with every voice this daemon can speak.

Home Assistant lists a Wyoming server's voices from this (only `installed` ones; the voice's
`description` is its display name, `name` its id) and names its tts entity after the program.
Each voice's attribution carries its licence, from the voice catalog (models/voices.yaml) when
the voice is in it, else what the voice's own `.onnx.json` says about its dataset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker

from .. import __version__
from ..config import Config
from ..homeassistant.discovery import PROJECT_URL
from ..voice.catalog.listing import VoiceListing, voice_listings

PROGRAM: str = "edged"


def list_voices(config: Config, names: Sequence[str],
                paths: Mapping[str, Path] | None = None) -> list[VoiceListing]:
    """The voices in `names` as `describe` lists them (see voice/catalog/listing.py)."""
    return voice_listings(config, names, paths)


def build_info(listings: Sequence[VoiceListing]) -> Info:
    voices = [
        TtsVoice(name=v.name, attribution=Attribution(name=_attribution(v), url=v.licence_url),
                 installed=True, description=_describe(v.name, v.language), version=None,
                 languages=[v.language] if v.language else [],
                 speakers=[TtsVoiceSpeaker(name=s) for s in v.speakers] or None)
        for v in listings
    ]
    program = TtsProgram(
        name=PROGRAM, attribution=Attribution(name="edged (GPL-3.0-or-later)", url=PROJECT_URL),
        installed=True, description="edged: offline speech (Piper, Kokoro and espeak-ng voices), "
                                    "streaming",
        version=__version__, voices=voices, supports_synthesize_streaming=True)
    return Info(tts=[program])


def _attribution(voice: VoiceListing) -> str:
    if not voice.licence:
        return f"{voice.name}: licence not in edged's voice catalog; see its model card"
    credit = f"; credit: {voice.credit}" if voice.credit else ""
    return f"{voice.name}: {voice.licence}{credit}"


def _describe(name: str, language: str) -> str:
    """"en_US-joe-medium" -> "Joe (en_US, medium)"; other names as they are."""
    parts = name.split("-")
    if len(parts) == 3 and language and parts[0] == language:
        return f"{parts[1].replace('_', ' ').title()} ({language}, {parts[2]})"
    return name
