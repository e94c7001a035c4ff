"""`edged devices`: the output devices PortAudio sees, for choosing `audio.device`."""

from __future__ import annotations

import argparse

from ..playback import PlayerError, list_devices, resolve_device
from .common import CommandError, Subparsers, add_config_argument, config_from_args


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "devices", help="list audio output devices (for audio.device)",
        description="List the audio output devices PortAudio sees: index, name, host API, "
                    "default sample rate; * marks the system default. With --config, also "
                    "show which device audio.device selects.",
    )
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        devices = list_devices()
    except PlayerError as err:
        raise CommandError(str(err)) from None
    if not devices:
        print("No audio output devices found: PortAudio sees none. Check that `aplay -l` "
              "lists a sound card and that this user is in the 'audio' group; on a machine "
              "without one, use `output: publish`.")
        return 0
    width = max(len(d.name) for d in devices)
    print(f"  {'#':>3}  {'name':<{width}}  {'host API':<8}  {'rate':>9}  channels")
    for d in devices:
        mark = "*" if d.default else " "
        print(f"{mark} {d.index:>3}  {d.name:<{width}}  {d.hostapi:<8}  "
              f"{d.default_rate_hz:>6} Hz  {d.channels}")
    print("* = default output device")
    if args.config is not None:
        config = config_from_args(args)
        try:
            chosen = resolve_device(config.audio.device)
        except PlayerError as err:
            print(f"audio.device: {err}")
        else:
            said = repr(config.audio.device) if config.audio.device is not None else "(unset)"
            print(f"audio.device {said} selects {chosen.index} {chosen.name!r}")
    return 0
