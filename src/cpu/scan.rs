//! Scans on the CPU: a scan's `GroupFold` levels and its `ScanApply` (ir/scan.rs). A
//! block's first row starts from its groups' folds at each level; later rows run on from
//! the row before. One-lane columns stored whole run a loop written for their fold (a float
//! sum eight rows at a time in simd128 lanes): float sums come out in an order api.md allows,
//! as `sum`'s.

use super::lane::Lane;
use super::rows::StoredRows;
use crate::dtype::Class;
use crate::ir::{scan_digits, ScanFold, SCAN_FAN_IN};

/// `fold`'s value with no row folded in: NaN for a float minimum or maximum, which folds
/// skip (NaN rows are skipped; a fold of none is NaN).
fn identity<T: Lane>(fold: ScanFold) -> T {
    match (fold, T::CLASS) {
        (ScanFold::Sum, _) => T::default(),
        (ScanFold::Prod, _) => T::from_elem(1i32),
        (ScanFold::Min | ScanFold::Max, Class::F) => T::from_elem(f32::NAN),
        (ScanFold::Min, Class::I) => T::from_elem(i32::MAX),
        (ScanFold::Min, Class::U) => T::from_elem(u32::MAX),
        (ScanFold::Max, Class::I) => T::from_elem(i32::MIN),
        (ScanFold::Max, Class::U) => T::from_elem(0u32),
    }
}

/// `v` folded into `acc` (a minimum or maximum skips NaN: a NaN `acc` is none yet).
#[inline(always)]
fn combine<T: Lane>(fold: ScanFold, acc: T, v: T) -> T {
    #[allow(clippy::eq_op)]
    let none_yet = acc != acc;
    match fold {
        ScanFold::Sum => acc.add(v),
        ScanFold::Prod => acc.mul(v),
        ScanFold::Min if none_yet => v,
        ScanFold::Max if none_yet => v,
        ScanFold::Min => acc.fold_min(v),
        ScanFold::Max => acc.fold_max(v),
    }
}

/// Rows `first..` of `GroupFold` of `x`: each the fold of `SCAN_FAN_IN` consecutive rows.
pub(super) fn group_folds<T: Lane>(
    fold: ScanFold,
    x: &StoredRows<T>,
    first: usize,
    lanes: usize,
    dst: &mut [T],
) {
    let fan_in = SCAN_FAN_IN as usize;
    let rows = x.rows();
    if let (Some(values), 1) = (x.contiguous(), lanes) {
        if fold == ScanFold::Sum {
            return group_sums(&values[(first * fan_in).min(rows)..], dst);
        }
        for (j, out) in dst.iter_mut().enumerate() {
            let start = ((first + j) * fan_in).min(rows);
            let group = &values[start..(start + fan_in).min(rows)];
            *out = group
                .iter()
                .fold(identity(fold), |acc, v| combine(fold, acc, *v));
        }
        return;
    }
    for (j, out) in dst.chunks_exact_mut(lanes).enumerate() {
        out.fill(identity(fold));
        let start = (first + j) * fan_in;
        for r in start..(start + fan_in).min(rows) {
            for (o, v) in out.iter_mut().zip(x.row(r)) {
                *o = combine(fold, *o, *v);
            }
        }
    }
}

/// A scan's fold, and whether each row folds itself in.
#[derive(Clone, Copy)]
pub(super) struct Scan {
    pub fold: ScanFold,
    pub inclusive: bool,
}

/// Rows `first..` of `ScanApply`: the block's first row folds, at each level (the scanned
/// column `x`, of the 32-bit type of its class, then its group folds `levels`), the rows of
/// its group before it; each later row runs on from the row before (one read each; for
/// float sums and products an order api.md allows, as `sum`'s). Inclusive rows fold
/// themselves in too.
pub(super) fn scan_rows<T: Lane>(
    scan: Scan,
    x: &StoredRows<T>,
    levels: &[StoredRows<T>],
    first: usize,
    lanes: usize,
    dst: &mut [T],
) {
    let fold = scan.fold;
    let rows = dst.len() / lanes;
    if rows == 0 {
        return;
    }
    let mut before: Vec<T> = vec![identity(fold); lanes];
    let mut digits = scan_digits(first as u64, levels.len() + 1);
    if let Some((start, digit)) = digits.next() {
        for r in start as usize..start as usize + digit as usize {
            for (b, v) in before.iter_mut().zip(x.row(r)) {
                *b = combine(fold, *b, *v);
            }
        }
    }
    for (level, (start, digit)) in levels.iter().zip(digits) {
        for r in start as usize..start as usize + digit as usize {
            for (b, v) in before.iter_mut().zip(level.row(r)) {
                *b = combine(fold, *b, *v);
            }
        }
    }
    if let (Some(values), 1) = (x.contiguous(), lanes) {
        let (acc, values) = (before[0], &values[first..first + rows]);
        match fold {
            ScanFold::Sum => sums(acc, values, dst, scan.inclusive),
            _ => run_on(acc, values, dst, scan.inclusive, |a, v| combine(fold, a, v)),
        }
        return;
    }
    for i in 0..rows {
        let row = x.row(first + i);
        let out = &mut dst[i * lanes..(i + 1) * lanes];
        for ((o, b), v) in out.iter_mut().zip(before.iter_mut()).zip(row) {
            let next = combine(fold, *b, *v);
            *o = if scan.inclusive { next } else { *b };
            *b = next;
        }
    }
}

