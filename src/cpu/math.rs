//! float32 math for the CPU backend.
//!
//! `sin`/`cos` run branch-free over whole blocks so they vectorize: a Cody-Waite reduction
//! by pi/2 in f64 and fdlibm's float kernels (`k_sinf.c`, `k_cosf.c`) evaluated in f64,
//! which is how musl/fdlibm's `sinf` computes too, so results are within an ulp of libm.
//! Arguments outside the reduction's exact range (|x| >= 2^28, Inf, NaN) use libm.

// fdlibm's constants, quoted exactly as published.
#![allow(clippy::excessive_precision)]

use std::f64::consts::FRAC_2_PI;

/// pi/2 in two parts: the first has 25 significant bits, so `k * PIO2_1` is exact for k < 2^28.
const PIO2_1: f64 = 1.570_796_310_901_641_845_70e0;
const PIO2_1T: f64 = 1.589_325_477_352_819_669_16e-8;
const REDUCIBLE: f32 = 268_435_456.0; // 2^28

const S1: f64 = -0.166_666_666_416_265_235_595;
const S2: f64 = 0.008_333_329_385_889_463_175_6;
const S3: f64 = -0.000_198_393_348_360_966_317_347;
const S4: f64 = 0.000_002_718_311_493_989_821_906_4;
const C0: f64 = -0.499_999_997_251_031_003_120;
const C1: f64 = 0.041_666_623_323_739_063_189_4;
const C2: f64 = -0.001_388_676_377_460_992_946_92;
const C3: f64 = 0.000_024_390_448_796_277_409_065_4;

/// sin (or cos, with `shift` 1) of a reducible argument.
#[inline(always)]
fn sin_quadrant(x: f32, shift: f64) -> f32 {
    let x = x as f64;
    let k = (x * FRAC_2_PI).round_ties_even();
    let r = (x - k * PIO2_1) - k * PIO2_1T;
    let quadrant = k + shift;
    let q = quadrant - 4.0 * (quadrant * 0.25).floor();
    let r2 = r * r;
    let s = r + r * r2 * (S1 + r2 * (S2 + r2 * (S3 + r2 * S4)));
    let c = 1.0 + r2 * (C0 + r2 * (C1 + r2 * (C2 + r2 * C3)));
    let odd = q == 1.0 || q == 3.0;
    let value = if odd { c } else { s };
    let value = if q >= 2.0 { -value } else { value };
    // The reduction turns -0 into +0; sin(-0) is -0.
    (if x == 0.0 && shift == 0.0 { x } else { value }) as f32
}

#[inline(never)]
fn periodic(x: &[f32], out: &mut [f32], shift: f64, fallback: fn(f32) -> f32) {
    for (o, a) in out.iter_mut().zip(x) {
        *o = sin_quadrant(*a, shift);
    }
    for (o, a) in out.iter_mut().zip(x) {
        if !a.is_finite() || a.abs() >= REDUCIBLE {
            *o = fallback(*a);
        }
    }
}

pub fn sin_slice(x: &[f32], out: &mut [f32]) {
    periodic(x, out, 0.0, f32::sin);
}

pub fn cos_slice(x: &[f32], out: &mut [f32]) {
    periodic(x, out, 1.0, f32::cos);
}

pub fn pow(x: f32, y: f32) -> f32 {
    x.powf(y)
}
pub fn tan(x: f32) -> f32 {
    x.tan()
}
pub fn exp(x: f32) -> f32 {
    x.exp()
}
pub fn log(x: f32) -> f32 {
    x.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn sin_and_cos_stay_within_one_ulp_of_libm() {
        let mut inputs: Vec<f32> = (0..200_000)
            .map(|i| (i as f32 - 100_000.0) * 0.000_731)
            .collect();
        inputs.extend((0..2000).map(|i| (i as f32) * 1234.567));
        inputs.extend([
            0.0,
            -0.0,
            1e-30,
            f32::MIN_POSITIVE,
            3.0e8,
            1e30,
            f32::MAX,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        let mut s = vec![0.0; inputs.len()];
        let mut c = vec![0.0; inputs.len()];
        sin_slice(&inputs, &mut s);
        cos_slice(&inputs, &mut c);
        for (i, &x) in inputs.iter().enumerate() {
            let (es, ec) = ((x as f64).sin() as f32, (x as f64).cos() as f32);
            if es.is_nan() {
                assert!(s[i].is_nan() && c[i].is_nan(), "sin/cos({x})");
                continue;
            }
            assert!(
                ulps(s[i], es) <= 1 || (s[i] - es).abs() < 1e-12,
                "sin({x}) = {} vs {es}",
                s[i]
            );
            assert!(
                ulps(c[i], ec) <= 1 || (c[i] - ec).abs() < 1e-12,
                "cos({x}) = {} vs {ec}",
                c[i]
            );
        }
        assert_eq!(
            s[inputs.len() - 10 + 1].to_bits(),
            (-0.0f32).to_bits(),
            "sin(-0) is -0"
        );
    }
}
