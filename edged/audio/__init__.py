"""Audio as every room passes it: PCM samples with their rate (`pcm.py`), WAV in and out
(`wav.py`), rate conversion (`resample.py`: synthesis joins parts, HTTP answers at a rate, the
player matches the device) and loudness (`loudness.py`: one level per announcement, limiter,
fades)."""

from .pcm import Audio, Floats, Samples, apply_volume, to_float, to_int16, with_volume
from .wav import WavError, from_wav_bytes, read_wav, to_wav_bytes

__all__ = ["Audio", "Floats", "Samples", "WavError", "apply_volume", "from_wav_bytes", "read_wav",
           "to_float", "to_int16", "to_wav_bytes", "with_volume"]
