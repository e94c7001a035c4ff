"""A critical stream stops the long inferences other work runs on the workers, and they run again
after it (voice/preempt.py, synthesis/scheduler.py): an alarm does not wait for a Kokoro piece
or a whole unprepared sentence to end, and the stopped work's audio is what it would have been.

Real inferences: the default voice not prepared (`voice.prepare: false`), so one step is one
ONNX Runtime call over a whole sentence (about a second here), the kind of unit a Kokoro piece
is; noise scales 0, so the same text makes the same samples and a re-run call can be compared.
Kokoro itself is stopped the same way in test_kokoro_prepared.py (long). Then many streams of
random ranks over a real graph of many small nodes, for what a deadlock would need.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edged.audio import Audio
from edged.config import parse_config
from edged.synthesis import Scheduler
from edged.voice import load_voice

_LONG = ("The washing machine in the cellar has finished its long programme, the dryer next to "
         "it is still running, and the kettle in the kitchen has boiled for the second time "
         "this morning while nobody was there to pour the tea")
_ALARM = "Smoke in the kitchen! Leave the house now. Do not use the lift. Close the doors."
"""Four sentences, four chunks: more than the scheduler makes ahead (2), so the last two are made
after the stopped call has started again, while the player is on the alarm's last chunk."""


@pytest.fixture(scope="module")
def whole_voice(tmp_path_factory: pytest.TempPathFactory, default_voice_path: Path) -> Any:
    folder = tmp_path_factory.mktemp("cut-in")
    config = parse_config({"voice": {"name": str(default_voice_path), "prepare": False},
                           "cache": {"dir": "cache"}}, folder)
    return load_voice(config)


def _samples(chunks: list[Audio]) -> np.ndarray:
    return np.concatenate([c.samples for c in chunks])


def _logged(voice: Any, text: str, label: str, log: list[str], lock: threading.Lock) -> Any:
    settings = voice.settings(noise_scale=0.0, noise_w=0.0)

    def steps(lanes: Any) -> Iterator[Audio]:
        for chunk in voice.stream(text, settings, lanes):
            with lock:
                log.append(label)
            yield chunk
    return steps


@pytest.mark.voice
@pytest.mark.parametrize("workers", [1, 2])
def test_a_critical_stream_stops_long_inferences_which_run_again_after_it(whole_voice: Any,
                                                                        workers: int) -> None:
    """Every worker busy with a long call of other work: the alarm's first chunks are made before
    any of that work's (every worker stopped at once), the next ones by one worker stopped again
    when the alarm has no chunk ahead (with one worker: before any of that work's too), each
    stopped call runs again from its start, and every stream's audio is the same as made
    alone."""
    settings = whole_voice.settings(noise_scale=0.0, noise_w=0.0)
    alone = {text: whole_voice.synthesize(text, settings).samples for text in (_LONG, _ALARM)}
    scheduler = Scheduler(workers, {"http": workers, "announcer": 1})
    scheduler.start()
    log: list[str] = []
    lock = threading.Lock()
    busy = threading.Barrier(workers + 1)

    def other(label: str) -> Any:
        made = _logged(whole_voice, _LONG, label, log, lock)

        def steps(lanes: Any) -> Iterator[Audio]:
            busy.wait()  # every worker is in a long call's step now (or about to call)
            yield from made(lanes)
        return steps

    try:
        others = [scheduler.submit(other(f"other{i}"), rank=3, source="http")
                  for i in range(workers)]
        busy.wait(timeout=30)
        alarm = scheduler.submit(_logged(whole_voice, _ALARM, "alarm", log, lock), rank=0,
                                 source="announcer")
        # The alarm's first two chunks made (all the scheduler makes ahead) and every worker back
        # on its call: the player then takes both, and the next ones must cut in again.
        with scheduler._cond:
            assert scheduler._cond.wait_for(
                lambda: len(alarm.items) == 2 and len(scheduler._busy) == workers
                and min(scheduler._busy.values()) > 0, timeout=60)
        alarm_audio = _samples(list(alarm))
        other_audio = [_samples(list(stream)) for stream in others]
    finally:
        scheduler.stop()
    assert log[:2] == ["alarm"] * 2, log  # every worker stopped for the first chunks
    if workers == 1:  # and stopped again for the next; with two, the one left on its call may
        assert log[:4] == ["alarm"] * 4, log  # finish it meanwhile
    assert scheduler.stopped_calls >= workers + 1
    assert np.array_equal(alarm_audio, alone[_ALARM])
    for audio in other_audio:
        assert np.array_equal(audio, alone[_LONG])  # run again: the same samples, none lost


