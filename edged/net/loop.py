"""The one asyncio event loop of the network servers (Wyoming, HTTP), in its own thread.

    main thread: NetLoop.start() ─► thread "edged-net": loop.run_forever()
                                      servers accept, parse, answer; anything that blocks
                                      (a cache read from disk, waiting for the next chunk
                                      from the synthesis scheduler) goes to the loop's
                                      executor with `run_blocking`, opening speech that
                                      waits for a voice's load to threads of its own with
                                      `run_planning`: never inference on the loop, never a
                                      blocking call in a coroutine.
    main thread: NetLoop.stop()  ─► each server's stop(), pending tasks cancelled, loop closed

The core (paho, the announcer, the scheduler's workers) stays on threads; the servers hand work
to the same request policy, scheduler and loaded voices as MQTT does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, Protocol, TypeVar

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")
_EXECUTOR_THREADS: Final = 8
"""Threads for blocking calls made on behalf of the servers: each waits (for a chunk, a file),
none computes; more connections than this queue up for a thread instead of adding threads."""
_PLAN_THREADS: Final = 4
"""Threads for opening speech that needs a voice loaded (`run_planning`: the policy, the plan,
the cache or a stream; net/speech.py tries the executor first, without loads). Apart from the
others: such a plan waits for the load (seconds; minutes to prepare a model on a Pi), and nine
requests for a voice being loaded had taken all eight threads above, so that a critical
/api/say, /api/state and every stream's next chunk waited for that load."""
_PLANS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, concurrent.futures.Executor] = \
    weakref.WeakKeyDictionary()


class Server(Protocol):
    """A network server on the loop: started and stopped there."""

    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class NetLoop:
    """Owns the loop thread; `start` and `stop` from the main thread."""

    def __init__(self, servers: list[Server]) -> None:
        self._servers = servers
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(_log_briefly)
        self._executor = concurrent.futures.ThreadPoolExecutor(_EXECUTOR_THREADS,
                                                               thread_name_prefix="edged-net-io")
        self.loop.set_default_executor(self._executor)
        self._plans = concurrent.futures.ThreadPoolExecutor(_PLAN_THREADS,
                                                            thread_name_prefix="edged-net-plan")
        _PLANS[self.loop] = self._plans
        self._thread = threading.Thread(target=self._run, name="edged-net", daemon=True)
        self._started: list[str] = []

    def start(self, timeout_s: float = 30.0) -> list[str]:
        """Run the loop and start every server; the names of those that started. A server that
        fails to start raises here (the caller decides whether that is fatal)."""
        self._start_executor_threads(timeout_s)
        self._thread.start()
        for server in self._servers:
            self.call(server.start(), timeout_s)
            self._started.append(server.name)
        return list(self._started)

    def _start_executor_threads(self, timeout_s: float) -> None:
        """All of the executor's threads now, not one by one under the first load: the daemon's
        thread count is then fixed from the start (what a long run or `top -H` expects)."""
        for executor, count in ((self._executor, _EXECUTOR_THREADS), (self._plans, _PLAN_THREADS)):
            gate = threading.Barrier(count)
            started = [executor.submit(gate.wait, timeout_s) for _ in range(count)]
            concurrent.futures.wait(started, timeout_s)

    def start_server(self, server: Server, timeout_s: float = 30.0) -> None:
        """Start one more server on the running loop (the HTTP server, right after READY); it
        raises here when it cannot start, and is stopped with the others."""
        self._servers.append(server)
        self.call(server.start(), timeout_s)
        self._started.append(server.name)

    def stop(self, timeout_s: float = 10.0) -> None:
        if not self._thread.is_alive():
            return
        try:
            self.call(self._shutdown(), timeout_s)
        except Exception:  # stopping must go on: the daemon is exiting
            _LOGGER.exception("Stopping the network servers failed")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout_s)
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._plans.shutdown(wait=False, cancel_futures=True)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run a coroutine on the loop from another thread and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    async def _shutdown(self) -> None:
        for server in reversed(self._servers):
            if server.name in self._started:
                try:
                    await server.stop()
                except Exception:
                    _LOGGER.exception("Stopping %s failed", server.name)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


_BRIEF_EVERY_S: Final = 10.0
_last_brief = [0.0, 0]  # when the last line was logged, how many were held back since


def _log_briefly(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """An OS error the loop met outside any task (a failed accept: too many open files) is one
    line at most every _BRIEF_EVERY_S, counting those held back; not a traceback each time
    (855,000 of them filled 365 MB of log in 8 minutes). Anything else: asyncio's own log."""
    exc = context.get("exception")
    if not isinstance(exc, OSError):
        loop.default_exception_handler(context)
        return
    now = time.monotonic()
    if now - _last_brief[0] < _BRIEF_EVERY_S:
        _last_brief[1] += 1
        return
    held, _last_brief[:] = _last_brief[1], [now, 0]
    _LOGGER.warning("Network servers: %s: %s%s", context.get("message", "error"), exc,
                    f" ({held} more like it not logged)" if held else "")


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on the loop's executor: for anything that may block (see the docstring)."""
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def run_planning(fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """`fn(*args)` on the loop's planning threads (`_PLAN_THREADS`; on a loop that has none, its
    executor): for what may wait for a voice's load."""
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(_PLANS.get(loop), fn, *args)


def spawn(awaitable: Awaitable[Any]) -> None:
    """Keep a reference to a fire-and-forget task until it is done (asyncio keeps only weak ones)."""
    task = asyncio.ensure_future(awaitable)
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


_TASKS: Final[set[asyncio.Future[Any]]] = set()
