#!/usr/bin/env bash
# The backend-neutral Rust suite in headless Chromium (tests/wasm_suite.rs): the CPU,
# WebGPU and WebGL2 backends compiled to wasm, run by wasm-bindgen-test through chromedriver
# with the flags in webdriver.json.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "[test] wasm: the Rust suite in headless Chromium (CPU, WebGPU, WebGL2; wasm-bindgen-test)"
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
# The whole suite is one page: the runner's limit is for all of it.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-2700}
cargo test --target wasm32-unknown-unknown --features webgl --test wasm_suite 2>&1 | sed -u '/Invoking test:/d'
