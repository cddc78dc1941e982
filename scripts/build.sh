#!/usr/bin/env bash
# Builds the npm package into dist/: the default wasm module (CPU, WebGPU, Arrow IPC), the
# module with the WebGL2 backend too, a browser and a Node entry point.
#   build.sh        the whole package (what `npm pack` and the tests use)
#   build.sh node   only what Node runs (`npm run demo`): the default module and the Node entry
# A build whose inputs have not changed since the last one of its kind is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[build] %s\n' "$*"; }
fail() { printf '[build] %s\n' "$*" >&2; exit 1; }

what=${1:-package}
case "$what" in package|node) ;; *) fail "unknown build '$what' (package or node)";; esac
profile=${GPUTABLE_PROFILE:-release}
# The target directory cargo writes to (CARGO_TARGET_DIR or a config may move it).
target_dir=$(cargo metadata --format-version 1 --no-deps |
  node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => console.log(JSON.parse(s).target_directory))')

# A release build's wasm-opt is npm's binaryen (never Debian's wasm-opt 108, which corrupts
# wasm-bindgen output) and the browser bundle needs esbuild: both come from `npm ci`
# (scripts/setup.sh). Without them the build stops instead of shipping less.
if [ "$profile" = release ] && [ ! -x node_modules/.bin/wasm-opt ]; then
  fail "npm's binaryen (wasm-opt) is missing: run 'bash scripts/setup.sh build' (or npm ci) first"
fi
if [ "$what" = package ] && [ ! -d node_modules/esbuild ]; then
  fail "npm's esbuild is missing: run 'bash scripts/setup.sh build' (or npm ci) first"
fi

# Everything the build reads; its hash is kept in dist/ to skip an unchanged rebuild.
inputs() {
  find src js shaders .cargo -type f
  ls build.rs Cargo.toml Cargo.lock package.json scripts/build.sh scripts/bundle-web.js scripts/sizes.js
}
inputs_hash="$profile $( (inputs | LC_ALL=C sort | xargs sha1sum; rustc --version; wasm-bindgen --version) | sha1sum | cut -d' ' -f1)"
built=$(cat dist/.stamp 2>/dev/null || true)
# The whole package holds what Node runs too.
if [ "$built" = "package $inputs_hash" ] || [ "$built" = "$what $inputs_hash" ]; then
  say "dist/ is up to date (${built%% *}, $profile): nothing to build"
  exit 0
fi
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
  wasm-bindgen --target web --out-dir "dist/$dir" --out-name gputable "$target_dir/wasm32-unknown-unknown/$cargo_profile/gputable.wasm"
  if [ "$profile" = release ]; then
    say "wasm-opt -O3 (npm binaryen, $dir)"
    # The CPU backend's kernels stay functions of their own (as rustc left them): inlined
    # into the executor's large async closures, V8 ran them 1.3-4x slower. The pattern
    # matches names from wasm-bindgen's name section, which must survive until here.
    node_modules/.bin/wasm-opt '--no-inline=gputable::cpu::*' -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
      --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
      "dist/$dir/gputable_bg.wasm" -o "dist/$dir/gputable_bg.wasm"
  fi
}

if [ "$what" = package ]; then
  build wasm-webgl release webgl
fi
# The default module inlines only what is marked #[inline(always)] or costs less than a call
# (LLVM's threshold 25, the one of opt-level "z"): the CPU kernels' hot loops are marked and
# keep their speed at opt-level 3, and the rest of this crate is 48 kB (gzipped) smaller.
# Cargo appends these flags to .cargo/config.toml's.
build wasm wasm-lean "" --config 'target.wasm32-unknown-unknown.rustflags=["-C", "llvm-args=-inline-threshold=25"]'

# The shared modules (everything in js/ but the two entry points and the declarations).
for module in js/*.js; do
  case "$module" in js/web.js|js/node.js) ;; *) cp "$module" dist/ ;; esac
done
cp js/node.js dist/node/index.js
if [ "$what" = package ]; then
  cp js/web.js dist/web/index.js
  say "esbuild: the browser entry as one minified module"
  node scripts/bundle-web.js
  node scripts/sizes.js
fi
echo "$what $inputs_hash" > dist/.stamp
