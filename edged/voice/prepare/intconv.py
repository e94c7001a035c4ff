"""The `intconv` rewrite: a dynamically quantized 1-D convolution (ConvInteger, uint8 weights) as
a sum of integer matrix products, one per group of kernel taps.

Why: ONNX Runtime runs ConvInteger as im2col, then a GEMM with the weights as its left operand,
which its integer GEMM (MLAS) only does fast when that operand is unsigned: the u8 x u8 path,
without the CPU's 8-bit dot products (AVX512-VNNI, ARM's udot/sdot). MatMulInteger puts the
activations on the left and the weights, made signed, on the right, packed once at load: the
u8 x s8 path those instructions serve. Kokoro's decoder (68 ConvInteger, 62 % of its time) runs
about a quarter faster here. Exact: each tap's weights shifted by 128 with their zero point, so
every integer product and sum is the same and the audio is bit-identical (checked when prepared;
tune.py keeps the rewrite only where it measures faster, on the CPU the daemon runs on).

For a convolution of kernel K, dilation d, stride s and pads (p0, p1) over x [N, C, T], with
its taps in groups G of at most `taps_per_product`:
    x' = Pad(Transpose(x) [N, T, C], p0, p1, with x's zero point)
    x_k = Slice(x', k*d, step s)                      [N, T', C]
    y  = Transpose(sum over G of MatMulInteger(Concat(x_k for k in G) [N, T', |G| C], W_G))
with W_G the taps' weights stacked [|G| C, Cout]. A group's taps side by side are one longer
product instead of |G| products and |G|-1 sums of int32 tensors (memory-bound passes): see
`TAPS_PER_PRODUCT` in kokoro/prepared.py for the figures. The nodes are written in this order,
every slice, then every group's concatenation, then every product, then the sums: ORT runs a
graph's nodes in the order of the file, and this one measured faster and smaller on Kokoro's
decoder than a slice, product and sum per tap (1.65 s and 468 MB peak against 1.80 s and 678 MB
for a 100-token piece, 2 threads).

Needs the `onnx` package: only the preparing child imports this module.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import onnx
from onnx import helper, numpy_helper

_LAST: Final = np.iinfo(np.int64).max


def convs_as_matmuls(model: onnx.ModelProto, taps_per_product: int) -> int:
    """Rewrite `model` in place; the number of convolutions rewritten (those that qualify: 1-D,
    one group, uint8 or int8 weights with one zero point, explicit pads)."""
    if taps_per_product < 1:
        raise ValueError(f"taps_per_product must be 1 or more, not {taps_per_product}")
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consts = _Constants(graph)
    nodes: list[onnx.NodeProto] = []
    count = 0
    for node in graph.node:
        made = _rewrite(node, inits, consts, taps_per_product) if node.op_type == "ConvInteger" else None
        nodes.extend(made if made is not None else [node])
        count += made is not None
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return count


class _Constants:
    """Initializers added by the rewrite, one per distinct value (slice bounds repeat a lot)."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self._graph = graph
        self._made: dict[tuple[int, ...], str] = {}
        self._taken = {t.name for t in graph.initializer}

    def int64s(self, *values: int) -> str:
        if values not in self._made:
            self._made[values] = self.add("edged_intconv/i64/" + "_".join(map(str, values)),
                                          np.array(values, dtype=np.int64))
        return self._made[values]

    def add(self, name: str, value: np.ndarray) -> str:
        while name in self._taken:
            name += "_"
        self._taken.add(name)
        self._graph.initializer.append(numpy_helper.from_array(value, name))
        return name


def _rewrite(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto],
             consts: _Constants, group: int) -> list[onnx.NodeProto] | None:
    """The nodes that replace `node`, or None when it does not qualify."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    inputs = list(node.input) + [""] * (4 - len(node.input))
    x, w_name, x_zp, w_zp_name = inputs
    weights = inits.get(w_name)
    w_zp: np.ndarray = (numpy_helper.to_array(inits[w_zp_name]) if w_zp_name in inits
                        else np.zeros((), dtype=np.uint8))
    if (weights is None or len(weights.dims) != 3 or attrs.get("group", 1) != 1
            or attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET")
            or np.size(w_zp) != 1 or (w_zp_name and w_zp_name not in inits)):
        return None
    w = numpy_helper.to_array(weights)
    if w.dtype not in (np.uint8, np.int8):
        return None
    if w.dtype == np.uint8:  # exact: (w - zp) is unchanged when both move by 128
        w = (w.astype(np.int16) - 128).astype(np.int8)
        w_zp = np.array(int(w_zp.reshape(())) - 128, dtype=np.int8)
    cout, cin, taps = w.shape
    dilation = int(attrs.get("dilations", [1])[0])
    stride = int(attrs.get("strides", [1])[0])
    p0, p1 = (int(p) for p in attrs.get("pads", [0, 0]))
    base = f"{node.name or node.output[0]}/edged_intconv"
    b_zp = consts.add(base + "/w_zero_point", np.asarray(w_zp, dtype=np.int8).reshape(()))
    if not x_zp:
        x_zp = consts.add(base + "/x_zero_point", np.array(0, dtype=np.uint8))
    made = [helper.make_node("Transpose", [x], [base + "/x_t"], perm=[0, 2, 1])]
    source = base + "/x_t"
    if p0 or p1:
        made.append(helper.make_node("Pad", [source, consts.int64s(0, p0, 0, 0, p1, 0), x_zp],
                                     [base + "/x_pad"], mode="constant"))
        source = base + "/x_pad"
    span = dilation * (taps - 1)
    taps_in = []
    for k in range(taps):
        tap = source
        if taps > 1 or stride > 1:
            end = k * dilation - span
            tap = f"{base}/tap{k}"
            made.append(helper.make_node(
                "Slice", [source, consts.int64s(k * dilation), consts.int64s(end if end else _LAST),
                          consts.int64s(1), consts.int64s(stride)], [tap]))
        taps_in.append(tap)
    starts = range(0, taps, group)
    cols = []
    for g in starts:  # a group's taps side by side: one product over group x cin columns
        part = taps_in[g:g + group]
        cols.append(part[0] if len(part) == 1 else f"{base}/cols{g}")
        if len(part) > 1:
            made.append(helper.make_node("Concat", part, [cols[-1]], axis=2))
    products = []
    for g, tap in zip(starts, cols, strict=True):
        w_g = w[:, :, g:g + group].transpose(2, 1, 0).reshape(-1, cout)
        w_k = consts.add(f"{base}/w{g}", np.ascontiguousarray(w_g))
        products.append(f"{base}/product{g}")
        made.append(helper.make_node("MatMulInteger", [tap, w_k, x_zp, b_zp], [products[-1]]))
    total = products[0]
    for k, product in enumerate(products[1:], 1):
        made.append(helper.make_node("Add", [total, product], [f"{base}/sum{k}"]))
        total = f"{base}/sum{k}"
    made.append(helper.make_node("Transpose", [total], [node.output[0]], perm=[0, 2, 1]))
    return made
