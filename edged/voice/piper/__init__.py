"""A Piper voice (VITS on ONNX Runtime, espeak-ng phonemes): its config (`config.py`), the voice
(`voice.py`), a prepared voice read back (`prepared.py`), its decoder windows (`windows.py`) and
its sessions asleep when idle (`sleep.py`). Preparing one is `voice/prepare/`'s work."""

from .voice import PiperVoice

__all__ = ["PiperVoice"]
