"""A seeded generator of hostile MQTT payloads for every topic the daemon takes (for
test_fuzz_payloads.py): `<p>/say` and `<p>/control` (issue 12), and the group and pool request
topics, the settings topics `<p>/set/volume` and `<p>/set/voice`, and Home Assistant's status
topic (issue 18). Not a test module.

Group and pool requests are `say` payloads with the house's fields (play_at, start_in_ms,
sent_at, reply_to) valid and wrong, and pool requests also MQTT 5 Response Topics and
Correlation Data of every kind. Settings payloads are built valid or invalid on purpose: a
valid one changes the state, an invalid one gets one `rejected`.

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


TOPICS = ("say", "control", "group", "pool", "volume", "voice", "ha_status")
Props = tuple[str | None, bytes | None]
"""An MQTT 5 (Response Topic, Correlation Data) to send with a pool request."""


class PayloadFuzzer:
    def __init__(self, seed: int, tag: str, max_bytes: int, reply_base: str = "fuzz/reply",
                 voices: tuple[str, ...] = ("tiny",)) -> None:
        self.rng = random.Random(seed)
        self.tag = tag
        self.max_bytes = max_bytes
        """The daemon's request limit; payloads go up to ~800 bytes above it (rejected by the
        daemon, still inside the packet size it announces)."""
        self.count = 0
        self.expect: Expect = None
        """What the payload last returned by `next` must get, when the generator knows."""
        self.reply_base = reply_base
        """Valid reply topics are made under it."""
        self.voices = voices
        self.props: Props = (None, None)
        """The MQTT 5 properties of the last pool payload."""
        self.valid_setting = False
        """Whether the last settings payload is valid (no event) or not (one `rejected`)."""

    def new_id(self) -> str:
        """Unique, and no damage to a few of its characters makes another id of this form
        (a reused id would be "already handled" and silently acknowledged)."""
        self.count += 1
        return f"{self.tag}{self.count:07d}x{self.count:07d}"

    def payload(self, topic: str) -> bytes:
        self.expect, self.props = None, (None, None)
        if topic == "say":
            return self.say()
        if topic == "control":
            return self.control()
        if topic in ("group", "pool"):
            return self.house_request(pool=topic == "pool")
        if topic == "volume":
            return self.volume()
        if topic == "voice":
            return self.voice()
        return self.ha_status()

    # -- the house's requests (issue 18) ----------------------------------------------------------

    def house_request(self, pool: bool) -> bytes:
        r = self.rng
        if r.random() < 0.3:  # issue 12's payloads, on this topic
            return self.say()
        data = self._request(valid=r.random() < 0.7)
        now_ms = 1.7e12 + r.randrange(10**9)
        timing = r.choice([{}, {}, {"start_in_ms": r.choice([0, 5, 1500])},
                           {"start_in_ms": r.choice([0, 10]), "sent_at": now_ms},
                           {"play_at": r.choice([now_ms, 5, -1, "now", 1e20, True])},
                           {"start_in_ms": r.choice([-1, 60_001, "soon"]), "sent_at": now_ms},
                           {"sent_at": r.choice(["x", now_ms])},
                           {"play_at": now_ms, "start_in_ms": 1, "sent_at": now_ms}])
        data.update(timing)
        reply_ok = f"{self.reply_base}/{self.count}"
        if r.random() < 0.6:
            data["reply_to"] = r.choice([reply_ok, reply_ok, "", "a/+", "#", "$SYS/x", "a//b",
                                         "x/say", "y/control", "\u0000", 7, ["t"], "t" * 300])
        if pool and r.random() < 0.4:
            self.props = (r.choice([reply_ok, "a/#", "$share/x", "", "b/say", "t" * 300]),
                          r.choice([None, b"", b"\x00\xff", b"c" * 64, b"z" * 300]))
        rid = data.get("id")
        if isinstance(rid, str) and rid.startswith(self.tag):
            text = data.get("text")
            bad = isinstance(text, str) and FORBIDDEN.search(text.strip())
            self.expect = (rid, "rejected" if bad else "answered")
        return self._json(data)

    # -- settings and Home Assistant's status ----------------------------------------------------

    def volume(self) -> bytes:
        r = self.rng
        self.valid_setting = r.random() < 0.5
        if self.valid_setting:
            value = r.choice([str(r.randrange(0, 101)), f"{r.uniform(0, 100):.3f}", "0", "100",
                              " 40 ", "40.0"])
            return value.encode()
        return r.choice([b"-1", b"101", b"1e9", b"nan", b"inf", b"-inf", b"loud", b"", b"  ",
                         b"\xff\xfe", b"4" * 300, b"[40]", b'{"volume": 40}', b"0x20",
                         bytes(r.randrange(256) for _ in range(r.randrange(1, 40)))
                         + b"\xff"])

    def voice(self) -> bytes:
        r = self.rng
        self.valid_setting = r.random() < 0.4
        if self.valid_setting:
            return r.choice([*self.voices, "", " "]).encode()
        return r.choice([b"nobody", b"../../etc/passwd", b"\xff", b"v" * 300,
                         self._text().encode("utf-8", "surrogatepass") + b"!",
                         bytes(r.randrange(256) for _ in range(r.randrange(1, 60))) + b"\xfe"])

    def ha_status(self) -> bytes:
        r = self.rng
        return r.choice([b"online", b"offline", b"", b"  online  ", b"ONLINE", b"\xff",
                         bytes(r.randrange(256) for _ in range(r.randrange(0, 64)))])

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
