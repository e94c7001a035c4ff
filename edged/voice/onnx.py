"""ONNX Runtime sessions for every voice: options (threads, no spinning, telemetry off), and
where their buffers come from (one arena shared by the process, one of their own, or none)."""

from __future__ import annotations

import contextlib
import functools
import threading
from pathlib import Path
from typing import Any, Literal

from ..memory import map_large_allocations
from .preempt import Stoppable

Arena = Literal["shared", "own", "none"]
"""Where a session's buffers come from: the one arena every session of the process shares;
an arena of its own, freed with the session (preparing measures what one decoder window takes;
a sleeping voice gives its memory back when it sleeps); or none, each buffer allocated and
freed (`voice.memory_arena: false`)."""


def session_options(threads: int, *, level: str = "ORT_ENABLE_ALL", arena: Arena = "shared") -> Any:
    import onnxruntime as ort

    _no_telemetry(ort)
    _fixed_mmap_threshold()
    shared_arena = arena == "shared"
    if shared_arena:
        _register_shared_arena(ort)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    # Memory patterns are planned and kept per input shape; every piece has a new length, so
    # they only grow the arena (peak RSS 192 -> 172 MB without them, and no slower).
    options.enable_mem_pattern = False
    options.log_severity_level = 3
    # Threads of the intra-op pool spin while idle by default: on a Pi that is a core burnt.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # One arena for every session of the process: the encoder's, the flow's and the decoder's
    # buffers (and another voice's) reuse the same memory instead of each keeping its own
    # peak (default voice, corpus twice, 2 workers: peak RSS 165 -> 158 MB, same CPU time).
    options.add_session_config_entry("session.use_env_allocators", "1" if shared_arena else "0")
    options.enable_cpu_mem_arena = arena != "none"
    return options


_ARENA_LOCK = threading.Lock()
_arena_registered = False


@functools.cache
def _no_telemetry(ort: Any) -> None:
    """ONNX Runtime (1.32 here) records telemetry events (a device id and a SQLite store under
    ~/.cache/Microsoft/DeveloperTools/.onnxruntime) meant for Microsoft; an offline daemon
    sends nothing anywhere, so none are recorded past the import."""
    with contextlib.suppress(AttributeError):  # builds without telemetry lack the call
        ort.disable_telemetry_events()


@functools.cache
def _fixed_mmap_threshold() -> None:
    """Blocks above 128 KB mapped apart and unmapped when freed, at a fixed threshold, in any
    process that runs a voice (Piper or Kokoro, arena or none): by default glibc raises it (up
    to 32 MB) each time such a block is freed, and then an arena's later regions and the numpy
    arrays around them come from the malloc heaps, which kept 15-40 MB after a load. Four long
    /api/tts at once, 3 rounds x 3 runs: after the idle reclaim 170.9 -> 144.5 MB, peak 215.5
    -> 195.4 MB, CPU a round the same (13.4 / 12.5 s); the corpus the same (peak 162 MB, 0.096 /
    0.098 CPU s a second of speech): bench/results/memory_after_load*.json,
    archive/synth-mmap-threshold-*.json."""
    map_large_allocations()


def _register_shared_arena(ort: Any) -> None:
    """The process-wide CPU arena the sessions share (registered once: a second registration
    is an error in ONNX Runtime). Growing by powers of two, as a session's own arena does:
    growing by what is asked kept more memory here (211 vs 158 MB)."""
    global _arena_registered
    with _ARENA_LOCK:
        if _arena_registered:
            return
        memory = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0,
                                   ort.OrtMemType.DEFAULT)
        ort.create_and_register_allocator(memory, ort.OrtArenaCfg(0, -1, -1, -1))
        _arena_registered = True


@functools.cache
def shrinking() -> Any:
    """Run options that give the arena's free chunks back to the system after the run: one tiny
    inference with them after heavy work returns what the arena kept at its peak (the default
    voice after four long streams at once: RSS 164 -> 118 MB, a 9 ms encoder run here)."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def open_session(path: Path | bytes, threads: int, *, level: str = "ORT_ENABLE_ALL",
                 arena: Arena = "shared") -> Any:
    import onnxruntime as ort

    model = path if isinstance(path, bytes) else str(path)
    options = session_options(threads, level=level, arena=arena)
    # Stoppable: a critical announcement may stop a scheduler worker's call (preempt.py).
    return Stoppable(ort.InferenceSession(model, sess_options=options,
                                          providers=["CPUExecutionProvider"]))
