// extent: per-lane [min, max] over all rows, NaN ignored, in two passes.
// codegen.rs fills the #...# markers: the fused elementwise prologue computing `vin` for
// `row`, the lane count, the element type (f32, i32 or u32), and the helper functions
// lo_identity, hi_identity, is_nan_value and nan_or_zero.
// Sections: shared helpers, the first pass, then the second (split on marker comments).
// Parameters: 0 rows, 1 workgroups of the first pass, 2 zero.

#IDENTITIES#

var<workgroup> shared_lo: array<#T#, 256>;
var<workgroup> shared_hi: array<#T#, 256>;

// Tree-reduces shared_lo/hi into element 0 (NaN never reaches them).
fn reduce_shared(t: u32) {
    for (var stride = 128u; stride > 0u; stride = stride >> 1u) {
        workgroupBarrier();
        if (t < stride) {
            let a = shared_lo[t + stride];
            let b = shared_hi[t + stride];
            if (a < shared_lo[t]) { shared_lo[t] = a; }
            if (b > shared_hi[t]) { shared_hi[t] = b; }
        }
    }
    workgroupBarrier();
}

// PARTIALS
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    var lo: array<#T#, #LANES#>;
    var hi: array<#T#, #LANES#>;
    for (var l = 0u; l < #LANES#u; l++) { lo[l] = lo_identity(); hi[l] = hi_identity(); }
    let step = param(1u) * 256u;
    for (var row = wid.x * 256u + lid.x; row < param(0u); row += step) {
#PROLOGUE#
        for (var l = 0u; l < #LANES#u; l++) {
            let v = vin[l];
            if (!is_nan_value(v)) {
                if (v < lo[l]) { lo[l] = v; }
                if (v > hi[l]) { hi[l] = v; }
            }
        }
    }
    for (var l = 0u; l < #LANES#u; l++) {
        shared_lo[lid.x] = lo[l];
        shared_hi[lid.x] = hi[l];
        reduce_shared(lid.x);
        if (lid.x == 0u) {
            out[(wid.x * #LANES#u + l) * 2u] = shared_lo[0];
            out[(wid.x * #LANES#u + l) * 2u + 1u] = shared_hi[0];
        }
    }
}
// FINAL
// Parameter 1: partial groups to fold.
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    for (var l = 0u; l < #LANES#u; l++) {
        var lo = lo_identity();
        var hi = hi_identity();
        for (var g = lid.x; g < param(1u); g += 256u) {
            let a = partials[(g * #LANES#u + l) * 2u];
            let b = partials[(g * #LANES#u + l) * 2u + 1u];
            if (a < lo) { lo = a; }
            if (b > hi) { hi = b; }
        }
        shared_lo[lid.x] = lo;
        shared_hi[lid.x] = hi;
        reduce_shared(lid.x);
        if (lid.x == 0u) {
            // A lane with only NaN was never updated: report NaN, as the CPU does.
            let empty = shared_lo[0] > shared_hi[0];
            out[l * 2u] = select(shared_lo[0], nan_or_zero(), empty);
            out[l * 2u + 1u] = select(shared_hi[0], nan_or_zero(), empty);
        }
    }
}
