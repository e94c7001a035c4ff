"""Joining language parts: one rate, one loudness, a pause at each switch."""

from __future__ import annotations

import numpy as np

from edged.audio import Audio
from edged.audio.loudness import gated_rms_db
from edged.synthesis.join import TARGET_DBFS, Joiner


def _tone(rate: int, seconds: float, amplitude: float) -> Audio:
    t = np.arange(int(rate * seconds)) / rate
    return Audio(np.round(amplitude * 32767 * np.sin(2 * np.pi * 220 * t)).astype(np.int16), rate)


def test_parts_join_at_one_rate_and_level_with_a_pause() -> None:
    """A quiet 22050 Hz part and a loud 24000 Hz part come out at 24000 Hz, both at the target
    speech level, with exactly the switch pause of silence between them."""
    joiner = Joiner(24000, switch_pause_ms=150)
    quiet = list(joiner.part(iter([_tone(22050, 0.5, 0.02), _tone(22050, 0.5, 0.02)])))
    loud = list(joiner.part(iter([_tone(24000, 1.0, 0.8)])))
    assert {c.rate_hz for c in quiet + loud} == {24000}
    first = np.concatenate([c.samples for c in quiet])
    second = np.concatenate([c.samples for c in loud])
    pause = 24000 * 150 // 1000
    assert not second[:pause].any() and second[pause:pause + 50].any()
    assert abs(len(first) - 24000) <= 2 and len(second) == pause + 24000
    for part in (first, second[pause:]):
        level = gated_rms_db(part.astype(np.float32) / 32768, 24000)
        assert level is not None and abs(level - TARGET_DBFS) < 0.5
