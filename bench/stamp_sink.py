"""An ALSA `file` plugin's pipe reader: the samples a player wrote, and when each write arrived.

ALSA's file plugin runs `file "|command"` and writes every block the player writes into it
(its `null` slave discards the sound). This reader appends the bytes to `<out>.raw` and, per
read, one record to `<out>.stamps`: the wall-clock time of arrival (float64, time.time()) and
the total bytes so far (uint64). bench.skew turns them into when each sample was written.

    python bench/stamp_sink.py OUT        (as ALSA runs it: the samples on stdin)

Run by its path (ALSA's command line), so it imports only the standard library: nothing in
bench/ can stand in for a module it needs.
"""

from __future__ import annotations

import os
import struct
import sys
import time


def main() -> None:
    out = sys.argv[1]
    total = 0
    with open(out + ".raw", "ab") as raw, open(out + ".stamps", "ab") as stamps:
        while True:
            data = os.read(0, 1 << 16)
            if not data:
                return
            now = time.time()
            total += len(data)
            raw.write(data)
            stamps.write(struct.pack("<dQ", now, total))
            raw.flush()
            stamps.flush()


if __name__ == "__main__":
    main()
