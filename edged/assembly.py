"""The composition root of `edged run`: everything the daemon is made of is built here, once.

    start-up checks -> the configured voice (loaded, warmed up, pinned among the loaded voices)
      -> synthesis scheduler (the sources' table) -> phrase cache -> speech
      -> device settings -> request policy -> player (output play/both)
      -> done-log, MQTT link, queue, admission, announcer, outcomes, state -> daemon
      -> Home Assistant bridge -> network servers (Wyoming; HTTP made after READY)

`commands/run.py` owns the process (signals, reload, systemd notifications); the daemon owns
requests and events; nothing else constructs the parts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .cache import PhraseCache, expand_phrases
from .checks import ensure_ready
from .config import Config
from .config.profiles import describe as describe_profile
from .daemon.admission import Admission
from .daemon.announcer import Announcer, Heartbeat
from .daemon.core import Daemon
from .daemon.device_state import DeviceSettings, Recent
from .daemon.donelog import DoneLog
from .daemon.jobqueue import JobQueue
from .daemon.outcomes import Outcomes
from .daemon.parts import Parts
from .daemon.policy import RequestPolicy
from .daemon.priorities import BACKGROUND
from .daemon.quiet import QuietKeeper
from .daemon.requests import Rules
from .daemon.state import Readings, ServerState, StateBoard
from .homeassistant import HomeAssistantBridge
from .house import Schedule
from .languages.codes import READY
from .memory import MemoryGuard
from .mqtt import MqttLink
from .net import NetLoop, Server
from .net.descriptors import http_connections, raise_limit
from .net.listen import bind, url_of
from .playback import Player, PlayerError
from .synthesis import Scheduler, SchedulerStopped, Speech
from .synthesis.sources import VOICE_LOAD, WARM, sources
from .synthesis.speech import load_rank
from .voice import LoadedVoices, PiperVoice, default_settings, load_voice
from .voice.backend import VoiceBackend
from .voice.piper.prepared import StatusLine
from .voice.sizing import synthesis_workers

_LOGGER = logging.getLogger(__name__)


class StartError(Exception):
    """The daemon cannot start as configured (no audio device, ...); one line for the user."""


@dataclass
class App:
    """The running daemon and the parts that outlive a request."""

    config: Config
    daemon: Daemon
    speech: Speech
    player: Player | None
    phrases: list[str]
    net: NetLoop | None = None
    """The network servers' loop, when any server is configured."""
    later: Callable[[], Server] | None = None
    """Makes the HTTP server (its socket is bound already): its imports, aiohttp's, cost
    0.1-0.15 s, so `edged run` makes it right after READY (docs/startup.md)."""
    _daemon_started: bool = False

    def start(self, *, defer: bool = False) -> None:
        """Start everything; with `defer`, all but what `later` makes (`start_later`, after
        READY). StartError when a network server cannot start (everything is stopped)."""
        self.speech.scheduler.start()
        if self.net is not None:
            # Listening before the link says `online`: whoever waits for it finds the servers.
            self._start_servers(self.net.start)
        self.daemon.start()
        self._daemon_started = True
        if self.phrases:
            threading.Thread(target=self._warm, name="edged-warm", daemon=True).start()
        if not defer:
            self.start_later()

    def start_later(self) -> None:
        """The servers whose imports wait until the daemon is ready (HTTP)."""
        if self.later is not None and self.net is not None:
            make, self.later = self.later, None
            net = self.net
            self._start_servers(lambda: net.start_server(make()))

    def _start_servers(self, start: Callable[[], object]) -> None:
        try:
            start()
        except Exception as err:  # a server that cannot listen or start: one line, all stopped
            self.stop()
            raise StartError(str(err)) from None

    def stop(self) -> None:
        if self.net is not None:
            self.net.stop()  # first: no new network requests while the rest winds down
        if self._daemon_started:
            self.daemon.stop()
        self.speech.scheduler.stop()
        if self.player is not None:
            self.player.close()

    def _warm(self) -> None:
        """Pin cache.phrases and make the missing ones at the lowest priority. Normally
        `edged cache warm` made them ahead; on a fresh install they arrive in the background."""
        try:
            report = self.speech.warm(self.phrases, rank=BACKGROUND, source=WARM)
        except SchedulerStopped:
            return
        except Exception:  # the cache is an optimisation; never a reason to stop speaking
            _LOGGER.exception("Warming the pinned phrases failed")
            return
        _LOGGER.info("Pinned phrases: %d, %d already cached, %d synthesized, %d failed, %.1f s",
                     report.total, report.present, report.synthesized, len(report.failed),
                     report.elapsed_s)


