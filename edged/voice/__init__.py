"""A voice: finding it, preparing it once, its ONNX sessions, and the pool under the memory budget."""

from .backend import VoiceBackend
from .catalog.find import VoiceInfo, find_voice, list_voices
from .errors import VoiceError
from .load import inference_threads, load_voice
from .loaded import OverBudget, VoicePool
from .piper.voice import Voice
from .settings import SynthesisSettings, default_settings

__all__ = [
    "OverBudget", "SynthesisSettings", "Voice", "VoiceBackend", "VoiceError", "VoiceInfo",
    "VoicePool", "default_settings", "find_voice", "inference_threads", "list_voices", "load_voice",
]
