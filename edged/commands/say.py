"""`edged say TEXT`: synthesize one announcement to a WAV file or the loudspeaker.

The request obeys the rules every intake does (daemon/fields.py, daemon/policy.py: text, speed,
the memory budget of a named voice); text in several languages is planned as the daemon plans
it (synthesis/plan.py: a voice per language part, speakers, settings) and joined into one WAV at
one rate and loudness; `--debug` logs which voice spoke which part.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
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
from ..daemon import fields
from ..daemon.policy import Refused, RequestPolicy
from ..daemon.requests import RequestError, SpeechRequest
from ..files import own_fd, write_output
from ..synthesis.plan import Planner, spoken
from ..voice import LoadedVoices, VoiceError
from ..voice.lanes import SpareThreads
from ..voice.sizing import usable_cores
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
    p.add_argument("--speed", type=float, help="speaking rate, 0.5-2 (default 1.0)")
    p.add_argument("--language", help="language of text whose script does not say it (Han, "
                   "digits): zh, yue, ja, ko or en (default: from config, languages.han)")
    add_config_argument(p)
    p.set_defaults(func=run)


def _request(args: argparse.Namespace, config: Config) -> SpeechRequest:
    """TEXT and the options as a SpeechRequest, by the field rules every intake obeys."""
    raw = sys.stdin.read(config.limits.max_chars * 4 + 1) if args.text == "-" else args.text
    if not raw.strip():
        raise CommandError("nothing to say: TEXT is empty")
    try:
        text = fields.text(raw, config.limits.max_chars)
        speed = fields.speed(args.speed, name="--speed") if args.speed is not None else None
        language = fields.language(args.language) if args.language is not None else None
    except RequestError as err:
        raise CommandError(f"{err} (limits.max_chars)" if err.too_large else str(err)) from None
    return SpeechRequest(text, args.voice, args.speaker, speed, language=language)


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
    request = _request(args, config)
    if args.output:
        _check_writable(args.output)
    play = args.play or not args.output
    if not play:  # a head decoded apart only brings the first sound sooner; nothing plays here
        config = dataclasses.replace(config, voice=dataclasses.replace(config.voice,
                                                                       kokoro_head_window=False))
    # One request: a warm-up inference of each voice loaded (what the daemon counts in a voice's
    # memory) would only delay it (Kokoro: 1.5 s of the 6.3 s `edged say` took here).
    planner = Planner(config, LoadedVoices(config, first_inference=lambda voice: None))
    try:
        request = RequestPolicy(planner).admit(request)
        utterance = planner.utterance(request.text, request.voice, speaker=request.speaker,
                                      speed=request.speed, language=request.language)
    except (VoiceError, Refused) as err:
        raise CommandError(str(err)) from err
    for part in utterance.parts:
        _LOGGER.info("Part %s (%s): %s", part.language, part.voice.name, part.text)
    started = time.monotonic()
    # To a file nothing plays meanwhile: the pieces are decoded at once on the cores there are
    # (Kokoro's Mandarin line, start to end: median 3.51 -> 3.27 s over 10 runs each here, at
    # +80 MB peak RSS). Playing, the first piece comes first, alone.
    cores = 1 if play else min(2, usable_cores())
    with SpareThreads(cores) if cores > 1 else contextlib.nullcontext() as lanes:
        chunks = spoken(utterance, lambda part, lanes: part.voice.stream(
            part.text, part.settings, lanes), lanes)
        try:
            parts = _play(chunks, config) if play else list(chunks)
        except VoiceError as err:
            raise CommandError(str(err)) from err
    audio = Audio.join(parts, utterance.rate_hz)
    _LOGGER.info("Synthesized %.2f s of audio in %.2f s", audio.duration_s,
                 time.monotonic() - started)
    if args.output:
        _write(args.output, to_wav_bytes(audio))
    return 0


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
