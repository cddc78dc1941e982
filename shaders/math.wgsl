// float32 sin, cos, tan, exp and log with the accuracy the CPU backend promises (1e-5
// relative), independent of the GPU's builtins (WGSL only bounds sin/cos to 2^-11 absolute
// inside [-pi, pi]). Cephes' float algorithms: Cody-Waite reduction, minimax polynomials.
// Arguments are checked by bits, since compilers may assume no Inf/NaN.

fn gt_is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn gt_nan() -> f32 {
    return bitcast<f32>(0x7fc00000u | param(2u));
}

fn gt_inf(negative: bool) -> f32 {
    return bitcast<f32>(select(0x7f800000u, 0xff800000u, negative) | param(2u));
}

// x reduced by multiples of pi/4: the octant j (0..7, even) and the remainder z.
struct Octant {
    j: u32,
    z: f32,
}

fn gt_octant(ax: f32) -> Octant {
    var j = u32(ax * 1.27323954473516);
    var y = f32(j);
    if ((j & 1u) == 1u) {
        j += 1u;
        y += 1.0;
    }
    let z = ((ax - y * 0.78515625) - y * 2.4187564849853515625e-4) - y * 3.77489497744594108e-8;
    return Octant(j & 7u, z);
}

fn gt_sin_poly(z: f32) -> f32 {
    let zz = z * z;
    return ((-1.9515295891e-4 * zz + 8.3321608736e-3) * zz - 1.6666654611e-1) * zz * z + z;
}

fn gt_cos_poly(z: f32) -> f32 {
    let zz = z * z;
    return ((2.443315711809948e-5 * zz - 1.388731625493765e-3) * zz + 4.166664568298827e-2) * zz * zz - 0.5 * zz + 1.0;
}

fn gt_sin(x: f32) -> f32 {
    if (!gt_is_finite(x)) {
        return gt_nan();
    }
    let o = gt_octant(abs(x));
    var j = o.j;
    var negative = x < 0.0;
    if (j > 3u) {
        negative = !negative;
        j -= 4u;
    }
    let y = select(gt_sin_poly(o.z), gt_cos_poly(o.z), j == 2u);
    // sin(-0) is -0: the polynomial keeps z's sign, and z = |x| here.
    if (x == 0.0) {
        return x;
    }
    return select(y, -y, negative);
}

fn gt_cos(x: f32) -> f32 {
    if (!gt_is_finite(x)) {
        return gt_nan();
    }
    let o = gt_octant(abs(x));
    var j = o.j;
    var negative = false;
    if (j > 3u) {
        negative = true;
        j -= 4u;
    }
    if (j > 1u) {
        negative = !negative;
    }
    let y = select(gt_cos_poly(o.z), gt_sin_poly(o.z), j == 2u);
    return select(y, -y, negative);
}

fn gt_tan(x: f32) -> f32 {
    if (!gt_is_finite(x)) {
        return gt_nan();
    }
    let o = gt_octant(abs(x));
    let z = o.z;
    let zz = z * z;
    var y = z;
    if (abs(z) > 1.0e-4) {
        y = (((((9.38540185543e-3 * zz + 3.11992232697e-3) * zz + 2.44301354525e-2) * zz + 5.34112807005e-2) * zz
            + 1.33387994085e-1) * zz + 3.33331568548e-1) * zz * z + z;
    }
    if ((o.j & 2u) == 2u) {
        y = -1.0 / y;
    }
    if (x == 0.0) {
        return x;
    }
    return select(y, -y, x < 0.0);
}

fn gt_exp(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return gt_nan();
    }
    if (x > 88.72283905206835) {
        return gt_inf(false);
    }
    if (x < -103.972084) {
        return 0.0;
    }
    let n = floor(1.44269504088896341 * x + 0.5);
    let r = (x - n * 0.693359375) - n * -2.12194440e-4;
    let rr = r * r;
    let p = ((((( 1.9875691500e-4 * r + 1.3981999507e-3) * r + 8.3334519073e-3) * r + 4.1665795894e-2) * r
        + 1.6666665459e-1) * r + 5.0000001201e-1) * rr + r + 1.0;
    // Two steps so 2^n never overflows on its own near the ends of the range; powers of two
    // built from bits, as GLSL ES 3.0 (WebGL2) has no ldexp.
    let k = i32(n);
    return (p * gt_pow2(k / 2)) * gt_pow2(k - k / 2);
}

// 2^k for -126 <= k <= 127.
fn gt_pow2(k: i32) -> f32 {
    return bitcast<f32>(u32(k + 127) << 23u);
}

fn gt_log(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u || (bits > 0x80000000u)) {
        return gt_nan(); // NaN, or below zero
    }
    if ((bits & 0x7fffffffu) == 0u) {
        return gt_inf(true);
    }
    if (bits == 0x7f800000u) {
        return x;
    }
    // x = m * 2^e with m in [0.5, 1), from the bits: GLSL ES 3.0 (WebGL2) has no frexp.
    var v = x;
    var adjust = 0i;
    if ((bits & 0x7f800000u) == 0u) {
        v = x * 8388608.0; // subnormal: scale by 2^23 into the normal range
        adjust = -23i;
    }
    let vbits = bitcast<u32>(v);
    var m = bitcast<f32>((vbits & 0x007fffffu) | 0x3f000000u);
    var e = f32(i32((vbits >> 23u) & 0xffu) - 126i + adjust);
    if (m < 0.707106781186547524) {
        e -= 1.0;
        m = m + m - 1.0;
    } else {
        m = m - 1.0;
    }
    let z = m * m;
    var y = ((((((((7.0376836292e-2 * m - 1.1514610310e-1) * m + 1.1676998740e-1) * m - 1.2420140846e-1) * m
        + 1.4249322787e-1) * m - 1.6668057665e-1) * m + 2.0000714765e-1) * m - 2.4999993993e-1) * m
        + 3.3333331174e-1) * m * z;
    y += -2.12194440e-4 * e;
    y += -0.5 * z;
    return (m + y) + 0.693359375 * e;
}
