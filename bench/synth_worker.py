"""One synthesis engine configuration in its own process (spawned by bench.synth:
`python -m bench.synth_worker ...`).

Reports JSON lines on stdout (see common.emit): "imported", "loaded", "first_audio" (the first
chunk of the first line: the parent turns it into cold start), one "line" per corpus line and
pass, and "done" with this process's peak RSS. Pass 0 is cold and short (a few lines); the
timed figures come from passes 1..N. Audio of pass 1 (and of an optional noise-0 pass) is
saved as .npy per line for the word error rate, which the parent computes afterwards so that
pocketsphinx never shares a process, a core or a timing window with an engine.

Only the engine under test is imported: edged's and piper's imports cost RSS and start time.
edged runs as the daemon configures it (its config with this row's overrides), piper as shipped
(or with its intra-op threads set).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from .common import emit, peak_rss_mb, rss_now_mb

# A synthesizer: text, noise-0 flag -> iterator of int16 chunks.
Synth = Callable[[str, bool], Iterator[np.ndarray]]


# ------------------------------------------------------------------------ edged
def edged_engine(args: argparse.Namespace) -> tuple[Synth, int]:
    """edged as the daemon runs it: the config (defaults + this row's overrides) loads the voice
    (prepared beforehand in the parent's cache dir, as `edged cache warm` does on a device) and
    sizes the synthesis scheduler; every line is a stream of that scheduler (`--inline`: the
    voice's steps on this thread instead, no scheduler)."""
    import json

    from edged.config import parse_config
    from edged.synthesis import Scheduler
    from edged.voice import load_voice
    from edged.voice.sizing import synthesis_workers

    emit("imported")
    overrides = json.loads(args.config)
    voice_options = {"name": str(args.model), "sentence_pause_ms": 0, **overrides.pop("voice", {})}
    # piper-tts adds no silence between sentences: compare speech with speech.
    config = parse_config({"voice": voice_options, "cache": {"dir": str(args.prepared)},
                           **overrides}, args.prepared)
    voice = load_voice(config)
    workers = synthesis_workers(config)
    emit("loaded", rss_mb=rss_now_mb(), workers=workers)
    settings = voice.settings()
    quiet = voice.settings(noise_scale=0, noise_w=0)
    scheduler = Scheduler(workers, {"bench": 1})
    scheduler.start()

    def synth(text: str, noise0: bool) -> Iterator[np.ndarray]:
        chosen = quiet if noise0 else settings
        chunks = (voice.stream(text, chosen) if args.inline
                  else scheduler.submit(lambda lanes: voice.stream(text, chosen, lanes),
                                        rank=2, source="bench"))
        with contextlib.closing(chunks):
            for audio in chunks:
                yield audio.samples

    return synth, voice.rate_hz


# ------------------------------------------------------------------------ piper
def piper_engine(args: argparse.Namespace) -> tuple[Synth, int]:
    import json

    import onnxruntime as ort
    from piper import PiperVoice, SynthesisConfig
    from piper.config import PiperConfig

    emit("imported")
    if args.threads == 0:
        voice = PiperVoice.load(args.model)  # stock: default SessionOptions
    else:
        # Same as PiperVoice.load, with only intra_op_num_threads set on the session options
        # (built once rather than loading the stock session and replacing voice.session, which
        # would hold two copies of the weights for a moment and inflate peak RSS).
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        config = json.loads(Path(f"{args.model}.json").read_text(encoding="utf-8"))
        voice = PiperVoice(
            config=PiperConfig.from_dict(config),
            session=ort.InferenceSession(str(args.model), sess_options=options,
                                         providers=["CPUExecutionProvider"]),
        )
    emit("loaded", rss_mb=rss_now_mb())
    quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)

    def synth(text: str, noise0: bool) -> Iterator[np.ndarray]:
        for chunk in voice.synthesize(text, quiet if noise0 else None):
            yield chunk.audio_int16_array

    return synth, voice.config.sample_rate


# ------------------------------------------------------------------------- main
def run_pass(synth: Synth, lines: list[str], rate: int, pass_no: int, *, noise0: bool = False,
             save: Path | None = None) -> None:
    for index, text in enumerate(lines):
        parts: list[np.ndarray] = []
        first_s = None
        cpu_start = time.process_time()  # all threads of this process
        start = time.monotonic()
        for samples in synth(text, noise0):
            if first_s is None:
                first_s = time.monotonic() - start
                if pass_no == 0 and index == 0:
                    emit("first_audio")
            parts.append(samples)
        total_s = time.monotonic() - start
        cpu_s = time.process_time() - cpu_start
        audio = np.concatenate(parts) if parts else np.zeros(0, np.int16)
        emit("line", pass_no=pass_no, noise0=noise0, index=index, first_s=first_s,
             total_s=total_s, cpu_s=cpu_s, audio_s=len(audio) / rate, chunks=len(parts))
        if save is not None:
            np.save(save / f"line{index:02d}.npy", audio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", choices=("edged", "piper"), required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--lines", type=Path, required=True, help="corpus, one text a line")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads (piper: 0 = stock default SessionOptions)")
    parser.add_argument("--config", default="{}",
                        help="edged: config overrides as JSON ({\"voice\": {...}, \"limits\": ...})")
    parser.add_argument("--inline", action="store_true",
                        help="edged: the voice's steps on this thread (no synthesis scheduler)")
    parser.add_argument("--prepared", type=Path, metavar="CACHE_DIR",
                        help="edged: cache.dir, where the voice was prepared beforehand")
    parser.add_argument("--passes", type=int, default=2, help="timed passes after the cold one")
    parser.add_argument("--warmup-lines", type=int, default=3,
                        help="lines of the untimed cold pass 0 (line 1 gives the cold start)")
    parser.add_argument("--save", type=Path, help="folder for the timed passes' audio (.npy per "
                        "line; pass 1 in it, later passes in pass<N>/ below it)")
    parser.add_argument("--save-noise0", type=Path, help="folder for a noise-0 pass's audio")
    args = parser.parse_args()

    lines = [t for t in args.lines.read_text(encoding="utf-8").splitlines() if t.strip()]
    emit("start", rss_mb=rss_now_mb())
    make = edged_engine if args.engine == "edged" else piper_engine
    synth, rate = make(args)
    run_pass(synth, lines[: max(1, args.warmup_lines)], rate, 0)
    for pass_no in range(1, args.passes + 1):
        save = args.save if pass_no == 1 or args.save is None else args.save / f"pass{pass_no}"
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
        run_pass(synth, lines, rate, pass_no, save=save)
    emit("timed_done", peak_rss_mb=peak_rss_mb())
    if args.save_noise0:
        run_pass(synth, lines, rate, -1, noise0=True, save=args.save_noise0)
    emit("done", peak_rss_mb=peak_rss_mb())


if __name__ == "__main__":
    main()
