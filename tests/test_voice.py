"""The voice pipeline: exact mechanics on the tiny voice, real speech on the default voice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edged.synthesis import Scheduler
from edged.voice import PiperVoice, VoiceError
from tests.harness.tiny_voice import SAMPLE_RATE, SAMPLES_PER_ID, make_tiny_voice


@pytest.fixture(scope="module")
def tiny(tiny_voice_path: Path) -> PiperVoice:
    return PiperVoice.load(tiny_voice_path, sentence_pause_ms=250)


def test_tiny_voice_exact_samples(tiny: PiperVoice) -> None:
    """Every phoneme id becomes exactly SAMPLES_PER_ID samples of value id/1000."""
    pieces = tiny.pieces("Test one.")
    assert len(pieces) == 1
    ids = tiny._ids(pieces[0].text)
    audio = tiny.synthesize("Test one.")
    assert audio.rate_hz == SAMPLE_RATE
    assert len(audio.samples) == len(ids) * SAMPLES_PER_ID
    # The one float -> int16 rule (edged.audio.to_int16): round(x * 32768).
    expected = np.repeat(np.round(np.array(ids) / 1000 * 32768).astype(np.int16), SAMPLES_PER_ID)
    assert np.array_equal(audio.samples, expected)


def test_stream_one_chunk_per_sentence_with_pause(tiny: PiperVoice) -> None:
    """Two sentences: a chunk each, and the pause as a chunk of its own after the first only (a
    chunk never waits for the next one to be made: the first audio leaves with the first window)."""
    chunks = list(tiny.stream("Test one. Test two."))
    pieces = tiny.pieces("Test one. Test two.")
    assert len(pieces) == 2 and len(chunks) == 3
    pause = SAMPLE_RATE * 250 // 1000
    first_ids = tiny._ids(pieces[0].text)
    second_ids = tiny._ids(pieces[1].text)
    assert len(chunks[0].samples) == len(first_ids) * SAMPLES_PER_ID
    assert len(chunks[1].samples) == pause and not chunks[1].samples.any()
    assert len(chunks[2].samples) == len(second_ids) * SAMPLES_PER_ID


def test_stream_equals_synthesize(tiny: PiperVoice) -> None:
    """Synthesis on the scheduler's worker threads, chunks made ahead, yields the same audio,
    in order."""
    text = "One, two, three, four and more words. Another sentence here! A third?"
    scheduler = Scheduler(2, {"test": 1}, depth=2)
    scheduler.start()
    try:
        with scheduler.submit(lambda lanes: tiny.stream(text, None, lanes), rank=2, source="test") as stream:
            streamed = np.concatenate([c.samples for c in stream])
    finally:
        scheduler.stop()
    assert np.array_equal(streamed, tiny.synthesize(text).samples)


def test_first_piece_is_a_short_clause(tiny: PiperVoice) -> None:
    """The first chunk ends at the first clause, so the first words are ready early."""
    text = ("The washing machine has finished, please empty it soon and hang the laundry "
            "outside on the line in the garden before the rain starts this afternoon.")
    pieces = PiperVoice.load(tiny.onnx_path, max_phonemes=400).pieces(text)
    assert len(pieces) == 2
    assert pieces[0].text.endswith(",") and not pieces[0].ends_sentence
    assert len(pieces[0].text) <= 80 < len(pieces[1].text)
    assert pieces[1].ends_sentence


def test_long_sentence_bounded_by_max_phonemes(tiny_voice_path: Path) -> None:
    """No single inference gets more than max_phonemes phonemes, and no words are lost."""
    voice = PiperVoice.load(tiny_voice_path, max_phonemes=40)
    text = ("The quick brown fox jumps over the lazy dog near the riverbank while the "
            "farmer watches from the old wooden fence and counts his sheep twice")
    pieces = voice.pieces(text)
    assert len(pieces) > 2
    assert all(len(p.text) <= 40 for p in pieces)
    whole = PiperVoice.load(tiny_voice_path, max_phonemes=5000).pieces(text)
    assert "".join(p.text for p in pieces).replace(" ", "") == \
        "".join(p.text for p in whole).replace(" ", "")


def test_speaker_by_name_or_id_reaches_the_model(tmp_path: Path) -> None:
    """A speaker by name or id reaches the model's sid input; unknown speakers are refused."""
    path = make_tiny_voice(tmp_path / "multi.onnx", speakers={"alice": 0, "bob": 3, "c": 1, "d": 2})
    voice = PiperVoice.load(path)
    bob = voice.synthesize("Hi.", voice.settings(speaker="bob"))
    alice = voice.synthesize("Hi.", voice.settings(speaker=0))
    assert int(bob.samples[0]) - int(alice.samples[0]) == pytest.approx(3 / 1000 * 32768, abs=2)
    with pytest.raises(VoiceError, match="no speaker 'carol'"):
        voice.settings(speaker="carol")
    with pytest.raises(VoiceError, match="no speaker"):
        voice.settings(speaker=9)


