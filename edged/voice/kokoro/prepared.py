"""The Kokoro model prepared once (prepare.py, a child process) into `<cache.dir>/models/`:
an encoder and a decoder saved optimized, so loading skips ONNX Runtime's graph optimizations,
run by piper/windows.SplitModel through packing.py (the next piece's encoder on a spare worker
while a piece is decoded). With `voice.kokoro_head_window` the first piece's head is decoded
apart, so the first words wait for the encoder and the head, not the whole piece.

The folder is keyed by the model's sha256; a new onnxruntime, another CPU or a file failing its
checksum prepares it again. When preparing fails, the model runs whole (as before).
"""

from __future__ import annotations

import importlib.util
import logging
import math
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from ..backend import KOKORO_PREFIX
from ..catalog.hashes import HASH_MEMO_NAME, file_sha256
from ..errors import VoiceError
from ..onnx import Arena, open_session
from ..piper.prepared import (
    FORMAT,
    MODELS_DIR_NAME,
    StatusLine,
    cpu_signature,
    files_intact,
    ort_version,
    read_manifest,
    run_preparer,
)
from ..piper.windows import SplitModel
from . import assets
from .packing import PACKED, GeneratorApart, Pace, PackedDecoder, PackedEncoder, Windowed

_LOGGER = logging.getLogger(__name__)
_checked: dict[Path, PreparedKokoro] = {}
"""Prepared folders (keyed by the model's sha256) whose files this process has checked."""
_ANY_STYLE: Final = "jf_alpha"
"""A Kokoro voice whose cost is the model's (every Kokoro voice shares it)."""

RATE_HZ: Final = 24000
_WHOLE: Final = 1 << 30
FIRST_WINDOW_FRAMES: Final = 12
"""A head of at least 0.3 s of audio (a frame is 25 ms)."""
_MARGIN: Final = 1.5
"""On the decoder's measured speed, for the load of a busy daemon."""
HEAD_AT_MOST: Final = 0.5
"""The largest share of its first piece a head may take; a slower decoder decodes pieces whole."""
HEAD_SAMPLED_FRAMES: Final = 24
"""Frames of the rest of the first piece, evenly spread, decoded with its head (and dropped), so
that the head's generator normalizes over a sample of the whole piece: its level and sound come
close to the whole piece's (band distance of the head's frames, dev lines zh / ja / en: 2.87 /
3.12 / 2.18 dB alone, 1.69 / 1.24 / 1.05 with 24 such frames, 2.0 / 1.66 / 1.27 with 16; 24
frames as 3 runs of 8 the same), and distillmos rates the lines as whole pieces
(docs/languages.md, "Prepared Kokoro"). They cost first audio 24 frames of the decoder (0.1 s
here)."""
TAPS_PER_PRODUCT: Final = 4
"""The decoder's integer convolutions as matrix products (prepare/intconv.py) take this many
kernel taps side by side in one product: the decoder, bit-identical either way, ran about a
tenth faster than with one product per tap (figures in docs/architecture.md, "Prepared
Kokoro"), its peak memory the same. A cache whose decoder's rewrite was made one tap a product
(no `taps_per_product` in its manifest), kept or not (a CPU where ConvInteger measured faster
than that form may not find it faster than this one), is prepared again once."""


