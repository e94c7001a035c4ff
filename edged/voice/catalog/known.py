"""The voice catalog, `models/voices.yaml`: the voices edged knows, with sha256 and size per file.

Found at the root of a source checkout (also an editable install), else as package data
`edged/data/voices.yaml` if a build ships one. Without either the catalog is empty and voice
files are only checked for presence.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

_LOGGER = logging.getLogger(__name__)

_CHECKOUT_PATH: Final = Path(__file__).resolve().parents[3] / "models" / "voices.yaml"
_SHA256_RE: Final = re.compile(r"[0-9a-f]{64}")


class CatalogError(Exception):
    """The catalog file is unreadable or malformed; the message names the file and entry."""


@dataclass(frozen=True)
class CatalogFile:
    name: str
    sha256: str
    size: int


@dataclass(frozen=True)
class CatalogArchive:
    """A package tarball that holds a voice's files (npm's kokoro-js for Kokoro styles)."""

    url: str
    sha256: str
    size: int
    members: dict[str, str]
    """File name -> its path inside the archive."""


@dataclass(frozen=True)
class CatalogVoice:
    name: str
    source: str
    files: tuple[CatalogFile, ...]
    license: str = ""
    license_url: str = ""
    language: str = ""
    archive: CatalogArchive | None = None


def catalog_path() -> Path | None:
    """Where the catalog is read from, or None when this install has none."""
    if _CHECKOUT_PATH.is_file():
        return _CHECKOUT_PATH
    packaged = importlib.resources.files("edged").joinpath("data", "voices.yaml")
    if packaged.is_file():
        return Path(str(packaged))
    return None


@functools.cache
def load_catalog(path: Path | None = None) -> dict[str, CatalogVoice]:
    """Voices by name. `path=None`: the catalog of this install (empty if there is none)."""
    path = path or catalog_path()
    if path is None:
        _LOGGER.debug("No voice catalog in this install; sha256 checks are skipped")
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise CatalogError(f"{path}: cannot read voice catalog: {_one_line(err)}") from err
    voices = data.get("voices") if isinstance(data, dict) else None
    if not isinstance(voices, dict):
        raise CatalogError(f"{path}: expected a 'voices:' mapping")
    return {name: _voice(path, str(name), entry) for name, entry in voices.items()}


def _voice(path: Path, name: str, entry: Any) -> CatalogVoice:
    where = f"{path}: voices.{name}"
    if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
        raise CatalogError(f"{where}: expected a mapping with 'files:'")
    files = []
    for file_name, meta in entry["files"].items():
        sha = meta.get("sha256") if isinstance(meta, dict) else None
        size = meta.get("size") if isinstance(meta, dict) else None
        if not isinstance(sha, str) or not _SHA256_RE.fullmatch(sha):
            raise CatalogError(f"{where}.files.{file_name}.sha256: expected 64 hex digits")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise CatalogError(f"{where}.files.{file_name}.size: expected a byte count")
        if "/" in str(file_name) or str(file_name) in ("", ".", ".."):
            raise CatalogError(f"{where}.files.{file_name}: expected a plain file name")
        files.append(CatalogFile(str(file_name), sha, size))
    return CatalogVoice(name, str(entry.get("source", "")), tuple(files),
                        str(entry.get("license", "")), str(entry.get("license_url", "")),
                        str(entry.get("language", "")), _archive(where, entry.get("archive")))


def _archive(where: str, entry: Any) -> CatalogArchive | None:
    if entry is None:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("members"), dict):
        raise CatalogError(f"{where}.archive: expected a mapping with url, sha256, size, members")
    url, sha, size = entry.get("url"), entry.get("sha256"), entry.get("size")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise CatalogError(f"{where}.archive.url: expected an http(s) URL")
    if not isinstance(sha, str) or not _SHA256_RE.fullmatch(sha):
        raise CatalogError(f"{where}.archive.sha256: expected 64 hex digits")
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise CatalogError(f"{where}.archive.size: expected a byte count")
    members = {str(k): str(v) for k, v in entry["members"].items()}
    return CatalogArchive(url, sha, size, members)


def _one_line(err: Exception) -> str:
    mark = getattr(err, "problem_mark", None)
    if isinstance(err, yaml.MarkedYAMLError) and mark is not None:
        return f"{err.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(err).split())
