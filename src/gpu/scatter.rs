//! Scatter on WebGPU: the output, in parts that each fit one binding, cleared by a dispatch
//! per part; then per chunk task a dispatch per part, each writing the input rows whose
//! destinations fall in its part. Also the compaction of one block of flags, one dispatch
//! where the scatter it is composed of takes 9.

use std::rc::Rc;

use super::{bound, internal, Dispatch, GpuBatch, GpuDevice, STORAGE};
use crate::dtype::DType;
use crate::engine::{ScatterModel, Scatters, Written};
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::compute::{scatter_source, COMPACT_BLOCK, WORKGROUP_SIZE};
use crate::wgsl::FIXED_PARAMS;

/// Whether the compaction `root` runs as one dispatch of one workgroup: its flags at most
/// a block of rows, joined into one value (else it runs as the scan, scatter and fill it is
/// composed of: 9 dispatches for one block of one chunk, more past it).
pub(super) fn compacts_one_block(root: &Node) -> bool {
    root.op == Op::Compact && root.meta.length <= COMPACT_BLOCK
}

impl GpuDevice {
    /// Rows of each part of a scatter's output: as many as one binding holds.
    fn scatter_part_rows(&self) -> u32 {
        (self.binding_limit().0 / 4).clamp(1, u32::MAX as u64) as u32
    }

    /// Parts of a scatter output of `rows` rows (at least one).
    fn scatter_parts(&self, rows: u32) -> u32 {
        rows.div_ceil(self.scatter_part_rows()).max(1)
    }

    /// Records a dispatch of the scatter kernel `kind` over `rows` invocations (input rows
    /// from `first_row` on), writing a part of `part_rows` rows that starts at row `first`
    /// of the output.
    pub(super) async fn record_scatter(
        &self,
        batch: &mut GpuBatch,
        kind: &str,
        (rows, first_row): (u32, u32),
        (first, part_rows): (u32, u32),
        buffers: Vec<(wgpu::Buffer, u64)>,
    ) -> Result<()> {
        let (grid, stride) = self.grid(rows, WORKGROUP_SIZE)?;
        let mut params = vec![rows, stride, first_row, part_rows, first];
        params.resize(FIXED_PARAMS, 0);
        batch.dispatches.push(Dispatch {
            pipeline: self.pipeline(&scatter_source(kind)?).await?,
            params,
            buffers,
            grid,
        });
        Ok(())
    }

    /// Records the compaction of one block of `flags` (`compacts_one_block`): each flagged
    /// row's number, in order, then `u32::MAX` up to the rows.
    pub(super) async fn compact_one_block(
        &self,
        batch: &mut GpuBatch,
        flags: &[Vec<Rc<Value>>],
    ) -> Result<Vec<Value>> {
        let flags = match flags {
            [joined] if joined.len() == 1 => &joined[0],
            _ => {
                return Err(internal(
                    "a compaction of one block reads one value of flags",
                ))
            }
        };
        let rows = flags.rows;
        let bytes = rows as u64 * 4;
        let lease = self.take_buffer(bytes.max(4), STORAGE, &batch.home)?;
        if rows > 0 {
            let mut params = vec![rows];
            params.resize(FIXED_PARAMS, 0);
            batch.dispatches.push(Dispatch {
                pipeline: self.pipeline(&scatter_source("compact")?).await?,
                params,
                buffers: vec![(lease.buffer.clone(), bytes), bound(flags)?],
                grid: (1, 1),
            });
        }
        Ok(vec![self.stored(DType::U32, 1, rows, lease)])
    }
}

impl Scatters for GpuDevice {
    async fn scatter_target(&self, batch: &mut GpuBatch, root: &Node) -> Result<Vec<Value>> {
        let rows = root.meta.length;
        let most = self.scatter_part_rows();
        let mut parts = Vec::new();
        let mut first = 0u32;
        loop {
            let part_rows = (rows - first).min(most);
            let bytes = part_rows as u64 * 4;
            let lease = self.take_buffer(bytes.max(4), STORAGE, &batch.home)?;
            if part_rows > 0 {
                let target = (lease.buffer.clone(), bytes);
                self.record_scatter(batch, "fill", (part_rows, 0), (0, part_rows), vec![target])
                    .await?;
            }
            parts.push(self.stored(root.meta.dtype, 1, part_rows, lease));
            first += part_rows;
            if first >= rows {
                return Ok(parts);
            }
        }
    }
    async fn scatter_rows(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        destinations: &Value,
        written: Written<'_>,
        parts: &mut [Value],
    ) -> Result<()> {
        if task.rows == 0 {
            return Ok(());
        }
        let (kind, values, first_row) = match written {
            Written::Rows(values) => ("scatter", Some(bound(values)?), 0),
            Written::RowNumbers { first } => ("row_numbers", None, first),
        };
        let mut first = 0u32;
        for part in parts {
            let buffers = [bound(part)?, bound(destinations)?]
                .into_iter()
                .chain(values.clone());
            let rows = (task.rows, first_row);
            self.record_scatter(batch, kind, rows, (first, part.rows), buffers.collect())
                .await?;
            first += part.rows;
        }
        Ok(())
    }
}

impl ScatterModel for GpuDevice {
    fn describe_scatter(&self, region: &Region) -> (u64, String) {
        let parts = self.scatter_parts(region.output_rows());
        (
            u64::from(region.rows > 0) * parts as u64,
            format!("{parts} dispatch(es) writing each input row where it says, one per part of the output that fits a binding (each part cleared once by 1 more)"),
        )
    }
    fn scatter_pass_kernels(&self, region: &Region) -> u64 {
        match region.output_rows() > 0 {
            true => self.scatter_parts(region.output_rows()) as u64,
            false => 0,
        }
    }
}
