// fround without f64: a float64 given as (low word, high word) to float32 `high`, rounded to
// nearest-even, and `low` = float32(value - high). Integer arithmetic only.

struct Fround {
    high: f32,
    low: f32,
}

// r * 2^e as a float32, rounded once to nearest-even (subnormals included): built from
// bits, since ldexp and int-to-float conversions need not round exactly.
fn gt_to_f32(r: u32, e: i32, negative: bool) -> f32 {
    let sign = select(0u, 0x80000000u, negative);
    if (r == 0u) {
        return bitcast<f32>(sign);
    }
    let width = i32(32u - countLeadingZeros(r));
    let biased = e + width - 1 + 127;
    // Bits of r below the float32 result's last place: 24 significant bits when normal,
    // down to 2^-149 when subnormal.
    var drop = width - 24;
    if (biased < 1) {
        drop = -(e + 149);
    }
    var kept: u32;
    if (drop <= 0) {
        kept = r << u32(-drop);
    } else if (drop >= 32) {
        kept = 0u;
    } else {
        let d = u32(drop);
        kept = r >> d;
        let rest = r & ((1u << d) - 1u);
        let half = 1u << (d - 1u);
        if (rest > half || (rest == half && (kept & 1u) == 1u)) { kept += 1u; }
    }
    if (biased < 1) {
        // Subnormal: the mantissa field is `kept` (a carry to 2^23 is the smallest normal).
        return bitcast<f32>(sign | kept);
    }
    // kept is in [2^23, 2^24]: adding it to the exponent field below carries correctly.
    return bitcast<f32>(sign | ((u32(biased - 1) << 23u) + kept));
}

fn gt_fround(lo: u32, hi: u32) -> Fround {
    let negative = (hi >> 31u) == 1u;
    let sign = hi & 0x80000000u;
    let e = (hi >> 20u) & 0x7ffu;
    let mh = hi & 0xfffffu;
    if (e == 0x7ffu) {
        // Infinity keeps its sign and NaN stays NaN; value - high is NaN for both.
        let special = bitcast<f32>(select(sign | 0x7f800000u, 0x7fc00000u, (mh | lo) != 0u));
        return Fround(special, bitcast<f32>(0x7fc00000u | param(2u)));
    }
    if (e == 0u) {
        // Zero or a float64 subnormal: both parts round to a zero of the value's sign.
        return Fround(bitcast<f32>(sign), bitcast<f32>(sign));
    }
    let exponent = i32(e) - 1023;          // value = 1.m * 2^exponent
    let m23 = (mh << 3u) | (lo >> 29u);     // the 23 mantissa bits a float32 keeps
    let rest = lo & 0x1fffffffu;            // the 29 bits it drops
    let biased = exponent + 127;
    if (biased >= 1) {
        let half = 0x10000000u;
        let up = select(0u, 1u, rest > half || (rest == half && (m23 & 1u) == 1u));
        // A carry out of the mantissa bumps the exponent; past 254 it is infinity.
        let bits = (u32(min(biased, 255)) << 23u) + m23 + up;
        let high = bitcast<f32>(sign | min(bits, 0x7f800000u));
        if (biased > 254 || bits >= 0x7f800000u) {
            return Fround(high, -high);
        }
        // value - high = (rest - up * 2^29) * 2^(exponent - 52), exactly; round it once.
        let residual = i32(rest) - i32(up << 29u);
        let low = gt_to_f32(u32(abs(residual)), exponent - 52, negative != (residual < 0));
        return Fround(high, low);
    }
    // A float32 subnormal (or zero): shift the 53-bit significand right by k >= 30 bits.
    let k = u32(29 + 1 - biased);
    let sig_hi = (1u << 20u) | mh;          // significand = sig_hi * 2^32 + lo
    var kept = 0u;
    var above_half = false;
    var at_half = false;
    if (k < 32u) {
        kept = (sig_hi << (32u - k)) | (lo >> k);
        let dropped = lo & ((1u << k) - 1u);
        let half = 1u << (k - 1u);
        above_half = dropped > half;
        at_half = dropped == half;
    } else if (k < 53u) {
        let s = k - 32u;
        kept = sig_hi >> s;
        let dropped_hi = sig_hi & ((1u << s) - 1u);
        // half = 2^(k-1) = 2^(s-1) * 2^32 when s >= 1, else 2^31 in the low word.
        if (s == 0u) {
            above_half = lo > 0x80000000u;
            at_half = lo == 0x80000000u;
        } else {
            let half_hi = 1u << (s - 1u);
            above_half = dropped_hi > half_hi || (dropped_hi == half_hi && lo != 0u);
            at_half = dropped_hi == half_hi && lo == 0u;
        }
    } else if (k == 53u) {
        // Everything is dropped; the significand is at least half of 2^53.
        above_half = (mh | lo) != 0u;
        at_half = (mh | lo) == 0u;
    }
    if (above_half || (at_half && (kept & 1u) == 1u)) { kept += 1u; }
    // The residual is below half the smallest subnormal: it rounds to zero.
    return Fround(bitcast<f32>(sign | kept), 0.0);
}
