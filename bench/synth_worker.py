"""One synthesis engine configuration in its own process (spawned by bench/synth.py).

Reports JSON lines on stdout (see common.emit): "imported", "loaded", "first_audio" (the first
chunk of the first line: the parent turns it into cold start), one "line" per corpus line and
pass, and "done" with this process's peak RSS. Pass 0 is cold and short (a few lines); the
timed figures come from passes 1..N. Audio of pass 1 (and of an optional noise-0 pass) is
saved as .npy per line for the word error rate, which the parent computes afterwards so that
pocketsphinx never shares a process, a core or a timing window with an engine.

Only the engine under test is imported: edged's and piper's imports cost RSS and start time.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, peak_rss_mb, rss_now_mb  # noqa: E402

# A synthesizer: text, noise-0 flag -> iterator of int16 chunks.
Synth = Callable[[str, bool], Iterator[np.ndarray]]


# ------------------------------------------------------------------------ edged
def edged_engine(args: argparse.Namespace) -> tuple[Synth, int]:
    from edged.synthesis import Scheduler
    from edged.voice import Voice
    from edged.voice import onnx as inference
    from edged.voice.hashes import file_sha256
    from edged.voice.prepared import prepared_folder, read_prepared

    emit("imported")
    if args.spin:
        _allow_spinning()
    if args.arena == "off":
        _arena_off(inference)
    prepared = None
    if args.prepared:  # made by the parent beforehand, as `edged cache warm` does on a device
        sha = file_sha256(args.model)
        prepared = read_prepared(prepared_folder(args.prepared, args.model, sha), sha)
        if prepared is None:
            raise SystemExit(f"no prepared model for {args.model} in {args.prepared}")
    voice = Voice.load(args.model, threads=args.threads, max_phonemes=args.max_phonemes,
                       prepared=prepared,
                       # piper-tts adds no silence between sentences: compare speech with speech.
                       sentence_pause_ms=0)
    emit("loaded", rss_mb=rss_now_mb())
    settings = voice.settings()
    quiet = voice.settings(noise_scale=0, noise_w=0)
    # lookahead N: through the daemon's synthesis scheduler (one worker, N chunks ahead);
    # 0: the voice's steps on the calling thread.
    scheduler = Scheduler(1, {"bench": 1}, depth=max(args.lookahead, 1))
    scheduler.start()

    def synth(text: str, noise0: bool) -> Iterator[np.ndarray]:
        chosen = quiet if noise0 else settings
        if args.workers > 1:
            chunks = parallel_stream(voice, text, chosen, args.workers, args.lookahead)
        elif args.lookahead > 0:
            chunks = scheduler.submit(voice.stream(text, chosen), rank=2, source="bench")
        else:
            chunks = voice.stream(text, chosen)
        with contextlib.closing(chunks):
            for audio in chunks:
                yield audio.samples

    return synth, voice.rate_hz


def _allow_spinning() -> None:
    """Let the intra-op pool spin between operators (ONNX Runtime's default, which edged
    turns off): every session created from now on gets allow_spinning=1. A prototype of a
    change to edged.voice._open_session, measured as "edged-2t-spin"."""
    import onnxruntime as ort

    original = ort.InferenceSession

    def session(path: str, sess_options: Any = None, **kwargs: Any) -> Any:
        if sess_options is not None:
            sess_options.add_session_config_entry("session.intra_op.allow_spinning", "1")
        return original(path, sess_options=sess_options, **kwargs)

    ort.InferenceSession = session


def _arena_off(inference: Any) -> None:
    """Every session created from now on gets enable_cpu_mem_arena=False ("edged-2t-noarena")."""
    original = inference.session_options

    def options(threads: int, **kwargs: Any) -> Any:
        so = original(threads, **kwargs)
        so.enable_cpu_mem_arena = False
        return so

    inference.session_options = options


def parallel_stream(voice: Any, text: str, settings: Any, workers: int,
                    lookahead: int) -> Iterator[Any]:
    """Voice.stream with `workers` inferences at once: the change measured as "N sentences at
    once". The scheduler's one worker (2 cores, 2 threads) never overlaps two
    inferences; this uses the same pieces and Voice._piece_audio (private: this is a prototype of
    the change to voice.py, not a second implementation of synthesis)."""
    pieces = voice.pieces(text)
    ahead = max(lookahead, workers - 1)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-synth") as pool:
        pending: list[Future[Any]] = []
        submitted = 0
        for _ in range(len(pieces)):
            while submitted < len(pieces) and len(pending) <= ahead:
                pending.append(pool.submit(_piece, voice, pieces[submitted], settings,
                                           submitted == len(pieces) - 1))
                submitted += 1
            yield pending.pop(0).result()


def _piece(voice: Any, piece: Any, settings: Any, last: bool) -> Any:
    """One piece's audio in one chunk (its decoder windows joined)."""
    from edged.audio import Audio

    return Audio.join(list(voice._piece_audio(piece, settings, last)), voice.rate_hz)


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
    parser.add_argument("--lookahead", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="edged: inferences at once")
    parser.add_argument("--arena", choices=("on", "off"), default="on")
    parser.add_argument("--prepared", type=Path, metavar="CACHE_DIR",
                        help="edged: load the voice prepared in CACHE_DIR/models (as the daemon does)")
    parser.add_argument("--spin", action="store_true",
                        help="edged: intra-op threads spin between operators")
    parser.add_argument("--max-phonemes", type=int, default=400)
    parser.add_argument("--passes", type=int, default=2, help="timed passes after the cold one")
    parser.add_argument("--warmup-lines", type=int, default=3,
                        help="lines of the untimed cold pass 0 (line 1 gives the cold start)")
    parser.add_argument("--save", type=Path, help="folder for pass-1 audio (.npy per line)")
    parser.add_argument("--save-noise0", type=Path, help="folder for a noise-0 pass's audio")
    args = parser.parse_args()

    lines = [t for t in args.lines.read_text(encoding="utf-8").splitlines() if t.strip()]
    emit("start", rss_mb=rss_now_mb())
    make = edged_engine if args.engine == "edged" else piper_engine
    synth, rate = make(args)
    run_pass(synth, lines[: max(1, args.warmup_lines)], rate, 0)
    for pass_no in range(1, args.passes + 1):
        run_pass(synth, lines, rate, pass_no, save=args.save if pass_no == 1 else None)
    emit("timed_done", peak_rss_mb=peak_rss_mb())
    if args.save_noise0:
        run_pass(synth, lines, rate, -1, noise0=True, save=args.save_noise0)
    emit("done", peak_rss_mb=peak_rss_mb())


if __name__ == "__main__":
    main()
