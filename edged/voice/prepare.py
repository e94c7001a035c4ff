"""Prepare a voice (run by `prepared.ensure_prepared` as `python -m edged.voice.prepare`).

1. split the Piper graph into encoder and decoder (`model_split`), when it can be split; with
   `--precision int8` quantize the weights first, all but the decoder's;
2. let ONNX Runtime optimize each part once (ORT_ENABLE_EXTENDED: the fusions, none of them
   CPU-specific) and save it with its weights in a separate file;
3. measure how many frames of context a decoder window needs to match the whole decode to
   within one 16-bit step, and the samples per frame;
4. write `manifest.json` with the sizes and xxh3 checksums of the files, then rename the folder
   into place (readers never see half a folder; two preparers race harmlessly).

A child process: importing onnx and holding the model two or three times over (350 MB peak
for the default voice) must not stay in the daemon's heap.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ..memory import map_large_allocations, rss_mb
from .onnx import open_session
from .piper_config import read_piper_config
from .prepared import FORMAT, MANIFEST, cpu_signature, file_digest, ort_version, read_prepared
from .windows import DECODE_WINDOW_FRAMES, decode_in_windows

if TYPE_CHECKING:
    import onnx

_PAD_CANDIDATES: Final = (2, 4, 6, 8, 12, 16, 24, 32)
_MEASURE_FRAMES: Final = (32, 224)  # window sizes whose activations are compared
_ONE_STEP: Final = 1 / 32768  # windowed and whole decode must agree to within one 16-bit step
# Phonemes to probe the encoder with (any will do: the decoder's receptive field is what is measured).
_PROBE_PHONEMES: Final = "ðə kwˈɪk bɹˈaʊn fˈɑːks dʒˈʌmps ˌoʊvɚ ðə lˈeɪzi dˈɑːɡ, "


@dataclass(frozen=True)
class Tuning:
    """How the daemon will run the voice: the rewrites are timed on these threads."""

    threads: int = 2
    """The encoder's intra-op threads (`voice.threads`)."""
    decoder_threads: int = 1
    """The decoder's: one when windows are decoded in parallel, else `threads`."""
    rewrites: bool = True
    """Try the graph rewrites (rewrite.py); false: the plain graphs."""


