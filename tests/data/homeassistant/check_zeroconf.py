#!/usr/bin/env python3
"""Check that HA discovers a Wyoming TTS server by zeroconf, and that the flow gives a TTS entity
that speaks. Run with HA's Python while the harness runs with `start --zeroconf`:

  check_zeroconf.py --host ADDRESS --port PORT [--voice NAME] [--timeout 120]

ADDRESS/PORT: where the server is expected to be found (what it advertises). Waits for HA's
Wyoming config flow started by zeroconf (source zeroconf, step zeroconf_confirm), confirms it,
waits for the entry and its tts entity, and has HA synthesize through it (tts_get_url, wav).
PASS/FAIL lines, then `N passed, M failed`; details to $HA_HARNESS_DIR/zeroconf.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from check_wyoming_tts import RESULTS as CHECKS  # noqa: E402
from check_wyoming_tts import check, http_get_bytes, parse_wav  # noqa: E402
from hassclient import HA, HARNESS_DIR  # noqa: E402


def _discovered(ha: HA) -> dict | None:
    """The Wyoming flow that zeroconf started, once it waits at its confirm step."""
    for flow in ha.ws({"type": "config_entries/flow/progress"})[0].get("result") or []:
        if flow.get("handler") == "wyoming" and flow.get("context", {}).get("source") == "zeroconf" \
                and flow.get("step_id") == "zeroconf_confirm":
            return flow
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--voice")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    ha = HA.from_state()
    report: dict = {}
    start = time.monotonic()
    try:
        flow = ha.wait(lambda: _discovered(ha), timeout=args.timeout,
                       what="a Wyoming flow discovered by zeroconf")
        found_s = time.monotonic() - start
        report["flow"] = flow
        check("HA discovered the server by zeroconf (wyoming flow, step zeroconf_confirm)", True,
              f"after {found_s:.1f} s: {flow.get('context', {}).get('title_placeholders')}, "
              f"unique_id {flow.get('context', {}).get('unique_id')!r}")
        done = ha.post(f"/api/config/config_entries/flow/{flow['flow_id']}", {})
        report["confirmed"] = done
        ok = done.get("type") == "create_entry"
        check("confirming the flow creates an entry", ok, f"{done.get('type')}: {done.get('title')}")
        entry = done["result"]["entry_id"]
        ha.wait(lambda: any(e["entry_id"] == entry and e["state"] == "loaded" for e in
                            ha.get("/api/config/config_entries/entry?domain=wyoming")),
                timeout=args.timeout, what="the discovered entry loaded")
        entity = ha.wait(lambda: harness.wyoming_tts_entities(ha, entry), timeout=args.timeout,
                         what="its tts entity")[0]["entity_id"]
        ha.wait(lambda: (s := ha.states().get(entity)) and s["state"] != "unavailable",
                timeout=args.timeout, what=f"{entity} available")
        report["entity_id"] = entity
        check("the entry gives an available TTS entity", True, entity)
        options: dict = {"preferred_format": "wav"}
        if args.voice:
            options["voice"] = args.voice
        path = ha.post("/api/tts_get_url", {"engine_id": entity, "message": "Found by zeroconf.",
                                            "language": "en_US", "options": options,
                                            "cache": False})["path"]
        status, headers, body = http_get_bytes(ha.base + path, args.timeout)
        wav = parse_wav(body) if status == 200 else {}
        frames = len(wav.get("pcm", b"")) // 2
        check("the discovered entity speaks through the server", status == 200 and frames > 8000,
              f"HTTP {status}, {len(body)} bytes, {frames} samples")
        report["speech"] = {"status": status, "bytes": len(body), "samples": frames}
    except (RuntimeError, TimeoutError, OSError, KeyError) as err:
        check("the check ran to its end", False, f"{type(err).__name__}: {err}")
    (HARNESS_DIR / "zeroconf.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    failed = sum(1 for _n, ok, _d in CHECKS if not ok)
    print(f"{len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
