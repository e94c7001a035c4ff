"""The `http:` config section: the contract names and defaults other checks rely on, its rules,
and config/edged.yaml documenting every key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from edged.config import ConfigError, HttpConfig, parse_config
from tests.harness.paths import ROOT


def test_defaults_are_on_loopback_8093_without_key_or_cors() -> None:
    """http.enabled true, 127.0.0.1:8093, no key, no CORS, no query key, by default."""
    http = parse_config({}, Path(".")).http
    assert (http.enabled, http.host, http.port, http.api_key_file, http.cors_origins,
            http.allow_query_key) == (True, "127.0.0.1", 8093, None, (), False)
    assert http.max_streams >= 1 and not http.enabled_given


def test_enabled_given_records_an_explicit_setting() -> None:
    """Only a file that sets http.enabled makes a port in use fatal."""
    assert parse_config({"http": {"enabled": True}}, Path(".")).http.enabled_given
    assert not parse_config({"http": {"port": 9000}}, Path(".")).http.enabled_given
    with pytest.raises(ConfigError, match="http.enabled_given: unknown key"):
        parse_config({"http": {"enabled_given": True}}, Path("."))


@pytest.mark.parametrize(("http", "message"), [
    ({"cors_origins": ["*"]}, "http.cors_origins\\[0\\]: '\\*' is not an origin"),
    ({"cors_origins": ["http://a.example/path"]}, "is not an origin"),
    ({"port": 70000}, "http.port: 70000 is out of range"),
    ({"max_streams": 0}, "http.max_streams: 0 is out of range"),
    ({"host": " "}, "http.host: must not be empty"),
])
def test_bad_values_name_the_key(http: dict, message: str) -> None:
    """Each bad value is refused with the key's name."""
    with pytest.raises(ConfigError, match=message):
        parse_config({"http": http}, Path("."))


def test_the_key_file_resolves_beside_the_config(tmp_path: Path) -> None:
    """http.api_key_file is a path like the others: relative to the config file."""
    http = parse_config({"http": {"api_key_file": "key"}}, tmp_path).http
    assert http.api_key_file == tmp_path / "key"


def test_config_file_documents_every_http_key() -> None:
    """config/edged.yaml shows every http key (set or commented)."""
    text = (ROOT / "config" / "edged.yaml").read_text()
    section = text[text.index("\nhttp:"):]
    for field in dataclasses.fields(HttpConfig):
        if not field.metadata.get("internal"):
            assert f"{field.name}:" in section, field.name
    assert yaml.safe_load(text)["http"]["port"] == 8093
