"""The daemon with mixed-language requests: segments in the finished event, one WAV at one
rate, parts cached per language, the request field `language`, and the memory fallback."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import numpy as np

from edged.audio import from_wav_bytes
from tests.harness.daemon import DaemonProc
from tests.harness.watcher import Watcher

_MIXED = "明天 7:30 开会，meeting in room 4B"


def _rid() -> str:
    return f"l-{uuid.uuid4().hex[:10]}"


def _entries(daemon: DaemonProc) -> set[str]:
    """Cache entry files of the daemon's phrase cache (not prepared models)."""
    root = daemon.workdir / "cache"
    return {p.name for p in root.glob("??/*") if p.is_file()}


def test_mixed_request_is_spoken_in_segments(make_daemon: Callable[..., DaemonProc],
                                             watcher: Watcher) -> None:
    """queued -> started -> finished; `segments` names each part's language, voice and length;
    one WAV at one rate holding the Mandarin speech (espeak-ng here) and the English part."""
    make_daemon(languages={"zh": "espeak:cmn"}).start(watcher)
    rid = _rid()
    watcher.say({"text": _MIXED, "id": rid})
    done = watcher.final(rid, timeout=30)
    assert [e["event"] for e in watcher.events(rid)] == ["queued", "started", "finished"]
    assert done["segments"] == [
        {"language": "zh", "voice": "espeak:cmn", "chars": len("明天 7:30 开会，")},
        {"language": "en", "voice": "tiny", "chars": len("meeting in room 4B")}]
    audio = from_wav_bytes(watcher.audio(rid).payload)
    assert audio.rate_hz == 22050  # the highest of the parts' rates (espeak 22050, tiny 16000)
    assert abs(len(audio.samples) / audio.rate_hz * 1000 - done["duration_ms"]) <= 1
    speech = np.abs(audio.samples[: audio.rate_hz]).max()
    assert speech > 1000  # the Mandarin part is speech; the tiny voice's part is silence


def test_parts_are_cached_per_language(make_daemon: Callable[..., DaemonProc],
                                       watcher: Watcher) -> None:
    """A repeated mixed phrase is served from the cache; another phrase sharing its Mandarin
    part makes only its new English part."""
    daemon = make_daemon(languages={"zh": "espeak:cmn"}).start(watcher)
    first, again, shared = _rid(), _rid(), _rid()
    watcher.say({"text": "你好。 Hello there.", "id": first})
    assert watcher.final(first, timeout=30)["cached"] is False
    entries = _entries(daemon)
    assert len(entries) == 2
    watcher.say({"text": "你好。 Hello there.", "id": again})
    assert watcher.final(again, timeout=30)["cached"] is True
    watcher.say({"text": "你好。 Goodbye now.", "id": shared})
    assert watcher.final(shared, timeout=30)["event"] == "finished"
    added = _entries(daemon) - entries
    assert len(added) == 1


def test_language_field_and_tags(make_daemon: Callable[..., DaemonProc],
                                 watcher: Watcher) -> None:
    """`language` says what Han text is; `<|jp|>` is ja; an unknown tag or language is
    rejected with a reason, and the daemon goes on."""
    make_daemon(languages={"yue": "espeak:yue", "ja": "espeak:ja"}).start(watcher)
    cantonese, japanese, bad_tag, bad_field = _rid(), _rid(), _rid(), _rid()
    watcher.say({"text": "你好", "id": cantonese, "language": "yue"})
    assert watcher.final(cantonese, timeout=30)["segments"][0] == \
        {"language": "yue", "voice": "espeak:yue", "chars": 2}
    watcher.say({"text": "<|jp|>こんにちは", "id": japanese})
    assert watcher.final(japanese, timeout=30)["segments"][0]["language"] == "ja"
    watcher.say({"text": "<|xx|>hello", "id": bad_tag})
    event = watcher.final(bad_tag)
    assert event["event"] == "rejected" and "tag <|xx|>: unknown language 'xx'" in event["error"]
    watcher.say({"text": "hello", "id": bad_field, "language": "klingon"})
    event = watcher.final(bad_field)
    assert event["event"] == "rejected" and "unknown language 'klingon'" in event["error"]


def test_over_budget_voice_falls_back(make_daemon: Callable[..., DaemonProc],
                                      watcher: Watcher) -> None:
    """A Kokoro voice that does not fit limits.memory_mb is not loaded: the segment is spoken by
    espeak-ng (visible in `segments`), and the fallback is logged once for all requests."""
    daemon = make_daemon(languages={"zh": "kokoro:zf_xiaoxiao"},
                         limits={"memory_mb": 250, "stop_timeout_s": 5}).start(watcher)
    for _ in range(2):
        rid = _rid()
        watcher.say({"text": "你好 hello", "id": rid})
        done = watcher.final(rid, timeout=30)
        assert done["event"] == "finished", done
        assert [s["voice"] for s in done["segments"]] == ["espeak:cmn", "tiny"]
    log = daemon.log_text()
    assert log.count("voice kokoro:zf_xiaoxiao not used") == 1
    assert "does not fit limits.memory_mb=250" in log
