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
// which no compiler assuming no NaN can fold away; -0 keeps its square root.
fn gt_sqrt(x: f32) -> f32 {
    let negative = bitcast<u32>(x) > 0x80000000u;
    return select(sqrt(x), bitcast<f32>(0x7fc00000u | param(2u)), negative);
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
