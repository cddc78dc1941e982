//! Host data onto a WebGPU device (words written to a pooled buffer) and rows back (copied
//! to a staging buffer and mapped, as many values' rows at once as the buffer holds).

use super::{GpuBatch, GpuDevice, GpuValue, STORAGE};
use crate::column::{Column, ColumnData};
use crate::dtype::DType;
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
        let spans = spans_of(value, start, end)?;
        let firsts: Vec<u64> = spans.iter().map(|span| span.first_row).collect();
        let size = value.size as u64;
        let mut take = |k: usize, data| sink(firsts[k] * size, data);
        self.read_spans(&spans, &mut take).await
    }
    /// Every read's rows are copied into staging buffers of at most `READBACK_PIECE_BYTES`,
    /// each mapped once: a map is a round trip to the device, where a copy is a command.
    async fn read_together(&self, reads: &[(&Value, u32, u32)]) -> Result<Vec<ColumnData>> {
        let mut spans = Vec::new();
        let mut owners = Vec::new();
        let mut columns = Vec::with_capacity(reads.len());
        for (k, &(value, start, end)) in reads.iter().enumerate() {
            let of_read = spans_of(value, start, end)?;
            owners.extend(std::iter::repeat_n(k, of_read.len()));
            spans.extend(of_read);
            let mut column = Column::empty(value.dtype, value.size)?;
            column.reserve_rows(end.saturating_sub(start))?;
            columns.push(column);
        }
        let mut take = |k: usize, data| columns[owners[k]].append(&data);
        self.read_spans(&spans, &mut take).await?;
        Ok(columns.into_iter().map(|column| column.data).collect())
    }
}

/// Rows a read copies from one buffer: `bytes` from byte `from`, the value's rows from
/// `first_row`.
struct Span<'v> {
    buffer: &'v wgpu::Buffer,
    from: u64,
    bytes: u64,
    first_row: u64,
    dtype: DType,
}

/// The spans reading rows `start..end` of `value`, each at most `READBACK_PIECE_BYTES`.
fn spans_of(value: &Value, start: u32, end: u32) -> Result<Vec<Span<'_>>> {
    let Some(gpu) = value.storage_of::<GpuValue>() else {
        return Err(internal("not a WebGPU value"));
    };
    let row_bytes = value.size as u64 * 4;
    let rows_per_piece = (READBACK_PIECE_BYTES / row_bytes).max(1);
    let (mut row, end) = (start as u64, end.min(value.rows) as u64);
    let mut spans = Vec::new();
    while row < end {
        let rows = rows_per_piece.min(end - row);
        spans.push(Span {
            buffer: gpu.buffer(),
            from: row * row_bytes,
            bytes: rows * row_bytes,
            first_row: row,
            dtype: value.dtype,
        });
        row += rows;
    }
    Ok(spans)
}

impl GpuDevice {
    /// Copies `spans`, one after another, into a staging buffer, as many at once as fit
    /// `READBACK_PIECE_BYTES` (at least one), maps it once per fill, and hands each span's
    /// rows to `take` with its index, in order.
    async fn read_spans(
        &self,
        spans: &[Span<'_>],
        take: &mut dyn FnMut(usize, ColumnData) -> Result<()>,
    ) -> Result<()> {
        let mut fills = Vec::new();
        let (mut first, mut most) = (0, 0);
        while first < spans.len() {
            let mut end = first + 1;
            let mut total = spans[first].bytes;
            while end < spans.len() && total + spans[end].bytes <= READBACK_PIECE_BYTES {
                total += spans[end].bytes;
                end += 1;
            }
            fills.push((first..end, total));
            most = most.max(total);
            first = end;
        }
        if spans.is_empty() {
            // No rows (`spans_of` makes no span of none): nothing to wait for.
            return Ok(());
        }
        // One staging buffer for every fill: a large one made afresh (the shared pool drops
        // its largest buffers first) cost an H100 40 ms of first-touch mapping for 32 MB, ten
        // times the copy; fills of at most 8 MB stay in the pool.
        let staging = self.take_buffer(most, STAGING, &Home::Pool)?;
        for (range, total) in fills {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            let mut at = 0;
            for span in &spans[range.clone()] {
                encoder.copy_buffer_to_buffer(
                    span.buffer,
                    span.from,
                    &staging.buffer,
                    at,
                    span.bytes,
                );
                at += span.bytes;
            }
            self.queue.submit([encoder.finish()]);
            let slice = staging.buffer.slice(..total);
            map_read(&self.device, &slice, &self.core.lost, Completion::Callback).await?;
            let decoded = {
                let view = slice
                    .get_mapped_range()
                    .map_err(|e| internal(format!("readback mapping failed: {e}")))?;
                let mut at = 0;
                let mut decoded = Vec::with_capacity(range.len());
                for span in &spans[range.clone()] {
                    decoded.push(decode(&view[at..at + span.bytes as usize], span.dtype));
                    at += span.bytes as usize;
                }
                decoded
            };
            staging.buffer.unmap();
            self.core.counters.add_readback(total);
            for (k, data) in range.zip(decoded) {
                take(k, data?)?;
            }
        }
        Ok(())
    }
}
