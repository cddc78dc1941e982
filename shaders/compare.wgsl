// Comparisons, minimum/maximum, mod, floor, ceil and sign with api.md's rules: values
// compare exactly across types, NaN is unordered. Floats are compared by their bits: compilers
// may assume no NaN, and GPUs may flush subnormals to zero (WGSL allows it, llvmpipe does).

fn gt_nan_bits(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn gt_finite_bits(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn gt_quiet_nan() -> f32 {
    return bitcast<f32>(0x7fc00000u | param(2u));
}

// Order codes: 0 less, 1 equal, 2 greater, 3 unordered (a NaN). Each comparison is one
// test of a code (`<= 1u` is less or equal), so a call is made once.
fn gt_ord_uu(a: u32, b: u32) -> u32 {
    return select(select(1u, 2u, a > b), 0u, a < b);
}

fn gt_ord_ii(a: i32, b: i32) -> u32 {
    return select(select(1u, 2u, a > b), 0u, a < b);
}

fn gt_subnormal(x: f32) -> bool {
    let bits = bitcast<u32>(x);
    return (bits & 0x7f800000u) == 0u && (bits & 0x7fffffu) != 0u;
}

// A float's bits as a u32 ordered like its value (-0 as +0), for a non-NaN float.
fn gt_float_key(x: f32) -> u32 {
    var bits = bitcast<u32>(x);
    bits = select(bits, 0u, (bits << 1u) == 0u);
    return select(bits | 0x80000000u, ~bits, (bits >> 31u) == 1u);
}

// A float's search key: `gt_float_key`, and NaN (of either sign) past every number, as a
// sorted column holds it. Keys compare as the floats do where neither is NaN.
fn gt_search_key(x: f32) -> u32 {
    return select(gt_float_key(x), 0xffffffffu, gt_nan_bits(x));
}

fn gt_ord_ff(a: f32, b: f32) -> u32 {
    if (gt_nan_bits(a) || gt_nan_bits(b)) {
        return 3u;
    }
    return gt_ord_uu(gt_float_key(a), gt_float_key(b));
}

// A subnormal as ±0.5, which every integer orders the same way.
fn gt_unflushed(x: f32) -> f32 {
    return select(x, select(0.5, -0.5, (bitcast<u32>(x) >> 31u) == 1u), gt_subnormal(x));
}

fn gt_ord_iu(a: i32, b: u32) -> u32 {
    if (a < 0i) {
        return 0u;
    }
    return gt_ord_uu(bitcast<u32>(a), b);
}

// A float against an integer whose nearest float is `near` (WGSL lets `f32(b)` round either
// way: a float on either side of it is on the same side of b): its order, or 4u for an equal
// float, an integer the caller compares as one (`limit`, 2^31 or 2^32, only when b rounded
// up to it).
fn gt_ord_f_near(x: f32, near: f32, limit: f32) -> u32 {
    if (gt_nan_bits(x)) {
        return 3u;
    }
    let a = gt_unflushed(x);
    if (a != near) {
        return select(2u, 0u, a < near);
    }
    return select(4u, 2u, a >= limit);
}

fn gt_ord_fi(a: f32, b: i32) -> u32 {
    let o = gt_ord_f_near(a, f32(b), 2147483648.0);
    return select(o, gt_ord_ii(i32(a), b), o == 4u);
}

fn gt_ord_fu(a: f32, b: u32) -> u32 {
    let o = gt_ord_f_near(a, f32(b), 4294967296.0);
    return select(o, gt_ord_uu(u32(a), b), o == 4u);
}

// b against a: less and greater swap, equal and unordered stay.
fn gt_ord_swap(o: u32) -> u32 {
    return select(2u - o, 3u, o == 3u);
}

fn gt_ord_ui(a: u32, b: i32) -> u32 {
    return gt_ord_swap(gt_ord_iu(b, a));
}

fn gt_ord_if(a: i32, b: f32) -> u32 {
    return gt_ord_swap(gt_ord_fi(b, a));
}

fn gt_ord_uf(a: u32, b: f32) -> u32 {
    return gt_ord_swap(gt_ord_fu(b, a));
}

// NaN if either is NaN (as Math.min); -0 is below +0.
fn gt_min_f(a: f32, b: f32) -> f32 {
    if (gt_nan_bits(a) || gt_nan_bits(b)) {
        return gt_quiet_nan();
    }
    let ka = gt_float_key(a);
    let kb = gt_float_key(b);
    if (ka != kb) {
        return select(b, a, ka < kb);
    }
    return bitcast<f32>(bitcast<u32>(a) | bitcast<u32>(b));
}

fn gt_max_f(a: f32, b: f32) -> f32 {
    if (gt_nan_bits(a) || gt_nan_bits(b)) {
        return gt_quiet_nan();
    }
    let ka = gt_float_key(a);
    let kb = gt_float_key(b);
    if (ka != kb) {
        return select(b, a, ka > kb);
    }
    return bitcast<f32>(bitcast<u32>(a) & bitcast<u32>(b));
}

// The exact remainder of x / y truncated (C's fmodf; musl's algorithm on the bits): WGSL's
// float % is x - y * trunc(x / y), which is not exact.
fn gt_fmod(x: f32, y: f32) -> f32 {
    var ux = bitcast<u32>(x);
    var uy = bitcast<u32>(y);
    var ex = i32((ux >> 23u) & 0xffu);
    var ey = i32((uy >> 23u) & 0xffu);
    let sx = ux & 0x80000000u;
    if ((uy << 1u) == 0u || gt_nan_bits(y) || ex == 0xff) {
        return gt_quiet_nan();
    }
    if ((ux << 1u) <= (uy << 1u)) {
        if ((ux << 1u) == (uy << 1u)) {
            return bitcast<f32>(sx);
        }
        return x;
    }
    // Mantissas with their leading 1 at bit 23 (subnormals shifted up, exponents below 1).
    if (ex == 0) {
        var i = ux << 9u;
        while ((i >> 31u) == 0u) {
            ex -= 1;
            i = i << 1u;
        }
        ux = ux << u32(1 - ex);
    } else {
        ux = (ux & 0x7fffffu) | 0x800000u;
    }
    if (ey == 0) {
        var i = uy << 9u;
        while ((i >> 31u) == 0u) {
            ey -= 1;
            i = i << 1u;
        }
        uy = uy << u32(1 - ey);
    } else {
        uy = (uy & 0x7fffffu) | 0x800000u;
    }
    for (; ex > ey; ex -= 1) {
        let i = ux - uy;
        if ((i >> 31u) == 0u) {
            if (i == 0u) {
                return bitcast<f32>(sx);
            }
            ux = i;
        }
        ux = ux << 1u;
    }
    let i = ux - uy;
    if ((i >> 31u) == 0u) {
        if (i == 0u) {
            return bitcast<f32>(sx);
        }
        ux = i;
    }
    while ((ux >> 23u) == 0u) {
        ux = ux << 1u;
        ex -= 1;
    }
    if (ex > 0) {
        ux = (ux - 0x800000u) | (u32(ex) << 23u);
    } else {
        ux = ux >> u32(1 - ex);
    }
    return bitcast<f32>(ux | sx);
}

// NumPy's mod: the truncated remainder moved by one divisor to take b's sign; a zero
// remainder takes b's sign too.
fn gt_mod_f(a: f32, b: f32) -> f32 {
    let r = gt_fmod(a, b);
    if (gt_nan_bits(r)) {
        return r;
    }
    let b_sign = bitcast<u32>(b) & 0x80000000u;
    if ((bitcast<u32>(r) << 1u) == 0u) {
        return bitcast<f32>(b_sign);
    }
    if ((bitcast<u32>(r) & 0x80000000u) != b_sign) {
        return r + b;
    }
    return r;
}

// Integer mod by 0 is 0. Magnitudes are divided as u32: GLSL (the WebGL2 path) leaves % of
// negative operands undefined, and i32 min % -1 can trap.
fn gt_mod_i(a: i32, b: i32) -> i32 {
    if (b == 0i) {
        return 0i;
    }
    let ua = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0i);
    let ub = select(bitcast<u32>(b), 0u - bitcast<u32>(b), b < 0i);
    let m = bitcast<i32>(ua % ub);
    let r = select(m, -m, a < 0i);
    return select(r, r + b, r != 0i && ((r < 0i) != (b < 0i)));
}

fn gt_mod_u(a: u32, b: u32) -> u32 {
    return select(a % select(b, 1u, b == 0u), 0u, b == 0u);
}

// -1, 0 or 1; NaN stays NaN, -0 gives +0 (NumPy's sign).
fn gt_sign_f(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if (gt_nan_bits(x)) {
        return x;
    }
    if ((bits << 1u) == 0u) {
        return 0.0;
    }
    return select(1.0, -1.0, (bits >> 31u) == 1u);
}

// floor and ceil of a subnormal (a flushing GPU would take it for 0).
fn gt_floor_f(x: f32) -> f32 {
    if (gt_subnormal(x)) {
        return select(0.0, -1.0, (bitcast<u32>(x) >> 31u) == 1u);
    }
    return floor(x);
}

fn gt_ceil_f(x: f32) -> f32 {
    if (gt_subnormal(x)) {
        return select(1.0, -0.0, (bitcast<u32>(x) >> 31u) == 1u);
    }
    return ceil(x);
}

// A scan's minimum and maximum: NaN rows are skipped, and a NaN running value is no row yet.
fn gt_scan_min_f(a: f32, b: f32) -> f32 {
    if (gt_nan_bits(a)) {
        return b;
    }
    return select(gt_min_f(a, b), a, gt_nan_bits(b));
}

fn gt_scan_max_f(a: f32, b: f32) -> f32 {
    if (gt_nan_bits(a)) {
        return b;
    }
    return select(gt_max_f(a, b), a, gt_nan_bits(b));
}

// A float's sort key: its value's order (-0 as +0), inverted where descending; NaN after
// every number either way.
fn gt_sort_key_f(x: f32, descending: bool) -> u32 {
    if (gt_nan_bits(x)) {
        return 0xffffffffu;
    }
    let key = gt_float_key(x);
    return select(key, ~key, descending);
}
