"""One phrase-cache entry on disk: a checksummed PCM file, written atomically.

Path: `<dir>/<key[:2]>/<key>.pcm` (the folder around it: folder.py).

An entry is a 32-byte header, the request text (UTF-8, padded to even length so the
samples stay 2-byte aligned), then int16 little-endian mono samples:

    0  4s  magic b"EDGC"                    16  I  sample rate (Hz)
    4  Q   xxh3-64 of bytes 12..end         20  I  number of samples
    12 H   format version (1)               24  I  text length in bytes
    14 H   reserved (0)                     28  I  reserved (0)

xxh3 rather than crc32: it checks a 3 s phrase in ~5 µs instead of ~40 µs, which is
the difference between the disk tier meeting its latency budget or not. For the same
reason the read path uses plain `str` paths and one exact-size `os.read`.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from pathlib import Path
from typing import Final

import numpy as np
import xxhash

from ..audio import Audio
from ..files import atomic_write

_MAGIC: Final = b"EDGC"
_VERSION: Final = 1
_HEADER: Final = struct.Struct("<4sQHHIIII")
_SUMMED_FROM: Final = 12
HEADER_BYTES: Final = _HEADER.size  # 32
MAX_TEXT_BYTES: Final = 4096
MAX_SAMPLES: Final = 48_000 * 600  # ten minutes at 48 kHz: anything longer is not ours
SUFFIX: Final = ".pcm"
KEY_RE: Final = re.compile(r"[0-9a-f]{64}")


class CorruptEntry(Exception):
    """An entry file exists but is truncated, garbled or not ours; the message says how."""


def entry_file(root: str, key: str) -> str:
    """`<root>/<key[:2]>/<key>.pcm` as a str (a Path costs more than the rest of a memory hit)."""
    if not KEY_RE.fullmatch(key):  # keys are made by PhraseCache.key(); never from a payload
        raise ValueError(f"not a cache key: {key!r}")
    return f"{root}/{key[:2]}/{key}{SUFFIX}"


def entry_path(root: Path | str, key: str) -> Path:
    return Path(entry_file(os.fspath(root), key))


def encode(audio: Audio, text: str) -> bytes:
    """The bytes of one entry file."""
    # "replace": a lone surrogate from a JSON payload must not make put() raise.
    raw = text.encode("utf-8", "replace")[:MAX_TEXT_BYTES]
    raw = raw.decode("utf-8", "ignore").encode("utf-8")  # never cut a character in half
    pcm = np.ascontiguousarray(audio.samples, dtype="<i2").tobytes()
    head = _HEADER.pack(_MAGIC, 0, _VERSION, 0, audio.rate_hz, len(pcm) // 2, len(raw), 0)
    summed = head[_SUMMED_FROM:] + raw + b"\0" * (len(raw) & 1) + pcm
    return _MAGIC + struct.pack("<Q", xxhash.xxh3_64_intdigest(summed)) + summed


def _parse_header(buf: bytes | bytearray, size: int) -> tuple[int, int, int]:
    """(rate_hz, n_samples, text_len) after checking magic, version and file length."""
    if size < HEADER_BYTES:
        raise CorruptEntry(f"{size} bytes, shorter than the header")
    magic, _sum, version, _r1, rate, n, text_len, _r2 = _HEADER.unpack_from(buf)
    if magic != _MAGIC or version != _VERSION:
        raise CorruptEntry("not an edged cache entry (bad magic or version)")
    if not (1 <= rate <= 384_000 and n <= MAX_SAMPLES and text_len <= MAX_TEXT_BYTES):
        raise CorruptEntry("header values out of range")
    expected = HEADER_BYTES + text_len + (text_len & 1) + 2 * n
    if size != expected:
        raise CorruptEntry(f"{size} bytes, expected {expected} (truncated or padded)")
    return rate, n, text_len


def read_entry(path: str | Path) -> Audio:
    """Decode and verify one entry. FileNotFoundError if absent, CorruptEntry if damaged."""
    # O_NONBLOCK: a FIFO planted under an entry's name must not wedge the announcer on open.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorruptEntry("not a regular file")
        size = st.st_size
        if size > HEADER_BYTES + MAX_TEXT_BYTES + 2 + 2 * MAX_SAMPLES:
            raise CorruptEntry(f"{size} bytes, larger than any entry can be")
        buf = os.read(fd, size)  # one exact-size read: no zero-filled buffer, no resize
    finally:
        os.close(fd)
    if len(buf) != size:
        raise CorruptEntry(f"short read: {len(buf)} of {size} bytes")
    rate, n, _text_len = _parse_header(buf, size)
    if xxhash.xxh3_64_intdigest(memoryview(buf)[_SUMMED_FROM:]) != _HEADER.unpack_from(buf)[1]:
        raise CorruptEntry("checksum mismatch")
    # bytes are immutable, so the array is read-only: every caller of get() shares it safely.
    return Audio(np.frombuffer(buf, dtype="<i2", count=n, offset=size - 2 * n), rate)


def read_text(path: Path) -> tuple[str, float]:
    """The stored request text and duration (s), from the header only (for `cache list`)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorruptEntry("not a regular file")
        size = st.st_size
        head = f.read(HEADER_BYTES + MAX_TEXT_BYTES)
    rate, n, text_len = _parse_header(head, size)
    text = head[HEADER_BYTES : HEADER_BYTES + text_len].decode("utf-8", "replace")
    return text, n / rate


def write_entry(path: Path, data: bytes) -> None:
    """Write one entry so that no reader ever sees a partial file, fsynced (see files.py)."""
    path.parent.mkdir(exist_ok=True)
    atomic_write(path, data)
