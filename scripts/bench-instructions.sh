#!/usr/bin/env bash
# Instructions per simulated millisecond of the model, counted by callgrind: a figure that stays
# the same on a busy or noisy machine, unlike a timing. Runs `kafkascope run SCENARIO` to FROM_MS
# and to TO_MS under callgrind and divides the difference by the milliseconds between. For a load
# as busy as `throughput` or `large`, which steps every millisecond, that is the cost of a step.
#
#   scripts/bench-instructions.sh [SCENARIO] [FROM_MS] [TO_MS] [BINARY]
#
# Defaults: throughput, 10000, 12000, target/release/kafkascope (built with `cargo build --release`).
set -euo pipefail
scenario="${1:-throughput}"
from="${2:-10000}"
to="${3:-12000}"
binary="${4:-${CARGO_TARGET_DIR:-target}/release/kafkascope}"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
[[ -x "$binary" ]] || { echo "no $binary: cargo build --release first" >&2; exit 2; }
(( to > from )) || { echo "TO_MS must be after FROM_MS" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
count() {
    valgrind --tool=callgrind --callgrind-out-file="$work/$1.out" \
        "$binary" run "$scenario" --until-ms "$1" >/dev/null 2>"$work/$1.err" \
        || { cat "$work/$1.err" >&2; exit 2; }
    awk '/^summary:/ { print $2 }' "$work/$1.out"
}
count "$from" >"$work/from" &
count "$to" >"$work/to" &
wait
a="$(cat "$work/from")"
b="$(cat "$work/to")"
echo "$scenario: $(( (b - a) / (to - from) )) instructions per simulated ms, from $from to $to ms"
