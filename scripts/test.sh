#!/usr/bin/env bash
# Every test: native cargo tests, then the built package under Node.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh

echo "[test] native: cargo test"
cargo test --quiet

echo "[test] node: node --test tests/node/"
node --test --test-reporter=spec tests/node/
