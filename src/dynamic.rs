//! Operations whose output length depends on the data, for the sparse arrays: which rows
//! are kept is decided on the device and counted there (`Kept`); and `read_scalars`, the
//! few numbers a constructor's checks read back.

use crate::column::ColumnData;
use crate::engine::{self, Backend};
use crate::error::{GpuTableError, Result};
use crate::ir::{self, u32_constant, BinaryOp, NodeRef};

/// Lane 0 of row 0 of each of `nodes`, evaluated on `device` in one plan (nodes already
/// there are read as they are) and read back: exact for every 32-bit type.
pub async fn read_scalars(device: &dyn Backend, nodes: &[NodeRef]) -> Result<Vec<f64>> {
    crate::engine::evaluate(device, nodes).await?;
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        let data = read_evaluated(device, node, 1).await?;
        match data.is_empty() {
            true => return Err(engine::internal("a scalar to read has no row")),
            false => out.push(data.get_f64(0)),
        }
    }
    Ok(out)
}

/// The first `rows` rows of `node`, evaluated on `device`, read back.
async fn read_evaluated(device: &dyn Backend, node: &NodeRef, rows: u32) -> Result<ColumnData> {
    let output = node
        .output_on(device.core().id)
        .ok_or_else(|| engine::internal("a number to read back was not evaluated"))?;
    engine::read_rows(&output, 0, rows).await
}

/// Which rows of a column are kept, decided on the device (`ir::kept_row_numbers`, the
/// steps of `filter`): the kept rows' numbers are counted there, and nothing is read back
/// until a result built on them is evaluated, which reads its count at the end.
pub struct Kept {
    /// The number of each kept row, in order, counted on the device.
    rows: NodeRef,
    /// Per row of the column, the kept rows up to it.
    placed: NodeRef,
}

impl Kept {
    /// The rows whose flag (`flags`: one lane per row, a column not counted) is nonzero.
    pub fn new(flags: &NodeRef) -> Result<Kept> {
        flags.check_alive()?;
        if flags.meta.size != 1 || flags.meta.constant {
            return Err(GpuTableError::invalid(format!(
                "kept rows need one flag per row: {} flags of size {}",
                flags.meta.length, flags.meta.size
            )));
        }
        let (rows, placed) = ir::kept_row_numbers(flags)?;
        Ok(Kept { rows, placed })
    }

    /// The number of each kept row, in order (uint32, counted on the device).
    pub fn kept_rows(&self) -> NodeRef {
        self.rows.clone()
    }

    /// For each of `rows` (uint32 row numbers of the flagged column, up to its length), the
    /// number of kept rows before it: a kept row's place, and the count at the length.
    /// Lazy and elementwise: one read per row of the kept rows up to the row before (row 0
    /// wraps past the end, where a gather reads 0).
    pub fn kept_before(&self, rows: &NodeRef) -> Result<NodeRef> {
        let before = ir::binary(BinaryOp::Subtract, rows, &u32_constant(1)?)?;
        ir::gather(&before, &self.placed)
    }
}
