"""Voices: the runtime every backend shares (the `VoiceBackend` interface, settings, ONNX
sessions, lanes, loading, the loaded voices within the memory budget), and a room per backend
(`piper/`, `kokoro/`, `espeak.py`), the offline preparing of Piper voices (`prepare/`), and
what voices exist (`catalog/`)."""

from .backend import VoiceBackend
from .catalog.find import VoiceInfo, find_voice, list_voices
from .errors import VoiceError
from .load import load_voice
from .loaded import LoadedVoices, OverBudget, WouldLoad, without_loads
from .piper.voice import PiperVoice
from .settings import SynthesisSettings, default_settings

__all__ = [
    "LoadedVoices", "OverBudget", "PiperVoice", "SynthesisSettings", "VoiceBackend", "VoiceError",
    "VoiceInfo", "WouldLoad", "default_settings", "find_voice", "list_voices", "load_voice",
    "without_loads",
]
