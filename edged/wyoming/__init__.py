"""A Wyoming text-to-speech server (Home Assistant's Assist, `tts.speak`) on the daemon's voices."""

from ..voice.catalog.listing import VoiceListing
from .info import build_info, list_voices
from .server import WyomingError, WyomingServer

__all__ = ["VoiceListing", "WyomingError", "WyomingServer", "build_info", "list_voices"]
