//! Operations whose output length depends on the data: the count is computed on the device
//! and read back (one number, never the entries), then the rest of the graph is built
//! lazily with that length and evaluated where its inputs are.

use crate::column::ColumnData;
use crate::engine::{self, Evaluates};
use crate::error::{GpuTableError, Result};
use crate::ir::{self, u32_constant, u32_rows, BinaryOp, NodeRef};

/// Lane 0 of row 0 of each of `nodes`, evaluated on `device` in one plan (nodes already
/// there are read as they are) and read back: exact for every 32-bit type.
pub async fn read_scalars(device: &dyn Evaluates, nodes: &[NodeRef]) -> Result<Vec<f64>> {
    device.evaluate_roots(nodes).await?;
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
async fn read_evaluated(device: &dyn Evaluates, node: &NodeRef, rows: u32) -> Result<ColumnData> {
    let output = node
        .output_on(device.device_id())
        .ok_or_else(|| engine::internal("a number to read back was not evaluated"))?;
    engine::read_rows(&output, 0, rows).await
}

/// The sum of the rows of `counts` (uint32, one lane, at most `SCAN_FAN_IN` rows: a scan's
/// top level), already evaluated on `device`, read back.
async fn read_sum(device: &dyn Evaluates, counts: &NodeRef) -> Result<u32> {
    if counts.meta.size != 1 || counts.meta.length > ir::SCAN_FAN_IN {
        return Err(engine::internal("counts to add are not a scan's top level"));
    }
    let data = read_evaluated(device, counts, counts.meta.length).await?;
    // Each count is below 2^32 and there are at most 16: the f64 sum is exact.
    let total: f64 = (0..data.len()).map(|i| data.get_f64(i)).sum();
    u32::try_from(total as u64).map_err(|_| engine::internal("a count past 2^32 rows"))
}

/// The rows of `values` whose flag (`flags`: one lane per row, nonzero keeps the row) is
/// set, in order (stream compaction): `compaction`'s kept rows, the values gathered
/// through them (lazily).
pub async fn compact(
    device: &dyn Evaluates,
    flags: &NodeRef,
    values: &NodeRef,
    stored: &[NodeRef],
) -> Result<NodeRef> {
    flags.check_alive()?;
    values.check_alive()?;
    if flags.meta.length != values.meta.length {
        return Err(GpuTableError::invalid(format!(
            "compact needs one flag per row: {} flags for {} rows",
            flags.meta.length, values.meta.length
        )));
    }
    let kept = compaction(device, flags, stored).await?;
    ir::gather(&kept.kept_rows()?, values)
}

/// Which rows of a column a compaction keeps, and where each goes.
pub struct Compaction {
    /// Each row's place among the kept rows (the kept rows before it); a row not kept has
    /// `mark` added, which puts it past the end, where a scatter drops it. Stored on the
    /// device where the column has rows.
    destinations: NodeRef,
    /// At least the column's rows and at most 2^31, so a place plus it is past every count
    /// and fits in 32 bits; 0 for columns of more rows, whose rows not kept go to
    /// `u32::MAX` (their places are not kept).
    mark: u32,
    /// The scan of the places, lazy, for `kept_before` where no mark fits.
    positions: NodeRef,
    /// The number of rows kept.
    pub count: u32,
}

impl Compaction {
    /// The number of each kept row, in order (lazy: each scattered to its place).
    pub fn kept_rows(&self) -> Result<NodeRef> {
        let rows = u32_rows(self.destinations.meta.length)?;
        ir::scatter(&self.destinations, &rows, self.count)
    }

    /// For each of `rows` (uint32 row numbers of the flagged column, up to its length), the
    /// number of kept rows before it: a kept row's place, and the count at the length. Lazy
    /// and elementwise: one read of the stored places per row, no pass of its own (past
    /// 2^31 flags, the scan runs again).
    pub fn kept_before(&self, rows: &NodeRef) -> Result<NodeRef> {
        let length = self.destinations.meta.length;
        if length == 0 {
            return ir::binary(BinaryOp::Multiply, rows, &u32_constant(0)?);
        }
        let places = match self.mark {
            0 => ir::gather(rows, &self.positions)?,
            mark => ir::split_place(&ir::gather(rows, &self.destinations)?, mark)?.1,
        };
        // The length reads past the places (0 there) and is the one row it divides to 1.
        let at_end = ir::binary(BinaryOp::Divide, rows, &u32_constant(length)?)?;
        ir::binary(
            BinaryOp::Add,
            &places,
            &ir::binary(BinaryOp::Multiply, &at_end, &u32_constant(self.count)?)?,
        )
    }
}

/// The mark `compaction` adds to the places of rows not kept: 2^31, where `rows` fit
/// below it (a place plus the mark then fits in 32 bits and is past every count).
fn mark_for(rows: u32) -> u32 {
    if rows <= 1 << 31 {
        1 << 31
    } else {
        0
    }
}

/// Stream compaction of the rows whose flag (`flags`: one lane per row, nonzero keeps the
/// row) is set. Runs the flags' exclusive scan on `device` and reads back the count (the
/// sum of the scan's top level); each row's place is computed in the scan's last pass and
/// stored. `stored` are evaluated with the count and keep their output: the count ends an
/// evaluation, and only evaluated roots keep theirs, so nodes the caller reads on both
/// sides of it (sorted entries above all) would otherwise be computed twice.
pub async fn compaction(
    device: &dyn Evaluates,
    flags: &NodeRef,
    stored: &[NodeRef],
) -> Result<Compaction> {
    compaction_marked(device, flags, stored, mark_for(flags.meta.length)).await
}

/// `compaction`, with the rows not kept marked by `mark` (0: sent to `u32::MAX`). Any
/// mark at or above the flags' rows and at most 2^31 is exact; tests pass small ones.
pub async fn compaction_marked(
    device: &dyn Evaluates,
    flags: &NodeRef,
    stored: &[NodeRef],
    mark: u32,
) -> Result<Compaction> {
    flags.check_alive()?;
    if flags.meta.size != 1 || flags.meta.constant {
        return Err(GpuTableError::invalid(format!(
            "a compaction needs one flag per row: {} flags of size {}",
            flags.meta.length, flags.meta.size
        )));
    }
    if mark != 0 && (mark < flags.meta.length || mark > 1 << 31) {
        return Err(engine::internal(
            "a compaction's mark does not fit its rows",
        ));
    }
    let kept = ir::select(flags, &u32_constant(1)?, &u32_constant(0)?)?;
    let positions = ir::exclusive_scan(&kept)?;
    let dropped = match mark {
        0 => u32_constant(u32::MAX)?,
        mark => ir::binary(BinaryOp::Add, &positions, &u32_constant(mark)?)?,
    };
    let destinations = ir::select(&kept, &positions, &dropped)?;
    // The count is the sum of the scan's top level (at most SCAN_FAN_IN rows, added here):
    // no pass of its own.
    let count = match ir::scan_top(&positions) {
        None => {
            device.evaluate_roots(stored).await?;
            0
        }
        Some(top) => {
            // Neither the flags nor the positions are stored: only the places.
            let roots = [destinations.clone(), top.clone()];
            device
                .evaluate_roots(&[&roots[..], stored].concat())
                .await?;
            read_sum(device, &top).await?
        }
    };
    Ok(Compaction {
        destinations,
        mark,
        positions,
        count,
    })
}
