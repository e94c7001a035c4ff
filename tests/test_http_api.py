"""The HTTP server's announcement, status and security side on a real socket: /api/say as the
twin of MQTT say (same queue, done-log and events, on MQTT and as Server-Sent Events),
/api/control, /api/state, /readyz, /api/voices, /metrics, the API key, CORS and the guards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.http_daemon import HttpDaemon, SseReader
from tests.harness.watcher import Watcher

KEY = "s3cret-key-for-tests"


def _no_ts(event: dict) -> dict:
    return {k: v for k, v in event.items() if k != "ts"}


def test_say_is_spoken_with_the_same_events_on_mqtt_and_sse(http: HttpDaemon,
                                                           watcher: Watcher) -> None:
    """POST /api/say queues the announcement (202 + id); queued, started and exactly one
    finished follow, the same objects on <prefix>/event and on /api/events."""
    sse = SseReader(http.url + "/api/events")
    try:
        with http.client() as client:
            response = client.post("/api/say", json={"text": "From HTTP.", "id": "h1"})
        assert response.status_code == 202
        assert response.json() == {"id": "h1", "status": "queued"}
        final = watcher.final("h1")
        assert final["event"] == "finished"
        sse.wait(lambda kind, e: e["id"] == "h1" and kind == "finished")
    finally:
        sse.close()
    mqtt = [_no_ts(e) for e in watcher.events("h1")]
    assert [e["event"] for e in mqtt] == ["queued", "started", "finished"]
    assert [_no_ts(e) for kind, e in sse.events if e["id"] == "h1"] == mqtt
    assert [kind for kind, e in sse.events if e["id"] == "h1"] == ["queued", "started", "finished"]


def test_say_twice_with_one_id_is_spoken_once(http: HttpDaemon, watcher: Watcher) -> None:
    """The done-log covers HTTP too: the same id again is answered "duplicate", not spoken; its
    final event is published once more, marked `repeat` (as for MQTT: docs/mqtt.md)."""
    with http.client() as client:
        assert client.post("/api/say", content=b'{"text": "Once.", "id": "dup1"}').status_code == 202
        first = watcher.final("dup1")
        again = client.post("/api/say", json={"text": "Once.", "id": "dup1"})
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    repeat = watcher.wait(lambda m: m.topic.endswith("/event") and m.json().get("repeat")).json()
    assert (repeat["id"], repeat["event"], repeat["ts"]) == ("dup1", "finished", first["ts"])
    assert [e["event"] for e in watcher.events("dup1") if not e.get("repeat")] == [
        "queued", "started", "finished"]


def test_say_plain_text_and_its_errors(http: HttpDaemon, watcher: Watcher) -> None:
    """Plain text is accepted as on MQTT; a bad payload is 400 (and published as rejected), a
    text over limits.max_chars 413."""
    with http.client() as client:
        plain = client.post("/api/say", content=b"Plain words.")
        bad = client.post("/api/say", json={"text": "x", "id": "bad1", "priority": "urgent"})
        long = client.post("/api/say", json={"text": "y" * 600})
    assert plain.status_code == 202
    watcher.final(plain.json()["id"])
    assert bad.status_code == 400 and "priority is 'urgent'" in bad.json()["error"]
    assert watcher.final("bad1")["event"] == "rejected"
    assert long.status_code == 413


def test_full_queue_is_429_and_control_pauses_clears_resumes(
        make_http: Callable[..., HttpDaemon], watcher: Watcher) -> None:
    """Paused with limits.queue 1: one request waits, the next is 429 with Retry-After; clear
    fails the waiting one; each control answers with its `finished` event."""
    http = make_http(limits={"queue": 1})
    with http.client() as client:
        paused = client.post("/api/control", json={"action": "pause", "id": "c1"})
        assert paused.status_code == 200 and paused.json()["action"] == "pause"
        assert client.get("/api/state").json()["paused"] is True
        assert client.post("/api/say", json={"text": "Wait.", "id": "w1"}).status_code == 202
        full = client.post("/api/say", json={"text": "No room.", "id": "w2"})
        cleared = client.post("/api/control", json={"action": "clear"})
        resumed = client.post("/api/control", content=b"resume")
        wrong = client.post("/api/control", json={"action": "explode"})
    assert full.status_code == 429 and full.headers["retry-after"] == "1"
    assert "limits.queue" in full.json()["error"]
    assert cleared.json()["affected"] == ["w1"]
    assert watcher.final("w1")["error"].startswith("cleared")
    assert resumed.status_code == 200
    assert wrong.status_code == 400 and "action is 'explode'" in wrong.json()["error"]


def test_state_readyz_voices_and_metrics(http: HttpDaemon) -> None:
    """The status endpoints answer with what they promise."""
    with http.client() as client:
        client.post("/api/tts", json={"text": "Count me."})
        state = client.get("/api/state").json()
        ready = client.get("/readyz")
        voices = client.get("/api/voices").json()["voices"]
        metrics = client.get("/metrics")
        health = client.get("/healthz")
    assert state["http"] == {"state": "listening", "url": http.url + "/"}
    assert state["synthesis_streams"]["http"] == 0
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert ready.json()["broker"] == "connected"
    assert voices == [{"name": "tiny", "default": True, "language": "en_US", "rate_hz": 16000,
                       "speakers": 1, "licence": None}]
    assert health.json() == {"status": "alive"}
    text = metrics.text
    assert metrics.headers["content-type"].startswith("text/plain")
    for name in ('edged_http_requests_total{endpoint="/api/tts",outcome="200"} 1.0',
                 'edged_http_cache_total{result="miss"} 1.0', "edged_http_synthesis_seconds_count",
                 "edged_http_first_audio_seconds_bucket", "edged_queue_depth 0.0",
                 "edged_cache_misses", "edged_rss_bytes"):
        assert name in text


@pytest.fixture
def keyed(make_http: Callable[..., HttpDaemon], tmp_path: Path) -> Callable[..., HttpDaemon]:
    key_file = tmp_path / "http-key"
    key_file.write_text(KEY + "\n")

    def make(**section: object) -> HttpDaemon:
        return make_http(http={"api_key_file": str(key_file), **section})

    return make


def test_api_key_guards_every_api_endpoint_but_health_and_the_page(
        keyed: Callable[..., HttpDaemon]) -> None:
    """With http.api_key_file: 401 without or with a wrong key, 200 with it; /healthz and the
    page's files need none; ?key= is refused unless http.allow_query_key."""
    http = keyed()
    good = {"Authorization": f"Bearer {KEY}"}
    with http.client() as client:
        for path in ("/api/tts?text=Hi", "/api/voices", "/api/state", "/readyz", "/metrics",
                     "/v1/models"):
            missing = client.get(path)
            assert missing.status_code == 401, path
            assert missing.headers["www-authenticate"] == "Bearer"
            assert client.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
            assert client.get(path, headers=good).status_code == 200, path
        assert client.post("/api/say", content=b"Hi").status_code == 401
        assert client.get(f"/api/tts?text=Hi&key={KEY}").status_code == 401
        for path in ("/healthz", "/", "/app.js", "/style.css"):
            assert client.get(path).status_code == 200, path
        assert "missing or wrong API key" in client.get("/api/state").json()["error"]


