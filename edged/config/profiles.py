"""Profiles: named sets of defaults for a kind of device (`profile: low-memory`). A key the file
sets itself always wins over its profile's value; docs/pi.md says what each one costs."""

from __future__ import annotations

from typing import Any, Final

PROFILES: Final[dict[str, dict[str, dict[str, Any]]]] = {
    "default": {},
    # A Pi Zero 2 W or any 512 MB board (bench/results/daemon.json, `edged.low-memory`).
    "low-memory": {
        "voice": {
            "precision": "int8",       # the default already; stated so the profile says it all
            "parallel_windows": 1,     # one decoder window at a time: one window's activations
            "max_window_frames": 48,   # about 9 MB of decoder activations, not 17-23
            # ONNX Runtime's arena stays: without it RSS after an announcement is 117 MB, not
            # 142, but synthesis takes twice the CPU (RTF 0.186 vs 0.097 here), which a Zero
            # 2 W cannot spare; the sessions' own arenas go when the voice sleeps.
            "sleep_after_s": 60.0,     # the sessions (~40 MB) only while the voice is in use
        },
        "limits": {"memory_mb": 160},  # the guard's budget; the unit's MemoryMax 205M
        "cache": {"memory_mb": 4},     # the files are the cache; RAM holds the last few phrases
        "http": {"enabled": False},    # aiohttp's ~10 MB only when asked for (http.enabled: true)
    },
}


def describe(name: str) -> str:
    """`voice.parallel_windows=1, ...`: what a profile sets, for the log."""
    return ", ".join(f"{section}.{key}={value}" for section, values in PROFILES[name].items()
                     for key, value in values.items())


def with_profile(data: dict[Any, Any]) -> dict[Any, Any]:
    """The file's mapping over its profile's defaults (a section the file sets is merged key by
    key; anything else the file sets replaces the profile's value)."""
    name = data.get("profile", "default")
    defaults = PROFILES.get(name, {}) if isinstance(name, str) else {}  # else: the loader says why
    merged: dict[Any, Any] = {section: dict(values) for section, values in defaults.items()}
    for key, value in data.items():
        if value is None and key in defaults:  # `voice:` left empty in the file
            continue
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged
