//! The WebGL2 backend: the shared plan, run as fragment-shader kernels on wgpu's GL backend.
//!
//! Values live in data textures of 32-bit texels (see `TextureLayout`): float columns in
//! float textures, integer columns in integer textures, so integer results stay exact.
//! Each fused region is one draw per tile (more when the output row is wider than the
//! render targets one draw can write); a reduction folds rows over several draws.

mod device;
mod reduce;
mod scatter;
mod sort;

use std::rc::Rc;

use crate::column::{try_vec, Column};
use crate::engine::{
    device_name, internal, Backend, DeviceCore, DeviceModel, Written, READ_PIECE_BYTES,
};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::gpu::{decode, device_words, oneshot, scopes, scopes::ErrorScopes};
use crate::memory::Home;
use crate::plan::{Access, PlanLimits, Region, SortWrites, MAX_REGION_NODES};
use crate::value::{RowSink, Storage, Value};
use crate::wgsl::fragment::{self, PARAM_TILE_BASE};
use crate::wgsl::{is_literal, plane_channels, planes, Kernel, TextureBinding};
pub use device::{texture_format, GlDevice, GlLimits, TextureLease};

/// A value on the device: per tile, one texture per plane (see `TextureLayout`).
pub struct GlValue {
    tiles: Vec<Vec<TextureLease>>,
    device: GlDevice,
}

impl GlValue {
    pub fn device(&self) -> &GlDevice {
        &self.device
    }
}

/// What a draw rasterizes.
#[derive(Clone, Copy)]
enum Shape {
    /// One triangle covering the target: a fragment per texel (within a scissor rect).
    FullTarget(Option<(u32, u32, u32, u32)>),
    /// This many points, placed by the vertex shader.
    Points(u32),
}

/// The work of one evaluation: draws run as they are recorded; the scopes catch errors.
pub struct GlBatch {
    home: Home,
    scopes: Option<ErrorScopes>,
}

fn rows_of(node: &crate::ir::Node) -> u32 {
    if node.meta.constant {
        1
    } else {
        node.meta.length
    }
}

fn gl_value(value: &Value) -> Result<&GlValue> {
    match &value.storage {
        Storage::WebGl(gl) => Ok(gl),
        _ => Err(internal("a kernel input is not on this WebGL2 device")),
    }
}

impl GlDevice {
    fn value(&self, region: &Region, tiles: Vec<Vec<TextureLease>>) -> Value {
        let node = &region.root;
        Value {
            device: self.core.id,
            dtype: node.meta.dtype,
            size: node.meta.size,
            rows: region.output_rows(),
            storage: Storage::WebGl(GlValue {
                tiles,
                device: self.clone(),
            }),
        }
    }

    /// Output planes grouped into draws: as many render targets as one draw may write.
    fn plane_groups(&self, size: u32) -> Vec<std::ops::Range<u32>> {
        let bytes_per_plane = 4 * plane_channels(size);
        let per_draw = (self.limits.max_color_attachment_bytes_per_sample / bytes_per_plane)
            .min(self.limits.max_color_attachments)
            .max(1);
        let count = planes(size);
        (0..count.div_ceil(per_draw))
            .map(|g| g * per_draw..((g + 1) * per_draw).min(count))
            .collect()
    }