@dataclass(frozen=True)
class PreparedKokoro:
    folder: Path
    windowed: tuple[Windowed, ...]
    extra_inputs: tuple[str, ...]
    hop: int
    pad: int
    kb_per_frame: float
    s_per_frame: float
    """A decoder frame's time on two threads, measured when prepared."""
    decoder_rewrite: str = "none"
    """"intconv": the decoder's integer convolutions run as matrix products (faster here)."""
    generator: dict[str, Any] | None = None
    """The decoder cut before its generator (generator.py: front.onnx + generator.onnx), or None
    (decoder.onnx: a graph that did not cut exactly)."""

    def pace(self, threads: int) -> Pace:
        """The decoder's speed, as prepared, until this process times it."""
        return Pace(self.s_per_frame * 2 / min(2, max(1, threads)))

    def open(self, threads: int, *, head_window: bool = False,
             arena: Arena = "shared", pace: Pace | None = None) -> SplitModel:
        """Both sessions on `threads` intra-op threads. Each piece is one decoder call (the
        decoder normalizes over what it is given: a piece in windows is not the piece, see
        split.py), but the next piece's encoder runs on a spare worker meanwhile; `head_window`:
        the first piece's head apart first (`head_frames`, on `pace`); `arena`: onnx.Arena."""
        def session(name: str) -> Any:
            return open_session(self.folder / name, threads, level="ORT_DISABLE_ALL", arena=arena)

        names = ("generator.onnx", "encoder.onnx", "front.onnx") if self.generator is not None \
            else ("decoder.onnx", "encoder.onnx")
        # Opened two at a time: ONNX Runtime packs a session's weights with the GIL released
        # (the three here, idle: 0.27 s one after the other, 0.20 s so).
        with ThreadPoolExecutor(2, thread_name_prefix="edged-kokoro-open") as pool:
            opened = dict(zip(names, pool.map(session, names), strict=True))
        pace = pace or self.pace(threads)
        if self.generator is None:
            decoder = PackedDecoder(opened["decoder.onnx"], self.windowed, pace=pace)
        else:
            by_name = {w.name: w for w in self.windowed}
            boundary = Windowed(str(self.generator["boundary"]), int(self.generator["axis"]),
                                int(self.generator["per_frame"]), ())
            decoder = PackedDecoder(None, self.windowed, GeneratorApart(
                opened["front.onnx"], opened["generator.onnx"], boundary,
                tuple(by_name[str(n)] for n in self.generator["time_inputs"])), pace)
        return SplitModel(PackedEncoder(opened["encoder.onnx"], self.windowed), decoder,
                          latent=PACKED, extra_inputs=self.extra_inputs, hop=self.hop,
                          pad=self.pad, largest=_WHOLE,
                          head=partial(self.head_frames, threads=threads, pace=pace)
                          if head_window else None, head_samples=HEAD_SAMPLED_FRAMES)

    def head_frames(self, frames: int, threads: int = 2, pace: Pace | None = None) -> int:
        """The head of a first piece of `frames`: the shortest whose audio lasts while the whole
        piece is decoded after it (no gap, with a margin for a busy daemon), at least
        FIRST_WINDOW_FRAMES; the decoder's speed as `pace` measured it in this process once it
        has, else as the preparer did. `frames` (no head: the piece whole) when that head would be
        over HEAD_AT_MOST of the piece (a decoder that slow, a Pi, saves little first-audio time
        with it and decodes the head's frames twice), or its call, with its context and
        HEAD_SAMPLED_FRAMES, about as long as the piece's."""
        per_frame = (pace or self.pace(threads)).s_per_frame * _MARGIN
        ratio = per_frame / (self.hop / RATE_HZ)  # decoder seconds per second of audio
        head = max(FIRST_WINDOW_FRAMES, math.ceil(frames * ratio))
        if ratio > HEAD_AT_MOST or head + self.pad + HEAD_SAMPLED_FRAMES >= frames:
            return frames  # its call would be about as long as the piece's
        return head

    def describe(self) -> str:
        convs = ", convolutions as matrix products" if self.decoder_rewrite == "intconv" else ""
        return f"encoder + decoder, optimized{convs} ({self.kb_per_frame:.0f} KB a decoder frame)"


def prepared_folder(cache_dir: Path, model_path: Path, sha256: str) -> Path:
    return cache_dir / MODELS_DIR_NAME / f"{model_path.stem}-prepared-{sha256[:16]}"


