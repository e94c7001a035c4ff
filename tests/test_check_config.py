"""Start-up checks (edged.checks) and `edged check-config`: real files, the real default voice,
real certificates; every problem is one line naming the key or file."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
import yaml

from edged import checks
from edged.audio import Audio, to_wav_bytes
from edged.config import Config, ConfigError, load_config
from edged.voice.catalog import hashes
from edged.voice.catalog.known import CatalogError, load_catalog
from tests.harness.paths import EDGED

_VOICE = "en_US-joe-medium"
_TIMEOUT_S = 60


def write_config(tmp_path: Path, data: dict, name: str = "edged.yaml") -> Path:
    data.setdefault("cache", {}).setdefault("dir", str(tmp_path / "cache"))
    data.setdefault("mqtt", {}).setdefault("state_dir", str(tmp_path / "state"))
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def check_config_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EDGED, "check-config", *args], capture_output=True, text=True,
                          timeout=_TIMEOUT_S, cwd=cwd)


@pytest.fixture
def voice_copy(tmp_path: Path, default_voice_path: Path) -> Path:
    """The default voice copied into a folder named by voice.dirs (so tests can damage it)."""
    folder = tmp_path / "voices"
    folder.mkdir()
    for suffix in (".onnx", ".onnx.json"):
        shutil.copy2(f"{default_voice_path.with_suffix('')}{suffix}", folder / f"{_VOICE}{suffix}")
    return folder / f"{_VOICE}.onnx"


# ------------------------------------------------------------------------------ the command
def test_cli_ok_with_default_voice(tmp_path: Path) -> None:
    """A good config: 'config OK' on stdout, nothing on stderr, exit 0; FILE and --config both
    work; the voice's sha256 is remembered in cache.dir for the next start."""
    (tmp_path / "cache").mkdir()
    cfg = write_config(tmp_path, {"voice": {"name": _VOICE}})
    for args in ((str(cfg),), ("--config", str(cfg))):
        result = check_config_cli(*args)
        assert (result.returncode, result.stderr) == (0, "")
        assert result.stdout == f"edged: config OK: {cfg}\n"
    remembered = json.loads((tmp_path / "cache" / hashes.HASH_MEMO_NAME).read_text())
    expected = {f.sha256 for f in load_catalog()[_VOICE].files}
    assert {e["sha256"] for e in remembered.values()} == expected


def test_cli_reports_every_problem_one_line_each(tmp_path: Path) -> None:
    """Several problems: one 'edged: <key or file>: …' line each on stderr, exit 2, no
    traceback, nothing on stdout."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cfg = write_config(tmp_path, {
        "voice": {"name": str(tmp_path / "missing.onnx")},
        "cache": {"dir": str(blocker / "cache")},
        "mqtt": {"username": "edged", "password_file": str(tmp_path / "no-password")},
    })
    result = check_config_cli(str(cfg))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 3, result.stderr
    assert lines[0].startswith(f"edged: cache.dir: cannot create {blocker}/cache: ")
    assert lines[1].startswith("edged: voice.name: ") and "missing.onnx" in lines[1]
    assert lines[2].startswith("edged: mqtt.password_file: ") and "no-password" in lines[2]


def test_cli_bad_key_is_one_line(tmp_path: Path) -> None:
    """A config error (unknown key) is the usual one line naming the key, exit 2."""
    cfg = write_config(tmp_path, {"limits": {"memroy_mb": 300}})
    result = check_config_cli(str(cfg))
    assert result.returncode == 2
    assert result.stderr.startswith("edged: limits.memroy_mb: unknown key")
    assert len(result.stderr.splitlines()) == 1


def test_cli_needs_a_file(tmp_path: Path) -> None:
    """No FILE, no --config and no config/edged.yaml in the folder: a clear error, exit 2;
    FILE and a different --config together are refused."""
    result = check_config_cli(cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("edged: no config file")
    a, b = write_config(tmp_path, {}, "a.yaml"), write_config(tmp_path, {}, "b.yaml")
    result = check_config_cli(str(a), "--config", str(b))
    assert result.returncode == 2 and "not both" in result.stderr


# ------------------------------------------------------------------------------ folders
def test_unwritable_cache_dir_is_named(tmp_path: Path) -> None:
    """cache.dir that is a file, or lies under a file, is reported naming the key and path
    (a path under a regular file is unwritable even for root)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert checks.check_writable_dir(afile, "cache.dir") == f"cache.dir: {afile} is not a folder"
    under = afile / "deeper" / "cache"
    for create in (False, True):
        problem = checks.check_writable_dir(under, "cache.dir", create=create)
        assert problem is not None and problem.startswith(f"cache.dir: cannot create {under}: ")
    assert not (tmp_path / "deeper").exists()


