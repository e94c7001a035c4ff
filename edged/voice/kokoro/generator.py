"""The prepared decoder cut once more, before its generator (run by prepare.py, a child process).

Kokoro's decoder is two stages: AdaIN residual blocks at the frame rate (the "front": about 3 %
of its time), then the generator, which upsamples to 24 kHz and makes the audio. Both normalize
over what they are given, so a window of the decoder is not the piece (split.py). Cut at the
generator's input, the front runs on the whole piece (25-35 ms here) and only the generator on a
window: the window then starts from the piece's own frame-rate features and differs from the
whole piece by the generator's normalization alone. A head decoded so (and the rest in one
generator call) measured 1.10 dB band distance to the whole piece against 1.46-1.73 for the
decoder's own window, and the judge heard it as the whole piece, within its noise
(docs/languages.md, "Prepared Kokoro").

Whole pieces run front then generator: the same nodes in two sessions, so the same audio
(checked here, to the bit, before the decoder is replaced by its two parts).

Needs the `onnx` package: only the preparing child imports this module.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
import onnx
from onnx.utils import Extractor

from ..onnx import open_session

_GENERATOR: Final = "/generator/"
_LAST_BLOCKS: Final = "/decoder/decoder/decode."
"""The export's scope of the frame-rate blocks before the generator."""


def split_at_generator(work: Path, probes: list[dict[str, np.ndarray]], frames: list[int],
                       time_inputs: list[str]) -> dict[str, Any] | None:
    """`work/decoder.onnx` as `work/front.onnx` + `work/generator.onnx`, checked to make the same
    audio on `probes` (pieces of `frames` frames); what the manifest says of them, or None (and the
    decoder stays) when the graph has no single boundary or the parts differ by any sample.
    `time_inputs`: the decoder's inputs along time (the rest it reads whole)."""
    try:
        return _split(work, probes, frames, time_inputs)
    except Exception as err:  # the decoder stays whole: say why in the child's stderr
        print(f"generator apart left out: {type(err).__name__}: {err}"[:300], file=sys.stderr)
        _remove_parts(work)
        return None


def _split(work: Path, probes: list[dict[str, np.ndarray]], frames: list[int],
           time_inputs: list[str]) -> dict[str, Any] | None:
    model = onnx.load(str(work / "decoder.onnx"))
    boundary = _boundary(model.graph)
    if boundary is None:
        return None
    inputs = [i.name for i in model.graph.input]
    model = onnx.shape_inference.infer_shapes(model)  # the extractor reads the boundary's type
    if boundary not in {v.name for v in model.graph.value_info}:
        model.graph.value_info.append(onnx.helper.make_tensor_value_info(
            boundary, onnx.TensorProto.FLOAT, None))
    extractor = Extractor(model)
    front = extractor.extract_model(inputs, [boundary])
    generator = extractor.extract_model([boundary, *inputs], [o.name for o in model.graph.output])
    _drop_unread_inputs(generator)
    _drop_unread_inputs(front)
    del model, extractor
    for name, part in (("front", front), ("generator", generator)):
        onnx.save(part, str(work / f"{name}.onnx"), save_as_external_data=True,
                  location=f"{name}.weights", size_threshold=1024)
    reads = [i.name for i in generator.graph.input]
    del front, generator
    axis_rate = _check(work, probes, frames, boundary)
    if axis_rate is None:
        _remove_parts(work)
        return None
    return {"boundary": boundary, "axis": axis_rate[0], "per_frame": axis_rate[1],
            "time_inputs": [n for n in reads if n in time_inputs],
            "whole_inputs": [n for n in reads if n != boundary and n not in time_inputs]}


def _remove_parts(work: Path) -> None:
    for name in ("front", "generator"):
        for suffix in ("onnx", "weights"):
            (work / f"{name}.{suffix}").unlink(missing_ok=True)


def _boundary(graph: onnx.GraphProto) -> str | None:
    """The one tensor the last frame-rate block hands the generator."""
    producer = {out: node for node in graph.node for out in node.output}
    found = {name for node in graph.node if _GENERATOR in node.name for name in node.input
             if (made := producer.get(name)) is not None and made.name.startswith(_LAST_BLOCKS)}
    return found.pop() if len(found) == 1 else None


def _drop_unread_inputs(model: onnx.ModelProto) -> None:
    """The extractor lists every input asked for; ONNX Runtime would want them all fed."""
    read = {name for node in model.graph.node for name in node.input}
    kept = [i for i in model.graph.input if i.name in read]
    del model.graph.input[:]
    model.graph.input.extend(kept)


def _check(work: Path, probes: list[dict[str, np.ndarray]], frames: list[int],
           boundary: str) -> tuple[int, int] | None:
    """The boundary's time axis (its last) and steps per frame when front + generator make the
    decoder's audio exactly on every probe; else None. One session pair at a time (the child's
    peak memory)."""
    decoder = open_session(work / "decoder.onnx", 2, level="ORT_DISABLE_ALL", arena="own")
    references = [decoder.run(None, feeds)[0] for feeds in probes]
    del decoder
    front = open_session(work / "front.onnx", 2, level="ORT_DISABLE_ALL", arena="own")
    generator = open_session(work / "generator.onnx", 2, level="ORT_DISABLE_ALL", arena="own")
    shapes = set()
    for feeds, count, reference in zip(probes, frames, references, strict=True):
        made = front.run(None, _fed(front, feeds))[0]
        shapes.add((made.ndim - 1, made.shape[-1] / count))
        audio = generator.run(None, _fed(generator, {**feeds, boundary: made}))[0]
        if audio.shape != reference.shape or not np.array_equal(audio, reference):
            return None
    if len(shapes) != 1:
        return None
    axis, rate = shapes.pop()
    return (axis, int(rate)) if rate.is_integer() else None


def _fed(session: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {i.name: feeds[i.name] for i in session.get_inputs()}
