#!/usr/bin/env bash
# The recipe of the arm64 root that `make test-arm64` installs edged into (tests/test_arm64.py):
# Debian bookworm for arm64 with what Raspberry Pi OS Lite (bookworm, 64-bit) has and edged's
# Ansible role relies on (python3 with venv, python3-apt for the apt module, sudo for become,
# ca-certificates). PortAudio and ALSA are left to the role, which installs them as on a Pi.
# tests/arm64/rootfs.py names the cached tarball after this file's sha256: a changed line here
# is a new root. About 6 minutes here (the packages' scripts run under qemu).
#
#   tests/arm64/build-root.sh OUT.tar.zst        # as root, with qemu-aarch64 registered
set -euo pipefail
out=${1:?usage: build-root.sh OUT.tar.zst}
# The Debian mirror this host's apt uses (the only one a closed network may reach).
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
           | sed -n 's/^URIs: *//p; s/^deb \+\(http[^ ]*\) .*/\1/p' | grep -v security | head -n 1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
tmp="$out.part.$$"
trap 'rm -f "$tmp"' EXIT
mmdebstrap --quiet --arch=arm64 --variant=minbase --format=tar \
  --include=python3,python3-venv,python3-apt,sudo,ca-certificates \
  bookworm "$tmp" "deb $mirror bookworm main"
zstd -q -T0 -10 --rm -o "$out.zst.$$" "$tmp"
mv "$out.zst.$$" "$out"
