#!/usr/bin/env bash
# Installs what is missing, saying what it does; whatever is present is left alone.
#   setup.sh         everything the tests need: the build's tools, GL and Vulkan drivers,
#                    headless Chromium
#   setup.sh build   only what building the package needs (`npm run demo`, `npm pack`)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }
what=${1:-test}
case "$what" in test|build) ;; *) say "unknown setup '$what' (test or build)"; exit 1;; esac

if ! command -v cargo >/dev/null; then
  say "cargo not found: install Rust from https://rustup.rs first"; exit 1
fi

if rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "wasm32-unknown-unknown target: present"
else
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen's CLI must match the library version in Cargo.lock exactly.
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" = "$want" ]; then
  say "wasm-bindgen $want: present"
else
  say "installing wasm-bindgen-cli $want (a few minutes, once; --locked would pin an unserved crate)"
  cargo install wasm-bindgen-cli --version "$want"
fi

if [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  say "npm packages: present"
else
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
fi

if [ "$what" = build ]; then
  exit 0
fi

# lavapipe: the Vulkan driver the native WebGPU tests run on (no GPU on CI machines).
if ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 && ldconfig -p | grep -q libvulkan.so.1; then
  say "Vulkan (lavapipe): present"
else
  say "installing Vulkan for the WebGPU tests (apt: mesa-vulkan-drivers libvulkan1)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q mesa-vulkan-drivers libvulkan1
fi

# llvmpipe through EGL: the GL driver the native WebGL2-design tests run on.
if ldconfig -p | grep -q libEGL_mesa.so.0 && ldconfig -p | grep -q libGLESv2.so.2 && ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1; then
  say "GL (llvmpipe, EGL): present"
else
  say "installing GL for the WebGL2 tests (apt: libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri
fi

# Headless Chromium for the browser tests (WebGPU through SwiftShader); never `playwright install`.
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  say "chromium and chromedriver: present"
else
  say "installing chromium and its driver for the browser tests (apt: chromium chromium-driver fonts-liberation)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q chromium chromium-driver fonts-liberation
fi

