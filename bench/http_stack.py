"""Which HTTP stack for edged's server: each candidate in a fresh process, measured the same way.

    .venv/bin/pip install -e '.[bench]' && .venv/bin/python -m bench.http_stack
    # ~1 minute; writes bench/results/http_stack.json

Candidates (each serves GET /hello and a chunked GET /stream of three 20 ms-apart parts):
- aiohttp 3.x web server, on an asyncio loop (edged's net loop, shared with Wyoming);
- Starlette + uvicorn, uvicorn.Server.serve() on an asyncio loop;
- Flask on werkzeug's threaded WSGI server (a WSGI server on threads);
- baseline: the same Python with asyncio and a socket server that answers without parsing
  (not a candidate: the floor the others are measured against).

Per run: import seconds (measured in the child), spawn -> port accepting, RSS after start and
after 200 requests (VmRSS of the child), time to the first streamed part vs the whole stream
(does the stack stream?), and requests/s for /hello over one keep-alive connection.
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
from typing import Any

from tests.harness.ports import free_port

from .common import machine_info, proc_mb, summary, table, write_result

RUNS = 5
REQUESTS = 200
STACKS = ("baseline", "aiohttp", "starlette+uvicorn", "flask+werkzeug")

_WORKER = r'''
import sys, time
stack, port = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
if stack == "aiohttp":
    import asyncio
    from aiohttp import web
    async def hello(request): return web.Response(text="hello")
    async def stream(request):
        r = web.StreamResponse(); r.enable_chunked_encoding(); await r.prepare(request)
        for i in range(3):
            await r.write(b"part %d\n" % i); await asyncio.sleep(0.02)
        await r.write_eof(); return r
    async def main():
        app = web.Application(); app.router.add_get("/hello", hello); app.router.add_get("/stream", stream)
        runner = web.AppRunner(app, access_log=None); await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        print("import_s", t1 - t0, flush=True); await asyncio.Event().wait()
    t1 = time.monotonic(); asyncio.run(main())
elif stack == "starlette+uvicorn":
    import asyncio
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse, StreamingResponse
    from starlette.routing import Route
    async def parts():
        for i in range(3):
            yield b"part %d\n" % i; await asyncio.sleep(0.02)
    async def hello(request): return PlainTextResponse("hello")
    async def stream(request): return StreamingResponse(parts())
    app = Starlette(routes=[Route("/hello", hello), Route("/stream", stream)])
    t1 = time.monotonic(); print("import_s", t1 - t0, flush=True)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    asyncio.run(server.serve())
elif stack == "flask+werkzeug":
    import logging
    from flask import Flask, Response
    from werkzeug.serving import make_server
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = Flask("bench")
    @app.get("/hello")
    def hello(): return "hello"
    @app.get("/stream")
    def stream():
        def parts():
            for i in range(3):
                yield b"part %d\n" % i; time.sleep(0.02)
        return Response(parts())
    t1 = time.monotonic(); print("import_s", t1 - t0, flush=True)
    make_server("127.0.0.1", port, app, threaded=True).serve_forever()
else:
    import asyncio
    async def handle(reader, writer):
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"); await writer.drain()
    async def main():
        await asyncio.start_server(handle, "127.0.0.1", port)
        await asyncio.Event().wait()
    t1 = time.monotonic(); print("import_s", t1 - t0, flush=True); asyncio.run(main())
'''


def _wait_port(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.002)  # polling a port: no event to wait on
    raise TimeoutError(port)


def _one(stack: str) -> dict[str, Any]:
    port = free_port()
    spawn = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, stack, str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        import_s = float(proc.stdout.readline().split()[1])
        _wait_port(port, proc)
        ready_s = time.monotonic() - spawn
        rss_start = proc_mb(proc.pid)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        started = time.perf_counter()
        for _ in range(REQUESTS):
            conn.request("GET", "/hello")
            conn.getresponse().read()
        rps = REQUESTS / (time.perf_counter() - started)
        first = whole = None
        if stack != "baseline":
            begin = time.perf_counter()
            conn.request("GET", "/stream")
            response = conn.getresponse()
            response.readline()
            first = time.perf_counter() - begin
            response.read()
            whole = time.perf_counter() - begin
        conn.close()
        return {"import_s": import_s, "ready_s": ready_s, "rss_start_mb": rss_start,
                "rss_after_mb": proc_mb(proc.pid), "requests_per_s": rps,
                "first_part_s": first, "whole_stream_s": whole}
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in STACKS}
    for _ in range(RUNS):  # interleaved: drift on a shared machine hits every stack alike
        for stack in STACKS:
            runs[stack].append(_one(stack))
    results = {}
    for stack, rows in runs.items():
        results[stack] = {key: summary([r[key] for r in rows]) for key in rows[0]
                          if rows[0][key] is not None}
    base = results["baseline"]["rss_after_mb"]["median"]
    for stack in STACKS[1:]:
        results[stack]["rss_added_mb_median"] = round(
            results[stack]["rss_after_mb"]["median"] - base, 1)
    print(table([[s, results[s]["import_s"]["median"], results[s]["ready_s"]["median"],
                  results[s]["rss_after_mb"]["median"], results[s].get("rss_added_mb_median"),
                  results[s]["requests_per_s"]["median"],
                  results[s].get("first_part_s", {}).get("median"),
                  results[s].get("whole_stream_s", {}).get("median")] for s in STACKS],
                ["stack", "import s", "ready s", "RSS MB", "+RSS MB", "req/s", "1st part s",
                 "whole s"]))
    path = write_result("http_stack", {
        "machine": machine_info(("aiohttp", "starlette", "uvicorn", "flask", "werkzeug")),
        "runs": RUNS, "requests": REQUESTS, "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
