"""The Ansible role (ansible/) run for real against this machine, into a throwaway root.

One deployment per module: `ansible-playbook site.yml` with `connection: local` installs edged
under <tmp>/root: a venv from a wheel the role builds on the "controller", the tiny test voice
downloaded from a local HTTP server and checked against its sha256, the config rendered and
checked by the installed `edged check-config`, the unit checked by `systemd-analyze verify`,
the phrase cache warmed. The tests then use what was installed, run the play again
(changed=0) and feed it bad input. Users and systemd are left alone: edged_root is set and
this machine's service manager is not systemd (the unit itself runs under a real systemd in
tests/test_systemd_unit.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from edged.config import load_config
from tests.harness.broker import Broker
from tests.harness.paths import ROOT
from tests.harness.ports import free_port, wait_port

# ansible-playbook runs take 10-60 s each on a busy 2-core machine; the first one also
# creates a venv and installs edged's dependencies.
pytestmark = pytest.mark.timeout(900)

ANSIBLE_DIR = ROOT / "ansible"
BIN = Path(sys.executable).parent
_PLAY_TIMEOUT_S = 600
_CMD_TIMEOUT_S = 120
_HOST = "test-pi"
_PASSWORD = "Pa55-never-in-a-log-7f3e"
_PHRASES = [
    "Hello there.",
    {"text": "The {room} window is open.", "slots": {"room": ["kitchen", "hall"]}},
]
_PINNED = 3  # phrases after slot expansion
_RECAP = re.compile(
    r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)",
    re.MULTILINE,
)
# Top-level names of the checkout the wheel build does not need (and .venv is 400 MB).
_NOT_SOURCE = {".git", ".venv", ".ansible", ".hypothesis", ".pytest_cache", ".ruff_cache", "tests",
               "bench", "ansible", "dist", "voices", "cache"}


@dataclass
class Play:
    rc: int
    out: str
    recap: dict[str, int]

    def status(self, task: str) -> list[str]:
        """ok/changed/skipping/fatal lines printed under TASK [edged : <task>]."""
        header = rf"^TASK \[edged : {re.escape(task)}\].*?\n"
        match = re.search(header + r"(.*?)(?=^TASK |^RUNNING |^PLAY )", self.out,
                          re.MULTILINE | re.DOTALL)
        assert match, f"task {task!r} not in the output:\n{self.out}"
        return [line.split(":")[0] for line in match.group(1).splitlines()
                if line.split(":")[0] in ("ok", "changed", "skipping", "fatal", "failed")]


@dataclass
class Workspace:
    work: Path
    root: Path
    inventory: Path
    vars_file: Path
    env: dict[str, str]
    wheel_dir: Path

    @property
    def config(self) -> Path:
        return self.root / "etc/edged/edged.yaml"

    @property
    def edged(self) -> Path:
        return self.root / "opt/edged/venv/bin/edged"

    @property
    def voice_dir(self) -> Path:
        return self.root / "opt/edged/voices"


@dataclass
class VoiceServer:
    url: str
    catalog: Path
    files: dict[str, str]  # name -> sha256 of the good files


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ignore_non_source(folder: str, names: list[str]) -> set[str]:
    top = Path(folder) == ROOT
    return {n for n in names if (top and n in _NOT_SOURCE) or n == "__pycache__"
            or n == "build" or n.endswith(".egg-info")}


def _run(cmd: list[str | Path], env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=_CMD_TIMEOUT_S)


def _play(ws: Workspace, *args: str, extra: dict | None = None, inventory: Path | None = None,
          vars_file: bool = True) -> Play:
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inventory or ws.inventory), "site.yml"]
    if vars_file:
        cmd += ["-e", f"@{ws.vars_file}"]
    if extra:
        cmd += ["-e", json.dumps(extra)]
    proc = subprocess.run([*cmd, *args], cwd=ANSIBLE_DIR, env=ws.env, capture_output=True,
                          text=True, timeout=_PLAY_TIMEOUT_S)
    out = proc.stdout + proc.stderr
    recaps = {m["host"]: m for m in _RECAP.finditer(out)}
    recap = {k: int(v) for k, v in recaps[next(iter(recaps))].groupdict().items()
             if k != "host"} if recaps else {}
    return Play(proc.returncode, out, recap)


def _built_wheel(ws: Workspace) -> dict[str, str]:
    """Extra vars that install the wheel the first run built, instead of building again."""
    return {"edged_wheel": str(next(ws.wheel_dir.glob("edged-*.whl")))}


def _tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """path -> (mtime_ns, size, mode) of everything under root."""
    return {str(p.relative_to(root)): (s.st_mtime_ns, s.st_size, s.st_mode)
            for p in root.rglob("*") for s in [p.lstat()]}


def _unit_lines(text: str) -> list[tuple[str, str]]:
    """(section, directive) pairs in order, comments and blank lines dropped."""
    section, lines = "", []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
        else:
            lines.append((section, line))
    return lines


@pytest.fixture(scope="module")
def voice_server(tmp_path_factory: pytest.TempPathFactory):
    """The tiny voice on a local HTTP server, in a copy of models/voices.yaml.

    `tampered` is listed with the real files' sha256 but served with other bytes, as a
    corrupt mirror would.
    """
    from tests.harness.tiny_voice import make_tiny_voice

    base = tmp_path_factory.mktemp("voice-server")
    www = base / "www"
    make_tiny_voice(www / "tiny.onnx")
    files = {name: _sha256(www / name) for name in ("tiny.onnx", "tiny.onnx.json")}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    catalog = yaml.safe_load((ROOT / "models/voices.yaml").read_text())
    catalog["voices"]["tiny"] = {
        "source": url + "/", "license": "test voice",
        "files": {n: {"sha256": s, "size": (www / n).stat().st_size} for n, s in files.items()},
    }
    catalog["voices"]["tampered"] = {
        "source": url, "license": "test voice",
        "files": {f"tampered{n[4:]}": {"sha256": s} for n, s in files.items()},
    }
    for name in files:
        (www / f"tampered{name[4:]}").write_bytes((www / name).read_bytes() + b"\n")
    (base / "voices.yaml").write_text(yaml.safe_dump(catalog))
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
         "--directory", str(www)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc=proc)
        yield VoiceServer(url, base / "voices.yaml", files)
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory: pytest.TempPathFactory):
    """mosquitto that only lets in user edged with _PASSWORD."""
    work = tmp_path_factory.mktemp("broker")
    passwd = work / "passwd"
    subprocess.run(["mosquitto_passwd", "-b", "-c", str(passwd), "edged", _PASSWORD],
                   check=True, capture_output=True, timeout=_CMD_TIMEOUT_S)
    port = free_port()
    broker = Broker(work, f"listener {port} 127.0.0.1\nallow_anonymous false\n"
                          f"password_file {passwd}\n", [port]).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, voice_server: VoiceServer,
              auth_broker: Broker) -> Workspace:
    """Inventory, variables and environment for runs into <tmp>/root."""
    work = tmp_path_factory.mktemp("ansible")
    # Build from a snapshot: no build/ in the checkout, and other edits during the
    # session cannot change the wheel between two runs.
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_ignore_non_source)
    inventory = work / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"edged": {"hosts": {_HOST: {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "ansible_become": False,
    }}}}))
    root = work / "root"
    variables = {
        "edged_root": str(root),
        "edged_source_dir": str(source),
        "edged_wheel_dir": str(work / "dist"),
        "edged_python": sys.executable,
        "edged_voice_catalog": str(voice_server.catalog),
        "edged_voice_name": "tiny",
        "edged_output": "publish",
        "edged_mqtt_host": "127.0.0.1",
        "edged_mqtt_port": auth_broker.port,
        "edged_mqtt_username": "edged",
        "edged_mqtt_password": _PASSWORD,
        "edged_cache_phrases": _PHRASES,
        "edged_unit_validate": "systemd-analyze verify %s",
        # The packages are installed here: the apt task runs and must find nothing to do.
        "edged_manage_packages": True,
        "edged_apt_update_cache": False,
    }
    vars_file = work / "vars.yml"
    vars_file.write_text(yaml.safe_dump(variables))
    (work / "ansible-tmp").mkdir()
    env = dict(os.environ)
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        # Ansible's (and `ansible-lint --offline`'s) cache, instead of ~/.ansible or the checkout.
        ANSIBLE_HOME=str(work / "ansible-home"),
        ANSIBLE_CONFIG=str(ANSIBLE_DIR / "ansible.cfg"),
        ANSIBLE_LOCAL_TEMP=str(work / "ansible-tmp"),
        ANSIBLE_REMOTE_TEMP=str(work / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_STDOUT_CALLBACK="default",
    )
    return Workspace(work, root, inventory, vars_file, env, work / "dist")


@pytest.fixture(scope="module")
def deployment(workspace: Workspace) -> Play:
    """The first real run into the empty root."""
    play = _play(workspace)
    assert play.rc == 0 and play.recap.get("failed") == 0, play.out
    return play


def test_playbook_and_role_pass_the_syntax_check(workspace: Workspace) -> None:
    """site.yml and the role parse, with the test inventory and with the example one."""
    for inventory in (workspace.inventory, ANSIBLE_DIR / "inventory/example/hosts.yml"):
        play = _play(workspace, "--syntax-check", inventory=inventory)
        assert play.rc == 0, play.out
        assert "playbook: site.yml" in play.out


def test_ansible_lint_production_profile(workspace: Workspace) -> None:
    """ansible-lint passes with the strictest profile (production), no warnings."""
    r = _run([BIN / "ansible-lint", "--offline", "site.yml", "roles/edged"], env=workspace.env,
             cwd=ANSIBLE_DIR)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 failure(s), 0 warning(s)" in r.stderr + r.stdout
    assert "profile that met the validation criteria was 'production'" in r.stderr + r.stdout


def test_first_run_installs_everything(workspace: Workspace, deployment: Play,
                                       voice_server: VoiceServer) -> None:
    """Venv with edged, voice files with the catalog's sha256, config, password file (0600,
    exact content, never in Ansible's output), unit, warmed cache; handlers notified."""
    ws = workspace
    assert deployment.recap["changed"] > 0
    assert ws.edged.is_file()
    for name, sha in voice_server.files.items():
        assert _sha256(ws.voice_dir / name) == sha
    password_file = ws.root / "etc/edged/mqtt-password"
    assert password_file.read_text() == _PASSWORD
    assert password_file.stat().st_mode & 0o777 == 0o600
    assert ws.config.stat().st_mode & 0o777 == 0o640
    assert (ws.root / "etc/systemd/system/edged.service").is_file()
    assert _PASSWORD not in deployment.out
    assert _PASSWORD not in ws.config.read_text()
    assert deployment.status("Install the system packages edged needs") == ["ok"]
    assert deployment.status("Pre-warm the phrase cache") == ["changed"]
    assert "RUNNING HANDLER [edged : Restart edged]" in deployment.out
    r = _run([ws.edged, "cache", "stats", "--json", "--config", ws.config])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pinned"]["entries"] == _PINNED


