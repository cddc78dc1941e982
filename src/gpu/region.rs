//! Fused elementwise passes on WebGPU: one compute dispatch per chunk task, an invocation
//! per row (or per lane of a wide row), writing the region's root.

use std::rc::Rc;

use super::{GpuBatch, GpuDevice};
use crate::engine::{RegionModel, Regions};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{Node, NodeRef, Op};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::compute::{self, COMPACT_BLOCK, WORKGROUP_SIZE};

/// Invocations of an elementwise region over `rows` rows (see `compute::elementwise_kernel`).
fn elementwise_invocations(root: &NodeRef, rows: u32) -> Result<u32> {
    if !compute::computes_per_lane(root.meta.size) {
        return Ok(rows);
    }
    rows.checked_mul(root.meta.size).ok_or_else(|| {
        GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{rows} rows of {} lanes exceed 2^32 values in one pass",
                root.meta.size
            ),
        )
    })
}

impl RegionModel for GpuDevice {
    fn walks(&self, root: &Node) -> bool {
        self.looks_up(root) || super::scatter::compacts_one_block(root)
    }
    fn walk_joins_input(&self, root: &Node, k: usize) -> bool {
        // A lookup's table and its flags (read at any row); one block's flags.
        match root.op {
            Op::Lookup => k > 0,
            _ => super::scatter::compacts_one_block(root),
        }
    }
    fn walk_scratch_bytes(&self, root: &Node) -> u64 {
        match root.op {
            Op::Compact => 0,
            _ => GpuDevice::lookup_slot_bytes(root),
        }
    }
    fn describe_walk(&self, root: &Node) -> (u64, String) {
        match root.op {
            Op::Compact if root.meta.length == 0 => (0, "no dispatch (0 rows)".to_string()),
            Op::Compact => (
                1,
                format!("1 dispatch of one workgroup (a block of at most {COMPACT_BLOCK} rows)"),
            ),
            _ => GpuDevice::describe_lookup(root),
        }
    }
    fn describe_bins(&self, region: &Region) -> (u64, String) {
        GpuDevice::describe_bins(self, region)
    }
    fn bins_pass_kernels(&self, region: &Region) -> u64 {
        // The clear, and a float sum's rounding.
        match region.root.meta.dtype {
            crate::dtype::DType::F32 => 2,
            _ => 1,
        }
    }
    fn bins_bytes(&self, root: &Node) -> u64 {
        super::bins::bin_words(root) * 4
    }
    fn describe_region(&self, region: &Region) -> Result<(u64, String)> {
        let rows = region.rows;
        if rows == 0 {
            return Ok((0, "no dispatch (0 rows)".to_string()));
        }
        let invocations = elementwise_invocations(&region.root, rows)?;
        let ((x, y), _) = self.grid(invocations, WORKGROUP_SIZE)?;
        let each = match compute::computes_per_lane(region.root.meta.size) {
            true => "lane of each row",
            false => "row",
        };
        Ok((
            1,
            format!(
                "1 dispatch of {x}x{y} workgroups of {WORKGROUP_SIZE} (one invocation per {each})"
            ),
        ))
    }
}

impl Regions for GpuDevice {
    type Bins = super::bins::GpuBins;
    async fn run_region(
        &self,
        batch: &mut GpuBatch,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value> {
        let root = &region.root;
        let (output, bytes) = self.output(batch, region)?;
        let rows = region.rows;
        if rows > 0 {
            let (grid, stride) = self.grid(elementwise_invocations(root, rows)?, WORKGROUP_SIZE)?;
            let kernel = compute::elementwise_kernel(region, leaves, rows, stride)?;
            let target = (output.buffer.clone(), bytes);
            self.record(batch, kernel, target, leaves, grid).await?;
        }
        Ok(self.value(region, output))
    }
    async fn walk(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        inputs: &[Vec<Rc<Value>>],
    ) -> Result<Vec<Value>> {
        match root.op {
            Op::Compact => self.compact_one_block(batch, inputs).await,
            _ => self.lookup(batch, root, inputs).await,
        }
    }
    async fn bins_target(&self, batch: &mut GpuBatch, root: &Node) -> Result<Self::Bins> {
        GpuDevice::bins_target(self, batch, root).await
    }
    async fn add_to_bins(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        bins: &mut Self::Bins,
    ) -> Result<()> {
        GpuDevice::add_to_bins(self, batch, task, leaves, bins).await
    }
    async fn finish_bins(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        bins: Self::Bins,
    ) -> Result<Value> {
        GpuDevice::finish_bins(self, batch, root, bins).await
    }
}
