//! The WebGL2 backend: the shared plan, run as fragment-shader kernels on wgpu's GL backend.
//!
//! Columns live in data textures of 32-bit texels (see `TextureLayout`): float columns in
//! float textures, integer columns in integer textures, so integer results stay exact.
//! Each fused region is one draw per tile (more when the output row is wider than the
//! render targets one draw can write); `extent` folds rows over several draws.

pub mod codegen;
mod device;

use std::collections::HashMap;
use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::gpu::codegen::{
    plane_channels, planes, random_access_inputs, Kernel, TextureBinding, TextureLayout,
};
use crate::gpu::scopes::ErrorScopes;
use crate::gpu::{decode, device_words, oneshot};
use crate::ir::{validate_segments, NodeRef, Op};
use crate::plan::{plan_with, Fusion, Plan, Region};
use codegen::{EXTENT_FOLD, PARAM_TILE_BASE};
pub use device::{texture_format, GlColumn, GlDevice, GlLimits, LiveTexture};

/// Evaluates `roots` on `device`, leaving each root's output on the node (read back).
#[cfg(not(target_arch = "wasm32"))]
pub fn evaluate(device: &GlDevice, roots: &[NodeRef]) -> Result<()> {
    pollster::block_on(evaluate_async(device, roots))
}

/// `evaluate`, for the browser's event loop.
pub async fn evaluate_async(device: &GlDevice, roots: &[NodeRef]) -> Result<()> {
    device.check_alive()?;
    device.prune_uploads();
    let plan = plan_within_limits(device, roots, false)?;
    let mut resident: HashMap<u64, Rc<GlColumn>> = HashMap::new();
    // Catches what the per-draw scopes do not (texture creation, uploads, copies).
    let scopes = ErrorScopes::push(&device.device);
    let result = run_plan(device, &plan.regions, roots, &mut resident).await;
    match scopes.pop("evaluation failed").await {
        Some(error) if result.is_ok() => Err(error),
        _ => result,
    }
}

/// The fused plan, or the unfused one when a fused draw would bind more textures than a
/// shader stage may sample; `LIMIT_EXCEEDED` if even one node needs more.
fn plan_within_limits(device: &GlDevice, roots: &[NodeRef], replan_roots: bool) -> Result<Plan> {
    let max = device.limits.max_sampled_textures_per_shader_stage as usize;
    // The first region of `plan` whose draw would sample too many textures.
    let too_wide = |plan: &Plan| {
        plan.regions
            .iter()
            .find(|r| texture_bindings(device.layout, r) > max)
            .map(|r| r.root.clone())
    };
    let fused = plan_with(roots, Fusion::On, replan_roots)?;
    if too_wide(&fused).is_none() {
        return Ok(fused);
    }
    let unfused = plan_with(roots, Fusion::Off, replan_roots)?;
    match too_wide(&unfused) {
        None => Ok(unfused),
        Some(node) => Err(GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{} of t{} reads {} textures in one draw; this device's maxSampledTexturesPerShaderStage is {max}",
                node.op.name(),
                node.id,
                node.inputs
                    .iter()
                    .map(|i| planes(i.meta.size) as usize)
                    .sum::<usize>()
            ),
        )),
    }
}

/// Textures one draw of `region` binds: a plane per leaf, every tile for random access.
fn texture_bindings(layout: TextureLayout, region: &Region) -> usize {
    let random = random_access_inputs(region);
    region
        .leaves
        .iter()
        .map(|leaf| {
            let tiles = if random.contains(&leaf.id) {
                layout.tiles(rows_of(leaf))
            } else {
                1
            };
            (planes(leaf.meta.size) * tiles) as usize
        })
        .sum()
}

fn rows_of(node: &NodeRef) -> u32 {
    if node.meta.constant {
        1
    } else {
        node.meta.length
    }
}

