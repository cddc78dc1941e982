//! Bin counts and sums on WebGPU (`Op::BinCount`, `Op::BinSum`): the bins cleared by one
//! dispatch, then a dispatch per chunk task computing its rows (fused with the work making
//! the ids and values) and adding each to its bin with atomics (shaders/bins.wgsl). Float
//! sums are added exactly, as integer sums of each value's significand at its exponent, and
//! rounded to float32 by one more dispatch: atomic float adds would sum in no fixed order,
//! and a large group's total would drift with its size.

use std::rc::Rc;

use super::{internal, BufferLease, Dispatch, GpuBatch, GpuDevice, STORAGE};
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::compute::{
    adds_in_workgroup, bins_kernel, float_bins_finish_source, BIN_BLOCK, BIN_THREADS,
    FLOAT_BIN_WORDS,
};
use crate::wgsl::FIXED_PARAMS;

/// Whether a device whose bindings hold `binding_bytes` adds the rows of the bin count or
/// sum `node` into its bins itself: where its bins' words fit one binding.
pub(super) fn adds_rows_to_bins(node: &Node, binding_bytes: u64) -> bool {
    matches!(node.op, Op::BinCount { .. } | Op::BinSum { .. })
        && bin_words(node) * 4 <= binding_bytes
}

/// Words the bins of the bin count or sum `root` take while rows are added.
pub(super) fn bin_words(root: &Node) -> u64 {
    let per_bin = match root.meta.dtype {
        DType::F32 => FLOAT_BIN_WORDS,
        _ => 1,
    };
    root.meta.length as u64 * per_bin as u64
}

/// Invocations adding `rows` rows into the bins of `root` (a workgroup's block of rows
/// each, where a workgroup table holds the bins; else one per row).
fn invocations(rows: u32, root: &Node) -> u32 {
    match root.meta.dtype != DType::F32 && adds_in_workgroup(root.meta.length) {
        true => rows.div_ceil(BIN_BLOCK) * BIN_THREADS,
        false => rows,
    }
}

/// A bin pass's bins while rows are added (`bin_words` words).
pub struct GpuBins {
    lease: BufferLease,
    bytes: u64,
}

impl GpuDevice {
    /// The dispatches of one chunk task of the bin pass `region`, and a line saying what they
    /// do.
    pub(super) fn describe_bins(&self, region: &Region) -> (u64, String) {
        let bins = region.root.meta.length;
        if region.rows == 0 {
            return (0, "no dispatch (0 rows)".to_string());
        }
        let adds = match () {
            _ if region.root.meta.dtype == DType::F32 => {
                "exactly, as integer sums of its significand at its exponent"
            }
            _ if adds_in_workgroup(bins) => "in a workgroup table, then into the output",
            _ => "straight into the output",
        };
        let groups = invocations(region.rows, &region.root).div_ceil(BIN_THREADS);
        (
            1,
            format!("1 dispatch of {groups} workgroups of {BIN_THREADS} computing each row and adding it to its bin with atomics ({adds})"),
        )
    }

    /// The bins of the bin pass of `root`, cleared.
    pub(super) async fn bins_target(&self, batch: &mut GpuBatch, root: &Node) -> Result<GpuBins> {
        let words =
            u32::try_from(bin_words(root)).map_err(|_| internal("a bin pass's words pass 2^32"))?;
        let bytes = words as u64 * 4;
        self.check_binding(bytes, &format!("the bins of t{}", root.id))?;
        let lease = self.take_buffer(bytes.max(4), STORAGE, &batch.home)?;
        if words > 0 {
            let target = (lease.buffer.clone(), bytes);
            self.record_scatter(batch, "fill", (words, 0), (0, words), vec![target])
                .await?;
        }
        Ok(GpuBins { lease, bytes })
    }

    /// The output of the bin pass of `root` from its bins: the bins themselves, or for a
    /// float sum its integer sums rounded to float32 by one dispatch.
    pub(super) async fn finish_bins(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        bins: GpuBins,
    ) -> Result<Value> {
        let count = root.meta.length;
        if root.meta.dtype != DType::F32 {
            return Ok(self.stored(root.meta.dtype, 1, count, bins.lease));
        }
        let bytes = count as u64 * 4;
        let lease = self.take_buffer(bytes.max(4), STORAGE, &batch.home)?;
        if count > 0 {
            let (grid, stride) = self.grid(count, BIN_THREADS)?;
            let mut params = vec![count, stride, 0, 0];
            params.resize(FIXED_PARAMS, 0);
            batch.dispatches.push(Dispatch {
                pipeline: self.pipeline(&float_bins_finish_source()?).await?,
                params,
                buffers: vec![
                    (lease.buffer.clone(), bytes),
                    (bins.lease.buffer.clone(), bins.bytes),
                ],
                grid,
            });
        }
        // The sums stay held until the batch has run.
        batch.keep.push(bins.lease);
        Ok(self.stored(DType::F32, 1, count, lease))
    }

    /// Records one chunk task of a bin pass adding its rows into `bins`.
    pub(super) async fn add_to_bins(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        bins: &GpuBins,
    ) -> Result<()> {
        let count = task.root.meta.length;
        if task.rows == 0 || count == 0 {
            return Ok(());
        }
        if !matches!(task.root.op, Op::BinCount { .. } | Op::BinSum { .. }) {
            return Err(internal("a bin pass of another op"));
        }
        let (grid, stride) = self.grid(invocations(task.rows, &task.root), BIN_THREADS)?;
        let kernel = bins_kernel(task, leaves, stride)?;
        let target = (bins.lease.buffer.clone(), bins.bytes);
        self.record(batch, kernel, target, leaves, grid).await
    }
}
