// Reductions on WebGPU: per-lane states folded over rows in two passes. src/wgsl/compute.rs
// fills the markers between hashes: the State struct and its functions (src/wgsl/reduce.rs),
// the lanes of the input row, the outputs per lane, the fused elementwise prologue that
// computes `vin` for `row` (narrow rows), or the load of lane `lane` at `row` (wide rows).
// Sections are split on their marker comments; each kernel takes the shared part and one.
// Parameters: 0 rows, 1 row groups of the first pass, 2 zero.

#STATE#

// SECTION rows
// First pass for narrow rows: each workgroup folds a grid-strided share of the rows,
// computing the fused prologue per row, then tree-combines its 256 states per lane.
var<workgroup> shared_state: array<State, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    var st: array<State, #LANES#>;
    for (var l = 0u; l < #LANES#u; l++) { st[l] = state_identity(); }
    let step = param(1u) * 256u;
    for (var row = wid.x * 256u + lid.x; row < param(0u); row += step) {
#PROLOGUE#
        for (var l = 0u; l < #LANES#u; l++) { st[l] = state_add(st[l], vin[l]); }
    }
    for (var l = 0u; l < #LANES#u; l++) {
        shared_state[lid.x] = st[l];
        for (var stride = 128u; stride > 0u; stride = stride >> 1u) {
            workgroupBarrier();
            if (lid.x < stride) {
                shared_state[lid.x] = state_combine(shared_state[lid.x], shared_state[lid.x + stride]);
            }
        }
        workgroupBarrier();
        if (lid.x == 0u) {
            partials[wid.x * #LANES#u + l] = shared_state[0];
        }
        workgroupBarrier();
    }
}
// SECTION lanes
// First pass for wide rows (a materialized input): invocation (lane, group) folds rows
// group, group + groups, ... of one lane, so a state per invocation stays small.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let lane = gid.x;
    if (lane >= #LANES#u) {
        return;
    }
    var st = state_identity();
    for (var row = gid.y; row < param(0u); row += param(1u)) {
        st = state_add(st, #LOAD#);
    }
    partials[gid.y * #LANES#u + lane] = st;
}
// SECTION final
// Second pass: each invocation combines one lane's partial states and writes its outputs.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let lane = gid.x + gid.y * param(3u);
    if (lane >= #LANES#u) {
        return;
    }
    var st = state_identity();
    for (var g = 0u; g < param(1u); g++) {
        st = state_combine(st, partials[g * #LANES#u + lane]);
    }
    for (var k = 0u; k < #OUTS#u; k++) {
        out[lane * #OUTS#u + k] = state_output(st, k);
    }
}
