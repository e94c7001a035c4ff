"""Graph rewrites a voice's parts may get when it is prepared (prepare.py keeps a rewrite only
where it measures faster on this CPU, and only when the audio stays within one 16-bit step).

- `conv2d`: a Piper graph's convolutions are 1-D ([N, C, T]). ONNX Runtime's optimizer lays out
  2-D convolutions in blocks of channels for the CPU's vector width (NCHWc, ORT_ENABLE_ALL),
  which it cannot do for 1-D ones. The decoder (HiFi-GAN: Conv, ConvTranspose, LeakyRelu, Add,
  Div) is rewritten whole as 2-D of height 1: one Unsqueeze at its input, kernels [1, k]
  (decoder window 68 -> 61 ms CPU here). In the encoder each float convolution gets its own
  Unsqueeze/Squeeze (`conv2d` all of them, `conv2d64` those with at least 64 channels).
- `layernorm`: the text encoder's LayerNorm, exported at opset 15 as ReduceMean, Sub, Pow,
  ReduceMean, Add, Sqrt, Div, Mul, Add (ONNX Runtime's own fusion does not match it here), as one
  LayerNormalization node (ONNX Runtime runs it at any opset).

Needs the `onnx` package: only the preparing child imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

ENCODER_VARIANTS: tuple[tuple[str, ...], ...] = ((), ("conv2d",), ("conv2d64",),
                                                 ("conv2d", "layernorm"))
DECODER_VARIANTS: tuple[tuple[str, ...], ...] = ((), ("conv2d",))
_AXIS2 = "edged_rewrite_axis2"


def name_of(variant: Iterable[str]) -> str:
    return "+".join(variant) or "none"


def rewritten(model: onnx.ModelProto, variant: tuple[str, ...], *, whole: bool) -> onnx.ModelProto:
    """A copy of `model` with the rewrites of `variant`; `whole`: the part is the decoder, every
    node of which works on [N, C, T] (all of it goes 2-D)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    if "layernorm" in variant:
        fuse_layernorm(copy)
    if "conv2d" in variant and whole:
        decoder_to_2d(copy)
    elif "conv2d" in variant or "conv2d64" in variant:
        convs_to_2d(copy, 64 if "conv2d64" in variant else 0)
    return copy


def decoder_to_2d(model: onnx.ModelProto) -> None:
    """Every tensor of the decoder [N, C, T] -> [N, C, 1, T]: convolutions get kernels [1, k],
    the element-wise nodes work as they are, the final Unsqueeze of Piper's export (to
    [N, 1, 1, T]) is then an Identity (a final Reshape to [1, 1, 1, -1] works as it is)."""
    graph = model.graph
    outputs = {o.name for o in graph.output}
    # Element-wise nodes work on 4-D as on 3-D; a final Unsqueeze or Reshape makes the output.
    ops = {n.op_type for n in graph.node
           if not (n.op_type in ("Unsqueeze", "Reshape") and n.output[0] in outputs)}
    if not ops <= {"Conv", "ConvTranspose", "LeakyRelu", "Add", "Div", "Mul", "Tanh",
                   "Identity"} or len(graph.input) < 1:
        raise ValueError(f"not a plain HiFi-GAN decoder: {sorted(ops)}")
    weights = {i.name: i for i in graph.initializer}
    latent = graph.input[0].name
    graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), _AXIS2))
    nodes = [helper.make_node("Unsqueeze", [latent, _AXIS2], [f"{latent}/2d"],
                              name="/edged/Unsqueeze2d")]
    for node in graph.node:
        node.input[:] = [f"{latent}/2d" if i == latent else i for i in node.input]
        if node.op_type in ("Conv", "ConvTranspose"):
            _kernel_to_2d(node, weights)
        elif node.op_type == "Unsqueeze" and node.output[0] in outputs:
            node.op_type = "Identity"
            del node.input[1:]
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]  # the 3-D shapes inferred at export no longer hold


