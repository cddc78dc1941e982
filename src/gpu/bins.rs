//! Bin counts and integer bin sums on WebGPU (`Op::BinCount`, `Op::BinSum` of int32 or
//! uint32): the bins cleared by one dispatch, then a dispatch per chunk task computing its
//! rows (fused with the work making the ids and values) and adding each to its bin with
//! atomics (shaders/bins.wgsl). Float sums are composed of a sort and a segmented sum
//! instead: atomic float adds would sum in no fixed order, and a large group's total would
//! drift with its size.

use std::rc::Rc;

use super::{bound, internal, GpuBatch, GpuDevice, STORAGE};
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::compute::{adds_in_workgroup, bins_kernel, BIN_BLOCK, BIN_THREADS};

/// Whether a device whose bindings hold `binding_bytes` adds the rows of the bin count or
/// sum `node` into its bins itself: a count, or an integer sum, whose bins fit one binding.
pub(super) fn adds_rows_to_bins(node: &Node, binding_bytes: u64) -> bool {
    let bins = match node.op {
        Op::BinCount { bins } => bins,
        Op::BinSum { bins } if matches!(node.meta.dtype, DType::I32 | DType::U32) => bins,
        _ => return false,
    };
    bins as u64 * 4 <= binding_bytes
}

/// Invocations adding `rows` rows into `bins` bins (a workgroup's block of rows each, where
/// a workgroup table holds the bins).
fn invocations(rows: u32, bins: u32) -> u32 {
    match adds_in_workgroup(bins) {
        true => rows.div_ceil(BIN_BLOCK) * BIN_THREADS,
        false => rows,
    }
}

impl GpuDevice {
    /// The dispatches of one chunk task of the bin pass `region`, and a line saying what they
    /// do.
    pub(super) fn describe_bins(&self, region: &Region) -> (u64, String) {
        let bins = region.root.meta.length;
        if region.rows == 0 {
            return (0, "no dispatch (0 rows)".to_string());
        }
        let adds = match adds_in_workgroup(bins) {
            true => "in a workgroup table, then into the output",
            false => "straight into the output",
        };
        let groups = invocations(region.rows, bins).div_ceil(BIN_THREADS);
        (
            1,
            format!("1 dispatch of {groups} workgroups of {BIN_THREADS} computing each row and adding it to its bin with atomics ({adds})"),
        )
    }

    /// The bins of the bin pass of `root`, cleared.
    pub(super) async fn bins_target(&self, batch: &mut GpuBatch, root: &Node) -> Result<Value> {
        let bins = root.meta.length;
        let bytes = bins as u64 * 4;
        self.check_binding(bytes, &format!("the bins of t{}", root.id))?;
        let lease = self.take_buffer(bytes.max(4), STORAGE, &batch.home)?;
        if bins > 0 {
            let target = (lease.buffer.clone(), bytes);
            self.record_scatter(batch, "fill", (bins, 0), (0, bins), vec![target])
                .await?;
        }
        Ok(self.stored(root.meta.dtype, 1, bins, lease))
    }

    /// Records one chunk task of a bin pass adding its rows into `bins`.
    pub(super) async fn add_to_bins(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        bins: &Value,
    ) -> Result<()> {
        let count = task.root.meta.length;
        if task.rows == 0 || count == 0 {
            return Ok(());
        }
        if !matches!(task.root.op, Op::BinCount { .. } | Op::BinSum { .. }) {
            return Err(internal("a bin pass of another op"));
        }
        let (grid, stride) = self.grid(invocations(task.rows, count), BIN_THREADS)?;
        let kernel = bins_kernel(task, leaves, stride)?;
        self.record(batch, kernel, bound(bins)?, leaves, grid).await
    }
}
