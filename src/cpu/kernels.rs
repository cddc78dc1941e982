//! The CPU backend's inner loops over one block: flat slices, kept out of line so they
//! vectorize (simd128 in the wasm build).

use super::lane::Lane;
use super::math;
use crate::column::Elem;
use crate::dtype::Class;
use crate::ir::{BinaryOp, Predicate, UnaryOp};

/// `dst` row i = `src` row `ids[i]`, or zeros where the id is not a valid row.
#[inline(never)]
pub(super) fn gather_rows<I: Lane, S: Elem, T: Lane>(
    ids: &[I],
    src: &[S],
    rows: usize,
    lanes: usize,
    dst: &mut [T],
) {
    fn fixed<const N: usize, I: Lane, S: Elem, T: Lane>(
        ids: &[I],
        src: &[S],
        rows: usize,
        dst: &mut [T],
    ) {
        for (row, id) in dst.chunks_exact_mut(N).zip(ids) {
            match id.as_row(rows) {
                Some(r) => {
                    let from = &src[r * N..r * N + N];
                    for k in 0..N {
                        row[k] = T::from_elem(from[k]);
                    }
                }
                None => row.fill(T::default()),
            }
        }
    }
    match lanes {
        1 => fixed::<1, I, S, T>(ids, src, rows, dst),
        2 => fixed::<2, I, S, T>(ids, src, rows, dst),
        3 => fixed::<3, I, S, T>(ids, src, rows, dst),
        4 => fixed::<4, I, S, T>(ids, src, rows, dst),
        _ => {
            for (row, id) in dst.chunks_exact_mut(lanes).zip(ids) {
                match id.as_row(rows) {
                    Some(r) => {
                        for (o, v) in row.iter_mut().zip(&src[r * lanes..r * lanes + lanes]) {
                            *o = T::from_elem(*v);
                        }
                    }
                    None => row.fill(T::default()),
                }
            }
        }
    }
}

/// Writes rows of `width` values into lanes `offset..offset + width` of rows of `lanes`.
#[inline(never)]
pub(super) fn place_columns<T: Lane>(
    src: &[T],
    width: usize,
    dst: &mut [T],
    lanes: usize,
    offset: usize,
) {
    // A copy of unknown width is a memcpy call per row; fixed widths compile to moves.
    fn fixed<const W: usize, T: Lane>(src: &[T], dst: &mut [T], lanes: usize, offset: usize) {
        for (row, s) in dst.chunks_exact_mut(lanes).zip(src.chunks_exact(W)) {
            row[offset..offset + W].copy_from_slice(&s[..W]);
        }
    }
    match width {
        1 => fixed::<1, T>(src, dst, lanes, offset),
        2 => fixed::<2, T>(src, dst, lanes, offset),
        3 => fixed::<3, T>(src, dst, lanes, offset),
        4 => fixed::<4, T>(src, dst, lanes, offset),
        _ => {
            for (row, s) in dst.chunks_exact_mut(lanes).zip(src.chunks_exact(width)) {
                row[offset..offset + width].copy_from_slice(s);
            }
        }
    }
}

/// `out[r]` = sum over lanes of `x[r] * y[r]`, accumulated left to right in float32.
#[inline(never)]
pub(super) fn row_dot(x: &[f32], y: &[f32], width: usize, out: &mut [f32]) {
    fn fixed<const W: usize>(x: &[f32], y: &[f32], out: &mut [f32]) {
        for ((o, x), y) in out.iter_mut().zip(x.chunks_exact(W)).zip(y.chunks_exact(W)) {
            let mut sum = 0.0f32;
            for k in 0..W {
                sum += x[k] * y[k];
            }
            *o = sum;
        }
    }
    match width {
        1 => fixed::<1>(x, y, out),
        2 => fixed::<2>(x, y, out),
        3 => fixed::<3>(x, y, out),
        4 => fixed::<4>(x, y, out),
        _ => {
            for ((o, x), y) in out
                .iter_mut()
                .zip(x.chunks_exact(width))
                .zip(y.chunks_exact(width))
            {
                *o = x.iter().zip(y).fold(0.0f32, |sum, (a, b)| sum + a * b);
            }
        }
    }
}

#[inline(never)]
pub(super) fn sqrt_in_place(values: &mut [f32]) {
    for v in values.iter_mut() {
        *v = v.sqrt();
    }
}

