"""Split the Kokoro-82M ONNX graph into what runs once per piece and the decoder.

The export's nodes are scoped `/encoder/...` (PL-BERT, the text encoder, the duration, F0 and
energy predictors, the alignment) and `/decoder/...` (the iSTFTNet decoder: AdaIN residual
blocks at the frame rate, then the generator at 24 kHz). The decoder reads three tensors the
encoder makes, each along time: the aligned text features [1, 512, frames], F0 and energy
[1, 2 x frames]; and the style. The encoder is 5-10 % of a piece's time, the decoder the rest.

One more cut makes windows of the decoder possible at all: the harmonic source sums the F0
curve over the whole piece (a phase: `CumSum`); a window alone would start it at zero. The
encoder part computes that sum too (a few ms), and the decoder reads it as a fourth windowed
input, so every window continues the piece's phase.

What no cut can make exact: the decoder's AdaIN layers normalize each channel over the whole
window, and its INT8 convolutions quantize each activation tensor with the scale of the whole
window, so a window's audio is not the whole piece's (docs/architecture.md, "Prepared Kokoro").

Needs the `onnx` package; only the preparation (prepare.py, a child process) imports this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import onnx
from onnx.utils import Extractor

_ENCODER_SCOPE: Final = "/encoder/"
_DECODER_SCOPE: Final = "/decoder/"
_QUANTIZED_OPS: Final = frozenset({"DynamicQuantizeLinear", "QuantizeLinear"})


class NotSplittable(Exception):
    """The graph is not a Kokoro export this module knows; the message says why."""


@dataclass(frozen=True)
class KokoroParts:
    encoder: onnx.ModelProto
    """tokens, style, speed -> the decoder's windowed inputs."""
    decoder: onnx.ModelProto
    """the windowed inputs and the style -> audio."""
    windowed: tuple[str, ...]
    """The encoder's outputs, each cut into windows along its time axis for the decoder."""
    extra_inputs: tuple[str, ...]
    """Graph inputs the decoder reads whole (the style)."""


def split_kokoro_graph(model: onnx.ModelProto) -> KokoroParts:
    graph = model.graph
    constants = {i.name for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    inputs = [i.name for i in graph.input if i.name not in constants]
    crossing: list[str] = []
    extra: list[str] = []
    for node in graph.node:
        if not node.name.startswith(_DECODER_SCOPE):
            continue
        for name in node.input:
            made_by = producer.get(name)
            if name in inputs and name not in extra:
                extra.append(name)
            elif (made_by is not None and made_by.name.startswith(_ENCODER_SCOPE)
                  and made_by.op_type not in _QUANTIZED_OPS and name not in crossing):
                crossing.append(name)
    if len(crossing) != 3:
        raise NotSplittable(f"the decoder reads {len(crossing)} encoder tensors, not 3 "
                            f"(features, F0, energy): {crossing[:6]}")
    if "tokens" in extra or not extra:
        raise NotSplittable(f"the decoder reads the graph inputs {extra}, not only the style")
    sums = [n for n in graph.node if n.op_type == "CumSum" and n.name.startswith(_DECODER_SCOPE)]
    if len(sums) != 1:
        raise NotSplittable(f"{len(sums)} running sums in the decoder, not one (the phase of its "
                            "harmonic source)")
    phase = sums[0].output[0]
    outputs = [o.name for o in graph.output]
    model = onnx.shape_inference.infer_shapes(model)
    extractor = Extractor(model)
    windowed = (*crossing, phase)
    encoder = extractor.extract_model(inputs, list(windowed))
    decoder = extractor.extract_model([*windowed, *extra], outputs)
    return KokoroParts(encoder, decoder, windowed, tuple(extra))
