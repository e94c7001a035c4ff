#!/usr/bin/env bash
# The recipe of the Debian sid root that runs Home Assistant 2026.11 for `make test-ha`
# (HA 2026.11 needs Python >= 3.14.2: bookworm has none, and sid's python3.14 needs sid's glibc,
# so HA runs in a sid root by chroot). root.sh names the cached root after this file's sha256:
# a changed line here is a new root. About 2 minutes here (packages and wheels from the network),
# 1.7 GB.
#
#   tests/data/homeassistant/sid/build-root.sh OUTDIR      # as root; OUTDIR must not exist
#
# Inside: python3.14 (sid), mosquitto (the harness's broker runs where HA runs), g++ and the
# Python headers (pymicro-vad and pyspeex-noise, which assist_pipeline needs, have no cp314
# wheels: pip builds them), ffmpeg (HA converts TTS audio with it: an Assist pipeline run over the
# websocket asks for mp3, as a real installation, which always has ffmpeg), HA 2026.11.0 in
# /opt/ha/venv installed under HA's own package_constraints.txt (shipped in the wheel; without it
# pip backtracks for a long time), and the requirements of the integrations the tests use.
set -euo pipefail
out=${1:?usage: build-root.sh OUTDIR}
ha_version=2026.11.0
# The Debian mirror this host's apt uses (the only one a closed network may reach).
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
           | sed -n 's/^URIs: *//p; s/^deb \+\(http[^ ]*\) .*/\1/p' | grep -v security | head -n 1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
tmp="$out.part.$$"
tools=$(mktemp -d)
# debootstrap mounts proc and sys in the target while it runs: unmount what is left, then remove.
cleanup() {
  rm -rf "$tools"
  [ -d "$tmp" ] || return 0
  for m in proc sys; do mountpoint -q "$tmp/$m" && umount "$tmp/$m"; done
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

# bookworm's debootstrap, unpacked beside the build (nothing installed on the host).
(cd "$tools" && apt-get download -q debootstrap >/dev/null 2>&1 \
   || { apt-get update -qq && apt-get download -q debootstrap; })
dpkg -x "$tools"/debootstrap_*.deb "$tools/x"
DEBOOTSTRAP_DIR="$tools/x/usr/share/debootstrap" "$tools/x/usr/sbin/debootstrap" \
  --variant=minbase --include=python3.14,python3.14-venv,python3.14-dev,g++,ca-certificates,mosquitto,ffmpeg \
  sid "$tmp" "$mirror" >"$tools/debootstrap.log" 2>&1 \
  || { tail -n 30 "$tools/debootstrap.log" >&2; exit 1; }

# pip and uv inside reach PyPI through this host's resolver and CA bundle.
cp /etc/resolv.conf "$tmp/etc/resolv.conf"
mkdir -p "$tmp/opt/ha"
cp /etc/ssl/certs/ca-certificates.crt "$tmp/opt/ha/host-ca.crt"
in_root() {
  chroot "$tmp" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    SSL_CERT_FILE=/opt/ha/host-ca.crt PIP_CERT=/opt/ha/host-ca.crt UV_NATIVE_TLS=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"
}
in_root python3.14 -m venv /opt/ha/venv
in_root /opt/ha/venv/bin/pip install -q --upgrade pip
in_root /opt/ha/venv/bin/pip download -q --no-deps -d /opt/ha/wheel "homeassistant==$ha_version"
in_root /opt/ha/venv/bin/python -c 'import glob, sys, zipfile
whl = glob.glob("/opt/ha/wheel/homeassistant-*.whl")[0]
sys.stdout.write(zipfile.ZipFile(whl).read("homeassistant/package_constraints.txt").decode())' \
  >"$tmp/opt/ha/package_constraints.txt"
in_root sh -c '/opt/ha/venv/bin/pip install -q --prefer-binary -c /opt/ha/package_constraints.txt /opt/ha/wheel/homeassistant-*.whl'
# The integrations' requirements from HA's manifests (HA would install them on first setup).
req=$(in_root /opt/ha/venv/bin/python - <<'PY'
import json, pathlib, homeassistant.components as c
base, seen, reqs = pathlib.Path(c.__file__).parent, set(), []
todo = ["mqtt", "wyoming", "zeroconf", "assist_pipeline"]
while todo:
    d = todo.pop(0)
    if d not in seen:
        seen.add(d)
        m = json.loads((base / d / "manifest.json").read_text())
        reqs += [r for r in m.get("requirements", []) if r not in reqs]
        todo += m.get("dependencies", [])
print(" ".join(reqs))
PY
)
in_root /opt/ha/venv/bin/pip install -q --prefer-binary -c /opt/ha/package_constraints.txt $req
rm -rf "$tmp/opt/ha/wheel" "$tmp/var/cache/apt/archives/"*.deb "$tmp/root/.cache"
mv "$tmp" "$out"
