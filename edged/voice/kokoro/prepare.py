"""Prepare the Kokoro model (run by `kokoro/prepared.ensure_prepared` as
`python -m edged.voice.kokoro.prepare MODEL FOLDER SHA256`), in stages told to the parent:

1. split: the graph into encoder and decoder (split.py);
2. optimize: ONNX Runtime optimizes each part once and saves it, weights in a separate file
   (loading then skips the optimizations: about 0.9 s -> 0.2 s here); the decoder twice, as it
   is and with its integer convolutions as matrix products (prepare/intconv.py);
3. probe: the decoder that is faster here (prepare/tune.py: same audio, timed), then the two
   parts together must make the whole graph's audio to within one 16-bit step; each windowed
   tensor's time axis and rate, the samples per frame, and the decoder's activation memory and
   time per frame; then the decoder cut before its generator (generator.py), kept only where the
   two parts make its audio to the bit;
4. write: `manifest.json` with the files' sizes and xxh3 checksums; the folder is renamed into
   place (readers never see half of one).

A child process: holding the graph two or three times over (about 600 MB peak) must not stay
in the daemon's heap.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ...audio import to_int16
from ...memory import map_large_allocations
from ..onnx import open_session
from ..piper.prepared import FORMAT, MANIFEST, cpu_signature, file_digest, ort_version
from ..prepare.intconv import convs_as_matmuls
from ..prepare.prepare import move_into_place, remove_leftovers, save_optimized
from ..prepare.probe import window_cost
from ..prepare.progress import Progress, die_with_parent, stages_for
from ..prepare.tune import keep_chosen, measure_variants
from . import assets
from .generator import split_at_generator
from .prepared import TAPS_PER_PRODUCT

if TYPE_CHECKING:
    import onnx

PAD_FRAMES: Final = 8
"""Context frames either side of a decoder window: the convolutions' reach. Measured on a
Japanese line (304 frames, windows of 12 then up to 96): log-spectral distance to the whole
piece's audio 7.3 dB with 4 frames, 6.8 with 8, 6.6 with 12, 6.8 with 20 (more costs time and
gains nothing: what remains comes from the per-window normalization, see split.py)."""
_PROBE_TOKENS: Final = (16, 64)
"""Two piece lengths: the axis that grows between them is a tensor's time axis."""
_MEASURE_FRAMES: Final = (24, 120)
_TIMING_FRAMES: Final = 48
"""The decoder variants are timed on a piece of this many frames (1.2 s of speech)."""
_ONE_STEP: Final = 1 / 32768
_STYLE: Final = "jf_alpha"  # ships in the model's own package
_LEVEL: Final = "ORT_ENABLE_EXTENDED"


def prepare(model_path: Path, folder: Path, sha256: str, progress: Progress) -> None:
    import onnx

    from .split import split_kokoro_graph

    remove_leftovers(folder)
    work = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    work.mkdir(parents=True)
    try:
        progress.begin("split")
        parts = split_kokoro_graph(onnx.load(str(model_path)))
        progress.begin("optimize")
        save_optimized(parts.encoder.SerializeToString(), work, "encoder", _LEVEL)
        decoders = _save_decoders(work, parts.decoder)
        windowed, extra = parts.windowed, parts.extra_inputs
        del parts  # the child's peak memory matters on a small board
        progress.begin("probe")
        manifest: dict[str, Any] = {
            "format": FORMAT, "kind": "kokoro", "onnxruntime": ort_version(),
            "cpu": cpu_signature(), "source": str(model_path), "source_sha256": sha256,
            **probe(model_path, work, windowed, extra, decoders)}
        progress.begin("write")
        manifest["files"] = {p.name: dict(zip(("size", "xxh3"), file_digest(p), strict=True))
                             for p in sorted(work.iterdir())}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        move_into_place(work, folder, lambda: read_ok(folder, sha256))
        progress.end()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _save_decoders(work: Path, decoder: onnx.ModelProto) -> dict[str, Path]:
    """The decoder saved optimized (`work/decoder-none/`) and, where it has integer
    convolutions, with them as matrix products (`work/decoder-intconv/`). Rewritten after ORT
    optimized it: ORT runs the nodes in the order of the file, and the order it saves its own
    output in interleaves each tap's slice and product (measured: +45 % peak memory, slower)."""
    import onnx

    folders = {"none": work / "decoder-none"}
    folders["none"].mkdir()
    save_optimized(decoder.SerializeToString(), folders["none"], "decoder", _LEVEL)
    try:
        graph = onnx.load(str(folders["none"] / "decoder.onnx"))
        if convs_as_matmuls(graph, TAPS_PER_PRODUCT):
            folders["intconv"] = work / "decoder-intconv"
            folders["intconv"].mkdir()
            onnx.save(graph, str(folders["intconv"] / "decoder.onnx"), save_as_external_data=True,
                      location="decoder.weights", size_threshold=1024)
            shutil.copymode(folders["none"] / "decoder.weights",
                            folders["intconv"] / "decoder.weights")
    except Exception as err:  # the plain decoder stays: say why in the child's stderr
        print(f"decoder intconv left out: {type(err).__name__}: {err}"[:300], file=sys.stderr)
        folders.pop("intconv", None)
    return folders


