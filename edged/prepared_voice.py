"""A voice prepared once for fast start-up and bounded memory, kept in `<cache.dir>/models/`.

Preparing a voice (in a child process, so its memory goes back to the system):
1. split the Piper graph into encoder and decoder (`model_split`), when it can be split;
2. let ONNX Runtime optimize each part once (ORT_ENABLE_EXTENDED: the fusions, none of them
   CPU-specific) and save it with its weights in a separate file;
3. measure how many frames of context a decoder window needs to match the whole decode to
   within one 16-bit step, and the samples per frame;
4. write `manifest.json` with the sizes and xxh3 checksums of the files, then rename the folder
   into place (readers never see half a folder; two preparers race harmlessly).

Loading a prepared voice skips ORT's graph optimizations: session creation measured 0.07 s
instead of 0.59 s for the default voice. The folder is keyed by the model's sha256; a new
onnxruntime version or a file failing its checksum makes it be prepared again. When preparing
fails (not a splittable graph is fine: the whole graph is prepared), the voice is loaded directly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import xxhash

from .inference import DECODE_WINDOW_FRAMES, Model, SplitModel, WholeModel, decode_in_windows, open_session

_LOGGER = logging.getLogger(__name__)

FORMAT: Final = 1
MODELS_DIR_NAME: Final = "models"
"""In cache.dir: one folder per prepared voice."""
_MANIFEST: Final = "manifest.json"
_PREPARE_TIMEOUT_S: Final = 600.0  # a Pi 3 takes tens of seconds; x86 about 4 s
_PAD_CANDIDATES: Final = (2, 4, 6, 8, 12, 16, 24, 32)
_ONE_STEP: Final = 1 / 32768  # windowed and whole decode must agree to within one 16-bit step
# Phonemes to probe the encoder with (any will do: the decoder's receptive field is what is measured).
_PROBE_PHONEMES: Final = "ðə kwˈɪk bɹˈaʊn fˈɑːks dʒˈʌmps ˌoʊvɚ ðə lˈeɪzi dˈɑːɡ, "


@dataclass(frozen=True)
class PreparedModel:
    folder: Path
    kind: str
    """"split" (encoder + windowed decoder) or "whole" (the optimized graph as it is)."""
    latent: str = ""
    extra_inputs: tuple[str, ...] = ()
    hop: int = 0
    pad: int = 0
    note: str = ""
    """Why the graph was not split, for the log."""
    precision: str = "float32"
    """"int8": the weights were quantized when preparing (all but the decoder's)."""

    def open(self, threads: int) -> Model:
        # Optimized when prepared; optimizing again (ORT_ENABLE_ALL) cost 60-110 ms per start and
        # made inference no faster here (encoder 87 vs 79 ms, decoder window 47 vs 41 ms).
        def session(name: str) -> Any:
            return open_session(self.folder / name, threads, level="ORT_DISABLE_ALL")

        if self.kind == "whole":
            return WholeModel(session("model.onnx"))
        return SplitModel(session("encoder.onnx"), session("decoder.onnx"), latent=self.latent,
                          extra_inputs=self.extra_inputs, hop=self.hop, pad=self.pad)

    def describe(self) -> str:
        int8 = ", INT8 weights" if self.precision == "int8" else ""
        if self.kind == "split":
            return (f"encoder + decoder in windows of {DECODE_WINDOW_FRAMES} frames "
                    f"(+{self.pad} context){int8}")
        return f"whole graph{int8} ({self.note})" if self.note else f"whole graph{int8}"


def prepared_folder(cache_dir: Path, onnx_path: Path, sha256: str, precision: str = "float32") -> Path:
    stem = onnx_path.name.removesuffix(".onnx") + ("-int8" if precision == "int8" else "")
    return cache_dir / MODELS_DIR_NAME / f"{stem}-{sha256[:16]}"


def read_prepared(folder: Path, sha256: str, precision: str = "float32") -> PreparedModel | None:
    """The prepared model in `folder`, or None when it is missing, stale or fails a checksum."""
    try:
        manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        if (manifest["format"], manifest["onnxruntime"], manifest["source_sha256"],
                manifest.get("precision", "float32")) != (FORMAT, _ort_version(), sha256, precision):
            return None
        for name, expected in manifest["files"].items():
            if _file_digest(folder / name) != (expected["size"], expected["xxh3"]):
                _LOGGER.warning("Prepared model %s: %s fails its checksum; preparing it again",
                                folder.name, name)
                return None
        return PreparedModel(folder=folder, kind=manifest["kind"], latent=manifest.get("latent", ""),
                             extra_inputs=tuple(manifest.get("extra_inputs", ())),
                             hop=int(manifest.get("hop", 0)), pad=int(manifest.get("pad", 0)),
                             note=manifest.get("note", ""), precision=precision)
    except (KeyError, TypeError, ValueError, OSError):
        return None


def ensure_prepared(onnx_path: Path, sha256: str, cache_dir: Path,
                    precision: str = "float32") -> PreparedModel | None:
    """The prepared model for `onnx_path`, preparing it first when needed; None when that fails."""
    folder = prepared_folder(cache_dir, onnx_path, sha256, precision)
    prepared = read_prepared(folder, sha256, precision)
    if prepared is not None:
        return prepared
    _LOGGER.info("Preparing voice %s (once per model and onnxruntime version)...", onnx_path.name)
    start = time.monotonic()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "edged.prepared_voice", str(onnx_path), str(folder), sha256,
             "--precision", precision],
            capture_output=True, text=True, timeout=_PREPARE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        _LOGGER.warning("Voice %s: cannot prepare it (%s); loading it directly", onnx_path.name, err)
        return None
    prepared = read_prepared(folder, sha256, precision)
    if done.returncode != 0 or prepared is None:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        _LOGGER.warning("Voice %s: cannot prepare it (%s); loading it directly", onnx_path.name, why)
        return None
    _LOGGER.info("Prepared voice %s in %.1f s: %s", onnx_path.name, time.monotonic() - start,
                 prepared.describe())
    _remove_stale(folder)
    return prepared