    async fn elementwise(
        &self,
        batch: &GlBatch,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value> {
        let root = &region.root;
        let layout = self.layout;
        let rows = region.rows;
        let size = root.meta.size;
        let format = texture_format(root.meta.dtype.class(), plane_channels(size));
        let kernels = self
            .plane_groups(size)
            .into_iter()
            .map(|group| {
                fragment::elementwise_kernel(region, leaves, layout, rows, group.clone())
                    .map(|k| (group, k))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut tiles = Vec::new();
        for tile in 0..layout.tiles(rows) {
            let tile_rows = layout.rows_in_tile(rows, tile);
            let height = tile_rows.div_ceil(layout.width());
            let textures = (0..planes(size))
                .map(|_| self.take_texture(format, height, &batch.home))
                .collect::<Result<Vec<_>>>()?;
            if tile_rows > 0 {
                for (group, kernel) in &kernels {
                    let mut params = kernel.params.clone();
                    params[PARAM_TILE_BASE] = tile * layout.tile_rows();
                    let inputs = bound_textures(kernel, region, leaves, tile)?;
                    let targets: Vec<&wgpu::Texture> = textures
                        [group.start as usize..group.end as usize]
                        .iter()
                        .map(|t| &**t)
                        .collect();
                    let scissor = Some((0, 0, layout.width(), height));
                    self.draw(
                        batch,
                        &kernel.source,
                        &params,
                        &inputs,
                        &targets,
                        Shape::FullTarget(scissor),
                    )
                    .await?;
                }
            }
            tiles.push(textures);
        }
        Ok(self.value(region, tiles))
    }

    /// One draw with `source` (of the full-target triangle, limited to a scissor rect, or of
    /// points): binding 0 the parameters, 1.. the `inputs`; render targets `targets`.
    async fn draw(
        &self,
        batch: &GlBatch,
        source: &str,
        params: &[u32],
        inputs: &[&wgpu::Texture],
        targets: &[&wgpu::Texture],
        shape: Shape,
    ) -> Result<()> {
        self.settle()?;
        let formats: Vec<wgpu::TextureFormat> = targets.iter().map(|t| t.format()).collect();
        let topology = match shape {
            Shape::FullTarget(_) => wgpu::PrimitiveTopology::TriangleList,
            Shape::Points(_) => wgpu::PrimitiveTopology::PointList,
        };
        let pipeline = self.pipeline(source, &formats, topology).await?;
        let mut words: Vec<u8> = params.iter().flat_map(|p| p.to_le_bytes()).collect();
        words.resize(params.len().div_ceil(4).max(1) * 16, 0);
        let uniform = self.take_buffer(
            words.len() as u64,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            &batch.home,
        )?;
        self.queue.write_buffer(&uniform, 0, &words);
        let views: Vec<wgpu::TextureView> = inputs
            .iter()
            .map(|t| t.create_view(&Default::default()))
            .collect();
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &uniform,
                offset: 0,
                size: std::num::NonZeroU64::new(words.len() as u64),
            }),
        }];
        for (k, view) in views.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: k as u32 + 1,
                resource: wgpu::BindingResource::TextureView(view),
            });
        }
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("gputable draw"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let target_views: Vec<wgpu::TextureView> = targets
            .iter()
            .map(|t| t.create_view(&Default::default()))
            .collect();
        let attachments: Vec<Option<wgpu::RenderPassColorAttachment>> = target_views
            .iter()
            .map(|view| {
                Some(wgpu::RenderPassColorAttachment {
                    view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Load,
                        store: wgpu::StoreOp::Store,
                    },
                })
            })
            .collect();
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("gputable draw"),
                color_attachments: &attachments,
                ..Default::default()
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            if let Shape::FullTarget(Some((x, y, w, h))) = shape {
                pass.set_scissor_rect(x, y, w, h);
            }
            match shape {
                Shape::FullTarget(_) => pass.draw(0..3, 0..1),
                Shape::Points(count) => pass.draw(0..count, 0..1),
            }
        }
        self.queue.submit([encoder.finish()]);
        self.core.counters.add_kernels(1);
        Ok(())
    }

    /// Waits for the work submitted so far (native only). Mesa's llvmpipe, under wgpu's GL
    /// backend, lets a draw read a texture before the draws that render it have run (seen
    /// as lost scatters, and as a dense form built from wrong indices in 3 of 10 runs of
    /// `filters_and_products_sort_their_entries_once`), so natively each draw waits for the
    /// ones before it; in a browser, WebGL orders them itself.
    fn settle(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        crate::gpu::wait_idle(&self.device)?;
        Ok(())
    }

    /// The value `receiver` gets once the device has done its work: natively by waiting; in
    /// a browser WebGL2 completes work only while polled, so poll and yield to the event loop.
    async fn wait_for<T>(&self, receiver: &oneshot::Receiver<T>) -> Result<T> {
        loop {
            #[cfg(not(target_arch = "wasm32"))]
            crate::gpu::wait_idle(&self.device)?;
            #[cfg(target_arch = "wasm32")]
            (self.device.poll(wgpu::PollType::Poll)).map_err(crate::gpu::poll_failed)?;
            if let Some(value) = receiver.try_take() {
                return Ok(value);
            }
            self.core.lost.check()?;
            #[cfg(target_arch = "wasm32")]
            yield_to_event_loop().await;
        }
    }
}

