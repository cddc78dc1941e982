//! Bin counts on the CPU (`Op::BinCount`): one walk over the ids with a counter per bin,
//! where the GPUs sort the ids and search each bin's first row.

use std::rc::Rc;

use super::{internal, CpuDevice};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::engine::DeviceModel;
use crate::error::Result;
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
