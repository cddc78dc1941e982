//! Host data onto a WebGL2 device (written into data textures, tile by tile) and rows back
//! (texel rows copied to a staging buffer and mapped, a piece at a time).

use super::{gl_value, GlBatch, GlDevice, TextureLease};
use crate::column::{try_vec, Column, ColumnData};
use crate::dtype::DType;
use crate::engine::{internal, Transfers, READ_PIECE_BYTES};
use crate::error::Result;
use crate::memory::Home;
use crate::value::{RowSink, Value};
use crate::wgpu_shared::{decode, device_words, map_read, Completion};
use crate::wgsl::{plane_channels, planes};

use super::device::texture_format;

impl Transfers for GlDevice {
    fn upload(&self, batch: &mut GlBatch, column: &Column) -> Result<Value> {
        let layout = self.layout;
        let rows = column.rows;
        let size = column.size as usize;
        let channels = plane_channels(column.size) as usize;
        let format = texture_format(column.dtype().class(), channels as u32);
        let words = device_words(column)?;
        let width =
            self.texture_width(format, planes(column.size), layout.rows_in_tile(rows, 0)) as usize;
        let mut tiles = Vec::new();
        for tile in 0..layout.tiles(rows) {
            let tile_rows = layout.rows_in_tile(rows, tile) as usize;
            let base = (tile * layout.tile_rows()) as usize;
            let height = tile_rows.div_ceil(width).max(1);
            let mut textures = Vec::new();
            for plane in 0..planes(column.size) as usize {
                let texture =
                    self.take_texture_of(format, width as u32, height as u32, &batch.home)?;
                if rows == 0 {
                    // An empty value binds a texture whose texels nothing reads.
                    textures.push(texture);
                    continue;
                }
                let mut texels = try_vec(width * height * channels * 4, "staging an upload")?;
                if channels == 1 {
                    texels.extend_from_slice(&words[base * 4..(base + tile_rows) * 4]);
                } else {
                    for row in base..base + tile_rows {
                        for c in 0..channels {
                            let lane = plane * 4 + c;
                            let at = (row * size + lane) * 4;
                            match words.get(at..at + 4) {
                                Some(word) if lane < size => texels.extend_from_slice(word),
                                _ => texels.extend_from_slice(&[0; 4]),
                            }
                        }
                    }
                }
                texels.resize(width * height * channels * 4, 0);
                self.queue.write_texture(
                    texture.as_image_copy(),
                    &texels,
                    wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some((width * channels * 4) as u32),
                        rows_per_image: None,
                    },
                    wgpu::Extent3d {
                        width: width as u32,
                        height: height as u32,
                        depth_or_array_layers: 1,
                    },
                );
                self.core.counters.add_upload(texels.len() as u64);
                textures.push(texture);
            }
            tiles.push(textures);
        }
        Ok(self.stored(column.dtype(), column.size, rows, tiles))
    }
    async fn read_rows(
        &self,
        value: &Value,
        start: u32,
        end: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<()> {
        for piece in self.read_pieces(value, start, end)? {
            let bytes = piece.bytes();
            let staging = self.take_buffer(bytes, STAGING, &Home::Pool)?;
            let mut encoder = self.device.create_command_encoder(&Default::default());
            piece.record(&mut encoder, &staging, 0);
            let data = (self.mapped(encoder, &staging, bytes, |view| piece.data(view))).await?;
            sink(piece.row as u64 * value.size as u64, data?)?;
        }
        Ok(())
    }
    /// Reads of at most `READ_PIECE_BYTES` in all are copied into one staging buffer and
    /// mapped once: each map waits for the device (in a browser, a pipeline stall).
    async fn read_together(&self, reads: &[(&Value, u32, u32)]) -> Result<Vec<ColumnData>> {
        let mut pieces = Vec::with_capacity(reads.len());
        let mut total = 0u64;
        for &(value, start, end) in reads {
            let mut of_read = Vec::new();
            for piece in self.read_pieces(value, start, end)? {
                // A copy into a buffer starts at a multiple of its texel's bytes (at most 16).
                let at = total.next_multiple_of(16);
                total = at + piece.bytes();
                of_read.push((piece, at));
            }
            pieces.push(of_read);
        }
        if reads.len() < 2 || total == 0 || total > READ_PIECE_BYTES {
            // A read at a time, each in its own pieces.
            let mut columns = Vec::with_capacity(reads.len());
            for &(value, start, end) in reads {
                let mut column = Column::empty(value.dtype, value.size)?;
                column.reserve_rows(end.saturating_sub(start))?;
                (self.read_rows(value, start, end, &mut |_, data| column.append(&data))).await?;
                columns.push(column.data);
            }
            return Ok(columns);
        }
        let staging = self.take_buffer(total, STAGING, &Home::Pool)?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        for (piece, at) in pieces.iter().flatten() {
            piece.record(&mut encoder, &staging, *at);
        }
        let assemble = |view: &[u8]| {
            let mut columns = Vec::with_capacity(reads.len());
            for (&(value, start, end), of_read) in reads.iter().zip(&pieces) {
                let mut column = Column::empty(value.dtype, value.size)?;
                column.reserve_rows(end.saturating_sub(start))?;
                for (piece, at) in of_read {
                    let at = *at as usize;
                    column.append(&piece.data(&view[at..at + piece.bytes() as usize])?)?;
                }
                columns.push(column.data);
            }
            Ok(columns)
        };
        (self.mapped(encoder, &staging, total, assemble)).await?
    }
}

const STAGING: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);

/// Rows `first..last` of one tile of a value (its rows from `row`), read in one copy per
/// texture and texel span.
struct ReadPiece<'v> {
    textures: &'v [TextureLease],
    size: u32,
    dtype: DType,
    row: u32,
    first: u32,
    last: u32,
}

