//! The table model's column operations: a table stores each column as one node per record
//! batch, and packing batches joins consecutive ones on the device that holds them (a view
//! op and one copy per packed batch, never a round trip through the host).

use std::rc::Rc;

use crate::column::Column;
use crate::engine::{self, Backend};
use crate::error::{GpuTableError, Result};
use crate::ir::{self, NodeRef};
use crate::value::{Output, Value};

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
    let output = node.output_on(device).ok_or_else(|| {
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
pub async fn pack_column<B: Backend>(
    device: &B,
    parts: &[NodeRef],
    group_sizes: &[usize],
) -> Result<Vec<NodeRef>> {
    let column = packed(parts, group_sizes)?;
    engine::evaluate(device, std::slice::from_ref(&column)).await?;
    chunk_nodes(&column, device.core().id)
}
