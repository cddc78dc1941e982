// Bin counts and integer bin sums on WebGPU (src/gpu/bins.rs): after the bins are cleared
// (scatter.wgsl's `fill`), a dispatch per chunk task computes its rows with `entry` (the
// pass's fused nodes, generated: a row's bin and what it adds there) and adds each to its
// bin with atomics. Integer sums wrap as the CPU's do: a two's-complement add is the same
// for int32 and uint32 words. Sections are split on their marker comments: the shared
// part, `adds`, then `global` (an atomic add per row into the output), `local` (a
// workgroup's rows into a table in workgroup memory, then its nonzero bins into the output:
// few bins would make every row's add contend for the same words) or `float` (float sums in
// integer words, `float_finish` rounding them after). Ids of `bins` and more are in no bin. Parameters: 0 the task's rows, 1 invocations per grid row, 3 bins (2 is the
// prelude's 0).

fn index_of(id: vec3<u32>) -> u32 {
    return id.y * param(1u) + id.x;
}

// SECTION adds
@group(0) @binding(1) var<storage, read_write> bins_out: array<atomic<u32>>;

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

// SECTION float
// Float sums, exactly: per bin a sum of the positive values and one of the negative ones,
// FLOAT_WORDS words each counting units of 2^-149 (every float32, and 2^32 of them, fit),
// then a word of flags (1 NaN, 2 +inf, 4 -inf). A value's 24-bit significand is added at its
// exponent's bit, into one word or two, carries moved up by further atomic adds: integer
// adds commute, so every order of the rows gives the same sums, and the output rounds them
// once (the `float_finish` kernel).
const FLOAT_WORDS: u32 = #FLOAT_WORDS#u;
const BIN_WORDS: u32 = #BIN_WORDS#u;

// `x` added at word `word` of the sum at `base`, and each carry at the word above.
fn add_at(base: u32, word: u32, x: u32) {
    var w = word;
    var v = x;
    loop {
        if (v == 0u || w >= FLOAT_WORDS) { break; }
        let old = atomicAdd(&bins_out[base + w], v);
        v = select(0u, 1u, old + v < old);
        w += 1u;
    }
}

fn add_float(bin: u32, bits: u32) {
    let base = bin * BIN_WORDS;
    let exponent = (bits >> 23u) & 0xffu;
    let fraction = bits & 0x7fffffu;
    let negative = (bits >> 31u) == 1u;
    if (exponent == 0xffu) {
        let flag = select(select(2u, 4u, negative), 1u, fraction != 0u);
        atomicOr(&bins_out[base + 2u * FLOAT_WORDS], flag);
        return;
    }
    let significand = select(fraction | 0x800000u, fraction, exponent == 0u);
    // The bit of the significand's lowest bit, counted from 2^-149.
    let offset = max(exponent, 1u) - 1u;
    let sum = base + select(0u, FLOAT_WORDS, negative);
    let shift = offset % 32u;
    add_at(sum, offset / 32u, significand << shift);
    if (shift > 8u) {
        add_at(sum, offset / 32u + 1u, significand >> (32u - shift));
    }
}

@compute @workgroup_size(#THREADS#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let r = index_of(id);
    if (r >= param(0u)) { return; }
    let e = entry(r);
    if (e.x < param(3u)) { add_float(e.x, e.y); }
}

// SECTION float_finish
// Each bin's float32: its flags' NaN or infinity, else the positive sum less the negative
// one rounded to float32 (to nearest, ties to even; past the largest float, infinity).
// Parameter 0: the bins.
const FLOAT_WORDS: u32 = #FLOAT_WORDS#u;
const BIN_WORDS: u32 = #BIN_WORDS#u;

@group(0) @binding(1) var<storage, read_write> sums_out: array<u32>;
@group(0) @binding(2) var<storage, read> sums_in: array<u32>;

@compute @workgroup_size(#THREADS#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let b = index_of(id);
    if (b >= param(0u)) { return; }
    let base = b * BIN_WORDS;
    let flags = sums_in[base + 2u * FLOAT_WORDS];
    if ((flags & 1u) != 0u || (flags & 6u) == 6u) { sums_out[b] = 0x7fc00000u; return; }
    if (flags != 0u) { sums_out[b] = select(0xff800000u, 0x7f800000u, flags == 2u); return; }
    // d = positive - negative, then its magnitude and sign.
    var d: array<u32, FLOAT_WORDS>;
    var borrow = 0u;
    for (var w = 0u; w < FLOAT_WORDS; w++) {
        let p = sums_in[base + w];
        let n = sums_in[base + FLOAT_WORDS + w];
        d[w] = p - n - borrow;
        borrow = select(0u, 1u, p < n || (p == n && borrow == 1u));
    }
    let negative = borrow == 1u;
    if (negative) {
        var carry = 1u;
        for (var w = 0u; w < FLOAT_WORDS; w++) {
            let v = ~d[w] + carry;
            carry = select(0u, 1u, carry == 1u && v == 0u);
            d[w] = v;
        }
    }
    var top = -1;
    for (var w = i32(FLOAT_WORDS) - 1; w >= 0; w--) {
        if (d[w] != 0u) {
            top = w * 32 + 31 - i32(countLeadingZeros(d[w]));
            break;
        }
    }
    var bits = 0u;
    if (top >= 0 && top <= 23) {
        // Below 2^-125: the units are the float's own bits (subnormal or the least exponent).
        bits = d[0];
    } else if (top > 23) {
        // 24 bits from the top one, the guard bit below them, and whether any lower is set.
        let guard_bit = u32(top - 24);
        let w = guard_bit / 32u;
        let s = guard_bit % 32u;
        var window = d[w] >> s;
        if (s > 0u && w + 1u < FLOAT_WORDS) { window = window | (d[w + 1u] << (32u - s)); }
        var sticky = (d[w] & ((1u << s) - 1u)) != 0u;
        for (var k = 0u; k < w; k++) { sticky = sticky || d[k] != 0u; }
        let significand = (window >> 1u) & 0xffffffu;
        let guard = (window & 1u) == 1u;
        let up = guard && (sticky || (significand & 1u) == 1u);
        // The exponent field is the shift plus one; the significand's leading bit adds it.
        bits = (u32(top - 23) << 23u) + significand + select(0u, 1u, up);
        bits = min(bits, 0x7f800000u);
    }
    sums_out[b] = bits | select(0u, 0x80000000u, negative);
}
