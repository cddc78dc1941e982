//! Bin counts and integer bin sums on WebGPU (`Op::BinCount`, `Op::BinSum` of int32 or
//! uint32): the output cleared by one dispatch, then a dispatch per input chunk adding each
//! row to its bin with atomics (shaders/bins.wgsl). Float sums are composed of a sort and a
//! segmented sum instead: atomic float adds would sum in no fixed order, and a large group's
//! total would drift with its size.

use std::rc::Rc;

use super::{bound, internal, Dispatch, GpuBatch, GpuDevice, STORAGE};
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::value::Value;
use crate::wgsl::compute::{adds_in_workgroup, bins_source, BIN_BLOCK, BIN_THREADS};
use crate::wgsl::SCATTER_PARAMS;

impl GpuDevice {
    /// Whether this device adds the rows of the walk `op` (of output type `dtype`) into its
    /// bins itself: a bin count, or an integer bin sum, whose bins fit one binding.
    pub(super) fn adds_into_bins(&self, op: &Op, dtype: DType) -> bool {
        let bins = match *op {
            Op::BinCount { bins } => bins,
            Op::BinSum { bins } if matches!(dtype, DType::I32 | DType::U32) => bins,
            _ => return false,
        };
        bins as u64 * 4 <= self.binding_limit().0
    }

    /// The dispatches of the bin walk `root`, and a line saying what they do.
    pub(super) fn describe_bins(&self, root: &Node) -> (u64, String) {
        let bins = match root.op {
            Op::BinCount { bins } | Op::BinSum { bins } => bins,
            _ => 0,
        };
        let input = &root.inputs[0];
        let chunks = input.chunks.iter().filter(|&&rows| rows > 0).count() as u64;
        let adds = match adds_in_workgroup(bins) {
            true => "in a workgroup table, then into the output",
            false => "straight into the output",
        };
        (
            1 + chunks,
            format!("1 dispatch clearing the {bins} bins, then 1 per input chunk adding each row to its bin with atomics ({adds})"),
        )
    }

    /// Records the bin walk `root` over its input's `chunks` (each on this device).
    pub(super) async fn add_into_bins(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        chunks: &[Rc<Value>],
    ) -> Result<Value> {
        let (kind, bins) = match root.op {
            Op::BinCount { bins } => ("count", bins),
            Op::BinSum { bins } => ("sum", bins),
            _ => return Err(internal("a bin walk of another op")),
        };
        let bytes = bins as u64 * 4;
        self.check_binding(bytes, &format!("the bins of t{}", root.id))?;
        let lease = self.take_buffer(bytes.max(4), STORAGE, &batch.home)?;
        if bins == 0 {
            return Ok(self.stored(root.meta.dtype, 1, 0, lease));
        }
        let target = (lease.buffer.clone(), bytes);
        self.record_scatter(batch, "fill", (bins, 0), (0, bins), vec![target.clone()])
            .await?;
        let pipeline = self.pipeline(&bins_source(kind, bins)?).await?;
        for chunk in chunks.iter().filter(|c| c.rows > 0) {
            let rows = chunk.rows;
            let invocations = match adds_in_workgroup(bins) {
                true => rows.div_ceil(BIN_BLOCK) * BIN_THREADS,
                false => rows,
            };
            let (grid, stride) = self.grid(invocations, BIN_THREADS)?;
            // The shader's parameter block is the scatter kernels' two vec4s.
            let mut params = vec![rows, stride, 0, bins];
            params.resize(SCATTER_PARAMS, 0);
            batch.dispatches.push(Dispatch {
                pipeline: pipeline.clone(),
                params,
                buffers: vec![target.clone(), bound(chunk)?],
                grid,
            });
        }
        Ok(self.stored(root.meta.dtype, 1, bins, lease))
    }
}
