"""The HTTP server's speech endpoints on a real socket: audio that matches the voice, every
format, every error code, the synthesis bound (429), cached answers under load, and work freed
when a client leaves mid-stream."""

from __future__ import annotations

import io
import json
import socket
import wave
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
import soundfile

from edged.memory import rss_mb
from tests.harness.cases import LONG, LONG_SETTINGS
from tests.harness.http_daemon import HttpDaemon

TEXT = "Hello there. This is edged."
# One long stream: every sentence is followed by 5 s of silence (sentence_pause_ms), so its
# audio (hundreds of MB) can never fit in the socket buffers: the server must wait for a reader.


def _frames(wav: bytes) -> np.ndarray:
    with wave.open(io.BytesIO(wav)) as w:
        return np.frombuffer(w.readframes(10**9), dtype="<i2")


def test_tts_answers_the_voice_audio_as_wav_then_from_the_cache(http: HttpDaemon) -> None:
    """POST /api/tts streams a WAV holding exactly the voice's samples; the same request again
    is answered from the phrase cache, with its exact length."""
    expected = http.app.speech.voices.get().synthesize(TEXT).samples
    with http.client() as client:
        first = client.post("/api/tts", json={"text": TEXT})
        second = client.post("/api/tts", json={"text": TEXT})
    assert first.status_code == 200 and first.headers["content-type"] == "audio/wav"
    assert first.headers["x-edged-cached"] == "false"
    assert "content-length" not in first.headers  # chunked: sent while it was made
    np.testing.assert_array_equal(_frames(first.content), expected)
    assert second.headers["x-edged-cached"] == "true"
    assert int(second.headers["content-length"]) == 44 + 2 * len(expected)
    np.testing.assert_array_equal(_frames(second.content), expected)


def test_get_tts_from_an_address_bar_with_volume_and_pcm(http: HttpDaemon) -> None:
    """GET /api/tts?text=... takes the same fields from the query; pcm is raw s16le with its
    rate in a header; volume scales the samples."""
    expected = http.app.speech.voices.get().synthesize(TEXT).samples
    with http.client() as client:
        response = client.get("/api/tts", params={"text": TEXT, "format": "pcm",
                                                  "volume": "0.5"})
    assert response.status_code == 200
    assert response.headers["x-sample-rate"] == "16000"
    assert response.headers["x-sample-format"] == "s16le"
    got = np.frombuffer(response.content, dtype="<i2")
    np.testing.assert_allclose(got, expected.astype(float) * 0.5, atol=1)


@pytest.mark.parametrize(("fmt", "content_type", "rate"), [
    ("mp3", "audio/mpeg", 16000), ("flac", "audio/flac", 16000),
    ("opus", "audio/ogg; codecs=opus", 24000), ("ogg", "audio/ogg; codecs=opus", 24000)])
def test_compressed_formats_decode_to_the_same_length(http: HttpDaemon, fmt: str,
                                                      content_type: str, rate: int) -> None:
    """mp3, flac and Ogg Opus come as real files of the utterance's duration."""
    duration = len(http.app.speech.voices.get().synthesize(TEXT).samples) / 16000
    with http.client() as client:
        response = client.post("/api/tts", json={"text": TEXT, "format": fmt})
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    samples, got_rate = soundfile.read(io.BytesIO(response.content), dtype="int16")
    assert got_rate == rate
    assert len(samples) / rate == pytest.approx(duration, abs=0.08)  # codec padding


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"text": TEXT, "format": "aac"}, 415, "supported: wav, pcm, mp3"),
    ({"text": TEXT, "colour": "red"}, 400, "unknown field 'colour'"),
    ({"text": TEXT, "speed": 9}, 400, "speed is 9"),
    ({"text": TEXT, "volume": "loud"}, 400, "volume must be a number"),
    ({"text": TEXT, "voice": "nobody"}, 400, "unknown voice 'nobody'"),
    ({"text": TEXT, "speaker": 3}, 400, "speaker"),
    ({"text": ""}, 400, "text is empty"),
    ({"speed": 1}, 400, "'text' is missing"),
    ({"text": "x" * 501}, 413, "text is 501 characters; the limit is 500"),
    ([1, 2], 400, "must be a JSON object"),
])
def test_bad_requests_get_json_errors_naming_the_field(http: HttpDaemon, body: object,
                                                       status: int, words: str) -> None:
    """Each bad field gets its own status and a sentence naming it; the server carries on."""
    with http.client() as client:
        response = client.post("/api/tts", json=body)
        assert response.status_code == status
        assert words in response.json()["error"]
        assert client.post("/api/tts", json={"text": TEXT}).status_code == 200


