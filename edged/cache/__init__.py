"""The phrase cache: keys, entry files, the shared folder, pinned phrases and their templates."""

from .folder import recorded_counters
from .phrase_cache import PhraseCache
from .phrases import expand_phrases
from .warm import WarmReport, warm

__all__ = ["PhraseCache", "WarmReport", "expand_phrases", "recorded_counters", "warm"]
