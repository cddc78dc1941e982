//! Bin counts and sums on the CPU (`Op::BinCount`, `Op::BinSum`): one walk over the ids
//! with a counter (a sum) per bin (WebGPU adds them with atomics, src/gpu/bins.rs; WebGL2
//! sorts the ids and searches each bin's first row).

use std::rc::Rc;

use super::{internal, CpuDevice};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::engine::DeviceModel;
use crate::error::Result;
use crate::ir::Node;
use crate::memory::Home;
use crate::value::Value;

/// Bins up to this many are counted in four tables at once (summed after): a run of equal
/// ids then makes four chains of increments, not one.
const SPLIT_TABLE_BINS: usize = 1 << 12;

/// Row b: the rows of the uint32 `ids` (their chunks) holding b, for b below `bins`.
pub(super) fn bin_count(
    device: &CpuDevice,
    home: &Home,
    ids: &[Rc<Value>],
    bins: u32,
) -> Result<Value> {
    let bins = bins as usize;
    let mut lease = device.take(home, DType::U32, bins)?;
    let column = lease.get_mut();
    let ColumnData::U32(counts) = &mut column.data else {
        return Err(internal("a bin count's output is not uint32"));
    };
    // Within the capacity `take` made room for: no allocation.
    counts.clear();
    counts.resize(bins, 0);
    let mut tables = Vec::new();
    if bins <= SPLIT_TABLE_BINS {
        tables = crate::column::try_vec(3 * bins, "bin count tables")?;
        tables.resize(3 * bins, 0u32);
    }
    for chunk in ids {
        let Some(ColumnData::U32(ids)) = chunk.host_column().map(|c| &c.data) else {
            return Err(internal("a bin count's ids are not uint32 host columns"));
        };
        match tables.is_empty() {
            true => count_into(ids, counts),
            false => count_split(ids, counts, &mut tables, bins),
        }
    }
    for table in tables.chunks_exact(bins.max(1)) {
        for (count, more) in counts.iter_mut().zip(table) {
            *count = count.wrapping_add(*more);
        }
    }
    column.rows = bins as u32;
    Ok(Value::from_host_lease(device.core().id, lease))
}

fn count_into(ids: &[u32], counts: &mut [u32]) {
    for &id in ids {
        if let Some(count) = counts.get_mut(id as usize) {
            *count = count.wrapping_add(1);
        }
    }
}

/// Four ids at a time into `counts` and the three tables after it in `tables`.
fn count_split(ids: &[u32], counts: &mut [u32], tables: &mut [u32], bins: usize) {
    let (one, rest) = tables.split_at_mut(bins);
    let (two, three) = rest.split_at_mut(bins);
    let mut quads = ids.chunks_exact(4);
    for quad in &mut quads {
        for (table, &id) in [&mut *counts, &mut *one, &mut *two, &mut *three]
            .into_iter()
            .zip(quad)
        {
            if let Some(count) = table.get_mut(id as usize) {
                *count = count.wrapping_add(1);
            }
        }
    }
    count_into(quads.remainder(), counts);
}

/// Row b: the sum of the values of the `[id, value]` pairs (their chunks) whose id is b,
/// for b below `bins`, in the pairs' type: floats added in f64 (a group's sum is then as
/// accurate as a pairwise one), integers wrapping as 32-bit sums do.
pub(super) fn bin_sum(
    device: &CpuDevice,
    home: &Home,
    root: &Node,
    pairs: &[Rc<Value>],
    bins: u32,
) -> Result<Value> {
    let bins = bins as usize;
    let dtype = root.meta.dtype;
    let mut lease = device.take(home, dtype, bins)?;
    let column = lease.get_mut();
    let chunks = pairs
        .iter()
        .map(|chunk| chunk.host_column().map(|c| &c.data));
    let not_pairs = || internal("a bin sum's pairs are not of its type");
    match &mut column.data {
        ColumnData::F32(sums) => {
            let mut wide = crate::column::try_vec(bins, "a bin sum's totals")?;
            wide.resize(bins, 0f64);
            for chunk in chunks {
                let Some(ColumnData::F32(pairs)) = chunk else {
                    return Err(not_pairs());
                };
                sum_pairs(
                    pairs,
                    &mut wide,
                    |id| id as usize,
                    |s, v| *s += f64::from(v),
                );
            }
            sums.clear();
            sums.extend(wide.iter().map(|&v| v as f32));
        }
        ColumnData::I32(sums) => {
            sums.clear();
            sums.resize(bins, 0);
            for chunk in chunks {
                let Some(ColumnData::I32(pairs)) = chunk else {
                    return Err(not_pairs());
                };
                // A negative id reads as one past every bin.
                let id = |id: i32| usize::try_from(id).unwrap_or(usize::MAX);
                sum_pairs(pairs, sums, id, |s, v| *s = s.wrapping_add(v));
            }
        }
        ColumnData::U32(sums) => {
            sums.clear();
            sums.resize(bins, 0);
            for chunk in chunks {
                let Some(ColumnData::U32(pairs)) = chunk else {
                    return Err(not_pairs());
                };
                sum_pairs(pairs, sums, |id| id as usize, |s, v| *s = s.wrapping_add(v));
            }
        }
        _ => return Err(internal("a bin sum of a type not a sum's")),
    }
    column.rows = bins as u32;
    Ok(Value::from_host_lease(device.core().id, lease))
}

/// Each `[id, value]` pair's value added into its id's sum; ids past the sums add nothing.
fn sum_pairs<T: Copy, S>(
    pairs: &[T],
    sums: &mut [S],
    id: impl Fn(T) -> usize,
    add: impl Fn(&mut S, T),
) {
    for pair in pairs.chunks_exact(2) {
        if let Some(sum) = sums.get_mut(id(pair[0])) {
            add(sum, pair[1]);
        }
    }
}
