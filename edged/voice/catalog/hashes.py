"""sha256 of (large) files, remembered by (path, size, mtime, inode).

In-process for every caller; across restarts too when a memo file is given (the daemon uses
`<cache.dir>/voice-hashes.json`), so a restart does not rehash a 63 MB model (0.05 s on x86
with SHA instructions, several times that on a Pi). A file replaced or touched is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Any, Final

from ...files import atomic_write, read_bounded

_LOGGER = logging.getLogger(__name__)

HASH_MEMO_NAME: Final = "voice-hashes.json"
"""In cache.dir: the sha256 of voice files, remembered across restarts."""
_MEMO_MAX_ENTRIES: Final = 64
_MEMO_MAX_BYTES: Final = 1 << 20

_memory: dict[tuple[str, int, int, int], str] = {}
_lock = threading.Lock()


def file_sha256(path: Path, memo_file: Path | None = None) -> str:
    """Hex sha256 of `path`; raises OSError when it cannot be read."""
    st = path.stat()
    resolved = str(path.resolve())
    key = (resolved, st.st_size, st.st_mtime_ns, st.st_ino)
    stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
    with _lock:
        if key in _memory:
            return _memory[key]
    remembered = _load(memo_file)
    cached = remembered.get(resolved)
    if isinstance(cached, dict) and cached.get("stat") == stamp and isinstance(cached.get("sha256"), str):
        digest = str(cached["sha256"])
    else:
        sha = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
        digest = sha.hexdigest()
        if memo_file is not None:
            remembered[resolved] = {"stat": stamp, "sha256": digest}
            _save(memo_file, remembered)
    with _lock:
        _memory[key] = digest
    return digest


def forget(path: Path, memo_file: Path | None = None) -> None:
    """Drop what is remembered of `path` (it failed a check: hash it afresh next time)."""
    resolved = str(path.resolve())
    with _lock:
        for key in [k for k in _memory if k[0] == resolved]:
            del _memory[key]
    remembered = _load(memo_file)
    if remembered.pop(resolved, None) is not None and memo_file is not None:
        _save(memo_file, remembered)


def clear_process_memo() -> None:
    """Forget what this process remembers (as a restart would); the memo file stays."""
    with _lock:
        _memory.clear()


def _load(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(read_bounded(path, _MEMO_MAX_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return {}  # missing or damaged: hash again
    return data if isinstance(data, dict) else {}


def _save(path: Path, data: dict[str, Any]) -> None:
    if not path.parent.is_dir():
        return
    entries = dict(list(data.items())[-_MEMO_MAX_ENTRIES:])
    try:
        atomic_write(path, json.dumps(entries, indent=1, sort_keys=True), sync=False)
    except OSError as err:  # an unwritable cache folder is reported elsewhere; this is an extra
        _LOGGER.debug("Cannot save file hashes to %s: %s", path, err)
