"""Prepare a voice (run by `piper/prepared.ensure_prepared` as `python -m edged.voice.prepare`).

1. split the Piper graph into encoder and decoder (`model_split`), when it can be split; with
   `--precision int8` quantize the weights first, all but the decoder's;
2. let ONNX Runtime optimize each part once and save it with its weights in a separate file,
   trying the graph rewrites that may pay on this CPU (tune.py);
3. measure how many frames of context a decoder window (and a flow window) needs to match the
   whole to within one 16-bit step, the samples per frame and the decoder's memory per frame
   (probe.py);
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...files import pid_alive
from ...memory import map_large_allocations
from ..onnx import open_session
from ..piper.prepared import FORMAT, MANIFEST, cpu_signature, file_digest, ort_version, read_prepared
from .probe import Layout, encoder_latent, probe_decoder, probe_feeds, probe_flow
from .progress import Progress, die_with_parent, stages_for

if TYPE_CHECKING:
    import onnx



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
            tuning: Tuning = Tuning(), progress: Progress | None = None) -> None:
    """Write the prepared model for `onnx_path` into `folder` (replacing a stale one);
    `progress` hears each stage (progress.py)."""
    import onnx

    from .split import NotSplittable, quantize_int8, split_piper_graph

    progress = progress or Progress(stages_for(precision))
    remove_leftovers(folder)
    work = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    work.mkdir(parents=True)
    try:
        source = onnx_path
        if precision == "int8":
            progress.begin("quantize")
            source = work / "int8-source.onnx"
            quantize_int8(onnx_path, source)
        progress.begin("split")
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
            if split.flow is not None:
                parts["flow"] = split.flow
            layout = Layout(split.latent, split.decoder_extra_inputs, split.flow_inputs,
                            split.flow_extra_inputs)
            split = None  # `parts` is emptied once saved: nothing else may hold the graphs
            if not _prepare_split(work, onnx_path, parts, layout, manifest, tuning, progress):
                model = onnx.load(str(source))  # within "probe": it found the split unusable
        else:
            progress.begin("optimize")
        if manifest.get("kind") != "split":
            save_optimized(model.SerializeToString(), work, "model", "ORT_ENABLE_EXTENDED")
            manifest["kind"] = "whole"
            manifest["inputs"] = _graph_inputs(model)
        progress.begin("write")
        if source != onnx_path:
            source.unlink()
        manifest["files"] = {p.name: dict(zip(("size", "xxh3"), file_digest(p), strict=True))
                             for p in sorted(work.iterdir())}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        move_into_place(work, folder, lambda: read_prepared(folder, sha256, precision) is not None)
        _remove_stale(folder)
        progress.end()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _prepare_split(work: Path, onnx_path: Path, parts: dict[str, onnx.ModelProto],
                   layout: Layout, manifest: dict[str, Any], tuning: Tuning,
                   progress: Progress) -> bool:
    """Encoder, flow and decoder saved (encoder and decoder each with the rewrites that pay here,
    tune.py), the decoder's and the flow's windows measured; False (and the reason in the
    manifest's note) when windowed decoding does not match the whole."""
    from .tune import choose

    progress.begin("optimize")
    manifest["inputs"] = _graph_inputs(parts["encoder"])
    feeds = probe_feeds(onnx_path, {i.name for i in parts["encoder"].graph.input})
    flow = None
    if "flow" in parts:
        save_optimized(parts.pop("flow").SerializeToString(), work, "flow", "ORT_ENABLE_ALL")
        flow = open_session(work / "flow.onnx", 1, level="ORT_DISABLE_ALL")
    manifest["rewrites"] = choose(
        work, parts, layout.latent, layout.extra, feeds,
        encode=lambda encoder: encoder_latent(encoder, flow, layout, feeds),
        threads=tuning.threads, decoder_threads=tuning.decoder_threads, enabled=tuning.rewrites,
        save=lambda model, folder, name: save_optimized(model, folder, name, "ORT_ENABLE_ALL"))
    progress.begin("probe")
    encoder = open_session(work / "encoder.onnx", 1, level="ORT_DISABLE_ALL")
    # An arena of its own: its growth is what one window takes (probe.py).
    decoder = open_session(work / "decoder.onnx", 1, level="ORT_DISABLE_ALL", arena="own")
    probe = probe_decoder(decoder, encoder_latent(encoder, flow, layout, feeds), layout, feeds)
    if isinstance(probe, str):
        manifest["note"] = probe
        manifest.pop("rewrites")
        for name in ("encoder", "decoder", "flow"):
            for suffix in (".onnx", ".weights"):
                (work / f"{name}{suffix}").unlink(missing_ok=True)
        return False
    hop, pad, kb_per_frame = probe
    manifest.update(kind="split", latent=layout.latent, extra_inputs=list(layout.extra), hop=hop,
                    pad=pad, decoder_kb_per_frame=kb_per_frame)
    if flow is not None:
        # A flow that cannot be run on windows (an INT8 one: its activations are quantized with
        # scales of the whole tensor) still runs as a part of its own, whole, after the encoder.
        flow_pad = probe_flow(encoder, flow, layout, feeds)
        manifest["flow"] = {"inputs": list(layout.flow_inputs),
                            "extra_inputs": list(layout.flow_extra),
                            "pad": None if isinstance(flow_pad, str) else flow_pad,
                            **({"note": flow_pad} if isinstance(flow_pad, str) else {})}
    return True


def _graph_inputs(model: onnx.ModelProto) -> list[str]:
    """What the model reads (not its initializers, which old exporters list as inputs too)."""
    weights = {i.name for i in model.graph.initializer}
    return sorted(i.name for i in model.graph.input if i.name not in weights)


def save_optimized(model: bytes, folder: Path, name: str, level: str) -> None:
    """ORT optimizes the graph once and saves it, weights in `<name>.weights`. ORT_ENABLE_ALL
    lays 2-D convolutions out for this CPU's vector width: the manifest records the CPU."""
    import onnxruntime as ort

    from ..onnx import session_options

    options = session_options(1, level=level)
    options.optimized_model_filepath = str(folder / f"{name}.onnx")
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                     f"{name}.weights")
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                     "1024")
    ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def move_into_place(work: Path, folder: Path, ready: Callable[[], bool]) -> None:
    """Rename `work` to `folder`, unless `ready()` says a good one is there already."""
    if folder.exists():
        if ready():
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


def remove_leftovers(folder: Path) -> None:
    """Work folders of preparers that died (killed at the timeout, power cut): tens of MB each."""
    for leftover in folder.parent.glob(f".{folder.name}.*"):
        pid = leftover.name.removeprefix(f".{folder.name}.").split(".")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


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
    die_with_parent()
    map_large_allocations()  # sessions made and dropped: their memory must leave (RSS measured)
    try:
        prepare(args.onnx, args.folder, args.sha256, args.precision,
                Tuning(args.threads, args.decoder_threads, not args.no_rewrites),
                Progress(stages_for(args.precision), sys.stdout))
    except Exception as err:  # the parent logs this one line and loads the voice directly
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0

