"""`edged say TEXT`: synthesize one announcement to a WAV file or the loudspeaker.

Text in several languages is cut into language parts, each spoken by its language's voice
(languages/route.py) and joined into one WAV at one rate and loudness (synthesis/join.py);
`--debug` logs which voice spoke which part.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ..audio import Audio, to_wav_bytes
from ..config import Config
from ..files import own_fd, write_output
from ..languages import LanguageError
from ..synthesis.join import Joiner
from ..synthesis.route import Routed, Router
from ..voice import LoadedVoices, VoiceError, default_settings
from .common import DEFAULT_CONFIG, CommandError, Subparsers, add_config_argument, config_from_args

_LOGGER = logging.getLogger(__name__)


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "say", help="speak TEXT (to a WAV file with -o, else on the loudspeaker)",
        description="Synthesize TEXT with the configured voice. TEXT '-' reads standard input.",
    )
    p.add_argument("text", metavar="TEXT", help="what to say; '-' reads it from stdin")
    p.add_argument("-o", "--output", type=Path,
                   help="write a 16-bit mono WAV here: a file (replaced atomically), a device "
                        "or FIFO (written through), or '-' for standard output")
    p.add_argument("--play", action="store_true",
                   help="play on the loudspeaker as soon as the first words are ready "
                        "(the default when -o is not given)")
    p.add_argument("--voice", help="voice name or path to a .onnx (default: from config)")
    p.add_argument("--speaker", help="speaker name or id of a multi-speaker voice")
    p.add_argument("--speed", type=float, help="speaking rate, 0.5-2.0 (default 1.0)")
    p.add_argument("--language", help="language of text whose script does not say it (Han, "
                   "digits): zh, yue, ja, ko or en (default: from config, languages.han)")
    add_config_argument(p)
    p.set_defaults(func=run)


def _read_text(args: argparse.Namespace, max_chars: int) -> str:
    text = sys.stdin.read(max_chars * 4 + 1) if args.text == "-" else args.text
    if not text.strip():
        raise CommandError("nothing to say: TEXT is empty")
    if len(text) > max_chars:
        raise CommandError(
            f"text is {len(text)} characters; the limit is {max_chars} (limits.max_chars)"
        )
    return text


def _check_writable(path: Path) -> None:
    """Fail before synthesis, not after, when the output cannot be written."""
    if str(path) == "-" or own_fd(path) is not None:
        return
    if path.is_dir():
        raise CommandError(f"{path}: is a folder; give a file name for -o")
    try:
        if path.exists() and not path.is_file():  # a device or FIFO: written through
            if not os.access(path, os.W_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            return
        folder = Path(os.path.realpath(path)).parent
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".edged-", suffix=".tmp"):
            pass
    except OSError as err:
        raise CommandError(f"{path}: cannot write here: {err.strerror or err}") from err


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args, DEFAULT_CONFIG)
    text = _read_text(args, config.limits.max_chars)
    if args.speed is not None and not 0.5 <= args.speed <= 2.0:
        raise CommandError(f"--speed {args.speed} is out of range 0.5..2.0")
    if args.output:
        _check_writable(args.output)
    play = args.play or not args.output
    try:
        routed = Router(config, LoadedVoices(config)).route(text, voice=args.voice,
                                                         language=args.language)
        chunks, rate_hz = _chunks(config, routed, args)
    except (VoiceError, LanguageError) as err:
        raise CommandError(str(err)) from err

    started = time.monotonic()
    parts = _play(chunks, config) if play else list(chunks)
    audio = Audio.join(parts, rate_hz)
    _LOGGER.info("Synthesized %.2f s of audio in %.2f s", audio.duration_s,
                 time.monotonic() - started)
    if args.output:
        _write(args.output, to_wav_bytes(audio))
    return 0


def _chunks(config: Config, routed: list[Routed],
            args: argparse.Namespace) -> tuple[Iterator[Audio], int]:
    """The audio of every part in order (joined when there are several), and its rate."""
    streams = []
    for item in routed:
        _LOGGER.info("Part %s (%s): %s", item.language, item.voice.name, item.text)
        speaker = args.speaker if len(routed) == 1 or item.voice.backend == "piper" else None
        settings = default_settings(config, item.voice, speaker=speaker, speed=args.speed)
        streams.append(item.voice.stream(item.text, settings))
    if len(routed) == 1:
        return streams[0], routed[0].voice.rate_hz
    joiner = Joiner(max(r.voice.rate_hz for r in routed), config.languages.switch_pause_ms)
    return (chunk for stream in streams for chunk in joiner.part(stream)), joiner.rate_hz


def _play(chunks: Iterator[Audio], config: Config) -> list[Audio]:
    """Play chunks as they come; returns them for an optional -o file too."""
    from ..playback import Player, PlayerError

    parts: list[Audio] = []

    def tee() -> Iterator[Audio]:
        for chunk in chunks:
            parts.append(chunk)
            yield chunk

    player = Player(config.audio)
    try:
        player.check_device()
        player.play(tee())
    except PlayerError as err:
        raise CommandError(f"cannot play: {err}; use -o FILE to write a WAV instead") from err
    finally:
        player.close()
    return parts


def _write(path: Path, data: bytes) -> None:
    try:
        write_output(path, data)
    except OSError as err:
        raise CommandError(f"{path}: cannot write: {err.strerror or err}") from err
