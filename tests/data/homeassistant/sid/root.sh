#!/usr/bin/env bash
# The Debian sid root that runs Home Assistant 2026.11 for `make test-ha` (build-root.sh is its
# recipe; tests/ha_install.py mounts it and runs HA in it by chroot).
#
#   tests/data/homeassistant/sid/root.sh path    # the cached root's folder (may not exist yet)
#   tests/data/homeassistant/sid/root.sh root    # build it once if it is not cached (as root)
#
# The folder is named after the sha256 of build-root.sh: a changed recipe is a new root, and the
# old one is left for `rm -rf` (1.7 GB). EDGED_HA_SID_CACHE moves the cache
# folder; it is not under $XDG_CACHE_HOME because the test session points that at a throwaway one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EDGED_HA_SID_CACHE:-$HOME/.cache/edged/ha-sid}
recipe=$here/build-root.sh

root_path() {
  echo "$cache/sid-$(sha256sum "$recipe" | cut -c1-12)"
}

case ${1:-} in
  path)
    root_path
    ;;
  root)
    out=$(root_path)
    if [ ! -x "$out/opt/ha/venv/bin/hass" ]; then
      mkdir -p "$cache"
      echo "root.sh: building the sid root for HA 2026.11 in $out (2-5 minutes here, once)" >&2
      start=$(date +%s)
      "$recipe" "$out"
      echo "root.sh: built in $(($(date +%s) - start)) s" >&2
    fi
    echo "$out"
    ;;
  *)
    echo "usage: $0 path|root" >&2
    exit 2
    ;;
esac
