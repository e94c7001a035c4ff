"""Wyoming fuzz on the real daemon (issue 28): hostile connections over raw sockets (bad JSON
headers, lying and huge lengths, wrong types, unknown events, cut-off frames, header lines past the
bound, pipelined floods, random bytes, streams opened and abandoned, forbidden characters), a few
at a time. Whatever a client sends:

- the daemon stays up, with no traceback (nor asyncio's "exception was never retrieved") in its
  log;
- what it sends back is well-formed Wyoming events of the types a TTS server sends; a client
  that shut its side and reads is answered whole and the connection ends;
- afterwards its descriptors and threads are back where they were, and a normal `synthesize`
  is answered with audio.

Seeded: the seed is printed; EDGED_FUZZ_SEED=<seed> replays the same cases. A few hundred
cases in `make test`, 10,000 in `make test-long`.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Callable

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from tests.harness.daemon import DaemonProc
from tests.harness.fuzz_wyoming import Case, WyomingFuzzer, frame
from tests.harness.poll import until
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher
from tests.harness.wyoming_server import read_until

_MAX_CHARS = 300
_AT_ONCE = 6
_CASE_TIMEOUT_S = 60.0
"""Per case: a hang, not a speed target (a case is answered in well under a second but for the
silent ones, which wait for the 1 s idle timeout)."""
_SENT_TYPES = {"info", "pong", "error", "audio-start", "audio-chunk", "audio-stop",
               "synthesize-stopped"}
_BAD_LOG = ("Traceback", "exception was never retrieved", "Unhandled exception")


def _seed() -> int:
    seed = int(os.environ.get("EDGED_FUZZ_SEED") or random.randrange(2**32))
    print(f"Wyoming fuzz seed {seed} (EDGED_FUZZ_SEED={seed} replays it)")
    return seed


def parse_events(raw: bytes) -> list[str]:
    """The event types in what the daemon sent; AssertionError on anything malformed."""
    types, at = [], 0
    while at < len(raw):
        end = raw.index(b"\n", at)
        header = json.loads(raw[at:end])
        at = end + 1
        assert isinstance(header, dict) and header.get("type") in _SENT_TYPES, header
        data_length = header.get("data_length") or 0
        payload_length = header.get("payload_length") or 0
        if data_length:
            data = json.loads(raw[at:at + data_length])
            assert isinstance(data, dict), data
            if header["type"] == "error":
                assert data.get("text") and data.get("code"), data
        at += data_length + payload_length
        assert at <= len(raw), f"an event cut short: {header}"
        types.append(header["type"])
    return types


async def run_case(port: int, case: Case) -> str:
    """One connection as the case says; '' when all is well, else what went wrong."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for piece in case.pieces:
            writer.write(piece)
            await writer.drain()
        if case.ending == "close":
            return ""
        if case.ending == "half-close":
            writer.write_eof()
        raw = await reader.read(-1)  # until the daemon ends the connection
    except OSError:  # reset, broken pipe, not connected (at write_eof)
        return ""  # the daemon dropped a client that could not be followed: allowed
    finally:
        writer.transport.abort()
    try:
        parse_events(raw)
    except (AssertionError, ValueError) as err:
        return f"{case}: a malformed answer ({err}): {raw[:300]!r}"
    return ""


async def run_cases(port: int, cases: list[Case], at_once: int = _AT_ONCE) -> list[str]:
    gate = asyncio.Semaphore(at_once)

    async def one(case: Case) -> str:
        async with gate:
            try:
                return await asyncio.wait_for(run_case(port, case), _CASE_TIMEOUT_S)
            except TimeoutError:
                return f"{case}: no end within {_CASE_TIMEOUT_S:g} s"

    return [p for p in await asyncio.gather(*(one(c) for c in cases)) if p]


def _counts(pid: int) -> tuple[int, int]:
    """(open descriptors, threads) of the daemon."""
    return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


def _settled(pid: int, fds: int, threads: int, timeout: float = 30.0) -> tuple[int, int]:
    """The daemon's counts once back to (fds, threads) or below, or as they are at `timeout`
    (connections end on the daemon's loop after the clients leave: polled, there is no event)."""
    until(lambda: _counts(pid)[0] <= fds and _counts(pid)[1] <= threads, timeout)
    return _counts(pid)


def _synthesize(port: int) -> list[str]:
    async def ask() -> list[str]:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Synthesize(text="Still speaking.").event())
            return (await read_until(client, "audio-stop")).types

    return asyncio.run(asyncio.wait_for(ask(), 30))


def fuzz(make_daemon: Callable[..., DaemonProc], watcher: Watcher, count: int) -> None:
    seed = _seed()
    port = free_port()
    daemon = make_daemon(wyoming={"enabled": True, "port": port, "zeroconf": False,
                                  "idle_timeout_s": 1, "max_connections": 8,
                                  "max_chars": _MAX_CHARS}).start(watcher)
    assert daemon.proc is not None
    pid = daemon.proc.pid
    fuzzer = WyomingFuzzer(seed, _MAX_CHARS)
    # A first round brings up what stays: the loaded voice, the cache, and all of the net
    # loop's executor threads (made as work waits for them, never ended: 8 clients at once
    # speaking keep its 8 busy).
    warm = [Case("warm-up", [frame("synthesize", {"text": fuzzer.text(6)})] * 8, "half-close")
            for _ in range(24)]
    assert asyncio.run(run_cases(port, warm + fuzzer.cases(40), 8)) == [], f"seed {seed}"
    fds, threads = _settled(pid, *_counts(pid))
    cases = fuzzer.cases(count)
    kinds: dict[str, int] = {}
    for c in cases:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    problems = asyncio.run(run_cases(port, cases))
    print(f"{count} cases: {dict(sorted(kinds.items()))}")
    assert problems == [], f"seed {seed}: {len(problems)} problems: {problems[:10]}"
    assert daemon.alive(), f"seed {seed}: the daemon died:\n{daemon.log_text()[-3000:]}"
    after = _settled(pid, fds, threads)
    print(f"descriptors {fds} -> {after[0]}, threads {threads} -> {after[1]}")
    assert after[0] <= fds and after[1] <= threads, f"seed {seed}: {after} > {(fds, threads)}"
    assert _synthesize(port) == ["audio-start", "audio-chunk", "audio-stop"], f"seed {seed}"
    log = daemon.log_text()
    assert not any(b in log for b in _BAD_LOG), f"seed {seed}:\n{_around_bad(log)}"


def _around_bad(log: str, after: int = 40) -> str:
    """Each bad line of the log with what follows it (a traceback's frames and its error),
    not the log's tail, where a traceback early in a long run would not be."""
    lines = log.splitlines()
    marks = [i for i, line in enumerate(lines) if any(b in line for b in _BAD_LOG)]
    blocks = ["\n".join(lines[max(0, i - 3):i + after]) for i in marks[:3]]
    return f"{len(marks)} bad lines; the first {len(blocks)}:\n" + "\n----\n".join(blocks)


def test_wyoming_fuzz_few_hundred(make_daemon: Callable[..., DaemonProc],
                                  watcher: Watcher) -> None:
    fuzz(make_daemon, watcher, 300)


@pytest.mark.long
@pytest.mark.timeout(1800)
def test_wyoming_fuzz_ten_thousand(make_daemon: Callable[..., DaemonProc],
                                   watcher: Watcher) -> None:
    fuzz(make_daemon, watcher, 10_000)
