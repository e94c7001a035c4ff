"""`edged cache warm|stats|list|purge`: precompute, inspect and clear the phrase cache.

Each action takes --config; without it, config/edged.yaml is used when it exists.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from typing import Any

from ..cache import PhraseCache, WarmReport, expand_phrases, recorded_counters, warm
from ..voice import LoadedVoices, VoiceError, default_settings, load_voice
from .common import DEFAULT_CONFIG, CommandError, Subparsers, add_config_argument, config_from_args

_LOGGER = logging.getLogger(__name__)


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "cache", help="precompute, inspect and clear the phrase cache",
        description=f"Phrase cache actions. --config defaults to {DEFAULT_CONFIG} if it exists.",
    )
    actions = p.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
    warm = actions.add_parser("warm", help="synthesize the pinned phrases not cached yet")
    stats = actions.add_parser("stats", help="entries, bytes, pinned/dynamic, hit ratio")
    listing = actions.add_parser("list", help="every entry with its text, oldest use first")
    purge = actions.add_parser("purge", help="delete cache entries")
    purge.add_argument("--dynamic", action="store_true", help="delete only unpinned entries")
    for action, func in ((warm, _warm), (stats, _stats), (listing, _list), (purge, _purge)):
        add_config_argument(action)
        action.set_defaults(func=func)
    for action in (stats, listing):
        action.add_argument("--json", action="store_true", help="machine-readable output")


def _warm(args: argparse.Namespace) -> int:
    config = config_from_args(args, DEFAULT_CONFIG)
    phrases = expand_phrases(config.cache.phrases, config.cache.max_expansions)
    try:
        voice = load_voice(config)
        settings = default_settings(config, voice)
    except VoiceError as err:
        raise CommandError(str(err)) from err
    if config.voice.prepare:  # the daemon's first Kokoro request then need not prepare it
        from ..voice.kokoro.prepared import prepare_ahead

        prepare_ahead(config.cache.dir, LoadedVoices(config, default=voice).fits)
    cache = PhraseCache(config.cache)
    progress = _TerminalProgress() if sys.stderr.isatty() else _log_progress
    report = warm(cache, cache.pin_keys(voice, settings, phrases),
                  lambda text: voice.synthesize(text, settings), progress=progress)
    if isinstance(progress, _TerminalProgress):
        progress.finish()
    return _print_report(report, voice.name)


def _print_report(report: WarmReport, voice_name: str) -> int:
    print(
        f"{report.total} pinned phrase(s) for voice {voice_name}: {report.synthesized} "
        f"synthesized, {report.present} already cached ({report.elapsed_s:.1f} s)"
    )
    for text, error in report.failed:
        print(f"edged: cannot synthesize {text!r}: {error}", file=sys.stderr)
    if report.degraded:
        print(f"edged: cache degraded, nothing was stored: {report.degraded}", file=sys.stderr)
    return 1 if report.failed or report.degraded else 0


class _TerminalProgress:
    """One line, rewritten in place: `[12/40] The kitchen window is open`."""

    def __init__(self) -> None:
        self._width = max(20, shutil.get_terminal_size().columns - 1)
        self._shown = False

    def __call__(self, done: int, total: int, text: str) -> None:
        line = f"[{done}/{total}] {text}"[: self._width]
        sys.stderr.write(f"\r\x1b[K{line}")
        sys.stderr.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _log_progress(done: int, total: int, text: str) -> None:
    _LOGGER.info("Warm %d/%d: %s", done, total, text)


def _stats(args: argparse.Namespace) -> int:
    config = config_from_args(args, DEFAULT_CONFIG)
    stats = PhraseCache(config.cache).stats()
    recorded = recorded_counters(config.cache.dir)
    if args.json:
        print(json.dumps({**stats, "recorded": recorded}, indent=2))
        return 0
    state = f"DEGRADED: {stats['degraded_reason']}" if stats["degraded"] else "ok"
    print(f"folder     {stats['dir']} ({state})")
    print(f"entries    {stats['entries']}, {_mb(stats['bytes'])} of {_mb(stats['max_bytes'])}")
    for tier in ("pinned", "dynamic"):
        print(f"{tier:<10} {stats[tier]['entries']}, {_mb(stats[tier]['bytes'])}")
    print(f"hit ratio  {_ratio(recorded)}")
    return 0


def _ratio(recorded: dict[str, Any] | None) -> str:
    if not recorded:
        return "n/a (no lookups recorded yet; the daemon records them)"
    hits = recorded["memory_hits"] + recorded["disk_hits"]
    lookups = hits + recorded["misses"]
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(recorded["since"]))
    return (
        f"{100 * hits / lookups:.1f} % of {lookups} lookups ({recorded['memory_hits']} from "
        f"memory, {recorded['disk_hits']} from disk) since {since} (pid {recorded['pid']})"
    )


def _list(args: argparse.Namespace) -> int:
    config = config_from_args(args, DEFAULT_CONFIG)
    entries = PhraseCache(config.cache).entries()
    if args.json:
        print(json.dumps(entries, indent=2))
        return 0
    for e in entries:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e["used"]))
        duration = f"{e['duration_s']:6.2f} s" if e["duration_s"] is not None else "     ? s"
        tier = "pinned " if e["pinned"] else "dynamic"
        print(f"{tier}  {duration}  {_mb(e['bytes']):>9}  {used}  {e['key'][:12]}  {e['text']}")
    print(f"{len(entries)} entries")
    return 0


def _purge(args: argparse.Namespace) -> int:
    config = config_from_args(args, DEFAULT_CONFIG)
    try:
        removed, freed = PhraseCache(config.cache).purge(dynamic_only=args.dynamic)
    except OSError as err:
        raise CommandError(f"cannot purge {config.cache.dir}: {err.strerror or err}") from err
    print(f"removed {removed} {'dynamic ' if args.dynamic else ''}entries ({_mb(freed)})")
    return 0


def _mb(size: int) -> str:
    return f"{size / (1 << 20):.1f} MB"