def test_installed_edged_accepts_its_config_and_speaks(workspace: Workspace, deployment: Play,
                                                       tmp_path: Path) -> None:
    """The rendered config passes the installed `edged check-config`, points at the deployed
    files, and the installed edged speaks exactly like the edged under test."""
    ws = workspace
    r = _run([ws.edged, "check-config", ws.config])
    assert r.returncode == 0, r.stderr
    config = load_config(ws.config)
    assert config.voice.name == "tiny"
    assert config.voice.dirs == (ws.voice_dir,)
    assert config.mqtt.password_file == ws.root / "etc/edged/mqtt-password"
    assert config.cache.dir == ws.root / "var/cache/edged"
    assert config.device_id == _HOST
    text = "Test one. Test two."
    installed, reference = tmp_path / "installed.wav", tmp_path / "reference.wav"
    r = _run([ws.edged, "say", "--config", ws.config, "-o", installed, text])
    assert r.returncode == 0, r.stderr
    r = _run([sys.executable, "-m", "edged", "say", "--config", ws.config, "-o", reference, text])
    assert r.returncode == 0, r.stderr
    with wave.open(str(installed)) as a, wave.open(str(reference)) as b:
        assert a.getframerate() == 16000 and a.getnframes() > 0
        assert a.readframes(a.getnframes()) == b.readframes(b.getnframes())


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_second_run_changes_nothing(workspace: Workspace, deployment: Play) -> None:
    """Idempotence: the same play again reports changed=0 (the rebuilt wheel is
    byte-identical, voices match their sha256, the cache is warm) and restarts nothing."""
    play = _play(workspace)
    assert play.rc == 0, play.out
    assert play.recap["changed"] == 0, play.out
    assert "RUNNING HANDLER" not in play.out
    assert play.status("Pre-warm the phrase cache") == ["ok"]


