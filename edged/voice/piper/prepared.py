"""A voice prepared once for fast start-up and bounded memory, kept in `<cache.dir>/models/`.

`prepare` (run as a child process, so its memory goes back to the system) splits the
Piper graph into encoder and decoder, has ONNX Runtime optimize each part once and measures the
context a decoder window needs; see docs/architecture.md, "Prepared voices". This module reads
what it wrote: loading a prepared voice skips ORT's graph optimizations (session creation
measured 0.07 s instead of 0.59 s for the default voice), and its decoder runs on windows.

The folder is keyed by the model's sha256 (and the precision); a new onnxruntime version or a
file failing its xxh3 checksum makes it be prepared again. When preparing fails, the voice is
loaded directly.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

import xxhash

from ...files import read_bounded
from ..onnx import Arena, open_session
from ..prepare.progress import run_followed
from .model import Model, WholeModel
from .windows import FlowPart, SplitModel, largest_window

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")

FORMAT: Final = 3
"""3: the model's inputs are in the manifest (a voice can start asleep: voice.sleep_after_s)."""
MODELS_DIR_NAME: Final = "models"
"""In cache.dir: one folder per prepared voice."""
MANIFEST: Final = "manifest.json"
_MANIFEST_MAX_BYTES: Final = 1 << 20
_PREPARE_TIMEOUT_S: Final = 600.0  # x86 about 6 s; a Pi Zero 2 W minutes (emulated: > 600 s)
_AFTER_PREPARING_S: Final = 60.0
"""What a start may still take once the voice is prepared (loading it, the rest of the start)."""


class StatusLine(Protocol):
    """Where start-up progress goes (notify.Notifier.status): a line, and maybe how long the
    next step may take."""

    def __call__(self, text: str, *, busy_s: float | None = None) -> None: ...


@dataclass(frozen=True)
class Flow:
    """A flow split off the encoder: what it reads, and the context its windows need."""

    inputs: tuple[str, ...]
    extra_inputs: tuple[str, ...]
    pad: int | None
    """None: its windows would not match the whole (an INT8 flow): it always runs whole."""


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
    kb_per_frame: float = 0.0
    """Decoder activation memory per latent frame of a window, measured when preparing."""
    flow: Flow | None = None
    """The flow, when it is a part of its own (flow.onnx)."""
    inputs: frozenset[str] = frozenset()
    """What the model reads (the encoder's inputs), known without opening a session."""

    def open(self, threads: int, *, lanes: int = 1, memory_mb: int = 400,
             max_window: int | None = None, arena: Arena = "shared") -> Model:
        """Sessions with `threads` intra-op threads; with `lanes` > 1 windows are decoded at once
        on that many workers, so the decoder gets one thread (each window one core). Decoder
        windows are sized for `memory_mb`, at most `max_window` frames; `arena`: see
        onnx.session_options."""
        # Optimized when prepared; optimizing again (ORT_ENABLE_ALL) cost 60-110 ms per start and
        # made inference no faster here (encoder 87 vs 79 ms, decoder window 47 vs 41 ms).
        def session(name: str, count: int) -> Any:
            return open_session(self.folder / name, count, level="ORT_DISABLE_ALL", arena=arena)

        if self.kind == "whole":
            return WholeModel(session("model.onnx", threads))
        flow = None
        if self.flow is not None:
            flow = FlowPart(session("flow.onnx", threads), self.flow.inputs, self.flow.extra_inputs,
                            self.flow.pad)
        return SplitModel(session("encoder.onnx", threads),
                          session("decoder.onnx", 1 if lanes > 1 else threads),
                          latent=self.latent, extra_inputs=self.extra_inputs, hop=self.hop,
                          pad=self.pad, largest=self.largest_window(lanes, memory_mb, max_window),
                          flow=flow)

    def largest_window(self, lanes: int, memory_mb: int, max_window: int | None = None) -> int:
        return largest_window(memory_mb, lanes, self.kb_per_frame, self.pad, max_window)

    def describe(self, lanes: int = 1, memory_mb: int = 400, max_window: int | None = None) -> str:
        int8 = ", INT8 weights" if self.precision == "int8" else ""
        if self.kind == "split":
            flow = ("" if self.flow is None else " + flow" if self.flow.pad is None
                    else f" + flow in windows (+{self.flow.pad} context)")
            largest = self.largest_window(lanes, memory_mb, max_window)
            return (f"encoder{flow} + decoder in windows of up to {largest} frames "
                    f"(+{self.pad} context, {lanes} at once){int8}")
        return f"whole graph{int8} ({self.note})" if self.note else f"whole graph{int8}"


def prepared_folder(cache_dir: Path, onnx_path: Path, sha256: str, precision: str = "float32") -> Path:
    stem = onnx_path.name.removesuffix(".onnx") + ("-int8" if precision == "int8" else "")
    return cache_dir / MODELS_DIR_NAME / f"{stem}-{sha256[:16]}"


