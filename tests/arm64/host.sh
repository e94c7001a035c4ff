#!/usr/bin/env bash
# The host side of the emulated arm64 suite (tests/test_arm64.py, docs/arm64.md).
#
#   tests/arm64/host.sh path     # the cached root's tarball (may not exist yet); no root needed
#   tests/arm64/host.sh binfmt   # register qemu-aarch64 with binfmt_misc (F flag), as root
#   tests/arm64/host.sh root     # binfmt, then build the root once if it is not cached
#
# The tarball is named after the sha256 of build-root.sh: a changed recipe is a new root, and
# the old one is left for `rm` (65 MB). EDGED_ARM64_CACHE moves the cache folder; it is not
# under $XDG_CACHE_HOME because the test session points that at a throwaway folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EDGED_ARM64_CACHE:-$HOME/.cache/edged/arm64}
recipe=$here/build-root.sh

root_path() {
  local digest
  digest=$(sha256sum "$recipe" | cut -c1-12)
  echo "$cache/bookworm-arm64-$digest.tar.zst"
}

# No systemd here to run systemd-binfmt: mount binfmt_misc and enable Debian's qemu-aarch64
# entry. The F (fix-binary) flag makes the kernel open the interpreter at registration, so the
# root needs no qemu binary of its own.
register_binfmt() {
  local entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
  [ -e /proc/sys/fs/binfmt_misc/register ] ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  [ -e "$entry" ] || update-binfmts --import qemu-aarch64 >/dev/null 2>&1 || true
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
  if ! grep -qx enabled "$entry" 2>/dev/null || ! grep -q '^flags: .*F' "$entry"; then
    echo "host.sh: qemu-aarch64 is not registered with the F flag:" >&2
    cat "$entry" >&2 2>/dev/null || echo "  (no $entry)" >&2
    exit 1
  fi
}

case ${1:-} in
  path)
    root_path
    ;;
  binfmt)
    register_binfmt
    ;;
  root)
    register_binfmt
    out=$(root_path)
    if [ ! -f "$out" ]; then
      mkdir -p "$cache"
      echo "host.sh: building the arm64 root $out (about 5-6 minutes, once)" >&2
      start=$(date +%s)
      "$recipe" "$out"
      echo "host.sh: built in $(($(date +%s) - start)) s" >&2
    fi
    echo "$out"
    ;;
  *)
    echo "usage: $0 path|binfmt|root" >&2
    exit 2
    ;;
esac