def read_prepared(folder: Path, sha256: str) -> PreparedKokoro | None:
    """The prepared model in `folder`, or None when it is missing, stale or damaged."""
    manifest = read_manifest(folder)
    try:
        if (manifest["format"], manifest["kind"], manifest["onnxruntime"],
                manifest["source_sha256"], manifest["cpu"]) != (
                FORMAT, "kokoro", ort_version(), sha256, cpu_signature()):
            return None
        if not files_intact(folder, manifest):
            return None
        decoder = manifest["rewrites"]["decoder"]  # absent: prepared before the rewrite was tried
        tried = decoder["chosen"] == "intconv" or "intconv" in decoder.get("variants", {})
        if tried and decoder.get("taps_per_product") != TAPS_PER_PRODUCT:
            return None  # its rewrite, kept or not, was measured in another form
        windowed = tuple(Windowed(str(w["name"]), int(w["axis"]), int(w["per_frame"]),
                                  tuple(int(d) for d in w["shape"]))
                         for w in manifest["windowed"])
        return PreparedKokoro(folder, windowed, tuple(str(n) for n in manifest["extra_inputs"]),
                              int(manifest["hop"]), int(manifest["pad"]),
                              float(manifest["decoder_kb_per_frame"]),
                              float(manifest["decoder_s_per_frame"]),
                              str(decoder["chosen"]),
                              # absent: prepared before the generator was cut apart
                              _generator(manifest["generator"]))
    except (KeyError, TypeError, ValueError, OSError):
        return None


def _generator(entry: Any) -> dict[str, Any] | None:
    if entry is None:
        return None
    if not isinstance(entry, dict) or {"boundary", "axis", "per_frame", "time_inputs"} - entry.keys():
        raise ValueError("generator: not what prepare.py writes")
    return entry


def ensure_prepared(model_path: Path, sha256: str, cache_dir: Path,
                    status: StatusLine | None = None) -> PreparedKokoro | None:
    """The prepared Kokoro model, preparing it first when needed (about 23 s here, once per
    model, onnxruntime version and CPU); None when that fails. Checked once per process (its
    files' xxh3: 91 MB), not again at the first Kokoro request after `prepare_ahead`."""
    folder = prepared_folder(cache_dir, model_path, sha256)
    prepared = _checked.get(folder) or read_prepared(folder, sha256)
    if prepared is None:
        command = [sys.executable, "-m", "edged.voice.kokoro.prepare", str(model_path),
                   str(folder), sha256]
        prepared = run_preparer(command, model_path.name, folder, status,
                                lambda: read_prepared(folder, sha256), PreparedKokoro.describe)
    if prepared is not None:
        _checked[folder] = prepared
    return prepared


def _mandarin_tables(cache_dir: Path) -> None:
    """Built once; a failure is logged here and tried again at the first Mandarin load."""
    if importlib.util.find_spec("jieba") is not None:
        from ...frontend.word_index import open_index

        open_index(cache_dir)
    if importlib.util.find_spec("pypinyin") is not None:
        from ...frontend.mapped_table import BUILD_ERRORS
        from ...frontend.pinyin_index import built_folder

        try:
            built_folder(cache_dir)
        except BUILD_ERRORS as err:
            _LOGGER.warning("pypinyin's tables: cannot build them in %s now (%s)", cache_dir, err)


def prepare_ahead(cache_dir: Path, fits: Callable[[str], str | None],
                  status: StatusLine | None = None) -> PreparedKokoro | None:
    """Prepare the Kokoro model before the daemon says it is ready (and at `edged cache warm`),
    so that the first request naming a Kokoro voice does not wait for it (about 23 s here,
    minutes on a Pi): when the model package is installed and a Kokoro voice would fit the
    memory budget (`fits`: LoadedVoices.fits; a board that cannot load Kokoro is not made to
    prepare it). With edged[zh], Mandarin's mapped tables too (frontend/word_index.py,
    pinyin_index.py: 2 s)."""
    if not assets.installed() or fits(f"{KOKORO_PREFIX}{_ANY_STYLE}") is not None:
        return None
    _mandarin_tables(cache_dir)
    try:
        path = assets.model_file(cache_dir)
        sha256 = file_sha256(path, cache_dir / HASH_MEMO_NAME)  # as load_kokoro: no rehash
        return ensure_prepared(path, sha256, cache_dir, status)
    except (OSError, VoiceError) as err:  # the first Kokoro request tries again, and says why
        _LOGGER.warning("Kokoro model: cannot prepare it now (%s)", err)
        return None
