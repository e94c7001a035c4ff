"""A prepared Kokoro's two sessions shaped like a prepared Piper voice's, so that Piper's
windowed streaming (piper/windows.SplitModel: progressive windows, decoded on spare workers,
the next piece's encoder ahead) runs Kokoro unchanged.

Piper's decoder reads one latent [1, channels, frames]; Kokoro's reads four tensors along time
at two rates: text features [1, 512, frames], F0 and energy [1, 2 x frames], the source's phase
[1, 2 x frames, 9]. `PackedEncoder` packs them into one [1, channels, frames] array (each
frame's values of every tensor as channels), `PackedDecoder` unpacks a window of it into the
decoder's inputs. Packing copies a few MB per piece; a decoder window costs 100-1000 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

import numpy as np

from .. import preempt

PACKED: Final = "packed"
"""The latent's name as SplitModel asks for it."""


@dataclass(frozen=True)
class Windowed:
    """One tensor the encoder makes and the decoder reads window by window."""

    name: str
    axis: int
    """Its time axis."""
    per_frame: int
    """Its steps along `axis` per frame (F0: 2)."""
    shape: tuple[int, ...]
    """Its shape with the time axis left out."""

    @property
    def channels(self) -> int:
        return int(np.prod(self.shape)) * self.per_frame

    def pack(self, value: np.ndarray) -> np.ndarray:
        """[1, channels, frames], the frame's `per_frame` steps next to each other."""
        timed = np.moveaxis(value, self.axis, -1)
        frames = timed.shape[-1] // self.per_frame
        rows = timed.reshape(-1, frames, self.per_frame)  # (values, frames, steps)
        return rows.transpose(0, 2, 1).reshape(1, -1, frames)

    def cut(self, value: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Frames [lo, hi) of `value` (this tensor, unpacked)."""
        steps = [slice(None)] * value.ndim
        steps[self.axis] = slice(lo * self.per_frame, hi * self.per_frame)
        return np.ascontiguousarray(value[tuple(steps)])

    def unpack(self, packed: np.ndarray) -> np.ndarray:
        frames = packed.shape[-1]
        rows = packed.reshape(-1, self.per_frame, frames).transpose(0, 2, 1)
        timed = rows.reshape(*self.shape, frames * self.per_frame)
        return np.ascontiguousarray(np.moveaxis(timed, -1, self.axis))


class PackedEncoder:
    """The encoder session, answering `run([PACKED], feeds)` with the packed windowed inputs."""

    def __init__(self, session: Any, windowed: Sequence[Windowed]) -> None:
        self._session = session
        self._windowed = tuple(windowed)
        self._names = [w.name for w in windowed]

    def get_inputs(self) -> Any:
        return self._session.get_inputs()

    def run(self, names: Any, feeds: dict[str, np.ndarray], options: Any = None) -> list[np.ndarray]:
        made = self._session.run(self._names, feeds, options)
        return [np.concatenate([w.pack(v) for w, v in zip(self._windowed, made, strict=True)],
                               axis=1)]


@dataclass(frozen=True)
class GeneratorApart:
    """The decoder as two sessions, cut before its generator (generator.py): `front` runs on a
    whole piece, `generator` on the piece or a window of it."""

    front: Any
    generator: Any
    boundary: Windowed
    """What the front hands the generator, along time."""
    time_inputs: tuple[Windowed, ...]
    """The decoder's windowed inputs the generator reads too (F0, the source's phase)."""

    @cached_property
    def timed(self) -> dict[str, Windowed]:
        """What the generator reads along time, by name."""
        return {w.name: w for w in (self.boundary, *self.time_inputs)}


class Pace:
    """Seconds a decoder frame takes in this process, as its pieces are decoded: the preparer's
    figure (`initial`) until a call of at least MEASURED_FRAMES is timed, then a moving average
    (the newest call weighing 1/4). The head window is sized on it (prepared.head_frames): the
    preparer's figure is one moment's, and a busy one (a board doing other work as the model was
    prepared) sized every later head long, and a long head is heard worse (docs/languages.md)."""

    MEASURED_FRAMES: Final = 24
    """Shorter calls are mostly the call's fixed cost."""

    def __init__(self, initial: float) -> None:
        self._s_per_frame = initial
        self.measured = False

    @property
    def s_per_frame(self) -> float:
        return self._s_per_frame

    def observe(self, frames: int, seconds: float) -> None:
        if frames < self.MEASURED_FRAMES:
            return
        now = seconds / frames
        # Two workers may observe at once: a lost update is one sample of an average.
        self._s_per_frame = now if not self.measured else 0.75 * self._s_per_frame + 0.25 * now
        self.measured = True


class PackedDecoder:
    """The decoder session (or its two parts), reading a window of the packed array as its four
    inputs; each call timed into `pace`, when given."""

    def __init__(self, session: Any, windowed: Sequence[Windowed],
                 apart: GeneratorApart | None = None, pace: Pace | None = None) -> None:
        self._session = session
        self._windowed = tuple(windowed)
        self._edges = np.cumsum([0, *(w.channels for w in windowed)])
        self._apart = apart
        self.pace = pace

    def run(self, names: Any, feeds: dict[str, np.ndarray], options: Any = None) -> list[np.ndarray]:
        start = preempt.work_clock()
        if self._apart is not None:
            made = list(self._apart.generator.run(names, self.front(feeds), options))
        else:
            made = list(self._session.run(names, self._inputs(feeds), options))
        self._timed(feeds[PACKED].shape[-1], start)
        return made

    def _timed(self, frames: int, start: float) -> None:
        if self.pace is not None:
            self.pace.observe(frames, preempt.work_clock() - start)

    def front(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """What the generator reads for the whole of `feeds` (apart only)."""
        assert self._apart is not None
        inputs = self._inputs(feeds)
        front = self._apart.front
        made = front.run(None, {i.name: inputs[i.name] for i in front.get_inputs()})[0]
        return {i.name: made if i.name == self._apart.boundary.name else inputs[i.name]
                for i in self._apart.generator.get_inputs()}

    @property
    def apart(self) -> bool:
        return self._apart is not None

    def generate(self, front: dict[str, np.ndarray], lo: int, hi: int,
                 also: Sequence[int] = ()) -> np.ndarray:
        """The generator on frames [lo, hi) of a piece's `front`: that window's samples. `also`:
        single frames of the piece appended to the call, so that its normalization sees more of
        the piece than the window; their samples follow the window's (the caller drops them)."""
        assert self._apart is not None
        timed = self._apart.timed
        spans = [(lo, hi), *((f, f + 1) for f in also)]

        def cut(name: str, value: np.ndarray) -> np.ndarray:
            w = timed[name]
            if len(spans) == 1:
                return w.cut(value, lo, hi)
            return np.concatenate([w.cut(value, a, b) for a, b in spans], axis=w.axis)

        feeds = {name: cut(name, value) if name in timed else value
                 for name, value in front.items()}
        start = preempt.work_clock()
        audio = np.asarray(self._apart.generator.run(None, feeds)[0]).reshape(-1)
        self._timed(hi - lo + len(also), start)
        return audio

    def _inputs(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        packed = feeds[PACKED]
        inputs = {w.name: w.unpack(packed[:, lo:hi]) for w, lo, hi in
                  zip(self._windowed, self._edges, self._edges[1:], strict=False)}
        return {**inputs, **{name: value for name, value in feeds.items() if name != PACKED}}
