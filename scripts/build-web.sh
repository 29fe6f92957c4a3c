#!/usr/bin/env bash
# Builds the web app into a self-contained folder: index.html, the JS glue and the .wasm.
#
#   scripts/build-web.sh [--profile web|release] [--no-opt] [--out DIR]
#
# --profile web (the default) is what ships: the smallest code (opt-level "z", the model's own at
#   3 for its speed, fat LTO, one codegen unit; Cargo.toml's [profile.web]) and then wasm-opt
#   -Oz. On two cores a clean build takes about 35 minutes, a rebuild after an edit about 20
#   (the fat LTO link and wasm-opt).
# --profile release is the same code built in a fraction of the time, and larger: for tests.
# --no-opt skips wasm-opt.
#
# Tools that are missing are installed under $KAFKASCOPE_TOOLS (default ~/.cache/kafkascope/tools):
# wasm-bindgen-cli at exactly the version Cargo.lock holds, and binaryen's wasm-opt from npm
# (Debian's binaryen 108 writes modules browsers reject).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=web
optimise=1
out=dist
while (($#)); do
    case "$1" in
        --profile) profile="${2:?--profile needs web or release}"; shift 2 ;;
        --no-opt) optimise=0; shift ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        *) echo "build-web.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$profile" in
    web | release) ;;
    *) echo "build-web.sh: --profile is web or release, not $profile" >&2; exit 2 ;;
esac

tools="${KAFKASCOPE_TOOLS:-$HOME/.cache/kafkascope/tools}"
target_dir="${CARGO_TARGET_DIR:-target}"
binaryen_version=132.0.0

# wasm-bindgen's generated glue must come from the same version as the library in Cargo.lock.
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
bindgen=""
for candidate in "$tools/bin/wasm-bindgen" "$(command -v wasm-bindgen || true)"; do
    if [[ -x "$candidate" ]] && [[ "$("$candidate" --version)" == "wasm-bindgen $bindgen_version" ]]; then
        bindgen="$candidate"
        break
    fi
done
if [[ -z "$bindgen" ]]; then
    echo "== installing wasm-bindgen-cli $bindgen_version into $tools"
    cargo install wasm-bindgen-cli --version "$bindgen_version" --root "$tools"
    bindgen="$tools/bin/wasm-bindgen"
fi

if command -v rustup >/dev/null; then
    rustup target add wasm32-unknown-unknown >/dev/null
fi

echo "== cargo build --profile $profile (wasm32)"
cargo build --locked --profile "$profile" --target wasm32-unknown-unknown --bin kafkascope

mkdir -p "$out"
rm -f "$out/kafkascope.js" "$out/kafkascope_bg.wasm" "$out/index.html"
"$bindgen" --target web --no-typescript --remove-producers-section \
    --out-dir "$out" --out-name kafkascope \
    "$target_dir/wasm32-unknown-unknown/$profile/kafkascope.wasm"

if ((optimise)); then
    wasm_opt="$tools/node_modules/.bin/wasm-opt"
    if [[ ! -x "$wasm_opt" ]] || [[ "$("$wasm_opt" --version)" != *"version ${binaryen_version%%.*}"* ]]; then
        echo "== installing binaryen $binaryen_version (wasm-opt) into $tools"
        npm install --prefix "$tools" --no-save --no-audit --no-fund "binaryen@$binaryen_version" >/dev/null
    fi
    echo "== wasm-opt -Oz (minutes)"
    # The features Rust's wasm32-unknown-unknown target turns on by default; wasm-opt must
    # accept them and add no others.
    "$wasm_opt" -Oz --strip-debug --strip-producers \
        --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
        --enable-mutable-globals --enable-reference-types --enable-multivalue \
        -o "$out/kafkascope_bg.opt.wasm" "$out/kafkascope_bg.wasm"
    mv "$out/kafkascope_bg.opt.wasm" "$out/kafkascope_bg.wasm"
fi

cp web/index.html "$out/"
raw=$(wc -c <"$out/kafkascope_bg.wasm")
gz=$(gzip -9 -c "$out/kafkascope_bg.wasm" | wc -c)
echo "== $out/: kafkascope_bg.wasm $((raw / 1024 / 1024)) MB, $(awk "BEGIN { printf \"%.1f\", $gz / 1048576 }") MB gzip"
