"""ONNX Runtime sessions for a voice: the whole Piper graph, or its encoder and a windowed decoder.

`SplitModel` runs the encoder on a piece's phonemes, then the decoder on windows of
`DECODE_WINDOW_FRAMES` latent frames, each with `pad` frames of context either side that are cut
off again. The decoder's receptive field is a few frames, so the joined windows equal the whole
decode to within one 16-bit step (checked for every voice when it is prepared), while its
activation memory stays that of one window whatever the sentence length.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np

DECODE_WINDOW_FRAMES: Final = 96
"""Most latent frames per decoder call (x256 samples: 1.1 s at 22050 Hz); a piece is cut into equal
windows of at most this. Measured over the corpus with the default voice (context 12 frames):
RTF 0.071 and peak RSS 172 MB at 96; 0.075-0.087 and 169 MB at 64; 0.070 and 186 MB at 128;
unwindowed 0.062 and 248 MB."""
FIRST_WINDOW_FRAMES: Final = 24
"""The first window of an announcement is this short (0.28 s of audio), so its first sound waits
for the encoder and a small decoder call only: first window 12 ms instead of 34 ms for the
corpus's first pieces (median 207 frames, 2 cores); the player needs the next window within
0.28 s, and it takes about 30 ms."""


class Model(Protocol):
    input_names: frozenset[str]

    def stream(self, feeds: dict[str, np.ndarray], *, first_window: int = 0) -> Iterator[np.ndarray]:
        """Piper's feeds -> float32 samples (1-D) in consecutive parts, each as soon as it is made;
        `first_window` > 0: the first part is at most that many latent frames (windowed models)."""
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

    def stream(self, feeds: dict[str, np.ndarray], *, first_window: int = 0) -> Iterator[np.ndarray]:
        yield self._session.run(None, feeds)[0].reshape(-1)


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

    def stream(self, feeds: dict[str, np.ndarray], *, first_window: int = 0) -> Iterator[np.ndarray]:
        latent = self._encoder.run([self._latent], feeds)[0]
        extra = {name: feeds[name] for name in self._extra}
        yield from decode_in_windows(self._decoder, self._latent, latent, extra, hop=self.hop,
                                     pad=self.pad, window=self.window, first=first_window)


def decode_in_windows(decoder: Any, latent_name: str, latent: np.ndarray, extra: dict[str, np.ndarray],
                      *, hop: int, pad: int, window: int, first: int = 0) -> Iterator[np.ndarray]:
    """Decode `latent` [1, C, frames] window by window, each with `pad` frames of context either
    side that are decoded and cut off again."""
    frames = latent.shape[-1]
    for start, end in window_bounds(frames, window, first):
        lo, hi = max(0, start - pad), min(frames, end + pad)
        feeds = {latent_name: np.ascontiguousarray(latent[..., lo:hi]), **extra}
        audio = decoder.run(None, feeds)[0].reshape(-1)
        skip = (start - lo) * hop
        yield audio[skip:skip + (end - start) * hop]


def window_bounds(frames: int, window: int, first: int = 0) -> list[tuple[int, int]]:
    """`frames` cut into the fewest equal windows of at most `window` (no short tail window:
    each window costs its context twice and one decoder call); with `first`, a first window of
    that many frames, then the rest so."""
    if 0 < first < frames:
        return [(0, first)] + [(first + a, first + b) for a, b in window_bounds(frames - first,
                                                                                window)]
    count = max(1, -(-frames // window))
    edges = [round(i * frames / count) for i in range(count + 1)]
    return list(zip(edges, edges[1:], strict=False))
