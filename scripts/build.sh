#!/usr/bin/env bash
# Builds the npm package into dist/: the default wasm module (CPU, WebGPU, Arrow IPC), the
# module with the WebGL2 backend too, a browser and a Node entry point.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[build] %s\n' "$*"; }

profile=${GPUTABLE_PROFILE:-release}
rm -rf dist
mkdir -p dist/web dist/node

# build <dir> <cargo profile> [cargo features [cargo args]]: one wasm module and its bindings
# into dist/<dir>.
build() {
  local dir=$1 cargo_profile=$2 features=${3:-} cargo_args=("${@:4}")
  if [ "$profile" != release ]; then
    cargo_profile=debug
    features="debug-panics${features:+,$features}"
  fi
  say "cargo build ($cargo_profile, wasm32${features:+, features $features})"
  if [ "$cargo_profile" = debug ]; then
    cargo build --quiet --target wasm32-unknown-unknown --lib --features "$features"
  else
    cargo build --quiet --profile "$cargo_profile" --target wasm32-unknown-unknown --lib ${features:+--features "$features"} "${cargo_args[@]}"
  fi
  say "wasm-bindgen --target web ($dir)"
  wasm-bindgen --target web --out-dir "dist/$dir" --out-name gputable "target/wasm32-unknown-unknown/$cargo_profile/gputable.wasm"
  # npm's binaryen, never Debian's wasm-opt 108 (it corrupts wasm-bindgen output).
  if [ "$profile" = release ] && [ -x node_modules/.bin/wasm-opt ]; then
    say "wasm-opt -O3 (npm binaryen, $dir)"
    # The CPU backend's kernels stay functions of their own (as rustc left them): inlined
    # into the executor's large async closures, V8 ran them 1.3-4x slower. The pattern
    # matches names from wasm-bindgen's name section, which must survive until here.
    node_modules/.bin/wasm-opt '--no-inline=gputable::cpu::*' -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
      --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
      "dist/$dir/gputable_bg.wasm" -o "dist/$dir/gputable_bg.wasm"
  fi
}

build wasm-webgl release webgl
# The default module inlines only what is marked #[inline(always)] or costs less than a call
# (LLVM's threshold 25, the one of opt-level "z"): the CPU kernels' hot loops are marked and
# keep their speed at opt-level 3, and the rest of this crate is 48 kB (gzipped) smaller.
# Cargo appends these flags to .cargo/config.toml's.
build wasm wasm-lean "" --config 'target.wasm32-unknown-unknown.rustflags=["-C", "llvm-args=-inline-threshold=25"]'

# The shared modules (everything in js/ but the two entry points and the declarations).
for module in js/*.js; do
  case "$module" in js/web.js|js/node.js) ;; *) cp "$module" dist/ ;; esac
done
cp js/web.js dist/web/index.js
cp js/node.js dist/node/index.js
say "esbuild: the browser entry as one minified module"
node scripts/bundle-web.js
node scripts/sizes.js