def test_unwritable_state_dir_is_named(tmp_path: Path, tiny_voice_path: Path) -> None:
    """mqtt.state_dir (where finished request ids are remembered) is checked like cache.dir."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    cfg = load_config(write_config(tmp_path, {"voice": {"name": str(tiny_voice_path)},
                                              "mqtt": {"state_dir": str(afile / "state")}}))
    problems = checks.run_checks(cfg)
    assert len(problems) == 1
    assert problems[0].startswith(f"mqtt.state_dir: cannot create {afile}/state: ")


def test_writable_cache_dir_made_only_when_asked(tmp_path: Path) -> None:
    """A missing cache.dir under a writable folder passes; check-config does not create it,
    the daemon (create=True) does; no probe file is left behind."""
    target = tmp_path / "new" / "cache"
    assert checks.check_writable_dir(target, "cache.dir") is None
    assert not target.parent.exists()
    assert checks.check_writable_dir(target, "cache.dir", create=True) is None
    assert target.is_dir() and list(target.iterdir()) == []
    assert checks.check_writable_dir(target, "cache.dir") is None
    assert list(target.iterdir()) == []


# ------------------------------------------------------------------------------ voice
def test_voice_checksum_mismatch_same_size(tmp_path: Path, voice_copy: Path) -> None:
    """A catalog voice whose model was damaged (one byte changed, same size) fails its sha256
    even after an earlier good check remembered the hash (the mtime changed)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    cfg = load_config(write_config(tmp_path, {"voice": {"dirs": [str(voice_copy.parent)]}}))
    assert checks.run_checks(cfg) == []
    with voice_copy.open("r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    problems = checks.run_checks(cfg)
    assert len(problems) == 1
    assert problems[0].startswith(f"{voice_copy}: sha256 ")
    assert "does not match the catalog" in problems[0]


def test_voice_wrong_size_and_missing_json(tmp_path: Path, voice_copy: Path) -> None:
    """A truncated model is caught by its size (no hashing needed); a missing .onnx.json is
    named."""
    cfg = load_config(write_config(tmp_path, {"voice": {"dirs": [str(voice_copy.parent)]}}))
    os.truncate(voice_copy, 1000)
    problems = checks.run_checks(cfg)
    assert problems == [f"{voice_copy}: size 1000 bytes, the catalog says "
                        f"{load_catalog()[_VOICE].files[0].size} (incomplete or different file)"]
    Path(f"{voice_copy}.json").unlink()
    problems = checks.run_checks(cfg)
    assert len(problems) == 1 and problems[0].startswith(f"{voice_copy}.json: ")


def test_remembered_hash_is_used(tmp_path: Path, voice_copy: Path) -> None:
    """A restart reads the remembered sha256 instead of rehashing the 63 MB model: a forged
    entry with the file's exact size/mtime/inode is believed (and then reported)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    cfg = load_config(write_config(tmp_path, {"voice": {"dirs": [str(voice_copy.parent)]}}))
    assert checks.run_checks(cfg) == []
    store = cache / hashes.HASH_MEMO_NAME
    remembered = json.loads(store.read_text())
    remembered[str(voice_copy.resolve())]["sha256"] = "0" * 64
    store.write_text(json.dumps(remembered))
    hashes.clear_process_memo()  # what a restart forgets; the memo file is what remains
    problems = checks.run_checks(cfg)
    assert len(problems) == 1 and f"sha256 {'0' * 64} does not match" in problems[0]
    # The bad entry was dropped: the next check hashes the file again and passes.
    assert checks.run_checks(cfg) == []


def test_damaged_hash_cache_is_ignored(tmp_path: Path, voice_copy: Path) -> None:
    """A garbled remembered-hash file is not an error: the voice is simply hashed again."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / hashes.HASH_MEMO_NAME).write_text("{not json")
    cfg = load_config(write_config(tmp_path, {"voice": {"dirs": [str(voice_copy.parent)]}}))
    assert checks.run_checks(cfg) == []
    assert json.loads((cache / hashes.HASH_MEMO_NAME).read_text())


def test_voice_not_in_catalog_only_needs_files(tmp_path: Path, tiny_voice_path: Path) -> None:
    """A voice the catalog does not list passes on presence alone; an unknown name fails."""
    cfg = load_config(write_config(tmp_path, {"voice": {"name": str(tiny_voice_path)}}))
    assert checks.run_checks(cfg) == []
    cfg = load_config(write_config(tmp_path, {"voice": {"name": "xx_XX-nobody-low"}}))
    problems = checks.run_checks(cfg)
    assert len(problems) == 1 and problems[0].startswith("voice.name: ")
    assert "xx_XX-nobody-low" in problems[0]


def test_checkout_catalog_lists_the_default_voice() -> None:
    """models/voices.yaml is found from a checkout and lists the default voice's two files."""
    voice = load_catalog()[_VOICE]
    assert {f.name for f in voice.files} == {f"{_VOICE}.onnx", f"{_VOICE}.onnx.json"}
    assert all(len(f.sha256) == 64 and f.size > 0 for f in voice.files)


@pytest.mark.parametrize("body, where", [
    ("voices: [a]", "expected a 'voices:' mapping"),
    ("voices:\n  v:\n    files:\n      v.onnx: {sha256: abc, size: 1}", "v.onnx.sha256"),
    ("voices:\n  v:\n    files:\n      ../v.onnx: {sha256: " + "a" * 64 + ", size: 1}",
     "plain file name"),
])
def test_malformed_catalog_is_an_error_naming_file_and_entry(tmp_path: Path, body: str, where: str) -> None:
    """A broken catalog is an error naming the file and the entry, not a crash."""
    path = tmp_path / "voices.yaml"
    path.write_text(body)
    with pytest.raises(CatalogError, match=where) as err:
        load_catalog(path)
    assert str(err.value).startswith(f"{path}: ")


# ------------------------------------------------------------------------------ MQTT files
def test_password_file_problems_are_named(tmp_path: Path, tiny_voice_path: Path) -> None:
    """mqtt.password_file: missing, empty, a folder, or set without a username."""
    base = {"voice": {"name": str(tiny_voice_path)}}
    pw = tmp_path / "pw"
    cases = [
        ({"username": "u", "password_file": str(pw)}, "No such file"),
        ({"username": "u", "password_file": str(tmp_path)}, "not a regular file"),
    ]
    for mqtt, expected in cases:
        problems = checks.run_checks(load_config(write_config(tmp_path, {**base, "mqtt": mqtt})))
        assert len(problems) == 1 and problems[0].startswith("mqtt.password_file: ")
        assert expected in problems[0]
    pw.write_text("\n")
    cfg = load_config(write_config(tmp_path, {**base, "mqtt": {"username": "u",
                                                               "password_file": str(pw)}}))
    assert checks.run_checks(cfg) == [f"mqtt.password_file: {pw} is empty"]
    pw.write_text("s3cret\n")
    assert checks.run_checks(cfg) == []
    with pytest.raises(ConfigError) as err:  # a rule between fields: the config layer's
        load_config(write_config(tmp_path, {**base, "mqtt": {"password_file": str(pw)}}))
    assert str(err.value) == "mqtt.password_file: set without mqtt.username"
    assert "s3cret" not in str(err.value)


def _make_cert(tmp_path: Path, name: str) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_tls_files_that_do_not_load_are_named(tmp_path: Path, tiny_voice_path: Path) -> None:
    """mqtt.tls: good CA + cert + key pass; a key of another certificate, a CA that is not
    PEM, a missing file, and a key without a cert are each one line naming the key."""
    ca, _ = _make_cert(tmp_path, "ca")
    cert, key = _make_cert(tmp_path, "client")
    _, other_key = _make_cert(tmp_path, "other")
    junk = tmp_path / "junk.pem"
    junk.write_text("hello")

    def problems(tls: dict) -> list[str]:
        data = {"voice": {"name": str(tiny_voice_path)}, "mqtt": {"tls": tls}}
        return checks.run_checks(load_config(write_config(tmp_path, data)))

    assert problems({"ca_file": str(ca), "cert_file": str(cert), "key_file": str(key)}) == []
    bad = problems({"cert_file": str(cert), "key_file": str(other_key)})
    assert len(bad) == 1 and bad[0].startswith(f"mqtt.tls.cert_file: {cert}: ")
    bad = problems({"ca_file": str(junk)})
    assert len(bad) == 1 and bad[0].startswith(f"mqtt.tls.ca_file: {junk}: not a PEM")
    bad = problems({"ca_file": str(tmp_path / "nope.crt")})
    assert len(bad) == 1 and bad[0].startswith("mqtt.tls.ca_file: ") and "nope.crt" in bad[0]
    with pytest.raises(ConfigError) as err:  # a rule between fields: the config layer's
        problems({"key_file": str(key)})
    assert str(err.value) == "mqtt.tls.key_file: set without mqtt.tls.cert_file"


# ------------------------------------------------------------------------------ WAV, memory
def _raw_wav(path: Path, *, channels: int, width: int, frames: bytes) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(8000)
        w.writeframes(frames)
    return path


def test_chime_check_accepts_what_the_player_plays_and_names_the_rest(tmp_path: Path) -> None:
    """A chime must be what the player can play: a readable, non-empty 16-bit WAV, mono or
    stereo, at most 10 s (one loader for both); anything else is one line naming key and file."""
    good = tmp_path / "chime.wav"
    good.write_bytes(to_wav_bytes(Audio(np.ones(100, dtype=np.int16), 22050)))
    assert checks.check_wav_file(good, "audio.chime") is None
    stereo = _raw_wav(tmp_path / "stereo.wav", channels=2, width=2, frames=b"\1\0" * 400)
    assert checks.check_wav_file(stereo, "audio.chime") is None
    text = tmp_path / "chime.txt"
    text.write_text("ding")
    assert checks.check_wav_file(text, "audio.chime").startswith(
        f"audio.chime: {text}: not a usable chime: not a WAV file")
    eight_bit = _raw_wav(tmp_path / "8bit.wav", channels=1, width=1, frames=b"\x80" * 400)
    assert "expected 16-bit mono or stereo" in checks.check_wav_file(eight_bit, "audio.chime")
    long = tmp_path / "long.wav"
    long.write_bytes(to_wav_bytes(Audio(np.ones(11 * 8000, dtype=np.int16), 8000)))
    assert "11.0 s long; at most 10 s" in checks.check_wav_file(long, "audio.chime")
    empty = tmp_path / "empty.wav"
    empty.write_bytes(to_wav_bytes(Audio(np.zeros(0, dtype=np.int16), 22050)))
    assert checks.check_wav_file(empty, "audio.chime") == (
        f"audio.chime: {empty}: WAV file holds no audio")
    assert "No such file" in checks.check_wav_file(tmp_path / "gone.wav", "audio.chime")


def test_check_config_fails_on_a_chime_file_that_is_not_there(tmp_path: Path,
                                                              tiny_voice_path: Path) -> None:
    """Bug #11: check-config said OK for a config naming a missing chime, and `edged run` then
    failed at start. Every file the config names is checked, chimes included."""
    data = {"voice": {"name": str(tiny_voice_path)},
            "audio": {"chimes": {"critical": str(tmp_path / "missing.wav")}}}
    result = subprocess.run([*EDGED, "check-config", str(write_config(tmp_path, data))],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith(f"edged: audio.chimes.critical: {tmp_path / 'missing.wav'}")
    assert "No such file" in result.stderr


def test_every_path_in_the_schema_says_what_it_names() -> None:
    """A path key added to the config without a kind would escape the start-up checks: every
    Path field carries one (config/schema.py `path`), so run_checks looks at it."""
    import dataclasses
    import typing

    from edged.config import PATH_KINDS

    def walk(cls: type, prefix: str) -> list[tuple[str, object]]:
        found = []
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("internal"):
                continue
            tp = hints[f.name]
            if dataclasses.is_dataclass(tp):
                found += walk(tp, f"{prefix}{f.name}.")
            elif Path in (tp, *typing.get_args(tp)) or any(
                    Path in typing.get_args(a) for a in typing.get_args(tp)):
                found.append((prefix + f.name, f.metadata.get("path")))
        return found

    paths = walk(Config, "")
    assert len(paths) >= 9  # voice.dirs, password, 3 TLS, state_dir, cache.dir, 4 chimes
    assert [key for key, kind in paths if kind not in PATH_KINDS] == []


def test_memory_limit_below_the_budget_is_reported(tmp_path: Path) -> None:
    """Under a cgroup whose memory.max is below limits.memory_mb the daemon would be
    OOM-killed in a restart loop: reported naming limits.memory_mb. (A copy of our own cgroup
    path under a temp root stands in for /sys/fs/cgroup, which we may not change here.)"""
    own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
               if line.startswith("0::"))
    folder = tmp_path / own.lstrip("/")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.max").write_text(f"{256 << 20}\n")
    config = Config()
    problems = checks._check_memory_limit(config, cgroup_root=tmp_path)
    assert len(problems) == 1 and problems[0].startswith("limits.memory_mb: 400 MB is more")
    (folder / "memory.max").write_text(f"{512 << 20}\n")
    assert checks._check_memory_limit(config, cgroup_root=tmp_path) == []
    (folder / "memory.max").write_text("max\n")
    assert checks._check_memory_limit(config, cgroup_root=tmp_path) == []


def test_ensure_ready_raises_first_problem(tmp_path: Path) -> None:
    """The daemon's entry point: ConfigError with the first problem and a count of the rest;
    a good config creates the missing cache folder. (output: publish: this machine has no
    sound card, and the start checks the device of output: play.)"""
    afile = tmp_path / "afile"
    afile.write_text("x")
    cfg = load_config(write_config(tmp_path, {
        "output": "publish", "voice": {"name": str(tmp_path / "missing.onnx")},
        "cache": {"dir": str(afile)}}))
    with pytest.raises(ConfigError, match=r"^cache\.dir: .* \(and 1 more, see the log\)$"):
        checks.ensure_ready(cfg)
    cfg = load_config(write_config(tmp_path, {"output": "publish",
                                              "cache": {"dir": str(tmp_path / "made")}}))
    checks.ensure_ready(cfg)
    assert (tmp_path / "made").is_dir()


def test_unknown_extra_voice_is_named(tmp_path: Path) -> None:
    """A typo in `voices:` is caught before start, with its index."""
    cfg = load_config(write_config(tmp_path, {"voices": ["no_such_voice"]}))
    problems = checks.run_checks(cfg, create_dirs=True)
    assert any(p.startswith("voices[0]: unknown voice 'no_such_voice'") for p in problems), problems
