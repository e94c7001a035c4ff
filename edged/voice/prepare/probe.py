"""What preparing a voice measures on its saved parts (prepare.py), on a fixed probe at noise 0.

- the decoder: samples per latent frame, the context (frames either side) a window needs to
  match the whole decode to within one 16-bit step, and its activation memory per frame;
- the flow, when it is split off: the context a window of z_p needs for the same z as the
  whole flow (its receptive field: a few convolutions deep, about 32 frames for a Piper voice).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from ...memory import rss_mb
from ..piper.config import read_piper_config
from ..piper.windows import DECODE_WINDOW_FRAMES, decode_in_windows

_PAD_CANDIDATES: Final = (2, 4, 6, 8, 12, 16, 24, 32)
_FLOW_PAD_CANDIDATES: Final = (8, 16, 24, 32, 40, 48, 64)
_FLOW_HEAD: Final = 64  # frames of the flow's first window in the probe
_FLOW_EXACT: Final = 1e-5  # a window's z equals the whole's (float rounding only)
_MEASURE_FRAMES: Final = (32, 224)  # window sizes whose activations are compared
_ONE_STEP: Final = 1 / 32768  # windowed and whole decode must agree to within one 16-bit step
# Phonemes to probe the encoder with (any will do: the receptive fields are what is measured).
_PROBE_PHONEMES: Final = "ðə kwˈɪk bɹˈaʊn fˈɑːks dʒˈʌmps ˌoʊvɚ ðə lˈeɪzi dˈɑːɡ, "


@dataclass(frozen=True)
class Layout:
    """Where a Piper graph was split (split.SplitGraph without the graphs)."""

    latent: str
    extra: tuple[str, ...]
    """The decoder's inputs besides the latent (sid)."""
    flow_inputs: tuple[str, ...] = ()
    """The encoder's outputs when the flow is a part of its own (z_p, y_mask)."""
    flow_extra: tuple[str, ...] = ()