/// The textures `kernel` binds for a draw over tile `tile`.
fn bound_textures<'a>(
    kernel: &Kernel,
    region: &Region,
    leaves: &'a [Rc<Value>],
    tile: u32,
) -> Result<Vec<&'a wgpu::Texture>> {
    kernel
        .textures
        .iter()
        .map(
            |&TextureBinding {
                 leaf,
                 plane,
                 tile: fixed,
             }| {
                let node = &region.leaves[leaf];
                let value = gl_value(&leaves[leaf])?;
                let wanted = match fixed {
                    Some(t) => t,
                    None if node.meta.constant => 0,
                    None => tile,
                };
                // A shorter leaf has no such tile: any texture will do, its rows read as 0.
                let t = (wanted as usize).min(value.tiles.len() - 1);
                Ok(&*value.tiles[t][plane as usize])
            },
        )
        .collect()
}

impl DeviceModel for GlDevice {
    fn core(&self) -> &DeviceCore {
        &self.core
    }
    fn name(&self) -> String {
        device_name("webgl", &self.adapter_name)
    }
    fn plan_limits(&self) -> PlanLimits {
        let layout = self.layout;
        PlanLimits {
            max_region_nodes: MAX_REGION_NODES,
            max_bindings: self.limits.max_sampled_textures_per_shader_stage as usize,
            binding_limit_name: "maxSampledTexturesPerShaderStage",
            // A plane per leaf, every tile of one read at any row; a reduction reads its
            // materialized input one plane of one tile per draw.
            binding_cost: Box::new(move |node, access| match access {
                _ if is_literal(node) => 0,
                Access::Reduced => 1,
                Access::Random => (planes(node.meta.size) * layout.tiles(rows_of(node))) as usize,
                Access::Row => planes(node.meta.size) as usize,
            }),
            sort_writes_keys: SortWrites::EveryKey,
        }
    }
    fn value_bytes(&self, dtype: crate::dtype::DType, size: u32, rows: u32) -> u64 {
        let layout = self.layout;
        let format = texture_format(dtype.class(), plane_channels(size));
        let width = self.texture_width(format, planes(size), layout.rows_in_tile(rows, 0));
        let row_bytes = width as u64 * device::texel_bytes(format) as u64;
        (0..layout.tiles(rows).max(1))
            .map(|tile| {
                let height = layout.rows_in_tile(rows, tile).div_ceil(width).max(1) as u64;
                crate::memory::size_class(height * row_bytes, u64::MAX) * planes(size) as u64
            })
            .sum()
    }
    fn reads_in_place(&self, value: &Value) -> bool {
        value.device == self.core.id
    }
    fn takes_from_host(&self, leaf: &crate::ir::Node) -> bool {
        is_literal(leaf)
    }
    fn reduction_state_bytes(&self, root: &crate::ir::Node, parts: u32) -> u64 {
        self.reduction_states_bytes(root, parts)
    }
    fn reduction_scratch_bytes(&self, root: &crate::ir::Node, rows: u32) -> u64 {
        self.reduction_scratch(root, rows)
    }
    fn reduction_tail_kernels(&self, root: &crate::ir::Node) -> (u64, u64) {
        let extent =
            crate::ir::Reduction::of(root).is_some_and(|r| r.kind == crate::ir::ReduceKind::Extent);
        (
            1,
            if extent {
                1
            } else {
                planes(root.inputs[0].meta.size) as u64
            },
        )
    }
    fn sorts(&self, rows: u32, keys: usize) -> bool {
        self.merge_sorts(rows, keys)
    }
    fn sort_scratch_bytes(&self, rows: u32, keys: usize) -> u64 {
        match self.merge_sorts(rows, keys) {
            true => self.merge_sort_scratch_bytes(rows, keys),
            // A split pass's flags, their scan, destinations and the previous permutation.
            false => 4 * self.value_bytes(crate::dtype::DType::U32, 1, rows),
        }
    }
    fn describe_task(&self, region: &Region) -> Result<(u64, String)> {
        let layout = self.layout;
        let rows = region.rows;
        let tiles = layout.tiles(rows);
        let (draws, line) = if region.is_reduction() {
            let (draws, line) = self.describe_reduction(region);
            (draws as u32, line)
        } else if region.is_sort() {
            let (draws, line) = sort::describe_merge_sort(&region.root);
            (draws as u32, line)
        } else if region.is_scatter() {
            let out_tiles = layout.tiles(region.output_rows());
            let draws = if rows == 0 { 0 } else { tiles * out_tiles };
            (
                draws,
                format!("{draws} point-list draw(s): a point per input row, placed at its destination, per tile of the input and of the output"),
            )
        } else if rows == 0 {
            (0, "no draw (0 rows)".to_string())
        } else {
            let groups = self.plane_groups(region.root.meta.size).len() as u32;
            let width = layout.width();
            let height = layout.rows_in_tile(rows, 0).div_ceil(width);
            (
                tiles * groups,
                format!(
                    "{} draw(s): {tiles} tile(s) of up to {width}x{height} fragments, one per row, {groups} draw(s) per tile",
                    tiles * groups
                ),
            )
        };
        Ok((draws as u64, line))
    }
    fn kernel_words(&self) -> Option<(&'static str, &'static str)> {
        Some(("draw", "draws"))
    }
}

