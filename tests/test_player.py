"""Local playback through real PortAudio into an ALSA file sink, read back sample by sample.

The sink (tests/harness/alsa_sink.py) is not paced in real time, but the player paces itself, so each
play() here takes as long as its audio: the signals are kept short. Nothing here times
playback; timings are in bench/playback.py.

No test assumes where a sound lands by the clock: when the calling thread is late (a loaded
machine), the player legitimately writes silence (after the pre-roll: report.wait_ms; between
chunks: report.underrun_ms). `_assert_played` finds that silence in the file, checks that
everything else is exactly the expected sound and that the report accounts for every sample.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import wave
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soxr

from edged.audio import Audio
from edged.config import AudioConfig, ChimesConfig, ConfigError
from edged.playback import PlaybackReport, Player, PlayerError
from edged.playback.devices import Device
from tests.harness import alsa_sink
from tests.harness.alsa_sink import RATE, tone

_TIMEOUT_S = 10.0
EXACT = dict(fade_ms=0, normalize=False)  # the file must hold exactly what the chunks hold


def _speech_like(seconds: float, level_db: float, seed: int, pause_s: float = 0.1) -> Audio:
    """Noise shaped like syllables at a given RMS (dB re full scale), then an exact pause."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    x = rng.standard_normal(n) * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))
    x *= 10 ** (level_db / 20) / np.sqrt(np.mean(x**2))
    x = np.concatenate([x, np.zeros(int(pause_s * RATE))])
    return Audio(np.round(x * 32768).astype(np.int16), RATE)


def _rms_db(y: np.ndarray) -> float:
    """Level of the non-silent samples (the test signals have exact-zero pauses)."""
    voiced = y[y != 0].astype(np.float64) / 32768
    return 10 * np.log10(np.mean(voiced**2))


def _sentences(y: np.ndarray, pause_s: float = 0.05) -> list[np.ndarray]:
    """The sounding stretches of y between pauses (runs of zeros) of at least pause_s."""
    zero = np.concatenate([[True], y == 0, [True]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))  # starts and ends of sound
    spans = [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2], strict=True)]
    merged = spans[:1]
    for a, b in spans[1:]:
        if a - merged[-1][1] < pause_s * RATE:  # a stray zero sample inside the sound
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return [y[a:b] for a, b in merged]


def _ramp(n: int) -> np.ndarray:
    return 0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)


def _faded(samples: np.ndarray, n: int, *, end: bool = True) -> np.ndarray:
    """What the player makes of `samples` with fade_ms = n samples: raised-cosine in and out."""
    out = samples.astype(np.float64)
    out[:n] *= _ramp(n)
    if end:
        out[-n:] *= _ramp(n)[::-1]
    return out


def _frames(report: PlaybackReport, rate: int = RATE) -> int:
    """Samples the player says it wrote (duration_s is frames / rate, so this is exact)."""
    return round(report.duration_s * rate)


_WINDOW = 32
"""Samples that must match after a stretch of silence is passed over (fixes its length)."""


def _silence_before(y: np.ndarray, e: np.ndarray, tol: int) -> int | None:
    """Length of the silence at the start of y after which y goes on as e does; None: none."""
    quiet = np.abs(y) <= 2 * tol
    run = len(y) if quiet.all() else int(np.argmin(quiet))
    for s in range(1, run + 1):
        w = min(_WINDOW, len(e), len(y) - s)
        if w > 0 and np.abs(y[s : s + w] - e[:w]).max() <= tol:
            return s
    return None


