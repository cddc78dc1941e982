#!/usr/bin/env bash
# Builds the npm package into dist/: one wasm module, a browser and a Node entry point.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[build] %s\n' "$*"; }

profile=${GPUTABLE_PROFILE:-release}
say "cargo build ($profile, wasm32)"
if [ "$profile" = release ]; then
  cargo build --quiet --release --target wasm32-unknown-unknown --lib
else
  cargo build --quiet --target wasm32-unknown-unknown --lib --features debug-panics
fi
wasm=target/wasm32-unknown-unknown/$profile/gputable.wasm

rm -rf dist
mkdir -p dist/wasm dist/web dist/node
say "wasm-bindgen --target web"
wasm-bindgen --target web --out-dir dist/wasm --out-name gputable "$wasm"

# npm's binaryen, never Debian's wasm-opt 108 (it corrupts wasm-bindgen output).
if [ "$profile" = release ] && [ -x node_modules/.bin/wasm-opt ]; then
  say "wasm-opt -O3 (npm binaryen)"
  # The CPU backend's kernels stay functions of their own (as rustc left them): inlined
  # into the executor's large async closures, V8 ran them 1.3-4x slower. The pattern
  # matches names from wasm-bindgen's name section, which must survive until here.
  node_modules/.bin/wasm-opt '--no-inline=gputable::cpu::*' -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
    dist/wasm/gputable_bg.wasm -o dist/wasm/gputable_bg.wasm
fi

# The shared modules (everything in js/ but the two entry points and the declarations).
for module in js/*.js; do
  case "$module" in js/web.js|js/node.js) ;; *) cp "$module" dist/ ;; esac
done
cp js/web.js dist/web/index.js
cp js/node.js dist/node/index.js
say "dist/ ready ($(wc -c < dist/wasm/gputable_bg.wasm) bytes of wasm)"
