"""Loaded voices within a memory budget (`limits.memory_mb`).

Every voice a request names resolves here, the configured one included: it is loaded at start
and pinned (never unloaded). Other voices are loaded when first asked for. When loading one more
would take the process past the budget, the least recently used ones are unloaded first. What a
voice costs is measured when it loads (RSS before/after plus its first inference) and
remembered, but never below the
estimate from the model size with the ratio measured for the default voice: a load that
reuses memory freed by an earlier one would otherwise look free.

Every backend goes through here. A Kokoro voice is estimated at the model's cost until some
voice holds the model (then at its style's 0.5 MB); an espeak-ng voice costs nothing. The
language router asks with `within_budget=True`: a voice that would not fit even with every
other unloaded is then refused (`OverBudget`) instead of loaded, and the router speaks that
segment with the next voice of the language's chain.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

from ..config import Config
from ..languages.codes import READY
from ..memory import release_freed_memory, rss_mb
from .backend import VoiceBackend, backend_of
from .catalog.find import find_voice
from .errors import VoiceError
from .load import load_voice
from .load_turns import LoadTurns

_LOGGER = logging.getLogger(__name__)

# en_US-joe-medium (63 MB .onnx): RSS +94 MB after load, +11 MB after a first short
# inference; so about 1.7x the file size before it has ever been measured.
_ESTIMATE_PER_FILE_MB: Final = 1.7
_KOKORO_MODEL_MB: Final = 300.0
"""Kokoro-82M int8: RSS +228 MB loaded, ~+300 MB after a first 100-token inference (measured
on 2 x86 cores; bench/results/languages.json)."""
_SMALL_VOICE_MB: Final = 1.0
RECLAIM_SHARE: Final = 0.75
"""Above this share of limits.memory_mb an idle daemon gives back what the arenas keep: below
it the memory is cheaper kept (the next announcement would allocate it again: page faults)."""


class OverBudget(VoiceError):
    """Loading the voice would pass `limits.memory_mb` even with every other voice unloaded."""


class WouldLoad(Exception):
    """`get` of a voice not loaded, on a thread inside `without_loads()`. Not a VoiceError: no
    fallback chain may take it for a voice that cannot speak."""


_loads_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar("edged_loads_allowed",
                                                                      default=True)


@contextmanager
def without_loads() -> Iterator[None]:
    """On this thread, `get` of a voice not loaded raises WouldLoad instead of loading (or
    waiting for a load): the network servers plan a request on a shared thread first and only
    one that needs a load on the planning threads, so four requests waiting for a load do not
    hold up one for a voice already loaded."""
    token = _loads_allowed.set(False)
    try:
        yield
    finally:
        _loads_allowed.reset(token)


class LoadedVoices:
    """Thread-safe; `get(name)` returns a loaded voice, loading and unloading as needed. Loads
    are one at a time, the waiting ones best rank first (load_turns.py); a voice loaded already,
    `fits`, `peek` and `reclaim` never wait for one."""

    def __init__(
        self,
        config: Config,
        *,
        default: VoiceBackend | None = None,
        budget_mb: float | None = None,
        loader: Callable[[Config, str], VoiceBackend] = load_voice,
        first_inference: Callable[[VoiceBackend], None] | None = None,
        load_rank: Callable[[], int] = lambda: 0,
    ) -> None:
        """`first_inference(voice)`: run a short text through a voice just loaded (its buffers
        are then counted in its cost); the daemon runs it on the synthesis scheduler, as every
        inference. None: here, on the caller's thread. `load_rank()`: the rank of the request a
        load is made for, asked on the loading thread (the daemon's: 0 for a critical request);
        waiting loads go best rank first."""
        self._config = config
        self._default = default
        """The configured voice, loaded before the daemon is ready; never unloaded."""
        self._budget_mb = float(budget_mb if budget_mb is not None else config.limits.memory_mb)
        self._loader = loader
        self._first_inference = first_inference or _synthesize_ready
        self._voices: OrderedDict[str, VoiceBackend] = OrderedDict()
        self._cost_mb: dict[str, float] = {}
        self._lock = threading.Lock()
        """Guards `_voices` and `_cost_mb`; held for no longer than a lookup."""
        self._turns = LoadTurns()
        """Held through a load (and the unloads that make room for it): one at a time."""
        self._load_rank = load_rank
        self._load_began_mb: float | None = None
        """The process's RSS when the load under way began."""

    @property
    def default_names(self) -> frozenset[str]:
        """What names the configured voice: its name in the config (maybe a path) and its own."""
        names = {self._config.voice.name}
        if self._default is not None:
            names.add(self._default.name)
        return frozenset(names)

    @property
    def names(self) -> frozenset[str]:
        """Every voice a request may name: the configured one, `voices` and `languages`'."""
        return self.default_names | set(self._config.voices) | self._config.languages.voices()

    @property
    def choices(self) -> list[str]:
        """The voices a person picks from (Home Assistant, Wyoming): the configured voice by its
        own name, then `voices`, without repeats."""
        own = self._default.name if self._default is not None else self._config.voice.name
        return list(dict.fromkeys([own, *self._config.voices]))

    @property
    def listed(self) -> list[str]:
        """The voices the network servers list (Wyoming's describe, HTTP's /api/voices):
        `choices`, then the voices `languages:` names."""
        return list(dict.fromkeys([*self.choices, *sorted(self._config.languages.voices())]))

    @property
    def budget_mb(self) -> float:
        return self._budget_mb

    def is_default(self, voice: VoiceBackend) -> bool:
        """Is `voice` the configured one (pinned, or loaded by its configured name)?"""
        if self._default is not None:
            return voice is self._default
        with self._lock:
            return self._voices.get(self._config.voice.name) is voice

    def peek(self, name: str | None = None) -> VoiceBackend | None:
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

    @property
    def loading(self) -> list[str]:
        """The voice being loaded, then those waiting, in the order they will load."""
        return self._turns.queue

    def cost_mb(self, name: str) -> float:
        """Measured cost of a voice, or the estimate from its file size (its backend)."""
        kind = backend_of(name)
        if kind == "espeak":
            estimate = _SMALL_VOICE_MB
        elif kind == "kokoro":
            from .kokoro.voice import model_loaded  # numpy only; the stacks load with a voice

            estimate = _SMALL_VOICE_MB if model_loaded() else _KOKORO_MODEL_MB
        else:
            path = find_voice(name, self._config.voice.dirs)
            estimate = path.stat().st_size / 1e6 * _ESTIMATE_PER_FILE_MB
        return max(self._cost_mb.get(name, 0.0), estimate)

    def get(self, name: str | None = None, *, within_budget: bool = False) -> VoiceBackend:
        """The voice named (None: the configured one), loading it first if needed; VoiceError.
        `within_budget`: OverBudget rather than load a voice that does not fit."""
        if self._default is not None and (name is None or name in self.default_names):
            return self._default
        name = name or self._config.voice.name
        if (voice := self._loaded(name)) is not None:
            return voice
        if not _loads_allowed.get():
            raise WouldLoad(name)
        # One load at a time, each measured with the others done, but the dictionary is free
        # meanwhile: a load can take minutes (a Kokoro model's first preparation on a Pi), and
        # a critical request for a voice already loaded, admission's `fits`, and the scheduler's
        # workers giving memory back (`reclaim`) must not wait for it. They did: a worker
        # blocked in `reclaim` while the load waited for a worker to run its first inference.
        rank = self._load_rank()
        if ahead := self._turns.queue:
            _LOGGER.info("Voice %s waits to be loaded (rank %d); before it in the queue: %s", name, rank,
                         ", ".join(ahead))
        with self._turns.take(name, rank):
            if (voice := self._loaded(name)) is not None:
                return voice  # the load this thread waited for was this voice's
            self._make_room(name, within_budget)
            before = self._load_began_mb = rss_mb()
            try:
                voice = self._loader(self._config, name)
                self._first_inference(voice)  # it allocates the arena: count it too
            finally:
                self._load_began_mb = None
            cost = rss_mb() - before
            with self._lock:
                self._cost_mb[name] = cost
                self._voices[name] = voice
            _LOGGER.info("Voice %s loaded: +%.0f MB (process %.0f MB, budget %.0f MB)",
                         name, cost, rss_mb(), self._budget_mb)
            return voice

    def _loaded(self, name: str) -> VoiceBackend | None:
        with self._lock:
            voice = self._voices.get(name)
            if voice is not None:
                self._voices.move_to_end(name)
            return voice

    def fits(self, name: str) -> str | None:
        """Why voice `name` cannot be loaded within the budget even with every other voice
        unloaded; None when it can (or is loaded, or is the configured one). A voice that is not
        installed is not this question's: it fails when it is loaded."""
        if self._default is not None and name in self.default_names:
            return None
        with self._lock:
            if name in self._voices:
                return None
        try:
            need = self.cost_mb(name)
        except VoiceError:
            return None
        return self._beyond_pinned(name, need)

    def _beyond_pinned(self, name: str, need: float) -> str | None:
        pinned = self._pinned_mb()
        if pinned + need <= self._budget_mb:
            return None
        return (f"voice {name} (~{need:.0f} MB) does not fit limits.memory_mb="
                f"{self._budget_mb:.0f} next to what cannot be unloaded ({pinned:.0f} MB)")

    def _make_room(self, name: str, within_budget: bool) -> None:
        need = self.cost_mb(name)
        if within_budget and (why := self._beyond_pinned(name, need)):
            raise OverBudget(why)
        while self._voices and rss_mb() + need > self._budget_mb:
            with self._lock:
                victim, _voice = self._voices.popitem(last=False)
            del _voice
            release_freed_memory()
            _LOGGER.warning(
                "Unloaded voice %s (least recently used) to load %s within limits.memory_mb=%.0f;"
                " process now %.0f MB", victim, name, self._budget_mb, rss_mb())
        if rss_mb() + need > self._budget_mb:
            if within_budget:
                raise OverBudget(f"voice {name} (~{need:.0f} MB) does not fit limits.memory_mb="
                                 f"{self._budget_mb:.0f}: the process uses {rss_mb():.0f} MB")
            _LOGGER.warning("Loading voice %s (~%.0f MB) passes limits.memory_mb=%.0f even with"
                            " no other voice loaded", name, need, self._budget_mb)

    def reclaim(self, share: float = RECLAIM_SHARE) -> bool:
        """When the process holds more than `share` of the budget: every loaded voice gives
        back what ONNX Runtime's arena kept from earlier peaks, then glibc what is free (the
        scheduler calls this when it goes idle after work, and with share 1 after each stream).
        True when it did."""
        if rss_mb() <= self._budget_mb * share:
            return False
        before = rss_mb()
        with self._lock:
            voices = [v for v in (self._default, *self._voices.values()) if v is not None]
        for voice in voices:
            voice.reclaim()
        release_freed_memory()
        _LOGGER.debug("Reclaimed %.0f MB after synthesis (process %.0f MB, budget %.0f MB)",
                      before - rss_mb(), rss_mb(), self._budget_mb)
        return True

    def _pinned_mb(self) -> float:
        """What stays whatever is unloaded: the process without its other voices, nor the one
        being loaded (what it has taken so far: `fits` answers during a load)."""
        rss, began = rss_mb(), self._load_began_mb
        with self._lock:
            unloadable = sum(self._cost_mb.get(n, 0.0) for n in self._voices)
        return rss - unloadable - (max(0.0, rss - began) if began is not None else 0.0)


def _synthesize_ready(voice: VoiceBackend) -> None:
    voice.synthesize(READY.get(voice.language, READY["en"]))
