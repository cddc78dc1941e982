//! Packing batches: a table stores each column as one node per record batch, and packing
//! joins consecutive batches on the device that holds them (a view op and one copy per
//! packed batch, never a round trip through the host).

use std::rc::Rc;

use super::{BatchRef, TableRef};
use crate::column::Column;
use crate::engine::{self, Backend};
use crate::error::{GpuTableError, Result, Shown};
use crate::ir::{self, NodeRef};
use crate::value::{Output, Value};

/// Per column, the packed data of every group and the packed validity (where the column
/// has it).
pub type PackedColumns = Vec<(Vec<NodeRef>, Option<Vec<NodeRef>>)>;

/// Runs of consecutive batches (of `rows` rows each) holding at least `min_rows` rows, the
/// last run possibly fewer: the number of batches in each run.
pub fn pack_groups(rows: &[u64], min_rows: f64) -> Result<Vec<usize>> {
    if min_rows.is_nan() || min_rows < 0.0 {
        return Err(GpuTableError::invalid(format!(
            "minBatchSize must be a number of rows, got {}",
            Shown(min_rows)
        )));
    }
    let mut groups = Vec::new();
    let (mut size, mut held) = (0, 0u64);
    for &r in rows {
        size += 1;
        held += r;
        if held as f64 >= min_rows {
            groups.push(size);
            (size, held) = (0, 0);
        }
    }
    if size > 0 {
        groups.push(size);
    }
    Ok(groups)
}

/// Joins `table`'s batches into batches of at least `min_rows` rows on `device` and
/// destroys the superseded batches the table owned; a batch alone in its group is kept.
pub async fn pack_batches(device: &dyn Backend, table: &TableRef, min_rows: f64) -> Result<()> {
    let (before, groups, columns) = {
        let t = table.borrow();
        t.check()?;
        let rows: Vec<u64> = t.batches.iter().map(|b| b.borrow().num_rows()).collect();
        let groups = pack_groups(&rows, min_rows)?;
        let mut columns = Vec::with_capacity(t.fields.len());
        for index in 0..t.fields.len() {
            let vectors = t.parts(index)?;
            let data = vectors
                .iter()
                .map(|v| v.borrow().node())
                .collect::<Result<Vec<_>>>()?;
            let validity = vectors
                .iter()
                .map(|v| v.borrow().validity.clone())
                .collect::<Option<Vec<_>>>()
                .map(|flags| {
                    flags
                        .iter()
                        .map(|f| f.borrow().node())
                        .collect::<Result<Vec<_>>>()
                })
                .transpose()?;
            columns.push((data, validity));
        }
        (t.batches.clone(), groups, columns)
    };
    if groups.is_empty() {
        return Ok(());
    }
    let mut packed: PackedColumns = Vec::with_capacity(columns.len());
    for (data, validity) in columns {
        let data = pack_column(device, &data, &groups).await?;
        let validity = match validity {
            Some(flags) => Some(pack_column(device, &flags, &groups).await?),
            None => None,
        };
        packed.push((data, validity));
    }
    table.borrow_mut().repack(&before, &groups, packed)
}

/// Whether `now` is still the list of batches `before`.
pub(super) fn same_batches(before: &[BatchRef], now: &[BatchRef]) -> bool {
    before.len() == now.len() && before.iter().zip(now).all(|(a, b)| Rc::ptr_eq(a, b))
}

/// The column stored in `parts` (one node per batch, in order) with each run of
/// `group_sizes` consecutive parts made one chunk: a part alone in its group stays as it is
/// (shared, no copy), the others are copied together when the graph is evaluated.
pub fn packed(parts: &[NodeRef], group_sizes: &[usize]) -> Result<NodeRef> {
    if group_sizes.iter().sum::<usize>() != parts.len() || group_sizes.contains(&0) {
        return Err(GpuTableError::invalid(format!(
            "groups of {group_sizes:?} parts do not cover {} parts",
            parts.len()
        )));
    }
    let column = ir::concat(parts)?;
    let mut rows = Vec::with_capacity(group_sizes.len());
    let mut first = 0;
    for &size in group_sizes {
        rows.push(
            parts[first..first + size]
                .iter()
                .map(|p| p.meta.length)
                .sum(),
        );
        first += size;
    }
    ir::rechunk(&column, rows.into())
}

/// Each logical chunk of `node`'s output on device `device` as a node of its own over the
/// stored values (no copy; a chunk stored in parts stays in parts).
pub fn chunk_nodes(node: &NodeRef, device: crate::value::DeviceId) -> Result<Vec<NodeRef>> {
    // A CPU device reads host memory in place.
    let output = node.output_on(device).or_else(|| node.host_output());
    let output = output.ok_or_else(|| {
        engine::internal(format!("t{} has no output on device {device}", node.id))
    })?;
    let offsets = node.chunk_offsets();
    let mut stored = output.chunks.iter().peekable();
    let mut first = 0u64;
    let mut nodes = Vec::with_capacity(node.chunks.len());
    for range in offsets.windows(2) {
        let mut values: Vec<Rc<Value>> = Vec::new();
        if range[0] == range[1] {
            values.extend(stored.next_if(|v| v.rows == 0).cloned());
        }
        while first < range[1] {
            let value = stored
                .next()
                .ok_or_else(|| engine::internal("stored chunks end before the column"))?;
            first += value.rows as u64;
            values.push(value.clone());
        }
        nodes.push(match values.is_empty() {
            true => {
                let empty = Column::empty(node.meta.dtype, node.meta.size)?;
                ir::source(empty.data, node.meta.size, false)?
            }
            false => ir::resident_parts(Output::new(output.device, values)),
        });
    }
    Ok(nodes)
}

/// `packed` evaluated on `device`: one node per group, its chunk on the device.
pub async fn pack_column(
    device: &dyn Backend,
    parts: &[NodeRef],
    group_sizes: &[usize],
) -> Result<Vec<NodeRef>> {
    let column = packed(parts, group_sizes)?;
    engine::evaluate(device, std::slice::from_ref(&column)).await?;
    chunk_nodes(&column, device.core().id)
}
