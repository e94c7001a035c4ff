"""The Kokoro model prepared once (prepare.py, a child process) into `<cache.dir>/models/`:
an encoder and a decoder saved optimized, so loading skips ONNX Runtime's graph optimizations,
and a decoder that runs on windows (piper/windows.SplitModel through packing.py): the first
sound waits for the encoder and a short window, not the whole piece, and the activations are a
window's, not a piece's.

The folder is keyed by the model's sha256; a new onnxruntime, another CPU or a file failing its
checksum prepares it again. When preparing fails, the model runs whole (as before).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..onnx import open_session
from ..piper.prepared import (
    FORMAT,
    MODELS_DIR_NAME,
    StatusLine,
    cpu_signature,
    files_intact,
    ort_version,
    read_manifest,
    run_preparer,
)
from ..piper.windows import SplitModel, largest_window
from .packing import PACKED, PackedDecoder, PackedEncoder, Windowed

FIRST_WINDOW_FRAMES: Final = 12
"""An announcement's first window: 0.3 s of audio (a frame is 25 ms). Its decoder call costs
about 0.2 s here beside the encoder's 0.05-0.15 s; the next windows double from there."""


@dataclass(frozen=True)
class PreparedKokoro:
    folder: Path
    windowed: tuple[Windowed, ...]
    extra_inputs: tuple[str, ...]
    hop: int
    pad: int
    kb_per_frame: float

    def open(self, threads: int, *, lanes: int = 1, memory_mb: int = 512) -> SplitModel:
        """The encoder on `threads` intra-op threads; the decoder on one when windows are decoded
        on `lanes` > 1 workers at once (two windows on one thread each: 3.1 s for a 7.6 s line
        here, against 3.6 s one after the other on two threads)."""
        def session(name: str, count: int) -> Any:
            return open_session(self.folder / name, count, level="ORT_DISABLE_ALL")

        return SplitModel(PackedEncoder(session("encoder.onnx", threads), self.windowed),
                          PackedDecoder(session("decoder.onnx", 1 if lanes > 1 else threads),
                                        self.windowed),
                          latent=PACKED, extra_inputs=self.extra_inputs, hop=self.hop,
                          pad=self.pad, largest=self.largest_window(lanes, memory_mb))

    def largest_window(self, lanes: int, memory_mb: int) -> int:
        return largest_window(memory_mb, lanes, self.kb_per_frame, self.pad)

    def describe(self, lanes: int = 1, memory_mb: int = 512) -> str:
        return (f"encoder + decoder in windows of up to {self.largest_window(lanes, memory_mb)} "
                f"frames (+{self.pad} context, {lanes} at once)")


def prepared_folder(cache_dir: Path, model_path: Path, sha256: str) -> Path:
    return cache_dir / MODELS_DIR_NAME / f"{model_path.stem}-prepared-{sha256[:16]}"


def read_prepared(folder: Path, sha256: str) -> PreparedKokoro | None:
    """The prepared model in `folder`, or None when it is missing, stale or damaged."""
    manifest = read_manifest(folder)
    try:
        if (manifest["format"], manifest["kind"], manifest["onnxruntime"],
                manifest["source_sha256"], manifest["cpu"]) != (
                FORMAT, "kokoro", ort_version(), sha256, cpu_signature()):
            return None
        if not files_intact(folder, manifest):
            return None
        windowed = tuple(Windowed(str(w["name"]), int(w["axis"]), int(w["per_frame"]),
                                  tuple(int(d) for d in w["shape"]))
                         for w in manifest["windowed"])
        return PreparedKokoro(folder, windowed, tuple(str(n) for n in manifest["extra_inputs"]),
                              int(manifest["hop"]), int(manifest["pad"]),
                              float(manifest["decoder_kb_per_frame"]))
    except (KeyError, TypeError, ValueError, OSError):
        return None


def ensure_prepared(model_path: Path, sha256: str, cache_dir: Path,
                    status: StatusLine | None = None) -> PreparedKokoro | None:
    """The prepared Kokoro model, preparing it first when needed (about 15 s here, once per
    model, onnxruntime version and CPU); None when that fails."""
    folder = prepared_folder(cache_dir, model_path, sha256)
    prepared = read_prepared(folder, sha256)
    if prepared is not None:
        return prepared
    command = [sys.executable, "-m", "edged.voice.kokoro.prepare", str(model_path), str(folder),
               sha256]
    return run_preparer(command, model_path.name, folder, status,
                        lambda: read_prepared(folder, sha256), PreparedKokoro.describe)
