"""The Kokoro model prepared once per test session and linked into each test daemon's cache.

With a Kokoro voice package installed, a daemon whose budget fits Kokoro prepares the model
before it says it is ready (voice/kokoro/prepared.prepare_ahead): 35 s here and 188 MB written,
in every test that starts a daemon with a new cache, though almost none of them is about
Kokoro (a settings flood test spent 37 of its 54 s on it). Here it is prepared once, by the
daemon's own code in a child process, and each daemon's cache gets hard links to the files
(the daemon only reads them: a damaged or stale one would be replaced by a new file, never
written in place). The tests of preparing itself (test_kokoro_prepared) prepare their own.

    use_root(tmp_path_factory.mktemp("kokoro-seed"))   # once per session (harness.fixtures)
    seed_cache(cache_dir)      # before the daemon starts; nothing when Kokoro is not installed
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

_LOCK = threading.Lock()
_root: Path | None = None
_seed: Path | None = None
_tried = False
_PREPARE = """
import sys
from pathlib import Path
from edged.voice.kokoro.prepared import prepare_ahead
sys.exit(0 if prepare_ahead(Path(sys.argv[1]), lambda name: None) else 3)
"""
_SEEDED = ("models", "frontend")
"""What prepare_ahead writes: the joined and prepared model, Mandarin's mapped tables."""


def use_root(folder: Path) -> None:
    """Where the session's model is prepared (pytest's temporary folder, cleaned with it)."""
    global _root
    _root = folder


def seed_cache(cache_dir: Path) -> None:
    """Hard-link the session's prepared Kokoro files into `cache_dir` (files it has already
    are kept). Nothing when the Kokoro package is not installed or could not be prepared, or
    outside a pytest session (no `use_root`): the daemon then does what it would do on a new
    device."""
    seed = _session_seed()
    if seed is None:
        return
    try:
        for top in _SEEDED:
            for source in (seed / top).rglob("*"):
                target = cache_dir / source.relative_to(seed)
                if source.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                elif not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.link(source, target)
    except OSError:
        pass  # a cache a test made unusable (a file, no rights): the daemon meets it as it is


def _session_seed() -> Path | None:
    """Prepared on first use, in a child process (the test process keeps none of its memory);
    a failure is printed once and leaves the daemons to prepare their own."""
    global _seed, _tried
    with _LOCK:
        if _tried:
            return _seed
        _tried = True
        from edged.voice.kokoro import assets

        if _root is None or not assets.installed():
            return None
        done = subprocess.run([sys.executable, "-c", _PREPARE, str(_root)],
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            print(f"kokoro_seed: preparing failed ({done.returncode}): {done.stderr[-2000:]}",
                  file=sys.stderr)
            return None
        _seed = _root
        return _seed