/// The passes `root` runs on `device`: the shared plan, then each pass's draws.
pub fn explain(device: &GlDevice, root: &NodeRef) -> Result<String> {
    let plan = plan_within_limits(device, std::slice::from_ref(root), true)?;
    let backend = match device.adapter_name.as_str() {
        "" => "webgl".to_string(),
        name => format!("webgl ({name})"),
    };
    let mut text = plan.describe(&backend);
    let layout = device.layout;
    let mut total = 0;
    for (index, region) in plan.regions.iter().enumerate() {
        let rows = region.rows();
        let tiles = layout.tiles(rows);
        let (draws, line) = if region.root.op == Op::Extent {
            let lanes = region.root.inputs[0].meta.size;
            let folds = extent_fold_passes(layout, rows);
            let per_plane = tiles + folds + 1;
            (
                planes(lanes) * per_plane,
                format!(
                    "{} draws: per 4 lanes, {tiles} draw(s) folding {EXTENT_FOLD} rows per fragment into [min, max] textures, {folds} folding {EXTENT_FOLD} texels per fragment, 1 writing the result",
                    planes(lanes) * per_plane
                ),
            )
        } else if rows == 0 {
            (0, "no draw (0 rows)".to_string())
        } else {
            let groups = plane_groups(device, region.root.meta.size).len() as u32;
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
        total += draws;
        text.push_str(&format!("pass {}: {line}\n", index + 1));
    }
    text.push_str(&format!(
        "{total} draw{} in all\n",
        if total == 1 { "" } else { "s" }
    ));
    Ok(text)
}

async fn run_plan(
    device: &GlDevice,
    regions: &[Region],
    roots: &[NodeRef],
    resident: &mut HashMap<u64, Rc<GlColumn>>,
) -> Result<()> {
    for region in regions {
        for leaf in &region.leaves {
            if let std::collections::hash_map::Entry::Vacant(slot) = resident.entry(leaf.id) {
                slot.insert(make_resident(device, leaf)?);
            }
        }
        for node in region.nodes.iter().filter(|n| n.op == Op::SegmentedMap) {
            let segments = &node.inputs[0];
            let column = match segments.output() {
                Some(column) => column,
                None => Rc::new(read_back(device, &resident[&segments.id], segments).await?),
            };
            validate_segments(&column, node.meta.length)?;
        }
        let output = if region.root.op == Op::Extent {
            run_extent(device, region, resident).await?
        } else {
            run_elementwise(device, region, resident).await?
        };
        resident.insert(region.root.id, Rc::new(output));
    }
    for root in roots {
        if root.output().is_none() {
            let column = read_back(device, &resident[&root.id], root).await?;
            root.set_output(Rc::new(column));
        }
    }
    Ok(())
}

/// The device textures of an evaluated node's data, uploaded now unless they are there
/// already; they stay while the node lives (freed by the next evaluation or
/// `prune_uploads`).
pub fn make_resident(device: &GlDevice, node: &NodeRef) -> Result<Rc<GlColumn>> {
    device.check_alive()?;
    if let Some(column) = device.uploaded(node) {
        return Ok(column);
    }
    let data = node
        .output()
        .ok_or_else(|| internal(format!("t{} has no data to upload", node.id)))?;
    let column = Rc::new(upload(device, &data, node)?);
    device.remember_upload(node, column.clone());
    Ok(column)
}

/// Output planes grouped into draws: as many render targets as one draw may write.
fn plane_groups(device: &GlDevice, size: u32) -> Vec<std::ops::Range<u32>> {
    let bytes_per_plane = 4 * plane_channels(size);
    let per_draw = (device.limits.max_color_attachment_bytes_per_sample / bytes_per_plane)
        .min(device.limits.max_color_attachments)
        .max(1);
    let count = planes(size);
    (0..count.div_ceil(per_draw))
        .map(|g| g * per_draw..((g + 1) * per_draw).min(count))
        .collect()
}

/// The textures `kernel` binds for a draw over tile `tile`.
fn bound_textures<'a>(
    kernel: &Kernel,
    region: &Region,
    resident: &'a HashMap<u64, Rc<GlColumn>>,
    tile: u32,
) -> Vec<&'a wgpu::Texture> {
    kernel
        .textures
        .iter()
        .map(
            |&TextureBinding {
                 leaf,
                 plane,
                 tile: fixed,
             }| {
                let leaf = &region.leaves[leaf];
                let column = &resident[&leaf.id];
                let wanted = match fixed {
                    Some(t) => t,
                    None if leaf.meta.constant => 0,
                    None => tile,
                };
                // A shorter leaf has no such tile: any texture will do, its rows read as 0.
                let t = (wanted as usize).min(column.tiles.len() - 1);
                &column.tiles[t][plane as usize].texture
            },
        )
        .collect()
}

