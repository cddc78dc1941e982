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

// |x| reduced by multiples of pi/2: the quadrant q (0..3) and the remainder z in
// [-pi/4, pi/4], with |x| = (4n + q) pi/2 + z.
struct Quadrant {
    q: u32,
    z: f32,
}

fn gt_reduce(ax: f32) -> Quadrant {
    // Cody-Waite: pi/2 in three parts; k times each of the first two is exact below 8192.
    let k = floor(ax * 0.636619772367581343 + 0.5);
    let z = ((ax - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.54978995489188216e-8;
    var r = Quadrant(u32(k) & 3u, z);
    if (ax >= 8192.0) {
        r = gt_reduce_far(ax);
    }
    return r;
}

// Word i of 2/pi after the binary point (its first 288 bits), after a zero word that stands
// for the bits before it. A switch, not an array: every invocation would set an array up,
// while this runs only for the arguments that need it.
fn gt_two_over_pi(i: u32) -> u32 {
    switch (i) {
        case 0u: { return 0u; }
        case 1u: { return 0xa2f9836eu; }
        case 2u: { return 0x4e441529u; }
        case 3u: { return 0xfc2757d1u; }
        case 4u: { return 0xf534ddc0u; }
        case 5u: { return 0xdb629599u; }
        case 6u: { return 0x3c439041u; }
        case 7u: { return 0xfe5163abu; }
        case 8u: { return 0xdebbc561u; }
        default: { return 0xb7246e3au; }
    }
}

// The 64-bit product of two u32 as (high, low).
fn gt_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), (mid << 16u) | (p00 & 0xffffu));
}

// Payne-Hanek reduction for any finite |x| >= 8192, in 32-bit integers (no f64 on GPUs):
// with |x| = m 2^s (m the 24-bit significand), |x| 2/pi mod 4 comes from m times the 96 bits
// of 2/pi from bit s - 1 on (earlier bits only add multiples of 4). The product's top two
// bits are the quadrant, the next 64 the fraction.
fn gt_reduce_far(ax: f32) -> Quadrant {
    let bits = bitcast<u32>(ax);
    let m = (bits & 0x7fffffu) | 0x800000u;
    // Stream position of bit s - 1 of 2/pi (s = exponent - 150), past the zero word.
    let position = (bits >> 23u) - 150u + 30u;
    let r = position & 31u;
    let back = (32u - r) & 31u;
    let carry = select(0xffffffffu, 0u, r == 0u);
    // The low 96 bits of m times the three words from there, accumulated high word first.
    // The loop's bound is read at run time: a loop compilers cannot unroll keeps them from
    // hoisting this rare path into every invocation.
    var p0 = 0u;
    var p1 = 0u;
    var p2 = 0u;
    for (var k = 0u; k < 3u + param(2u); k++) {
        let i = (position >> 5u) + k;
        let w = (gt_two_over_pi(i) << r) | ((gt_two_over_pi(i + 1u) >> back) & carry);
        let product = gt_mul_wide(m, w);
        let sum = p0 + product.x;
        p2 = p1 + select(0u, 1u, sum < p0);
        p1 = sum;
        p0 = product.y;
    }
    var q = p2 >> 30u;
    var high = (p2 << 2u) | (p1 >> 30u);
    var low = (p1 << 2u) | (p0 >> 30u);
    var negative = false;
    if (high >= 0x80000000u) {
        // A fraction of at least a half rounds up to the next quadrant: z = fraction - 1.
        q = q + 1u;
        negative = true;
        high = ~high;
        low = ~low + 1u;
        high = high + select(0u, 1u, low == 0u);
    }
    let fraction = f32(high >> 8u) * 5.9604644775390625e-8
        + f32(((high & 0xffu) << 24u) | (low >> 8u)) * 1.3877787807814457e-17;
    let z = fraction * 1.57079632679489662;
    return Quadrant(q & 3u, select(z, -z, negative));
}

fn gt_sin_poly(z: f32) -> f32 {
    let zz = z * z;
    return ((-1.9515295891e-4 * zz + 8.3321608736e-3) * zz - 1.6666654611e-1) * zz * z + z;
}