def prepare(onnx_path: Path, folder: Path, sha256: str, precision: str = "float32",
            tuning: Tuning = Tuning()) -> None:
    """Write the prepared model for `onnx_path` into `folder` (replacing a stale one)."""
    import onnx

    from .split import NotSplittable, quantize_int8, split_piper_graph

    _remove_leftovers(folder)
    work = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    work.mkdir(parents=True)
    try:
        source = onnx_path
        if precision == "int8":
            source = work / "int8-source.onnx"
            quantize_int8(onnx_path, source)
        model = onnx.load(str(source))
        manifest: dict[str, Any] = {"format": FORMAT, "onnxruntime": ort_version(),
                                    "cpu": cpu_signature(), "source": str(onnx_path),
                                    "source_sha256": sha256, "precision": precision}
        try:
            split = split_piper_graph(model)
        except NotSplittable as err:
            split, manifest["note"] = None, str(err)
        if split is not None:
            del model  # the child's peak memory matters on a 512 MB Pi
            parts = {"encoder": split.encoder, "decoder": split.decoder}
            latent, extra = split.latent, split.decoder_extra_inputs
            split = None  # `parts` is emptied once saved: nothing else may hold the graphs
            if not _prepare_split(work, onnx_path, parts, latent, extra, manifest, tuning):
                model = onnx.load(str(source))
        if manifest.get("kind") != "split":
            _save_optimized(model.SerializeToString(), work, "model", "ORT_ENABLE_EXTENDED")
            manifest["kind"] = "whole"
        if source != onnx_path:
            source.unlink()
        manifest["files"] = {p.name: dict(zip(("size", "xxh3"), file_digest(p), strict=True))
                             for p in sorted(work.iterdir())}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        _move_into_place(work, folder, sha256, precision)
        _remove_stale(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _prepare_split(work: Path, onnx_path: Path, parts: dict[str, onnx.ModelProto], latent: str,
                   extra: tuple[str, ...], manifest: dict[str, Any], tuning: Tuning) -> bool:
    """Encoder and decoder saved (each with the rewrites that pay here, tune.py) and the
    decoder's windows measured; False (and the reason in the manifest's note) when windowed
    decoding does not match the whole."""
    from .tune import choose

    feeds = _probe_feeds(onnx_path, {i.name for i in parts["encoder"].graph.input})
    manifest["rewrites"] = choose(
        work, parts, latent, extra, feeds, threads=tuning.threads,
        decoder_threads=tuning.decoder_threads, enabled=tuning.rewrites,
        save=lambda model, folder, name: _save_optimized(model, folder, name, "ORT_ENABLE_ALL"))
    probe = _probe_decoder(work, onnx_path, latent, extra)
    if isinstance(probe, str):
        manifest["note"] = probe
        manifest.pop("rewrites")
        for name in ("encoder", "decoder"):
            for suffix in (".onnx", ".weights"):
                (work / f"{name}{suffix}").unlink()
        return False
    hop, pad, kb_per_frame = probe
    manifest.update(kind="split", latent=latent, extra_inputs=list(extra), hop=hop, pad=pad,
                    decoder_kb_per_frame=kb_per_frame)
    return True


def _save_optimized(model: bytes, folder: Path, name: str, level: str) -> None:
    """ORT optimizes the graph once and saves it, weights in `<name>.weights`. ORT_ENABLE_ALL
    lays 2-D convolutions out for this CPU's vector width: the manifest records the CPU."""
    import onnxruntime as ort

    from .onnx import session_options

    options = session_options(1, level=level)
    options.optimized_model_filepath = str(folder / f"{name}.onnx")
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                     f"{name}.weights")
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                     "1024")
    ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def _probe_decoder(folder: Path, onnx_path: Path, latent_name: str,
                   extra_inputs: tuple[str, ...]) -> tuple[int, int, float] | str:
    """(samples per frame, context frames per window, activation KB per window frame) measured
    on the saved parts, or why not."""
    encoder = open_session(folder / "encoder.onnx", 1, level="ORT_DISABLE_ALL")
    feeds = _probe_feeds(onnx_path, {i.name for i in encoder.get_inputs()})
    latent = encoder.run([latent_name], feeds)[0]
    if latent.ndim != 3 or latent.shape[0] != 1:
        return f"the latent has shape {latent.shape}, not [1, channels, frames]"
    needed = 3 * DECODE_WINDOW_FRAMES + 2 * max(_PAD_CANDIDATES)
    latent = np.tile(latent, (1, 1, -(-needed // latent.shape[-1])))
    extra = {name: feeds[name] for name in extra_inputs}
    decoder = open_session(folder / "decoder.onnx", 1, level="ORT_DISABLE_ALL")
    kb_per_frame = _activation_kb_per_frame(decoder, latent_name, latent, extra)
    whole = decoder.run(None, {latent_name: latent, **extra})[0].reshape(-1)
    hop, rest = divmod(whole.size, latent.shape[-1])
    if rest or hop == 0:
        return f"the decoder makes {whole.size} samples from {latent.shape[-1]} frames"
    worst = 0.0
    for pad in _PAD_CANDIDATES:
        windowed = np.concatenate(list(decode_in_windows(decoder, latent_name, latent, extra, hop=hop,
                                                         pad=pad, window=DECODE_WINDOW_FRAMES)))
        worst = float(np.abs(windowed - whole).max())
        if worst < _ONE_STEP:
            return hop, pad, kb_per_frame
    return f"windowed decoding still differs by {worst:.2g} with {_PAD_CANDIDATES[-1]} frames of context"


def _activation_kb_per_frame(decoder: Any, latent_name: str, latent: np.ndarray,
                             extra: dict[str, np.ndarray]) -> float:
    """How much the resident set grows per latent frame of a window: a fresh session decodes a
    small window (its weights are read), then a larger one; ONNX Runtime's arena keeps what it
    took, so the difference is the larger window's activations (about 200 KB per frame for the
    default voice). It sizes the windows from the memory budget (windows.largest_window)."""
    small, large = _MEASURE_FRAMES
    decoder.run(None, {latent_name: np.ascontiguousarray(latent[..., :small]), **extra})
    before = rss_mb()
    decoder.run(None, {latent_name: np.ascontiguousarray(latent[..., :large]), **extra})
    return round(max(0.0, (rss_mb() - before) * 1e6 / 1024 / (large - small)), 1)


def _probe_feeds(onnx_path: Path, inputs: set[str]) -> dict[str, np.ndarray]:
    id_map = read_piper_config(Path(f"{onnx_path}.json")).phoneme_id_map
    ids = [id_map["^"][0]]
    for phoneme in _PROBE_PHONEMES * 2:
        if phoneme in id_map:
            ids += [id_map[phoneme][0], *id_map.get("_", [0])[:1]]
    ids.append(id_map.get("$", [0])[0])
    feeds: dict[str, np.ndarray] = {"input": np.array([ids], dtype=np.int64),
             "input_lengths": np.array([len(ids)], dtype=np.int64),
             "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32)}  # no noise: repeatable
    if "sid" in inputs:
        feeds["sid"] = np.array([0], dtype=np.int64)
    return feeds


def _move_into_place(work: Path, folder: Path, sha256: str, precision: str) -> None:
    if folder.exists():
        if read_prepared(folder, sha256, precision) is not None:
            return  # another process prepared it meanwhile
        # Stale or damaged: move it aside first. A process that has its files mapped keeps them.
        old = folder.with_name(f".{folder.name}.{os.getpid()}.old")
        with contextlib.suppress(FileNotFoundError):  # another preparer moved it first
            folder.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    with contextlib.suppress(FileExistsError, OSError):
        work.rename(folder)


def _remove_stale(keep: Path) -> None:
    """Other prepared folders of the same voice file name (an older model) are dead weight."""
    stem = keep.name.rsplit("-", 1)[0]
    for other in keep.parent.glob(f"{stem}-*"):
        suffix = other.name.removeprefix(f"{stem}-")
        if other != keep and other.is_dir() and len(suffix) == 16 and suffix.isalnum():
            shutil.rmtree(other, ignore_errors=True)


def _remove_leftovers(folder: Path) -> None:
    """Work folders of preparers that died (killed at the timeout, power cut): tens of MB each."""
    for leftover in folder.parent.glob(f".{folder.name}.*"):
        pid = leftover.name.removeprefix(f".{folder.name}.").split(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edged.voice.prepare",
                                     description="Prepare a Piper voice into FOLDER (edged does it itself).")
    parser.add_argument("onnx", type=Path)
    parser.add_argument("folder", type=Path)
    parser.add_argument("sha256")
    parser.add_argument("--precision", choices=("float32", "int8"), default="float32")
    parser.add_argument("--threads", type=int, default=2, help="the encoder's intra-op threads")
    parser.add_argument("--decoder-threads", type=int, default=1)
    parser.add_argument("--no-rewrites", action="store_true", help="keep the plain graphs")
    args = parser.parse_args(argv)
    map_large_allocations()  # sessions made and dropped: their memory must leave (RSS measured)
    try:
        prepare(args.onnx, args.folder, args.sha256, args.precision,
                Tuning(args.threads, args.decoder_threads, not args.no_rewrites))
    except Exception as err:  # the parent logs this one line and loads the voice directly
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
