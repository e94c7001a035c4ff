"""Which graph rewrites (rewrite.py) a prepared voice keeps: the ones that measure faster here.

When a voice is prepared, each variant of each part is saved optimized for this CPU
(ORT_ENABLE_ALL: NCHWc layouts for the vector width it has), checked, and timed:

- the audio check: the variant's audio of a fixed probe at noise 0 (the encoder's latent decoded
  by the plain decoder, or the plain latent by the decoder variant) must have the plain graph's
  length and be within one 16-bit step of it everywhere, else it is dropped;
- the timing: interleaved passes (variants in turn, then in reverse order), each a few runs on
  the threads the daemon will use (the encoder on `voice.threads`, the decoder on one thread when
  windows are decoded in parallel); the fastest of each variant counts;
- the choice: the fastest variant that passes, unless it is within `_NOISE` of the plain graph
  (then the plain graph: a rewrite has to earn its place).

Everything measured goes into the manifest (`rewrites`), so a user sees what was kept and why.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import numpy as np
import onnx

from ...audio import to_int16
from ..onnx import open_session
from .rewrite import DECODER_VARIANTS, ENCODER_VARIANTS, name_of, rewritten

_RUNS: Final = 5
_PASSES: Final = 2
_NOISE: Final = 0.03
"""A rewrite less than 3 % faster than the plain graph is not kept: the timing's own noise."""
_DECODER_TIMING_FRAMES: Final = 120  # a window of 96 frames with its context


def choose(work: Path, parts: dict[str, onnx.ModelProto], latent: str, extra_inputs: tuple[str, ...],
           feeds: dict[str, np.ndarray], *, encode: Callable[[Any], np.ndarray], threads: int,
           decoder_threads: int, enabled: bool,
           save: Callable[[bytes, Path, str], None]) -> dict[str, Any]:
    """Save every variant of the encoder and the decoder, keep the chosen one of each as
    `work/<part>.onnx` (+ `.weights`), and return what was measured (for the manifest).
    `encode(encoder session)` is the probe's latent (through the flow when it is split off).
    `parts` is emptied once saved: the graphs are the biggest thing the preparing child holds."""
    saved, errors = _save_variants(work, parts, enabled, save)
    plain_decoder = open_session(saved["decoder"]["none"] / "decoder.onnx", 1, level="ORT_DISABLE_ALL")
    extra = {name: feeds[name] for name in extra_inputs}
    z = encode(open_session(saved["encoder"]["none"] / "encoder.onnx", 1, level="ORT_DISABLE_ALL"))
    reference = to_int16(plain_decoder.run(None, {latent: z, **extra})[0].reshape(-1))
    window = np.ascontiguousarray(np.tile(z, (1, 1, -(-_DECODER_TIMING_FRAMES // z.shape[-1])))
                                  [..., :_DECODER_TIMING_FRAMES])

    def encoder_audio(session: Any) -> np.ndarray:
        return to_int16(plain_decoder.run(None, {latent: encode(session), **extra})[0].reshape(-1))

    def decoder_audio(session: Any) -> np.ndarray:
        return to_int16(session.run(None, {latent: z, **extra})[0].reshape(-1))

    report: dict[str, Any] = {"threads": {"encoder": threads, "decoder": decoder_threads}}
    checks = {"encoder": (threads, encoder_audio, lambda s: s.run(None, feeds)),
              "decoder": (decoder_threads, decoder_audio,
                          lambda s: s.run(None, {latent: window, **extra}))}
    for part, (count, audio, run) in checks.items():
        report[part] = measure_variants(saved[part], part, count, reference, audio, run)
        keep_chosen(saved[part], part, report[part]["chosen"], work)
    if errors:
        report["errors"] = errors
    return report


def _save_variants(work: Path, parts: dict[str, onnx.ModelProto], enabled: bool,
                   save: Callable[[bytes, Path, str], None],
                   ) -> tuple[dict[str, dict[str, Path]], dict[str, str]]:
    """Each variant of each part saved optimized in `work/<part>-<variant>/`; the rewrites that
    fail (ORT cannot load them: another version) with their error. Empties `parts`."""
    variants = {"encoder": ENCODER_VARIANTS if enabled else ((),),
                "decoder": DECODER_VARIANTS if enabled else ((),)}
    saved: dict[str, dict[str, Path]] = {"encoder": {}, "decoder": {}}
    errors: dict[str, str] = {}
    for part, options in variants.items():
        for variant in options:
            name, folder = name_of(variant), work / f"{part}-{name_of(variant)}"
            folder.mkdir()
            if not variant:  # the plain graph: a failure here fails the preparing
                save(parts[part].SerializeToString(), folder, part)
                saved[part][name] = folder
                continue
            try:
                data = rewritten(parts[part], variant, whole=part == "decoder").SerializeToString()
                save(data, folder, part)
                del data  # tens of MB: the child's peak matters on a 512 MB Pi
                saved[part][name] = folder
            except Exception as err:  # a rewrite ORT cannot load (another version): not kept
                errors[f"{part}/{name}"] = f"{type(err).__name__}: {err}"[:300]
                shutil.rmtree(folder, ignore_errors=True)
        del parts[part]
    return saved, errors


def keep_chosen(folders: dict[str, Path], part: str, chosen: str, work: Path) -> None:
    """The chosen variant's files become `work/<part>.onnx` (+ `.weights`); the variants' folders
    go."""
    for suffix in (".onnx", ".weights"):
        (folders[chosen] / f"{part}{suffix}").rename(work / f"{part}{suffix}")
    for folder in folders.values():
        shutil.rmtree(folder, ignore_errors=True)


def measure_variants(folders: dict[str, Path], part: str, threads: int, reference: np.ndarray,
                     audio: Callable[[Any], np.ndarray],
                     run: Callable[[Any], object]) -> dict[str, Any]:
    """Each variant's audio difference and fastest time; the chosen one (`folders` must have
    "none", the plain graph). Kokoro's preparer uses it for its decoder too."""
    measured: dict[str, dict[str, Any]] = {}
    for name, folder in folders.items():
        made = audio(open_session(folder / f"{part}.onnx", threads, level="ORT_DISABLE_ALL"))
        same = made.size == reference.size
        steps = int(np.abs(made.astype(np.int32) - reference).max()) if same else None
        measured[name] = {"max_diff_steps": steps, "ms": float("inf"),
                          "sounds_the_same": same and steps is not None and steps <= 1}
    names = [n for n, m in measured.items() if m["sounds_the_same"]]
    if names == ["none"]:
        return {"chosen": "none", "variants": {n: {**m, "ms": None} for n, m in measured.items()}}
    for pass_no in range(_PASSES):
        for name in names if pass_no % 2 == 0 else names[::-1]:
            session = open_session(folders[name] / f"{part}.onnx", threads,
                                   level="ORT_DISABLE_ALL")  # one at a time: memory
            run(session)  # its buffers allocated: not timed
            for _ in range(_RUNS):
                start = time.perf_counter()
                run(session)
                measured[name]["ms"] = min(measured[name]["ms"],
                                           1000 * (time.perf_counter() - start))
    fastest = min(names, key=lambda n: measured[n]["ms"])
    plain = measured["none"]["ms"]
    chosen = fastest if measured[fastest]["ms"] < plain * (1 - _NOISE) else "none"
    for m in measured.values():
        m["ms"] = round(m["ms"], 2) if m["ms"] != float("inf") else None
    return {"chosen": chosen, "variants": measured}
