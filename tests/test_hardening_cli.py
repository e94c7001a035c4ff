"""Issue 12, on the command line: `edged say -o` never replaces what it should write through
(4), and `check-config` and `run` agree on every hostile config, each with one line and exit 2,
in bounded time and memory (5, 6, 7, 8, 12)."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import threading
import wave
from pathlib import Path

import pytest
import yaml

from tests.harness.paths import EDGED, ROOT

_TIMEOUT_S = 60
_AS_LIMIT = 2 << 30
"""Address space of every edged started here: a read without a bound fails fast, not the host."""


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT, _AS_LIMIT))


def _edged(*args: str | Path, **kw: object) -> subprocess.CompletedProcess[bytes]:
    kw.setdefault("capture_output", True)
    kw.setdefault("cwd", ROOT)
    return subprocess.run([*EDGED, *map(str, args)], timeout=_TIMEOUT_S, preexec_fn=_bounded,
                          **kw)  # type: ignore[call-overload]


def _is_wav(data: bytes) -> float:
    """Seconds of audio in a WAV held in `data` (AssertionError if it is not one)."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", data[:16]
    import io

    with wave.open(io.BytesIO(data)) as w:
        return w.getnframes() / w.getframerate()


# -- 4: say -o ---------------------------------------------------------------------------------


def test_say_writes_through_device_nodes_and_never_replaces_them(
        tmp_path: Path, tiny_voice_path: Path) -> None:
    """-o naming a character device writes to it: a copy of /dev/full (made with mknod) gives
    "No space left on device" in one line and exit 2, a copy of /dev/null takes the WAV; both
    are still devices afterwards (as root, one was replaced by a WAV file)."""
    full, null = tmp_path / "full", tmp_path / "null"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    r = _edged("say", "Hello.", "--voice", tiny_voice_path, "-o", full)
    assert r.returncode == 2
    assert r.stderr.decode().splitlines() == [f"edged: {full}: cannot write: No space left on "
                                              "device"]
    r = _edged("say", "Hello.", "--voice", tiny_voice_path, "-o", null)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(full.stat().st_mode) and stat.S_ISCHR(null.stat().st_mode)


