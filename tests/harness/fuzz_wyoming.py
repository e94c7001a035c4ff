"""A seeded generator of hostile Wyoming connections (for test_fuzz_wyoming.py). Not a test module.

Each case is what one client sends over one connection, in pieces, and how it leaves:

    half-close   shut its side after the last byte, read everything until the daemon ends
    close        hang up at once, reading nothing (unread audio: a reset)
    silent       send, then nothing, read until the daemon ends it (its idle timeout)

Kinds: valid requests (plain, streamed, by voice and language, describe, ping), bad JSON
headers, lying and huge data_length / payload_length, wrong types in every field, unknown
events, frames cut off, header lines past the bound, pipelined floods of requests and streams,
random bytes, streams opened and abandoned, forbidden characters as JSON escapes (CR, C1 controls,
lone surrogates). The same seed gives the same cases.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .fuzz_payloads import WORDS

ENDINGS = ("half-close", "close", "silent")


@dataclass
class Case:
    kind: str
    pieces: list[bytes]
    ending: str

    def __str__(self) -> str:
        size = sum(len(p) for p in self.pieces)
        return f"{self.kind} ({size} bytes in {len(self.pieces)} pieces, {self.ending})"


def frame(kind: Any, data: Any = None, *, data_bytes: bytes | None = None,
          payload: bytes | None = None, **header: Any) -> bytes:
    """An event as raw bytes; `header` overrides (lying lengths, wrong types)."""
    head: dict[str, Any] = {"type": kind}
    if data is not None:
        head["data"] = data
    if data_bytes is not None:
        head["data_length"] = len(data_bytes)
    if payload is not None:
        head["payload_length"] = len(payload)
    head.update(header)
    return json.dumps(head).encode() + b"\n" + (data_bytes or b"") + (payload or b"")


class WyomingFuzzer:
    def __init__(self, seed: int, max_chars: int) -> None:
        self.rng = random.Random(seed)
        self.max_chars = max_chars
        self._kinds: list[tuple[str, Callable[[], list[bytes]], int]] = [
            ("valid", self._valid, 6), ("bad header", self._bad_header, 4),
            ("lying length", self._lying_length, 4), ("huge length", self._huge_length, 3),
            ("wrong type", self._wrong_type, 5), ("unknown event", self._unknown, 2),
            ("cut off", self._cut_off, 3), ("long header", self._long_header, 1),
            ("pipelined", self._pipelined, 2), ("random bytes", self._random_bytes, 3),
            ("abandoned stream", self._abandoned_stream, 3), ("forbidden", self._forbidden, 3),
        ]

    def cases(self, count: int) -> list[Case]:
        names, makers, weights = zip(*self._kinds, strict=True)
        out = []
        for _ in range(count):
            i = self.rng.choices(range(len(names)), weights)[0]
            pieces = self._split(b"".join(makers[i]()))
            ending = self.rng.choices(ENDINGS, (14, 5, 1))[0]
            if names[i] == "abandoned stream" and ending == "half-close":
                ending = self.rng.choice(("close", "silent"))
            out.append(Case(names[i], pieces, ending))
        return out

    # -- pieces ---------------------------------------------------------------------------------

    def _split(self, raw: bytes) -> list[bytes]:
        """Sent whole, or cut at random places (a frame split across TCP segments)."""
        if len(raw) < 2 or self.rng.random() < 0.6:
            return [raw]
        cuts = sorted(self.rng.sample(range(1, len(raw)), min(len(raw) - 1,
                                                              self.rng.randint(1, 4))))
        return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]

    def text(self, words: int | None = None) -> str:
        n = words if words is not None else self.rng.randint(1, 12)
        return " ".join(self.rng.choice(WORDS) for _ in range(n)) + self.rng.choice(
            [".", "!", "?", "", ","])

    def _voice(self) -> Any:
        return self.rng.choice([None, {"name": "tiny"}, {"language": "en_US"}, {"language": "de"},
                                {"name": "tiny", "speaker": "x"}, {}, {"language": "zh-CN"}])

    # -- kinds ----------------------------------------------------------------------------------

    def _valid(self) -> list[bytes]:
        r = self.rng.random()
        if r < 0.15:
            return [frame("describe")]
        if r < 0.25:
            return [frame("ping", {"text": self.rng.choice(["", "hi", None])})]
        if r < 0.6:
            data: dict[str, Any] = {"text": self.text()}
            if (voice := self._voice()) is not None:
                data["voice"] = voice
            return [frame("synthesize", data)]
        chunks = [frame("synthesize-chunk", {"text": self.text(self.rng.randint(1, 4)) + " "})
                  for _ in range(self.rng.randint(1, 6))]
        copy = [frame("synthesize", {"text": "the copy"})] if self.rng.random() < 0.5 else []
        return [frame("synthesize-start", {"voice": self._voice()}), *chunks, *copy,
                frame("synthesize-stop")]

    def _bad_header(self) -> list[bytes]:
        return [self.rng.choice([
            b"not json at all\n", b"{\n", b'{"type": "synthesize"\n', b"null\n", b"42\n",
            b'"synthesize"\n', b"[]\n", b'{"type": ""}\n', b'{"type": null}\n',
            b'{"type": "' + b"x" * 100 + b'"}\n', b"[" * 3000 + b"\n", b'{"type": NaN}\n',
            b'{"type": "synthesize", "data": {"text": "hi"}, "data": 5}\n', b"\xff\xfe\n",
            b'{"type": "synthesize", "data": {"text": "\\ud800\\udc00 ok"}}\n', b"\n", b"\r\n",
        ])]

    def _lying_length(self) -> list[bytes]:
        body = json.dumps({"text": self.text()}).encode()
        told = max(0, len(body) + self.rng.choice([-5, -1, 1, 7, 100]))
        head = json.dumps({"type": "synthesize", "data_length": told}).encode() + b"\n"
        more = frame("describe") if self.rng.random() < 0.5 else b""
        payload_lie = json.dumps({"type": "audio-chunk", "payload_length": 50}).encode() + b"\n"
        return [self.rng.choice([head + body + more, payload_lie + b"abc" + more])]

    def _huge_length(self) -> list[bytes]:
        key = self.rng.choice(["data_length", "payload_length"])
        value: Any = self.rng.choice([2**63, 10**12, 2**31, 65537, 10**6, -1, -(2**63), 1.5, "10",
                                 True, None, [], {}, 1e308])
        return [json.dumps({"type": "synthesize", key: value}).encode() + b"\n" + b"x" * 64]

    def _wrong_type(self) -> list[bytes]:
        junk = self.rng.choice([None, 5, -1, 1.5, True, [], ["hi"], {}, {"a": 1}, "", "x" * 70,
                                1e308])
        kind = self.rng.choice(["synthesize", "synthesize-start", "synthesize-chunk", "ping",
                                "describe", "synthesize-stop"])
        where = self.rng.choice(["text", "voice", "voice.name", "voice.speaker",
                                 "voice.language", "data", "type"])
        data: Any = {"text": self.text()}
        if where == "text":
            data["text"] = junk
        elif where == "voice":
            data["voice"] = junk
        elif where.startswith("voice."):
            data["voice"] = {where.split(".")[1]: junk}
        elif where == "data":
            data = junk
        if where == "type":
            return [json.dumps({"type": junk, "data": data}).encode() + b"\n"]
        prefix = [frame("synthesize-start")] if kind == "synthesize-chunk" else []
        return [*prefix, json.dumps({"type": kind, "data": data}).encode() + b"\n"]

    def _unknown(self) -> list[bytes]:
        name = self.rng.choice(["transcribe", "audio-chunk", "run-pipeline", "info", "error",
                                "x" * 64, "détecter", "synthesize ", "SYNTHESIZE"])
        payload = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(0, 200)))
        return [frame(name, {"rate": 16000}, payload=payload or None), frame("describe")]

    def _cut_off(self) -> list[bytes]:
        whole = frame("synthesize", {"text": self.text()}, data_bytes=json.dumps(
            {"text": self.text()}).encode())
        return [whole[:self.rng.randint(1, len(whole) - 1)]]

    def _long_header(self) -> list[bytes]:
        size = self.rng.choice([16383, 16384, 16385, 40000, 200000])
        return [b'{"type": "describe", "x": "' + b"y" * size + b'"}' +
                self.rng.choice([b"\n", b""])]

    def _pipelined(self) -> list[bytes]:
        n = self.rng.randint(5, 60)
        if self.rng.random() < 0.5:
            return [frame("synthesize", {"text": self.text(3)}) for _ in range(n)]
        out = []
        for _ in range(max(1, n // 5)):
            out += [frame("synthesize-start"), frame("synthesize-chunk", {"text": self.text()}),
                    frame("synthesize-stop")]
        return out + [frame("describe"), frame("ping")] * self.rng.randint(0, 20)

    def _random_bytes(self) -> list[bytes]:
        size = self.rng.choice([1, 7, 100, 1000, 5000])
        raw = bytes(self.rng.randrange(256) for _ in range(size))
        return [raw + self.rng.choice([b"", b"\n"])]

    def _abandoned_stream(self) -> list[bytes]:
        chunks = [frame("synthesize-chunk", {"text": self.text()}) for _ in
                  range(self.rng.randint(0, 5))]
        return [frame("synthesize-start"), *chunks]

    def _forbidden(self) -> list[bytes]:
        bad = self.rng.choice(["\r", "\u0085", "\u009b", "\x00", "\x1b", "\x7f", "\ud800",
                               "\udfff", "\u2028", "\ufeff"])
        text = self.text(3) + bad + self.text(2)
        where = self.rng.choice(["synthesize", "chunk", "name", "language", "speaker", "ping"])
        if where == "synthesize":
            return [frame("synthesize", {"text": text})]
        if where == "chunk":
            return [frame("synthesize-start"), frame("synthesize-chunk", {"text": text}),
                    frame("synthesize-stop")]
        if where == "ping":
            return [frame("ping", {"text": bad})]
        return [frame("synthesize", {"text": "Hi.", "voice": {where: bad}})]
