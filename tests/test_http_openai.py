"""OpenAI's speech API, checked with the real `openai` SDK pointed at edged (no network: its
base_url is the daemon on loopback, with an API key so the SDK's Bearer header is exercised)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openai
import pytest
import soundfile

from tests.harness.cases import LONG, LONG_SETTINGS
from tests.harness.http_daemon import HttpDaemon

KEY = "sk-edged-test"
TEXT = "Hello from the OpenAI client."


@pytest.fixture
def served(make_http: Callable[..., HttpDaemon], tmp_path: Path) -> Callable[..., HttpDaemon]:
    key_file = tmp_path / "key"
    key_file.write_text(KEY)

    def make(**overrides: dict) -> HttpDaemon:
        http_section = {"api_key_file": str(key_file), **overrides.pop("http", {})}
        return make_http(http=http_section, **overrides)

    return make


def _client(daemon: HttpDaemon, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=daemon.url + "/v1", api_key=key, max_retries=0, timeout=30)


def test_sdk_writes_an_mp3_file_that_decodes(served: Callable[..., HttpDaemon],
                                             tmp_path: Path) -> None:
    """speech.create with OpenAI's defaults (mp3) writes a file that decodes to the voice's
    duration; a wav and a 24 kHz pcm answer match the voice's own samples."""
    daemon = served()
    client = _client(daemon)
    out = tmp_path / "speech.mp3"
    client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT).write_to_file(out)
    expected = daemon.app.speech.voices.get().synthesize(TEXT).samples
    samples, rate = soundfile.read(out, dtype="int16")
    assert rate == 16000 and len(samples) / rate == pytest.approx(len(expected) / 16000, abs=0.08)
    wav = client.audio.speech.create(model="tts-1-hd", voice="nova", input=TEXT,
                                     response_format="wav").content
    decoded, _ = soundfile.read(io.BytesIO(wav), dtype="int16")
    np.testing.assert_array_equal(decoded, expected)
    pcm = client.audio.speech.create(model="edged", voice="tiny", input=TEXT,
                                     response_format="pcm", speed=1.0).content
    assert len(pcm) // 2 == pytest.approx(len(expected) * 24000 / 16000, abs=2)


def test_sdk_streaming_response_streams(served: Callable[..., HttpDaemon]) -> None:
    """with_streaming_response: the first bytes reach the client while the synthesis is still
    running, and leaving early frees it."""
    daemon = served(**LONG_SETTINGS)
    client = _client(daemon)
    with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input=LONG, response_format="pcm") as response:
        # Held: an iterator dropped after one next() closes the connection (httpcore ends it
        # when its generator is closed), and the server then frees the stream at once; that
        # raced with the check below (seen failing in a clean-clone CI run).
        received = response.iter_bytes(4096)
        first = next(received)
        assert first and response.headers["x-sample-rate"] == "24000"
        daemon.wait_streams("http", 1)  # still being made
    daemon.wait_streams("http", 0)


def test_sdk_models_and_errors(served: Callable[..., HttpDaemon]) -> None:
    """models.list names tts-1, tts-1-hd, edged; a wrong key, model, voice or format raises
    the SDK's own errors with edged's reason."""
    daemon = served()
    client = _client(daemon)
    assert [m.id for m in client.models.list()] == ["tts-1", "tts-1-hd", "edged"]
    with pytest.raises(openai.AuthenticationError):
        _client(daemon, key="wrong").audio.speech.create(model="tts-1", voice="alloy", input="x")
    cases = [({"model": "gpt-4o"}, openai.BadRequestError, "model 'gpt-4o' is not available"),
             ({"voice": "marvin"}, openai.BadRequestError, "voice 'marvin' is unknown"),
             ({"speed": 4.0}, openai.BadRequestError, "speed is 4"),
             ({"response_format": "aac"}, openai.APIStatusError, "response_format 'aac'"),
             ({"input": "y" * 600}, openai.APIStatusError, "input is 600 characters")]
    for change, kind, words in cases:
        fields = {"model": "tts-1", "voice": "alloy", "input": "x", **change}
        with pytest.raises(kind) as err:
            client.audio.speech.create(**fields)
        # edged's {"error": "..."} body, as the SDK hands it over
        assert words in err.value.response.json()["error"], change
    assert err.value.status_code == 413
    with pytest.raises(openai.APIStatusError) as unsupported:
        client.audio.speech.create(model="tts-1", voice="alloy", input="x", response_format="aac")
    assert unsupported.value.status_code == 415
