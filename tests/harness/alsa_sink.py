"""A real PortAudio output device without a sound card: ALSA's `file` plugin writes what the
player sends into a raw file (its `null` slave discards the sound), see recipes.md section 2.

The default device is a `plug` to 16-bit mono at `rate`, so the file holds exactly the int16
samples the player wrote when it plays at that rate. ALSA reads the file name from
$EDGED_ALSA_FILE each time the device is opened (an open truncates the file). The sink is not
paced in real time; edged's player paces itself, so playback here takes real time.

The Player re-initializes PortAudio whenever it opens the device, so setting the environment
in-process before check_device()/play() is enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from edged.audio import Audio

RATE = 22050
"""The sink's default rate (the default voice's)."""
ASOUNDRC = """
pcm.!default {{
    type plug
    slave {{ pcm "edged_capture"; format S16_LE; rate {rate}; channels 1 }}
}}
pcm.edged_capture {{
    type file
    slave.pcm "null"
    file {{ @func getenv vars [ EDGED_ALSA_FILE ] default "/tmp/edged-alsa-out.raw" }}
    format "raw"
}}
"""


@dataclass
class Sink:
    out: Path
    """The raw file the device writes (int16 little endian, mono)."""
    rate: int

    def samples(self) -> np.ndarray:
        return np.fromfile(self.out, dtype="<i2").astype(np.int16) if self.out.exists() else (
            np.zeros(0, dtype=np.int16))


def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rate: int = RATE) -> Sink:
    """Point ALSA (for this process and its children) at a fresh file sink."""
    xdg, home = tmp_path / "xdg", tmp_path / "home"
    (xdg / "alsa").mkdir(parents=True, exist_ok=True)
    home.mkdir(exist_ok=True)
    (xdg / "alsa" / "asoundrc").write_text(ASOUNDRC.format(rate=rate))
    out = tmp_path / "played.raw"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("HOME", str(home))  # no ~/.asoundrc of the machine
    monkeypatch.setenv("EDGED_ALSA_FILE", str(out))
    monkeypatch.delenv("ALSA_CONFIG_PATH", raising=False)
    return Sink(out, rate)


NO_DEVICE = "pcm.gone { type hw; card 99 }\n"
"""An ALSA configuration (replacing alsa.conf) whose only PCM cannot open: PortAudio lists no
device. Not an empty file: PortAudio 19.6 aborts on an assertion when ALSA has no PCM at all."""


def no_device_conf(tmp_path: Path) -> Path:
    path = tmp_path / "no-device-alsa.conf"
    path.write_text(NO_DEVICE)
    return path


def install_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No output device at all, whatever sound cards the machine has."""
    monkeypatch.setenv("ALSA_CONFIG_PATH", str(no_device_conf(tmp_path)))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-xdg"))
    monkeypatch.setenv("HOME", str(tmp_path))


def tone(freq: float, seconds: float, *, amp: float = 3000, dc: float = 5000,
         rate: int = RATE) -> Audio:
    """A tone on a DC offset: never zero, so silence in the sink's file is never part of it."""
    t = np.arange(int(seconds * rate)) / rate
    return Audio(np.round(dc + amp * np.sin(2 * np.pi * freq * t)).astype(np.int16), rate)