fn gt_cos_poly(z: f32) -> f32 {
    let zz = z * z;
    return ((2.443315711809948e-5 * zz - 1.388731625493765e-3) * zz + 4.166664568298827e-2) * zz * zz - 0.5 * zz + 1.0;
}

// sin, cos and tan compute every argument the same way and fix NaN, infinities and -0 up at
// the end: early returns make every invocation pay for the branches on some GPUs.
fn gt_sin(x: f32) -> f32 {
    let r = gt_reduce(abs(x));
    // sin(z + q pi/2): sin z, cos z, -sin z, -cos z.
    var y = select(gt_sin_poly(r.z), gt_cos_poly(r.z), (r.q & 1u) == 1u);
    y = select(y, -y, (r.q >= 2u) != (x < 0.0));
    // sin(-0) is -0; sin of NaN or an infinity is NaN.
    return select(select(y, x, x == 0.0), gt_nan(), !gt_is_finite(x));
}

fn gt_cos(x: f32) -> f32 {
    let r = gt_reduce(abs(x));
    // cos(z + q pi/2): cos z, -sin z, -cos z, sin z.
    let y = select(gt_cos_poly(r.z), gt_sin_poly(r.z), (r.q & 1u) == 1u);
    return select(select(y, -y, r.q == 1u || r.q == 2u), gt_nan(), !gt_is_finite(x));
}

fn gt_tan(x: f32) -> f32 {
    let r = gt_reduce(abs(x));
    let z = r.z;
    let zz = z * z;
    let p = (((((9.38540185543e-3 * zz + 3.11992232697e-3) * zz + 2.44301354525e-2) * zz + 5.34112807005e-2) * zz
        + 1.33387994085e-1) * zz + 3.33331568548e-1) * zz * z + z;
    var y = select(z, p, abs(z) > 1.0e-4);
    // tan(z + q pi/2): tan z for even q, -1 / tan z for odd q.
    y = select(y, -1.0 / y, (r.q & 1u) == 1u);
    y = select(y, -y, x < 0.0);
    return select(select(y, x, x == 0.0), gt_nan(), !gt_is_finite(x));
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
    return (gt_ln1p_small(m) + -2.12194440e-4 * e) + 0.693359375 * e;
}

// ln(1 + m) for m in [sqrt(1/2) - 1, sqrt(2) - 1]: Cephes logf's polynomial, accurate
// relative to m near 0 (where the builtin log2 is only absolutely accurate).
fn gt_ln1p_small(m: f32) -> f32 {
    let z = m * m;
    let y = ((((((((7.0376836292e-2 * m - 1.1514610310e-1) * m + 1.1676998740e-1) * m - 1.2420140846e-1) * m
        + 1.4249322787e-1) * m - 1.6668057665e-1) * m + 2.0000714765e-1) * m - 2.4999993993e-1) * m
        + 3.3333331174e-1) * m * z;
    return m + (y - 0.5 * z);
}

