"""Languages: their codes, cutting mixed text into language segments, and choosing a voice for
each segment (the fallback chain)."""

from .codes import ALIASES, LANGUAGES, LanguageError, language_code
from .segment import Segment, check_tags, segment

__all__ = ["ALIASES", "LANGUAGES", "LanguageError", "Segment", "check_tags", "language_code",
           "segment"]
