"""Loading a voice the way the config says: found by name, prepared once, its sessions opened."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..memory import keep_no_spare_memory
from .backend import ESPEAK_PREFIX, KOKORO_PREFIX, VoiceBackend, backend_of
from .catalog.find import find_voice
from .catalog.hashes import HASH_MEMO_NAME, file_sha256
from .onnx import Arena
from .piper.prepared import StatusLine, ensure_prepared
from .piper.voice import PiperVoice
from .sizing import inference_threads, window_lanes

if TYPE_CHECKING:
    from ..config import Config

_LOGGER = logging.getLogger(__name__)

_PREPARE_MIN_BYTES: Final = 1_000_000
"""Preparing pays off for real voices (0.59 -> 0.07 s session creation for the 63 MB default
voice); a model under 1 MB (no real voice is) loads in milliseconds as it is."""


def voice_folders(config: Config) -> tuple[Path, ...]:
    """Where voices are searched: `voice.dirs`, then `<cache.dir>/voices` (where `edged voices
    pull` puts them when no `voice.dirs` is set)."""
    return (*config.voice.dirs, config.cache.dir / "voices")


def load_voice(config: Config, name: str | None = None,
               status: StatusLine | None = None) -> VoiceBackend:
    """Load the configured voice (or `name`) of any backend with the config's synthesis
    options; VoiceError when it cannot."""
    name = name or config.voice.name
    kind = backend_of(name)
    if kind == "espeak":
        from .espeak import EspeakVoice

        return EspeakVoice(name.removeprefix(ESPEAK_PREFIX),
                           sentence_pause_ms=config.voice.sentence_pause_ms,
                           date_order=config.frontend.date_order)
    if kind == "kokoro":
        from .kokoro.voice import load_kokoro  # imports the Japanese/Mandarin stacks: only here

        return load_kokoro(name.removeprefix(KOKORO_PREFIX), cache_dir=config.cache.dir,
                           dirs=voice_folders(config), threads=inference_threads(config),
                           sentence_pause_ms=config.voice.sentence_pause_ms,
                           date_order=config.frontend.date_order,
                           hash_memo=config.cache.dir / HASH_MEMO_NAME,
                           prepare=config.voice.prepare,
                           head_window=config.voice.kokoro_head_window,
                           sleep_after_s=config.voice.sleep_after_s, status=status)
    return load_piper(config, name, status)


def load_piper(config: Config, name: str | None = None,
               status: StatusLine | None = None) -> PiperVoice:
    """Load the configured Piper voice (or `name`) with the config's synthesis options; `status`
    hears when it has to be prepared first (see prepared.py). VoiceError when it cannot."""
    path = find_voice(name or config.voice.name, config.voice.dirs)
    memo = config.cache.dir / HASH_MEMO_NAME
    prepared = None
    precision = config.voice.precision
    if not config.voice.prepare and precision != "float32":
        _LOGGER.info("voice.prepare: false: %s runs as float32 (voice.precision: %s needs a "
                     "prepared voice)", path.name, precision)
    if config.voice.prepare and path.stat().st_size >= _PREPARE_MIN_BYTES:
        try:
            config.cache.dir.mkdir(parents=True, exist_ok=True)  # for the memo, too
            prepared = ensure_prepared(path, file_sha256(path, memo), config.cache.dir, precision,
                                       status, threads=inference_threads(config),
                                       lanes=window_lanes(config))
        except OSError as err:  # e.g. cache.dir unwritable: speaking matters more
            _LOGGER.warning("Voice %s: cannot prepare it in %s (%s); loading it directly",
                            path.name, config.cache.dir, err.strerror or err)
    if not config.voice.memory_arena:
        keep_no_spare_memory()
    # A voice that sleeps gives its sessions' memory back only if their arenas are their own.
    arena: Arena = ("none" if not config.voice.memory_arena
                    else "own" if config.voice.sleep_after_s is not None else "shared")
    voice = PiperVoice.load(
        path,
        threads=inference_threads(config),
        max_phonemes=config.voice.max_phonemes,
        sentence_pause_ms=config.voice.sentence_pause_ms,
        date_order=config.frontend.date_order,
        prepared=prepared,
        lanes=window_lanes(config),
        memory_mb=config.limits.memory_mb,
        max_window=config.voice.max_window_frames,
        arena=arena,
        sleep_after_s=config.voice.sleep_after_s,
    )
    voice.hash_memo = memo
    return voice
