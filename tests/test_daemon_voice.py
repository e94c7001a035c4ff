"""The daemon with the real default voice: streamed parts, critical interruptions, skip."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from edged.audio import from_wav_bytes
from edged.voice.piper.windows import DECODE_WINDOW_FRAMES
from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc
from tests.harness.ports import free_port
from tests.harness.voices import PreparedVoices
from tests.harness.watcher import Watcher

pytestmark = pytest.mark.voice
_HOP = 256
"""Samples per latent frame of en_US-joe-medium (its prepared manifest's `hop`)."""

_LONG = ("The washing machine has finished its cycle. Please empty it soon. The dryer is also "
         "done, and the kitchen timer went off five minutes ago. Remember to take the bread out "
         "of the oven before it burns, and close the window in the bedroom.")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory, default_voice_path: Path,
         prepared_voices: PreparedVoices) -> Iterator:
    """A daemon with en_US-joe-medium that streams its audio in parts as sentences are made."""
    root = tmp_path_factory.mktemp("real")
    prepared_voices.seed(root / "d" / "cache")
    port = free_port()
    broker = Broker(root / "broker", f"listener {port} 127.0.0.1\nallow_anonymous true\n",
                    [port]).start()
    prefix = f"edged-test/{uuid.uuid4().hex[:12]}"
    w = Watcher(port, prefix)
    d = DaemonProc(root / "d", port, prefix, default_voice_path,
                   mqtt={"stream_audio": True}).start(w)
    yield SimpleNamespace(w=w, d=d)
    d.stop()
    w.close()
    broker.stop()


def _rid() -> str:
    return f"v-{uuid.uuid4().hex[:8]}"


def test_streamed_parts_start_before_synthesis_ends(real: SimpleNamespace) -> None:
    """With mqtt.stream_audio the audio leaves window by window as the scheduler makes it: the
    first WAV part holds one decoder window (not the first clause, not the whole), and the parts
    join to the reported duration. (How soon it leaves is timing: bench/mqtt.py.)"""
    w, rid = real.w, _rid()
    w.say({"text": _LONG, "id": rid})
    done = w.final(rid, timeout=30)
    assert done["event"] == "finished" and done["cached"] is False
    prefix = f"{w.prefix}/audio/{rid}"
    end = w.wait(lambda m: m.topic == f"{prefix}/end").json()
    parts = [w.wait(lambda m, i=i: m.topic == f"{prefix}/{i}") for i in range(end["parts"])]
    assert end["parts"] >= 4 and end["rate_hz"] == 22050
    first = from_wav_bytes(parts[0].payload).samples
    pause = 22050 * 200 // 1000  # voice.sentence_pause_ms, added to a sentence's last window
    assert 0 < len(first) <= DECODE_WINDOW_FRAMES * _HOP + pause
    samples = np.concatenate([from_wav_bytes(p.payload).samples for p in parts])
    assert len(samples) == end["frames"]
    assert abs(len(samples) / 22050 * 1000 - done["duration_ms"]) <= 1
    assert 8.0 < len(samples) / 22050 < 25.0  # ~35 words of speech
    assert np.sqrt(np.mean(samples.astype(np.float64) ** 2)) > 300  # speech, not silence


def test_critical_interrupts_what_is_being_spoken(real: SimpleNamespace) -> None:
    """A critical request cuts the current (normal) announcement short: that one ends with
    `failed` naming the interruption, and the critical one is spoken next."""
    w, long_id, crit = real.w, _rid(), _rid()
    w.say({"text": _LONG + " One more time.", "id": long_id})
    w.event(long_id, "started", timeout=20)
    w.say({"text": "Smoke detected in the kitchen.", "id": crit, "priority": "critical"})
    cut = w.final(long_id, timeout=20)
    assert cut["event"] == "failed"
    assert cut["error"] == f"interrupted by critical request {crit}"
    assert w.final(crit, timeout=20)["event"] == "finished"
    order = [(e["id"], e["event"]) for e in w.events() if e["id"] in (long_id, crit)]
    assert order.index((long_id, "failed")) < order.index((crit, "started"))


def test_skip_ends_the_current_announcement(real: SimpleNamespace) -> None:
    """`skip` ends what is being spoken (failed, "skipped") and names it in its answer."""
    w, rid = real.w, _rid()
    w.say({"text": _LONG + " And again.", "id": rid})
    w.event(rid, "started", timeout=20)
    answer = w.control("skip")
    assert answer["affected"] == [rid]
    event = w.final(rid, timeout=20)
    assert event["event"] == "failed" and event["error"].startswith("skipped")
    assert real.d.alive()