def _choose_decoder(work: Path, folders: dict[str, Path], made: dict[str, np.ndarray],
                    reference: np.ndarray, timed: dict[str, np.ndarray]) -> dict[str, Any]:
    """Keep the decoder variant that makes `made` into `reference` fastest (timed on `timed`)
    as `work/decoder.onnx`."""
    report = measure_variants(folders, "decoder", 2, to_int16(reference),
                              lambda s: to_int16(s.run(None, made)[0].reshape(-1)),
                              lambda s: s.run(None, timed))
    keep_chosen(folders, "decoder", report["chosen"], work)
    if "intconv" in folders:
        report["taps_per_product"] = TAPS_PER_PRODUCT
    return report


def read_ok(folder: Path, sha256: str) -> bool:
    from .prepared import read_prepared

    return read_prepared(folder, sha256) is not None


def probe(model_path: Path, work: Path, windowed: tuple[str, ...], extra: tuple[str, ...],
          decoders: dict[str, Path]) -> dict[str, Any]:
    """What the manifest says about the parts; ValueError when they do not make the whole's
    audio. One session at a time: the child's peak memory."""
    whole = open_session(model_path, 2, arena="own")
    references = {count: whole.run(None, _feeds(count))[0].reshape(-1) for count in _PROBE_TOKENS}
    del whole
    encoder = open_session(work / "encoder.onnx", 2, level="ORT_DISABLE_ALL", arena="own")
    short, long = ({**dict(zip(windowed, encoder.run(list(windowed), _feeds(count)), strict=True)),
                    **{n: _feeds(count)[n] for n in extra}} for count in _PROBE_TOKENS)
    del encoder
    frames = min(b for n in windowed for a, b in zip(short[n].shape, long[n].shape, strict=True)
                 if a != b)  # the slowest rate's length: one step per frame
    layout = [_time_axis(name, short[name], long[name], frames) for name in windowed]
    rewrites = _choose_decoder(work, decoders, long, references[_PROBE_TOKENS[-1]],
                               _window(long, layout, _TIMING_FRAMES))
    decoder = open_session(work / "decoder.onnx", 2, level="ORT_DISABLE_ALL", arena="own")
    kb_per_frame, s_per_frame = window_cost(decoder, partial(_window, long, layout),
                                            _MEASURE_FRAMES)
    for made, reference in zip((short, long), references.values(), strict=True):
        audio = decoder.run(None, made)[0].reshape(-1)
        if audio.shape != reference.shape or np.abs(audio - reference).max() >= _ONE_STEP:
            raise ValueError("the split graph's audio differs from the whole graph's")
    hop, rest = divmod(audio.size, frames)
    if rest:
        raise ValueError(f"the decoder makes {audio.size} samples from {frames} frames")
    del decoder
    first = layout[0]
    generator = split_at_generator(work, [short, long], [
        made[first["name"]].shape[first["axis"]] // first["per_frame"] for made in (short, long)],
        list(windowed))
    if generator is not None:  # its two parts replace it
        for name in ("decoder.onnx", "decoder.weights"):
            (work / name).unlink(missing_ok=True)
    return {"windowed": layout, "extra_inputs": list(extra), "hop": hop, "pad": PAD_FRAMES,
            "decoder_kb_per_frame": kb_per_frame, "decoder_s_per_frame": s_per_frame,
            "rewrites": {"decoder": rewrites}, "generator": generator}


def _feeds(count: int) -> dict[str, np.ndarray]:
    style, _ = assets.load_style(_STYLE, [])
    vocab = assets.vocabulary()
    symbols = [vocab[c] for c in "koɲɲiʨiβa, kyoːwa ii teɲki desɯ ne." if c in vocab]
    tokens = [symbols[i % len(symbols)] for i in range(count)]
    return {"tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style[count - 1].reshape(1, -1), "speed": np.array([1.0], dtype=np.float32)}


def _time_axis(name: str, short: np.ndarray, long: np.ndarray, frames: int) -> dict[str, Any]:
    grown = [i for i, (a, b) in enumerate(zip(short.shape, long.shape, strict=True)) if a != b]
    if len(grown) != 1 or long.shape[grown[0]] % frames:
        raise ValueError(f"{name}: no single time axis in shapes {short.shape}, {long.shape}")
    axis = grown[0]
    return {"name": name, "axis": axis, "per_frame": long.shape[axis] // frames,
            "shape": [d for i, d in enumerate(long.shape) if i != axis]}


def _window(made: dict[str, np.ndarray], layout: list[dict[str, Any]],
            frames: int) -> dict[str, np.ndarray]:
    """The decoder's inputs for a window of `frames` (the probe piece's repeated to length)."""
    cut = dict(made)
    for w in layout:
        value = made[w["name"]]
        steps = np.arange(frames * w["per_frame"]) % value.shape[w["axis"]]
        cut[w["name"]] = np.ascontiguousarray(np.take(value, steps, axis=w["axis"]))
    return cut


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edged.voice.kokoro.prepare",
                                     description="Prepare the Kokoro model into FOLDER "
                                                 "(edged does it itself on first use).")
    parser.add_argument("model", type=Path)
    parser.add_argument("folder", type=Path)
    parser.add_argument("sha256")
    args = parser.parse_args(argv)
    die_with_parent()
    map_large_allocations()
    try:
        prepare(args.model, args.folder, args.sha256,
                Progress(stages_for("float32"), sys.stdout))
    except Exception as err:  # the parent logs this one line and runs the model whole
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
