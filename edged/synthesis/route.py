"""Routing: each segment of a request to a voice of its language, along the fallback chain.

    chain("zh") -> [languages.zh, "kokoro:zm_yunjian", "espeak:cmn"]   (what is set/installed)
    chain("yue") -> [languages.yue, YUE_MIX, "kokoro:jm_kumo@yue", "espeak:yue"]

A Mandarin or Japanese segment holding English words (你的 Amazon 包裹, Amazon の荷物) is said by
its Kokoro style with an English one mixed in (`english_mix`, when that style is pulled).

A voice that is not installed, does not load, or would not fit `limits.memory_mb` (LoadedVoices
refuses it: OverBudget) is skipped for the next one, with one warning per voice and reason;
espeak-ng, last in every chain, always loads. A request naming a voice gets it for the segments
of that voice's language (for all of a text that is one segment, as before languages came).
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ..frontend.letters import has_english_words
from ..languages.codes import LANGUAGES
from ..languages.segment import SAYS_ENGLISH, segment

if TYPE_CHECKING:
    from ..config import Config
    from ..voice import LoadedVoices
    from ..voice.backend import VoiceBackend

_LOGGER = logging.getLogger(__name__)
YUE_MIX: Final = "kokoro:jm_kumo(7)+zm_yunjian(3)@yue"
"""Cantonese's voice: Kokoro's Japanese male style with a third of its Mandarin male one
(docs/languages.md: the judge followed it best); it needs `edged voices pull zm_yunjian`."""
NEURAL: Final = {"zh": ("kokoro:zm_yunjian",), "ja": ("kokoro:jf_alpha",),
                 "ko": ("kokoro:jm_kumo@ko",), "yue": (YUE_MIX, "kokoro:jm_kumo@yue")}
"""The neural voices a language uses when the config names none (the first installed)."""
ENGLISH_STYLE: Final = {"m": "am_michael", "f": "af_heart"}
"""The English style, by the voice's gender, that a Mandarin or Japanese sentence holding English
words (你的 Amazon 包裹) is said with, mixed in (`english_mix`): the recognizer wrote
its English words in letters and heard them in its English pass more often (zh+en development
lines: CJK part 0.104 -> 0.071, English words missed 20 -> 15 of 35; docs/languages.md, stop
45). It needs `edged voices pull am_michael` (af_heart); without it, the voice's style alone."""
ENGLISH_SHARE: Final = {"z": (7, 3), "j": (5, 5)}
"""(the voice's weight, the English style's) by the voice's language (z: Mandarin, j: Japanese),
as the judge heard best on the development lines: Mandarin 7:3 (CJK part 0.071; 5:5 0.087, 4:6
0.096), Japanese 5:5 (0.168 and 6 of 26 English words missed; 7:3 0.198 and 9, 4:6 0.205 and 4)."""
_CJK_STYLE: Final = re.compile(r"kokoro:(([zj])([mf])_[a-z0-9]+)")
ESPEAK: Final = {"en": "espeak:en-us", "zh": "espeak:cmn", "yue": "espeak:yue",
                 "ja": "espeak:ja", "ko": "espeak:ko"}


@dataclass(frozen=True)
class Routed:
    language: str
    text: str
    voice: VoiceBackend


class Router:
    """Thread-safe."""

    def __init__(self, config: Config, voices: LoadedVoices) -> None:
        self._config = config
        self._voices = voices
        self._warned: set[tuple[str, type[Exception]]] = set()
        self._lock = threading.Lock()

    def chain(self, language: str) -> list[str]:
        """The voices that may speak `language`, best first."""
        configured = getattr(self._config.languages, language, None) if language in LANGUAGES \
            else None
        if language == "en" or language not in LANGUAGES:
            configured = configured or self._config.voice.name
        fallback = ESPEAK.get(language, ESPEAK["en"])
        names = list(dict.fromkeys(
            n for n in (configured, *NEURAL.get(language, ()), fallback) if n))
        return names[:names.index(fallback) + 1]  # configured espeak-ng: nothing after it

    def voices(self) -> set[str]:
        """Every voice some language's chain may speak with (espeak-ng's for each)."""
        return {name for language in LANGUAGES for name in self.chain(language)}

    def route(self, text: str, *, voice: str | None = None,
              language: str | None = None) -> list[Routed]:
        """Segments of `text` with their voices (loaded); LanguageError, VoiceError."""
        segments = segment(text, han=self._config.languages.han, language=language)
        asked = self._voices.get(voice) if voice is not None else None
        if asked is not None and len(segments) == 1:
            return [Routed(segments[0].language, segments[0].text, asked)]
        routed: list[Routed] = []
        for s in segments:
            if asked is not None and asked.language == s.language:
                routed.append(Routed(s.language, s.text, asked))
            else:
                routed += self._routed(s.language, s.text)
        return routed

    def _routed(self, language: str, text: str) -> list[Routed]:
        english = language in SAYS_ENGLISH and has_english_words(text)
        voice = self.voice_for(language, english_words=english)
        if english and language == "ja" and voice.backend != "kokoro":
            # espeak-ng's Japanese spells an English word letter by letter (Amazon: A M A Z O N):
            # the English voice says them, as it did before Japanese kept them
            return [Routed(s.language, s.text, self.voice_for(s.language))
                    for s in segment(text, han=language, language=language, says_english=())]
        return [Routed(language, text, voice)]

    def voice_for(self, language: str, *, english_words: bool = False) -> VoiceBackend:
        """The first voice of `language`'s chain that loads; with `english_words`, each voice's
        `english_mix` tried before it (only the voice that speaks is loaded: a sentence with
        English words no longer loads the plain voice first)."""
        from ..voice import VoiceError

        chain = self.chain(language)
        if english_words:
            chain = [n for name in chain for n in (english_mix(name), name) if n is not None]
        for name in chain[:-1]:
            try:
                return self._voices.get(name, within_budget=True)
            except VoiceError as err:
                self._warn_once(language, name, err, chain)
        return self._voices.get(chain[-1])

    def _warn_once(self, language: str, name: str, err: Exception, chain: list[str]) -> None:
        # Once per voice and kind of reason: the message carries figures (MB) that move.
        with self._lock:
            if (name, type(err)) in self._warned:
                return
            self._warned.add((name, type(err)))
        following = chain[chain.index(name) + 1]
        _LOGGER.warning("Language %s: voice %s not used (%s); falling back to %s", language,
                        name, err, following)


def english_mix(name: str) -> str | None:
    """The voice that says a Mandarin or Japanese sentence holding English words, for that
    language's voice `name`: kokoro:zm_yunjian -> kokoro:zm_yunjian(7)+am_michael(3),
    kokoro:jf_alpha -> kokoro:jf_alpha(5)+af_heart(5); None for any other voice (a mix, or a
    style made to speak another language, is the user's own choice: left as it is)."""
    m = _CJK_STYLE.fullmatch(name)
    if m is None:
        return None
    own, english = ENGLISH_SHARE[m[2]]
    return f"kokoro:{m[1]}({own})+{ENGLISH_STYLE[m[3]]}({english})"
