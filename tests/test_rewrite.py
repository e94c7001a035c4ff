"""Graph rewrites at prepare time (voice/rewrite.py, voice/tune.py): each rewrite computes what the
plain graph computes; preparing keeps one only when it sounds the same and measures faster, and
says so in the manifest.

Small real graphs checked against ONNX Runtime on the plain graph; the tiny VITS-shaped voice
prepared for real (its decoder rewritten, checked and timed); the real default voice in the
`voice`-marked test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edged.voice import PiperVoice
from edged.voice.catalog.hashes import file_sha256
from edged.voice.piper.prepared import cpu_signature, prepared_folder, read_prepared
from edged.voice.prepare import rewrite
from edged.voice.prepare.prepare import Tuning, prepare
from tests.harness.tiny_voice import make_tiny_vits_voice

_RNG = np.random.default_rng(3)
LONG = ("The quick brown fox jumps over the lazy dog, and then it runs away into the woods "
        "behind the old red barn.")


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], level: str = "ORT_ENABLE_ALL") -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feeds)[0])


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto],
           shape: list[object]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    return model


def _weights(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(_RNG.standard_normal(shape).astype(np.float32) * 0.1, name)


def test_layernorm_as_exported_is_fused_into_one_node() -> None:
    """The nine nodes of an opset-15 LayerNorm become one LayerNormalization computing the same."""
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
             _weights("gamma", 16), _weights("beta", 16)]
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]),
             helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]),
             helper.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
             helper.make_node("Add", ["v", "eps"], ["e"]),
             helper.make_node("Sqrt", ["e"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n"]),
             helper.make_node("Mul", ["n", "gamma"], ["g"]),
             helper.make_node("Add", ["g", "beta"], ["y"])]
    model = _model(nodes, inits, [1, 7, 16])
    x = _RNG.standard_normal((1, 7, 16)).astype(np.float32) * 3
    fused = rewrite.rewritten(model, ("layernorm",), whole=False)
    assert [n.op_type for n in fused.graph.node] == ["LayerNormalization"]
    np.testing.assert_allclose(_run(fused, {"x": x}), _run(model, {"x": x}), atol=1e-5)


def test_a_layernorm_whose_centred_input_is_used_elsewhere_is_left_alone() -> None:
    """Only the exact pattern is fused: an intermediate read by another node keeps the graph."""
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
             _weights("gamma", 8), _weights("beta", 8)]
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]),
             helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]),
             helper.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
             helper.make_node("Add", ["v", "eps"], ["e"]),
             helper.make_node("Sqrt", ["e"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n"]),
             helper.make_node("Mul", ["n", "gamma"], ["g"]),
             helper.make_node("Add", ["g", "beta"], ["out"]),
             helper.make_node("Add", ["out", "d"], ["y"])]  # d read a third time
    assert rewrite.fuse_layernorm(_model(nodes, inits, [1, 3, 8])) == 0


def test_decoder_as_2d_convolutions_computes_the_same() -> None:
    """A HiFi-GAN-shaped decoder (Conv, LeakyRelu, ConvTranspose, residual Add, Div, Tanh,
    final Unsqueeze) rewritten to height-1 2-D convolutions gives the same samples."""
    inits = [_weights("pre", 16, 12, 7), _weights("up", 16, 8, 8), _weights("res", 8, 8, 3),
             _weights("post", 1, 8, 7), numpy_helper.from_array(np.array(2.0, np.float32), "k"),
             numpy_helper.from_array(np.array([1], np.int64), "ax1")]
    nodes = [helper.make_node("Conv", ["x", "pre"], ["a"], pads=[3, 3]),
             helper.make_node("LeakyRelu", ["a"], ["b"], alpha=0.1),
             helper.make_node("ConvTranspose", ["b", "up"], ["c"], strides=[4], pads=[2, 2]),
             helper.make_node("Conv", ["c", "res"], ["r"], pads=[2, 2], dilations=[2]),
             helper.make_node("Add", ["c", "r"], ["s"]),
             helper.make_node("Div", ["s", "k"], ["t"]),
             helper.make_node("Conv", ["t", "post"], ["p"], pads=[3, 3]),
             helper.make_node("Tanh", ["p"], ["w"]),
             helper.make_node("Unsqueeze", ["w", "ax1"], ["y"])]
    model = _model(nodes, inits, [1, 12, "frames"])
    x = _RNG.standard_normal((1, 12, 40)).astype(np.float32)
    wide = rewrite.rewritten(model, ("conv2d",), whole=True)
    assert wide.graph.node[0].op_type == "Unsqueeze" and wide.graph.node[-1].op_type == "Identity"
    np.testing.assert_allclose(_run(wide, {"x": x}).reshape(-1), _run(model, {"x": x}).reshape(-1),
                               atol=1e-5)


def test_encoder_convolutions_over_a_channel_floor_go_2d() -> None:
    """conv2d64 rewrites only convolutions with at least 64 channels; either way the same."""
    inits = [_weights("wide", 64, 64, 5), _weights("narrow", 64, 8, 3)]
    nodes = [helper.make_node("Conv", ["x", "narrow"], ["a"], pads=[1, 1]),
             helper.make_node("Conv", ["a", "wide"], ["y"], pads=[2, 2])]
    model = _model(nodes, inits, [1, 8, "frames"])
    x = _RNG.standard_normal((1, 8, 30)).astype(np.float32)
    for variant, squeezes in ((("conv2d",), 2), (("conv2d64",), 1)):
        wide = rewrite.rewritten(model, variant, whole=False)
        assert sum(n.op_type == "Squeeze" for n in wide.graph.node) == squeezes
        np.testing.assert_allclose(_run(wide, {"x": x}), _run(model, {"x": x}), atol=1e-4)


def test_tiny_voice_prepared_with_its_decoder_rewrite_checked_and_recorded(tmp_path: Path) -> None:
    """Preparing tries the decoder rewrite on the tiny VITS voice: the manifest records each
    variant's audio difference and time, the choice, the threads and the CPU; the voice sounds
    as the .onnx loaded as it is."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    sha = file_sha256(onnx_path)
    folder = prepared_folder(tmp_path / "cache", onnx_path, sha)
    prepare(onnx_path, folder, sha, tuning=Tuning(threads=2, decoder_threads=1))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["cpu"] == cpu_signature()
    report = manifest["rewrites"]
    assert report["threads"] == {"encoder": 2, "decoder": 1}
    decoder = report["decoder"]["variants"]
    assert set(decoder) == {"none", "conv2d"}
    assert decoder["conv2d"]["sounds_the_same"] and decoder["conv2d"]["max_diff_steps"] <= 1
    assert report["decoder"]["chosen"] in decoder
    if report["decoder"]["chosen"] == "conv2d":  # kept only when faster than the plain graph
        assert decoder["conv2d"]["ms"] < decoder["none"]["ms"]
    prepared = read_prepared(folder, sha)
    assert prepared is not None and prepared.kind == "split"
    direct, loaded = PiperVoice.load(onnx_path), PiperVoice.load(onnx_path, prepared=prepared)
    x, y = direct.synthesize(LONG).samples, loaded.synthesize(LONG).samples
    assert x.size == y.size and np.abs(x.astype(np.int32) - y).max() <= 1


