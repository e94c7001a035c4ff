#!/usr/bin/env python3
"""Check an Assist pipeline whose TTS engine is a Wyoming server, end to end through HA.

Run with HA's Python while the harness runs (start.sh):

  check_assist.py --host HOST --port PORT [--voice NAME] [--text "what time is it"]

It puts the recording proxy of check_wyoming_tts.py in front of the server, adds the Wyoming
integration for the proxy (config-entries flow), creates an Assist pipeline (conversation: HA's
own agent; TTS: that entity and voice), runs it over the websocket from text through the TTS
stage (`assist_pipeline/run`, start_stage intent, end_stage tts) and fetches the audio HA serves
for it. PASS/FAIL lines, then `N passed, M failed`; the figures go to $HA_HARNESS_DIR/assist.json.

What it proves: HA streamed the text (synthesize-start, synthesize-chunk..., synthesize-stop) and
the chunks add up to the pipeline's tts_input; the server answered with audio and
synthesize-stopped; HA served audio (by default mp3 through ffmpeg, as a real installation does).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from check_wyoming_tts import Proxy, check  # noqa: E402
from check_wyoming_tts import RESULTS as CHECKS  # noqa: E402
from hassclient import HA, HARNESS_DIR  # noqa: E402

_STREAM = ["synthesize-start", "synthesize-chunk", "synthesize", "synthesize-stop"]


async def _run_pipeline(ha: HA, pipeline_id: str, text: str, timeout: float) -> list[dict]:
    """The events of one pipeline run, in order, up to run-end (or an error)."""
    import aiohttp

    url = ha.base.replace("http://", "ws://", 1) + "/api/websocket"
    events: list[dict] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await ws.receive_json()
        await ws.send_json({"type": "auth", "access_token": ha.token})
        assert (await ws.receive_json())["type"] == "auth_ok"
        await ws.send_json({"id": 1, "type": "assist_pipeline/run", "start_stage": "intent",
                            "end_stage": "tts", "input": {"text": text}, "pipeline": pipeline_id})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = await ws.receive_json(timeout=deadline - time.monotonic())
            if msg.get("type") == "result" and not msg.get("success"):
                raise RuntimeError(f"assist_pipeline/run refused: {msg}")
            if msg.get("type") == "event":
                event = dict(msg["event"], at=time.monotonic())
                events.append(event)
                if event["type"] in ("run-end", "error"):
                    break
    return events


def _create_pipeline(ha: HA, entity_id: str, voice: str | None, language: str) -> str:
    body = {"type": "assist_pipeline/pipeline/create", "name": f"edged-check-{int(time.time())}",
            "language": "en", "conversation_engine": "conversation.home_assistant",
            "conversation_language": "en", "stt_engine": None, "stt_language": None,
            "tts_engine": entity_id, "tts_language": language, "tts_voice": voice,
            "wake_word_entity": None, "wake_word_id": None}
    result = ha.ws(body)[0]
    if not result.get("success"):
        raise RuntimeError(f"pipeline not created: {result}")
    return result["result"]["id"]


def _fetch(ha: HA, path: str, timeout: float) -> tuple[int, str, bytes, float | None]:
    """GET the audio; (status, content type, body, seconds to its first body byte)."""
    import urllib.request

    start = time.monotonic()
    with urllib.request.urlopen(ha.base + path, timeout=timeout) as response:
        first = response.read(1)
        first_at = time.monotonic() - start if first else None
        return response.status, response.headers.get("Content-Type", ""), first + response.read(), first_at


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--voice")
    ap.add_argument("--language", default="en_US")
    ap.add_argument("--text", default="what time is it")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()

    ha = HA.from_state()
    proxy = Proxy((args.host, args.port))
    report: dict = {}
    try:
        added = harness.add_wyoming(ha, "127.0.0.1", proxy.port, reuse=False, timeout=args.timeout)
        entity = added["entity_id"]
        check("Wyoming integration added for the server (through the proxy)", bool(entity), entity)
        pipeline = _create_pipeline(ha, entity, args.voice, args.language)
        since = len(proxy.conns)
        started = time.monotonic()
        events = asyncio.run(_run_pipeline(ha, pipeline, args.text, args.timeout))
        kinds = [e["type"] for e in events]
        check("pipeline ran from text through tts", kinds[-1:] == ["run-end"] and "tts-end" in kinds,
              f"events {kinds}")
        tts_start = next((e["data"] for e in events if e["type"] == "tts-start"), {})
        tts_end = next((e["data"] for e in events if e["type"] == "tts-end"), {})
        spoken = tts_start.get("tts_input", "")
        check("the agent's answer went to edged's entity", tts_start.get("engine") == entity
              and bool(spoken), f"engine {tts_start.get('engine')!r}, tts_input {spoken!r}")
        path = tts_end.get("tts_output", {}).get("url", "")
        status, ctype, body, first_s = _fetch(ha, path, args.timeout)
        check("HA served the pipeline's audio", status == 200 and len(body) > 1000,
              f"GET {path} -> HTTP {status}, {len(body)} bytes, {ctype}")
        conns = proxy.conns[since:]
        proxy.wait_closed(conns)
        check("HA opened one connection to the server for the run", len(conns) == 1,
              f"{len(conns)} connection(s)")
        sent = [e for c in conns for e in c["events"] if e["dir"] == "ha->server"]
        got = [e for c in conns for e in c["events"] if e["dir"] == "server->ha"]
        sent_kinds = [e["type"] for e in sent]
        collapsed = [k for i, k in enumerate(sent_kinds) if i == 0 or k != sent_kinds[i - 1]]
        check("HA streamed the text: synthesize-start, -chunk..., synthesize, -stop",
              collapsed == _STREAM, f"HA sent {sent_kinds}")
        chunks = "".join(e["data"].get("text", "") for e in sent if e["type"] == "synthesize-chunk")
        check("the chunks add up to the pipeline's tts_input", chunks == spoken,
              f"{chunks!r}")
        got_kinds = [e["type"] for e in got]
        pcm = sum(len(c["audio"]) for c in conns)
        check("the server answered with audio, then synthesize-stopped",
              got_kinds[:1] == ["audio-start"] and got_kinds[-1:] == ["synthesize-stopped"]
              and pcm > 0, f"{got_kinds.count('audio-chunk')} audio-chunk, {pcm} PCM bytes")
        first_chunk = next((e["t"] for e in got if e["type"] == "audio-chunk"), None)
        request = next((e["t"] for e in sent if e["type"] == "synthesize-start"), None)
        report = {"ha_version": json.loads(harness.STATE_FILE.read_text())["ha_version"],
                  "events": kinds, "tts_input": spoken, "sent": sent_kinds,
                  "audio_chunks": got_kinds.count("audio-chunk"), "pcm_bytes": pcm,
                  "served_bytes": len(body), "content_type": ctype,
                  "run_s": round(time.monotonic() - started, 3),
                  "first_served_byte_s": first_s and round(first_s, 3),
                  "server_first_chunk_s": (first_chunk is not None and request is not None
                                           and round(first_chunk - request, 3)) or None}
        ha.ws({"type": "assist_pipeline/pipeline/delete", "pipeline_id": pipeline})
        harness.remove_wyoming(ha, "127.0.0.1", proxy.port)
    except (RuntimeError, TimeoutError, OSError) as err:
        check("the check ran to its end", False, f"{type(err).__name__}: {err}")
    finally:
        proxy.close()
    (HARNESS_DIR / "assist.json").write_text(json.dumps(report, indent=2) + "\n")
    failed = sum(1 for _n, ok, _d in CHECKS if not ok)
    print(f"{len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
