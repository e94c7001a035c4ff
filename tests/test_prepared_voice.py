"""Prepared voices: split into encoder + windowed decoder, optimized once, kept in cache.dir/models.

The tiny VITS-shaped voice (tests/harness/tiny_voice.py) has Piper's `/dec/...` layout, a real
receptive field and, when asked, a speaker input the decoder reads: it exercises the split, the
windows and the checks in milliseconds. The real default voice shows it on the real thing.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from edged.config import parse_config
from edged.synthesis import Scheduler
from edged.voice import PiperVoice, load_voice
from edged.voice.catalog.hashes import file_sha256
from edged.voice.lanes import Claimable, SpareThreads
from edged.voice.piper.prepared import ensure_prepared, prepared_folder, read_prepared
from edged.voice.piper.windows import (
    DECODE_WINDOW_FRAMES,
    FIRST_WINDOW_FRAMES,
    MAX_WINDOW_FRAMES,
    largest_window,
    window_bounds,
)
from edged.voice.prepare.split import NotSplittable, split_piper_graph
from tests.harness.tiny_voice import LONG, VITS_HOP, make_tiny_vits_voice, make_tiny_voice
from tests.harness.tiny_voice import prepare_voice as _prepare


def _same_audio(a: PiperVoice, b: PiperVoice, text: str, **settings: object) -> np.ndarray:
    x = a.synthesize(text, a.settings(**settings)).samples  # type: ignore[arg-type]
    y = b.synthesize(text, b.settings(**settings)).samples  # type: ignore[arg-type]
    assert x.size == y.size
    assert np.abs(x.astype(np.int32) - y).max() <= 1, "prepared voice sounds different"
    return x


def test_vits_shaped_voice_is_split_and_sounds_the_same(tmp_path: Path) -> None:
    """A VITS-shaped voice is split at z, and encoder + windowed decoder sound like the whole graph."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    prepared = _prepare(onnx_path, tmp_path / "cache")
    assert prepared.kind == "split"
    assert prepared.latent == "z" and prepared.extra_inputs == ()
    assert prepared.hop == VITS_HOP
    assert 2 <= prepared.pad <= 8  # conv_pre k=5 + upsampling + conv_post k=7: a few frames
    assert {p.name for p in prepared.folder.iterdir()} == {
        "manifest.json", "encoder.onnx", "encoder.weights", "decoder.onnx", "decoder.weights"}

    direct, windowed = PiperVoice.load(onnx_path), PiperVoice.load(onnx_path, prepared=prepared)
    longest = max(len(direct._ids(p.text)) for p in direct.pieces(LONG))
    assert longest > DECODE_WINDOW_FRAMES, "the test text must span several windows"
    audio = _same_audio(direct, windowed, LONG)
    assert np.abs(audio).max() > 1000  # not silence: the comparison means something


def test_multi_speaker_decoder_gets_the_speaker(tmp_path: Path) -> None:
    """A decoder conditioned on the speaker gets sid with every window."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits2.onnx", speakers={"ann": 0, "bob": 1})
    prepared = _prepare(onnx_path, tmp_path / "cache")
    assert prepared.kind == "split" and prepared.extra_inputs == ("sid",)
    direct, windowed = PiperVoice.load(onnx_path), PiperVoice.load(onnx_path, prepared=prepared)
    ann = _same_audio(direct, windowed, LONG, speaker="ann")
    bob = _same_audio(direct, windowed, LONG, speaker="bob")
    assert np.abs(ann.astype(np.int32) - bob).max() > 100  # the decoder really reads sid


def test_decoder_that_needs_the_whole_sentence_is_kept_whole(tmp_path: Path) -> None:
    """A decoder normalizing over the whole sentence differs per window: the probe finds out."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "norm.onnx", global_norm=True)
    prepared = _prepare(onnx_path, tmp_path / "cache")
    assert prepared.kind == "whole"
    assert "windowed decoding still differs" in prepared.note
    _same_audio(PiperVoice.load(onnx_path), PiperVoice.load(onnx_path, prepared=prepared), LONG)


