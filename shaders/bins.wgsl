// Bin counts and integer bin sums on WebGPU (src/gpu/bins.rs): after the output is cleared
// (scatter.wgsl's `fill`), a dispatch per chunk adds each row to its bin with atomics.
// Integer sums wrap as the CPU's do: a two's-complement add is the same for int32 and
// uint32 words. Sections are split on their marker comments: the shared part, `count` or
// `sum` (what a row adds where), then `global` (an atomic add per row into the output) or
// `local` (a workgroup's rows into a table in workgroup memory, then its nonzero bins into
// the output: few bins would make every row's add contend for the same words).
// Parameters: 0 the chunk's rows, 1 invocations per grid row, 3 bins (2 is the prelude's 0).

@group(0) @binding(1) var<storage, read_write> bins_out: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> rows_in: array<u32>;

fn index_of(id: vec3<u32>) -> u32 {
    return id.y * param(1u) + id.x;
}

// SECTION count
// Row r's bin (ids of `bins` and more are in none) and what it adds there.
fn entry(r: u32) -> vec2<u32> {
    return vec2<u32>(rows_in[r], 1u);
}

// SECTION sum
fn entry(r: u32) -> vec2<u32> {
    return vec2<u32>(rows_in[2u * r], rows_in[2u * r + 1u]);
}

// SECTION global
@compute @workgroup_size(#THREADS#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let r = index_of(id);
    if (r >= param(0u)) { return; }
    let e = entry(r);
    if (e.x < param(3u) && e.y != 0u) { atomicAdd(&bins_out[e.x], e.y); }
}

// SECTION local
var<workgroup> table: array<atomic<u32>, #LOCAL_BINS#>;

@compute @workgroup_size(#THREADS#)
fn main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let bins = param(3u);
    for (var b = t; b < bins; b += #THREADS#u) { atomicStore(&table[b], 0u); }
    workgroupBarrier();
    // Grid rows are whole workgroups, so a workgroup's invocations share one block of rows.
    let first = index_of(id) / #THREADS#u * #BLOCK#u;
    for (var i = 0u; i < #ITEMS#u; i++) {
        let r = first + i * #THREADS#u + t;
        if (r < param(0u)) {
            let e = entry(r);
            if (e.x < bins && e.y != 0u) { atomicAdd(&table[e.x], e.y); }
        }
    }
    workgroupBarrier();
    for (var b = t; b < bins; b += #THREADS#u) {
        let added = atomicLoad(&table[b]);
        if (added != 0u) { atomicAdd(&bins_out[b], added); }
    }
}
