"""What `describe` answers: one TTS program, edged, with every voice this daemon can speak.

Home Assistant lists a Wyoming server's voices from this (only `installed` ones; the voice's
`description` is its display name, `name` its id) and names its tts entity after the program.
Each voice's attribution carries its licence, from the voice catalog (models/voices.yaml) when
the voice is in it, else what the voice's own `.onnx.json` says about its dataset.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker

from .. import __version__
from ..config import Config
from ..homeassistant.discovery import PROJECT_URL
from ..voice import VoiceError, find_voice
from ..voice.catalog import CatalogError, load_catalog
from ..voice.piper_config import read_piper_config

_LOGGER = logging.getLogger(__name__)
PROGRAM: str = "edged"


@dataclass(frozen=True)
class VoiceListing:
    """One voice as Wyoming describes it."""

    name: str
    languages: tuple[str, ...]
    speakers: tuple[str, ...]
    description: str
    attribution: str
    url: str


def list_voices(config: Config, names: Sequence[str],
                paths: Mapping[str, Path] | None = None) -> list[VoiceListing]:
    """The listing of each voice in `names`, found in `paths` (name -> .onnx; the loaded voices)
    or else by name. A voice whose files cannot be read is left out, with a warning: it could
    not be spoken either."""
    try:
        catalog = load_catalog()
    except CatalogError as err:
        _LOGGER.warning("Voice licences are not advertised over Wyoming: %s", err)
        catalog = {}
    listings = []
    for name in names:
        try:
            path = (paths or {}).get(name) or find_voice(name, config.voice.dirs)
            piper = read_piper_config(Path(f"{path}.json"))
        except VoiceError as err:
            _LOGGER.warning("Voice %s is not advertised over Wyoming: %s", name, err)
            continue
        entry = catalog.get(name)
        if entry is not None and entry.license:
            attribution, url = f"{name}: {entry.license}", entry.license_url
        else:
            attribution, url = f"{name}: licence not in edged's voice catalog; see its model card", ""
        listings.append(VoiceListing(
            name=name, languages=(piper.language,) if piper.language else (),
            speakers=tuple(sorted(piper.speakers, key=piper.speakers.__getitem__))
            if piper.num_speakers > 1 else (),
            description=_describe(name, piper.language), attribution=attribution, url=url))
    return listings


def build_info(listings: Sequence[VoiceListing]) -> Info:
    voices = [
        TtsVoice(name=v.name, attribution=Attribution(name=v.attribution, url=v.url),
                 installed=True, description=v.description, version=None,
                 languages=list(v.languages),
                 speakers=[TtsVoiceSpeaker(name=s) for s in v.speakers] or None)
        for v in listings
    ]
    program = TtsProgram(
        name=PROGRAM, attribution=Attribution(name="edged (GPL-3.0-or-later)", url=PROJECT_URL),
        installed=True, description="edged: offline neural speech (Piper voices), streaming",
        version=__version__, voices=voices, supports_synthesize_streaming=True)
    return Info(tts=[program])


def _describe(name: str, language: str) -> str:
    """"en_US-joe-medium" -> "Joe (en_US, medium)"; other names as they are."""
    parts = name.split("-")
    if len(parts) == 3 and language and parts[0] == language:
        return f"{parts[1].replace('_', ' ').title()} ({language}, {parts[2]})"
    return name
