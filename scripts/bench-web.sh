#!/usr/bin/env bash
# The web build's figures: the shipped .wasm's size (raw and gzip), the time from navigation to
# the first frame drawn, on localhost in headless Chromium (software WebGL), and the model's speed
# in the page (a report=1 run of throughput) beside the native release binary's.
#
#   scripts/bench-web.sh [DIST] [LOADS]
#
# DIST is a folder from scripts/build-web.sh (default dist/, the shipped profile).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/web-serve.sh

dist="${1:-dist}"
loads="${2:-5}"
wasm="$dist/kafkascope_bg.wasm"
[[ -f "$wasm" ]] || { echo "no web build in $dist: run scripts/build-web.sh" >&2; exit 2; }

mb() { awk "BEGIN { printf \"%.1f\", $1 / 1048576 }"; }
echo "wasm: $(mb "$(wc -c <"$wasm")") MB, $(mb "$(gzip -9 -c "$wasm" | wc -c)") MB gzip; JS glue $(($(wc -c <"$dist/kafkascope.js") / 1024)) KB"
ready_browser
cargo build --locked --quiet --release --bin kafkascope
serve "$dist"
node web/test/browser.mjs bench "$base" "$loads" "${CARGO_TARGET_DIR:-target}/release/kafkascope"
