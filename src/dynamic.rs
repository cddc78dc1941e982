//! Operations whose output length depends on the data: the count is computed on the device
//! and read back (one number, never the entries), then the rest of the graph is built
//! lazily with that length and evaluated where its inputs are.

use crate::column::ColumnData;
use crate::dtype::DType;
use crate::engine::{self, Backend};
use crate::error::{GpuTableError, Result};
use crate::ir::{self, BinaryOp, NodeRef, ReduceKind, DEFAULT_SPLIT_EVERY};

fn u32_constant(value: u32) -> Result<NodeRef> {
    ir::source(ColumnData::U32(vec![value]), 1, true)
}

/// The one count `node` (a uint32 row of size 1) holds, read back from `device`.
async fn read_count<B: Backend>(device: &B, node: &NodeRef) -> Result<u32> {
    let output = node
        .output_on(device.core().id)
        .ok_or_else(|| engine::internal("a count was not evaluated"))?;
    match engine::read_rows(&output, 0, 1).await? {
        ColumnData::U32(v) if v.len() == 1 => Ok(v[0]),
        _ => Err(engine::internal("a count is not one uint32")),
    }
}

/// The rows of `values` whose flag (`flags`: one lane per row, nonzero keeps the row) is
/// set, in order (stream compaction). Runs the flags' exclusive scan and count on `device`
/// and reads back the count; the kept rows are a lazy gather: row `j` is the row whose
/// scan position is `j`, found by binary search over the scan.
pub async fn compact<B: Backend>(device: &B, flags: &NodeRef, values: &NodeRef) -> Result<NodeRef> {
    flags.check_alive()?;
    values.check_alive()?;
    if flags.meta.size != 1 || flags.meta.length != values.meta.length || flags.meta.constant {
        return Err(GpuTableError::invalid(format!(
            "compact needs one flag per row: {} flags of size {} for {} rows",
            flags.meta.length, flags.meta.size, values.meta.length
        )));
    }
    let kept = ir::select(flags, &u32_constant(1)?, &u32_constant(0)?)?;
    let positions = ir::exclusive_scan(&kept)?;
    let count = ir::reduce(ReduceKind::Sum, &kept, None, DEFAULT_SPLIT_EVERY)?;
    engine::evaluate(device, &[positions.clone(), count.clone()]).await?;
    let rows = read_count(device, &count).await?;
    let outputs = ir::cast(&ir::sequence(rows as f64, 0.0, 1.0)?, DType::U32)?;
    let after = ir::search_sorted(&positions, &outputs, true)?;
    let ids = ir::binary(BinaryOp::Subtract, &after, &u32_constant(1)?)?;
    ir::gather(&ids, values)
}