/// `out[r]` = 1 if every lane of row r is equal in `x` and `y`, compared as exact values
/// (f64 holds every value of every type: NaN != NaN, -0 == 0).
#[inline(never)]
pub(super) fn equal_rows<A: Lane, B: Lane>(x: &[A], y: &[B], width: usize, out: &mut [u32]) {
    for ((o, x), y) in out
        .iter_mut()
        .zip(x.chunks_exact(width))
        .zip(y.chunks_exact(width))
    {
        let mut equal = true;
        for (p, q) in x.iter().zip(y) {
            equal &= p.to_f64() == q.to_f64();
        }
        *o = equal as u32;
    }
}

pub(super) fn u32_slice<T: Lane>(dst: &mut [T]) -> &mut [u32] {
    assert_eq!(T::CLASS, Class::U, "equalAll writes uint32 blocks");
    // T is u32 here (checked above).
    unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut u32, dst.len()) }
}

pub(super) fn f32_slice<T: Lane>(dst: &mut [T]) -> &mut [f32] {
    assert_eq!(T::CLASS, Class::F, "float ops write float32 blocks");
    // T is f32 here (checked above).
    unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut f32, dst.len()) }
}

// Kept out of line: inlined into `compute` these loops stop vectorizing.
#[inline(never)]
pub(super) fn binary<T: Lane>(op: BinaryOp, x: &[T], y: &[T], dst: &mut [T]) {
    match op {
        BinaryOp::Add => map2(dst, x, y, T::add),
        BinaryOp::Subtract => map2(dst, x, y, T::sub),
        BinaryOp::Multiply => map2(dst, x, y, T::mul),
        BinaryOp::Divide => map2(dst, x, y, T::div),
        // Plain loops: unrolled, these ops would add kilobytes to the wasm module for a
        // speed no benchmark asks of them yet.
        BinaryOp::Minimum => plain2(dst, x, y, T::minimum),
        BinaryOp::Maximum => plain2(dst, x, y, T::maximum),
        BinaryOp::Mod => plain2(dst, x, y, T::modulo),
        BinaryOp::Pow => {
            let (out, x, y) = (f32_slice(dst), as_f32(x), as_f32(y));
            map2(out, x, y, math::pow);
        }
    }
}

/// Elements per unrolled step: four 128-bit vectors, one loop-counter update.
pub(super) const UNROLL: usize = 16;

/// `dst[i] = f(x[i], y[i])`, unrolled so the wasm loop overhead is paid once per 16 values.
#[inline(always)]
fn map2<T: Copy, U: Copy, V: Copy>(dst: &mut [V], x: &[T], y: &[U], f: impl Fn(T, U) -> V) {
    let n = dst.len().min(x.len()).min(y.len());
    let (dst, x, y) = (&mut dst[..n], &x[..n], &y[..n]);
    let mut out = dst.chunks_exact_mut(UNROLL);
    let (mut xs, mut ys) = (x.chunks_exact(UNROLL), y.chunks_exact(UNROLL));
    for ((o, a), b) in (&mut out).zip(&mut xs).zip(&mut ys) {
        for k in 0..UNROLL {
            o[k] = f(a[k], b[k]);
        }
    }
    for ((o, a), b) in out
        .into_remainder()
        .iter_mut()
        .zip(xs.remainder())
        .zip(ys.remainder())
    {
        *o = f(*a, *b);
    }
}

/// `dst[i] = f(x[i], y[i])`, not unrolled.
#[inline(always)]
fn plain2<T: Copy, U: Copy, V: Copy>(dst: &mut [V], x: &[T], y: &[U], f: impl Fn(T, U) -> V) {
    for ((o, a), b) in dst.iter_mut().zip(x).zip(y) {
        *o = f(*a, *b);
    }
}

/// `dst[i] = f(x[i])`, not unrolled.
#[inline(always)]
fn plain1<T: Copy, V: Copy>(dst: &mut [V], x: &[T], f: impl Fn(T) -> V) {
    for (o, a) in dst.iter_mut().zip(x) {
        *o = f(*a);
    }
}

/// `dst[i] = f(x[i])`, unrolled like `map2`.
#[inline(always)]
fn map1<T: Copy, V: Copy>(dst: &mut [V], x: &[T], f: impl Fn(T) -> V) {
    let n = dst.len().min(x.len());
    let (dst, x) = (&mut dst[..n], &x[..n]);
    let mut out = dst.chunks_exact_mut(UNROLL);
    let mut xs = x.chunks_exact(UNROLL);
    for (o, a) in (&mut out).zip(&mut xs) {
        for k in 0..UNROLL {
            o[k] = f(a[k]);
        }
    }
    for (o, a) in out.into_remainder().iter_mut().zip(xs.remainder()) {
        *o = f(*a);
    }
}

