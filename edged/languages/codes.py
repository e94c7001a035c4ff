"""The language codes edged speaks, everywhere the same: config, tags, requests, events."""

from __future__ import annotations

from typing import Final

LANGUAGES: Final = ("en", "zh", "yue", "ja", "ko")
"""en English (and any Latin-script text), zh Mandarin, yue Cantonese, ja Japanese, ko Korean."""
HAN_LANGUAGES: Final = ("zh", "yue", "ja")
"""Languages written with Han characters: what Han text without Kana may mean."""
ALIASES: Final = {"jp": "ja", "cmn": "zh", "zh-cn": "zh", "zh-hk": "yue", "kr": "ko"}
"""Other spellings accepted on input (the seed's `<|jp|>`); events always carry the code."""
READY: Final = {"en": "Ready.", "zh": "好的。", "yue": "好。", "ja": "はい。", "ko": "네."}
"""A short first utterance per language: a voice's first inference allocates its buffers."""


class LanguageError(ValueError):
    """An unknown language code or tag; the message names it and the known codes."""


def language_code(value: str, where: str = "language") -> str:
    """The code for `value` (case-insensitive, aliases resolved); LanguageError otherwise."""
    code = value.strip().lower().replace("_", "-")
    code = ALIASES.get(code, code)
    if code not in LANGUAGES:
        shown = value if len(value) <= 20 else value[:17] + "..."
        raise LanguageError(f"{where}: unknown language {shown!r}; known: "
                            f"{', '.join(LANGUAGES)} (and {', '.join(sorted(ALIASES))})")
    return code


def locale_language(locale: str) -> str:
    """A voice's locale (`en_US`, `zh_CN`, `ja`) as one of our codes; other languages keep
    their own prefix (a German Piper voice stays `de`)."""
    prefix = locale.replace("-", "_").split("_")[0].lower()
    if locale.lower().replace("-", "_") in ("zh_hk", "yue"):
        return "yue"
    return ALIASES.get(prefix, prefix)