@pytest.mark.voice
def test_work_of_the_same_rank_is_not_stopped(whole_voice: Any) -> None:
    """A second critical stream waits for the first one's step: alarms do not stop alarms."""
    scheduler = Scheduler(1, {"announcer": 2})
    scheduler.start()
    log: list[str] = []
    lock = threading.Lock()
    first_running = threading.Event()
    made = _logged(whole_voice, _LONG, "first", log, lock)

    def first(lanes: Any) -> Iterator[Audio]:
        first_running.set()
        yield from made(lanes)

    try:
        one = scheduler.submit(first, rank=0, source="announcer")
        first_running.wait(timeout=30)
        two = scheduler.submit(_logged(whole_voice, _ALARM, "second", log, lock), rank=0,
                               source="announcer")
        list(one), list(two)
    finally:
        scheduler.stop()
    assert log[0] == "first" and scheduler.stopped_calls == 0


def _chain_model(tmp: Path, nodes: int = 60, size: int = 192) -> Path:
    """A real ONNX graph of `nodes` matrix products (a few ms each): calls long enough to be
    stopped mid-way, at any of many nodes, and cheap enough to run many of."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    weights = [numpy_helper.from_array((rng.standard_normal((size, size)) / np.sqrt(size))
                                       .astype(np.float32), f"w{i}") for i in range(nodes)]
    made = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i - 1}", f"w{i}"], [f"h{i}"])
            for i in range(nodes)]
    graph = helper.make_graph(made, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, size])],
                              [helper.make_tensor_value_info(f"h{nodes - 1}", TensorProto.FLOAT,
                                                             [None, size])], weights)
    path = tmp / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("seed", [*range(3),  # and 37 more seeds in `make test-long`
                                  *(pytest.param(s, marks=pytest.mark.long) for s in range(3, 40))])
def test_streams_of_every_rank_cut_in_on_each_other_and_all_finish_whole(tmp_path: Path,
                                                                         seed: int) -> None:
    """Many streams at once, of random ranks (critical ones among them), with lane jobs, some
    closed early by their consumer: every call that a critical stream stops runs again, no
    worker is left waiting (a deadlock here would be a daemon that no longer speaks), and
    every stream's chunks are exactly what its calls make alone."""
    from edged.voice.lanes import Ahead
    from edged.voice.onnx import open_session

    session = open_session(_chain_model(tmp_path), 1)
    rng = np.random.default_rng(seed)
    rows = 256

    def inputs(stream: int, step: int) -> np.ndarray:
        return np.random.default_rng(1000 * stream + step).standard_normal(
            (rows, 192)).astype(np.float32)

    def made(stream: int, step: int) -> float:
        return float(session.run(None, {"x": inputs(stream, step)})[0].sum())

    plans = [(int(rng.integers(0, 4)), int(rng.integers(1, 5)), bool(rng.random() < 0.2))
             for _ in range(14)]  # rank, steps, closed early
    plans[0], plans[7] = (3, 4, False), (0, 2, False)  # at least one alarm cuts in on others
    expected = {i: [made(i, k) for k in range(steps)] for i, (_r, steps, _c) in enumerate(plans)}
    scheduler = Scheduler(2, {"a": 20})
    scheduler.start()
    got: dict[int, list[float]] = {}
    errors: list[BaseException] = []

    def steps_of(index: int, count: int) -> Any:
        def steps(lanes: Any) -> Iterator[Audio]:
            ahead: Ahead[float] = Ahead(lanes)
            for k in range(count):
                ahead.push(partial(made, index, k))
            while ahead:
                yield Audio(np.array([ahead.pop()], dtype=np.float64), 16000)
        return steps

    def consume(index: int, stream: Any, close_early: bool) -> None:
        try:
            got[index] = []
            for chunk in stream:
                got[index].append(float(chunk.samples[0]))
                if close_early:
                    break
            stream.close()
        except BaseException as err:  # noqa: BLE001 - handed to the test thread
            errors.append(err)

    consumers = []
    try:
        for index, (rank, count, close_early) in enumerate(plans):
            stream = scheduler.submit(steps_of(index, count), rank=rank, source="a")
            thread = threading.Thread(target=consume, args=(index, stream, close_early))
            thread.start()
            consumers.append(thread)
            if index == 0:  # a worker is on it before the others come
                with scheduler._cond:
                    assert scheduler._cond.wait_for(lambda: bool(scheduler._busy), timeout=30)
        for thread in consumers:
            thread.join(timeout=120)
        assert not any(t.is_alive() for t in consumers), "a stream never finished: deadlock"
    finally:
        scheduler.stop()
    assert not errors, errors
    for index, (_rank, _count, close_early) in enumerate(plans):
        want = expected[index][:1] if close_early else expected[index]
        assert got[index] == want, (index, plans[index])
    assert scheduler.stopped_calls > 0  # critical streams did cut in
    assert not scheduler._busy and scheduler.open_streams() == {"a": 0}