def _match(y: np.ndarray, expected: np.ndarray, tol: int = 0) -> tuple[int, int, list]:
    """Walk y along `expected` (each sample within tol), passing over silence that y has and
    `expected` has not: what the player writes while it waits for the caller. Stops at the
    end of either or at the first difference silence does not explain. Returns (samples of
    `expected` matched, samples of y used, [(index in expected, length) of each silence])."""
    y, e = y.astype(np.int64), np.round(expected).astype(np.int64)
    i = j = 0
    gaps: list[tuple[int, int]] = []
    while True:
        n = min(len(e) - i, len(y) - j)
        bad = np.flatnonzero(np.abs(y[j : j + n] - e[i : i + n]) > tol)
        step = int(bad[0]) if len(bad) else n
        i, j = i + step, j + step
        if j < len(y) and not y[j:].any():  # y ends in silence written while the player
            gaps.append((i, len(y) - j))      # waited: after the last chunk, or cut off
            j = len(y)
        if i == len(e) or j == len(y):
            return i, j, gaps
        s = _silence_before(y[j:], e[i:], tol)
        if s is None:
            return i, j, gaps
        gaps.append((i, s))
        j += s


def _assert_played(y: np.ndarray, expected: np.ndarray, report: PlaybackReport, *, voice_at: int,
                   tol: int = 0, rate: int = RATE) -> list[tuple[int, int]]:
    """y is exactly `expected` (within tol) plus the silence the player reports: wait_ms at
    the start of the voice (`voice_at`, an index in `expected`), underrun_ms in report.underruns
    stretches after it; the file holds what report.duration_s says. Returns the silences."""
    i, j, gaps = _match(y, expected, tol)
    assert (i, j) == (len(expected), len(y)), (
        f"y differs from the expected sound at sample {j} (expected[{i}]) beyond silence "
        f"the player inserted ({gaps})")
    assert len(y) == _frames(report, rate)
    lead = int(np.argmax(np.abs(np.round(expected[voice_at:])) > tol))  # faded-in start
    wait = [n for at, n in gaps if voice_at <= at <= voice_at + lead]
    late = [(at, n) for at, n in gaps if not voice_at <= at <= voice_at + lead]
    assert len(wait) <= 1 and len(late) == report.underruns, (gaps, report)
    # The report rounds to 0.1 ms (2.2 samples at 22050 Hz).
    assert 1000 * sum(wait) / rate == pytest.approx(report.wait_ms, abs=0.051), (gaps, report)
    assert 1000 * sum(n for _, n in late) / rate == pytest.approx(report.underrun_ms,
                                                                 abs=0.051), (gaps, report)
    return gaps


def _wait_until(predicate: Callable[[], bool], what: str) -> None:
    """Poll: the ALSA file gives no notification when it grows."""
    deadline = time.monotonic() + _TIMEOUT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)  # polling a file: there is no event to wait on


def _play(config: AudioConfig, chunks: list[Audio], **kwargs: Any) -> PlaybackReport:
    player = Player(config)
    try:
        return player.play(iter(chunks), **kwargs)
    finally:
        player.close()


# -- order, alignment, pre-roll, fades, chime ----------------------------------------------


def test_chunks_arrive_in_order_gapless_after_exact_preroll(tmp_path, monkeypatch):
    """Protects: samples reach the device in order and unaltered, joined without gaps, after
    exactly audio.preroll_ms of silence; the report counts what was written. The only other
    silence allowed is what the report counts, and only where the caller can be late: before
    the first chunk (wait_ms) or at a join (underrun_ms)."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    chunks = [tone(300 + 100 * i, 0.12) for i in range(3)]
    report = _play(AudioConfig(preroll_ms=100, **EXACT), chunks)
    pre = int(0.1 * RATE)
    expected = np.concatenate([np.zeros(pre, dtype=np.int16)] + [c.samples for c in chunks])
    gaps = _assert_played(sink.samples(), expected, report, voice_at=pre)
    joins = set((pre + np.cumsum([0] + [len(c.samples) for c in chunks])).tolist())
    assert {at for at, _ in gaps} <= joins, gaps
    assert (report.interrupted, report.device_errors) == (False, 0)
    assert report.first_audio_s is not None and report.first_audio_s > 0


def test_fades_in_and_out_at_the_ends_only(tmp_path, monkeypatch):
    """Protects: a raised-cosine fade of fade_ms at the start and end of the announcement,
    none at the joins between chunks (gapless and unaltered in between)."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    chunks = [tone(440, 0.1), tone(550, 0.1)]
    report = _play(AudioConfig(preroll_ms=50, fade_ms=10, normalize=False), chunks)
    n, pre = int(0.01 * RATE), int(0.05 * RATE)
    voice = _faded(np.concatenate([c.samples for c in chunks]), n)
    _assert_played(sink.samples(), np.concatenate([np.zeros(pre), voice]), report,
                   voice_at=pre, tol=1)


