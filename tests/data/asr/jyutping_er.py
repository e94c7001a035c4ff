"""Cantonese scored on readings: both sides of judge.py's JSON as toneless Jyutping (ToJyutping).

Usage: PYTHON_WITH_TOJYUTPING jyutping_er.py RESULT.json [...]   (edged's venv with edged[yue])
Whisper base has no Cantonese: forced to zh it writes Mandarin or Cantonese characters for what
it heard. Turning both the reference and the transcript into Jyutping syllables without tones
scores whether the syllables were heard, whatever characters Whisper chose. Digits are first made
characters (textnorm, as for zh). Characters ToJyutping cannot read are dropped on both sides.
No ASR is run.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import textnorm  # noqa: E402
import ToJyutping  # noqa: E402


def syllables(s):
    chars = textnorm.normalize(s, "yue").replace(" ", "")
    out = []
    for _, jp in ToJyutping.get_jyutping_list(chars):
        if jp:
            out.extend(re.sub(r"\d", "", p) for p in jp.split())
    return out


def score(lines):
    e = n = 0
    for r in lines:
        if r["lang"] != "yue":
            continue
        ref = syllables(r["ref"])
        hyp, _ = textnorm.collapse_loops(syllables(r["hyp"]))
        e += sum(textnorm.edit_ops(ref, hyp))
        n += len(ref)
    return e, n


if __name__ == "__main__":
    for path in sys.argv[1:]:
        e, n = score(json.load(open(path, encoding="utf-8"))["lines"])
        if n:
            print(f"{os.path.basename(path)[:-5]} yue toneless Jyutping syllable error rate "
                  f"{e / n:.3f} ({e} edits / {n} syllables)")
