"""The real default voice prepared once per session and precision, for the tests that need it
prepared without being about preparing it."""

from __future__ import annotations

import shutil
from pathlib import Path


class PreparedVoices:
    """The real default voice prepared once per session and precision, copied into a test's
    cache folder before the test starts edged: preparing takes about 17 s here, and a dozen
    tests need a prepared voice without being about preparing one. Tests of preparing itself
    (test_prepared_voice, the first start in test_daemon_notify, `cache warm` on a new device)
    prepare their own."""

    def __init__(self, root: Path, onnx_path: Path) -> None:
        self._root, self._onnx = root, onnx_path
        self._sha256 = ""

    def seed(self, cache_dir: Path, precision: str = "int8", as_voice: Path | None = None) -> Path:
        """Copy (never link: a test may damage its copy) the prepared folder into `cache_dir`;
        `as_voice`: for the same model under another file name (a link to it)."""
        from edged.voice.catalog.hashes import file_sha256
        from edged.voice.piper.prepared import ensure_prepared, prepared_folder

        self._sha256 = self._sha256 or file_sha256(self._onnx)
        source = prepared_folder(self._root, self._onnx, self._sha256, precision)
        if ensure_prepared(self._onnx, self._sha256, self._root, precision) is None:
            raise RuntimeError(f"cannot prepare {self._onnx.name} ({precision}) for the tests")
        target = prepared_folder(cache_dir, as_voice or self._onnx, self._sha256, precision)
        shutil.copytree(source, target)
        return target
