"""Inputs that more than one test module checks (a test module never imports another)."""

from __future__ import annotations

import json

BAD_PAYLOADS = [
    # (payload, a piece of the error sentence)
    (b"", "text is empty"),
    (b"   \n\t ", "text is empty"),
    (b"\xff\xfehello", "not valid UTF-8"),
    (b"caf\xc3", "not valid UTF-8"),
    (b"x" * 2400, "text is 2400 characters; the limit is 500"),
    (b"a" * 9000, "payload is 9000 bytes; the limit is 7024"),
    (b"hello\x00world", "control character U+0000"),
    (b'{"text": "hi"', "not valid"),
    (b"{text: 'hi'}", "not valid"),
    (b"[1, 2]", "must be an object, got a list"),
    (b"[" * 50 + b"]" * 50, "nested deeper than 4"),
    (b'{"text": [[[[["x"]]]]]}', "nested deeper than 4"),
    (b"{}", "'text' is missing"),
    (b'{"id": "a"}', "'text' is missing"),
    (b'{"text": null}', "text must be a string, got null"),
    (b'{"text": 5}', "text must be a string, got an integer"),
    (b'{"text": ["a"]}', "text must be a string, got a list"),
    (b'{"text": "   "}', "text is empty"),
    (json.dumps({"text": "y" * 501}).encode(), "text is 501 characters; the limit is 500"),
    (b'{"text": "hi", "colour": "red"}', "unknown field 'colour'"),
    (b'{"text": "hi", "a": 1, "b": 2}', "unknown fields 'a', 'b'"),
    (b'{"text": "hi", "text": "ho"}', "field 'text' appears twice"),
    (b'{"text": "hi", "id": 7}', "id must be a string"),
    (json.dumps({"text": "hi", "id": "i" * 65}).encode(), "id is 65 characters; the limit is 64"),
    (b'{"text": "hi", "id": "a/b"}', "id may only contain"),
    (b'{"text": "hi", "id": "a+#"}', "id may only contain"),
    (b'{"text": "hi", "id": ""}', "id may only contain"),
    (b'{"text": "hi", "voice": "../../etc/passwd"}', "unknown voice '../../etc/passwd'"),
    (b'{"text": "hi", "voice": "other"}', "configured voices: /voices/tiny.onnx, joe"),
    (b'{"text": "hi", "voice": 3}', "voice must be a string"),
    (b'{"text": "hi", "speaker": true}', "speaker must be a name or a number"),
    (b'{"text": "hi", "speaker": 1.5}', "speaker must be a name or a number"),
    (b'{"text": "hi", "speaker": -1}', "speaker -1 is out of range"),
    (b'{"text": "hi", "speed": 3}', "speed is 3; it must be between 0.5 and 2"),
    (b'{"text": "hi", "speed": 0.1}', "speed is 0.1; it must be between 0.5 and 2"),
    (b'{"text": "hi", "speed": "fast"}', "speed must be a number, got a string"),
    (b'{"text": "hi", "speed": NaN}', "NaN is not a valid JSON number"),
    (b'{"text": "hi", "speed": Infinity}', "Infinity is not a valid JSON number"),
    (b'{"text": "hi", "speed": 1e400}', "speed is inf"),
    (b'{"text": "hi", "volume": 1.5}', "volume is 1.5; it must be between 0 and 1"),
    (b'{"text": "hi", "volume": false}', "volume must be a number, got true/false"),
    (b'{"text": "hi", "priority": "urgent"}', "priority is 'urgent'; expected one of critical"),
    (b'{"text": "hi", "priority": 1}', "priority is an integer; expected one of"),
    (b'{"text": "hi", "output": "speaker"}', "output is 'speaker'; expected one of play"),
    (b'{"text": "hi", "output": "play"}', "output 'play' is not available here"),
    (b'{"text": "hi", "output": "both"}', "this daemon cannot play"),
    (b'{"text": "hi", "ttl_s": 0}', "ttl_s must be greater than 0"),
    (b'{"text": "hi", "ttl_s": -5}', "ttl_s is -5; it must be between 0 and 86400"),
    (b'{"text": "hi", "ttl_s": "soon"}', "ttl_s must be a number"),
    (b'{"text": "hi", "speed": ' + b"9" * 5000 + b"}", "not valid"),
]
"""Request payloads the parser refuses, each with a piece of its error sentence, under
test_mqtt's rules (max_chars 500; voices "joe" and "/voices/tiny.onnx"; output "publish"):
test_mqtt checks the parser, test_daemon the daemon's `rejected` events on the wire."""

LONG = "A. " * 1500
"""1500 sentences: with LONG_SETTINGS' pauses, audio that takes long to stream."""
LONG_SETTINGS = {"voice": {"sentence_pause_ms": 5000}, "limits": {"max_chars": 5000}}