fn as_f32<T: Lane>(x: &[T]) -> &[f32] {
    assert_eq!(T::CLASS, Class::F, "float ops read float32 blocks");
    unsafe { std::slice::from_raw_parts(x.as_ptr() as *const f32, x.len()) }
}

#[inline(never)]
pub(super) fn unary<T: Lane>(op: UnaryOp, x: &[T], dst: &mut [T]) {
    match op {
        UnaryOp::Abs => return map1(dst, x, T::abs),
        UnaryOp::Sign => return plain1(dst, x, T::sign),
        // Integers are their own floor.
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round
            if T::CLASS != Class::F =>
        {
            return dst.copy_from_slice(&x[..dst.len()]);
        }
        _ => {}
    }
    let (out, x) = (f32_slice(dst), as_f32(x));
    let f: fn(&[f32], &mut [f32]) = match op {
        UnaryOp::Sqrt => |x, o| map1(o, x, f32::sqrt),
        UnaryOp::Sin => math::sin_slice,
        UnaryOp::Cos => math::cos_slice,
        UnaryOp::Tan => |x, o| o.iter_mut().zip(x).for_each(|(o, a)| *o = math::tan(*a)),
        UnaryOp::Exp => |x, o| o.iter_mut().zip(x).for_each(|(o, a)| *o = math::exp(*a)),
        UnaryOp::Log => |x, o| o.iter_mut().zip(x).for_each(|(o, a)| *o = math::log(*a)),
        UnaryOp::Floor => |x, o| plain1(o, x, f32::floor),
        UnaryOp::Ceil => |x, o| plain1(o, x, f32::ceil),
        UnaryOp::Trunc => |x, o| plain1(o, x, f32::trunc),
        UnaryOp::Round => |x, o| plain1(o, x, f32::round_ties_even),
        UnaryOp::Abs | UnaryOp::Sign => unreachable!("handled above"),
    };
    f(x, out);
}

/// Lanes as f64 (exact for every type).
#[inline(never)]
pub(super) fn widen<A: Lane>(x: &[A], out: &mut [f64]) {
    for (o, a) in out.iter_mut().zip(x) {
        *o = a.to_f64();
    }
}

/// `out` = 1 where `predicate` holds for the lanes of `x` and `y`, of one class (exact) or
/// widened to f64 (exact for every pair of types): the predicate's table answers each of a
/// pair's orders (less, equal, greater, unordered) or its two truths, picked without
/// branches so the loop vectorizes.
#[inline(never)]
pub(super) fn compare<T: PartialOrd + Copy + Default>(
    predicate: Predicate,
    x: &[T],
    y: &[T],
    out: &mut [u32],
) {
    let [t0, t1, t2, t3] = predicate.table();
    let zero = T::default();
    let pairs = out.iter_mut().zip(x).zip(y);
    if predicate.is_logic() {
        for ((o, a), b) in pairs {
            let (a, b) = ((*a != zero) as u32, (*b != zero) as u32);
            *o = (!a & !b & 1 & t0) | (!a & b & t1) | (a & !b & 1 & t2) | (a & b & t3);
        }
    } else {
        for ((o, a), b) in pairs {
            let (less, equal, greater) = ((a < b) as u32, (a == b) as u32, (a > b) as u32);
            let unordered = 1 ^ (less | equal | greater);
            *o = (less & t0) | (equal & t1) | (greater & t2) | (unordered & t3);
        }
    }
}

/// `out` = 1 where the one-input `predicate` holds for the lane of `x`.
#[inline(never)]
pub(super) fn test<T: Lane>(predicate: Predicate, x: &[T], out: &mut [u32]) {
    let zero = T::default();
    let lanes = out.iter_mut().zip(x);
    match predicate {
        #[allow(clippy::eq_op)]
        Predicate::IsNaN => lanes.for_each(|(o, a)| *o = (a != a) as u32),
        // Infinities and NaN less themselves are NaN; integers (wrapping) give 0.
        Predicate::IsFinite => lanes.for_each(|(o, a)| *o = (a.sub(*a) == zero) as u32),
        _ => lanes.for_each(|(o, a)| *o = (*a == zero) as u32),
    }
}