async fn run_elementwise(
    device: &GlDevice,
    region: &Region,
    resident: &HashMap<u64, Rc<GlColumn>>,
) -> Result<GlColumn> {
    let root = &region.root;
    let layout = device.layout;
    let rows = region.rows();
    let size = root.meta.size;
    let format = texture_format(root.meta.dtype.class(), plane_channels(size));
    let kernels = plane_groups(device, size)
        .into_iter()
        .map(|group| {
            codegen::elementwise_kernel(region, layout, rows, group.clone()).map(|k| (group, k))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut tiles = Vec::new();
    for tile in 0..layout.tiles(rows) {
        let tile_rows = layout.rows_in_tile(rows, tile);
        let height = tile_rows.div_ceil(layout.width());
        let textures = (0..planes(size))
            .map(|_| device.create_texture(format, height))
            .collect::<Result<Vec<_>>>()?;
        if tile_rows > 0 {
            for (group, kernel) in &kernels {
                let mut params = kernel.params.clone();
                params[PARAM_TILE_BASE] = tile * layout.tile_rows();
                let inputs = bound_textures(kernel, region, resident, tile);
                let targets: Vec<&wgpu::Texture> = textures
                    [group.start as usize..group.end as usize]
                    .iter()
                    .map(|t| &t.texture)
                    .collect();
                draw(device, &kernel.source, &params, &inputs, &targets, None).await?;
            }
        }
        tiles.push(textures);
    }
    Ok(GlColumn { tiles })
}

/// Texels per `[min, max]` texture after the first extent pass, and the fold passes after it.
fn extent_fold_passes(layout: TextureLayout, rows: u32) -> u32 {
    let mut texels = extent_bands(layout, rows).1 * layout.width();
    let mut passes = 0;
    while texels > EXTENT_FOLD {
        texels = texels.div_ceil(EXTENT_FOLD);
        passes += 1;
    }
    passes
}

/// Per tile, the first row of its band in the partial textures and the band's rows; and the
/// partial textures' height.
fn extent_bands(layout: TextureLayout, rows: u32) -> (Vec<(u32, u32)>, u32) {
    let mut bands = Vec::new();
    let mut y = 0;
    for tile in 0..layout.tiles(rows) {
        let fragments = layout.rows_in_tile(rows, tile).div_ceil(EXTENT_FOLD);
        let height = fragments.div_ceil(layout.width()).max(1);
        bands.push((y, height));
        y += height;
    }
    (bands, y)
}

/// `extent` in draws: per plane of 4 lanes, each tile folds into a band of `[min, max]`
/// textures (fused prologue included), fold passes shrink them `EXTENT_FOLD` times each,
/// and a last draw writes the plane's lanes of the result.
async fn run_extent(
    device: &GlDevice,
    region: &Region,
    resident: &HashMap<u64, Rc<GlColumn>>,
) -> Result<GlColumn> {
    let rows = region.rows();
    if rows == 0 {
        return Err(GpuTableError::new(
            ErrorCode::EmptyInput,
            "extent of an empty input",
        ));
    }
    let layout = device.layout;
    let width = layout.width();
    let input = &region.root.inputs[0];
    let class = input.meta.dtype.class();
    let lanes = input.meta.size;
    let partial_format = texture_format(class, 4);
    let (bands, partial_height) = extent_bands(layout, rows);
    let output = device.create_texture(texture_format(class, 4), lanes.div_ceil(width))?;
    let fold = codegen::extent_fold_source(class, layout);
    let last = codegen::extent_final_source(class, layout);
    for plane in 0..planes(lanes) {
        let kernel = codegen::extent_partials_kernel(region, layout, plane)?;
        let mut lo = device.create_texture(partial_format, partial_height)?;
        let mut hi = device.create_texture(partial_format, partial_height)?;
        for (tile, &(y0, height)) in bands.iter().enumerate() {
            let tile = tile as u32;
            let mut params = kernel.params.clone();
            params[0] = rows;
            params[PARAM_TILE_BASE] = tile * layout.tile_rows();
            params[3] = y0;
            params[4] = layout.rows_in_tile(rows, tile);
            let inputs = bound_textures(&kernel, region, resident, tile);
            let targets = [&lo.texture, &hi.texture];
            let scissor = Some((0, y0, width, height));
            draw(device, &kernel.source, &params, &inputs, &targets, scissor).await?;
        }
        let mut texels = partial_height * width;
        while texels > EXTENT_FOLD {
            let folded = texels.div_ceil(EXTENT_FOLD);
            let height = folded.div_ceil(width);
            let next_lo = device.create_texture(partial_format, height)?;
            let next_hi = device.create_texture(partial_format, height)?;
            let targets = [&next_lo.texture, &next_hi.texture];
            draw(
                device,
                &fold,
                &[texels],
                &[&lo.texture, &hi.texture],
                &targets,
                None,
            )
            .await?;
            (lo, hi, texels) = (next_lo, next_hi, folded);
        }
        let first = plane * 4;
        let scissor = Some((first % width, first / width, (lanes - first).min(4), 1));
        let inputs = [&lo.texture, &hi.texture];
        draw(
            device,
            &last,
            &[texels],
            &inputs,
            &[&output.texture],
            scissor,
        )
        .await?;
    }
    Ok(GlColumn {
        tiles: vec![vec![output]],
    })
}

/// One draw of the full-target triangle with `source`: binding 0 the parameters, 1.. the
/// `inputs`; render targets `targets`, optionally limited to a scissor rect.
async fn draw(
    device: &GlDevice,
    source: &str,
    params: &[u32],
    inputs: &[&wgpu::Texture],
    targets: &[&wgpu::Texture],
    scissor: Option<(u32, u32, u32, u32)>,
) -> Result<()> {
    use wgpu::util::DeviceExt;
    let formats: Vec<wgpu::TextureFormat> = targets.iter().map(|t| t.format()).collect();
    let pipeline = device.pipeline(source, &formats).await?;
    let mut words: Vec<u8> = params.iter().flat_map(|p| p.to_le_bytes()).collect();
    words.resize(params.len().div_ceil(4).max(1) * 16, 0);
    let scopes = ErrorScopes::push(&device.device);
    let uniform = device
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("gputable params"),
            contents: &words,
            usage: wgpu::BufferUsages::UNIFORM,
        });
    let views: Vec<wgpu::TextureView> = inputs
        .iter()
        .map(|t| t.create_view(&Default::default()))
        .collect();
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: uniform.as_entire_binding(),
    }];
    for (k, view) in views.iter().enumerate() {
        entries.push(wgpu::BindGroupEntry {
            binding: k as u32 + 1,
            resource: wgpu::BindingResource::TextureView(view),
        });
    }
    let bind_group = device.device.create_bind_group(&wgpu::BindGroupDescriptor {
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
    let mut encoder = device.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("gputable draw"),
            color_attachments: &attachments,
            ..Default::default()
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        if let Some((x, y, w, h)) = scissor {
            pass.set_scissor_rect(x, y, w, h);
        }
        pass.draw(0..3, 0..1);
    }
    device.queue.submit([encoder.finish()]);
    match scopes.pop("draw failed").await {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn upload(device: &GlDevice, column: &Column, node: &NodeRef) -> Result<GlColumn> {
    let layout = device.layout;
    let rows = rows_of(node);
    let size = node.meta.size as usize;
    let channels = plane_channels(node.meta.size) as usize;
    let format = texture_format(node.meta.dtype.class(), channels as u32);
    let words = device_words(column);
    let width = layout.width() as usize;
    let mut tiles = Vec::new();
    for tile in 0..layout.tiles(rows) {
        let tile_rows = layout.rows_in_tile(rows, tile) as usize;
        let base = (tile * layout.tile_rows()) as usize;
        let height = tile_rows.div_ceil(width).max(1);
        let mut textures = Vec::new();
        for plane in 0..planes(node.meta.size) as usize {
            let texture = device.create_texture(format, height as u32)?;
            let mut texels = Vec::new();
            texels
                .try_reserve_exact(width * height * channels * 4)
                .map_err(|_| {
                    GpuTableError::new(ErrorCode::OutOfMemory, "no memory to stage an upload")
                })?;
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
            device.queue.write_texture(
                texture.texture.as_image_copy(),
                &texels,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some((width * channels * 4) as u32),
                    rows_per_image: None,
                },
                texture.texture.size(),
            );
            textures.push(texture);
        }
        tiles.push(textures);
    }
    Ok(GlColumn { tiles })
}

/// Copies a column's textures back into host storage of the node's type.
async fn read_back(device: &GlDevice, column: &GlColumn, node: &NodeRef) -> Result<Column> {
    let layout = device.layout;
    let rows = rows_of(node) as usize;
    let size = node.meta.size as usize;
    let channels = plane_channels(node.meta.size) as usize;
    if rows == 0 {
        return Column::new(
            ColumnData::with_capacity(node.meta.dtype, 0)?,
            node.meta.size,
        );
    }
    let row_bytes = layout.width() as u64 * channels as u64 * 4;
    let mut offsets = Vec::new();
    let mut total = 0u64;
    for tile in &column.tiles {
        for texture in tile {
            offsets.push(total);
            total += row_bytes * texture.texture.height() as u64;
        }
    }
    let staging = device.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gputable readback"),
        size: total,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.device.create_command_encoder(&Default::default());
    let textures = column.tiles.iter().flatten();
    for (texture, &offset) in textures.zip(&offsets) {
        encoder.copy_texture_to_buffer(
            texture.texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &staging,
                layout: wgpu::TexelCopyBufferLayout {
                    offset,
                    bytes_per_row: Some(row_bytes as u32),
                    rows_per_image: None,
                },
            },
            texture.texture.size(),
        );
    }
    device.queue.submit([encoder.finish()]);
    let slice = staging.slice(..);
    let (sender, mapped) = oneshot::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| sender.send(result));
    wait_for(device, &mapped)
        .await?
        .map_err(|e| GpuTableError::new(ErrorCode::DeviceLost, format!("readback failed: {e}")))?;
    let mut words = Vec::new();
    words
        .try_reserve_exact(rows * size * 4)
        .map_err(|_| GpuTableError::new(ErrorCode::OutOfMemory, "no memory for the readback"))?;
    {
        let view = slice
            .get_mapped_range()
            .map_err(|e| internal(format!("readback mapping failed: {e}")))?;
        let planes_per_tile = planes(node.meta.size) as usize;
        let tile_rows = layout.tile_rows() as usize;
        if channels == 1 {
            // One-lane rows are already packed: copy each tile's rows at once.
            for (tile, &offset) in offsets.iter().enumerate() {
                let count = (rows - (tile * tile_rows).min(rows)).min(tile_rows);
                let at = offset as usize;
                words.extend_from_slice(&view[at..at + count * 4]);
            }
        } else {
            for row in 0..rows {
                let (tile, local) = (row / tile_rows, row % tile_rows);
                for lane in 0..size {
                    let texture = tile * planes_per_tile + lane / 4;
                    let at = offsets[texture] as usize + (local * channels + lane % 4) * 4;
                    words.extend_from_slice(&view[at..at + 4]);
                }
            }
        }
    }
    staging.unmap();
    Column::new(decode(&words, node.meta.dtype), node.meta.size)
}

/// The value `receiver` gets once the device has done its work: natively by waiting; in a
/// browser WebGL2 completes work only while polled, so poll and yield to the event loop.
async fn wait_for<T>(device: &GlDevice, receiver: &oneshot::Receiver<T>) -> Result<T> {
    let lost = |e: wgpu::PollError| {
        GpuTableError::new(
            ErrorCode::DeviceLost,
            format!("waiting for the device failed: {e}"),
        )
    };
    loop {
        #[cfg(not(target_arch = "wasm32"))]
        device
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(lost)?;
        #[cfg(target_arch = "wasm32")]
        device.device.poll(wgpu::PollType::Poll).map_err(lost)?;
        if let Some(value) = receiver.try_take() {
            return Ok(value);
        }
        device.check_alive()?;
        #[cfg(target_arch = "wasm32")]
        yield_to_event_loop().await;
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

fn internal(message: impl Into<String>) -> GpuTableError {
    GpuTableError::new(ErrorCode::Internal, message)
}
