"""HTTP fuzz on the real daemon (issue 28): hostile inputs (tests/harness/fuzz_http.py) on raw
sockets, many at once, against `edged run` with HTTP on loopback and small timeouts.

Afterwards: the daemon is alive, its log has no traceback and no ERROR and stays small
(malformed requests are logged at most 10 per 10 s), every answer was
well-formed HTTP (a 4xx/5xx with a JSON `{"error": ...}` reason), the daemon's descriptors and
threads are back where they were, and a normal request is still served. Seeded: the seed is
printed, and EDGED_FUZZ_SEED makes a run again.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.fuzz_http import Fuzz
from tests.harness.poll import until
from tests.harness.ports import free_port
from tests.harness.raw_http import exchange, open_fds, parse_all, request, threads
from tests.harness.watcher import Watcher

_CLIENTS = 12
"""Inputs sent at once."""
_ANSWER_S = 10.0
"""A generous bound on one input's whole exchange (the daemon's timeouts are 0.5 s)."""


def _seed() -> int:
    seed = int(os.environ.get("EDGED_FUZZ_SEED") or random.randrange(2**32))
    print(f"EDGED_FUZZ_SEED={seed}")
    return seed


def _check(index: int, sent: bytes, received: bytes) -> str | None:
    """What is wrong with the answer to one input (None: nothing)."""
    try:
        answers = parse_all(received)
    except (ValueError, IndexError) as err:
        return f"input {index}: malformed answer ({err}): {received[:200]!r}"
    for answer in answers:
        if not 200 <= answer.status < 600:
            return f"input {index}: status {answer.status}"
        if answer.status >= 400 and answer.body:
            try:
                reason = answer.json()["error"]
            except (ValueError, KeyError, TypeError):
                return f"input {index}: {answer.status} without a JSON reason: {answer.body[:200]!r}"
            if not isinstance(reason, str) or not reason:
                return f"input {index}: empty reason"
    return None


def _fuzz(make_daemon: Callable[..., DaemonProc], watcher: Watcher, count: int) -> None:
    port = free_port()
    d = make_daemon(http={"enabled": True, "port": port, "header_timeout_s": 0.5,
                          "body_timeout_s": 0.5, "idle_timeout_s": 0.5, "batch_max_items": 4},
                    limits={"queue": 20, "stop_timeout_s": 5})
    d.start(watcher)
    wait_log(d, "HTTP: listening")
    assert d.proc is not None
    pid = d.proc.pid
    # Warm up: every executor thread started (they stay), one answer of each kind made.
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda _n: request(port, "GET", "/api/tts?text=Warm."), range(16)))
    fds, thread_count = open_fds(pid), threads(pid)
    seed = _seed()
    inputs = Fuzz(seed, port).inputs(count)
    with ThreadPoolExecutor(_CLIENTS) as pool:
        received = list(pool.map(lambda data: exchange(port, data, timeout=_ANSWER_S), inputs))
    problems = [p for i, (sent, got) in enumerate(zip(inputs, received, strict=True))
                if (p := _check(i, sent, got)) is not None]
    statuses = Counter(a.status for got in received for a in _parsed(got))
    print(f"{count} inputs, seed {seed}: statuses {dict(sorted(statuses.items()))}, "
          f"{sum(1 for got in received if not got)} closed without an answer")
    assert not problems, f"seed {seed}: {problems[:10]}"
    assert d.alive(), f"seed {seed}: the daemon died"
    log = d.log_text()
    assert "Traceback" not in log and " ERROR " not in log, f"seed {seed}: {log[-3000:]}"
    assert len(log) < 50_000 + 100 * count, f"seed {seed}: {len(log)} bytes of log"
    assert until(lambda: open_fds(pid) <= fds, 20), (seed, open_fds(pid), fds)
    assert until(lambda: threads(pid) <= thread_count, 20), (seed, threads(pid), thread_count)
    answer = request(port, "GET", "/api/tts?text=Still+here.")
    assert answer.status == 200 and answer.body[:4] == b"RIFF", (seed, answer.status)
    watcher.control("resume")  # a fuzz input may have paused the queue
    watcher.say({"text": "After the fuzz.", "id": "after-fuzz"})
    assert watcher.final("after-fuzz", 30)["event"] == "finished"


def _parsed(got: bytes) -> list:
    try:
        return parse_all(got)
    except (ValueError, IndexError):
        return []


def test_http_fuzz_a_few_hundred_inputs(make_daemon: Callable[..., DaemonProc],
                                       watcher: Watcher) -> None:
    _fuzz(make_daemon, watcher, 300)


@pytest.mark.long
@pytest.mark.timeout(900)  # about 11 ms an input here (114 s): past the suite's 120 s guard
def test_http_fuzz_ten_thousand_inputs(make_daemon: Callable[..., DaemonProc],
                                       watcher: Watcher) -> None:
    _fuzz(make_daemon, watcher, 10_000)