def assemble(config: Config, status: StatusLine) -> App:
    """Check, load and wire everything; ConfigError, VoiceError or StartError when it cannot."""
    ensure_ready(config)  # one line naming the key or file: every check, the audio device too
    raise_limit()  # descriptors for every connection allowed and a reserve (net/descriptors.py)
    if config.profile != "default":
        _LOGGER.info("Profile %s: %s (where the file sets none of these)", config.profile,
                     describe_profile(config.profile))
    phrases = expand_phrases(config.cache.phrases, config.cache.max_expansions)
    status("loading voice")
    voice = _warmed_up(config, load_voice(config, status=status))
    speech = _speech(config, voice)
    if config.voice.prepare:
        from .voice.kokoro.prepared import prepare_ahead  # numpy only; no Kokoro stack

        prepare_ahead(config.cache.dir, speech.voices.fits, status)
    settings = DeviceSettings.load(config.mqtt.state_dir / "device.json", speech.voices.choices)
    policy = RequestPolicy(speech.planner, settings=settings,
                           memory=MemoryGuard(config.limits.memory_mb,
                                              busy=lambda: any(speech.scheduler.open_streams()
                                                               .values())))
    player = _open_player(config)
    daemon = _daemon(config, speech, policy, settings, player, status)
    HomeAssistantBridge(config, daemon, policy, speech.voices.choices).attach()
    servers: list[Server] = []  # the network servers (Wyoming, HTTP) join here
    if config.wyoming.enabled:
        from .wyoming import WyomingServer, list_voices  # the wyoming library: only when on

        paths = {voice.name: voice.onnx_path} if isinstance(voice, PiperVoice) else {}
        listings = list_voices(config, speech.voices.listed, paths)
        servers.append(WyomingServer(config, speech, policy, listings))
    later = _http_server(config, daemon, speech, policy)
    net = NetLoop(servers) if servers or later else None
    return App(config, daemon, speech, player, phrases, net, later)


def _speech(config: Config, voice: VoiceBackend) -> Speech:
    """The scheduler with every source's bound, the loaded voices (a voice's first inference on
    the scheduler too), the phrase cache: what every source speaks through."""
    # Idle after work: the voices give back what their arenas kept at the peak; and after
    # each stream while over the budget, since under steady load the daemon is never idle and
    # the arenas would keep the peak of two Kokoro pieces decoded at once, the memory guard
    # answering "busy" meanwhile (bench/kokoro_memory.py at limits.memory_mb 512).
    scheduler = Scheduler(synthesis_workers(config), sources(config),
                          on_idle=lambda: voices.reclaim(),
                          after_stream=lambda: voices.reclaim(share=1.0))

    def first_inference(loaded: VoiceBackend) -> None:
        text = READY.get(loaded.language, READY["en"])
        with scheduler.submit(lambda lanes: loaded.stream(text, None, lanes), rank=load_rank(),
                              source=VOICE_LOAD) as stream:
            for _chunk in stream:
                pass

    voices = LoadedVoices(config, default=voice, first_inference=first_inference,
                          load_rank=load_rank)
    return Speech(config, voices, PhraseCache(config.cache), scheduler)