def _write_wav(path: Path, samples: np.ndarray, rate: int, channels: int = 1) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.repeat(samples, channels).astype("<i2").tobytes())
    return path


def test_chime_per_priority_plays_before_the_voice_at_target_level(tmp_path, monkeypatch):
    """Protects: the chime configured for a priority (a stereo 44.1 kHz WAV here) plays after
    the pre-roll and before the voice, converted to the device rate and brought to the target
    loudness; a priority without a chime gets none. The pre-roll and chime are one stretch:
    silence while the caller is late (wait_ms) can only come after the chime."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    t = np.arange(int(0.2 * 44100)) / 44100
    ding = _write_wav(tmp_path / "ding.wav", np.round(2000 * np.sin(2 * np.pi * 880 * t)),
                      44100, channels=2)
    config = AudioConfig(preroll_ms=50, fade_ms=5, target_dbfs=-20.0,
                         chimes=ChimesConfig(critical=ding))
    voice = _speech_like(0.3, -20.0, seed=1)
    player = Player(config)
    try:
        report = player.play(iter([voice]), chime="critical")
        with_chime = sink.samples()
        report2 = player.play(iter([voice]), chime="normal")
        both = sink.samples()  # the stream stays open: the second announcement is appended
    finally:
        player.close()

    def bridged(r: PlaybackReport) -> float:  # silence written while the caller was late
        return (r.wait_ms + r.underrun_ms) * RATE / 1000

    pre, chime_n = int(0.05 * RATE), int(0.2 * RATE)
    assert not with_chime[:pre].any()
    chime = with_chime[pre : pre + chime_n].astype(np.float64) / 32768
    spectrum = np.abs(np.fft.rfft(chime))
    assert np.fft.rfftfreq(len(chime), 1 / RATE)[spectrum.argmax()] == pytest.approx(880, abs=6)
    assert 10 * np.log10(np.mean(chime**2)) == pytest.approx(-20.0, abs=0.5)
    assert len(with_chime) == _frames(report)
    assert len(with_chime) == pytest.approx(
        pre + chime_n + len(voice.samples) + bridged(report), abs=4)
    second = both[len(with_chime):]
    assert len(second) == _frames(report2) and not second[:pre].any()
    # normal priority: no chime (it would add chime_n samples the report does not explain)
    assert len(second) == pytest.approx(pre + len(voice.samples) + bridged(report2), abs=3)
    assert report.first_audio_s is not None


def test_bad_chime_file_is_a_config_error_naming_the_key(tmp_path):
    """Protects: a chime that is not a usable WAV fails at start with the YAML key and path,
    not when the first critical announcement arrives."""
    bad = tmp_path / "chime.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    with pytest.raises(ConfigError, match=r"audio\.chimes\.high: .*chime\.wav"):
        Player(AudioConfig(chimes=ChimesConfig(high=bad)))
    long = _write_wav(tmp_path / "long.wav", np.zeros(11 * 8000), 8000)
    with pytest.raises(ConfigError, match=r"audio\.chimes\.low: .*11\.0 s long"):
        Player(AudioConfig(chimes=ChimesConfig(low=long)))


# -- streaming: underruns, interrupts ----------------------------------------------------------


def test_late_chunk_is_bridged_with_counted_silence(tmp_path, monkeypatch):
    """Protects: when synthesis is slower than playback the gap is filled with silence (the
    device never starves), counted once, and its length reported matches the file."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    first, second = tone(440, 0.1), tone(660, 0.1)
    pre = int(0.05 * RATE)

    def chunks() -> Iterator[Audio]:
        yield first
        # The slow synthesis of sentence 2: it comes once the device has been given 0.15 s
        # of silence after sentence 1 (seen in the file: the gap is there, whatever the clock).
        _wait_until(lambda: len(sink.samples()) >= pre + len(first.samples) + int(0.15 * RATE),
                    "silence written after the first chunk")
        yield second

    player = Player(AudioConfig(preroll_ms=50, **EXACT))
    try:
        report = player.play(chunks())
    finally:
        player.close()
    expected = np.concatenate([np.zeros(pre, dtype=np.int16), first.samples, second.samples])
    gaps = _assert_played(sink.samples(), expected, report, voice_at=pre)
    late = [n for at, n in gaps if at == pre + len(first.samples)]
    assert report.underruns == 1 and len(late) == 1 and late[0] > 0.1 * RATE


