#!/usr/bin/env bash
# The native checks for a machine with a real GPU (issue 38), in two steps, because the GPU
# machines lent here have no Rust toolchain and reach no package registry:
#   bash scripts/gpu-check.sh build   here: builds the native suites and benchmarks into
#                                     .gpu-check/ (stripped, about 40 MB; git ignores it)
#   bash scripts/gpu-check.sh         there (carry .gpu-check): runs them on the GPU's Vulkan
#                                     (and EGL, if any) driver and writes one results file,
#                                     $OUT/gpu-check.md (./gpu-check.md without OUT)
# No browser and no Node. The run takes under 8 minutes on 16 cores; each step has a limit.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=.gpu-check

if [ "${1:-run}" = build ]; then
  set -e
  grep -qx "/$dir/" .git/info/exclude 2>/dev/null || echo "/$dir/" >> .git/info/exclude
  rm -rf "$dir" && mkdir -p "$dir"
  echo "[gpu-check] cargo: the native suites (test profile) and the benchmark (release)"
  # "Executable tests/cpu_suite.rs (target/debug/deps/cpu_suite-1a2b...)" per suite.
  tests=$(cargo test --no-run --test cpu_suite --test webgpu_suite --test webgl_suite 2>&1 |
    sed -n 's/^ *Executable tests\/\([a-z_]*\)\.rs (\(.*\))$/\1 \2/p')
  cargo build --release --quiet --example webgpu_native
  while read -r name path; do
    [ -n "$name" ] && strip -o "$dir/$name" "$path"
  done <<< "$tests"
  strip -o "$dir/webgpu_native" target/release/examples/webgpu_native
  git rev-parse --short HEAD > "$dir/commit"
  du -sh "$dir"
  exit 0
fi

out=${OUT:-.}/gpu-check.md
mkdir -p "$(dirname "$out")"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} RUST_BACKTRACE=1
# Mesa (a software try) needs float render targets named; NVIDIA's driver has them.
export MESA_EXTENSION_OVERRIDE=${MESA_EXTENSION_OVERRIDE:-+GL_ARB_color_buffer_float}
# A bare GPU machine may lack the Vulkan and EGL loaders: carried .debs in .gl are unpacked
# (the device tool's README says how to fetch them), and NVIDIA's driver files are named.
if [ -d .gl ] && ! ldconfig -p | grep -q libvulkan; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
nvidia=/usr/local/nvidia/share
[ -f $nvidia/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=${VK_DRIVER_FILES:-$nvidia/vulkan/icd.d/nvidia_icd.json}
[ -f $nvidia/glvnd/egl_vendor.d/10_nvidia.json ] && export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-$nvidia/glvnd/egl_vendor.d/10_nvidia.json}
[ -x "$dir/webgpu_native" ] || { echo "no $dir: run 'bash scripts/gpu-check.sh build' first (where cargo is) and carry $dir" >&2; exit 2; }

# `step NAME LIMIT COMMAND...`: the command's output (its last 150 lines) and exit status,
# a section of the results file each.
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  echo "[gpu-check] $name"
  timeout "$limit" "$@" > "$dir/step.log" 2>&1
  local rc=$?
  {
    echo
    echo "## $name: exit $rc in $((SECONDS - start)) s"
    echo '```'
    tail -n 150 "$dir/step.log"
    echo '```'
  } >> "$out"
  return 0
}

{
  echo "# gputable gpu-check at $(cat "$dir/commit"), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- machine: $(nproc) cores; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
  echo "- Vulkan loader: $(ldconfig -p 2>/dev/null | grep -c libvulkan) libvulkan entries; EGL: $(ldconfig -p 2>/dev/null | grep -c libEGL) libEGL entries"
} > "$out"

# The suites' own source-reading test needs the checkout they were built in.
skip=(--skip every_suite_test_is_registered)
step "WebGPU backend suite on Vulkan" 240 "$dir/webgpu_suite" "${skip[@]}" --test-threads 4
step "CPU backend suite" 120 "$dir/cpu_suite" "${skip[@]}"
step "WebGL2 design suite on GL (EGL)" 120 "$dir/webgl_suite" "${skip[@]}" --test-threads 4
# Elementwise and reductions (evaluate + readback and split), sorts of 4,096 (one block: a
# dispatch a key), 1M and 10M pairs timed to the device's end (4 bytes read), SpMV and COO to
# CSR of 10M entries.
# The sizes can be set smaller for a try on a software adapter.
step "native benchmarks" 240 env BENCH_GPU_ROWS="${BENCH_GPU_ROWS:-10000000}" \
  BENCH_SORT_PAIRS="${BENCH_SORT_PAIRS:-4096,1000000,10000000}" BENCH_SPARSE_ROWS="${BENCH_SPARSE_ROWS:-1000000}" \
  BENCH_SPARSE_ENTRIES="${BENCH_SPARSE_ENTRIES:-10000000}" "$dir/webgpu_native"
echo "[gpu-check] results: $out"
