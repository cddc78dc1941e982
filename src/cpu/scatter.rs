//! Scatter on the CPU: the output is one host array, every row 0, written row by row where
//! the destinations say. A compaction is one walk over its flags.

use super::{internal, CpuDevice};
use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::engine::{DeviceModel, ScatterModel, Scatters, Written};
use crate::error::Result;
use crate::ir::Node;
use crate::memory::Home;
use crate::plan::Region;
use crate::value::{Storage, Value};

impl ScatterModel for CpuDevice {}

impl Scatters for CpuDevice {
    async fn scatter_target(&self, home: &mut Home, root: &Node) -> Result<Vec<Value>> {
        let rows = root.meta.length;
        let mut lease = self.take(home, root.meta.dtype, rows as usize)?;
        let column = lease.get_mut();
        // Within the capacity `take` made room for: no allocation.
        crate::column::with_column_data!(&mut column.data, v => v.resize(rows as usize, Default::default()));
        column.rows = rows;
        Ok(vec![Value::from_host_lease(self.core().id, lease)])
    }
    async fn scatter_rows(
        &self,
        _: &mut Home,
        _: &Region,
        destinations: &Value,
        written: Written<'_>,
        parts: &mut [Value],
    ) -> Result<()> {
        let (
            Some(destinations),
            [Value {
                storage: Storage::Host(lease),
                ..
            }],
        ) = (destinations.host_column(), parts)
        else {
            return Err(internal(
                "a scatter's inputs or output are not one host column each",
            ));
        };
        match written {
            Written::Rows(values) => {
                let values = (values.host_column())
                    .ok_or_else(|| internal("a scatter's values are not a host column"))?;
                scatter_rows(destinations, values, lease.get_mut())?
            }
            Written::RowNumbers { first } => {
                scatter_row_numbers(destinations, first, lease.get_mut())?
            }
        }
        self.core().counters.add_kernels(1);
        Ok(())
    }
}

/// The numbers of the nonzero rows of uint8 `flags` (their chunks, in order), then
/// `u32::MAX` up to their rows (`Op::Compact`).
pub(super) fn compact(device: &CpuDevice, home: &Home, flags: &[Rc<Value>]) -> Result<Value> {
    let mut chunks = Vec::with_capacity(flags.len());
    for chunk in flags {
        match chunk.host_column().map(|c| &c.data) {
            Some(ColumnData::U8(flags)) => chunks.push(flags.as_slice()),
            _ => return Err(internal("a compaction's flags are not uint8 host columns")),
        }
    }
    let rows: usize = chunks.iter().map(|c| c.len()).sum();
    let mut lease = device.take(home, DType::U32, rows)?;
    let column = lease.get_mut();
    let ColumnData::U32(out) = &mut column.data else {
        return Err(internal("a compaction's output is not uint32"));
    };
    // Within the capacity `take` made room for: no allocation.
    out.resize(rows, u32::MAX);
    let mut kept = 0;
    let mut first = 0u32;
    for chunk in chunks {
        kept = compact_into(chunk, first, kept, out);
        first = first.wrapping_add(chunk.len() as u32);
    }
    column.rows = rows as u32;
    Ok(Value::from_host_lease(device.core().id, lease))
}

/// Writes the numbers (from `first`) of the nonzero `flags` to `out` from row `kept` on;
/// returns the rows kept so far. `out` has a row per flag and holds `u32::MAX` from `kept`
/// on, which stays past the rows written.
fn compact_into(flags: &[u8], first: u32, mut kept: usize, out: &mut [u32]) -> usize {
    let mut words = flags.chunks_exact(8);
    let mut row = first;
    // Eight flags at a time: skipped where none is set; else each row's number written at
    // the next place, which moves on only past a kept row (no branch per row: half-kept
    // masks would mispredict every other row).
    for word in &mut words {
        let bits = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        if bits != 0 {
            // Always there: `kept` is at most this word's first row.
            let Some(slots) = out.get_mut(kept..kept + 8) else {
                break;
            };
            let mut placed = 0;
            for (k, &flag) in word.iter().enumerate() {
                slots[placed & 7] = row.wrapping_add(k as u32);
                placed += (flag != 0) as usize;
            }
            // The row after the last kept one was written too: it stays past the count.
            if let Some(slot) = slots.get_mut(placed) {
                *slot = u32::MAX;
            }
            kept += placed;
        }
        row = row.wrapping_add(8);
    }
    for &flag in words.remainder() {
        if flag != 0 {
            if let Some(slot) = out.get_mut(kept) {
                *slot = row;
            }
            kept += 1;
        }
        row = row.wrapping_add(1);
    }
    kept
}

/// Row `i` of `values` written to row `destinations[i]` of `target` (host columns of one
/// 32-bit type), where that is one of its rows.
fn scatter_rows(destinations: &Column, values: &Column, target: &mut Column) -> Result<()> {
    fn write<T: Copy>(out: &mut [T], destinations: &[u32], values: &[T]) {
        for (&d, &v) in destinations.iter().zip(values) {
            if let Some(slot) = out.get_mut(d as usize) {
                *slot = v;
            }
        }
    }
    let destinations = scatter_destinations(destinations)?;
    match (&mut target.data, &values.data) {
        (ColumnData::U32(out), ColumnData::U32(v)) => write(out, destinations, v),
        (ColumnData::I32(out), ColumnData::I32(v)) => write(out, destinations, v),
        (ColumnData::F32(out), ColumnData::F32(v)) => write(out, destinations, v),
        _ => return Err(internal("scatter values and output differ in type")),
    }
    Ok(())
}

/// `scatter_rows` of each row's number, `first` being the first row's.
fn scatter_row_numbers(destinations: &Column, first: u32, target: &mut Column) -> Result<()> {
    let ColumnData::U32(out) = &mut target.data else {
        return Err(internal("row numbers are scattered into a uint32 column"));
    };
    for (&d, row) in scatter_destinations(destinations)?.iter().zip(first..) {
        if let Some(slot) = out.get_mut(d as usize) {
            *slot = row;
        }
    }
    Ok(())
}

fn scatter_destinations(destinations: &Column) -> Result<&[u32]> {
    match &destinations.data {
        ColumnData::U32(destinations) => Ok(destinations),
        _ => Err(internal("scatter destinations are not uint32")),
    }
}

#[cfg(test)]
mod tests {
    use super::compact_into;

    #[test]
    fn compaction_writes_the_flagged_rows_in_order_then_max_across_chunks() {
        let mut state = 0x9e37_79b9_u32;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for rows in [0usize, 1, 7, 8, 9, 16, 63, 200, 1001] {
            for percent in [0u32, 1, 50, 99, 100] {
                let flags: Vec<u8> = (0..rows)
                    .map(|_| (random() % 100 < percent) as u8)
                    .collect();
                let cut = rows / 3;
                let mut out = vec![u32::MAX; rows];
                let kept = compact_into(&flags[..cut], 0, 0, &mut out);
                let kept = compact_into(&flags[cut..], cut as u32, kept, &mut out);
                let mut expected: Vec<u32> = (0..rows as u32)
                    .filter(|&r| flags[r as usize] != 0)
                    .collect();
                assert_eq!(kept, expected.len(), "{rows} rows, {percent}%");
                expected.resize(rows, u32::MAX);
                assert_eq!(out, expected, "{rows} rows, {percent}%");
            }
        }
    }
}
