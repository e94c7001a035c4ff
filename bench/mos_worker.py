"""Predicted MOS (distillmos) of audio files, one score per line: run in a venv with edged[mos].

    python -m bench.mos_worker [--rate HZ] FILE...   (WAV, or .npy int16 samples at --rate;
                                                     from the checkout: its own venv has no edged)

distillmos scores 16 kHz mono speech; every file is resampled to 16 kHz with soxr first.
"""

from __future__ import annotations

import contextlib
import sys
import wave

import numpy as np


def _load(path: str, rate: int) -> tuple[np.ndarray, int]:
    if path.endswith(".npy"):
        return np.load(path) / 32768.0, rate
    with wave.open(path) as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2") / 32768.0
        return samples, w.getframerate()


def main(argv: list[str]) -> None:
    import distillmos
    import soxr
    import torch

    rate = 0
    if argv[:1] == ["--rate"]:
        rate, argv = int(argv[1]), argv[2:]
    with contextlib.redirect_stdout(sys.stderr):  # it prints where its weights came from
        model = distillmos.ConvTransformerSQAModel()
    model.eval()
    for path in argv:
        samples, file_rate = _load(path, rate)
        audio = soxr.resample(samples.astype(np.float32), file_rate, 16000)
        with torch.no_grad():
            score = model(torch.from_numpy(audio).unsqueeze(0))
        print(f"{float(score.squeeze()):.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
