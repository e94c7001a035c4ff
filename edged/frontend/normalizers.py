"""The normalizer of each language: text as written -> text its phonemizer reads well."""

from __future__ import annotations

from collections.abc import Callable

from .chinese import NORMALIZER_VERSION as _ZH_VERSION
from .chinese import normalize_chinese
from .japanese import NORMALIZER_VERSION as _JA_VERSION
from .japanese import normalize_japanese
from .korean import NORMALIZER_VERSION as _KO_VERSION
from .korean import normalize_korean
from .normalize import NORMALIZER_VERSION, normalize


def normalizer_for(language: str, date_order: str = "mdy") -> tuple[Callable[[str], str], str]:
    """(normalize, version) for one of our language codes; other languages get English's."""
    if language in ("zh", "yue"):
        return (lambda text: normalize_chinese(text, language)), _ZH_VERSION
    if language == "ja":
        return normalize_japanese, _JA_VERSION
    if language == "ko":
        return normalize_korean, _KO_VERSION
    return (lambda text: normalize(text, date_order=date_order)), NORMALIZER_VERSION
