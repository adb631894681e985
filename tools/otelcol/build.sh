#!/usr/bin/env bash
# Builds the OpenTelemetry Collector of ./manifest.yaml (filelog receiver + file exporter) with
# the collector's builder (go.opentelemetry.io/collector/cmd/builder) from Go modules, into
# <checkout>/.cache/otelcol-<version>/ (or $1), once: nothing is rebuilt while the binary is
# there. Prints the binary's path. The pod-log tests and the bench run it on first use, and
# .ci/run runs it before the test suite. About 7 minutes on 2 busy cores with an empty module cache.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILDER_VERSION=v0.165.0
version=$(sed -n 's/^  version: *//p' "$here/manifest.yaml")
out=${1:-$here/../../.cache/otelcol-v${version}}
bin=$out/otelcol-vkubelet
if [ ! -x "$bin" ]; then
  mkdir -p "$out"
  tmp=$(mktemp -d "$out/.build-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # The builder writes the generated module and runs `go mod tidy` and `go build` in it.
  sed "s|^dist:|dist:\n  output_path: $tmp/src|" "$here/manifest.yaml" > "$tmp/manifest.yaml"
  GOFLAGS=-trimpath go run "go.opentelemetry.io/collector/cmd/builder@${BUILDER_VERSION}" \
    --config "$tmp/manifest.yaml" --ldflags '-s -w' >&2
  mv -f "$tmp/src/otelcol-vkubelet" "$bin"
fi
echo "$bin"