def _daemon(config: Config, speech: Speech, policy: RequestPolicy, settings: DeviceSettings,
            player: Player | None, status: StatusLine) -> Daemon:
    """The daemon's parts, and the MQTT link pointed at the daemon."""
    done = DoneLog(config.mqtt.state_dir / "done.jsonl", window_s=config.mqtt.session_expiry_s)
    # One more than the queue holds ("busy" at once); in the synthesis pool no more than the
    # queue holds: a request beyond it waits at the broker instead (core.py: in-flight window).
    link = MqttLink(config, receive_maximum=config.limits.queue + (
        0 if config.role == "synth" else 2))
    outputs = {"publish"} | ({"play"} if player is not None else set())
    rules = Rules(max_chars=config.limits.max_chars, voices=speech.planner.names, outputs=outputs,
                  max_request_bytes=config.limits.request_bytes, reply_prefix=config.reply_prefix)
    schedule = Schedule(config.schedule)
    recent, heartbeat = Recent(), Heartbeat()
    # Fresh cache figures in the state with each outcome.
    outcomes = Outcomes(link, done, recent, status, config.device_id,
                        on_final=lambda: board.refresh_stats())
    board = StateBoard(config, speech.voices, speech.cache, settings, recent, Readings(
        outcomes.refused.snapshot, lambda: link.outgoing, speech.scheduler.open_streams))
    announcer = Announcer(
        speech, player, link, stream_audio=config.mqtt.stream_audio,
        fallback_to_publish=config.audio.fallback_to_publish, beat=heartbeat.beat,
        settings=settings, schedule=schedule, skip_late=config.groups_late == "skip")
    daemon = Daemon(config, Parts(
        admission=Admission(config, rules, policy, done, schedule),
        queue=JobQueue(config.limits.queue), quiet=QuietKeeper(schedule, settings),
        announcer=announcer, outcomes=outcomes, board=board, link=link, player=player,
        settings=settings, schedule=schedule, heartbeat=heartbeat,
        closing=(settings, speech.cache, done)))
    link.handler = daemon
    return daemon


def _http_server(config: Config, daemon: Daemon, speech: Speech,
                 policy: RequestPolicy) -> Callable[[], Server] | None:
    """What makes the HTTP server, when it is on and its port can be had (bound here, served
    when made). A port in use is fatal only when `http.enabled` was set explicitly: daemons that
    never asked for it must not fight over it."""
    if not config.http.enabled:
        return None
    try:
        sock = bind(config.http.host, config.http.port)
    except OSError as err:
        where = f"{config.http.host}:{config.http.port}"
        reason = f"cannot listen on {where}: {err.strerror or err}"
        if config.http.enabled_given:
            raise StartError(f"http.port: {reason}") from None
        _LOGGER.warning("http: %s; running without HTTP (set http.port, or http.enabled: false)",
                        reason)
        daemon.report_server("http", ServerState("off", error=reason))
        return None
    daemon.report_server("http", ServerState("listening", url=url_of(sock)))

    wyoming = config.wyoming.max_connections if config.wyoming.enabled else 0
    connections = http_connections(config.http.max_connections, wyoming)

    def make() -> Server:
        from .http import HttpServer  # aiohttp: imported only when HTTP is on

        return HttpServer(config, daemon, speech, policy, sock, connections)

    return make


def _warmed_up(config: Config, voice: VoiceBackend) -> VoiceBackend:
    """The first inference allocates ONNX Runtime's buffers: do it before READY, not on the
    first announcement. A voice that sleeps when idle (`voice.sleep_after_s`) starts asleep:
    the first announcement that is not cached opens its sessions."""
    if config.voice.sleep_after_s is not None:
        _LOGGER.info("Voice %s sleeps until an announcement needs it (voice.sleep_after_s: %g)",
                     voice.name, config.voice.sleep_after_s)
        return voice
    start = time.monotonic()
    voice.synthesize("Ready.", default_settings(config, voice))
    _LOGGER.info("Voice %s warmed up in %.0f ms", voice.name, 1000 * (time.monotonic() - start))
    return voice


def _open_player(config: Config) -> Player | None:
    if config.output not in ("play", "both"):
        return None
    player = Player(config.audio)
    if config.audio.fallback_to_publish:  # without a fallback, ensure_ready checked the device
        try:
            player.check_device()
        except PlayerError as err:
            _LOGGER.warning("audio: %s; announcements are published on MQTT until a device "
                            "works (audio.fallback_to_publish)", err)
    return player
