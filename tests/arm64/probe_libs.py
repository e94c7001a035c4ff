"""The native parts edged uses, each doing real work, and the ELF machine of every shared object
the process has mapped; one JSON object on stdout.

Run by tests/test_arm64.py with the installed edged's python inside the arm64 root, and with the
host's python: the answers must agree, and inside the root every object must be AArch64.

    python probe_libs.py TINY_VOICE.onnx
"""

from __future__ import annotations

import json
import sys

import espeakng_loader
import numpy as np
import onnxruntime as ort
import soxr
import xxhash

from edged.frontend.phonemes import Espeak

TEXT = "The garage door has been open for 15 minutes, and it is raining."


def elf_machines() -> dict[str, int]:
    """Path -> e_machine of each ELF file mapped into this process (qemu shows the guest's)."""
    machines = {}
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            path = fields[5].strip() if len(fields) == 6 else ""
            if not path.startswith("/") or path in machines:
                continue
            try:
                with open(path, "rb") as mapped:
                    head = mapped.read(20)
            except OSError:
                continue
            if head[:4] == b"\x7fELF":
                machines[path] = int.from_bytes(head[18:20], "little")
    return machines


def main(tiny_voice: str) -> None:
    clauses = Espeak.get().clauses(TEXT, "en-us")
    tone = np.sin(2 * np.pi * 440 * np.arange(22050) / 22050).astype(np.float32)
    resampled = soxr.resample(tone, 22050, 16000)
    session = ort.InferenceSession(tiny_voice, providers=["CPUExecutionProvider"])
    ids = np.array([[1, 0, 20, 0, 61, 0, 2]], dtype=np.int64)
    audio = session.run(None, {"input": ids, "input_lengths": np.array([7], dtype=np.int64),
                               "scales": np.array([0.667, 1.0, 0.8], dtype=np.float32)})[0]
    print(json.dumps({
        "espeak_library": espeakng_loader.get_library_path(),
        "phonemes": clauses,
        "xxh3_64": xxhash.xxh3_64_hexdigest(TEXT.encode()),
        "xxh3_128": xxhash.xxh3_128_hexdigest(tone.tobytes()),
        "soxr": resampled.tolist(),
        "onnxruntime": ort.__version__,
        "ort_output": audio.ravel().tolist(),
        "numpy_dot": float(np.dot(tone.astype(np.float64), tone.astype(np.float64))),
        "machines": elf_machines(),
    }))


if __name__ == "__main__":
    main(sys.argv[1])