def convs_to_2d(model: onnx.ModelProto, min_channels: int) -> None:
    """Each float 1-D Conv with at least `min_channels` input and output channels (per group)
    -> Unsqueeze, 2-D Conv of height 1, Squeeze."""
    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), _AXIS2))
    uses: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    nodes = []
    for index, node in enumerate(graph.node):
        weight = weights.get(node.input[1]) if node.op_type == "Conv" and len(node.input) > 1 else None
        if (weight is None or len(weight.dims) != 3 or weight.data_type != onnx.TensorProto.FLOAT
                or min(weight.dims[0], weight.dims[1]) < min_channels or uses[weight.name] > 1):
            nodes.append(node)
            continue
        unique = f"{node.name}/edged{index}"  # exports may leave nodes unnamed
        wide_in, wide_out, out = f"{unique}/in2d", f"{unique}/out2d", node.output[0]
        nodes.append(helper.make_node("Unsqueeze", [node.input[0], _AXIS2], [wide_in],
                                      name=f"{unique}/Unsqueeze2d"))
        node.input[0], node.output[0] = wide_in, wide_out
        _kernel_to_2d(node, weights)
        nodes.append(node)
        nodes.append(helper.make_node("Squeeze", [wide_out, _AXIS2], [out],
                                      name=f"{unique}/Squeeze2d"))
    del graph.node[:]
    graph.node.extend(nodes)


def _kernel_to_2d(node: onnx.NodeProto, weights: dict[str, onnx.TensorProto]) -> None:
    weight = weights[node.input[1]]
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight)[:, :, None, :],
                                            weight.name))
    for attr in node.attribute:
        if attr.type != onnx.AttributeProto.INTS:
            continue
        values = list(attr.ints)
        if attr.name == "pads":
            attr.ints[:] = [0, values[0], 0, values[1]]
        elif attr.name in ("kernel_shape", "strides", "dilations", "output_padding"):
            attr.ints[:] = [1 if attr.name != "output_padding" else 0, values[0]]


def fuse_layernorm(model: onnx.ModelProto) -> int:
    """LayerNorm over the last axis, as exported node by node, -> LayerNormalization; returns
    how many were fused."""
    graph = model.graph
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    constants = _constants(graph)
    drop: set[int] = set()
    fused: dict[int, onnx.NodeProto] = {}
    for mean in graph.node:
        match = _layernorm_at(mean, consumers, constants)
        if match is None:
            continue
        nodes, gamma, beta, epsilon = match
        drop.update(id(n) for n in nodes)
        fused[id(nodes[-1])] = helper.make_node(
            "LayerNormalization", [mean.input[0], gamma, beta], [nodes[-1].output[0]],
            name=f"{mean.name}/edged{len(fused)}/LayerNormalization", axis=-1, epsilon=epsilon)
    kept = [fused.get(id(n), n) for n in graph.node if id(n) not in drop or id(n) in fused]
    del graph.node[:]
    graph.node.extend(kept)
    return len(fused)


def _layernorm_at(mean: onnx.NodeProto, consumers: dict[str, list[onnx.NodeProto]],
                  constants: dict[str, np.ndarray],
                  ) -> tuple[list[onnx.NodeProto], str, str, float] | None:
    """The nine nodes of a LayerNorm starting at ReduceMean `mean`, gamma, beta, epsilon."""
    if mean.op_type != "ReduceMean" or _axes(mean) != [-1]:
        return None
    x = mean.input[0]

    def only(name: str, op: str, count: int = 1) -> onnx.NodeProto | None:
        users = consumers.get(name, [])
        found = [n for n in users if n.op_type == op]
        return found[0] if len(users) == count and len(found) == 1 else None

    sub = only(mean.output[0], "Sub")
    if sub is None or list(sub.input) != [x, mean.output[0]]:
        return None
    users = consumers.get(sub.output[0], [])
    power = next((n for n in users if n.op_type == "Pow"), None)
    divide = next((n for n in users if n.op_type == "Div"), None)
    if len(users) != 2 or power is None or divide is None:
        return None
    variance = only(power.output[0], "ReduceMean")
    add_eps = only(variance.output[0], "Add") if variance is not None else None
    root = only(add_eps.output[0], "Sqrt") if add_eps is not None else None
    scale = only(divide.output[0], "Mul")
    shift = only(scale.output[0], "Add") if scale is not None else None
    if None in (variance, add_eps, root, scale, shift):
        return None
    assert variance and add_eps and root and scale and shift  # for the type checker
    exponent = constants.get(power.input[1])
    epsilon = constants.get(add_eps.input[1])
    gamma, beta = scale.input[1], shift.input[1]
    if (_axes(variance) != [-1] or list(divide.input) != [sub.output[0], root.output[0]]
            or exponent is None or float(exponent) != 2.0 or epsilon is None
            or epsilon.size != 1 or gamma not in constants or beta not in constants):
        return None
    return [mean, sub, power, variance, add_eps, root, divide, scale, shift], gamma, beta, \
        float(epsilon.reshape(-1)[0])


def _axes(node: onnx.NodeProto) -> list[int] | None:
    for attr in node.attribute:
        if attr.name == "axes":
            return list(attr.ints)
    return None


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values