def test_a_rewrite_that_changes_the_audio_is_dropped(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite whose audio is more than one 16-bit step off is not kept, however fast: here
    one that (as a broken rewrite would) scales the decoder's output by 1.01."""
    real = rewrite.rewritten

    def louder(model: onnx.ModelProto, variant: tuple[str, ...], *, whole: bool) -> onnx.ModelProto:
        out = real(model, variant, whole=whole)
        if whole:
            last = out.graph.node[-1]
            raw = f"{last.output[0]}/raw"
            out.graph.initializer.append(numpy_helper.from_array(np.array(1.01, np.float32), "gain"))
            out.graph.node.append(helper.make_node("Mul", [raw, "gain"], [last.output[0]]))
            last.output[0] = raw
        return out

    monkeypatch.setattr("edged.voice.prepare.tune.rewritten", louder)
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    sha = file_sha256(onnx_path)
    folder = prepared_folder(tmp_path / "cache", onnx_path, sha)
    prepare(onnx_path, folder, sha)
    report = json.loads((folder / "manifest.json").read_text())["rewrites"]["decoder"]
    assert report["variants"]["conv2d"]["sounds_the_same"] is False
    assert report["variants"]["conv2d"]["max_diff_steps"] > 1
    assert report["chosen"] == "none"


def test_rewrites_off_keeps_the_plain_graphs(tmp_path: Path) -> None:
    """`--no-rewrites` (the bench's comparison): only the plain graphs, nothing timed."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    sha = file_sha256(onnx_path)
    folder = prepared_folder(tmp_path / "cache", onnx_path, sha)
    prepare(onnx_path, folder, sha, tuning=Tuning(rewrites=False))
    report = json.loads((folder / "manifest.json").read_text())["rewrites"]
    assert {part: set(report[part]["variants"]) for part in ("encoder", "decoder")} == {
        "encoder": {"none"}, "decoder": {"none"}}


def test_a_folder_prepared_on_another_cpu_is_prepared_again(tmp_path: Path) -> None:
    """Graphs laid out for one CPU's vector width are not used on another: a cache folder copied
    to other hardware is stale."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    sha = file_sha256(onnx_path)
    folder = prepared_folder(tmp_path / "cache", onnx_path, sha)
    prepare(onnx_path, folder, sha, tuning=Tuning(rewrites=False))
    assert read_prepared(folder, sha) is not None
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["cpu"] = "aarch64 0xd03 asimd"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert read_prepared(folder, sha) is None


@pytest.mark.voice
def test_default_voice_rewrites_sound_the_same(tmp_path: Path, default_voice_path: Path) -> None:
    """The real voice: every kept rewrite passed the one-step check, each variant has a time or a
    reason, and the prepared voice speaks the corpus's longest line as the plain .onnx does."""
    sha = file_sha256(default_voice_path)
    folder = prepared_folder(tmp_path / "cache", default_voice_path, sha, "float32")
    prepare(default_voice_path, folder, sha, "float32")
    report = json.loads((folder / "manifest.json").read_text())["rewrites"]
    for part in ("encoder", "decoder"):
        chosen = report[part]["variants"][report[part]["chosen"]]
        assert chosen["sounds_the_same"] and chosen["max_diff_steps"] <= 1
    prepared = read_prepared(folder, sha)
    assert prepared is not None
    voice = PiperVoice.load(default_voice_path, prepared=prepared)
    direct = PiperVoice.load(default_voice_path)
    text = "The washing machine has finished. Please take the laundry out."
    x = direct.synthesize(text, direct.settings(noise_scale=0, noise_w=0)).samples
    y = voice.synthesize(text, voice.settings(noise_scale=0, noise_w=0)).samples
    assert x.size == y.size and np.abs(x.astype(np.int32) - y).max() <= 1
