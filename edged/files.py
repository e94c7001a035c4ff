"""Writing files so that a reader never sees half of one: the one way edged replaces a file."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path


def atomic_write(path: Path, data: bytes | str, *, sync: bool = True) -> None:
    """Replace `path` by `data` in one step: a temp file in the same folder, then os.replace.

    `sync`: fsync the file before the rename and the folder after it, so that after a power
    cut either the old or the complete new file is there (cache entries, the pin list). Without
    it a killed process still leaves no partial file, which is enough for files that are
    advisory or rewritten often (counters, memos). Raises OSError; the temp file never stays.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name[:32]}.{os.getpid()}.{threading.get_ident()}."
                         f"{time.monotonic_ns()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync:
        _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse fsync on a folder
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