def test_speed_maps_to_length_scale_and_defaults_apply(tiny: PiperVoice) -> None:
    """Speed maps to Piper's length_scale; the voice's inference defaults apply otherwise."""
    s = tiny.settings()
    assert (s.noise_scale, s.length_scale, s.noise_w) == (0.667, 1.0, 0.8)
    assert tiny.settings(speed=2.0).length_scale == 0.5
    with pytest.raises(VoiceError, match="one speaker"):
        tiny.settings(speaker="bob")


def test_missing_model_file_is_named(tmp_path: Path) -> None:
    """A missing .onnx is a VoiceError naming the file."""
    with pytest.raises(VoiceError, match="nope.onnx: voice model file not found"):
        PiperVoice.load(tmp_path / "nope.onnx")


def test_missing_voice_json_is_named(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A missing .onnx.json is a VoiceError naming the file it expected."""
    shutil.copy(tiny_voice_path, tmp_path / "v.onnx")
    with pytest.raises(VoiceError, match=r"v.onnx.json: voice config file not found"):
        PiperVoice.load(tmp_path / "v.onnx")


def test_unreadable_voice_json_is_named(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A .onnx.json that is not JSON is a VoiceError naming the file."""
    shutil.copy(tiny_voice_path, tmp_path / "v.onnx")
    (tmp_path / "v.onnx.json").write_text("{not json")
    with pytest.raises(VoiceError, match="v.onnx.json: not valid JSON"):
        PiperVoice.load(tmp_path / "v.onnx")


def test_voice_json_missing_keys_are_named(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A .onnx.json without the keys Piper needs names the missing key."""
    shutil.copy(tiny_voice_path, tmp_path / "v.onnx")
    (tmp_path / "v.onnx.json").write_text(json.dumps({"audio": {"sample_rate": 16000}}))
    with pytest.raises(VoiceError, match="missing espeak.voice"):
        PiperVoice.load(tmp_path / "v.onnx")


def test_a_file_that_is_not_onnx_is_refused(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A file that is not an ONNX model is refused with a VoiceError, not a crash."""
    (tmp_path / "v.onnx").write_bytes(b"this is not a model")
    shutil.copy(f"{tiny_voice_path}.json", tmp_path / "v.onnx.json")
    with pytest.raises(VoiceError, match="not a loadable ONNX model"):
        PiperVoice.load(tmp_path / "v.onnx")


def test_onnx_model_without_piper_inputs_is_refused(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A real ONNX model that is not a Piper voice is refused, naming the missing inputs."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "v.onnx"))
    shutil.copy(f"{tiny_voice_path}.json", tmp_path / "v.onnx.json")
    missing = r"not a Piper voice: .*missing \['input', 'input_lengths', 'scales'\]"
    with pytest.raises(VoiceError, match=missing):
        PiperVoice.load(tmp_path / "v.onnx")


def test_fingerprint_changes_with_either_file(tmp_path: Path, tiny_voice_path: Path) -> None:
    """The cache key depends on this: editing the .json must change the fingerprint."""
    shutil.copy(tiny_voice_path, tmp_path / "v.onnx")
    shutil.copy(f"{tiny_voice_path}.json", tmp_path / "v.onnx.json")
    before = PiperVoice.load(tmp_path / "v.onnx").fingerprint
    config = json.loads((tmp_path / "v.onnx.json").read_text())
    config["inference"]["noise_scale"] = 0.5
    (tmp_path / "v.onnx.json").write_text(json.dumps(config))
    assert PiperVoice.load(tmp_path / "v.onnx").fingerprint != before


# ------------------------------------------------------------------ the real default voice
@pytest.fixture(scope="module")
def joe(default_voice_path: Path) -> PiperVoice:
    return PiperVoice.load(default_voice_path)


@pytest.mark.voice
def test_default_voice_speaks(joe: PiperVoice) -> None:
    """Real speech: 22050 Hz, a plausible duration for the words, not silence, not clipped flat."""
    text = "The garage door has been open for 15 minutes. Please close it."
    audio = joe.synthesize(text)
    assert audio.rate_hz == 22050
    assert 2.5 < audio.duration_s < 8.0
    rms = float(np.sqrt(np.mean(audio.samples.astype(np.float64) ** 2)))
    assert rms > 500
    assert np.mean(np.abs(audio.samples) >= 32767) < 0.001


@pytest.mark.voice
def test_default_voice_deterministic_without_noise(joe: PiperVoice) -> None:
    """With noise scales 0 the same text gives the same samples (what the cache relies on)."""
    settings = joe.settings(noise_scale=0.0, noise_w=0.0)
    a = joe.synthesize("Washing machine finished.", settings)
    b = joe.synthesize("Washing machine finished.", settings)
    assert np.array_equal(a.samples, b.samples)


@pytest.mark.voice
def test_double_speed_halves_the_duration(joe: PiperVoice) -> None:
    """speed 2.0 roughly halves the duration."""
    settings = joe.settings(noise_scale=0.0, noise_w=0.0)
    normal = joe.synthesize("Someone is at the front door.", settings).duration_s
    fast = joe.synthesize("Someone is at the front door.",
                          joe.settings(speed=2.0, noise_scale=0.0, noise_w=0.0)).duration_s
    assert 0.35 < fast / normal < 0.65