impl GlDevice {
    /// Submits `encoder`, maps the first `bytes` of `staging` once the device is done and
    /// hands them to `view`.
    async fn mapped<R>(
        &self,
        encoder: wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
        bytes: u64,
        view: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        self.queue.submit([encoder.finish()]);
        let slice = staging.slice(..bytes);
        map_read(&self.device, &slice, &self.core.lost, Completion::Polled).await?;
        let read = {
            let mapped = slice
                .get_mapped_range()
                .map_err(|e| internal(format!("readback mapping failed: {e}")))?;
            view(&mapped)
        };
        staging.unmap();
        self.core.counters.add_readback(bytes);
        Ok(read)
    }

    /// The pieces reading rows `start..end` of `value`: each within one tile, and holding
    /// at most about `READ_PIECE_BYTES`.
    fn read_pieces<'v>(
        &self,
        value: &'v Value,
        start: u32,
        end: u32,
    ) -> Result<Vec<ReadPiece<'v>>> {
        let gl = gl_value(value)?;
        let tile_rows = self.layout.tile_rows();
        let texel_bytes = plane_channels(value.size) as u64 * 4;
        let planes = planes(value.size) as u64;
        let most = (READ_PIECE_BYTES / (texel_bytes * planes)).clamp(1, u32::MAX as u64) as u32;
        let mut pieces = Vec::new();
        let mut row = start;
        while row < end {
            let tile = row / tile_rows;
            let base = tile * tile_rows;
            let textures = gl
                .tiles()
                .get(tile as usize)
                .filter(|textures| !textures.is_empty())
                .ok_or_else(|| internal("a read past a value's tiles"))?;
            let first = row - base;
            let last = (end - base).min(tile_rows).min(first.saturating_add(most));
            pieces.push(ReadPiece {
                textures,
                size: value.size,
                dtype: value.dtype,
                row,
                first,
                last,
            });
            row = base + last;
        }
        Ok(pieces)
    }
}

impl ReadPiece<'_> {
    fn texel_bytes(&self) -> u64 {
        plane_channels(self.size) as u64 * 4
    }

    /// Bytes of one texture's texels of the piece.
    fn plane_bytes(&self) -> u64 {
        (self.last - self.first) as u64 * self.texel_bytes()
    }

    /// Bytes the piece takes in a staging buffer: each texture's texels, one after another.
    fn bytes(&self) -> u64 {
        self.plane_bytes() * self.textures.len() as u64
    }

    /// Records the copies of the piece's texels into `staging` from byte `at` on.
    fn record(&self, encoder: &mut wgpu::CommandEncoder, staging: &wgpu::Buffer, at: u64) {
        let texel_bytes = self.texel_bytes();
        // Only the texels of rows first..last: their texel rows' parts (values too wide to
        // sample at once have narrower textures).
        let spans = texel_spans(self.first, self.last, self.textures[0].width());
        for (p, texture) in self.textures.iter().enumerate() {
            let mut offset = at + p as u64 * self.plane_bytes();
            for span in &spans {
                encoder.copy_texture_to_buffer(
                    wgpu::TexelCopyTextureInfo {
                        texture,
                        mip_level: 0,
                        origin: wgpu::Origin3d {
                            x: span.x,
                            y: span.y,
                            z: 0,
                        },
                        aspect: wgpu::TextureAspect::All,
                    },
                    wgpu::TexelCopyBufferInfo {
                        buffer: staging,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset,
                            // Full texel rows are at least 256 bytes, as copies of several
                            // rows need; a part of a row is copied alone.
                            bytes_per_row: (span.height > 1)
                                .then_some(span.width * texel_bytes as u32),
                            rows_per_image: None,
                        },
                    },
                    wgpu::Extent3d {
                        width: span.width,
                        height: span.height,
                        depth_or_array_layers: 1,
                    },
                );
                offset += span.width as u64 * span.height as u64 * texel_bytes;
            }
        }
    }

    /// The piece's rows from its bytes `view` as copied by `record`: lanes gathered from
    /// the textures' texels.
    fn data(&self, view: &[u8]) -> Result<ColumnData> {
        let (size, channels) = (self.size as usize, plane_channels(self.size) as usize);
        let plane_bytes = self.plane_bytes() as usize;
        let count = (self.last - self.first) as usize;
        let mut words = try_vec(count * size * 4, "a readback")?;
        if channels == 1 {
            words.extend_from_slice(&view[..count * 4]);
        } else {
            for local in 0..count {
                for lane in 0..size {
                    let at = (lane / 4) * plane_bytes + (local * channels + lane % 4) * 4;
                    words.extend_from_slice(&view[at..at + 4]);
                }
            }
        }
        decode(&words, self.dtype)
    }
}

/// A rectangle of texels one copy reads.
struct Span {
    x: u32,
    y: u32,
    width: u32,
    height: u32,
}

/// The texels of rows `first..last` of a tile whose textures are `width` texels wide (a
/// texel per row, rows along texel rows), in row order: the rest of the first texel row, the
/// full texel rows, then the start of the last.
fn texel_spans(first: u32, last: u32, width: u32) -> Vec<Span> {
    let mut spans = Vec::with_capacity(3);
    let mut at = first;
    if at % width != 0 && at < last {
        let end = last.min((at / width + 1) * width);
        spans.push(Span {
            x: at % width,
            y: at / width,
            width: end - at,
            height: 1,
        });
        at = end;
    }
    let full = (last - at) / width;
    if full > 0 {
        spans.push(Span {
            x: 0,
            y: at / width,
            width,
            height: full,
        });
        at += full * width;
    }
    if at < last {
        spans.push(Span {
            x: 0,
            y: at / width,
            width: last - at,
            height: 1,
        });
    }
    spans
}