# ------------------------------------------------------------------ preparing (child process)
def prepare(onnx_path: Path, folder: Path, sha256: str, precision: str = "float32") -> None:
    """Write the prepared model for `onnx_path` into `folder` (replacing a stale one)."""
    import onnx

    from .model_split import NotSplittable, quantize_int8, split_piper_graph

    work = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        source = onnx_path
        if precision == "int8":
            source = work / "int8-source.onnx"
            quantize_int8(onnx_path, source)
        model = onnx.load(str(source))
        manifest: dict[str, Any] = {"format": FORMAT, "onnxruntime": _ort_version(),
                                    "source": str(onnx_path), "source_sha256": sha256,
                                    "precision": precision}
        try:
            split = split_piper_graph(model)
        except NotSplittable as err:
            split, manifest["note"] = None, str(err)
        if split is not None:
            del model  # the child's peak memory matters on a 512 MB Pi
            _save_optimized(split.encoder.SerializeToString(), work, "encoder")
            _save_optimized(split.decoder.SerializeToString(), work, "decoder")
            probe = _probe_decoder(work, onnx_path, split.latent, split.decoder_extra_inputs)
            if isinstance(probe, str):
                manifest["note"] = probe
                for name in ("encoder", "decoder"):
                    for suffix in (".onnx", ".weights"):
                        (work / f"{name}{suffix}").unlink()
                split = None
                model = onnx.load(str(source))
            else:
                hop, pad = probe
                manifest.update(kind="split", latent=split.latent,
                                extra_inputs=list(split.decoder_extra_inputs), hop=hop, pad=pad)
        if split is None:
            _save_optimized(model.SerializeToString(), work, "model")
            manifest["kind"] = "whole"
        if source != onnx_path:
            source.unlink()
        manifest["files"] = {p.name: dict(zip(("size", "xxh3"), _file_digest(p), strict=True))
                             for p in sorted(work.iterdir())}
        (work / _MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        _move_into_place(work, folder, sha256, precision)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _save_optimized(model: bytes, folder: Path, name: str) -> None:
    """ORT optimizes the graph once and saves it, weights in `<name>.weights`."""
    import onnxruntime as ort

    from .inference import session_options

    options = session_options(1, level="ORT_ENABLE_EXTENDED")
    options.optimized_model_filepath = str(folder / f"{name}.onnx")
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                     f"{name}.weights")
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                     "1024")
    ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def _probe_decoder(folder: Path, onnx_path: Path, latent_name: str,
                   extra_inputs: tuple[str, ...]) -> tuple[int, int] | str:
    """(samples per frame, context frames per window) measured on the saved parts, or why not."""
    encoder = open_session(folder / "encoder.onnx", 1, level="ORT_DISABLE_ALL")
    decoder = open_session(folder / "decoder.onnx", 1, level="ORT_DISABLE_ALL")
    feeds = _probe_feeds(onnx_path, {i.name for i in encoder.get_inputs()})
    latent = encoder.run([latent_name], feeds)[0]
    if latent.ndim != 3 or latent.shape[0] != 1:
        return f"the latent has shape {latent.shape}, not [1, channels, frames]"
    needed = 3 * DECODE_WINDOW_FRAMES + 2 * max(_PAD_CANDIDATES)
    latent = np.tile(latent, (1, 1, -(-needed // latent.shape[-1])))
    extra = {name: feeds[name] for name in extra_inputs}
    whole = decoder.run(None, {latent_name: latent, **extra})[0].reshape(-1)
    hop, rest = divmod(whole.size, latent.shape[-1])
    if rest or hop == 0:
        return f"the decoder makes {whole.size} samples from {latent.shape[-1]} frames"
    worst = 0.0
    for pad in _PAD_CANDIDATES:
        windowed = decode_in_windows(decoder, latent_name, latent, extra, hop=hop, pad=pad,
                                     window=DECODE_WINDOW_FRAMES)
        worst = float(np.abs(windowed - whole).max())
        if worst < _ONE_STEP:
            return hop, pad
    return f"windowed decoding still differs by {worst:.2g} with {_PAD_CANDIDATES[-1]} frames of context"


def _probe_feeds(onnx_path: Path, inputs: set[str]) -> dict[str, np.ndarray]:
    id_map = json.loads(Path(f"{onnx_path}.json").read_text(encoding="utf-8"))["phoneme_id_map"]
    ids = [id_map["^"][0]]
    for phoneme in _PROBE_PHONEMES * 2:
        if phoneme in id_map:
            ids += [id_map[phoneme][0], *id_map.get("_", [0])[:1]]
    ids.append(id_map.get("$", [0])[0])
    feeds = {"input": np.array([ids], dtype=np.int64),
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


def _file_digest(path: Path) -> tuple[int, str]:
    digest = xxhash.xxh3_64()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return path.stat().st_size, digest.hexdigest()


def _ort_version() -> str:
    import onnxruntime as ort

    return str(ort.__version__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edged.prepared_voice",
                                     description="Prepare a Piper voice into FOLDER (edged does it itself).")
    parser.add_argument("onnx", type=Path)
    parser.add_argument("folder", type=Path)
    parser.add_argument("sha256")
    parser.add_argument("--precision", choices=("float32", "int8"), default="float32")
    args = parser.parse_args(argv)
    try:
        prepare(args.onnx, args.folder, args.sha256, args.precision)
    except Exception as err:  # the parent logs this one line and loads the voice directly
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
