"""A voice being loaded holds nothing else up: not the voices already loaded, not admission's
budget question, not the scheduler's workers giving memory back, and not a critical
announcement. A load takes a second or two, 9 s on a loaded machine, minutes when a Kokoro
model must be prepared first on a Pi; before, LoadedVoices held its one lock through it, so all
of these waited, a worker that went idle blocked in `reclaim` while the load waited for a
worker to run its first inference (with one worker: for ever), and the announcer, planning a
normal request, served a critical one only after the load.

Real parts: the daemon's own composition (assembly._speech, or the whole daemon in this
process), the real voices. Each load is a real load held at a gate first, so that what the test
does meanwhile does not depend on how long a load takes. The bounded waits (`_GUARD_S`) only keep
a regression from hanging the suite: what is asserted is that each thing returned while the
load was still held.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from edged.assembly import _speech
from edged.config import Config, parse_config
from edged.daemon.priorities import rank
from edged.synthesis.speech import Speech
from edged.voice import load_voice
from edged.voice.backend import VoiceBackend
from tests.harness.http_daemon import HttpDaemon
from tests.harness.watcher import Watcher

_GUARD_S = 120.0


class Gate:
    """Wraps LoadedVoices' loader: a load of `name` waits at the gate (`reached` set) until
    `open()`; then the real loader loads it."""

    def __init__(self, loader: Callable[[Config, str], VoiceBackend], name: str) -> None:
        self._loader, self._name = loader, name
        self.reached, self._open = threading.Event(), threading.Event()

    def __call__(self, config: Config, name: str) -> VoiceBackend:
        if name == self._name:
            self.reached.set()
            self._open.wait()
        return self._loader(config, name)

    def open(self) -> None:
        self._open.set()


def _held(speech: Speech, name: str) -> tuple[Gate, threading.Thread]:
    """A thread loading voice `name` through `speech.voices`, held at its gate."""
    # LoadedVoices takes its loader when the daemon composes it (assembly._speech): the gate
    # goes in front of that one, the real load_voice.
    gate = Gate(speech.voices._loader, name)  # noqa: SLF001
    speech.voices._loader = gate  # type: ignore[method-assign]  # noqa: SLF001
    loading = threading.Thread(target=speech.voices.get, args=(name,), daemon=True)
    loading.start()
    assert gate.reached.wait(_GUARD_S)
    return gate, loading


def _recorded(speech: Speech) -> list[str]:
    """The names `speech.voices` loads from now on, in the order its real loader gets them."""
    loads: list[str] = []
    real = speech.voices._loader  # noqa: SLF001

    def recorded(config: Config, name: str) -> VoiceBackend:
        loads.append(name)
        return real(config, name)
    speech.voices._loader = recorded  # type: ignore[method-assign]  # noqa: SLF001
    return loads


def _composed(tmp_path: Path, voice_path: Path, **limits: Any) -> Iterator[Speech]:
    config = parse_config({"voice": {"name": str(voice_path), "prepare": False},
                           "limits": limits, "cache": {"dir": "cache"}}, tmp_path)
    speech = _speech(config, load_voice(config))
    speech.scheduler.start()
    yield speech
    speech.scheduler.stop()


@pytest.fixture
def one_worker(tmp_path: Path, default_voice_path: Path) -> Iterator[Speech]:
    """One synthesis worker (a Pi Zero's), a budget the process is always over: each stream's
    end and each idle moment make the worker give memory back (LoadedVoices.reclaim)."""
    yield from _composed(tmp_path, default_voice_path, synthesis_workers=1, memory_mb=64)


@pytest.fixture
def two_workers(tmp_path: Path, default_voice_path: Path) -> Iterator[Speech]:
    yield from _composed(tmp_path, default_voice_path, memory_mb=4000)


@pytest.mark.voice
def test_a_worker_gives_memory_back_while_a_voice_loads_and_then_runs_its_first_inference(
        one_worker: Speech) -> None:
    """Before, the worker blocked in `reclaim` on the lock the load held, and the load then
    waited for that worker to run its first inference: the daemon hung."""
    speech = one_worker
    reclaimed = threading.Event()
    reclaim = speech.voices.reclaim

    def observed(share: float = 0.75) -> bool:
        done = reclaim(share)
        reclaimed.set()
        return done
    speech.voices.reclaim = observed  # type: ignore[method-assign]
    gate, loading = _held(speech, "espeak:en-us")
    default = speech.voices.get()
    with speech.scheduler.submit(
            lambda lanes: default.stream("The washing machine has finished.", None, lanes),
            rank=rank("normal"), source="http") as stream:
        assert sum(len(chunk.samples) for chunk in stream) > 0
    assert reclaimed.wait(_GUARD_S), "the worker is still waiting for the load to give memory back"
    assert loading.is_alive()  # the load was held all along
    gate.open()
    loading.join(_GUARD_S)
    assert not loading.is_alive(), "the load never ran its first inference"
    assert "espeak:en-us" in speech.voices.loaded


@pytest.mark.voice
def test_voices_already_loaded_and_the_budget_answer_while_another_loads(
        two_workers: Speech) -> None:
    speech = two_workers
    loaded = speech.voices.get("espeak:cmn")
    gate, loading = _held(speech, "espeak:en-us")
    with ThreadPoolExecutor(1) as other:
        asked = {
            "get": other.submit(speech.voices.get, "espeak:cmn"),
            "peek": other.submit(speech.voices.peek, "espeak:cmn"),
            "fits": other.submit(speech.voices.fits, "espeak:ja"),
            "loaded": other.submit(lambda: speech.voices.loaded),
            "reclaim": other.submit(speech.voices.reclaim, 0.0),
            "plan": other.submit(speech.utterance, "你好。", "espeak:cmn"),
        }
        answers = {what: future.result(_GUARD_S) for what, future in asked.items()}
    assert loading.is_alive()
    assert answers["get"] is loaded and answers["peek"] is loaded
    assert answers["fits"] is None
    assert answers["loaded"] == ["espeak:cmn"]  # the one being loaded is not listed yet
    assert answers["reclaim"] is True
    assert answers["plan"].voice is loaded
    gate.open()
    loading.join(_GUARD_S)
    assert speech.voices.loaded == ["espeak:cmn", "espeak:en-us"]


@pytest.mark.voice
def test_two_threads_asking_for_one_voice_load_it_once(two_workers: Speech) -> None:
    speech = two_workers
    loads = _recorded(speech)
    gate, first = _held(speech, "espeak:ja")
    with ThreadPoolExecutor(1) as other:
        second = other.submit(speech.voices.get, "espeak:ja")
        gate.open()
        voice = second.result(_GUARD_S)
    first.join(_GUARD_S)
    assert speech.voices.peek("espeak:ja") is voice
    assert loads == ["espeak:ja"]


def test_a_critical_announcement_is_spoken_while_a_normal_ones_voice_loads(
        make_http: Callable[..., HttpDaemon], watcher: Watcher) -> None:
    """The announcer plans a normal request whose voice is loading; a critical one arrives: the
    normal one fails (interrupted by it) at once and the critical one is spoken with the voice
    loaded already, while the load is still held. Before, the alarm waited for the load."""
    daemon = make_http()
    watcher.online()
    assert daemon.app is not None
    speech = daemon.app.speech
    gate = Gate(speech.voices._loader, "espeak:en-us")  # noqa: SLF001
    speech.voices._loader = gate  # type: ignore[method-assign]  # noqa: SLF001
    try:
        watcher.say({"text": "The garage door is open.", "id": "chatter",
                     "voice": "espeak:en-us"})
        assert gate.reached.wait(_GUARD_S)
        watcher.say({"text": "Smoke in the kitchen!", "id": "alarm", "priority": "critical"})
        alarm = watcher.final("alarm", _GUARD_S)
        chatter = watcher.final("chatter", _GUARD_S)
        assert "espeak:en-us" not in speech.voices.loaded  # all of it while the load was held
    finally:
        gate.open()
    assert alarm["event"] == "finished" and alarm["duration_ms"] > 0, alarm
    assert chatter["event"] == "failed" and "interrupted by critical request alarm" in \
        chatter["error"], chatter
    # The load went on without its request: the voice is there for the next one.
    watcher.say({"text": "The garage door is open.", "id": "again", "voice": "espeak:en-us"})
    again = watcher.final("again", _GUARD_S)
    assert again["event"] == "finished" and again["voice"] == "espeak:en-us", again


@pytest.mark.voice
def test_what_a_load_under_way_has_taken_counts_as_unloadable_when_admission_asks(
        tmp_path: Path, tiny_voice_path: Path, default_voice_path: Path) -> None:
    """`fits` no longer waits for a load, so it answers while one is under way: the memory the
    voice being loaded has taken already is the process's, but not pinned (it may be unloaded
    like any other). Counted as pinned, a small voice was refused (OverBudget at admission)
    while a large one loaded, where it fitted before and after."""
    from edged.memory import rss_mb
    from edged.voice import LoadedVoices

    config = parse_config({"voice": {"name": str(tiny_voice_path), "prepare": False},
                           "cache": {"dir": "cache"}}, tmp_path)
    tiny = load_voice(config)
    held, go = threading.Event(), threading.Event()

    def first_inference(voice: VoiceBackend) -> None:  # the daemon's runs on the scheduler
        held.set()
        go.wait()
        voice.synthesize("Ready.")

    voices = LoadedVoices(config, default=tiny, budget_mb=rss_mb() + 30,
                          first_inference=first_inference)
    assert voices.fits("espeak:ja") is None
    large = str(default_voice_path)  # the real default voice, by its path: +70-90 MB loaded
    loading = threading.Thread(target=voices.get, args=(large,), daemon=True)
    loading.start()
    try:
        assert held.wait(_GUARD_S)  # loaded, its first inference not run yet
        assert voices.fits("espeak:ja") is None
    finally:
        go.set()
        loading.join(_GUARD_S)
    assert voices.loaded == [large]
    assert voices.fits("espeak:ja") is None  # the large one could be unloaded to make room


def test_a_daemon_stopped_while_a_jobs_voice_loads_stops_now_and_leaves_the_job_unfinished(
        make_http: Callable[..., HttpDaemon], watcher: Watcher) -> None:
    """Stopping (SIGTERM's path) while the announcer waits for a job's voice: the daemon stops
    the job at once (the grace of `limits.stop_timeout_s` is for finishing what is being said)
    and goes, without waiting for the load (before, the announcer stayed inside it); the job
    gets no final event and no done-log entry, so the broker redelivers it to the next start,
    as any job a shutdown cuts."""
    daemon = make_http()
    watcher.online()
    assert daemon.app is not None
    speech = daemon.app.speech
    done_log = daemon.config.mqtt.state_dir / "done.jsonl"
    gate = Gate(speech.voices._loader, "espeak:en-us")  # noqa: SLF001
    speech.voices._loader = gate  # type: ignore[method-assign]  # noqa: SLF001
    try:
        watcher.say({"text": "The garage door is open.", "id": "cut", "voice": "espeak:en-us"})
        assert gate.reached.wait(_GUARD_S)
        mark = watcher.mark()
        daemon.stop()
        watcher.offline(mark, _GUARD_S)  # its last message: every event before it has come
        assert not gate._open.is_set()  # noqa: SLF001  (stopped with the load still held)
    finally:
        gate.open()
    kinds = [e["event"] for e in watcher.events("cut")]
    assert kinds == ["queued", "started"], kinds
    assert "cut" not in (done_log.read_text() if done_log.exists() else "")


def test_an_alarm_by_http_gets_through_while_http_requests_wait_for_a_voices_load(
        make_http: Callable[..., HttpDaemon], watcher: Watcher) -> None:
    """Eight /api/tts ask for a voice being loaded and wait for it, as many at once as the
    server plans; a critical /api/say, /api/state and an /api/tts in the voice loaded already
    answer meanwhile, and the alarm is spoken. Before, opening speech shared the network loop's
    eight threads with everything else: the eight plans took them all, and the alarm waited
    for the load; then the planning threads were the plans' only: all four waiting for the
    load, the request for the loaded voice waited too."""
    import httpx

    from edged.net import loop as net_loop

    daemon = make_http(http={"max_streams": 8})  # all eight answered once the voice is there
    watcher.online()
    assert daemon.app is not None
    speech = daemon.app.speech
    gate = Gate(speech.voices._loader, "espeak:en-us")  # noqa: SLF001
    speech.voices._loader = gate  # type: ignore[method-assign]  # noqa: SLF001
    waiting, changed = 0, threading.Condition()
    get = speech.voices.get

    def counted(name: str | None = None, **kwargs: Any) -> VoiceBackend:
        nonlocal waiting
        if name == "espeak:en-us":
            with changed:
                waiting += 1
                changed.notify_all()
        return get(name, **kwargs)
    speech.voices.get = counted  # type: ignore[method-assign]
    planners = getattr(net_loop, "_PLAN_THREADS", 8)  # threads that may plan at once (8: all)
    with httpx.Client(base_url=daemon.url, timeout=_GUARD_S) as client, \
            ThreadPoolExecutor(8) as clients:
        try:
            answers = [clients.submit(client.post, "/api/tts",
                                      json={"text": f"Request {n}.", "voice": "espeak:en-us"})
                       for n in range(8)]
            with changed:
                assert changed.wait_for(lambda: waiting >= min(8, planners), _GUARD_S)
            # every planning thread waits for the load: one loads, the others wait their turn
            _until(lambda: len(speech.voices.loading) >= min(8, planners))
            said = client.post("/api/say", json={"text": "Smoke in the kitchen!", "id": "alarm",
                                                 "priority": "critical"})
            state = client.get("/api/state")
            loaded = client.post("/api/tts", json={"text": "The door is closed."})
            alarm = watcher.final("alarm", _GUARD_S)
            assert not gate._open.is_set()  # noqa: SLF001  (all of it with the load held)
        finally:
            gate.open()
        assert said.status_code in (200, 202), said.text
        assert state.status_code == 200
        assert loaded.status_code == 200 and len(loaded.content) > 44, loaded.text
        assert alarm["event"] == "finished", alarm
        assert [a.result(_GUARD_S).status_code for a in answers] == [200] * 8


@pytest.mark.voice
def test_a_critical_requests_voice_loads_before_those_that_waited_longer(
        two_workers: Speech) -> None:
    """Loads are one at a time. Two normal requests wait for theirs behind a load under way; a
    critical request then needs a voice not loaded: it is the next one loaded, before both.
    Before, the loads waited on one lock and went in the order they came (the alarm third)."""
    speech = two_workers
    order = _recorded(speech)
    gate, loading = _held(speech, "espeak:en-us")
    asked = [("espeak:fr", "Bonjour.", "normal"), ("espeak:de", "Guten Tag.", "normal"),
             ("espeak:es", "¡Fuego en la cocina!", "critical")]
    with ThreadPoolExecutor(len(asked)) as others:
        try:
            plans = []
            for count, (voice, text, priority) in enumerate(asked, start=1):
                plans.append(others.submit(speech.utterance, text, voice, rank=rank(priority)))
                _until(lambda count=count: len(speech.voices.loading) == 1 + count)  # queued
            queued = speech.voices.loading
        finally:
            gate.open()  # also when the above failed: the plans would wait for ever
        voices = [plan.result(_GUARD_S).voice.name for plan in plans]
    loading.join(_GUARD_S)
    assert queued == ["espeak:en-us", "espeak:es", "espeak:fr", "espeak:de"]
    assert voices == ["espeak:fr", "espeak:de", "espeak:es"]
    assert order == ["espeak:en-us", "espeak:es", "espeak:fr", "espeak:de"]
    assert speech.voices.loading == []


def _until(done: Callable[[], bool]) -> None:
    """Wait for a state another thread reaches (a load's turn queued): LoadedVoices has no event
    for it, so it is polled, bounded by _GUARD_S."""
    waited = threading.Event()
    for _ in range(int(_GUARD_S / 0.01)):
        if done():
            return
        waited.wait(0.01)
    raise AssertionError("never reached")


@pytest.mark.voice
def test_without_loads_a_voice_not_loaded_is_refused_not_loaded_nor_fallen_back_from(
        two_workers: Speech) -> None:
    """The network servers' first try at a plan (net/speech.py): a voice loaded already
    answers; one that is not raises WouldLoad, loading nothing and not falling back to the next
    voice of its language's chain (WouldLoad is no VoiceError); allowed again, it loads."""
    from edged.voice import WouldLoad, without_loads

    speech = two_workers
    speech.voices.get("espeak:cmn")
    with without_loads():
        assert speech.utterance("你好。", "espeak:cmn").voice.name == "espeak:cmn"
        with pytest.raises(WouldLoad):
            speech.utterance("Bonjour.", "espeak:fr")
        with pytest.raises(WouldLoad):  # ja's chain: Kokoro, then espeak-ng, neither loaded
            speech.utterance("こんにちは。", language="ja")
    assert speech.voices.loaded == ["espeak:cmn"]
    assert speech.utterance("Bonjour.", "espeak:fr").voice.name == "espeak:fr"
