"""Warming the cache: pin `cache.phrases` and make the ones not on disk yet.

`edged cache warm` (Ansible runs it after deploying a voice) makes them with the voice
directly; the daemon warms in the background through the synthesis scheduler at the lowest
priority, so an announcement never waits for a pinned phrase.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..audio import Audio
from .phrase_cache import PhraseCache

_LOGGER = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
"""progress(done, total, text) after each phrase."""


@dataclass(frozen=True)
class WarmReport:
    total: int
    present: int
    synthesized: int
    failed: tuple[tuple[str, str], ...]
    """(phrase, error message) for each phrase that could not be synthesized."""
    elapsed_s: float
    degraded: str | None


def warm(cache: PhraseCache, pins: dict[str, str], synthesize: Callable[[str], Audio],
         progress: Progress | None = None) -> WarmReport:
    """Pin `pins` (key -> text, from `PhraseCache.pin_keys`; replacing the previous pin list)
    and make those not on disk with `synthesize(text)`."""
    start = time.monotonic()
    cache.set_pins(pins)  # first: an eviction while we synthesize must already spare them
    present = made = 0
    failed: list[tuple[str, str]] = []
    for done, (key, text) in enumerate(pins.items(), 1):
        if cache.present(key):
            present += 1
        else:
            try:
                audio = synthesize(text)
            except Exception as err:  # one bad phrase must not stop the other pins
                _LOGGER.warning("Cannot synthesize pinned phrase %r: %s", text, err)
                failed.append((text, str(err)))
            else:
                cache.put(key, audio, text=text, pinned=True)
                made += 1
        if progress is not None:
            progress(done, len(pins), text)
    elapsed = time.monotonic() - start
    return WarmReport(len(pins), present, made, tuple(failed), elapsed, cache.degraded)
