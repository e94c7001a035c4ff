"""Predicted MOS (distillmos) of WAV files, one score per line: run in a venv with edged[mos].

distillmos scores 16 kHz mono speech; every file is resampled to 16 kHz with soxr first.
"""

from __future__ import annotations

import contextlib
import sys
import wave

import numpy as np


def main(paths: list[str]) -> None:
    import distillmos
    import soxr
    import torch

    with contextlib.redirect_stdout(sys.stderr):  # it prints where its weights came from
        model = distillmos.ConvTransformerSQAModel()
    model.eval()
    for path in paths:
        with wave.open(path) as w:
            rate = w.getframerate()
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2") / 32768.0
        audio = soxr.resample(samples.astype(np.float32), rate, 16000)
        with torch.no_grad():
            score = model(torch.from_numpy(audio).unsqueeze(0))
        print(f"{float(score.squeeze()):.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