/// The sums of consecutive groups of `SCAN_FAN_IN` rows of `values` (a shorter last
/// group, then none): a whole group as four running sums (vectorized), added pairwise.
fn group_sums<T: Lane>(values: &[T], dst: &mut [T]) {
    const FAN_IN: usize = SCAN_FAN_IN as usize;
    let mut groups = values.chunks(FAN_IN);
    for out in dst.iter_mut() {
        *out = match groups.next() {
            Some(group) if group.len() == FAN_IN => {
                let mut sums = [T::default(); 4];
                for quad in group.chunks_exact(4) {
                    for (s, v) in sums.iter_mut().zip(quad) {
                        *s = s.add(*v);
                    }
                }
                sums[0].add(sums[1]).add(sums[2].add(sums[3]))
            }
            Some(group) => group.iter().fold(T::default(), |a, v| a.add(*v)),
            None => T::default(),
        };
    }
}

/// `dst[i]` = `acc` run on by `step` over `values[..=i]` (inclusive) or `values[..i]`.
#[inline(always)]
fn run_on<T: Lane>(
    mut acc: T,
    values: &[T],
    dst: &mut [T],
    inclusive: bool,
    step: impl Fn(T, T) -> T,
) {
    if inclusive {
        for (o, v) in dst.iter_mut().zip(values) {
            acc = step(acc, *v);
            *o = acc;
        }
    } else {
        for (o, v) in dst.iter_mut().zip(values) {
            *o = acc;
            acc = step(acc, *v);
        }
    }
}

/// Running sums from `acc`: floats eight rows at a time where simd128 is on (one dependent
/// add per eight rows, not per row).
fn sums<T: Lane>(acc: T, values: &[T], dst: &mut [T], inclusive: bool) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if T::CLASS == Class::F {
        // SAFETY: the float class's lane type is f32.
        let (values, dst) = unsafe {
            (
                std::slice::from_raw_parts(values.as_ptr() as *const f32, values.len()),
                std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut f32, dst.len()),
            )
        };
        let acc = f32::from_elem(acc);
        return f32_sums(acc, values, dst, inclusive);
    }
    run_on(acc, values, dst, inclusive, T::add)
}

/// Running float sums eight rows at a time: each quad's sums within it (two shifted adds),
/// the second quad's moved on by the first's total, then the sum of the rows before added
/// to both: one dependent add per eight rows.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn f32_sums(acc: f32, values: &[f32], dst: &mut [f32], inclusive: bool) {
    use core::arch::wasm32::*;
    let n = values.len().min(dst.len());
    let octs = n / 8;
    let zero = f32x4_splat(0.0);
    let within = |v: v128| {
        let s = f32x4_add(v, i32x4_shuffle::<4, 0, 1, 2>(v, zero));
        f32x4_add(s, i32x4_shuffle::<4, 5, 0, 1>(s, zero))
    };
    let mut carry = f32x4_splat(acc);
    for q in 0..octs {
        // SAFETY: rows 8q..8q + 8 lie within both slices (q < n / 8); v128 loads and
        // stores need no alignment.
        let (low, high) = unsafe {
            let at = values.as_ptr().add(8 * q) as *const v128;
            (within(v128_load(at)), within(v128_load(at.add(1))))
        };
        let high = f32x4_add(high, i32x4_shuffle::<3, 3, 3, 3>(low, low));
        let (low_out, high_out) = match inclusive {
            true => (f32x4_add(low, carry), f32x4_add(high, carry)),
            false => {
                let low_before = i32x4_shuffle::<4, 0, 1, 2>(low, zero);
                let high_before = i32x4_shuffle::<3, 4, 5, 6>(low, high);
                (f32x4_add(low_before, carry), f32x4_add(high_before, carry))
            }
        };
        unsafe {
            let at = dst.as_mut_ptr().add(8 * q) as *mut v128;
            v128_store(at, low_out);
            v128_store(at.add(1), high_out);
        }
        let total = f32x4_add(high, carry);
        carry = i32x4_shuffle::<3, 3, 3, 3>(total, total);
    }
    let acc = f32x4_extract_lane::<0>(carry);
    let tail = 8 * octs..n;
    run_on(
        acc,
        &values[tail.clone()],
        &mut dst[tail],
        inclusive,
        |a, v| a + v,
    );
}