def test_graph_without_decoder_names_is_prepared_whole(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A graph that cannot be split is still optimized ahead, and kept whole."""
    prepared = _prepare(tiny_voice_path, tmp_path / "cache")
    assert prepared.kind == "whole"
    assert "no /dec/" in prepared.note
    names = {p.name for p in prepared.folder.iterdir()}
    assert "model.onnx" in names and "encoder.onnx" not in names
    direct, loaded = PiperVoice.load(tiny_voice_path), PiperVoice.load(tiny_voice_path, prepared=prepared)
    text = "Hello there."
    assert np.array_equal(direct.synthesize(text).samples, loaded.synthesize(text).samples)


def test_decoder_reading_the_phoneme_inputs_is_not_split(tmp_path: Path) -> None:
    """A decoder that reads `input_lengths` (as a mask would) cannot be run on windows."""
    model = onnx.load(str(make_tiny_vits_voice(tmp_path / "vits.onnx")))
    tanh = next(n for n in model.graph.node if n.name == "/dec/Tanh")
    tanh.input[0] = "post_len"
    model.graph.node.extend([
        onnx.helper.make_node("Cast", ["input_lengths"], ["len_f"], to=onnx.TensorProto.FLOAT,
                              name="/Cast_len"),
        onnx.helper.make_node("Add", ["post", "len_f"], ["post_len"], name="/dec/AddLen"),
    ])
    # Keep the nodes in topological order for the checker: Tanh and the reshape go last.
    nodes = sorted(model.graph.node, key=lambda n: n.name in ("/dec/Tanh", "/Reshape_out"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.checker.check_model(model)
    with pytest.raises(NotSplittable, match=r"reads \['input_lengths'\].*cannot be run on windows"):
        split_piper_graph(model)


def test_second_load_reuses_the_folder(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The second load uses the prepared folder: no child process, same files."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    first = _prepare(onnx_path, tmp_path / "cache")
    stamp = (first.folder / "manifest.json").stat().st_mtime_ns
    caplog.set_level(logging.INFO, logger="edged.voice.piper.prepared")
    again = _prepare(onnx_path, tmp_path / "cache")
    assert again == first
    assert (first.folder / "manifest.json").stat().st_mtime_ns == stamp
    assert "Preparing" not in caplog.text


def test_damaged_weights_are_prepared_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A flipped bit in the weights fails the checksum and the voice is prepared again."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    first = _prepare(onnx_path, tmp_path / "cache")
    weights = first.folder / "decoder.weights"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x40
    weights.write_bytes(bytes(data))
    assert read_prepared(first.folder, file_sha256(onnx_path)) is None
    caplog.set_level(logging.INFO, logger="edged.voice.piper.prepared")
    again = _prepare(onnx_path, tmp_path / "cache")
    assert "decoder.weights fails its checksum" in caplog.text
    assert "Preparing voice vits.onnx" in caplog.text
    assert weights.read_bytes() != bytes(data)
    _same_audio(PiperVoice.load(onnx_path), PiperVoice.load(onnx_path, prepared=again), LONG)


def test_new_onnxruntime_version_prepares_again(tmp_path: Path) -> None:
    """Another onnxruntime version prepares again (its optimized graphs may differ)."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    first = _prepare(onnx_path, tmp_path / "cache")
    manifest = json.loads((first.folder / "manifest.json").read_text())
    manifest["onnxruntime"] = "0.0.1"
    (first.folder / "manifest.json").write_text(json.dumps(manifest))
    assert read_prepared(first.folder, file_sha256(onnx_path)) is None
    again = _prepare(onnx_path, tmp_path / "cache")
    assert json.loads((again.folder / "manifest.json").read_text())["onnxruntime"] != "0.0.1"


def test_changed_model_gets_a_new_folder_and_the_old_one_goes(tmp_path: Path) -> None:
    """A changed model gets its own folder; the stale one is removed."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    first = _prepare(onnx_path, tmp_path / "cache")
    make_tiny_vits_voice(onnx_path, speakers={"a": 0, "b": 1})  # same name, another model
    second = _prepare(onnx_path, tmp_path / "cache")
    assert second.folder != first.folder
    assert second.extra_inputs == ("sid",)
    assert not first.folder.exists()
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir()] == [second.folder.name]


def test_two_processes_preparing_at_once(tmp_path: Path) -> None:
    """`edged cache warm` and the daemon may prepare the same voice together: one folder wins,
    both see it whole, nothing half-written is left behind."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    sha = file_sha256(onnx_path)
    folder = prepared_folder(tmp_path / "cache", onnx_path, sha)
    folder.parent.mkdir(parents=True)
    argv = [sys.executable, "-m", "edged.voice.prepare", str(onnx_path), str(folder), sha]
    procs = [subprocess.Popen(argv, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert read_prepared(folder, sha) is not None
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]


def test_unpreparable_voice_is_loaded_directly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """cache.dir/models cannot be made (a file is in the way, even for root): one warning, and the
    voice still loads and speaks."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").write_text("in the way")
    caplog.set_level(logging.INFO)
    assert ensure_prepared(onnx_path, file_sha256(onnx_path), cache) is None
    assert "cannot prepare it" in caplog.text and "loading it directly" in caplog.text


def test_child_failure_is_one_line_in_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A preparer that fails is one log line, and the voice is loaded directly."""
    broken = tmp_path / "v" / "broken.onnx"
    make_tiny_voice(broken)
    broken.write_bytes(b"not a model")
    caplog.set_level(logging.WARNING)
    assert ensure_prepared(broken, file_sha256(broken), tmp_path / "cache") is None
    line = next(r.getMessage() for r in caplog.records if "cannot prepare" in r.getMessage())
    assert "broken.onnx" in line and "\n" not in line
    assert not list((tmp_path / "cache" / "models").iterdir())  # no half-written folder


@pytest.mark.voice
def test_default_voice_prepared_through_the_config(tmp_path: Path, default_voice_path: Path) -> None:
    """The real voice as the daemon loads it: split, and the same audio as the .onnx loaded as it is,
    for the longest corpus line (several pieces, several windows each)."""
    from tests.harness.asr import corpus_lines

    longest = max(corpus_lines()[0], key=len)
    config = parse_config({"voice": {"name": str(default_voice_path), "precision": "float32"},
                           "cache": {"dir": "cache"}}, tmp_path)
    voice = load_voice(config)
    folders = list((tmp_path / "cache" / "models").iterdir())
    assert len(folders) == 1
    manifest = json.loads((folders[0] / "manifest.json").read_text())
    assert manifest["kind"] == "split", manifest.get("note")
    assert manifest["hop"] == 256 and manifest["pad"] <= 32
    assert 100 < manifest["decoder_kb_per_frame"] < 400  # measured ~220 (32 channels x 256 x ...)
    assert manifest["flow"]["pad"] == 32  # 4 coupling layers of 4 convolutions of kernel 5
    direct = PiperVoice.load(default_voice_path, threads=voice.threads, max_phonemes=voice.max_phonemes)
    _same_audio(direct, voice, longest, noise_scale=0.0, noise_w=0.0)  # noise off: repeatable
    off = parse_config({"voice": {"name": str(default_voice_path), "prepare": False},
                        "cache": {"dir": "cache2"}}, tmp_path)
    load_voice(off)
    assert not (tmp_path / "cache2" / "models").exists()


@pytest.mark.voice
def test_int8_precision_quantizes_all_but_the_decoder(tmp_path: Path, default_voice_path: Path) -> None:
    """`voice.precision: int8`, the default: a smaller encoder, a float decoder (still windowed),
    its own folder next to the float32 one (one setting away), and a fingerprint of its own (the
    phrase cache must not serve float32 audio for it)."""
    def config(precision: str | None) -> object:
        chosen = {"precision": precision} if precision else {}  # None: the default, INT8
        return parse_config({"voice": {"name": str(default_voice_path), **chosen},
                             "cache": {"dir": "cache"}}, tmp_path)

    int8 = load_voice(config(None))  # type: ignore[arg-type]
    assert int8.precision == "int8"
    folder = next((tmp_path / "cache" / "models").glob("en_US-joe-medium-int8-*"))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["precision"], manifest["kind"]) == ("int8", "split")
    assert manifest["flow"]["pad"] is None  # quantized per tensor: it runs whole
    assert manifest["files"]["encoder.weights"]["size"] < 20e6  # float32: 55.8 MB
    def ops(name: str) -> set[str]:
        return {n.op_type for n in onnx.load(str(folder / name), load_external_data=False).graph.node}

    assert not ops("decoder.onnx") & {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"}
    assert "DynamicQuantizeLinear" in ops("encoder.onnx")
    float32 = load_voice(config("float32"))  # type: ignore[arg-type]
    assert float32.precision == "float32"
    assert len(list((tmp_path / "cache" / "models").iterdir())) == 2  # neither replaced the other
    assert int8.fingerprint != float32.fingerprint
    audio = int8.synthesize("The front door is open.").samples
    assert np.abs(audio).max() > 3000


def test_prepared_voice_streams_window_by_window(tmp_path: Path) -> None:
    """Each decoder window is a chunk of its own: the first words can play before the rest of a
    long piece is decoded. The chunks join to exactly the whole, pause included."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    voice = PiperVoice.load(onnx_path, prepared=_prepare(onnx_path, tmp_path / "cache"))
    text = f"{LONG} {LONG}"
    pieces = voice.pieces(text)
    chunks = list(voice.stream(text))
    assert len(chunks) > len(pieces)
    first_frames = len(voice._ids(pieces[0].text))
    assert len(chunks[0].samples) < first_frames * VITS_HOP  # not the whole first piece
    joined = np.concatenate([c.samples for c in chunks])
    assert np.array_equal(joined, voice.synthesize(text).samples)


def test_work_folders_of_dead_preparers_are_removed(tmp_path: Path) -> None:
    """A preparer killed at its timeout leaves a work folder of tens of MB: the next one removes
    it; a live preparer's folder stays."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    sha = file_sha256(onnx_path)
    folder = prepared_folder(tmp_path / "cache", onnx_path, sha)
    folder.parent.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    leftover = folder.with_name(f".{folder.name}.{dead}.tmp")
    leftover.mkdir()
    (leftover / "encoder.weights").write_bytes(b"x" * 1000)
    live = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    live.mkdir()
    _prepare(onnx_path, tmp_path / "cache")
    assert not leftover.exists()
    assert live.exists()


def test_the_first_window_is_short_and_the_next_ones_grow(tmp_path: Path) -> None:
    """An announcement's first chunk is FIRST_WINDOW_FRAMES of latent (the first sound waits for
    the encoder and one small decoder call); the next windows double up to the largest the
    budget allows; the whole still sounds as the unwindowed voice."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    prepared = _prepare(onnx_path, tmp_path / "cache")
    voice = PiperVoice.load(onnx_path, prepared=prepared, memory_mb=64)
    frames = [len(c.samples) // VITS_HOP for c in voice.stream(LONG)]
    largest = prepared.largest_window(1, 64)
    first_piece = len(voice._ids(voice.pieces(LONG)[0].text))  # one latent frame per id here
    grown = [b - a for a, b in window_bounds(first_piece, largest, FIRST_WINDOW_FRAMES)]
    assert frames[:len(grown)] == grown and grown[0] == FIRST_WINDOW_FRAMES < grown[1]
    assert max(frames) <= largest
    _same_audio(PiperVoice.load(onnx_path), voice, LONG)


def test_windows_decoded_on_two_workers_equal_the_sequential_decode(tmp_path: Path) -> None:
    """Through the scheduler with two workers (windows and the next piece's encoder on both), the
    chunks come in order and join to exactly the audio made on one thread, pauses included."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "vits.onnx")
    prepared = _prepare(onnx_path, tmp_path / "cache")
    voice = PiperVoice.load(onnx_path, prepared=prepared, lanes=2, memory_mb=64)
    text = f"{LONG} {LONG} {LONG}"
    alone = [c.samples for c in voice.stream(text)]
    scheduler = Scheduler(2, {"t": 1})
    scheduler.start()
    try:
        for _ in range(3):
            with scheduler.submit(lambda lanes: voice.stream(text, None, lanes), rank=2,
                                  source="t") as stream:
                together = [c.samples for c in stream]
            assert [len(c) for c in together] == [len(c) for c in alone]
            assert np.array_equal(np.concatenate(together), np.concatenate(alone))
    finally:
        scheduler.stop()


def test_pieces_decoded_at_once_equal_the_sequential_decode(tmp_path: Path) -> None:
    """`edged say` to a file: every piece a job of its own (its encoder, then its windows) on
    lanes of spare threads, two at once; the pieces join in order, pauses included, to exactly
    the audio made on one thread. With the flow apart too (its first window is not used)."""
    for flow in ("", "local"):
        onnx_path = make_tiny_vits_voice(tmp_path / f"v{flow}" / "vits.onnx", flow=flow)
        prepared = _prepare(onnx_path, tmp_path / f"cache{flow}")
        voice = PiperVoice.load(onnx_path, prepared=prepared, memory_mb=64)
        text = f"{LONG} {LONG} {LONG}"
        alone = np.concatenate([c.samples for c in voice.stream(text)])
        pieces = len(voice.pieces(text))
        assert pieces > 1
        with _CountedThreads(2) as lanes:
            together = np.concatenate([c.samples for c in voice.stream(text, None, lanes)])
        assert lanes.offered == pieces - 1, "each piece but the first offered whole"
        assert np.array_equal(together, alone)


class _CountedThreads(SpareThreads):
    """SpareThreads that count what the stream offered them."""

    def __init__(self, width: int) -> None:
        super().__init__(width)
        self.offered = 0

    def offer(self, job: Claimable) -> None:
        self.offered += 1
        super().offer(job)


def test_a_flow_apart_gives_the_first_window_from_its_own_frames(tmp_path: Path) -> None:
    """A voice whose flow can be split off: preparing measures its context (receptive field 4:
    8 frames), the first window is made from the flow of its own frames while the rest of the
    flow runs on another worker, and the voice sounds as the .onnx loaded as it is, on one
    thread and through the scheduler with two workers."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "flow.onnx", flow="local")
    prepared = _prepare(onnx_path, tmp_path / "cache")
    assert prepared.flow is not None and prepared.flow.pad == 8
    assert "flow.onnx" in {p.name for p in prepared.folder.iterdir()}
    voice = PiperVoice.load(onnx_path, prepared=prepared, lanes=2, memory_mb=64)
    direct = _same_audio(PiperVoice.load(onnx_path), voice, LONG)
    alone = voice.synthesize(LONG).samples
    assert len(next(voice.stream(LONG)).samples) == FIRST_WINDOW_FRAMES * VITS_HOP
    scheduler = Scheduler(2, {"t": 1})
    scheduler.start()
    try:
        with scheduler.submit(lambda lanes: voice.stream(LONG, None, lanes), rank=2, source="t") as stream:
            together = np.concatenate([c.samples for c in stream])
    finally:
        scheduler.stop()
    # The prepared voice through the scheduler is itself alone, exactly; the whole graph is the
    # prepared voice's within one step (_same_audio): compared exactly, a sample rounded the
    # other way failed this once in a full run.
    assert np.array_equal(together, alone), f"differs from sample {np.argmax(together != alone)}"
    assert np.abs(together.astype(np.int32) - direct).max() <= 1


def test_a_flow_that_needs_the_whole_piece_runs_whole(tmp_path: Path) -> None:
    """A flow whose windows differ from the whole (as an INT8 flow's do: its activations are
    quantized with the whole tensor's scale) is kept apart but never windowed; same audio."""
    onnx_path = make_tiny_vits_voice(tmp_path / "v" / "global.onnx", flow="global")
    prepared = _prepare(onnx_path, tmp_path / "cache")
    assert prepared.kind == "split" and prepared.flow is not None and prepared.flow.pad is None
    manifest = json.loads((prepared.folder / "manifest.json").read_text())
    assert "runs whole" in manifest["flow"]["note"]
    _same_audio(PiperVoice.load(onnx_path), PiperVoice.load(onnx_path, prepared=prepared), LONG)


@pytest.mark.parametrize(("frames", "largest", "first", "sizes"), [
    (236, 96, 24, [24, 48, 82, 82]),     # grown to the largest, the rest in equal windows
    (236, 192, 24, [24, 48, 164]),       # a tail under half the next window joins the last
    (300, 384, 24, [24, 48, 96, 132]),
    (20, 96, 24, [20]),                  # shorter than the first window
    (60, 96, 24, [24, 36]),
    (200, 96, 0, [67, 66, 67]),          # later pieces: the fewest equal windows
    (96, 96, 0, [96]),
])
def test_window_bounds_grow_from_the_first(frames: int, largest: int, first: int,
                                           sizes: list[int]) -> None:
    """A short first window when asked, then doubling up to `largest`, no short tail."""
    bounds = window_bounds(frames, largest, first)
    assert [b - a for a, b in bounds] == sizes
    assert bounds[0][0] == 0 and bounds[-1][1] == frames
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))


@given(frames=st.integers(1, 3000), largest=st.integers(48, MAX_WINDOW_FRAMES),
       first=st.sampled_from([0, 16, FIRST_WINDOW_FRAMES, 32]))
def test_window_bounds_cover_every_frame_once_within_the_largest(frames: int, largest: int,
                                                                 first: int) -> None:
    """Every frame in exactly one window, none over `largest`, the first as asked, and each
    window at most four times the one before (doubling, and a short tail joined)."""
    sizes = [b - a for a, b in window_bounds(frames, largest, first)]
    assert sum(sizes) == frames and min(sizes) > 0 and max(sizes) <= largest
    if first and frames > first:
        assert sizes[0] == first
        assert all(b <= 4 * a for a, b in zip(sizes, sizes[1:], strict=False))


def test_largest_window_follows_the_budget_and_the_lanes() -> None:
    """The windows being decoded at once fit DECODER_SHARE of limits.memory_mb: more lanes or a
    smaller budget, smaller windows, within [2 x first window, MAX_WINDOW_FRAMES]; unmeasured:
    the default size."""
    default_voice = 190.0  # KB per frame, as measured for en_US-joe-medium
    assert largest_window(400, 2, default_voice, 12) == 110
    assert largest_window(400, 1, default_voice, 12) > largest_window(400, 2, default_voice, 12)
    assert largest_window(800, 2, default_voice, 12) > largest_window(400, 2, default_voice, 12)
    assert largest_window(64, 4, default_voice, 12) == 2 * FIRST_WINDOW_FRAMES
    assert largest_window(65536, 1, default_voice, 12) == MAX_WINDOW_FRAMES
    assert largest_window(400, 2, 0.0, 12) == DECODE_WINDOW_FRAMES
