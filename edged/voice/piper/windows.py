"""A prepared voice's pieces streamed window by window, the windows decoded on spare workers.

`SplitModel` runs the encoder on a piece's phonemes, then the decoder on windows of the latent,
each with `pad` frames of context either side that are decoded and cut off again. The decoder's
receptive field is a few frames, so the joined windows equal the whole decode to within one 16-bit
step (checked for every voice when it is prepared), while its activation memory stays that of
one window whatever the sentence length.

Progressive windows: an announcement's first window is short (`FIRST_WINDOW_FRAMES`), so its first
sound waits only for the encoder and a small decoder call; the next ones double up to `largest`,
which the memory budget sets (`largest_window`): every window costs its context twice and one
more call, so long pieces should have few of them.

Parallel windows: once a piece's latent is known its windows are independent. With lanes (the
scheduler's spare workers, see lanes.py) they are decoded at once, one intra-op thread each, and
the next piece's encoder runs beside them; the stream takes them in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, NamedTuple

import numpy as np

from ..lanes import Ahead, Lanes
from ..onnx import shrinking
from .model import Decoded

FIRST_WINDOW_FRAMES: Final = 24
"""The first window of an announcement is this short (0.28 s of audio), so its first sound waits
for the encoder and a small decoder call only (the player needs the next window within 0.28 s;
it takes about 30 ms here)."""
DECODE_WINDOW_FRAMES: Final = 96
"""The largest window when the memory budget is not known (and the probe's window)."""
MAX_WINDOW_FRAMES: Final = 384
"""Larger windows save little: the context is then under 7 % of a window."""
DECODER_SHARE: Final = 1 / 8
"""Part of `limits.memory_mb` for the activations of the windows being decoded at once (50 MB of
the default 400: with two lanes about 100-frame windows for the default voice)."""


def window_bounds(frames: int, largest: int, first: int = 0) -> list[tuple[int, int]]:
    """`frames` cut into windows: with `first`, a first window of that many frames, then windows
    doubling in size up to `largest` (a tail shorter than half the next window joins the one
    before it); the frames left once `largest` is reached in the fewest equal windows of at most
    `largest` (no short tail: each window costs its context twice and one decoder call)."""
    bounds: list[tuple[int, int]] = []
    start, size = 0, first
    if 0 < first < frames:
        bounds.append((0, first))
        start, size = first, min(2 * first, largest)
        while size < largest:
            rest = frames - start
            grown = min(2 * size, largest)
            if rest <= size + grown // 2:
                break
            bounds.append((start, start + size))
            start, size = start + size, grown
    rest = frames - start
    if rest <= 0:
        return bounds
    count = max(1, -(-rest // largest))
    edges = [start + round(i * rest / count) for i in range(count + 1)]
    return bounds + list(zip(edges, edges[1:], strict=False))


def largest_window(memory_mb: int, lanes: int, kb_per_frame: float, pad: int,
                   cap: int | None = None) -> int:
    """The largest window whose activations fit `DECODER_SHARE` of the budget with `lanes`
    windows decoded at once (each with its context), within [2 x FIRST_WINDOW_FRAMES,
    MAX_WINDOW_FRAMES]; `kb_per_frame` 0 (not measured): DECODE_WINDOW_FRAMES. `cap`
    (`voice.max_window_frames`): at most that many frames."""
    if kb_per_frame <= 0:
        frames = float(DECODE_WINDOW_FRAMES)
    else:
        frames = memory_mb * 1024 * DECODER_SHARE / max(1, lanes) / kb_per_frame - 2 * pad
        frames = min(MAX_WINDOW_FRAMES, max(2 * FIRST_WINDOW_FRAMES, frames))
    return int(frames if cap is None else min(cap, frames))


class FlowPart(NamedTuple):
    """The flow as a session of its own: it reads the encoder's outputs `inputs` ([1, C, frames]
    each) and `extra_inputs`, and a window of it needs `pad` frames of context either side."""

    session: Any
    inputs: tuple[str, ...]
    extra_inputs: tuple[str, ...]
    pad: int | None
    """None: windows of it would not match the whole: it runs whole after the encoder."""


@dataclass(frozen=True)
class _Encoded:
    """z of frames [offset, offset + latent frames) of piece `index` (`frames` long); its windows
    from frame `start` on are still to be decoded."""

    index: int
    latent: np.ndarray
    extra: dict[str, np.ndarray]
    frames: int
    offset: int = 0
    start: int = 0


@dataclass(frozen=True)
class _FlowInputs:
    """What the encoder made for the flow, of piece `index` (`frames` long), and the flow's and
    the decoder's other inputs."""

    index: int
    inputs: dict[str, np.ndarray]
    extra: dict[str, np.ndarray]
    decoder_extra: dict[str, np.ndarray]
    frames: int


class SplitModel:
    """A voice as encoder (+ flow) + windowed decoder (prepared.py). Thread-safe."""

    def __init__(self, encoder: Any, decoder: Any, *, latent: str, extra_inputs: tuple[str, ...],
                 hop: int, pad: int, largest: int = DECODE_WINDOW_FRAMES,
                 flow: FlowPart | None = None,
                 head: Callable[[int], int] | None = None, head_samples: int = 0) -> None:
        self._encoder = encoder
        self._decoder = decoder
        self._latent = latent
        self._extra = extra_inputs
        self._flow = flow
        self.hop = hop
        self.pad = pad
        self.largest = largest
        self.head = head
        """Instead of windows: a first piece of n frames as its head (of `head(n)` frames), then
        the whole piece in one call whose audio from the head on follows it; every other piece
        whole (Kokoro, whose decoder normalizes over what it is given: prepared.py there)."""
        self.head_samples = head_samples
        """Frames of the rest of the piece, evenly spread, that the head's call decodes too (and
        drops), so that it normalizes over a sample of the whole piece."""
        self.input_names = frozenset(i.name for i in encoder.get_inputs())

    def reclaim(self, feeds: dict[str, np.ndarray]) -> None:
        """The encoder with arena shrinkage: the arena is shared, so every session's free
        chunks go back (the decoder's too)."""
        self._encoder.run(None, feeds, shrinking())

    def stream(self, pieces: Sequence[dict[str, np.ndarray]], *, first_window: int = 0,
               lanes: Lanes | None = None) -> Iterator[Decoded]:
        """Each piece's samples in order, window by window; with lanes, the windows of a piece
        and the next piece's encoder run on other workers too. With the flow apart, the first
        window of the first piece needs the flow of its own frames only (and the rest of the
        flow runs meanwhile)."""
        if lanes is not None and lanes.pieces_at_once and len(pieces) > 1:
            yield from self._pieces_at_once(pieces, lanes)
            return
        ahead: Ahead[_Encoded | _FlowInputs | Decoded] = Ahead(lanes)
        if pieces:
            ahead.push(partial(self._encode, 0, pieces[0], first_window))
        while ahead:
            done = ahead.pop()
            if isinstance(done, Decoded):
                yield done
            elif isinstance(done, _FlowInputs):
                yield self._head(done, first_window)  # alone: nothing competes for the cores
                ahead.push(partial(self._rest, done, first_window))
            else:
                first = 0 if done.index else self.head(done.frames) if self.head else first_window
                bounds = [(a, b) for a, b in self._bounds(done.frames, first)
                          if a >= done.start]
                front = self._front(done) if self.head and len(bounds) > 1 else None
                if first and bounds and bounds[0][0] == 0:  # the first sound: decoded alone
                    yield self._decode(done, *bounds[0], bounds[0][1] == done.frames, front)
                    bounds = bounds[1:]
                for start, end in bounds:
                    ahead.push(partial(self._decode, done, start, end, end == done.frames, front))
                if done.index + 1 < len(pieces):
                    ahead.push(partial(self._encode, done.index + 1, pieces[done.index + 1], 0))

    def _pieces_at_once(self, pieces: Sequence[dict[str, np.ndarray]],
                        lanes: Lanes) -> Iterator[Decoded]:
        """Every piece a job (its encoder, then its windows one after the other), `lanes.width`
        at once, taken in order. No first window: nothing plays while it runs. Kokoro's two
        pieces of a Mandarin line, warm: 2.15 s instead of 2.83 one after the other (2 cores)."""
        ahead: Ahead[list[Decoded]] = Ahead(lanes)
        for index, feeds in enumerate(pieces):
            ahead.push(partial(self._whole_piece, index, feeds))
        while ahead:
            yield from ahead.pop()

    def _whole_piece(self, index: int, feeds: dict[str, np.ndarray]) -> list[Decoded]:
        encoded = self._encode(index, feeds, 0)
        assert isinstance(encoded, _Encoded)  # no first window: the flow runs whole
        bounds = self._bounds(encoded.frames, 0)
        return [self._decode(encoded, start, end, end == encoded.frames)
                for start, end in bounds]

    def _bounds(self, frames: int, first: int) -> list[tuple[int, int]]:
        if self.head is None:
            return window_bounds(frames, self.largest, first)
        return [(0, first), (first, frames)] if 0 < first < frames else [(0, frames)]

    def _encode(self, index: int, feeds: dict[str, np.ndarray],
                first: int) -> _Encoded | _FlowInputs:
        """The piece's z; with the flow apart and a first window shorter than the piece, what
        the flow reads (its windows are run by `_head` and `_rest`)."""
        extra = {name: feeds[name] for name in self._extra}
        if self._flow is None:
            latent = self._encoder.run([self._latent], feeds)[0]
            return _Encoded(index, latent, extra, latent.shape[-1])
        made = dict(zip(self._flow.inputs, self._encoder.run(list(self._flow.inputs), feeds),
                        strict=True))
        inputs = _FlowInputs(index, made, {name: feeds[name] for name in self._flow.extra_inputs},
                             extra, next(iter(made.values())).shape[-1])
        if 0 < first < inputs.frames and self._flow.pad is not None:
            return inputs
        return _Encoded(index, self._run_flow(inputs, 0, inputs.frames), extra, inputs.frames)

    def _head(self, inputs: _FlowInputs, first: int) -> Decoded:
        """The first window: the flow of its frames and their context, then the decoder."""
        assert self._flow is not None and self._flow.pad is not None
        end = min(first, inputs.frames)
        latent = self._run_flow(inputs, 0, min(inputs.frames, end + self.pad + self._flow.pad))
        head = _Encoded(inputs.index, latent, inputs.decoder_extra, inputs.frames)
        return self._decode(head, 0, end, end == inputs.frames)

    def _rest(self, inputs: _FlowInputs, first: int) -> _Encoded:
        """z from the first window's context on (the flow with its own context before it)."""
        assert self._flow is not None and self._flow.pad is not None
        offset = max(0, first - self.pad)
        lo = max(0, offset - self._flow.pad)
        latent = self._run_flow(inputs, lo, inputs.frames)[..., offset - lo:]
        return _Encoded(inputs.index, latent, inputs.decoder_extra, inputs.frames, offset, first)

    def _run_flow(self, inputs: _FlowInputs, lo: int, hi: int) -> np.ndarray:
        assert self._flow is not None
        feeds = {name: np.ascontiguousarray(value[..., lo:hi])
                 for name, value in inputs.inputs.items()}
        return np.asarray(self._flow.session.run([self._latent], {**feeds, **inputs.extra})[0])

    def _front(self, encoded: _Encoded) -> dict[str, np.ndarray] | None:
        """A Kokoro head's piece through its decoder's front, once for head and rest (their
        generator windows then start from the whole piece's features: kokoro/generator.py)."""
        if not getattr(self._decoder, "apart", False) or encoded.offset:
            return None
        return dict(self._decoder.front({self._latent: encoded.latent, **encoded.extra}))

    def _decode(self, encoded: _Encoded, start: int, end: int, last: bool,
                front: dict[str, np.ndarray] | None = None) -> Decoded:
        if front is not None:
            # A Kokoro head: its frames and their context. The rest: the generator on the whole
            # piece, so that from the head on it is the whole piece's audio, to the sample (its
            # generator normalizes over what it is given: a rest alone came out 0.6-2 dB louder
            # than the piece, and 4-7 dB above the head where they met).
            hi = encoded.frames if last else min(encoded.frames, end + self.pad)
            also = () if last else spread(hi, encoded.frames, self.head_samples)
            audio = self._decoder.generate(front, 0, hi, also)[start * self.hop:end * self.hop]
            return Decoded(encoded.index, audio, last)
        audio = decode_window(self._decoder, self._latent, encoded.latent, encoded.extra,
                              start - encoded.offset, end - encoded.offset, hop=self.hop,
                              pad=self.pad)
        return Decoded(encoded.index, audio, last)


def spread(lo: int, hi: int, count: int) -> tuple[int, ...]:
    """`count` frames evenly spread over [lo, hi), first and last included (all of them when
    there are no more)."""
    if hi - lo <= count:
        return tuple(range(lo, hi))
    return tuple(int(f) for f in np.linspace(lo, hi - 1, count).round())


def decode_window(decoder: Any, latent_name: str, latent: np.ndarray, extra: dict[str, np.ndarray],
                  start: int, end: int, *, hop: int, pad: int) -> np.ndarray:
    """Frames [start, end) of `latent` [1, C, frames] decoded with `pad` frames of context either
    side (as far as there are any), the context's samples cut off again."""
    frames = latent.shape[-1]
    lo, hi = max(0, start - pad), min(frames, end + pad)
    feeds = {latent_name: np.ascontiguousarray(latent[..., lo:hi]), **extra}
    audio: np.ndarray = decoder.run(None, feeds)[0].reshape(-1)
    skip = (start - lo) * hop
    return audio[skip:skip + (end - start) * hop]


def decode_in_windows(decoder: Any, latent_name: str, latent: np.ndarray, extra: dict[str, np.ndarray],
                      *, hop: int, pad: int, window: int, first: int = 0) -> Iterator[np.ndarray]:
    """Decode `latent` window by window, one after the other (the probe of prepare.py)."""
    for start, end in window_bounds(latent.shape[-1], window, first):
        yield decode_window(decoder, latent_name, latent, extra, start, end, hop=hop, pad=pad)
