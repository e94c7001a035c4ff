"""The decoder cut before its generator (edged/voice/kokoro/generator.py) and how a prepared
Kokoro runs the two parts (kokoro/packing.py, piper/windows.SplitModel). Kokoro's own graph is
in `make test-long` (tests/test_kokoro_prepared.py); here a small decoder of the same shape, built
with onnx, runs in onnxruntime: a "front" at the frame rate that normalizes over the whole piece
(as Kokoro's AdaIN blocks do), then a "generator" that normalizes what it is given again and
makes `hop` samples a frame. So a window of the whole decoder is not the piece, and a window of
the generator fed the whole piece's front is a different thing again: what the tests tell apart.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edged.voice.kokoro.generator import split_at_generator
from edged.voice.kokoro.packing import PACKED, GeneratorApart, Pace, PackedDecoder, Windowed
from edged.voice.kokoro.prepared import FIRST_WINDOW_FRAMES, PreparedKokoro
from edged.voice.onnx import open_session
from edged.voice.piper.windows import SplitModel, spread

_HOP = 4
_FEATURES = "/encoder/features"
_F0 = "/encoder/f0"


def _decoder() -> onnx.ModelProto:
    """features [1, 3, T], f0 [1, 2T], style [1, 2] -> audio [1, 1, 4T]."""
    def node(op: str, inputs: list[str], output: str, scope: str, **attrs: object) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [output], name=f"{scope}{output}", **attrs)

    front, gen = "/decoder/decoder/decode.3/", "/decoder/decoder/generator/"
    nodes = [
        # the front: the features normalized over the piece, doubled in time, plus the style
        node("ReduceMean", [_FEATURES, "axis2"], "mean", front, keepdims=1),
        node("Sub", [_FEATURES, "mean"], "centred", front),
        node("Unsqueeze", ["centred", "axis3"], "col", front),
        node("Concat", ["col", "col"], "twice", front, axis=3),
        node("Reshape", ["twice", "shape_2t"], "fine", front),
        node("Unsqueeze", ["style", "axis2"], "style_col", front),
        node("Add", ["fine", "style_col"], "x", front),
        # the generator: its input normalized over what it is given, times the F0, to samples
        node("ReduceMax", ["x", "axis2"], "peak", gen, keepdims=1),
        node("Div", ["x", "peak"], "scaled", gen),
        node("ReduceSum", ["scaled", "axis1"], "summed", gen, keepdims=0),
        node("Mul", ["summed", _F0], "voiced", gen),
        node("Unsqueeze", ["voiced", "axis2"], "per_step", gen),
        node("Concat", ["per_step", "per_step"], "hop", gen, axis=2),
        node("Reshape", ["hop", "shape_audio"], "audio", gen),
    ]
    constants = [helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
                 helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
                 helper.make_tensor("axis3", TensorProto.INT64, [1], [3]),
                 helper.make_tensor("shape_2t", TensorProto.INT64, [3], [1, 3, -1]),
                 helper.make_tensor("shape_audio", TensorProto.INT64, [3], [1, 1, -1])]
    graph = helper.make_graph(
        nodes, "decoder",
        [helper.make_tensor_value_info(_FEATURES, TensorProto.FLOAT, [1, 3, "T"]),
         helper.make_tensor_value_info(_F0, TensorProto.FLOAT, [1, "T2"]),
         helper.make_tensor_value_info("style", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, 1, "S"])], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _probe(frames: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {_FEATURES: rng.standard_normal((1, 3, frames)).astype(np.float32),
            _F0: rng.uniform(0.5, 2.0, (1, 2 * frames)).astype(np.float32),
            "style": rng.standard_normal((1, 3)).astype(np.float32)}


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    onnx.save(_decoder(), str(tmp_path / "decoder.onnx"))
    return tmp_path


def test_the_decoder_is_cut_before_its_generator_into_parts_that_make_its_audio(work: Path) -> None:
    made = split_at_generator(work, [_probe(5), _probe(9, 1)], [5, 9], [_FEATURES, _F0])
    assert made == {"boundary": "x", "axis": 2, "per_frame": 2, "time_inputs": [_F0],
                    "whole_inputs": []}
    decoder = open_session(work / "decoder.onnx", 1)
    front, generator = (open_session(work / f"{p}.onnx", 1) for p in ("front", "generator"))
    feeds = _probe(13, 2)
    x = front.run(None, {i.name: feeds[i.name] for i in front.get_inputs()})[0]
    audio = generator.run(None, {"x": x, _F0: feeds[_F0]})[0]
    assert np.array_equal(audio, decoder.run(None, feeds)[0])


def test_a_graph_with_no_single_boundary_keeps_its_decoder(work: Path) -> None:
    model = _decoder()
    for node in model.graph.node:  # nothing scoped as the last frame-rate block any more
        node.name = node.name.replace("/decode.3/", "/other/")
    onnx.save(model, str(work / "decoder.onnx"))
    assert split_at_generator(work, [_probe(5)], [5], [_FEATURES, _F0]) is None
    assert sorted(p.name for p in work.iterdir()) == ["decoder.onnx"]


def _packed_decoder(work: Path) -> tuple[PackedDecoder, PackedDecoder, list[Windowed]]:
    made = split_at_generator(work, [_probe(5), _probe(9, 1)], [5, 9], [_FEATURES, _F0])
    assert made is not None
    windowed = [Windowed(_FEATURES, 2, 1, (1, 3)), Windowed(_F0, 1, 2, (1,))]
    whole = PackedDecoder(open_session(work / "decoder.onnx", 1), windowed)
    apart = PackedDecoder(None, windowed, GeneratorApart(
        open_session(work / "front.onnx", 1), open_session(work / "generator.onnx", 1),
        Windowed("x", 2, 2, ()), (windowed[1],)))
    return whole, apart, windowed


def _packed(feeds: dict[str, np.ndarray], windowed: list[Windowed]) -> np.ndarray:
    return np.concatenate([w.pack(feeds[w.name]) for w in windowed], axis=1)


def test_a_piece_run_through_both_parts_is_the_decoders_and_a_window_starts_from_the_whole(
        work: Path) -> None:
    whole, apart, windowed = _packed_decoder(work)
    feeds = _probe(12, 3)
    packed = {PACKED: _packed(feeds, windowed), "style": feeds["style"]}
    reference = whole.run(None, packed)[0].reshape(-1)
    assert np.array_equal(apart.run(None, packed)[0].reshape(-1), reference)
    front = apart.front(packed)
    assert np.array_equal(apart.generate(front, 0, 12), reference)
    # frames [4, 9): the generator's window of the whole piece's front, not the decoder's window
    window = apart.generate(front, 4, 9)
    assert window.shape == (5 * _HOP,)
    cut = {name: w.cut(feeds[name], 4, 9) for name, w in zip((_FEATURES, _F0), windowed,
                                                             strict=True)}
    alone = whole.run(None, {PACKED: _packed({**feeds, **cut}, windowed),
                             "style": feeds["style"]})[0].reshape(-1)
    x = front["x"][..., 8:18]
    by_hand = np.repeat((x / x.max(axis=2, keepdims=True)).sum(axis=1) * front[_F0][:, 8:18], 2)
    assert np.allclose(window, by_hand, rtol=1e-6)
    assert not np.allclose(window, alone, rtol=1e-3)  # the front normalized the window alone


def _identity_encoder(work: Path) -> object:
    """The encoder's part is not under test: a graph that hands on the packed piece it is fed."""
    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Identity", ["given"], [PACKED])], "encoder",
        [helper.make_tensor_value_info("given", TensorProto.FLOAT, [1, 5, "T"]),
         helper.make_tensor_value_info("style", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info(PACKED, TensorProto.FLOAT, [1, 5, "T"])]),
        opset_imports=[helper.make_opsetid("", 18)]), str(work / "encoder.onnx"))
    return open_session(work / "encoder.onnx", 1)


