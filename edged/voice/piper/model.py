"""A Piper voice's model as its voice streams it: the whole graph, one inference per piece
(`WholeModel`), or a prepared voice's encoder and windowed decoder (`windows.SplitModel`); both
yield each piece's samples as `Decoded` chunks in order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..lanes import Lanes
from ..onnx import shrinking


class Decoded(NamedTuple):
    """Samples of piece number `piece`; `last`: the piece's last part."""

    piece: int
    samples: np.ndarray
    last: bool


class Model(Protocol):
    input_names: frozenset[str]

    def stream(self, pieces: Sequence[dict[str, np.ndarray]], *, first_window: int = 0,
               lanes: Lanes | None = None) -> Iterator[Decoded]:
        """Piper's feeds of each piece -> float32 samples (1-D) in consecutive parts, in order,
        each as soon as it is made; `first_window` > 0: the first piece's first part is at most
        that many latent frames (windowed models); `lanes`: spare workers for its windows."""
        ...

    def reclaim(self, feeds: dict[str, np.ndarray]) -> None:
        """One tiny run of its first session with arena shrinkage (onnx.shrinking)."""
        ...


class WholeModel:
    """The whole graph, one inference per piece, one after the other (its activations grow with
    the piece: two at once would double the peak of a voice that is not prepared)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.input_names = frozenset(i.name for i in session.get_inputs())

    def stream(self, pieces: Sequence[dict[str, np.ndarray]], *, first_window: int = 0,
               lanes: Lanes | None = None) -> Iterator[Decoded]:
        for index, feeds in enumerate(pieces):
            yield Decoded(index, self._session.run(None, feeds)[0].reshape(-1), True)

    def reclaim(self, feeds: dict[str, np.ndarray]) -> None:
        self._session.run(None, feeds, shrinking())
