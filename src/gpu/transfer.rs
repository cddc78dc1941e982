//! Host data onto a WebGPU device (words written to a pooled buffer) and rows back (copied
//! to a staging buffer and mapped, a piece at a time).

use super::{GpuBatch, GpuDevice, GpuValue, STORAGE};
use crate::column::Column;
use crate::engine::{internal, Transfers};
use crate::error::Result;
use crate::memory::Home;
use crate::value::{RowSink, Value};
use crate::wgpu_shared::{decode, device_words, map_read, Completion};

const STAGING: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);
/// Bytes a WebGPU read copies and maps at once (its staging buffer's size at most).
const READBACK_PIECE_BYTES: u64 = 8 << 20;

impl Transfers for GpuDevice {
    fn upload(&self, batch: &mut GpuBatch, column: &Column) -> Result<Value> {
        let bytes = column.data.len() as u64 * 4;
        self.check_binding(bytes, "an input")?;
        let lease = self.take_buffer(bytes, STORAGE, &batch.home)?;
        if bytes > 0 {
            let words = device_words(column)?;
            self.queue.write_buffer(&lease.buffer, 0, &words);
            self.core.counters.add_upload(bytes);
        }
        Ok(self.stored(column.dtype(), column.size, column.rows, lease))
    }
    async fn read_rows(
        &self,
        value: &Value,
        start: u32,
        end: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<()> {
        let Some(gpu) = value.storage_of::<GpuValue>() else {
            return Err(internal("not a WebGPU value"));
        };
        if start >= end {
            return Ok(());
        }
        let row_bytes = value.size as u64 * 4;
        let rows_per_piece = (READBACK_PIECE_BYTES / row_bytes).max(1);
        // One staging buffer for every piece: a large one made afresh (the shared pool drops
        // its largest buffers first) cost an H100 40 ms of first-touch mapping for 32 MB, ten
        // times the copy; pieces of at most 8 MB stay in the pool.
        let staging_rows = rows_per_piece.min((end - start) as u64);
        let staging = self.take_buffer(staging_rows * row_bytes, STAGING, &Home::Pool)?;
        let mut row = start as u64;
        while row < end as u64 {
            let rows = rows_per_piece.min(end as u64 - row);
            let bytes = rows * row_bytes;
            let mut encoder = self.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(gpu.buffer(), row * row_bytes, &staging.buffer, 0, bytes);
            self.queue.submit([encoder.finish()]);
            let slice = staging.buffer.slice(..bytes);
            map_read(&self.device, &slice, &self.core.lost, Completion::Callback).await?;
            let data = {
                let view = slice
                    .get_mapped_range()
                    .map_err(|e| internal(format!("readback mapping failed: {e}")))?;
                decode(&view, value.dtype)
            };
            staging.buffer.unmap();
            self.core.counters.add_readback(bytes);
            sink(row * value.size as u64, data?)?;
            row += rows;
        }
        Ok(())
    }
}
