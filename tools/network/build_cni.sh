#!/usr/bin/env bash
# Builds the reference CNI plugins (bridge, host-local, loopback, portmap) at the version
# ./go.mod pins into <checkout>/.cache/cni/bin (or $1), once: nothing is rebuilt while all four
# are there. Prints the directory. The process provider's network tests run it on first use, and
# .ci/run runs it before the test suite.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$here/../../.cache/cni/bin}
plugins=(ipam/host-local main/bridge main/loopback meta/portmap)
missing=0
for p in "${plugins[@]}"; do [ -x "$out/${p#*/}" ] || missing=1; done
if [ $missing = 1 ]; then
  mkdir -p "$out"
  tmp=$(mktemp -d "$out/.build-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cd "$here"
  for p in "${plugins[@]}"; do
    go build -trimpath -ldflags '-s -w' -o "$tmp/${p#*/}" \
      "github.com/containernetworking/plugins/plugins/$p" >&2
  done
  mv -f "$tmp"/* "$out"/
fi
cd "$out" && pwd