// C's powf, special values by bits (compilers may assume no Inf/NaN): y = 0 or x = 1 give
// 1 (NaN included), other NaN gives NaN, 0 and infinities by sign and parity of y, a negative
// x needs an integer y. Otherwise |x|^y = 2^(n + r) with n whole and |r| <= 1/2, computed
// from log2 |x| = k + log2 f (f in [sqrt(1/2), sqrt(2))) with y k split so it is exact:
// precise near 1 and at the ends of the range, and subnormal results are built from bits,
// as GPUs flush subnormals to zero.
fn gt_pow(x: f32, y: f32) -> f32 {
    let xb = bitcast<u32>(x);
    let yb = bitcast<u32>(y);
    let ax = xb & 0x7fffffffu;
    let ay = yb & 0x7fffffffu;
    let zero_bits = param(2u);
    if (ay == 0u || xb == 0x3f800000u) {
        return bitcast<f32>(zero_bits | 0x3f800000u);
    }
    if (ax > 0x7f800000u || ay > 0x7f800000u) {
        return bitcast<f32>(zero_bits | 0x7fc00000u);
    }
    let y_positive = (yb >> 31u) == 0u;
    if (ay == 0x7f800000u) {
        if (ax == 0x3f800000u) {
            return bitcast<f32>(zero_bits | 0x3f800000u);
        }
        // |x| > 1 grows to infinity with y = +Inf and vanishes with -Inf; |x| < 1 the reverse.
        let infinite = (ax > 0x3f800000u) == y_positive;
        return bitcast<f32>(zero_bits | select(0u, 0x7f800000u, infinite));
    }
    // Whether y is an integer, and odd, from its bits (a subnormal y may read as 0 on GPUs):
    // with y = s 2^(e - 23), s the 24-bit significand, the units bit is s >> (23 - e).
    let e_y = i32(ay >> 23u) - 127i;
    let s_y = (ay & 0x7fffffu) | 0x800000u;
    let shift = u32(clamp(23i - e_y, 0i, 31i));
    let integer = e_y >= 23i || (e_y >= 0i && (s_y & ((1u << shift) - 1u)) == 0u);
    let odd = integer && e_y <= 23i && ((s_y >> shift) & 1u) == 1u;
    let negative = (xb >> 31u) == 1u;
    let sign = select(0u, 0x80000000u, negative && odd);
    if (ax == 0u || ax == 0x7f800000u) {
        // 0^y is 0 for y > 0 and infinite for y < 0; infinity the reverse.
        let infinite = (ax == 0u) != y_positive;
        return bitcast<f32>(zero_bits | sign | select(0u, 0x7f800000u, infinite));
    }
    if (negative && !integer) {
        return bitcast<f32>(zero_bits | 0x7fc00000u);
    }
    // |x| = 2^k f; a subnormal is its bits (an exact float) times 2^-149.
    var bits = ax;
    var k = -127i;
    if (ax < 0x00800000u) {
        bits = bitcast<u32>(f32(ax));
        k = -127i - 149i;
    }
    k = k + i32(bits >> 23u);
    var f = bitcast<f32>((bits & 0x7fffffu) | 0x3f800000u);
    if (f > 1.41421356) {
        f = f * 0.5;
        k = k + 1i;
    }
    let log_f = gt_ln1p_small(f - 1.0) * 1.44269504088896341;
    // Far outside the range, the result is 0 or infinite by the sign of y log2 |x|.
    let rough = y * (f32(k) + log_f);
    if (rough > 140.0) {
        return bitcast<f32>(zero_bits | sign | 0x7f800000u);
    }
    if (rough < -160.0) {
        return bitcast<f32>(zero_bits | sign);
    }
    // y k exactly: y's top 12 bits times k, and the rest times k (k has at most 9 bits).
    let y_high = bitcast<f32>(yb & 0xfffff000u);
    let y_low = y - y_high;
    let yk_high = y_high * f32(k);
    var n = round(yk_high);
    var r = ((yk_high - n) + y_low * f32(k)) + y * log_f;
    let whole = round(r);
    n = n + whole;
    r = r - whole;
    let p = gt_exp2_small(r);
    var magnitude: u32;
    if (n + r < -126.0) {
        // A subnormal result, from its bits: 2^(n + r + 149) rounded.
        magnitude = u32(round(p * gt_pow2(i32(n) + 149i)));
    } else {
        let half = i32(n) / 2i;
        magnitude = bitcast<u32>(p * gt_pow2(half) * gt_pow2(i32(n) - half));
    }
    return bitcast<f32>(zero_bits | sign | magnitude);
}

// 2^r for |r| <= 1/2: Cephes exp2f's polynomial. The builtin exp2 may be ulps off (NVIDIA's
// gives 1 for 2^-8.6e-8, and FLT_MAX^1 overflowed).
fn gt_exp2_small(r: f32) -> f32 {
    return 1.0 + r * (((((1.535336188319500e-4 * r + 1.339887440266574e-3) * r + 9.618437357674640e-3) * r
        + 5.550332471162809e-2) * r + 2.402264791363012e-1) * r + 6.931472028550421e-1);
}