def probe_feeds(onnx_path: Path, inputs: set[str]) -> dict[str, np.ndarray]:
    id_map = read_piper_config(Path(f"{onnx_path}.json")).phoneme_id_map
    ids = [id_map["^"][0]]
    for phoneme in _PROBE_PHONEMES * 2:
        if phoneme in id_map:
            ids += [id_map[phoneme][0], *id_map.get("_", [0])[:1]]
    ids.append(id_map.get("$", [0])[0])
    feeds: dict[str, np.ndarray] = {"input": np.array([ids], dtype=np.int64),
             "input_lengths": np.array([len(ids)], dtype=np.int64),
             "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32)}  # no noise: repeatable
    if "sid" in inputs:
        feeds["sid"] = np.array([0], dtype=np.int64)
    return feeds


def encoder_latent(encoder: Any, flow: Any | None, layout: Layout,
                   feeds: dict[str, np.ndarray]) -> np.ndarray:
    """z of the probe: the encoder's, or the flow's of the encoder's outputs."""
    if flow is None:
        return np.asarray(encoder.run([layout.latent], feeds)[0])
    made = dict(zip(layout.flow_inputs, encoder.run(list(layout.flow_inputs), feeds), strict=True))
    return np.asarray(flow.run([layout.latent], {**made, **_extra(layout.flow_extra, feeds)})[0])


def probe_decoder(decoder: Any, latent: np.ndarray, layout: Layout,
                  feeds: dict[str, np.ndarray]) -> tuple[int, int, float] | str:
    """(samples per frame, context frames per window, activation KB per window frame), or why
    the decoder cannot be run on windows."""
    if latent.ndim != 3 or latent.shape[0] != 1:
        return f"the latent has shape {latent.shape}, not [1, channels, frames]"
    needed = 3 * DECODE_WINDOW_FRAMES + 2 * max(_PAD_CANDIDATES)
    latent = np.tile(latent, (1, 1, -(-needed // latent.shape[-1])))
    extra = _extra(layout.extra, feeds)
    kb_per_frame = _activation_kb_per_frame(decoder, layout.latent, latent, extra)
    whole = decoder.run(None, {layout.latent: latent, **extra})[0].reshape(-1)
    hop, rest = divmod(whole.size, latent.shape[-1])
    if rest or hop == 0:
        return f"the decoder makes {whole.size} samples from {latent.shape[-1]} frames"
    worst = 0.0
    for pad in _PAD_CANDIDATES:
        windowed = np.concatenate(list(decode_in_windows(decoder, layout.latent, latent, extra,
                                                         hop=hop, pad=pad,
                                                         window=DECODE_WINDOW_FRAMES)))
        worst = float(np.abs(windowed - whole).max())
        if worst < _ONE_STEP:
            return hop, pad, kb_per_frame
    return f"windowed decoding still differs by {worst:.2g} with {_PAD_CANDIDATES[-1]} frames of context"


def probe_flow(encoder: Any, flow: Any, layout: Layout, feeds: dict[str, np.ndarray]) -> int | str:
    """Context frames a window of the flow's inputs needs (a first window of _FLOW_HEAD frames
    and the rest, each with that context, give the whole flow's z), or why none does."""
    made = encoder.run(list(layout.flow_inputs), feeds)
    needed = 2 * (_FLOW_HEAD + max(_FLOW_PAD_CANDIDATES))
    frames = made[0].shape[-1]
    if any(m.ndim != 3 or m.shape[-1] != frames for m in made):
        return f"the flow's inputs have shapes {[m.shape for m in made]}, not [1, C, frames]"
    tiled = [np.tile(m, (1, 1, -(-needed // frames))) for m in made]
    extra = _extra(layout.flow_extra, feeds)

    def flow_of(lo: int, hi: int) -> np.ndarray:
        inputs = {n: np.ascontiguousarray(m[..., lo:hi]) for n, m in zip(layout.flow_inputs, tiled,
                                                                          strict=True)}
        return np.asarray(flow.run([layout.latent], {**inputs, **extra})[0])

    whole = flow_of(0, tiled[0].shape[-1])
    worst = 0.0
    for pad in _FLOW_PAD_CANDIDATES:
        if pad > _FLOW_HEAD:
            break
        head = flow_of(0, _FLOW_HEAD + pad)[..., :_FLOW_HEAD]
        rest = flow_of(_FLOW_HEAD - pad, whole.shape[-1])[..., pad:]
        worst = max(float(np.abs(head - whole[..., :_FLOW_HEAD]).max()),
                    float(np.abs(rest - whole[..., _FLOW_HEAD:]).max()))
        if worst <= _FLOW_EXACT:
            return pad
    return (f"the flow's windows differ from the whole by {worst:.2g} even with "
            f"{_FLOW_PAD_CANDIDATES[-1]} frames of context: it runs whole")


def _extra(names: tuple[str, ...], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: feeds[name] for name in names}


def _activation_kb_per_frame(decoder: Any, latent_name: str, latent: np.ndarray,
                             extra: dict[str, np.ndarray]) -> float:
    """About 220 KB per frame for the default voice; it sizes the windows from the memory
    budget (windows.largest_window)."""
    return window_cost(decoder, lambda frames: {
        latent_name: np.ascontiguousarray(latent[..., :frames]), **extra}, _MEASURE_FRAMES)[0]


def window_cost(decoder: Any, feeds_for: Callable[[int], dict[str, np.ndarray]],
                sizes: tuple[int, int]) -> tuple[float, float]:
    """(KB the resident set grows by, seconds) per frame of a decoder window: a fresh session
    decodes a small window (its weights are read), then a larger one; ONNX Runtime's arena
    keeps what it took, so the difference is the larger window's activations. `feeds_for(n)`:
    the decoder's inputs for a window of n frames."""
    small, large = sizes
    decoder.run(None, feeds_for(small))
    before, start = rss_mb(), time.perf_counter()
    decoder.run(None, feeds_for(large))
    seconds = (time.perf_counter() - start) / large
    return round(max(0.0, (rss_mb() - before) * 1e6 / 1024 / (large - small)), 1), seconds
