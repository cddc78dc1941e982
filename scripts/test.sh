#!/usr/bin/env bash
# Every test: native cargo tests, the Rust suite in headless Chromium, then the built package
# under Node and in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh

echo "[test] native: cargo test (CPU backend, WebGPU on Vulkan/lavapipe, WebGL2 design on GL/llvmpipe)"
# Mesa warns without a runtime dir; GL needs float render targets (also in .cargo/config.toml).
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
export MESA_EXTENSION_OVERRIDE=${MESA_EXTENSION_OVERRIDE:-+GL_ARB_color_buffer_float}
cargo test --quiet

bash scripts/wasm-test.sh

echo "[test] node: the package in Node (tests/node); WebGPU and WebGL2 in headless Chromium (tests/browser)"
node --test --test-reporter=spec tests/node/ tests/browser/
