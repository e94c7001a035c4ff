"""Hostile HTTP inputs for the fuzz suite (tests/test_fuzz_http.py): raw bytes for a socket,
made from a seeded random.Random so a failing input can be made again from its seed and index.

Families: broken request lines, huge and many headers, bad encodings, bad and deep JSON, wrong
methods, every endpoint with good and bad fields, bodies cut off, broken chunked bodies,
pipelined requests, random bytes. Most inputs end with `Connection: close` so the server closes
after answering; the rest end by the server's (small, configured) timeouts.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Final

GETS: Final = ("/", "/app.js", "/style.css", "/healthz", "/readyz", "/metrics", "/api/voices",
               "/api/state", "/v1/models", "/api/tts")
POSTS: Final = ("/api/tts", "/api/tts-batch", "/v1/audio/speech", "/api/say", "/api/control")
OTHER_PATHS: Final = ("/nope", "/api", "/api/", "//api/tts", "/api/tts/", "/api/../etc/passwd",
                      "/%2e%2e/%2e%2e/etc/passwd", "/api/events/x", "*", "/index.html")
METHODS: Final = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE",
                  "CONNECT", "PROPFIND", "get", "G ET", "")
_WORDS: Final = ("Hello.", "Door open.", "a", "", " ", "Ünïcödé ✓", "\u202e\u0000x",
                 "\ud800", "x" * 700, "1 2 3.", "<script>", "%s%n", "\r\nInjected: 1")
_FIELDS: Final = ("text", "voice", "speaker", "speed", "volume", "language", "format", "texts",
                  "id", "priority", "action", "model", "input", "response_format", "key", "x")
_VALUES: Final = (None, True, 0, -1, 1.5, 1e308, float("nan"), "", "wav", "pcm", "mp3", "opus",
                  "aac", "ogg", "flac", "tiny", "critical", "stop", "skip", "pause", "resume",
                  "clear", [], {}, ["a"], [1, 2], {"a": 1}, "x" * 300, 2**70)


class Fuzz:
    def __init__(self, seed: int, port: int) -> None:
        self.rng = random.Random(seed)
        self.host = f"127.0.0.1:{port}"

    def inputs(self, count: int) -> list[bytes]:
        makers: list[Callable[[], bytes]] = [
            self.request_line, self.headers, self.encoding, self.bad_json, self.deep_json,
            self.wrong_method, self.endpoint, self.cut_off, self.chunked, self.pipelined,
            self.random_bytes, self.endpoint, self.bad_json]
        return [self.rng.choice(makers)() for _ in range(count)]

    # -- building blocks ------------------------------------------------------------------

    def _request(self, method: str, path: str, body: bytes | None = None,
                 extra: list[tuple[str, str]] | None = None, close: bool = True) -> bytes:
        head = [("Host", self.host)]
        if body is not None:
            head.append(("Content-Type", self.rng.choice(
                ["application/json", "text/plain", "application/x-www-form-urlencoded"])))
            head.append(("Content-Length", str(len(body))))
        if close:
            head.append(("Connection", "close"))
        head += extra or []
        lines = "".join(f"{k}: {v}\r\n" for k, v in head)
        return f"{method} {path} HTTP/1.1\r\n{lines}\r\n".encode("utf-8", "surrogatepass") + (
            body or b"")

    def _json_body(self) -> dict[str, object]:
        rng = self.rng
        body: dict[str, object] = {"text": rng.choice(_WORDS)} if rng.random() < 0.7 else {}
        for _ in range(rng.randrange(0, 4)):
            body[rng.choice(_FIELDS)] = rng.choice(_VALUES)
        return body

    def _dumps(self, data: object) -> bytes:
        return json.dumps(data, ensure_ascii=self.rng.random() < 0.5).encode(
            "utf-8", "surrogatepass")

    # -- the families ---------------------------------------------------------------------

    def request_line(self) -> bytes:
        rng = self.rng
        line = rng.choice([
            "GET", "GET /healthz", "GET /healthz HTTP/9.9", "GET /healthz HTTP/1.1 extra",
            "GET  /healthz  HTTP/1.1", "GET /" + "a" * rng.choice([100, 9000, 70000]) + " HTTP/1.1",
            "GET /healthz\x00 HTTP/1.1", "GET /h\x7fz HTTP/1.1", "GET http://evil/ HTTP/1.1",
            "\x16\x03\x01\x02\x00\x01\x00\x01", "GET /healthz HTTP/1.1\n", "GET /\u00e9 HTTP/1.1",
            "PRI * HTTP/2.0", "GET /healthz HTTP/0.9", "GET /api/tts?text=%ZZ HTTP/1.1",
            "GET /api/tts?text=%FF%FE HTTP/1.1", "GET /api/tts?" + "a=1&" * 3000 + " HTTP/1.1"])
        return f"{line}\r\nHost: {self.host}\r\nConnection: close\r\n\r\n".encode(
            "utf-8", "surrogatepass")

    def headers(self) -> bytes:
        rng = self.rng
        path = rng.choice(GETS[:-1])
        kind = rng.randrange(9)
        extra: list[tuple[str, str]] = []
        if kind == 0:
            extra = [("X-Big", "v" * rng.choice([8000, 9000, 100000]))]
        elif kind == 1:
            extra = [(f"X-{i}", "v") for i in range(rng.choice([100, 130, 1000]))]
        elif kind == 2:
            return self._request("GET", path, close=False)[:-2] + b"No colon here\r\n\r\n"
        elif kind == 3:
            extra = [("Content-Length", "-1")]
        elif kind == 4:
            extra = [("Content-Length", "5"), ("Content-Length", "6")]
        elif kind == 5:
            extra = [("Transfer-Encoding", rng.choice(["gzip", "chunked, gzip", "x"]))]
        elif kind == 6:
            extra = [("Host", rng.choice(["evil.example", "[::1", "[::1]", "a:b:c", ""]))]
        elif kind == 7:
            extra = [("Authorization", "Bearer \udcff\udcfe"), ("Origin", "http://evil")]
        else:
            return self._request("GET", path, close=False)[:-2] + b"X-Fold: a\r\n  b\r\n\r\n"
        return self._request("GET", path, extra=extra)

    def encoding(self) -> bytes:
        rng = self.rng
        body = rng.choice([b"\xff\xfe\xfd", b'{"text": "\xff\xfe"}', "Grüße".encode("latin-1"),
                           b'{"text": "\\ud800"}', b"\x00" * 64, b'\xef\xbb\xbf{"text": "Hi."}'])
        return self._request("POST", rng.choice(POSTS), body,
                             [("Content-Type", "application/json; charset=" + rng.choice(
                                 ["utf-8", "latin-1", "utf-16", "x-unknown"]))])

    def bad_json(self) -> bytes:
        rng = self.rng
        body = rng.choice([b"{", b'{"text": }', b"[]", b"null", b'"text"', b"1e400", b"NaN",
                           b'{"text": "a", "text": "b"}', b'{"texts": ' + b'["a",' * 50 + b"]",
                           self._dumps(self._json_body())[:-1], self._dumps(self._json_body()),
                           self._dumps({"texts": [self.rng.choice(_WORDS)] * 3}),
                           b'{"text": "a"' + b" " * 70000 + b"}"])
        return self._request("POST", rng.choice(POSTS), body)

    def deep_json(self) -> bytes:
        depth = self.rng.choice([100, 1000, 10000, 60000])
        opener, closer = self.rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
        return self._request("POST", self.rng.choice(POSTS), opener * depth + b"1" + closer * depth)

    def wrong_method(self) -> bytes:
        rng = self.rng
        path = rng.choice([*GETS, *POSTS, "/api/events", *OTHER_PATHS])
        method = rng.choice(METHODS)
        body = self._dumps(self._json_body()) if rng.random() < 0.5 else None
        if path == "/api/events" and method in ("GET", "HEAD"):
            method = "DELETE"  # a stream that never ends is not a fuzz answer
        return self._request(method, path, body)

    def endpoint(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.4:
            path = rng.choice(GETS)
            if path == "/api/tts" or rng.random() < 0.3:
                query = "&".join(f"{rng.choice(_FIELDS)}={rng.choice(['Hi.', '', '%FF', '1.5', 'x' * 50])}"
                                 for _ in range(rng.randrange(0, 4)))
                path += "?" + query
            return self._request("GET", path)
        path = rng.choice(POSTS)
        body = self._json_body()
        if path == "/api/tts-batch":
            body = {**body, "texts": rng.choice([[], ["Hi."], ["Hi.", 3], "x", ["a"] * 30])}
        elif path == "/api/control":
            body = {"action": rng.choice(["stop", "skip", "clear", "x", "", 5])}
        elif path == "/api/say" and rng.random() < 0.3:
            return self._request("POST", path, rng.choice(_WORDS).encode("utf-8", "surrogatepass"))
        return self._request("POST", path, self._dumps(body))

    def cut_off(self) -> bytes:
        full = self._request("POST", self.rng.choice(POSTS), self._dumps({"text": "Cut."}))
        return full[:self.rng.randrange(1, len(full) - 1)]

    def chunked(self) -> bytes:
        rng = self.rng
        body = rng.choice([b"5\r\nhello\r\n0\r\n\r\n", b"zz\r\nhello\r\n0\r\n\r\n",
                           b"5\r\nhel", b"ffffffffffffffff\r\nx\r\n", b"3;ext=1\r\n{}\r\n0\r\n\r\n",
                           b"1\r\n{\r\n"])
        head = self._request("POST", rng.choice(POSTS), None,
                             [("Transfer-Encoding", "chunked")])
        return head + body

    def pipelined(self) -> bytes:
        rng = self.rng
        n = rng.randrange(2, 6)
        parts = [self._request("GET", rng.choice(GETS[:-1]), close=False) for _ in range(n - 1)]
        return b"".join(parts) + self._request("GET", "/healthz")

    def random_bytes(self) -> bytes:
        rng = self.rng
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        return data if rng.random() < 0.5 else b"GET / HTTP/1.1\r\n" + data + b"\r\n\r\n"
