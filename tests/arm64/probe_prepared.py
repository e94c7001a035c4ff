"""Is a voice folder prepared on another machine usable here? One JSON object on stdout:
edged's own verdict (`read_prepared`; None means edged prepares the voice again), whether
onnxruntime loads each of the folder's graphs as edged opens them, and the encoder's and
flow's latent for fixed phoneme ids when those two load.

Run by tests/test_arm64.py inside the arm64 root on a folder prepared on the x86 host, and
on the host on the same folder.

    python probe_prepared.py FOLDER SOURCE_SHA256
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from edged.voice.onnx import open_session
from edged.voice.piper.prepared import cpu_signature, read_prepared

_IDS = [1, 0, 20, 0, 61, 0, 24, 0, 120, 0, 14, 0, 10, 0, 2]


def latent(sessions: dict[str, Any]) -> list[float] | None:
    """encoder -> flow on _IDS with noise scales 0 (None unless both load)."""
    if "encoder" not in sessions or "flow" not in sessions:
        return None
    ids = np.array([_IDS], dtype=np.int64)
    encoded = sessions["encoder"].run(None, {
        "input": ids, "input_lengths": np.array([len(_IDS)], dtype=np.int64),
        "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32)})
    outputs = dict(zip((o.name for o in sessions["encoder"].get_outputs()), encoded, strict=True))
    flow = sessions["flow"]
    result: list[float] = flow.run(None, {i.name: outputs[i.name] for i in flow.get_inputs()})[
        0].ravel().tolist()
    return result


def main(folder: Path, sha256: str) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    sessions, graphs = {}, {}
    for graph in sorted(folder.glob("*.onnx")):
        try:
            sessions[graph.stem] = open_session(graph, 1, level="ORT_DISABLE_ALL")
            graphs[graph.stem] = "loads"
        except Exception as err:  # what onnxruntime says is the finding
            graphs[graph.stem] = str(err)
    print(json.dumps({
        "used_by_edged": read_prepared(folder, sha256, manifest["precision"]) is not None,
        "cpu_here": cpu_signature(),
        "cpu_there": manifest["cpu"],
        "graphs": graphs,
        "latent": latent(sessions),
    }))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
