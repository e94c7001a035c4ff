"""Split a Piper (VITS) ONNX graph into an encoder and a decoder.

The decoder (HiFi-GAN, the `/dec/...` nodes of a Piper export) turns the latent `z`
[1, channels, frames] into audio, and it holds almost all of the activation memory: its
tensors are `frames x 256` samples long. Split off, it can be run on windows of `z` with a
little overlap, so activation memory stays the same for a sentence of any length.

The encoder is everything up to `z` (text encoder, duration predictor, flow); the decoder is
everything from `z` to `output`. It may also need `sid` (a multi-speaker voice conditions the
decoder on the speaker), never the phoneme inputs: a decoder that reads those (a mask, a length)
cannot be windowed and the graph is not split.

Needs the `onnx` package; only the preparation step imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import onnx
from onnx.utils import Extractor

_DECODER_SCOPE: Final = "/dec/"
_FLOW_SCOPE: Final = "/flow/"
# Ops a quantizer or exporter puts between z and the first decoder convolution.
_PASS_THROUGH_OPS: Final = frozenset({"DynamicQuantizeLinear", "QuantizeLinear", "Cast"})
_SPEAKER_INPUT: Final = "sid"


class NotSplittable(Exception):
    """The graph is not a Piper VITS graph this module can split; the message says why."""


@dataclass(frozen=True)
class SplitGraph:
    encoder: onnx.ModelProto
    decoder: onnx.ModelProto
    latent: str
    """Name of `z`: the encoder's output and the decoder's windowed input."""
    decoder_extra_inputs: tuple[str, ...]
    """Graph inputs the decoder needs besides `z` (`sid` for a multi-speaker voice)."""
    flow: onnx.ModelProto | None = None
    """The flow (z_p, y_mask -> z), split off the encoder when it can be: it works frame by
    frame with a finite receptive field, so an announcement's first window needs only the
    flow of its first frames. None: the encoder makes `z` itself."""
    flow_inputs: tuple[str, ...] = ()
    """The encoder's outputs when the flow is split off ([1, C, frames] each: z_p, y_mask)."""
    flow_extra_inputs: tuple[str, ...] = ()
    """Graph inputs the flow needs besides those (`sid`)."""


