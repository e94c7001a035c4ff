"""The YAML config: defaults, strict keys, errors that name the key, paths relative to the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from edged.config import Config, ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_config_loads() -> None:
    """config/edged.yaml, the file `make run` uses, is valid and resolves paths beside itself."""
    config = load_config(ROOT / "config" / "edged.yaml")
    assert config.voice.name == "en_US-joe-medium"
    assert config.cache.dir == ROOT / "config" / "cache"
    assert config.source == (ROOT / "config" / "edged.yaml").resolve()


def test_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    """An empty file is a valid config: every key takes its default."""
    (tmp_path / "c.yaml").write_text("")
    config = load_config(tmp_path / "c.yaml")
    assert config.limits.queue == 10 and config.output == "play"
    assert config.topic_prefix == f"edged/{config.device_id}"


def test_topic_prefix_and_client_id_default_from_device_id() -> None:
    """Without explicit values the topics and client id follow device_id."""
    config = parse_config({"device_id": "kitchen"}, Path("/"))
    assert (config.topic_prefix, config.client_id) == ("edged/kitchen", "edged-kitchen")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"voice": {"sped": 1}}, "voice.sped: unknown key; known keys: "),
        ({"bogus": 1}, "bogus: unknown key"),
        ({"mqtt": {"port": 70000}}, "mqtt.port: 70000 is out of range 1..65535"),
        ({"mqtt": {"port": "1883"}}, "mqtt.port: expected an integer, got a string"),
        ({"mqtt": {"port": True}}, "mqtt.port: expected an integer"),
        ({"output": "speaker"}, "output: expected one of play, publish, both, got 'speaker'"),
        ({"voice": {"speed": 3}}, "voice.speed: 3.0 is out of range 0.5..2.0"),
        ({"mqtt": {"tls": {"ca_file": 5}}}, "mqtt.tls.ca_file: expected a path"),
        ({"mqtt": {"tls": {"ca": "x"}}}, "mqtt.tls.ca: unknown key"),
        ({"voice": "joe"}, "voice: expected a mapping, got a string"),
        ({"voice": {"dirs": "voices"}}, "voice.dirs: expected a list"),
        ({"voice": {"dirs": ["ok", 3]}}, "voice.dirs[1]: expected a path"),
        ({"limits": {"queue": 0}}, "limits.queue: 0 is out of range 1..1000"),
        ([1, 2], "<top>: expected a mapping, got a list"),
    ],
)
def test_errors_name_the_key_path(data: object, message: str) -> None:
    """Every value error starts with the full key path, so a person can find the line."""
    with pytest.raises(ConfigError) as err:
        parse_config(data, Path("/etc/edged"))
    assert str(err.value).startswith(message)


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    """Relative paths follow the config file; absolute ones stay as written."""
    config = parse_config({"cache": {"dir": "c"},
                           "mqtt": {"username": "u", "password_file": "/etc/pw"}}, tmp_path)
    assert config.cache.dir == tmp_path / "c"
    assert config.mqtt.password_file == Path("/etc/pw")


def test_bad_yaml_and_a_missing_file_are_config_errors(tmp_path: Path) -> None:
    """Broken YAML and a missing file are one-line ConfigErrors, not tracebacks."""
    (tmp_path / "c.yaml").write_text("voice: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "c.yaml")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.yaml")


def test_config_cannot_be_changed_after_loading() -> None:
    """Sections are frozen: nothing can change the config a running daemon validated."""
    with pytest.raises(AttributeError):
        Config().output = "publish"  # type: ignore[misc]


def test_default_paths_resolve_beside_the_file(tmp_path: Path) -> None:
    """An unset cache.dir / mqtt.state_dir lands beside the config, not in the current folder."""
    (tmp_path / "c.yaml").write_text("device_id: x\n")
    config = load_config(tmp_path / "c.yaml")
    assert config.cache.dir == tmp_path / "cache"
    assert config.mqtt.state_dir == tmp_path / "state"


def test_home_assistant_and_wyoming_keep_their_contract_names_and_defaults(tmp_path: Path) -> None:
    """Other checks rely on these keys: discovery on by default, Wyoming off, on loopback:10200
    when on, zeroconf on; bad values name the key."""
    config = parse_config({}, tmp_path)
    assert (config.homeassistant.discovery, config.homeassistant.discovery_prefix,
            config.homeassistant.device_name) == (True, "homeassistant", None)
    assert (config.wyoming.enabled, config.wyoming.host, config.wyoming.port,
            config.wyoming.zeroconf) == (False, "127.0.0.1", 10200, True)
    with pytest.raises(ConfigError, match="homeassistant.discovery_prefix: must not contain '#'"):
        parse_config({"homeassistant": {"discovery_prefix": "ha/#"}}, tmp_path)
    with pytest.raises(ConfigError, match="wyoming.port: 70000 is out of range"):
        parse_config({"wyoming": {"port": 70000}}, tmp_path)
    with pytest.raises(ConfigError, match="wyoming.priority: expected one of high, normal, low"):
        parse_config({"wyoming": {"priority": "critical"}}, tmp_path)
