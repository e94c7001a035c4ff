"""A voice loaded while a request is planned runs its first inference (what the daemon counts in
the voice's memory) ahead of other work, but stops the inferences other work runs only for a
critical request, as that request's own stream does (it was submitted at rank 0 for every
request, so every voice loaded on demand cut in like an alarm: voice/preempt.py).

The daemon's own composition (assembly._speech) on the real default voice and espeak-ng: the
work already running is a real stream of the default voice, held inside its step until the load
has been decided, so the test does not depend on how long either takes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edged.assembly import _speech
from edged.audio import Audio
from edged.config import parse_config
from edged.daemon.priorities import rank
from edged.synthesis.speech import LOAD_RANK, Speech
from edged.voice import load_voice


@pytest.fixture
def speech(tmp_path: Path, default_voice_path: Path) -> Iterator[Speech]:
    config = parse_config({"voice": {"name": str(default_voice_path), "prepare": False,
                                     "parallel_windows": 2},
                           "limits": {"memory_mb": 800}, "cache": {"dir": "cache"}}, tmp_path)
    made = _speech(config, load_voice(config))
    made.scheduler.start()
    yield made
    made.scheduler.stop()


def _submitted(speech: Speech) -> list[tuple[str, int]]:
    """(source, rank) of every stream submitted from now on; the scheduler runs them as ever."""
    seen: list[tuple[str, int]] = []
    submit = speech.scheduler.submit

    def recording(steps: Any, *, rank: int, source: str) -> Any:
        seen.append((source, rank))
        return submit(steps, rank=rank, source=source)
    speech.scheduler.submit = recording  # type: ignore[method-assign]
    return seen


def _load_beside_running_work(speech: Speech, voice: str, request_rank: int | None) -> int:
    """Inferences stopped while `voice` loads for a request of `request_rank` (None: for no
    request) as a normal stream of the default voice is inside its step."""
    inside, loaded = threading.Event(), threading.Event()
    default = speech.voices.get()

    def steps(lanes: Any) -> Iterator[Audio]:
        inside.set()
        loaded.wait()
        yield from default.stream("The washing machine has finished.", None, lanes)

    stopped = speech.scheduler.stopped_calls
    with speech.scheduler.submit(steps, rank=rank("normal"), source="http") as running:
        assert inside.wait(60)
        if request_rank is None:
            speech.utterance("Hello there.", voice)
        else:
            speech.utterance("Hello there.", voice, rank=request_rank)
        loaded.set()
        assert sum(len(chunk.samples) for chunk in running) > 0
    return speech.scheduler.stopped_calls - stopped


@pytest.mark.voice
def test_a_low_requests_voice_loads_ahead_of_other_work_and_stops_nothing(speech: Speech) -> None:
    assert speech.scheduler.workers == 2
    seen = _submitted(speech)
    assert _load_beside_running_work(speech, "espeak:en-us", rank("low")) == 0
    assert ("voice-load", LOAD_RANK) in seen
    assert rank("critical") < LOAD_RANK < rank("normal")


@pytest.mark.voice
def test_a_critical_requests_voice_loads_first_and_cuts_in(speech: Speech) -> None:
    seen = _submitted(speech)
    assert _load_beside_running_work(speech, "espeak:en-us", rank("critical")) == 1
    assert ("voice-load", rank("critical")) in seen


@pytest.mark.voice
def test_a_voice_loaded_for_no_request_goes_ahead_of_other_work_without_cutting_in(
        speech: Speech) -> None:
    seen = _submitted(speech)
    assert _load_beside_running_work(speech, "espeak:en-us", None) == 0
    assert ("voice-load", LOAD_RANK) in seen
