// Shared by every generated gputable kernel.

struct Params {
    v: array<vec4<u32>, PARAM_VEC4S>,
}
@group(0) @binding(0) var<uniform> params: Params;

fn param(i: u32) -> u32 {
    return params.v[i >> 2u][i & 3u];
}

// 0.0 read at run time (parameter slot 2 is always 0): compilers may fold a literal 0.0
// under WGSL's no-Inf/NaN assumption, and x / 0 must stay ±Inf as on the CPU.
fn gt_zero() -> f32 {
    return bitcast<f32>(param(2u));
}

// 1.0 read at run time: float `a - b` and `a / b` are generated as `a - b * gt_one()` and
// `a / (b * gt_one())`, the same IEEE values, which no compiler can fold to 0 or 1 when a
// and b are the same value (x - x is NaN for an infinite x, as on the CPU).
fn gt_one() -> f32 {
    return bitcast<f32>(param(2u) | 0x3f800000u);
}

// An integer as the nearest float32, as the CPU converts it: WGSL lets `f32(x)` round either
// way (SwiftShader rounds a large uint32 down). The 16-bit halves convert exactly and one
// add rounds to nearest.
fn gt_f32_u(x: u32) -> f32 {
    return f32(x >> 16u) * 65536.0 + f32(x & 0xffffu);
}

fn gt_f32_i(x: i32) -> f32 {
    return f32(x >> 16u) * 65536.0 + f32(x & 0xffffi);
}

// Integer division by zero is 0 on every backend (WGSL alone would give the dividend), and
// i32 min / -1 wraps to i32 min. The divisor is made safe first: GLSL (the WebGL2 path)
// leaves both cases undefined, and a CPU driver's division instruction can trap on them.
fn gt_div_i(a: i32, b: i32) -> i32 {
    let wraps = b == -1i && a == (-2147483647i - 1i);
    let d = select(b, 1i, b == 0i || wraps);
    return select(a / d, 0i, b == 0i);
}

fn gt_div_u(a: u32, b: u32) -> u32 {
    return select(a / select(b, 1u, b == 0u), 0u, b == 0u);
}

// The square root of a number below zero is NaN, as on the CPU: WGSL leaves it
// indeterminate, and a GL driver (llvmpipe) gives -sqrt(|x|). The sign is read from the bits,
// which no compiler assuming no NaN can fold away; -0 keeps its square root. Positive normal
// numbers get the CPU's correctly rounded root where fma is fused: WGSL lets the builtin be
// ulps off (NVIDIA's is, and a float that becomes an index or integer then differs).
fn gt_sqrt(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if (bits > 0x80000000u) {
        return bitcast<f32>(0x7fc00000u | param(2u));
    }
    if (bits < 0x00800000u || bits >= 0x7f800000u || !gt_fma_fused()) {
        return sqrt(x);
    }
    // Scaled by 2^-+64 into [2^-62, 2^64), where no residual below is subnormal.
    var y = x;
    var scale = 1.0;
    if (bits < 0x21800000u) {
        y = x * 18446744073709551616.0;
        scale = 2.3283064365386963e-10;
    } else if (bits >= 0x5d800000u) {
        y = x * 5.421010862427522e-20;
        scale = 4294967296.0;
    }
    var q = sqrt(y);
    // q is right when -q u < y - q^2 <= q u (u its ulp; -q u / 2 below a power of two); a
    // builtin within three ulps takes at most three steps. y - q^2 is exact in one fma.
    for (var step = 0u; step < 3u; step++) {
        let q_bits = bitcast<u32>(q);
        let t = q * (bitcast<f32>(q_bits & 0x7f800000u) * 1.1920928955078125e-7);
        let d = fma(-q, q, y);
        let low = select(-t, -0.5 * t, (q_bits & 0x7fffffu) == 0u);
        if (d > t) {
            q = bitcast<f32>(q_bits + 1u);
        } else if (d <= low) {
            q = bitcast<f32>(q_bits - 1u);
        }
    }
    return q * scale;
}

// Whether fma rounds once (WGSL allows a * b + c): 1 + 2^-12 squared is 1 + 2^-11 + 2^-24,
// whose rounding loses exactly the 2^-24 a fused fma gives back.
fn gt_fma_fused() -> bool {
    let a = bitcast<f32>(0x3f800800u | param(2u));
    return fma(a, a, -(a * a)) != 0.0;
}

// `cast` of a float to an integer type whose integers are [lo, end): truncated toward zero;
// NaN (found by its bits) and values outside the range are 0, as on the CPU.
fn gt_cast_i32(x: f32, lo: f32, end: f32) -> i32 {
    let t = trunc(x);
    let nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
    return select(0i, i32(t), !nan && t >= lo && t < end);
}

fn gt_cast_u32(x: f32, lo: f32, end: f32) -> u32 {
    let t = trunc(x);
    let nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
    return select(0u, u32(t), !nan && t >= lo && t < end);
}
