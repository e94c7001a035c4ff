"""bench/quality.band_distance, the measure the Kokoro head window is bounded by
(tests/test_kokoro_prepared.py): it must ignore a change far below the loudest band (the 8-bit
decoder's chaotic noise floor) and see what a listener would hear."""

from __future__ import annotations

import numpy as np

from bench.quality import band_distance, log_spectral_distance

_RATE = 24000


def _speechlike(seconds: float = 1.0) -> np.ndarray:
    """A 150 Hz voice with harmonics, its loudness rising and falling as syllables do."""
    t = np.arange(int(_RATE * seconds)) / _RATE
    voiced = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 20))
    return (0.3 * voiced * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t))).astype(np.float32)


def test_the_same_audio_is_zero_and_a_change_deep_in_the_noise_floor_is_almost_zero() -> None:
    voice = _speechlike()
    assert band_distance(voice, voice) == 0.0
    hiss = np.random.default_rng(1).standard_normal(len(voice)).astype(np.float32) * 3e-4
    quiet = band_distance(voice, voice + hiss)
    assert quiet < 0.1  # hiss at -70 dBFS under a voice at about -10
    # the same hiss moves the log-spectral distance far more: it counts the floor bin by bin
    assert log_spectral_distance(voice * 32767, (voice + hiss) * 32767) > 2.0  # (4.6 dB here)


def test_what_a_listener_hears_is_far() -> None:
    voice = _speechlike()
    t = np.arange(len(voice)) / _RATE
    tone = band_distance(voice, voice + 0.1 * np.sin(2 * np.pi * 3000 * t).astype(np.float32))
    louder = band_distance(voice, voice * 2)
    late = band_distance(voice, np.concatenate([np.zeros(2400, np.float32), voice[:-2400]]))
    assert tone > 3.0
    assert louder > 4.0  # 6 dB in every band above the floor (less where the floor holds one)
    assert late > 1.0
