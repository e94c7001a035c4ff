"""Loaded voices within a memory budget (`limits.memory_mb`).

Every voice a request names resolves here, the configured one included: it is loaded at start
and pinned (never unloaded). Other voices are loaded when first asked for. When loading one more
would take the process past the budget, the least recently used ones are unloaded first. What a
voice costs is measured when it loads (RSS before/after plus its first inference) and
remembered, but never below the
estimate from the model size with the ratio measured for the default voice: a load that
reuses memory freed by an earlier one would otherwise look free.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from ..config import Config
from ..memory import release_freed_memory, rss_mb
from .find import find_voice
from .load import load_voice
from .piper import Voice

_LOGGER = logging.getLogger(__name__)

# en_US-joe-medium (63 MB .onnx): RSS +94 MB after load, +11 MB after a first short
# inference; so about 1.7x the file size before it has ever been measured.
_ESTIMATE_PER_FILE_MB: Final = 1.7


class VoicePool:
    """Thread-safe; `get(name)` returns a loaded Voice, loading and unloading as needed."""

    def __init__(
        self,
        config: Config,
        *,
        default: Voice | None = None,
        budget_mb: float | None = None,
        loader: Callable[[Config, str], Voice] = load_voice,
    ) -> None:
        self._config = config
        self._default = default
        """The configured voice, loaded before the daemon is ready; never unloaded."""
        self._budget_mb = float(budget_mb if budget_mb is not None else config.limits.memory_mb)
        self._loader = loader
        self._voices: OrderedDict[str, Voice] = OrderedDict()
        self._cost_mb: dict[str, float] = {}
        self._lock = threading.Lock()
        self.unloaded: list[str] = []
        """Names unloaded to stay within the budget, oldest first (for state and tests)."""

    @property
    def default_names(self) -> frozenset[str]:
        """What names the configured voice: its name in the config (maybe a path) and its own."""
        names = {self._config.voice.name}
        if self._default is not None:
            names.add(self._default.name)
        return frozenset(names)

    @property
    def names(self) -> frozenset[str]:
        """Every voice a request may name: the configured one and `voices`."""
        return self.default_names | set(self._config.voices)

    @property
    def choices(self) -> list[str]:
        """The voices a person picks from (Home Assistant, Wyoming): the configured voice by its
        own name, then `voices`, without repeats."""
        own = self._default.name if self._default is not None else self._config.voice.name
        return list(dict.fromkeys([own, *self._config.voices]))

    def is_default(self, voice: Voice) -> bool:
        return voice is self._default

    def peek(self, name: str | None = None) -> Voice | None:
        """The voice if it is loaded now, without loading it."""
        if name is None or name in self.default_names:
            if self._default is not None:
                return self._default
            name = self._config.voice.name
        with self._lock:
            return self._voices.get(name)

    @property
    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._voices)

    def cost_mb(self, name: str) -> float:
        """Measured cost of a voice, or the estimate from its file size."""
        path = find_voice(name, self._config.voice.dirs)
        estimate = path.stat().st_size / 1e6 * _ESTIMATE_PER_FILE_MB
        return max(self._cost_mb.get(name, 0.0), estimate)

    def get(self, name: str | None = None) -> Voice:
        """The voice named (None: the configured one), loading it first if needed; VoiceError."""
        if self._default is not None and (name is None or name in self.default_names):
            return self._default
        name = name or self._config.voice.name
        with self._lock:
            voice = self._voices.get(name)
            if voice is not None:
                self._voices.move_to_end(name)
                return voice
            self._make_room(name)
            before = rss_mb()
            voice = self._loader(self._config, name)
            voice.synthesize("Ready.")  # the first inference allocates the arena: count it too
            self._cost_mb[name] = rss_mb() - before
            self._voices[name] = voice
            _LOGGER.info("Voice %s loaded: +%.0f MB (process %.0f MB, budget %.0f MB)",
                         name, self._cost_mb[name], rss_mb(), self._budget_mb)
            return voice

    def _make_room(self, name: str) -> None:
        need = self.cost_mb(name)
        while self._voices and rss_mb() + need > self._budget_mb:
            victim, _voice = self._voices.popitem(last=False)
            del _voice
            release_freed_memory()
            self.unloaded.append(victim)
            _LOGGER.warning(
                "Unloaded voice %s (least recently used) to load %s within limits.memory_mb=%.0f;"
                " process now %.0f MB", victim, name, self._budget_mb, rss_mb())
        if rss_mb() + need > self._budget_mb:
            _LOGGER.warning("Loading voice %s (~%.0f MB) passes limits.memory_mb=%.0f even with"
                            " no other voice loaded", name, need, self._budget_mb)