def test_say_writes_through_a_fifo(tmp_path: Path, tiny_voice_path: Path) -> None:
    """-o naming a FIFO: the reader at its other end gets the WAV; the FIFO stays a FIFO."""
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    r = _edged("say", "Through a pipe.", "--voice", tiny_voice_path, "-o", fifo)
    reader.join(_TIMEOUT_S)
    assert r.returncode == 0, r.stderr
    assert _is_wav(got[0]) > 0
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_say_to_stdout_by_dash_or_a_symlink_to_it(tmp_path: Path, tiny_voice_path: Path) -> None:
    """`-o -`, and a symlink to /dev/stdout or /proc/self/fd/1, write the WAV to standard
    output (a pipe here); the symlinks are left as they were."""
    via_dev, via_proc = tmp_path / "dev-stdout", tmp_path / "proc-fd-1"
    via_dev.symlink_to("/dev/stdout")
    via_proc.symlink_to("/proc/self/fd/1")
    for target in ("-", via_dev, via_proc):
        r = _edged("say", "To standard output.", "--voice", tiny_voice_path, "-o", target,
                   cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert _is_wav(r.stdout) > 0, target
    assert via_dev.is_symlink() and via_proc.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev-stdout", "proc-fd-1"]


def test_say_appends_to_a_stdout_opened_for_appending(tmp_path: Path,
                                                      tiny_voice_path: Path) -> None:
    """With stdout appending to a file (`>> log`), `-o` through a link to /dev/stdout writes
    at its end: what the file held is kept (reopening /dev/stdout would truncate it)."""
    link, log = tmp_path / "out", tmp_path / "log"
    link.symlink_to("/dev/stdout")
    log.write_bytes(b"earlier lines\n")
    with open(log, "ab") as out:
        r = _edged("say", "Appended.", "--voice", tiny_voice_path, "-o", link, stdout=out,
                   stderr=subprocess.PIPE, capture_output=False)
    assert r.returncode == 0, r.stderr
    data = log.read_bytes()
    assert data.startswith(b"earlier lines\n") and _is_wav(data[14:]) > 0


def test_say_replaces_a_regular_file_atomically(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A regular file is replaced in one step (a new inode: a reader holding the old one never
    sees half a WAV), and a symlink to one keeps being a symlink to the new file."""
    target, link = tmp_path / "target.wav", tmp_path / "link.wav"
    target.write_bytes(b"old")
    link.symlink_to(target)
    inode = target.stat().st_ino
    r = _edged("say", "Replaced.", "--voice", tiny_voice_path, "-o", link)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and target.stat().st_ino != inode
    assert _is_wav(target.read_bytes()) > 0


# -- 5-8, 12: hostile configs ------------------------------------------------------------------


def _base(tmp_path: Path, voice: Path) -> dict:
    return {"output": "publish", "voice": {"name": str(voice)},
            "cache": {"dir": str(tmp_path / "cache")},
            "mqtt": {"state_dir": str(tmp_path / "state"), "port": 1}}


def _hostile(tmp_path: Path, voice: Path) -> list[tuple[str, str | bytes, str]]:
    """(what, config file content, a piece of the one line both commands must print)."""
    def doc(**sections: dict) -> str:
        data = _base(tmp_path, voice)
        for name, values in sections.items():
            data.setdefault(name, {}).update(values)
        return yaml.safe_dump(data)

    base = doc()
    # "Billion laughs" as the value of a real key: formatting it in an error message hung.
    bomb = "output: [" + ", ".join(
        f"&{c} [{', '.join([f'*{p}'] * 9 if p != ' ' else ['lol'] * 9)}]"
        for p, c in zip(" abcdefgh", "abcdefghi", strict=True)) + "]\n"
    latin1 = tmp_path / "latin1-password"
    latin1.write_bytes(b"caf\xe9\n")
    notwav = tmp_path / "chime.wav"
    notwav.write_text("not a wav")
    slots = {f"s{i}": [f"v{j}" for j in range(100)] for i in range(3)}
    return [
        ("alias bomb", base + bomb, "more than 100000 values once aliases are expanded"),
        ("recursive alias", base + "x: &x [*x]\n", "refers to a collection that contains it"),
        ("deep nesting", base + "x: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 32"),
        ("5000 digits", base + "x: " + "7" * 5000 + "\n", "an integer of 5000 characters"),
        ("NUL in a path", doc(cache={"dir": "a\0b"}), "cache.dir: contains a NUL character"),
        ("NaN", doc(mqtt={"reconnect_min_s": float("nan")}),
         "mqtt.reconnect_min_s: expected a finite number, got nan"),
        ("+ in device_id", base + "device_id: kitchen+1\n", "device_id: must not contain '+'"),
        ("# in the prefix", doc(mqtt={"topic_prefix": "edged/#"}),
         "mqtt.topic_prefix: must not contain '#'"),
        ("10^6 phrases", doc(cache={"phrases": [{"text": "{s0} {s1} {s2}", "slots": slots}]}),
         "expands to 1000000 phrase(s)"),
        ("duplicate key", base + "output: play\n", "key 'output' appears twice"),
        ("bad YAML", base + "x: [\n", "not valid YAML: while parsing a flow node"),
        ("bad date", base + "x: 2024-13-45\n", "not valid YAML: month must be in 1..12"),
        ("non-UTF-8 password", doc(mqtt={"username": "u", "password_file": str(latin1)}),
         "not UTF-8 text"),
        ("chime not a WAV", doc(audio={"chimes": {"high": str(notwav)}}), "audio.chimes.high: "),
        ("binary garbage", b"\x80\x81\x00\x01" * 64, "not valid YAML"),
    ]


def _one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    err = result.stderr.decode(errors="replace")
    assert "Traceback" not in err, err[-2000:]
    lines = err.splitlines()
    assert len(lines) == 1, err[-2000:]
    return lines[0]


def test_check_config_and_run_refuse_every_hostile_config_in_one_line(
        tmp_path: Path, tiny_voice_path: Path) -> None:
    """Alias bombs, recursion, deep nesting, huge integers, NUL, NaN, wildcards in the device
    id or prefix, a template of 10^6 phrases, duplicate keys, YAML errors, a password file
    that is not UTF-8, a chime that is not a WAV: `check-config` and `run` both refuse each with
    the same one line and exit 2, within a 2 GiB address space (check-config once said OK to
    some, hung on others, printed tracebacks or several lines)."""
    for what, content, reason in _hostile(tmp_path, tiny_voice_path):
        path = tmp_path / "edged.yaml"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        checked = _edged("check-config", path)
        line = _one_line(checked)
        assert checked.returncode == 2 and line.startswith("edged: ") and reason in line, (
            what, line)
        ran = _edged("run", "--config", path)
        assert ran.returncode == 2 and _one_line(ran) == line, (what, ran.stderr[-500:])


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_a_config_that_is_not_a_regular_file_is_refused_at_once(
        tmp_path: Path, special: str) -> None:
    """/dev/zero (once read until MemoryError), a FIFO (once waited on for ever) and a folder
    are refused without reading them: one line, exit 2."""
    path = Path(special) if special.startswith("/") else tmp_path / special
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    result = _edged("check-config", path)
    assert result.returncode == 2
    kind = {"fifo": "a FIFO", "folder": "a folder"}.get(special, "a character device")
    assert _one_line(result) == (f"edged: {path}: cannot read config file: not a regular file "
                                 f"({kind})")


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    """argparse's usage errors (an unknown option, a bad choice, a missing argument) are one
    line naming the problem and where help is, exit 2, like every other error."""
    for args, piece in ((["check-config", "--bogus"], "unrecognized arguments: --bogus"),
                        (["run", "--output", "loud"], "argument --output: invalid choice"),
                        (["say"], "the following arguments are required: TEXT")):
        result = _edged(*args)
        assert result.returncode == 2
        line = _one_line(result)
        assert piece in line and line.startswith("edged: ") and "--help" in line, line
