"""A voice: finding it, preparing it once, its ONNX sessions, and the pool under the memory budget."""

from .backend import VoiceBackend
from .errors import VoiceError
from .find import VoiceInfo, find_voice, list_voices
from .load import inference_threads, load_voice
from .piper import Voice
from .pool import OverBudget, VoicePool
from .settings import SynthesisSettings, default_settings

__all__ = [
    "OverBudget", "SynthesisSettings", "Voice", "VoiceBackend", "VoiceError", "VoiceInfo",
    "VoicePool", "default_settings", "find_voice", "inference_threads", "list_voices", "load_voice",
]
