"""How much of the machine synthesis takes: intra-op threads per inference, decoder windows
decoded at once, and the synthesis scheduler's workers. One rule, one memory figure per worker,
read by voice loading (a voice's windows are sized for its lanes) and by the scheduler.

    inference_threads   `voice.threads`, or 2 on a machine with several usable cores, else 1
    window_lanes        windows decoded at once: usable cores, capped by voice.parallel_windows,
                        limits.synthesis_workers and one per MB_PER_WORKER of limits.memory_mb
    synthesis_workers   limits.synthesis_workers, or one per lane, or as many inferences of
                        inference_threads as the cores hold (again one per MB_PER_WORKER)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..config import Config

MB_PER_WORKER: Final = 200
"""Memory budget per worker (and per window lane): the windows decoded at once share an eighth of
`limits.memory_mb`, so more lanes on the same budget would make them too small to pay for their
context (at 400 MB: two lanes of about 90 frames of the default voice)."""


def usable_cores() -> int:
    """Cores this process may run on (under `taskset` or systemd's CPUAffinity= the machine's
    count overstates)."""
    return len(os.sched_getaffinity(0))


def inference_threads(config: Config) -> int:
    """`voice.threads`, or for 0 two when the process may use several cores, else one."""
    return config.voice.threads or min(2, usable_cores())


def window_lanes(config: Config) -> int:
    """Decoder windows of a piece decoded at once, one core and one intra-op thread each."""
    lanes = min(usable_cores(), config.voice.parallel_windows,
                config.limits.memory_mb // MB_PER_WORKER)
    if config.limits.synthesis_workers:
        lanes = min(lanes, config.limits.synthesis_workers)
    return max(1, lanes)


def auto_workers(cpu_count: int, threads_per_inference: int, memory_mb: int) -> int:
    by_cores = cpu_count // max(1, threads_per_inference)
    return max(1, min(by_cores, memory_mb // MB_PER_WORKER))


def synthesis_workers(config: Config) -> int:
    """The scheduler's workers: `limits.synthesis_workers`, or one per window lane, or as many
    inferences of `inference_threads` as the cores hold."""
    if config.limits.synthesis_workers:
        return config.limits.synthesis_workers
    lanes = window_lanes(config)
    if lanes > 1:
        return lanes
    return auto_workers(usable_cores(), inference_threads(config), config.limits.memory_mb)
