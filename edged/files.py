"""Files edged reads and writes: bounded reads of regular files only (`read_bounded`), the one way
edged replaces a file (`atomic_write`), and writing where a user points (`write_output`)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Final


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
            _write_all(fd, raw)
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


class NotRegularFile(OSError):
    """A path that must name a regular file names a FIFO, a device, a folder or a socket."""


class FileTooLarge(OSError):
    """A file is larger than what reading it may cost."""


def read_bounded(path: Path | str, max_bytes: int) -> bytes:
    """The whole of a regular file of at most `max_bytes`, or OSError (NotRegularFile,
    FileTooLarge, FileNotFoundError, ...) whose `strerror` says why.

    Every file edged reads whole goes through here: opened without blocking (a FIFO would
    otherwise wait for a writer for ever), checked to be a regular file *on the descriptor*
    (no race with a rename), and never read past the bound (/dev/zero, a growing file).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({_kind(st.st_mode)})",
                                 os.fspath(path))
        if st.st_size > max_bytes:
            raise FileTooLarge(errno.EFBIG, f"larger than {max_bytes} bytes", os.fspath(path))
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:  # it grew while we read it
        raise FileTooLarge(errno.EFBIG, f"larger than {max_bytes} bytes", os.fspath(path))
    return b"".join(chunks)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


# -- writing where a user points (`edged say -o PATH`) -----------------------------------------

_FD_PATH: Final = re.compile(r"/(?:proc/(self|\d+)|dev)/fd/(\d+)")


def own_fd(path: Path | str) -> int | None:
    """The descriptor of this process that `path` names through symlinks (/dev/stdout,
    /dev/fd/N, /proc/self/fd/N), or None. Writing there must use the descriptor: reopening
    the file behind it would truncate what the shell opened for appending, or replace it."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on symlinks in a path
        match = _FD_PATH.fullmatch(current)
        if match and match.group(1) in (None, "self", str(os.getpid())):
            return int(match.group(2))
        if not os.path.islink(current):
            return None
        target = os.readlink(current)
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    return None


def write_output(path: Path, data: bytes) -> None:
    """Write `data` to what `path` names, as a user means it. OSError.

    - one of our descriptors (`-` is stdout; /dev/stdout and friends): written to it;
    - a device, a FIFO or a socket: written through, never replaced by a file;
    - a regular file, or nothing yet: replaced atomically (a symlink to one: its target is
      replaced and the link kept).
    """
    fd = 1 if str(path) == "-" else own_fd(path)
    if fd is not None:
        _write_all(fd, data)
        return
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder", os.fspath(path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        return
    atomic_write(Path(os.path.realpath(path)), data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (a part file or lock named after a dead one is stale)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True