def test_malformed_bodies_and_unknown_paths(http: HttpDaemon) -> None:
    """Not JSON, a body over the cap, a wrong method and an unknown path: all JSON errors."""
    with http.client() as client:
        bad = client.post("/api/tts", content=b"{nope", headers={"Content-Type": "application/json"})
        huge = client.post("/api/tts", content=b"x" * (1 << 21))
        method = client.delete("/api/tts")
        missing = client.get("/nothing/here")
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]
    assert huge.status_code == 413 and "Maximum request body size" in huge.json()["error"]
    assert method.status_code == 405 and method.json()["error"]
    assert missing.status_code == 404 and missing.json()["error"] == "Not Found"


def test_batch_gives_a_zip_of_wavs_each_cached(http: HttpDaemon) -> None:
    """POST /api/tts-batch: one WAV per text, in order; each is then in the phrase cache."""
    texts = ["One.", "Two two.", "Three three three."]
    with http.client() as client:
        response = client.post("/api/tts-batch", json={"texts": texts, "volume": 1.0})
        again = [client.post("/api/tts", json={"text": t}) for t in texts]
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert archive.namelist() == ["001.wav", "002.wav", "003.wav"]
    voice = http.app.speech.voices.get()
    for name, text in zip(archive.namelist(), texts, strict=True):
        np.testing.assert_array_equal(_frames(archive.read(name)), voice.synthesize(text).samples)
    assert [r.headers["x-edged-cached"] for r in again] == ["true"] * 3


def test_batch_bounds_and_item_errors(make_http: Callable[..., HttpDaemon]) -> None:
    """More texts than http.batch_max_items is 413; a bad item is named by its index."""
    http = make_http(http={"batch_max_items": 2})
    with http.client() as client:
        many = client.post("/api/tts-batch", json={"texts": ["a", "b", "c"]})
        bad = client.post("/api/tts-batch", json={"texts": ["fine", "x" * 600]})
        empty = client.post("/api/tts-batch", json={"texts": []})
    assert many.status_code == 413 and "http.batch_max_items" in many.json()["error"]
    assert bad.status_code == 413 and bad.json()["error"].startswith("texts[1]: text is 600")
    assert empty.status_code == 400


def test_a_client_leaving_mid_stream_frees_its_synthesis(
        make_http: Callable[..., HttpDaemon]) -> None:
    """A client that reads the first bytes and hangs up: its stream is dropped at the scheduler
    (slot free) and nothing half-made is cached."""
    http = make_http(**LONG_SETTINGS)
    host, port = http.url.removeprefix("http://").split(":")
    body = json.dumps({"text": LONG}).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /api/tts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        http.wait_streams("http", 1)  # still being made: the socket holds only a little of it
    http.wait_streams("http", 0)
    app = http.app
    assert app.speech.cache.get(app.speech.utterance(LONG.strip()).key) is None


def test_uncached_beyond_the_bound_get_429_while_cached_are_served(
        make_http: Callable[..., HttpDaemon]) -> None:
    """With http.max_streams 1 held by a slow reader, another uncached request is 429 with
    Retry-After; a cached phrase is answered all the same (it takes no slot)."""
    http = make_http(http={"max_streams": 1}, **LONG_SETTINGS)
    with http.client() as client:
        assert client.post("/api/tts", json={"text": TEXT}).status_code == 200  # now cached
        with client.stream("POST", "/api/tts", json={"text": LONG}) as slow:
            assert slow.status_code == 200
            http.wait_streams("http", 1)
            busy = client.post("/api/tts", json={"text": "Something new."})
            cached = client.post("/api/tts", json={"text": TEXT})
    assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
    assert "http.max_streams" in busy.json()["error"]
    assert cached.status_code == 200 and cached.headers["x-edged-cached"] == "true"
    http.wait_streams("http", 0)


def test_200_concurrent_cached_requests_all_succeed_in_bounded_memory(
        make_http: Callable[..., HttpDaemon]) -> None:
    """200 clients at once asking for a cached phrase: every one gets the whole WAV, no 429
    (cached answers take no synthesis slot), and the process grows by a bounded amount.
    (http.max_connections raised to hold them all: its default, 128, would answer 503.)"""
    http = make_http(http={"port": 0, "max_connections": 256})
    with http.client() as client:
        client.get("/api/tts", params={"text": TEXT})  # made and cached
        expected = client.get("/api/tts", params={"text": TEXT}).content
    before = rss_mb()

    # One client with a pool of 200 connections: 200 requests in flight at once.
    shared = httpx.Client(base_url=http.url, timeout=30,
                          limits=httpx.Limits(max_connections=200, max_keepalive_connections=0))

    def fetch(_i: int) -> tuple[int, bytes]:
        response = shared.get("/api/tts", params={"text": TEXT})
        return response.status_code, response.content

    with shared, ThreadPoolExecutor(200) as pool:
        results = list(pool.map(fetch, range(200)))
    assert [status for status, _ in results] == [200] * 200
    assert all(body == expected for _, body in results)
    # The 200 client threads live in this process too. The answer is 28 KB: 50 MB would mean
    # far more than a few copies of it per request piling up.
    assert rss_mb() - before < 50
