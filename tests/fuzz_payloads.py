"""A seeded generator of hostile MQTT payloads for `<p>/say` and `<p>/control` (for
test_fuzz_payloads.py). Not a test module.

Valid requests with every field, every field wrong in every way, plain text with control
characters and odd scripts, invalid UTF-8, damaged and deeply nested JSON, NaN tokens,
duplicate fields, sizes around the request limit, valid and invalid controls (pause, clear,
stop and skip included). Every valid id is unique (a repeated id is silently "already done"),
and no payload is larger than the daemon's MQTT Maximum Packet Size (the broker would drop it
without an event, by design).
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

WORDS = ["the", "kitchen", "window", "is", "open", "door", "alarm", "3", "12/03", "$5.20",
         "Dr.", "e.g.", "2024-01-01", "10:30", "50%", "&", "ñandú", "日本語", "😀", "Ωmega",
         "\u202eevil", "don't", "ALL-CAPS", "x" * 30, "1,000,000", "#7", "-", "..."]
ACTIONS = ("skip", "clear", "stop", "resume", "pause")
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""Characters the docs forbid in a text (tab and newline are fine)."""
Expect = tuple[str, str] | None
"""(id, "answered" | "rejected"): the answer must carry this id, and be a rejection."""


class PayloadFuzzer:
    def __init__(self, seed: int, tag: str, max_bytes: int) -> None:
        self.rng = random.Random(seed)
        self.tag = tag
        self.max_bytes = max_bytes
        """The daemon's request limit; payloads go up to ~800 bytes above it (rejected by the
        daemon, still inside the packet size it announces)."""
        self.count = 0
        self.expect: Expect = None
        """What the payload last returned by `next` must get, when the generator knows."""

    def new_id(self) -> str:
        """Unique, and no damage to a few of its characters makes another id of this form
        (a reused id would be "already handled" and silently acknowledged)."""
        self.count += 1
        return f"{self.tag}{self.count:07d}x{self.count:07d}"

    def next(self) -> tuple[str, bytes, Expect]:
        """(topic suffix, payload, what its answer must be when known)."""
        self.expect = None
        if self.rng.random() < 0.15:
            return "control", self.control(), self.expect
        return "say", self.say(), self.expect

    # -- say ----------------------------------------------------------------------------------

    def say(self) -> bytes:
        r = self.rng
        k = r.random()
        if k < 0.35:
            data = self._request(valid=r.random() < 0.6)
            if isinstance(data.get("id"), str) and data["id"].startswith(self.tag):
                bad = isinstance(data["text"], str) and FORBIDDEN.search(data["text"].strip())
                self.expect = (data["id"], "rejected" if bad else "answered")
            return self._json(data)
        if k < 0.4:  # unparsable, but its id is valid: the rejection must carry it
            rid = self.new_id()
            self.expect = (rid, "rejected")
            return r.choice([f'{{"id": "{rid}", "text": "a", "text": "b"}}',
                             f'{{"text": [[[[["deep"]]]]], "id": "{rid}"}}',
                             f'{{"id": "{rid}", "text": "cut'])[:10_000].encode()
        if k < 0.5:
            return self._text().encode("utf-8", "surrogatepass")
        if k < 0.6:
            return bytes(r.randrange(256) for _ in range(r.randrange(0, 300)))
        if k < 0.75:
            return self._damage(self._json(self._request(valid=True)))
        if k < 0.82:
            pad = "y" * r.randrange(self.max_bytes - 100, self.max_bytes + 700)
            return self._json({"id": self.new_id(), "text": "Padded.", "pad": pad})
        return r.choice([b"", b"   ", b"\xef\xbb\xbfHello.", b"[]", b"{}", b"null", b"42",
                         b'"just a string"', b"{" * 10 + b"}" * 10, b"[" * 3000,
                         b'{"text": "a", "text": "b"}', b'{"text": NaN}', b"\x00"])

    def _request(self, valid: bool) -> dict[str, Any]:
        r = self.rng
        data: dict[str, Any] = {"text": self._text() if not valid or r.random() < 0.3 else
                                " ".join(r.choice(WORDS[:20]) for _ in range(r.randrange(1, 9)))}
        if r.random() < 0.85:
            data["id"] = self.new_id() if valid or r.random() < 0.5 else r.choice(
                ["a/b", "", "x" * 65, 7, None, "has space", "a+#", ["id"]])
        fields = {"speed": [0.5, 1.0, 1.7, 2.0], "volume": [0.0, 0.5, 1.0],
                  "priority": ["low", "normal", "high", "critical"], "output": ["publish"],
                  "ttl_s": [0.001, 5, 60], "speaker": [0]}
        wrong = {"speed": [0, 3, "fast", True, None, 1e308, -1], "volume": [2, -0.1, "loud"],
                 "priority": ["urgent", 1, None], "output": ["play", "both", "speaker"],
                 "ttl_s": [0, -5, "soon", 1e9], "speaker": [True, 1.5, -1, "nobody", "x" * 70],
                 "voice": ["other", "../../etc/passwd", 3], "colour": ["red"]}
        for name in r.sample(sorted(wrong), r.randrange(0, 4)):
            pool = fields.get(name, []) if valid else wrong[name]
            if pool:
                data[name] = r.choice(pool)
        return data

    def _text(self) -> str:
        r = self.rng
        k = r.random()
        if k < 0.4:
            return " ".join(r.choice(WORDS) for _ in range(r.randrange(1, 12)))
        if k < 0.6:
            return "".join(chr(r.randrange(1, 0x2FFF)) for _ in range(r.randrange(0, 30)))
        if k < 0.75:
            return "Open" + r.choice(["\r", "\x00", "\x1b[2J", "\u0085", "\u009b", "\x7f",
                                      "\ud800", "\t", "\n"]) + "the door."
        if k < 0.9:
            return "word " * r.randrange(95, 105)  # around limits.max_chars (500)
        return r.choice(["", "   ", "\n\n", "{not json", "[1]"])

    # -- control ------------------------------------------------------------------------------

    def control(self) -> bytes:
        r = self.rng
        k = r.random()
        if k < 0.55:
            return self._json({"action": r.choice(ACTIONS), "id": self.new_id()})
        if k < 0.7:
            return r.choice(ACTIONS).encode()
        if k < 0.85:
            return self._json(r.choice([{"action": "explode", "id": self.new_id()},
                                        {"action": ["stop"]}, {"id": self.new_id()},
                                        {"action": "stop", "extra": 1, "id": self.new_id()}]))
        return self._damage(self._json({"action": r.choice(ACTIONS), "id": self.new_id()}))

    # -- helpers ------------------------------------------------------------------------------

    def _json(self, data: dict[str, Any]) -> bytes:
        return json.dumps(data, ensure_ascii=self.rng.random() < 0.5).encode(
            "utf-8", "surrogatepass")

    def _damage(self, raw: bytes) -> bytes:
        r = self.rng
        buf = bytearray(raw)
        for _ in range(r.randrange(1, 5)):
            if not buf:
                break
            at = r.randrange(len(buf))
            op = r.randrange(5)
            if op == 0:
                buf[at] = r.randrange(256)
            elif op == 1:
                del buf[at:]
            elif op == 2:
                buf[at:at] = r.choice([b"[[[[[[", b'"text": "x", ', b"NaN", b"Infinity", b"\\u",
                                       b"\\ud800", b"\xff", b",", b"}",
                                       f'"id": "{self.new_id()}", '.encode()])
            elif op == 3 and buf[:1] == b"{":
                buf[1:1] = b'"text": "twice", '
            else:
                del buf[at]
        return bytes(buf)
