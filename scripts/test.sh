#!/usr/bin/env bash
# Every test: native cargo tests, then the built package under Node.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh

echo "[test] native: cargo test (CPU backend, and the WebGPU backend on Vulkan/lavapipe)"
# Mesa warns without a runtime dir; lavapipe needs nothing else.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
cargo test --quiet

echo "[test] node: the package in Node (tests/node) and WebGPU in headless Chromium (tests/browser)"
node --test --test-reporter=spec tests/node/ tests/browser/
