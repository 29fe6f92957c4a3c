#!/usr/bin/env bash
# Tests the web build in headless Chromium: the page opens what its URL parameters say, draws,
# takes keys, names a bad parameter, and its reports equal the native command line's.
#
#   scripts/test-web.sh [DIST] [OUT]
#
# DIST is a folder from scripts/build-web.sh (default dist/); screenshots and the reports are
# written into OUT (default target/web-test). Needs Chromium (Debian's package chromium) and Node.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/web-serve.sh

dist="${1:-dist}"
out="${2:-${CARGO_TARGET_DIR:-target}/web-test}"
mkdir -p "$out"
[[ -f "$dist/kafkascope_bg.wasm" ]] || { echo "no web build in $dist: run scripts/build-web.sh" >&2; exit 2; }

ready_browser
cargo build --locked --quiet --bin kafkascope
serve "$dist"
node web/test/browser.mjs test "$base" "${CARGO_TARGET_DIR:-target}/debug/kafkascope" "$out"
