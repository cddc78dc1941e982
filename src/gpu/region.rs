//! Fused elementwise passes on WebGPU: one compute dispatch per chunk task, an invocation
//! per row (or per lane of a wide row), writing the region's root.

use std::rc::Rc;

use super::{GpuBatch, GpuDevice};
use crate::dtype::DType;
use crate::engine::{RegionModel, Regions};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{Node, NodeRef, Op};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::compute::{self, WORKGROUP_SIZE};

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
    fn walks(&self, op: &Op, dtype: DType) -> bool {
        self.adds_into_bins(op, dtype)
    }
    fn describe_walk(&self, root: &Node) -> (u64, String) {
        self.describe_bins(root)
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
    /// Bin counts are walks of their stored input here (`PlanLimits::bins_read_rows`).
    type Bins = ();
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
        input: &[Rc<Value>],
    ) -> Result<Vec<Value>> {
        Ok(vec![self.add_into_bins(batch, root, input).await?])
    }
}
