// Scatter on WebGPU (src/gpu/scatter.rs): the output set to 0, then each chunk task writes
// row i of `values` (or its row number in the scatter's input) to row destinations[i] of
// the output. Values move as their 32-bit words, whatever their type. Sections are split
// on their marker comments; `fill` and `compact` take the shared part and their own, a
// scatter the shared part, `scatter` or `row_numbers`, then `write`. Parameters: 0 rows, 1
// invocations per grid row, 2 the task's first row in the input, 3 the rows of the output
// part written, 4 the part's first row in the output (parts each fit one binding).

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

// SECTION compact
// A compaction of at most one block of flags (`Op::Compact`; src/gpu/scatter.rs) in one
// workgroup: each invocation counts the kept rows of its run of #ITEMS# flags, a scan over
// the workgroup gives each run its first place, and each run writes its kept rows' numbers
// there and u32::MAX to its rows at or past the count. Binding 2: the flags (a word a row).
@group(0) @binding(2) var<storage, read> flags: array<u32>;

const THREADS: u32 = #WORKGROUP#u;
const ITEMS: u32 = #ITEMS#u;
// Kept rows of the runs up to each invocation's (an inclusive scan).
var<workgroup> kept_through: array<u32, THREADS>;

@compute @workgroup_size(THREADS)
fn main(@builtin(local_invocation_index) t: u32) {
    let first = t * ITEMS;
    let end = min(first + ITEMS, param(0u));
    var kept = 0u;
    for (var i = first; i < end; i++) {
        kept += u32(flags[i] != 0u);
    }
    kept_through[t] = kept;
    workgroupBarrier();
    for (var d = 1u; d < THREADS; d <<= 1u) {
        var earlier = 0u;
        if (t >= d) {
            earlier = kept_through[t - d];
        }
        workgroupBarrier();
        kept_through[t] += earlier;
        workgroupBarrier();
    }
    let total = kept_through[THREADS - 1u];
    var at = kept_through[t] - kept;
    for (var i = first; i < end; i++) {
        if (flags[i] != 0u) {
            out[at] = i;
            at += 1u;
        }
        if (i >= total) {
            out[i] = 0xffffffffu;
        }
    }
}
