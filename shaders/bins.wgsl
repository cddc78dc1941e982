// Bin counts and integer bin sums on WebGPU (src/gpu/bins.rs): after the bins are cleared
// (scatter.wgsl's `fill`), a dispatch per chunk task computes its rows with `entry` (the
// pass's fused nodes, generated: a row's bin and what it adds there) and adds each to its
// bin with atomics. Integer sums wrap as the CPU's do: a two's-complement add is the same
// for int32 and uint32 words. Sections are split on their marker comments: the shared
// part, then `global` (an atomic add per row into the output) or `local` (a workgroup's
// rows into a table in workgroup memory, then its nonzero bins into the output: few bins
// would make every row's add contend for the same words). Ids of `bins` and more are in
// no bin. Parameters: 0 the task's rows, 1 invocations per grid row, 3 bins (2 is the
// prelude's 0).

@group(0) @binding(1) var<storage, read_write> bins_out: array<atomic<u32>>;
fn index_of(id: vec3<u32>) -> u32 {
    return id.y * param(1u) + id.x;
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
