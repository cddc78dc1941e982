// Reductions on WebGPU: per-lane states folded over rows, then combined in rounds.
// src/wgsl/compute.rs fills the markers between hashes: the State struct and its functions
// (src/wgsl/reduce.rs), the lanes of the input row, the outputs per lane, the fused
// elementwise prologue that computes `vin` for `row` (narrow rows) or the load of lane
// `lane` at `row` (wide rows), and whether that lane of that row counts (its validity).
// Sections are split on their marker comments; each kernel takes the shared part and one.
// Parameter 2 is always zero (see `state_functions`).

#STATE#

// SECTION rows
// First pass for narrow rows: each workgroup folds a grid-strided share of the rows,
// computing the fused prologue per row, then combines its 256 states per lane in two steps
// of 16 (three barriers, whatever the lanes: software GPUs run barriers slowly).
// Parameters: 0 rows, 1 workgroups, 3 the first row's index in the reduced column.
var<workgroup> shared_state: array<State, #SHARED#>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    var st: array<State, #LANES#>;
    for (var l = 0u; l < #LANES#u; l++) { st[l] = state_identity(); }
    let step = param(1u) * 256u;
    for (var row = wid.x * 256u + lid.x; row < param(0u); row += step) {
#PROLOGUE#
        for (var l = 0u; l < #LANES#u; l++) {
            if (#VALID#) { st[l] = state_add(st[l], vin[l], i32(row + param(3u))); }
        }
    }
    for (var l = 0u; l < #LANES#u; l++) { shared_state[lid.x * #LANES#u + l] = st[l]; }
    workgroupBarrier();
    // Invocation (group, lane) combines states group * 16 .. + 16 of its lane.
    let group = lid.x / #LANES#u;
    let lane = lid.x % #LANES#u;
    var combined = state_identity();
    if (group < 16u) {
        for (var k = 0u; k < 16u; k++) {
            combined = state_combine(combined, shared_state[(group * 16u + k) * #LANES#u + lane]);
        }
    }
    workgroupBarrier();
    if (group < 16u) { shared_state[group * #LANES#u + lane] = combined; }
    workgroupBarrier();
    if (lid.x < #LANES#u) {
        var total = state_identity();
        for (var g = 0u; g < 16u; g++) {
            total = state_combine(total, shared_state[g * #LANES#u + lid.x]);
        }
        partials[wid.x * #LANES#u + lid.x] = total;
    }
}
// SECTION lanes
// First pass for wide rows (a materialized input): invocation (lane, group) folds rows
// group, group + groups, ... of one lane, so a state per invocation stays small.
// Parameters: 0 rows, 1 row groups, 3 the first row's index in the reduced column.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let lane = gid.x;
    if (lane >= #LANES#u) {
        return;
    }
    var st = state_identity();
    for (var row = gid.y; row < param(0u); row += param(1u)) {
        if (#VALID#) { st = state_add(st, #LOAD#, i32(row + param(3u))); }
    }
    partials[gid.y * #LANES#u + lane] = st;
}
// SECTION combine
// A combine round: state j of each lane folds input states j * every .. (in order) and is
// stored as state `base + j` of the output. Parameters: 0 input states per lane, 1 every,
// 3 invocations per dispatch row, 4 base.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x + gid.y * param(3u);
    let j = index / #LANES#u;
    let lane = index % #LANES#u;
    if (j * param(1u) >= param(0u)) {
        return;
    }
    var st = state_identity();
    let end = min(j * param(1u) + param(1u), param(0u));
    for (var p = j * param(1u); p < end; p++) {
        st = state_combine(st, states_in[p * #LANES#u + lane]);
    }
    states_out[(param(4u) + j) * #LANES#u + lane] = st;
}
// SECTION final
// The output: each invocation finalizes one lane's state. Parameter 3: invocations per
// dispatch row.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let lane = gid.x + gid.y * param(3u);
    if (lane >= #LANES#u) {
        return;
    }
    for (var k = 0u; k < #OUTS#u; k++) {
        out[lane * #OUTS#u + k] = state_output(states_in[lane], k);
    }
}
