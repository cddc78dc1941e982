//! `extent` on the CPU: a per-lane [min, max] fold over blocks.

use super::append_block;
use super::lane::{Buf, Lane};
use crate::column::{try_vec, ColumnData};
use crate::dtype::Class;
use crate::error::Result;

/// Per-lane min/max fold for `extent`, over blocks of row-major values.
pub(super) struct ExtentAcc {
    lanes: usize,
    min: Buf,
    max: Buf,
}

/// Rows folded per step: a multiple of every lane count's period keeps the loop flat.
const EXTENT_UNROLL: usize = 16;

impl ExtentAcc {
    pub(super) fn new(class: Class, lanes: usize) -> Result<ExtentAcc> {
        // Wide rows fold one row per step: 16 rows of 10,000 lanes would be a large buffer.
        let width = if lanes <= 64 {
            lanes * EXTENT_UNROLL
        } else {
            lanes
        };
        let fill = |min: bool| -> Result<Buf> {
            dispatch_class!(class, T => {
                let mut buf = Buf::try_new(class, width)?;
                T::of_mut(&mut buf).fill(if min { T::MIN_IDENTITY } else { T::MAX_IDENTITY });
                Ok(buf)
            })
        };
        Ok(ExtentAcc {
            lanes,
            min: fill(true)?,
            max: fill(false)?,
        })
    }

    #[inline(never)]
    pub(super) fn fold<T: Lane>(&mut self, values: &[T]) {
        let (min, max) = (T::of_mut(&mut self.min), T::of_mut(&mut self.max));
        let width = min.len();
        let mut chunks = values.chunks_exact(width);
        for chunk in &mut chunks {
            for ((lo, hi), v) in min.iter_mut().zip(max.iter_mut()).zip(chunk) {
                *lo = lo.fold_min(*v);
                *hi = hi.fold_max(*v);
            }
        }
        for (i, v) in chunks.remainder().iter().enumerate() {
            min[i] = min[i].fold_min(*v);
            max[i] = max[i].fold_max(*v);
        }
    }

    pub(super) fn store(self, out: &mut ColumnData) -> Result<()> {
        let lanes = self.lanes;
        fn reduce<T: Lane>(min: &[T], max: &[T], lanes: usize) -> Result<Vec<T>> {
            let mut result = try_vec(lanes * 2, "an extent")?;
            for lane in 0..lanes {
                let lo = min
                    .iter()
                    .skip(lane)
                    .step_by(lanes)
                    .fold(T::MIN_IDENTITY, |a, b| a.fold_min(*b));
                let hi = max
                    .iter()
                    .skip(lane)
                    .step_by(lanes)
                    .fold(T::MAX_IDENTITY, |a, b| a.fold_max(*b));
                if lo > hi {
                    // Only NaN in this channel: nothing replaced the identities.
                    result.push(T::from_elem(f32::NAN));
                    result.push(T::from_elem(f32::NAN));
                } else {
                    result.push(lo);
                    result.push(hi);
                }
            }
            Ok(result)
        }
        let result = match (&self.min, &self.max) {
            (Buf::F(lo), Buf::F(hi)) => Buf::F(reduce(lo, hi, lanes)?),
            (Buf::I(lo), Buf::I(hi)) => Buf::I(reduce(lo, hi, lanes)?),
            (Buf::U(lo), Buf::U(hi)) => Buf::U(reduce(lo, hi, lanes)?),
            _ => unreachable!("min and max share a class"),
        };
        append_block(&result, out, lanes * 2);
        Ok(())
    }
}
