// Scatter on WebGPU (src/gpu/scatter.rs): the output set to 0, then each chunk task writes
// row i of `values` (or its row number in the scatter's input) to row destinations[i] of
// the output. Values move as their 32-bit words, whatever their type. Sections are split
// on their marker comments; `fill` takes the shared part and its own, a scatter the shared
// part, `scatter` or `row_numbers`, then `write`. Parameters: 0 rows, 1 invocations per grid
// row, 2 the task's first row in the input, 3 the rows of the output part written, 4 the
// part's first row in the output (parts each fit one binding).

@group(0) @binding(1) var<storage, read_write> out: array<u32>;

fn row_of(id: vec3<u32>) -> u32 {
    return id.y * param(1u) + id.x;
}

// SECTION fill
@compute @workgroup_size(#WORKGROUP#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = row_of(id);
    if (i < param(0u)) { out[i] = 0u; }
}

// SECTION scatter
@group(0) @binding(3) var<storage, read> values: array<u32>;

fn value(i: u32) -> u32 {
    return values[i];
}

// SECTION row_numbers
fn value(i: u32) -> u32 {
    return param(2u) + i;
}

// SECTION write
@group(0) @binding(2) var<storage, read> destinations: array<u32>;

@compute @workgroup_size(#WORKGROUP#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = row_of(id);
    if (i >= param(0u)) { return; }
    let d = destinations[i];
    if (d >= param(4u) && d - param(4u) < param(3u)) { out[d - param(4u)] = value(i); }
}