def read_prepared(folder: Path, sha256: str, precision: str = "float32") -> PreparedModel | None:
    """The prepared model in `folder`, or None when it is missing, stale or fails a checksum."""
    manifest = read_manifest(folder)
    try:
        if (manifest["format"], manifest["onnxruntime"], manifest["source_sha256"],
                manifest.get("precision", "float32"), manifest.get("cpu")) != (
                FORMAT, ort_version(), sha256, precision, cpu_signature()):
            return None
        if not files_intact(folder, manifest):
            return None
        return PreparedModel(folder=folder, kind=manifest["kind"], latent=manifest.get("latent", ""),
                             extra_inputs=tuple(manifest.get("extra_inputs", ())),
                             hop=int(manifest.get("hop", 0)), pad=int(manifest.get("pad", 0)),
                             note=manifest.get("note", ""), precision=precision,
                             kb_per_frame=float(manifest.get("decoder_kb_per_frame", 0.0)),
                             flow=_flow(manifest.get("flow")),
                             inputs=frozenset(str(name) for name in manifest["inputs"]))
    except (KeyError, TypeError, ValueError, OSError):
        return None


def read_manifest(folder: Path) -> Any:
    """The folder's manifest as JSON, or None when it is missing or not JSON."""
    try:
        return json.loads(read_bounded(folder / MANIFEST, _MANIFEST_MAX_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return None


def files_intact(folder: Path, manifest: dict[str, Any]) -> bool:
    """Whether every file the manifest lists has its size and xxh3 (a damaged cache prepares
    again). KeyError/TypeError for a manifest without them."""
    for name, expected in manifest["files"].items():
        if file_digest(folder / name) != (expected["size"], expected["xxh3"]):
            _LOGGER.warning("Prepared model %s: %s fails its checksum; preparing it again",
                            folder.name, name)
            return False
    return True


def _flow(entry: Any) -> Flow | None:
    if entry is None:
        return None
    pad = entry.get("pad")
    return Flow(tuple(entry["inputs"]), tuple(entry.get("extra_inputs", ())),
                None if pad is None else int(pad))


def ensure_prepared(onnx_path: Path, sha256: str, cache_dir: Path, precision: str = "float32",
                    status: StatusLine | None = None, *, threads: int = 2,
                    lanes: int = 2, rewrites: bool = True) -> PreparedModel | None:
    """The prepared model for `onnx_path`, preparing it first when needed; None when that fails.

    `status` hears that preparing starts, and how long it may take (the daemon's STATUS= line,
    which extends systemd's start timeout by it: seconds here, minutes on a small Pi), then
    each stage as it starts; each stage's time is logged (prepare/progress.py). The
    graph rewrites are timed with `threads` for the encoder and one thread for the decoder when
    `lanes` > 1 (tune.py); a folder prepared for other settings is used as it is."""
    folder = prepared_folder(cache_dir, onnx_path, sha256, precision)
    prepared = read_prepared(folder, sha256, precision)
    if prepared is not None:
        return prepared
    command = [sys.executable, "-m", "edged.voice.prepare", str(onnx_path), str(folder), sha256,
               "--precision", precision, "--threads", str(threads),
               "--decoder-threads", str(1 if lanes > 1 else threads),
               *([] if rewrites else ["--no-rewrites"])]
    return run_preparer(command, onnx_path.name, folder, status,
                        lambda: read_prepared(folder, sha256, precision), PreparedModel.describe)


def run_preparer(command: list[str], label: str, folder: Path, status: StatusLine | None,
                 read: Callable[[], T | None], describe: Callable[[T], str]) -> T | None:
    """Run a preparing child (`command`), following its stages; what `read` finds in the
    folder after it, or None (logged) when it failed."""
    _LOGGER.info("Preparing voice %s (once per model and onnxruntime version)...", label)
    if status is not None:
        status(f"preparing voice {label} (once per model and onnxruntime version)",
               busy_s=_PREPARE_TIMEOUT_S + _AFTER_PREPARING_S)
    start = time.monotonic()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        code, stderr = run_followed(command, label, status, _PREPARE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        _LOGGER.warning("Voice %s: cannot prepare it (%s); loading it directly", label, err)
        return None
    prepared = read()
    if code != 0 or prepared is None:
        why = (stderr.strip().splitlines() or [f"exit status {code}"])[-1]
        _LOGGER.warning("Voice %s: cannot prepare it (%s); loading it directly", label, why)
        return None
    _LOGGER.info("Prepared voice %s in %.1f s: %s", label, time.monotonic() - start,
                 describe(prepared))
    return prepared


def cpu_signature() -> str:
    """The CPU a prepared graph was laid out for (ORT_ENABLE_ALL blocks 2-D convolutions by its
    vector width): its model and the instruction sets that change the kernels. Another CPU
    (a cache folder copied to other hardware) prepares the voice again."""
    import platform

    model, flags = platform.machine(), set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key in ("model name", "CPU part") and model == platform.machine():
                model = f"{model} {value}"
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    wanted = {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_tile",
              "asimd", "asimddp", "sve", "i8mm", "fphp", "bf16"}
    return " ".join([model, *sorted(flags & wanted)])


def file_digest(path: Path) -> tuple[int, str]:
    digest = xxhash.xxh3_64()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return path.stat().st_size, digest.hexdigest()


def ort_version() -> str:
    import onnxruntime as ort

    return str(ort.__version__)
