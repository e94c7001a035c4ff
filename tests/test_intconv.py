"""The `intconv` rewrite (edged/voice/prepare/intconv.py): a dynamically quantized 1-D convolution
as integer matrix products gives ONNX Runtime's ConvInteger result exactly, for every kernel,
dilation, stride and padding Kokoro's decoder has, one tap a product or several side by side;
anything else is left as it is. Real graphs run by the real onnxruntime: the reference is ORT's
own ConvInteger."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edged.voice.prepare.intconv import convs_as_matmuls


def _graph(weights: np.ndarray, zero_point: np.ndarray, *, stride: int = 1, dilation: int = 1,
           pads: tuple[int, int] = (0, 0), group: int = 1) -> onnx.ModelProto:
    """x (float) -> DynamicQuantizeLinear -> ConvInteger -> y (int32), as the quantizer makes
    them (the weights an initializer with one zero point)."""
    cin = weights.shape[1] * group
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("ConvInteger", ["xq", "w", "xz", "wz"], ["y"], name="conv",
                              strides=[stride], dilations=[dilation], pads=list(pads),
                              kernel_shape=[weights.shape[2]], group=group)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, None])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(zero_point, "wz")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


@pytest.mark.parametrize("taps_per_product", [1, 3, 4])
@pytest.mark.parametrize(("cout", "cin", "taps", "stride", "dilation", "pads"), [
    (8, 16, 1, 1, 1, (0, 0)),      # 1x1: one product, no slices
    (8, 16, 3, 1, 1, (1, 1)),
    (8, 16, 7, 1, 3, (9, 9)),      # the resblocks' dilated kernels
    (8, 16, 11, 1, 5, (25, 25)),
    (1, 1, 3, 2, 1, (1, 1)),       # F0/N convolutions: stride 2
    (16, 6, 12, 6, 1, (3, 3)),     # the noise convolution: stride 6, kernel 12
    (8, 16, 5, 1, 1, (2, 0)),      # uneven pads
])
def test_the_products_equal_convinteger_exactly(cout: int, cin: int, taps: int, stride: int,
                                                dilation: int, pads: tuple[int, int],
                                                taps_per_product: int) -> None:
    rng = np.random.default_rng(taps * 100 + stride)
    weights = rng.integers(0, 256, (cout, cin, taps), dtype=np.uint8)
    model = _graph(weights, np.array(131, dtype=np.uint8), stride=stride, dilation=dilation,
                   pads=pads)
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    assert convs_as_matmuls(rewritten, taps_per_product) == 1
    assert "ConvInteger" not in {n.op_type for n in rewritten.graph.node}
    for length in (37, 64, 200):  # odd lengths: the strided slices' last step
        x = rng.normal(0, 2, (1, cin, length)).astype(np.float32)
        expected = _run(model, x)
        made = _run(rewritten, x)
        assert made.dtype == np.int32 and made.shape == expected.shape
        assert np.array_equal(made, expected)


def test_signed_weights_are_rewritten_as_they_are() -> None:
    rng = np.random.default_rng(7)
    weights = rng.integers(-128, 128, (4, 8, 3), dtype=np.int8)
    model = _graph(weights, np.array(-3, dtype=np.int8), pads=(1, 1))
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    assert convs_as_matmuls(rewritten, 4) == 1
    x = rng.normal(0, 1, (1, 8, 50)).astype(np.float32)
    assert np.array_equal(_run(rewritten, x), _run(model, x))


def test_grouped_and_two_dimensional_convolutions_are_left_alone() -> None:
    grouped = _graph(np.zeros((8, 4, 3), dtype=np.uint8), np.array(128, dtype=np.uint8),
                     pads=(1, 1), group=2)
    flat = _graph(np.zeros((8, 8, 3), dtype=np.uint8), np.array(128, dtype=np.uint8))
    flat.graph.initializer[0].CopyFrom(
        numpy_helper.from_array(np.zeros((8, 8, 1, 3), dtype=np.uint8), "w"))
    per_channel = _graph(np.zeros((8, 8, 3), dtype=np.uint8), np.full(8, 128, dtype=np.uint8))
    for model in (grouped, flat, per_channel):
        before = model.SerializeToString()
        assert convs_as_matmuls(model, 4) == 0
        assert model.SerializeToString() == before


@pytest.mark.parametrize(("taps", "taps_per_product", "products"),
                         [(11, 4, 3), (7, 4, 2), (3, 4, 1), (11, 1, 11), (1, 4, 1)])
def test_taps_side_by_side_make_fewer_products_and_sums(taps: int, taps_per_product: int,
                                                        products: int) -> None:
    """Kokoro's resblocks have kernels of 3, 7 and 11 taps: four taps a product make one, two
    and three products, and one sum fewer than products (each sum a pass over an int32
    tensor as long as the convolution's output)."""
    model = _graph(np.zeros((8, 16, taps), dtype=np.uint8), np.array(128, dtype=np.uint8),
                   pads=(taps // 2, taps // 2))
    assert convs_as_matmuls(model, taps_per_product) == 1
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMulInteger") == products
    assert ops.count("Add") == products - 1
    assert ops.count("Concat") == sum(1 for g in range(0, taps, taps_per_product)
                                      if min(taps_per_product, taps - g) > 1)


def test_no_taps_a_product_is_an_error() -> None:
    model = _graph(np.zeros((8, 16, 3), dtype=np.uint8), np.array(128, dtype=np.uint8))
    with pytest.raises(ValueError, match="taps_per_product"):
        convs_as_matmuls(model, 0)