def test_rendered_unit_matches_the_repository_unit(workspace: Workspace,
                                                   deployment: Play) -> None:
    """The role's unit is systemd/edged.service line for line (hardening included) once the
    install root is taken out of the paths; it passed `systemd-analyze verify`."""
    rendered = (workspace.root / "etc/systemd/system/edged.service").read_text()
    rendered = rendered.replace(str(workspace.root), "")
    repo_unit = (ROOT / "systemd/edged.service").read_text()
    assert _unit_lines(rendered) == _unit_lines(repo_unit)
    assert deployment.status("Install the systemd unit") == ["changed"]


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_check_diff_shows_drift_and_changes_nothing(workspace: Workspace,
                                                    deployment: Play) -> None:
    """--check --diff on a deployed device: a local edit of the config shows up as a diff and
    a pending change, no file is touched, and the password stays out of even -vvv output."""
    ws = workspace
    original = ws.config.read_bytes()
    ws.config.write_bytes(original + b"# local edit\n")
    try:
        before = _tree(ws.root)
        # -vvv prints every module's arguments, except where no_log hides them.
        play = _play(ws, "--check", "--diff", "-vvv", extra=_built_wheel(ws))
        assert play.rc == 0, play.out
        assert play.recap["changed"] == 1, play.out
        assert "-# local edit" in play.out
        assert _tree(ws.root) == before
        assert _PASSWORD not in play.out
    finally:
        ws.config.write_bytes(original)


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_check_mode_on_a_new_device_creates_nothing(workspace: Workspace, deployment: Play,
                                                    tmp_path: Path) -> None:
    """--check --diff on an empty root with user creation and TLS files: the run succeeds,
    reports what it would do, creates nothing, and never shows the client key."""
    ws = workspace
    key_marker = "PRIVATE-KEY-MATERIAL-4b1d"
    tls = tmp_path / "tls"
    tls.mkdir()
    (tls / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n")
    (tls / "client.crt").write_text("-----BEGIN CERTIFICATE-----\nc\n-----END CERTIFICATE-----\n")
    (tls / "client.key").write_text(f"-----BEGIN PRIVATE KEY-----\n{key_marker}\n"
                                    "-----END PRIVATE KEY-----\n")
    root = tmp_path / "root"
    root.mkdir()
    users_before = Path("/etc/passwd").read_bytes()
    play = _play(ws, "--check", "--diff", extra={
        **_built_wheel(ws),
        "edged_root": str(root),
        "edged_create_user": True,
        "edged_mqtt_tls_ca_src": str(tls / "ca.crt"),
        "edged_mqtt_tls_cert_src": str(tls / "client.crt"),
        "edged_mqtt_tls_key_src": str(tls / "client.key"),
    })
    assert play.rc == 0, play.out
    assert play.recap["failed"] == 0 and play.recap["changed"] > 0, play.out
    assert play.status("Create the edged system user (in the audio group)") == ["changed"]
    assert play.status("Copy the client key") == ["changed"]
    assert play.status("List the voice files a real run would download") == ["ok"]
    assert list(root.iterdir()) == []
    assert Path("/etc/passwd").read_bytes() == users_before
    assert key_marker not in play.out and _PASSWORD not in play.out


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_bad_config_is_rejected_and_the_old_one_stays(workspace: Workspace,
                                                      deployment: Play) -> None:
    """`edged check-config` on the device rejects a bad rendered config: the host fails with
    edged's message and the config in place is not touched. Needs `edged check-config`."""
    ws = workspace
    before = ws.config.read_bytes()
    play = _play(ws, "--tags", "config", extra={"edged_config_extra": {"limits": {"queue": 0}}})
    assert play.rc != 0
    assert play.recap["failed"] == 1, play.out
    assert "failed to validate" in play.out
    assert "limits.queue" in play.out
    assert ws.config.read_bytes() == before


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_voice_checksum_mismatch_fails(workspace: Workspace, deployment: Play,
                                       voice_server: VoiceServer) -> None:
    """A voice file whose bytes do not match the catalog's sha256 fails the host and is not
    installed; the voices already there are untouched."""
    ws = workspace
    play = _play(ws, "--tags", "voices", extra={"edged_extra_voices": ["tampered"]})
    assert play.rc != 0
    assert play.recap["failed"] == 1, play.out
    assert "did not match" in play.out
    assert not list(ws.voice_dir.glob("tampered*"))
    for name, sha in voice_server.files.items():
        assert _sha256(ws.voice_dir / name) == sha


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_unknown_voice_is_named(workspace: Workspace, deployment: Play) -> None:
    """A voice that is not in the catalog stops the host before anything is installed."""
    play = _play(workspace, "--tags", "voices", extra={"edged_voice_name": "no_such_voice"})
    assert play.rc != 0
    assert "voice no_such_voice is not in" in play.out
    assert "known voices: " in play.out and "tiny" in play.out


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_index_mode_recognises_the_installed_package(workspace: Workspace,
                                                     deployment: Play) -> None:
    """edged_install_from=index pip-installs edged_pip_spec (here from the wheel folder as
    a find-links index): the same version already in the venv means no change."""
    ws = workspace
    version = Path(_built_wheel(ws)["edged_wheel"]).name.split("-")[1]
    play = _play(ws, "--tags", "venv", extra={
        "edged_install_from": "index",
        "edged_pip_spec": f"edged=={version}",
        "edged_pip_extra_args": f"--no-index --find-links {ws.wheel_dir}",
    })
    assert play.rc == 0, play.out
    assert play.recap["changed"] == 0, play.out
    assert play.status("Install edged from the package index") == ["ok"]
    assert play.status("Build the edged wheel on the controller") == ["skipping"]


@pytest.mark.long  # more plays of the role: `make test` keeps the first deployment and its speech
def test_waits_for_the_daemon_to_be_online(workspace: Workspace, deployment: Play,
                                           auth_broker: Broker) -> None:
    """The wait step passes once the installed daemon (started here as systemd would) says
    "online" with the deployed password, and fails with the state it saw once it stopped.
    Needs a working `edged run`."""
    ws = workspace
    extra = {"edged_wait_online": True, "edged_wait_online_timeout_s": 30}
    daemon = subprocess.Popen([str(ws.edged), "run", "--config", str(ws.config)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        play = _play(ws, "--tags", "service", extra=extra)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon_log, _ = daemon.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon_log, _ = daemon.communicate()
    assert play.rc == 0, f"{play.out}\n--- edged run:\n{daemon_log}"
    assert play.status("Wait until the device reports online") == ["ok"]
    play = _play(ws, "--tags", "service", extra={**extra, "edged_wait_online_timeout_s": 3})
    assert play.rc != 0
    assert f"{_HOST}: not online after 3 s (edged/{_HOST}/availability is 'offline')" in play.out


def test_example_inventory_renders_a_valid_config(workspace: Workspace, tmp_path: Path) -> None:
    """The example inventory works as shipped: its vault-encrypted password decrypts (demo
    vault password "edged-example"), and kitchen's host and group vars render a config that
    edged accepts, with the password only in the 0600 password file."""
    ws = workspace
    vault_pass = tmp_path / "vault-pass"
    vault_pass.write_text("edged-example\n")
    root = tmp_path / "root"
    play = _play(
        ws, "--limit", "kitchen", "--tags", "config", "--vault-password-file", str(vault_pass),
        inventory=ANSIBLE_DIR / "inventory/example/hosts.yml", vars_file=False,
        extra={
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "ansible_become": False,
            "edged_root": str(root),
            # No CA in the example folder, no venv in this root, nothing to warm.
            "edged_mqtt_tls_ca_src": "",
            "edged_config_validate": "",
            "edged_warm_cache": False,
        },
    )
    assert play.rc == 0, play.out
    config_file = root / "etc/edged/edged.yaml"
    config = load_config(config_file)
    assert (config.device_id, config.audio.device, config.voice.speed) == ("kitchen", "USB Audio",
                                                                            1.1)
    assert (config.mqtt.host, config.mqtt.port) == ("broker.home.arpa", 8883)
    assert len(config.cache.phrases) == 4
    assert (root / "etc/edged/mqtt-password").read_text() == "example-broker-password"
    assert "example-broker-password" not in config_file.read_text() + play.out
    r = _run([sys.executable, "-m", "edged", "check-config", config_file])
    assert r.returncode == 0, r.stderr



def test_languages_size_memory_and_config(workspace: Workspace, tmp_path: Path) -> None:
    """A device that speaks Mandarin and Cantonese (the example's hall): the config routes zh
    to the pulled Kokoro style and searches the voice folder, limits.memory_mb is raised to what
    Kokoro needs, and the unit's MemoryMax follows; an English-only device keeps 400."""
    ws = workspace
    vault_pass = tmp_path / "vault-pass"
    vault_pass.write_text("edged-example\n")
    for host, memory_mb in (("hall", 512), ("kitchen", 400)):
        root = tmp_path / host
        play = _play(
            ws, "--limit", host, "--tags", "config,unit", "--vault-password-file",
            str(vault_pass), inventory=ANSIBLE_DIR / "inventory/example/hosts.yml",
            vars_file=False,
            extra={"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                   "ansible_become": False, "edged_root": str(root),
                   "edged_mqtt_tls_ca_src": "", "edged_config_validate": "",
                   "edged_warm_cache": False, "edged_manage_service": False})
        assert play.rc == 0, play.out
        config = load_config(root / "etc/edged/edged.yaml")
        assert config.limits.memory_mb == memory_mb
        unit = (root / "etc/systemd/system/edged.service").read_text()
        assert f"MemoryMax={math.ceil(memory_mb * 1.28)}M" in unit
        if host == "hall":
            assert (config.languages.zh, config.languages.han) == ("kokoro:zm_yunjian", "zh")
            assert root / "opt/edged/voices" in config.voice.dirs
        else:
            assert config.languages.zh is None


def _config_play(ws: Workspace, tmp_path: Path, host: str, ram_mb: int,
                 **extra: Any) -> tuple[Play, Path]:
    """The example inventory's `host` configured (tags config and unit) into its own root as a
    device with `ram_mb` of RAM: the play (it succeeded) and the root."""
    vault_pass = tmp_path / "vault-pass"
    vault_pass.write_text("edged-example\n")
    root = tmp_path / str(ram_mb)
    play = _play(
        ws, "--limit", host, "--tags", "config,unit", "--vault-password-file", str(vault_pass),
        inventory=ANSIBLE_DIR / "inventory/example/hosts.yml", vars_file=False,
        extra={"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
               "ansible_become": False, "edged_root": str(root), "edged_memtotal_mb": ram_mb,
               "edged_mqtt_tls_ca_src": "", "edged_config_validate": "",
               "edged_warm_cache": False, "edged_manage_service": False, **extra})
    assert play.rc == 0, play.out
    return play, root


def test_a_cantonese_device_searches_the_folder_its_mixed_style_is_pulled_into(
        workspace: Workspace, tmp_path: Path) -> None:
    """English and Cantonese only: Cantonese's voice mixes in the Mandarin style the role pulls
    into the voice folder (tasks/voices.yml), so the config searches that folder (before stop 39
    only Mandarin or an English Kokoro voice added it)."""
    _, root = _config_play(workspace, tmp_path, "hall", 3796, edged_languages=["en", "yue"])
    config = load_config(root / "etc/edged/edged.yaml")
    assert root / "opt/edged/voices" in config.voice.dirs
    assert config.limits.memory_mb == 512 and config.languages.zh is None


def test_the_profile_follows_the_devices_ram(workspace: Workspace, tmp_path: Path) -> None:
    """edged_profile auto: a device with less than 768 MB (a Zero 2 W reports about 427) gets
    `profile: low-memory`, limits.memory_mb 160 and the unit's MemoryHigh/MemoryMax from it, and
    its Mandarin speaks with espeak-ng (Kokoro never fits: no extras, no pull); a 4 GB Pi keeps
    the default profile, Kokoro and 512. The RAM is the gathered fact unless set, as here."""
    for ram_mb, profile, memory_mb in ((427, "low-memory", 160), (3796, "default", 512)):
        play, root = _config_play(workspace, tmp_path, "hall", ram_mb)
        assert f"profile {profile} ({ram_mb} MB of RAM; limits.memory_mb {memory_mb})" in play.out
        config = load_config(root / "etc/edged/edged.yaml")
        assert (config.profile, config.limits.memory_mb) == (profile, memory_mb)
        # The unit's StateDirectory=, made by the role (the config's own default would be
        # /etc/edged/state: read-only for the edged user, and the daemon would not start).
        assert config.mqtt.state_dir == root / "var/lib/edged" and config.mqtt.state_dir.is_dir()
        unit = (root / "etc/systemd/system/edged.service").read_text()
        assert f"MemoryHigh={math.ceil(memory_mb * 1.125)}M" in unit
        assert f"MemoryMax={math.ceil(memory_mb * 1.28)}M" in unit
        assert config.languages.zh == (None if profile == "low-memory" else "kokoro:zm_yunjian")
        if profile == "low-memory":
            assert (config.voice.sleep_after_s, config.http.enabled) == (60.0, False)


def test_an_english_kokoro_voice_is_offered_where_it_fits(workspace: Workspace,
                                                          tmp_path: Path) -> None:
    """edged_english_voice: af_heart on an English-only device (issue 26): a 4 GB Pi offers
    kokoro:af_heart beside Piper (`voices:`, the voice folder searched, limits.memory_mb 512 and
    the unit's MemoryMax from it), Piper staying the configured voice; a Zero 2 W (low-memory)
    cannot afford Kokoro and gets none of it."""
    for ram_mb, memory_mb, voices in ((3796, 512, ["kokoro:af_heart"]), (427, 160, [])):
        _, root = _config_play(workspace, tmp_path, "kitchen", ram_mb,
                                    edged_english_voice="af_heart")
        config = load_config(root / "etc/edged/edged.yaml")
        assert (list(config.voices), config.limits.memory_mb) == (voices, memory_mb)
        assert (root / "opt/edged/voices" in config.voice.dirs) == bool(voices)
        assert config.voice.name == "en_US-joe-medium" and config.languages.en is None
        unit = (root / "etc/systemd/system/edged.service").read_text()
        assert f"MemoryMax={math.ceil(memory_mb * 1.28)}M" in unit
