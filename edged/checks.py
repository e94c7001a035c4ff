"""Start-up checks shared by `edged run`, `edged check-config` and a reload (SIGHUP).

Each problem is one line, `<key or file>: <what is wrong>`, so a person (or the journal) can act
on it. Config syntax, ranges and the rules between fields are checked by the config loader;
these checks look at what the config points to. Every path the config names is checked by the
kind its schema gives it (config/schema.py, `path`): folders we write must be writable, secrets
readable as the MQTT link reads them, PEM files loadable, WAV files usable as chimes. Then the
voice files and their sha256, the pinned phrases as the daemon expands them, the service's
memory limit and, at a start, the audio device.

`run_checks` is the one function: `edged run` (ensure_ready), `edged check-config` and a reload
(SIGHUP) all call it, so none of them can accept what another refuses. The one difference is
the audio device (`device=`): it is hardware that comes and goes, which the running daemon
may hold open; a start checks it, a reload when the config changes it, check-config never.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import ssl
import tempfile
import typing
from collections.abc import Iterator
from pathlib import Path

from .cache import expand_phrases
from .config import Config, ConfigError, load_config
from .mqtt import read_secret
from .playback import PlayerError
from .playback.chimes import load_chime
from .playback.devices import Device
from .voice import VoiceError, find_voice
from .voice.backend import KOKORO_PREFIX, backend_of
from .voice.catalog.hashes import HASH_MEMO_NAME, file_sha256, forget
from .voice.catalog.known import CatalogError, load_catalog

_LOGGER = logging.getLogger(__name__)

def run_checks(config: Config, *, create_dirs: bool = False, device: bool = False) -> list[str]:
    """Every problem found (empty: ready to start). `create_dirs`: make missing folders
    (the daemon does; `check-config` only checks that they could be made). `device`: the
    audio device too, when the output plays without a fallback."""
    paths = list(config_paths(config))

    def check(kinds: tuple[str, ...]) -> list[str]:
        return [p for key, kind, path in paths
                if kind in kinds and (p := _check_one(key, kind, path, create_dirs))]

    # Folders first: the voice check remembers hashes in cache.dir.
    return (check(("state", "folder")) + _check_voice(config) + check(("secret", "pem", "file"))
            + _check_tls(config) + check(("wav",)) + _check_phrases(config)
            + _check_memory_limit(config) + (_check_device(config) if device else []))


def check_config_file(path: Path) -> list[str]:
    """What `edged check-config FILE` reports: the file's one error (it cannot be read or is not
    a valid config), or every problem `run_checks` finds; empty: OK."""
    return load_and_check(path)[1]


def load_and_check(path: Path) -> tuple[Config | None, list[str]]:
    """The config in `path` (None when it cannot be read or is not valid) and its problems, as
    `check_config_file` reports them."""
    try:
        config = load_config(path)
    except ConfigError as err:
        return None, [str(err)]
    return config, run_checks(config)


def ensure_ready(config: Config) -> None:
    """For the daemon, before it starts anything: log every problem and raise ConfigError with
    the first (one line on stderr, exit 2; systemd's restart limit then stops the retries)."""
    problems = run_checks(config, create_dirs=True, device=True)
    for problem in problems[1:]:  # the first becomes the exception's one line
        _LOGGER.error("Start-up check failed: %s", problem)
    if problems:
        more = f" (and {len(problems) - 1} more, see the log)" if len(problems) > 1 else ""
        raise ConfigError(problems[0] + more)


def config_paths(config: object, prefix: str = "") -> Iterator[tuple[str, str, Path]]:
    """(key, kind, path) for every path the config names, walking every section."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hints[f.name]):
            yield from config_paths(value, key + ".")
        elif "path" in f.metadata and value is not None:
            values = value if isinstance(value, tuple) else (value,)
            for i, path in enumerate(values):
                yield (f"{key}[{i}]" if isinstance(value, tuple) else key), f.metadata["path"], path


def _check_one(key: str, kind: str, path: Path, create: bool) -> str | None:
    try:
        return _check_path(key, kind, path, create)
    except OSError as err:  # what the kind's own check did not foresee (EACCES on a parent...)
        return f"{key}: {path}: {err.strerror or err}"


def _check_path(key: str, kind: str, path: Path, create: bool) -> str | None:
    if kind == "state":
        return check_writable_dir(path, key, create=create)
    if kind == "folder":
        return f"{key}: {path} is not a folder" if path.exists() and not path.is_dir() else None
    if kind == "wav":
        return check_wav_file(path, key)
    if kind == "secret":
        try:
            read_secret(path, key)  # exactly as the MQTT link will read it
        except ConfigError as err:
            return str(err)
        return None
    problem = _check_readable(path)
    return f"{key}: {problem}" if problem else None


# ---------------------------------------------------------------------------- folders
def check_writable_dir(path: Path, key: str, *, create: bool = False) -> str | None:
    """None if `path` is (or, when missing, could be made) a folder we can write to.

    Tested for real by creating and removing a file: permission bits say nothing about
    read-only mounts (ProtectSystem=strict) and root ignores them anyway.
    """
    if path.exists() and not path.is_dir():
        return f"{key}: {path} is not a folder"
    if not path.exists():
        if create:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                return f"{key}: cannot create {path}: {err.strerror or err}"
        else:
            # Would `mkdir -p` work? The nearest existing ancestor must be a writable folder.
            parent = path.parent
            while not parent.exists() and parent != parent.parent:
                parent = parent.parent
            if not parent.is_dir():
                return f"{key}: cannot create {path}: {parent} is not a folder"
            problem = _probe_write(parent)
            return f"{key}: cannot create {path}: {problem}" if problem else None
    problem = _probe_write(path)
    return f"{key}: {path} is not writable: {problem}" if problem else None


def _probe_write(folder: Path) -> str | None:
    try:
        fd, name = tempfile.mkstemp(prefix=".edged-write-test-", dir=folder)
    except OSError as err:
        return err.strerror or str(err)
    os.close(fd)
    os.unlink(name)
    return None


# ---------------------------------------------------------------------------- voice
def _check_voice(config: Config) -> list[str]:
    extra = []
    for i, name in enumerate(config.voices):
        try:
            _find_named(name, config)
        except VoiceError as err:
            extra.append(f"voices[{i}]: {err}")
    try:
        onnx_path = find_voice(config.voice.name, config.voice.dirs)
    except VoiceError as err:
        return [f"voice.name: {err}", *extra]
    json_path = Path(f"{onnx_path}.json")
    problems = [p for p in (_check_readable(onnx_path), _check_readable(json_path)) if p]
    if problems:
        return problems + extra
    return check_voice_hashes(onnx_path, Path(config.cache.dir) / HASH_MEMO_NAME) + extra


def _find_named(name: str, config: Config) -> None:
    """VoiceError unless a voice `voices:` names is here: a Piper voice's files, a Kokoro
    voice's model and style (espeak-ng's voices ship with edged)."""
    if backend_of(name) == "kokoro":
        from .voice.kokoro import assets
        from .voice.load import voice_folders

        assets.check_installed(name.removeprefix(KOKORO_PREFIX), voice_folders(config))
    elif backend_of(name) == "piper":
        find_voice(name, config.voice.dirs)


def check_voice_hashes(onnx_path: Path, hash_cache: Path | None = None) -> list[str]:
    """Problems with a voice whose name is in the catalog: a file missing, of the wrong size
    or the wrong sha256. A voice the catalog does not list passes (nothing to compare with).

    The sha256 of a file is remembered in `hash_cache` by (path, size, mtime, inode), so a
    restart does not rehash a 63 MB model; a file replaced or touched is hashed again.
    """

    name = onnx_path.name.removesuffix(".onnx")
    try:
        entry = load_catalog().get(name)
    except CatalogError as err:
        return [str(err)]
    if entry is None:
        return []
    problems = []
    for expected in entry.files:
        path = onnx_path.parent / expected.name
        try:
            st = path.stat()
        except OSError as err:
            problems.append(f"{path}: listed for voice {name} in the catalog but "
                            f"{err.strerror or err}")
            continue
        if st.st_size != expected.size:
            problems.append(f"{path}: size {st.st_size} bytes, the catalog says {expected.size}"
                            f" (incomplete or different file)")
            continue
        try:
            # Remembered in-process too: PiperVoice.fingerprint, asked by the phrase cache later
            # in this process, does not hash the model a second time.
            digest = file_sha256(path, hash_cache)
        except OSError as err:
            problems.append(f"{path}: cannot read: {err.strerror or err}")
            continue
        if digest != expected.sha256:
            forget(path, hash_cache)
            problems.append(f"{path}: sha256 {digest} does not match the catalog's "
                            f"{expected.sha256} (damaged or different file)")
    return problems


# ---------------------------------------------------------------------------- TLS
def _check_tls(config: Config) -> list[str]:
    """The TLS files load as the client will load them (readability is checked above)."""
    tls = config.mqtt.tls
    files = [p for p in (tls.ca_file, tls.cert_file, tls.key_file) if p is not None]
    if not files or any(_check_readable(p) for p in files):
        return []
    problems = []
    context = ssl.create_default_context()
    if tls.ca_file is not None:
        try:
            context.load_verify_locations(cafile=str(tls.ca_file))
        except (ssl.SSLError, ValueError) as err:
            problems.append(f"mqtt.tls.ca_file: {tls.ca_file}: not a PEM CA certificate: {err}")
    if tls.cert_file is not None:
        key = str(tls.key_file) if tls.key_file else None
        try:
            # password=b"": an encrypted key fails here instead of prompting on a terminal.
            context.load_cert_chain(str(tls.cert_file), key, password=b"")
        except (ssl.SSLError, ValueError) as err:
            problems.append(
                f"mqtt.tls.cert_file: {tls.cert_file}: certificate and key "
                f"({key or 'in the same file'}) do not load together (unencrypted PEM "
                f"key matching the certificate expected): {err}"
            )
    return problems


def check_wav_file(path: Path, key: str) -> str | None:
    """None if `path` is a chime the player can use: a 16-bit WAV with at least one frame."""

    problem = _check_readable(path)
    if problem:
        return f"{key}: {problem}"
    try:
        audio = load_chime(path, key)
    except ConfigError as err:
        return str(err)
    if len(audio.samples) == 0:
        return f"{key}: {path}: WAV file holds no audio"
    return None


# ---------------------------------------------------------------------------- phrases, device
def _check_phrases(config: Config) -> list[str]:
    """cache.phrases as the daemon expands them at start (templates within max_expansions)."""
    try:
        expand_phrases(config.cache.phrases, config.cache.max_expansions)
    except ConfigError as err:
        return [str(err)]
    return []


def _check_device(config: Config) -> list[str]:
    if config.output not in ("play", "both") or config.audio.fallback_to_publish:
        return []
    try:
        Device(config.audio).check()
    except PlayerError as err:
        return [f"audio: {err} (output is {config.output!r}; use output: publish on a device "
                "without a sound card)"]
    return []


# ---------------------------------------------------------------------------- memory
def _check_memory_limit(config: Config, cgroup_root: Path = Path("/sys/fs/cgroup")) -> list[str]:
    """Under systemd, MemoryMax= below limits.memory_mb would get edged OOM-killed in a loop."""
    max_bytes = service_memory_max(cgroup_root)
    if max_bytes is not None and max_bytes < config.limits.memory_mb << 20:
        return [f"limits.memory_mb: {config.limits.memory_mb} MB is more than this service's "
                f"memory limit ({max_bytes >> 20} MB, MemoryMax=); lower it or raise MemoryMax="]
    return []


def service_memory_max(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The memory limit of our own cgroup in bytes (v2 `memory.max`, or v1
    `memory.limit_in_bytes`); None if unlimited or unknown."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, group = line.split(":", 2)
        if controllers == "":
            where = cgroup_root / group.lstrip("/") / "memory.max"
        elif "memory" in controllers.split(","):
            where = cgroup_root / "memory" / group.lstrip("/") / "memory.limit_in_bytes"
        else:
            continue
        try:
            value = where.read_text().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 1 << 60:  # v1 says "unlimited" with a huge number
            return int(value)
    return None


# ---------------------------------------------------------------------------- helpers
def _check_readable(path: Path, *, max_bytes: int | None = None) -> str | None:
    try:
        st = path.stat()
    except OSError as err:
        return f"{path}: {err.strerror or err}"
    if not path.is_file():
        return f"{path}: not a regular file"
    if max_bytes is not None and st.st_size > max_bytes:
        return f"{path}: larger than {max_bytes} bytes"
    try:
        with path.open("rb") as f:
            f.read(1)
    except OSError as err:
        return f"{path}: cannot read: {err.strerror or err}"
    return None
