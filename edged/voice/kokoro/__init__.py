"""Kokoro-82M voices: the model and styles from their registries (`assets.py`), one shared ONNX
session and a voice per style (`voice.py`)."""

from .voice import KokoroVoice, model_loaded

__all__ = ["KokoroVoice", "model_loaded"]