impl Backend for GlDevice {
    type Batch = GlBatch;
    fn begin(&self, home: Home) -> Result<GlBatch> {
        Ok(GlBatch {
            home,
            scopes: Some(ErrorScopes::push(&self.device)),
        })
    }
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
        Ok(Value {
            device: self.core.id,
            dtype: column.dtype(),
            size: column.size,
            rows,
            storage: Storage::WebGl(GlValue {
                tiles,
                device: self.clone(),
            }),
        })
    }
    async fn run_region(
        &self,
        batch: &mut GlBatch,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value> {
        self.elementwise(batch, region, leaves).await
    }
    type States = reduce::GlStates;
    fn reduction_states(
        &self,
        batch: &mut GlBatch,
        root: &crate::ir::Node,
        parts: u32,
    ) -> Result<reduce::GlStates> {
        self.states_for(batch, root, parts)
    }
    async fn reduce_chunk(
        &self,
        batch: &mut GlBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &mut reduce::GlStates,
        part: u32,
    ) -> Result<()> {
        self.reduce_task(batch, task, leaves, first_row, states, part)
            .await
    }
    async fn combine_states(
        &self,
        batch: &mut GlBatch,
        root: &crate::ir::Node,
        states: reduce::GlStates,
        parts: u32,
        every: u32,
    ) -> Result<reduce::GlStates> {
        self.combine(batch, root, states, parts, every).await
    }
    async fn finish_reduction(
        &self,
        batch: &mut GlBatch,
        region: &Region,
        states: reduce::GlStates,
    ) -> Result<Value> {
        self.finish_reduce(batch, region, states).await
    }
    async fn scatter_target(
        &self,
        batch: &mut GlBatch,
        root: &crate::ir::Node,
    ) -> Result<Vec<Value>> {
        Ok(vec![self.scatter_target_of(batch, root)?])
    }
    async fn scatter_rows(
        &self,
        batch: &mut GlBatch,
        task: &Region,
        destinations: &Value,
        written: Written<'_>,
        parts: &mut [Value],
    ) -> Result<()> {
        let [target] = parts else {
            return Err(internal(
                "a WebGL2 scatter output is one value (tiled within)",
            ));
        };
        self.scatter_task(batch, task, destinations, written, target)
            .await
    }
    async fn sort_permutation_and_keys(
        &self,
        batch: &mut GlBatch,
        keys: &[&[Rc<Value>]],
        bits: &[u32],
        sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)> {
        self.merge_sort(batch, keys, bits, sorted).await
    }
    async fn flush(&self, _: &mut GlBatch) -> Result<()> {
        Ok(())
    }
    async fn finish(&self, mut batch: GlBatch) -> Result<()> {
        scopes::finish_evaluation(batch.scopes.take(), &self.core.lost).await
    }
    async fn read_rows(
        &self,
        value: &Value,
        start: u32,
        end: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<()> {
        let gl = gl_value(value)?;
        let layout = self.layout;
        let size = value.size as usize;
        let channels = plane_channels(value.size) as u64;
        let tile_rows = layout.tile_rows();
        let mut row = start;
        while row < end {
            let tile = row / tile_rows;
            let base = tile * tile_rows;
            let textures = gl
                .tiles
                .get(tile as usize)
                .filter(|textures| !textures.is_empty())
                .ok_or_else(|| internal("a read past a value's tiles"))?;
            // Values too wide to sample at once have narrower textures.
            let width = textures[0].width() as u64;
            let row_bytes = width * channels * 4;
            // Texel rows per piece: a read holds at most about READ_PIECE_BYTES at once.
            let piece = (READ_PIECE_BYTES / (row_bytes * textures.len() as u64)).max(1);
            let first = row - base;
            let y0 = first as u64 / width;
            let last = ((y0 + piece) * width)
                .min((end - base) as u64)
                .min(tile_rows as u64) as u32;
            // Texel rows holding rows first..last of this tile (one texel per row).
            let y1 = (last as u64).div_ceil(width);
            let plane_bytes = (y1 - y0) * row_bytes;
            let staging = self.take_buffer(
                plane_bytes * textures.len() as u64,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                &Home::Pool,
            )?;
            let mut encoder = self.device.create_command_encoder(&Default::default());
            for (p, texture) in textures.iter().enumerate() {
                encoder.copy_texture_to_buffer(
                    wgpu::TexelCopyTextureInfo {
                        texture,
                        mip_level: 0,
                        origin: wgpu::Origin3d {
                            x: 0,
                            y: y0 as u32,
                            z: 0,
                        },
                        aspect: wgpu::TextureAspect::All,
                    },
                    wgpu::TexelCopyBufferInfo {
                        buffer: &staging,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: p as u64 * plane_bytes,
                            bytes_per_row: Some(row_bytes as u32),
                            rows_per_image: None,
                        },
                    },
                    wgpu::Extent3d {
                        width: width as u32,
                        height: (y1 - y0) as u32,
                        depth_or_array_layers: 1,
                    },
                );
            }
            self.queue.submit([encoder.finish()]);
            let total = plane_bytes * textures.len() as u64;
            let slice = staging.slice(..total);
            let (sender, mapped) = oneshot::channel();
            slice.map_async(wgpu::MapMode::Read, move |result| sender.send(result));
            self.wait_for(&mapped).await?.map_err(|e| {
                GpuTableError::new(ErrorCode::DeviceLost, format!("readback failed: {e}"))
            })?;
            let count = (last - first) as usize;
            let mut words = try_vec(count * size * 4, "a readback")?;
            {
                let view = slice
                    .get_mapped_range()
                    .map_err(|e| internal(format!("readback mapping failed: {e}")))?;
                // Texel of row `first` in the copied texel rows.
                let skip = (first as u64 - y0 * width) as usize;
                if channels == 1 {
                    words.extend_from_slice(&view[skip * 4..(skip + count) * 4]);
                } else {
                    for local in skip..skip + count {
                        for lane in 0..size {
                            let at = (lane / 4) * plane_bytes as usize
                                + (local * channels as usize + lane % 4) * 4;
                            words.extend_from_slice(&view[at..at + 4]);
                        }
                    }
                }
            }
            staging.unmap();
            self.core.counters.add_readback(total);
            sink(row as u64 * size as u64, decode(&words, value.dtype)?)?;
            row = base + last;
        }
        Ok(())
    }
    fn trim(&self, cache: Option<&str>) {
        self.trim_pools(cache);
    }
    fn set_pool_cap(&self, bytes: u64) {
        self.set_caps(bytes);
    }
    fn destroy(&self) {
        self.destroy_device();
    }
}

/// Resolves on the next macrotask (setTimeout 0), in pages and workers alike.
#[cfg(target_arch = "wasm32")]
async fn yield_to_event_loop() {
    use wasm_bindgen::JsCast;
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        let global = js_sys::global();
        let set_timeout = js_sys::Reflect::get(&global, &"setTimeout".into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        match set_timeout {
            Some(set_timeout) => {
                let _ = set_timeout.call2(&global, &resolve, &0.into());
            }
            None => {
                let _ = resolve.call0(&wasm_bindgen::JsValue::UNDEFINED);
            }
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