def test_query_key_when_allowed(keyed: Callable[..., HttpDaemon]) -> None:
    """http.allow_query_key: a media player's URL may carry the key."""
    http = keyed(allow_query_key=True)
    with http.client() as client:
        assert client.get(f"/api/tts?text=Hi&key={KEY}").status_code == 200
        assert client.get("/api/tts?text=Hi&key=wrong").status_code == 401


def test_cors_preflight_and_headers_only_for_listed_origins(
        make_http: Callable[..., HttpDaemon]) -> None:
    """A listed origin gets its preflight (204) and Access-Control-Allow-Origin; another is
    refused its preflight and its POSTs (a page elsewhere cannot make the device speak)."""
    http = make_http(http={"cors_origins": ["http://dash.example:8123"]})
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    with http.client() as client:
        ok = client.options("/api/tts", headers={"Origin": "http://dash.example:8123", **preflight})
        refused = client.options("/api/tts", headers={"Origin": "http://evil.example", **preflight})
        post = client.post("/api/tts", json={"text": "Hi"},
                           headers={"Origin": "http://dash.example:8123"})
        evil = client.post("/api/say", content=b"Hi", headers={"Origin": "http://evil.example"})
        plain = client.get("/api/state")
    assert ok.status_code == 204
    assert "POST" in ok.headers["access-control-allow-methods"]
    assert "Authorization" in ok.headers["access-control-allow-headers"]
    assert refused.status_code == 403
    assert post.headers["access-control-allow-origin"] == "http://dash.example:8123"
    assert evil.status_code == 403 and "http.cors_origins" in evil.json()["error"]
    assert "access-control-allow-origin" not in plain.headers


def test_loopback_server_refuses_foreign_host_names(http: HttpDaemon) -> None:
    """On loopback, a Host that is not a loopback name (DNS rebinding) is refused."""
    with http.client() as client:
        assert client.get("/api/state", headers={"Host": "evil.example"}).status_code == 403
        assert client.get("/api/state", headers={"Host": "localhost"}).status_code == 200
