//! Scans on the CPU: `Op::Scan` walked as one loop over the chunks in order (the GPUs'
//! `GroupFold` levels and `ScanApply` are never composed here). One-lane columns run a loop
//! written for their fold (a float sum eight rows at a time in simd128 lanes): float sums
//! come out in an order api.md allows, as `sum`'s.

use std::rc::Rc;

use super::lane::Lane;
use super::{internal, CpuDevice};
use crate::dtype::{Class, DType};
use crate::engine::DeviceModel;
use crate::error::Result;
use crate::ir::{Node, Op, ScanFold};
use crate::memory::Home;
use crate::value::Value;

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

/// A whole scan (`Op::Scan`, of `root`'s 32-bit type) of its input's stored chunks, in
/// order, each written to an output chunk of its own, the fold carried from one to the next.
pub(super) fn scan_whole(
    device: &CpuDevice,
    home: &Home,
    root: &Node,
    input: &[Rc<Value>],
) -> Result<Vec<Value>> {
    let Op::Scan { fold, inclusive } = root.op else {
        return Err(internal("not a scan"));
    };
    fn typed<T: Lane>(
        device: &CpuDevice,
        home: &Home,
        (fold, inclusive): (ScanFold, bool),
        root: &Node,
        input: &[Rc<Value>],
    ) -> Result<Vec<Value>> {
        let lanes = root.meta.size as usize;
        let mut acc = crate::column::try_vec(lanes, "scan states")?;
        acc.resize(lanes, identity::<T>(fold));
        let mut chunks = Vec::with_capacity(input.len());
        for value in input {
            let column = (value.host_column())
                .ok_or_else(|| internal("a scan's input is not a host column"))?;
            let values =
                T::of_data(&column.data).ok_or_else(|| internal("a scan reads its own type"))?;
            let mut lease = device.take(home, root.meta.dtype, values.len())?;
            let out = lease.get_mut();
            let dst = T::of_column(&mut out.data)
                .ok_or_else(|| internal("a scan writes its own type"))?;
            // Within the capacity `take` made room for: no allocation.
            dst.resize(values.len(), T::default());
            if let ([start], [.., last]) = (&mut acc[..], values) {
                match fold {
                    ScanFold::Sum => sums(*start, values, dst, inclusive),
                    _ => run_on(*start, values, dst, inclusive, |a, v| combine(fold, a, v)),
                }
                if let Some(&written) = dst.last() {
                    *start = match inclusive {
                        true => written,
                        false => combine(fold, written, *last),
                    };
                }
            } else if lanes > 1 {
                for (row, out) in values.chunks_exact(lanes).zip(dst.chunks_exact_mut(lanes)) {
                    for ((o, b), v) in out.iter_mut().zip(acc.iter_mut()).zip(row) {
                        let next = combine(fold, *b, *v);
                        *o = if inclusive { next } else { *b };
                        *b = next;
                    }
                }
            }
            out.size = column.size;
            out.rows = column.rows;
            chunks.push(Value::from_host_lease(device.core().id, lease));
        }
        Ok(chunks)
    }
    let how = (fold, inclusive);
    match root.meta.dtype {
        DType::F32 => typed::<f32>(device, home, how, root, input),
        DType::I32 => typed::<i32>(device, home, how, root, input),
        DType::U32 => typed::<u32>(device, home, how, root, input),
        _ => Err(internal("a scan reads its class's 32-bit type")),
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
