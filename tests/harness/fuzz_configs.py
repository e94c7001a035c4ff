"""A seeded generator of hostile YAML config documents (for test_fuzz_config.py).

Not a test module. Each document starts from a valid config and is mutated: values of every
type in every place, unknown and missing keys, deep nesting, aliases (bombs, recursion,
merges), huge integers, NaN and infinities, NUL and control characters, wildcards in topics,
duplicate keys, tags, byte-level damage, truncation, plain garbage. Paths only ever point into
the test's own folder or at a few special files, so the checks never touch the host.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml


class ConfigFuzzer:
    def __init__(self, seed: int, folder: Path, voice: Path) -> None:
        self.rng = random.Random(seed)
        self.folder = folder
        self.voice = voice
        fifo, garbage = folder / "a-fifo", folder / "garbage.bin"
        if not fifo.exists():
            import os

            os.mkfifo(fifo)
        garbage.write_bytes(bytes(range(256)) * 8)
        (folder / "a-dir").mkdir(exist_ok=True)
        self.paths = [str(folder / n) for n in ("cache", "state", "missing/deeper", "a-dir",
                                                "garbage.bin", "a-fifo")]
        self.paths += ["/dev/zero", "/dev/null", "/proc/self/status", str(voice), "rel/ative"]

    def base(self) -> dict[str, Any]:
        return {"device_id": "fuzz", "output": "publish", "log_level": "info",
                "voice": {"name": str(self.voice), "speed": 1.0},
                "cache": {"dir": str(self.folder / "cache"), "phrases": ["Hello."]},
                "mqtt": {"state_dir": str(self.folder / "state"), "port": 1883,
                         "reconnect_min_s": 1.0},
                "limits": {"queue": 10, "max_chars": 500}}

    # -- values -------------------------------------------------------------------------------

    def value(self, depth: int = 0) -> Any:
        r = self.rng
        kind = r.randrange(14 if depth < 3 else 10)
        if kind == 0:
            return r.choice([0, -1, 1, 65535, 65536, 2**31, -(2**63), 10**r.randrange(1, 40)])
        if kind == 1:
            return r.choice([float("nan"), float("inf"), -float("inf"), 1e308, -0.0, 0.5, 1e-9])
        if kind == 2:
            return r.choice([True, False, None])
        if kind == 3:
            return r.choice(self.paths)
        if kind == 4:
            return r.choice(["", " ", "edged/#", "a+b", "x\0y", "\x1b[31m", "\u202e", "\ud83d\ude00",
                             "line\nbreak", "play", "publish", "both", "debug", "mdy", "int8"])
        if kind == 5:
            return "".join(chr(r.randrange(1, 0x3000)) for _ in range(r.randrange(0, 40)))
        if kind == 6:
            return "a" * r.choice([100, 5000, 70000])
        if kind == 7:
            return r.choice(["2024-02-30", "12:30:15", "0x1F", "0o777", "1_000", "1e3", "~"])
        if kind == 8:
            return {"text": "The {room} is {state}",
                    "slots": {"room": ["a", "b"] * r.randrange(0, 60),
                              "state": [str(i) for i in range(r.randrange(0, 300))]}}
        if kind == 9:
            return r.choice(["Hello.", "{bad", "{x}", {"text": ""}, {"text": 5}, [1, 2]])
        if kind == 10:
            return [self.value(depth + 1) for _ in range(r.randrange(0, 5))]
        if kind == 11:
            return {str(self.value(depth + 1))[:20]: self.value(depth + 1)
                    for _ in range(r.randrange(0, 4))}
        nested: Any = self.value(depth + 1)
        for _ in range(r.randrange(1, 50)):
            nested = [nested] if r.random() < 0.5 else {"k": nested}
        return nested

    # -- documents ----------------------------------------------------------------------------

    def document(self) -> bytes:
        r = self.rng
        data = self.base()
        for _ in range(r.randrange(1, 4)):
            self._mutate(data)
        try:
            text = yaml.safe_dump(data, allow_unicode=r.random() < 0.5)
        except (yaml.YAMLError, ValueError):
            text = "x: 1\n"
        raw = text.encode("utf-8", "surrogatepass")
        choice = r.randrange(10)
        if choice == 0:
            return self._damage(raw)
        if choice == 1:
            return raw + r.choice(self._hostile()).encode()
        if choice == 2:
            return bytes(r.randrange(256) for _ in range(r.randrange(0, 400)))
        if choice == 3:
            lines = raw.splitlines(keepends=True)
            line = r.choice(lines) if lines else b"x: 1\n"
            return raw + line  # a duplicate key (or a harmless repeat)
        return raw

    def _mutate(self, data: dict[str, Any]) -> None:
        r = self.rng
        section = r.choice(list(data))
        target = data if not isinstance(data[section], dict) or r.random() < 0.2 else data[section]
        keys = list(target)
        op = r.randrange(4)
        if op == 0 and keys:
            target[r.choice(keys)] = self.value()
        elif op == 1 and keys:
            del target[r.choice(keys)]
        elif op == 2:
            names = ["audio", "chimes", "high", "tls", "ca_file", "password_file", "username",
                     "topic_prefix", "dirs", "voices", "max_expansions", "stop_timeout_s",
                     "max_request_bytes", "memory_mb", "unknown_key", "rate_hz", "precision"]
            target[r.choice(names)] = self.value()
        else:
            target[section if target is data else r.choice(keys or ["x"])] = self.value()

    def _damage(self, raw: bytes) -> bytes:
        r = self.rng
        buf = bytearray(raw)
        for _ in range(r.randrange(1, 8)):
            if not buf:
                break
            at = r.randrange(len(buf))
            op = r.randrange(4)
            if op == 0:
                buf[at] = r.randrange(256)
            elif op == 1:
                del buf[at]
            elif op == 2:
                buf[at:at] = r.choice([b"&a ", b"*a", b"!!python/object:os.system ", b"<<: *a\n",
                                       b"\t", b"\0", b"{", b"[", b"---\n", b"%YAML 1.1\n", b"? "])
            else:
                del buf[at:]
        return bytes(buf)

    def _hostile(self) -> list[str]:
        bomb = "x: [" + ", ".join(
            f"&{c} [{', '.join([f'*{p}'] * 9 if p != ' ' else ['lol'] * 9)}]"
            for p, c in zip(" abcdefgh", "abcdefghi", strict=True)) + "]\n"
        return [bomb, "y: &r [*r]\n", "z: " + "[" * 3000 + "]" * 3000 + "\n",
                "w: " + "9" * 5000 + "\n", "v: {" * 40 + "}" * 40 + "\n",
                "m: &m {a: 1}\nn: {<<: *m, a: 2}\n", "u: !!binary aGVsbG8=\n",
                "t: !!set {a, b}\n", "s: 2024-13-45\n", "limits: {queue: 1, queue: 2}\n"]
