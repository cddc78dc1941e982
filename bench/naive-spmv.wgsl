// The one-thread-per-row CSR SpMV a user would write: W6's WebGPU peer, shared by the
// browser bench (sparse-workloads.js) and the native one (native_sparse.rs).
@group(0) @binding(0) var<storage, read> ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col: array<u32>;
@group(0) @binding(2) var<storage, read> val: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let row = id.x + id.y * groups.x * 64u;
  if (row >= arrayLength(&y)) { return; }
  var sum = 0.0;
  for (var k = ptr[row]; k < ptr[row + 1u]; k++) { sum += val[k] * x[col[k]]; }
  y[row] = sum;
}
