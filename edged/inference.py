"""ONNX Runtime sessions for a voice: the whole Piper graph, or its encoder and a windowed decoder.

`SplitModel` runs the encoder on a piece's phonemes, then the decoder on windows of
`DECODE_WINDOW_FRAMES` latent frames, each with `pad` frames of context either side that are cut
off again. The decoder's receptive field is a few frames, so the joined windows equal the whole
decode to within one 16-bit step (checked for every voice when it is prepared), while its
activation memory stays that of one window whatever the sentence length.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np

DECODE_WINDOW_FRAMES: Final = 64
"""Latent frames per decoder call (x256 samples: 0.74 s at 22050 Hz). Measured on the default voice
with the longest corpus line: peak RSS 172 MB at 64, 190 MB at 128, 165 MB at 32 (but 1.4x slower)."""


class Model(Protocol):
    input_names: frozenset[str]

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Piper's feeds -> float32 samples, 1-D."""
        ...


def session_options(threads: int, *, level: str = "ORT_ENABLE_ALL") -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    # Memory patterns are planned and kept per input shape; every piece has a new length, so
    # they only grow the arena (peak RSS 192 -> 172 MB without them, and no slower).
    options.enable_mem_pattern = False
    options.log_severity_level = 3
    # Threads of the intra-op pool spin while idle by default: on a Pi that is a core burnt.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def open_session(path: Path | bytes, threads: int, *, level: str = "ORT_ENABLE_ALL") -> Any:
    import onnxruntime as ort

    model = path if isinstance(path, bytes) else str(path)
    return ort.InferenceSession(model, sess_options=session_options(threads, level=level),
                                providers=["CPUExecutionProvider"])


class WholeModel:
    def __init__(self, session: Any) -> None:
        self._session = session
        self.input_names = frozenset(i.name for i in session.get_inputs())

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self._session.run(None, feeds)[0].reshape(-1)


class SplitModel:
    def __init__(self, encoder: Any, decoder: Any, *, latent: str, extra_inputs: tuple[str, ...],
                 hop: int, pad: int, window: int = DECODE_WINDOW_FRAMES) -> None:
        self._encoder = encoder
        self._decoder = decoder
        self._latent = latent
        self._extra = extra_inputs
        self.hop = hop
        self.pad = pad
        self.window = window
        self.input_names = frozenset(i.name for i in encoder.get_inputs())

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        latent = self._encoder.run([self._latent], feeds)[0]
        extra = {name: feeds[name] for name in self._extra}
        return decode_in_windows(self._decoder, self._latent, latent, extra,
                                 hop=self.hop, pad=self.pad, window=self.window)


def decode_in_windows(decoder: Any, latent_name: str, latent: np.ndarray, extra: dict[str, np.ndarray],
                      *, hop: int, pad: int, window: int) -> np.ndarray:
    """Decode `latent` [1, C, frames] window by window; the pads are decoded and cut off."""
    frames = latent.shape[-1]
    out = np.empty(frames * hop, dtype=np.float32)
    for start in range(0, frames, window):
        end = min(frames, start + window)
        lo, hi = max(0, start - pad), min(frames, end + pad)
        feeds = {latent_name: np.ascontiguousarray(latent[..., lo:hi]), **extra}
        audio = decoder.run(None, feeds)[0].reshape(-1)
        skip = (start - lo) * hop
        out[start * hop:end * hop] = audio[skip:skip + (end - start) * hop]
    return out