def test_a_split_models_head_and_rest_come_from_one_front_of_the_whole_piece(work: Path) -> None:
    _, apart, windowed = _packed_decoder(work)
    feeds = _probe(20, 4)
    feeds[_FEATURES][..., 1] *= 10  # the piece's peak in the head: a rest alone normalizes apart
    model = SplitModel(_identity_encoder(work), apart, latent=PACKED, extra_inputs=("style",),
                       hop=_HOP, pad=2, largest=1 << 30, head=lambda frames: 6)
    parts = [d.samples for d in model.stream([{"given": _packed(feeds, windowed),
                                                "style": feeds["style"]}])]
    assert [len(p) for p in parts] == [6 * _HOP, 14 * _HOP]
    front = apart.front({PACKED: _packed(feeds, windowed), "style": feeds["style"]})
    assert np.array_equal(parts[0], apart.generate(front, 0, 8)[:6 * _HOP])
    # the rest is the whole piece's audio from the head on, not a window normalized apart
    whole = apart.run(None, {PACKED: _packed(feeds, windowed), "style": feeds["style"]})[0]
    assert np.array_equal(parts[1], whole.reshape(-1)[6 * _HOP:])
    assert not np.allclose(parts[1], apart.generate(front, 4, 20)[2 * _HOP:], rtol=1e-3)