def test_late_first_sentence_waits_after_preroll_and_chime_with_counted_silence(
        tmp_path, monkeypatch):
    """Protects: while the first sentence is still being synthesized the device gets silence
    after the pre-roll *and* the chime (never between them), reported as wait_ms (not as an
    underrun), and then the voice exactly."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    chime = tone(880, 0.05, dc=-5000)
    ding = _write_wav(tmp_path / "ding.wav", chime.samples, RATE)
    voice = tone(440, 0.1)
    pre, chime_n = int(0.02 * RATE), len(chime.samples)

    def chunks() -> Iterator[Audio]:
        # The slow first sentence: it comes once the file shows silence after the pre-roll and
        # the chime (the device was kept fed while it waited).
        _wait_until(lambda: len(sink.samples()) > pre + chime_n,
                    "silence written after the pre-roll and the chime")
        yield voice

    player = Player(AudioConfig(preroll_ms=20, chimes=ChimesConfig(high=ding), **EXACT))
    try:
        report = player.play(chunks(), chime="high", rate_hz=RATE)  # device opens first
    finally:
        player.close()
    expected = np.concatenate([np.zeros(pre, dtype=np.int16), chime.samples, voice.samples])
    gaps = _assert_played(sink.samples(), expected, report, voice_at=pre + chime_n)
    # How much silence depends on the clock; that there is some, after the chime, does not.
    assert [at for at, _ in gaps] == [pre + chime_n] and report.wait_ms > 0
    assert report.underruns == 0


def _blocked_announcement(first: Audio, later: Audio) -> tuple[Callable[[], Iterator[Audio]],
                                                              threading.Event, threading.Event]:
    asked, release = threading.Event(), threading.Event()

    def chunks() -> Iterator[Audio]:
        yield first
        asked.set()
        assert release.wait(_TIMEOUT_S)  # "synthesizing" the next sentence until released
        yield later

    return chunks, asked, release


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list]:
    result: list = []
    thread = threading.Thread(target=lambda: result.append(fn()))
    thread.start()
    return thread, result


def _assert_cut(y: np.ndarray, sound: np.ndarray, report: PlaybackReport, *, pre: int,
                fade_n: int) -> int:
    """y is one announcement cut short: pre-roll, `sound` faded in and played up to the cut,
    then fade_n samples of it faded out (plus the silence the report accounts for). Returns
    the cut: how many samples of `sound` played in full before the fade-out."""
    faded_in = _faded(sound, fade_n, end=False)
    # The match runs up to where the fade-out starts to differ from the sound played on.
    _, _, gaps = _match(y, np.concatenate([np.zeros(pre), faded_in]), tol=1)
    cut = len(y) - sum(n for _, n in gaps) - pre - fade_n
    fading = sound[cut : cut + fade_n] * _ramp(fade_n)[::-1]
    expected = np.concatenate([np.zeros(pre), faded_in[:cut], fading])
    _assert_played(y, expected, report, voice_at=pre, tol=1)
    return cut


def test_critical_announcement_cuts_in_with_a_fast_fade(tmp_path, monkeypatch):
    """Protects: a critical announcement cutting in during a long one (the daemon decides that
    and calls interrupt(), then plays it: preemption is the daemon's rule, daemon/priorities.py)
    fades the running one out (fade_ms) where it is, plays right after it, and the cut one
    reports interrupted and never plays its later chunks. The file shows: A up to the cut, fade,
    B's pre-roll, B."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    fade_n, pre = int(0.01 * RATE), int(0.05 * RATE)
    a, a_later, b = tone(440, 2.0), tone(300, 0.5), tone(880, 0.2)
    chunks, asked, release = _blocked_announcement(a, a_later)
    player = Player(AudioConfig(preroll_ms=50, fade_ms=10, normalize=False))
    try:
        thread, a_report = _in_thread(lambda: player.play(chunks()))
        assert asked.wait(_TIMEOUT_S)
        _wait_until(lambda: np.count_nonzero(sink.samples()) > 0.3 * RATE, "A to be playing")
        player.interrupt()
        b_report = player.play(iter([b]), chime="critical")
        release.set()
        thread.join(_TIMEOUT_S)
    finally:
        release.set()
        player.close()
    y = sink.samples()
    a_n = _frames(a_report[0])
    assert len(y) == a_n + _frames(b_report)  # A (cut, faded), then B: nothing else
    cut = _assert_cut(y[:a_n], a.samples, a_report[0], pre=pre, fade_n=fade_n)
    assert 0.3 * RATE < cut < len(a.samples) - fade_n
    _assert_played(y[a_n:], np.concatenate([np.zeros(pre), _faded(b.samples, fade_n)]),
                   b_report, voice_at=pre, tol=1)
    assert a_report[0].interrupted and not b_report.interrupted


def test_interrupt_stops_playback_and_discards_later_chunks(tmp_path, monkeypatch):
    """Protects: interrupt() (stop/skip/clear) fades the announcement out, play() returns
    interrupted=True once the generator hands back control, the next chunk is never played,
    and the player plays the next announcement normally afterwards."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    pre, fade_n = int(0.05 * RATE), int(0.01 * RATE)
    a, a_later, next_one = tone(440, 1.5), tone(300, 0.5), tone(500, 0.1)
    chunks, asked, release = _blocked_announcement(a, a_later)
    player = Player(AudioConfig(preroll_ms=50, fade_ms=10, normalize=False))
    try:
        thread, report = _in_thread(lambda: player.play(chunks()))
        assert asked.wait(_TIMEOUT_S)
        _wait_until(lambda: np.count_nonzero(sink.samples()) > 0.2 * RATE,
                    "playback to be running")
        player.interrupt()
        release.set()
        thread.join(_TIMEOUT_S)
        cut_file = sink.samples()
        after = player.play(iter([next_one]))
    finally:
        release.set()
        player.close()
    assert report and report[0].interrupted and not after.interrupted
    assert len(cut_file) == _frames(report[0])
    cut = _assert_cut(cut_file, a.samples, report[0], pre=pre, fade_n=fade_n)
    assert 0.2 * RATE < cut < len(a.samples) - fade_n
    # The rest of the file is the next announcement, exactly: no trace of a_later.
    _assert_played(sink.samples()[len(cut_file) :],
                   np.concatenate([np.zeros(pre), _faded(next_one.samples, fade_n)]), after,
                   voice_at=pre, tol=1)


def test_voice_failing_mid_announcement_reraises_and_player_carries_on(tmp_path, monkeypatch):
    """Protects: an exception from the chunk generator (the voice failed) comes out of play()
    after what was playing is faded out, and the next announcement plays normally."""
    sink = alsa_sink.install(tmp_path, monkeypatch)

    def failing() -> Iterator[Audio]:
        yield tone(440, 0.1)
        raise RuntimeError("voice exploded")

    player = Player(AudioConfig(preroll_ms=20, **EXACT))
    try:
        with pytest.raises(RuntimeError, match="voice exploded"):
            player.play(failing())
        before = len(sink.samples())  # the device stays open: the file keeps growing
        after = player.play(iter([tone(500, 0.1)]))
    finally:
        player.close()
    assert not after.interrupted
    pre = int(0.02 * RATE)
    y = sink.samples()
    # The failed one played (at most) its pre-roll and the start of its first chunk ...
    _, used, _ = _match(y[:before], np.concatenate([np.zeros(pre), tone(440, 0.1).samples]))
    assert used == before
    # ... and the next one is exactly its pre-roll and tone, plus any silence it reports.
    _assert_played(y[before:], np.concatenate([np.zeros(pre), tone(500, 0.1).samples]), after,
                   voice_at=pre)


# -- loudness ----------------------------------------------------------------------------------


def test_two_announcements_come_out_at_the_same_loudness(tmp_path, monkeypatch):
    """Protects: normalizing brings a quiet and a loud announcement (different signals) to the
    target level within 1 dB of each other and of audio.target_dbfs."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    config = AudioConfig(preroll_ms=20, fade_ms=0, target_dbfs=-20.0)
    quiet = [_speech_like(0.3, -34.0, seed=2), _speech_like(0.3, -34.0, seed=3)]
    t = np.arange(int(0.4 * RATE)) / RATE
    buzz = 0.3 * np.sign(np.sin(2 * np.pi * 130 * t)) + 0.2 * np.sin(2 * np.pi * 390 * t)
    loud = [Audio(np.round(buzz * 32768 * 0.9).astype(np.int16), RATE)]
    player = Player(config)
    try:
        player.play(iter(quiet))
        n_quiet = len(sink.samples())
        player.play(iter(loud))
        y = sink.samples()
    finally:
        player.close()
    level_quiet, level_loud = _rms_db(y[:n_quiet]), _rms_db(y[n_quiet:])
    assert level_quiet == pytest.approx(-20.0, abs=1.0)
    assert level_loud == pytest.approx(-20.0, abs=1.0)
    assert abs(level_quiet - level_loud) < 1.0


def test_one_gain_per_announcement_and_peaks_limited_not_clipped(tmp_path, monkeypatch):
    """Protects: the gain is decided once (on the first sentence) and held, so a quieter
    second sentence stays 6 dB quieter; a much louder third one is limited to peak_dbfs
    instead of clipping."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    config = AudioConfig(preroll_ms=0, fade_ms=0, target_dbfs=-20.0, peak_dbfs=-3.0)
    s1, s2, s3 = (_speech_like(0.3, -30.0, seed=4), _speech_like(0.3, -36.0, seed=5),
                  _speech_like(0.3, -12.0, seed=6))
    _play(config, [s1, s2, s3])
    # Split at the 0.1 s pauses, not at fixed offsets: silence written while the caller was
    # late (a loaded machine) can only lengthen a pause.
    one, two, third = _sentences(sink.samples())
    level1, level2 = _rms_db(one), _rms_db(two)
    assert level1 == pytest.approx(-20.0, abs=0.5)
    assert level1 - level2 == pytest.approx(6.0, abs=0.3)
    assert np.abs(third.astype(np.int32)).max() <= round(32768 * 10 ** (-3 / 20)) + 1
    assert not np.any(np.abs(third.astype(np.int32)) >= 32767)
    assert _rms_db(third) > level1 + 3  # limited, yet still the loud sentence


def test_request_volume_scales_the_output(tmp_path, monkeypatch):
    """Protects: the request's volume is applied to the samples (after the gain), exactly."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    chunk = tone(440, 0.1, amp=8000, dc=0)
    report = _play(AudioConfig(preroll_ms=0, **EXACT), [chunk], volume=0.25)
    expected = np.round(chunk.samples.astype(np.float32) / 32768 * 0.25 * 32768)
    _assert_played(sink.samples(), expected, report, voice_at=0)


# -- sample rates ------------------------------------------------------------------------------


def test_resamples_to_the_configured_device_rate_with_soxr(tmp_path, monkeypatch):
    """Protects: with audio.rate_hz 48000 the voice's 22050 Hz chunks are converted by soxr,
    chunk by chunk, with the same result as converting the joined audio (no seams)."""
    sink = alsa_sink.install(tmp_path, monkeypatch, rate=48000)
    chunks = [tone(440, 0.1, amp=8000, dc=0), tone(660, 0.13, amp=8000, dc=0)]
    report = _play(AudioConfig(preroll_ms=0, rate_hz=48000, **EXACT), chunks)
    joined = np.concatenate([c.samples for c in chunks]).astype(np.float32) / 32768
    expected = np.round(soxr.resample(joined, RATE, 48000, quality="HQ") * 32768)
    _assert_played(sink.samples(), expected, report, voice_at=0, tol=1, rate=48000)


def test_rate_the_device_refuses_is_converted_to_its_default_rate(tmp_path, monkeypatch):
    """Protects: audio at a rate the device cannot take (2000 Hz: ALSA's plug to 48 kHz
    refuses it) is converted to the device's default rate instead of failing."""
    sink = alsa_sink.install(tmp_path, monkeypatch, rate=48000)
    chunk = tone(200, 0.25, amp=8000, dc=0, rate=2000)
    report = _play(AudioConfig(preroll_ms=0, **EXACT), [chunk])
    expected = soxr.resample(chunk.samples.astype(np.float32) / 32768, 2000, 48000,
                             quality="HQ")
    _assert_played(sink.samples(), expected * 32768, report, voice_at=0, tol=1, rate=48000)


# -- devices -----------------------------------------------------------------------------------


def test_device_by_index_and_by_name_substring(tmp_path, monkeypatch):
    """Protects: audio.device selects a device by index or by a part of its name."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    chunk = tone(440, 0.05)
    for device in ("0", "CAPTURE"):  # 0 = edged_capture, the file plugin without the plug
        sink.out.unlink(missing_ok=True)
        player = Player(AudioConfig(device=device, preroll_ms=0, **EXACT))
        player.check_device()
        report = player.play(iter([chunk]))
        player.close()
        _assert_played(sink.samples(), chunk.samples, report, voice_at=0)


def test_no_device_is_a_clear_error_naming_the_configured_one(tmp_path, monkeypatch):
    """Protects: without any output device, check_device() and play() raise PlayerError that
    names the configured device; an unknown name lists the devices that do exist."""
    alsa_sink.install_none(tmp_path, monkeypatch)
    player = Player(AudioConfig(device="USB Speaker", retries=1, retry_backoff_ms=10))
    with pytest.raises(PlayerError, match=r"'USB Speaker'.*PortAudio sees none"):
        player.check_device()
    with pytest.raises(PlayerError, match=r"'USB Speaker'"):
        player.play(iter([tone(440, 0.05)]))
    player.close()
    alsa_sink.install(tmp_path, monkeypatch)
    with pytest.raises(PlayerError, match=r"'hdmi' matches no output device; devices: "
                                          r"0 'edged_capture', 1 'default'"):
        Player(AudioConfig(device="hdmi")).check_device()


class _FlakyStream:
    """The real stream, except that one write fails the way an unplugged USB device's does.
    A fault injector because nothing in this VM can be unplugged; all else is real."""

    def __init__(self, stream: object, fail_at: int, on_fail: Callable[[], None]) -> None:
        self._stream, self._fail_at, self._on_fail, self._writes = stream, fail_at, on_fail, 0

    def write(self, data: np.ndarray) -> bool:
        import sounddevice

        self._writes += 1
        if self._writes == self._fail_at:
            self._on_fail()
            raise sounddevice.PortAudioError("Unanticipated host error", -9999)
        return self._stream.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


class _FlakyDevice(Device):
    def __init__(self, config: AudioConfig, fail_at: int, on_fail: Callable[[], None]) -> None:
        super().__init__(config)
        self.fail_at, self.on_fail, self.opens = fail_at, on_fail, 0

    def _open(self, rate_hint: int, keep_rate: bool) -> None:
        super()._open(rate_hint, keep_rate)
        self.opens += 1
        if self.opens == 1:
            self._stream = _FlakyStream(self._stream, self.fail_at, self.on_fail)


def _flaky_player(config: AudioConfig, fail_at: int, on_fail: Callable[[], None]) -> Player:
    return Player(config, device=_FlakyDevice(config, fail_at, on_fail))


def test_device_failing_mid_announcement_is_reopened_and_playback_continues(
        tmp_path, monkeypatch):
    """Protects: a PortAudioError mid-announcement closes the device, reopens it (PortAudio
    re-enumerated) and plays the rest; the report counts the device error."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    chunks = [tone(440, 0.2), tone(550, 0.2)]
    device = _FlakyDevice(AudioConfig(preroll_ms=0, retry_backoff_ms=10, **EXACT),
                          fail_at=10, on_fail=lambda: None)
    player = Player(device._config, device=device)
    try:
        report = player.play(iter(chunks))
    finally:
        player.close()
    expected = np.concatenate([c.samples for c in chunks])
    y = sink.samples()  # the reopen truncated the file: it holds what played after it
    assert report.device_errors == 1 and device.opens == 2
    # Matched from the end: y is the tail of the chunks, plus only silence the report counts.
    matched, used, gaps = _match(y[::-1], expected[::-1])
    assert used == len(y) and 0 < matched < len(expected)
    assert 1000 * sum(n for _, n in gaps) / RATE <= report.underrun_ms + 0.051


def test_device_gone_for_good_fails_the_announcement_not_the_player(tmp_path, monkeypatch):
    """Protects: when the device disappears and does not come back within the retries, play()
    raises PlayerError naming the device and the failure; once a device is back, the same
    player plays again (the daemon stays up)."""
    sink = alsa_sink.install(tmp_path, monkeypatch)
    chunk = tone(440, 0.3)
    empty = alsa_sink.no_device_conf(tmp_path)
    player = _flaky_player(AudioConfig(preroll_ms=0, retries=2, retry_backoff_ms=10, **EXACT),
                           fail_at=5,
                           # monkeypatch, so the variable never leaks into later tests
                           on_fail=lambda: monkeypatch.setenv("ALSA_CONFIG_PATH", str(empty)))
    try:
        with pytest.raises(PlayerError, match=r"'default'.*failed \(Unanticipated host error.*"
                                              r"reopening it failed: .*PortAudio sees none"):
            player.play(iter([chunk]))
        monkeypatch.delenv("ALSA_CONFIG_PATH")  # plugged in again
        sink.out.unlink()
        report = player.play(iter([chunk]))
    finally:
        player.close()
    assert report.device_errors == 0
    _assert_played(sink.samples(), chunk.samples, report, voice_at=0)


# -- `edged devices` ---------------------------------------------------------------------------


def _edged_devices(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edged", "devices", *args], env=dict(os.environ),
                          capture_output=True, text=True, timeout=_TIMEOUT_S)


def test_edged_devices_lists_index_name_api_rate_and_default(tmp_path, monkeypatch):
    """Protects: `edged devices` shows each output device with index, name, host API and
    default rate, marks the default, and with --config shows what audio.device selects."""
    alsa_sink.install(tmp_path, monkeypatch)
    config = tmp_path / "edged.yaml"
    config.write_text("audio:\n  device: capture\n")
    done = _edged_devices("--config", str(config))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.split()[:4] == ["0", "edged_capture", "ALSA", "44100"] for line in lines)
    assert any(line.split()[:5] == ["*", "1", "default", "ALSA", "22050"] for line in lines)
    assert "audio.device 'capture' selects 0 'edged_capture'" in done.stdout


def test_edged_devices_without_devices_says_so_and_exits_0(tmp_path, monkeypatch):
    """Protects: on a machine without a sound card `edged devices` explains instead of
    printing an empty table or failing."""
    alsa_sink.install_none(tmp_path, monkeypatch)
    done = _edged_devices()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("No audio output devices found")