def split_piper_graph(model: onnx.ModelProto) -> SplitGraph:
    graph = model.graph
    constants = {i.name for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    graph_inputs = [i.name for i in graph.input if i.name not in constants]

    latent = _find_latent(graph.node, producer, constants)
    needed = _inputs_reached([o.name for o in graph.output], producer, constants, frozenset({latent}))
    if not needed <= {_SPEAKER_INPUT}:
        raise NotSplittable(f"the decoder reads {sorted(needed)}: it cannot be run on windows")
    extra = tuple(sorted(needed))
    if latent not in {v.name for v in graph.value_info}:
        # The extractor types its new inputs/outputs from value_info; exports usually carry it.
        model = onnx.shape_inference.infer_shapes(model)
        if latent not in {v.name for v in model.graph.value_info}:
            model.graph.value_info.append(
                onnx.helper.make_tensor_value_info(latent, onnx.TensorProto.FLOAT, None))
    extractor = Extractor(model)
    decoder = extractor.extract_model([latent, *extra], [o.name for o in graph.output])
    flow_inputs = _flow_inputs(graph.node, producer, constants, latent)
    if flow_inputs:
        flow_extra = tuple(sorted(_inputs_reached([latent], producer, constants,
                                                  frozenset(flow_inputs))))
        return SplitGraph(encoder=extractor.extract_model(graph_inputs, list(flow_inputs)),
                          decoder=decoder, latent=latent, decoder_extra_inputs=extra,
                          flow=extractor.extract_model([*flow_inputs, *flow_extra], [latent]),
                          flow_inputs=flow_inputs, flow_extra_inputs=flow_extra)
    encoder = extractor.extract_model(graph_inputs, [latent])
    return SplitGraph(encoder=encoder, decoder=decoder, latent=latent, decoder_extra_inputs=extra)


def _flow_inputs(nodes: Iterable[onnx.NodeProto], producer: dict[str, onnx.NodeProto],
                 constants: set[str], latent: str) -> tuple[str, ...]:
    """What the `/flow/` nodes read from before the flow (z_p and y_mask in a Piper export),
    when `z` needs nothing else but `sid`; () when the flow cannot be split off."""
    nodes = list(nodes)
    flow = [n for n in nodes if n.name.startswith(_FLOW_SCOPE)]
    after: set[str] = {o for n in flow for o in n.output}
    for node in nodes:  # topological order: everything computed from a flow node's output
        if any(i in after for i in node.input):
            after.update(node.output)
    found: list[str] = []
    for node in flow:
        for name in node.input:
            if name and name not in constants and name not in after and name not in found \
                    and _inputs_reached([name], producer, constants):
                found.append(name)
    if not found or not _inputs_reached([latent], producer, constants,
                                        frozenset(found)) <= {_SPEAKER_INPUT}:
        return ()
    return tuple(found)


def quantize_int8(source: Path, target: Path) -> None:
    """INT8 (QUInt8, dynamic) copy of a Piper voice, all but the decoder.

    QUInt8 measured as fast as fp32 here with a third of the size; QInt8 was 3x slower. The
    decoder stays float: pocketsphinx WER 14.4 % (noise 0) like fp32's 16.5 %, against 20.9 %
    with it quantized; it holds a tenth of the weights; and dynamic quantization computes its
    scales over the whole tensor, so a quantized decoder would differ window by window.
    """
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantizer logs a warning for every tensor it cannot type (dozens for a VITS graph).
    quantizer_log = logging.getLogger()
    level = quantizer_log.level
    quantizer_log.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QUInt8,
                         nodes_to_exclude=decoder_node_names(onnx.load(str(source))))
    finally:
        quantizer_log.setLevel(level)


def decoder_node_names(model: onnx.ModelProto) -> list[str]:
    """Names of the decoder's nodes (empty when the export has no module names)."""
    return [n.name for n in model.graph.node if n.name.startswith(_DECODER_SCOPE)]


def _find_latent(nodes: Iterable[onnx.NodeProto], producer: dict[str, onnx.NodeProto],
                 constants: set[str]) -> str:
    """`z`: what the first decoder node reads, looking through quantize/cast nodes."""
    first = next((n for n in nodes if n.name.startswith(_DECODER_SCOPE)), None)
    if first is None:
        raise NotSplittable(f"no {_DECODER_SCOPE}* nodes (the export has no module names)")
    for name in first.input:
        if not name or not _inputs_reached([name], producer, constants):
            continue  # a constant, e.g. a reshaped bias
        node = producer.get(name)
        while node is not None and node.op_type in _PASS_THROUGH_OPS:
            name = node.input[0]
            node = producer.get(name)
        return str(name)
    raise NotSplittable(f"the first decoder node {first.name} has no variable input")


def _inputs_reached(starts: list[str], producer: dict[str, onnx.NodeProto], constants: set[str],
                    stop: frozenset[str] = frozenset()) -> set[str]:
    """The graph inputs `starts` are computed from, walking back through producers (not past
    initializers or the names in `stop`). Empty: computed from initializers only."""
    reached: set[str] = set()
    stack, seen = list(starts), set(stop)
    while stack:
        current = stack.pop()
        if current in seen or current in constants:
            continue
        seen.add(current)
        node = producer.get(current)
        if node is None:
            reached.add(current)
            continue
        stack += [i for i in node.input if i]
        for attr in node.attribute:  # If/Loop bodies read outer names too
            if attr.type == onnx.AttributeProto.GRAPH:
                raise NotSplittable(f"node {node.name} has a subgraph; not a plain VITS graph")
    return reached