def test_frames_of_the_rest_spread_into_the_heads_call_let_it_normalize_as_the_piece(
        work: Path) -> None:
    """The toy generator normalizes by each channel's peak over what it is given: with the piece's
    peak in its last frame, a head alone is scaled otherwise than the whole piece, and a head
    whose call also decodes frames spread over the rest (the last one among them) is the whole
    piece's head."""
    _, apart, windowed = _packed_decoder(work)
    feeds = _probe(20, 4)
    feeds[_FEATURES][..., 19] = 10.0
    given = {"given": _packed(feeds, windowed), "style": feeds["style"]}
    model = SplitModel(_identity_encoder(work), apart, latent=PACKED, extra_inputs=("style",),
                       hop=_HOP, pad=2, largest=1 << 30, head=lambda frames: 6, head_samples=4)
    parts = [d.samples for d in model.stream([given])]
    whole = apart.run(None, {PACKED: given["given"], "style": given["style"]})[0].reshape(-1)
    front = apart.front({PACKED: given["given"], "style": given["style"]})
    assert [len(p) for p in parts] == [6 * _HOP, 14 * _HOP]
    assert np.allclose(parts[0], whole[:6 * _HOP], rtol=1e-6)
    assert not np.allclose(apart.generate(front, 0, 8)[:6 * _HOP], whole[:6 * _HOP], rtol=1e-3)
    assert np.array_equal(parts[1], whole[6 * _HOP:])


def test_frames_are_spread_evenly_first_and_last_included() -> None:
    assert spread(8, 20, 4) == (8, 12, 15, 19)
    assert spread(8, 11, 4) == (8, 9, 10)  # no more frames than asked: all of them
    assert spread(5, 5, 4) == ()


# ----------------------------------------------------------------- the head sized as measured
def test_the_pace_keeps_the_preparers_figure_until_a_long_call_then_averages() -> None:
    pace = Pace(0.05)
    pace.observe(Pace.MEASURED_FRAMES - 1, 10.0)  # a short call: mostly its fixed cost
    assert (pace.measured, pace.s_per_frame) == (False, 0.05)
    pace.observe(24, 0.24)
    assert pace.measured and pace.s_per_frame == pytest.approx(0.01)
    pace.observe(48, 0.96)  # 0.02 a frame, weighing a quarter
    assert pace.s_per_frame == pytest.approx(0.0125)


def test_the_head_follows_the_decoder_speed_measured_here_once_there_is_one() -> None:
    """A model prepared while the machine was busy measured a slow decoder and sized every later
    head long (heard worse); once this process has timed its own decoder, that speed counts."""
    model = PreparedKokoro(Path("unused"), (), (), hop=600, pad=8, kb_per_frame=450.0,
                           s_per_frame=0.016)  # the preparer's figure, on a busy machine
    pace = Pace(0.016)
    assert model.head_frames(150, pace=pace) == model.head_frames(150)  # nothing timed yet
    pace.observe(100, 0.66)  # idle now: 6.6 ms a frame
    idle = model.head_frames(150, pace=pace)
    assert FIRST_WINDOW_FRAMES <= idle < model.head_frames(150)
    pace.observe(100, 1.0)  # busier: the head grows so that the piece is decoded in its time
    busier = model.head_frames(150, pace=pace)
    assert idle < busier < 150
    for _ in range(20):
        pace.observe(100, 3.0)  # a board under load (or a Pi): no head, the piece whole
    assert model.head_frames(150, pace=pace) == 150


def test_a_head_lasts_while_the_whole_piece_is_decoded_after_it() -> None:
    """No gap after the head: its audio (25 ms a frame) covers the whole piece's decoder call
    (the margin included), and it is never shorter than FIRST_WINDOW_FRAMES."""
    from edged.voice.kokoro.prepared import _MARGIN, HEAD_AT_MOST

    model = PreparedKokoro(Path("unused"), (), (), hop=600, pad=8, kb_per_frame=450.0,
                           s_per_frame=0.0066)
    for frames in (20, 60, 150, 400):
        head = model.head_frames(frames)
        assert head >= FIRST_WINDOW_FRAMES or head == frames
        assert head * 0.025 >= frames * 0.0066 * _MARGIN
        assert head <= max(FIRST_WINDOW_FRAMES, frames * HEAD_AT_MOST + 1) or head == frames
    # a head whose call (context and sampled frames) would be as long as the piece: none
    assert model.head_frames(40) == 40
    assert model.head_frames(60) < 60


def test_the_decoders_calls_are_timed_into_its_pace(work: Path) -> None:
    _, apart, windowed = _packed_decoder(work)
    apart.pace = Pace(1.0)
    feeds = _probe(Pace.MEASURED_FRAMES + 6, 2)
    packed = {PACKED: _packed(feeds, windowed), "style": feeds["style"]}
    front = apart.front(packed)
    apart.generate(front, 0, 5)
    assert not apart.pace.measured  # too short to count
    apart.generate(front, 0, Pace.MEASURED_FRAMES + 6)
    assert apart.pace.measured and 0 < apart.pace.s_per_frame < 1.0
    timed = apart.pace.s_per_frame
    apart.run(None, packed)  # a whole piece counts too
    assert apart.pace.s_per_frame != timed
