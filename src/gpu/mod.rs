//! The WebGPU backend (wgpu): the CPU backend's plan, run as generated WGSL compute kernels.
//!
//! Every column lives on the device as 32-bit words (WGSL storage has no 8/16-bit types):
//! 8- and 16-bit inputs are widened on upload and narrowed on readback.

pub mod codegen;
mod device;
pub(crate) mod lost;
pub(crate) mod oneshot;
pub(crate) mod scopes;

use std::borrow::Cow;
use std::collections::HashMap;

use crate::column::{Column, ColumnData, Elem};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{validate_segments, NodeRef, Op};
use crate::plan::{plan, plan_with, Fusion, Region};
pub use device::{GpuDevice, GpuLimits};

use codegen::WORKGROUP_SIZE;

/// Columns can also be bound as vertex buffers by a renderer on the same device.
const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::VERTEX)
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// Evaluates `roots` on `device`, leaving each root's output on the node (read back).
/// Intermediates stay on the device for the duration of the call only.
#[cfg(not(target_arch = "wasm32"))]
pub fn evaluate(device: &GpuDevice, roots: &[NodeRef]) -> Result<()> {
    pollster::block_on(evaluate_async(device, roots))
}

/// `evaluate`, for the browser's event loop.
pub async fn evaluate_async(device: &GpuDevice, roots: &[NodeRef]) -> Result<()> {
    device.check_alive()?;
    device.prune_uploads();
    let plan = plan(roots, Fusion::On)?;
    let mut resident: HashMap<u64, wgpu::Buffer> = HashMap::new();
    // Catches what the per-dispatch scopes do not (buffer creation, uploads, copies).
    let scopes = scopes::ErrorScopes::push(&device.device);
    let mut result = run_plan(device, &plan.regions, roots, &mut resident).await;
    if let Some(error) = scopes.pop("evaluation failed").await {
        result = result.and(Err(error));
    }
    // Region outputs are this call's own; uploads stay on the device with their nodes.
    let outputs: std::collections::HashSet<u64> = plan.regions.iter().map(|r| r.root.id).collect();
    for (id, buffer) in resident {
        if outputs.contains(&id) {
            device.give_buffer(buffer);
        }
    }
    result
}

/// The passes `root` runs on `device`: the shared plan, then each pass's dispatches.
pub fn explain(device: &GpuDevice, root: &NodeRef) -> Result<String> {
    let plan = plan_with(std::slice::from_ref(root), Fusion::On, true)?;
    let backend = match device.adapter_name.as_str() {
        "" => "webgpu".to_string(),
        name => format!("webgpu ({name})"),
    };
    let mut text = plan.describe(&backend);
    let mut dispatches = 0;
    for (index, region) in plan.regions.iter().enumerate() {
        let rows = region.rows();
        let line = if region.root.op == Op::Extent {
            let groups = rows
                .div_ceil(codegen::REDUCE_WORKGROUP)
                .clamp(1, codegen::REDUCE_GROUPS);
            dispatches += 2;
            format!(
                "pass {}: 2 dispatches: {groups} workgroups of {} fold partial [min, max], then 1 workgroup folds them",
                index + 1,
                codegen::REDUCE_WORKGROUP
            )
        } else if rows == 0 {
            format!("pass {}: no dispatch (0 rows)", index + 1)
        } else {
            let ((x, y), _) = grid(device, rows)?;
            dispatches += 1;
            format!("pass {}: 1 dispatch of {x}x{y} workgroups of {WORKGROUP_SIZE} (one invocation per row)", index + 1)
        };
        text.push_str(&line);
        text.push('\n');
    }
    let plural = if dispatches == 1 { "" } else { "es" };
    text.push_str(&format!("{dispatches} dispatch{plural} in all\n"));
    Ok(text)
}

async fn run_plan(
    device: &GpuDevice,
    regions: &[Region],
    roots: &[NodeRef],
    resident: &mut HashMap<u64, wgpu::Buffer>,
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
                None => {
                    std::rc::Rc::new(read_back(device, &resident[&segments.id], segments).await?)
                }
            };
            validate_segments(&column, node.meta.length)?;
        }
        let output = run_region(device, region, resident).await?;
        resident.insert(region.root.id, output);
    }
    for root in roots {
        if root.output().is_none() {
            let column = read_back(device, &resident[&root.id], root).await?;
            root.set_output(std::rc::Rc::new(column));
        }
    }
    Ok(())
}

/// The device copy of an evaluated node's data, uploaded now unless it is there already; it
/// stays while the node lives (freed by the next evaluation or
/// `prune_uploads`).
pub fn make_resident(device: &GpuDevice, node: &NodeRef) -> Result<wgpu::Buffer> {
    device.check_alive()?;
    if let Some(buffer) = device.uploaded(node) {
        return Ok(buffer);
    }
    let column = node.output().ok_or_else(|| {
        GpuTableError::new(
            ErrorCode::Internal,
            format!("t{} has no data to upload", node.id),
        )
    })?;
    let buffer = upload(device, &column, node)?;
    device.remember_upload(node, buffer.clone());
    Ok(buffer)
}

/// Bytes of a node's output on the device: 4 per value.
pub(crate) fn device_bytes(node: &NodeRef) -> u64 {
    let rows = if node.meta.constant {
        1
    } else {
        node.meta.length as u64
    };
    rows * node.meta.size as u64 * 4
}

fn upload(device: &GpuDevice, column: &Column, node: &NodeRef) -> Result<wgpu::Buffer> {
    let bytes = device_bytes(node);
    device.check_binding(bytes, &format!("input t{}", node.id))?;
    let data = device_words(column);
    let buffer = device.take_buffer(bytes, STORAGE);
    if !data.is_empty() {
        device.queue.write_buffer(&buffer, 0, &data);
    }
    Ok(buffer)
}

/// A column as device words (little-endian 32-bit values, 8/16-bit types widened).
pub(crate) fn device_words(column: &Column) -> Cow<'_, [u8]> {
    fn widen<T: Elem>(values: &[T], to_word: impl Fn(T) -> u32) -> Cow<'_, [u8]> {
        Cow::Owned(
            values
                .iter()
                .flat_map(|v| to_word(*v).to_le_bytes())
                .collect(),
        )
    }
    // 32-bit columns already have the device layout: borrowed, not copied.
    fn words<T: Elem>(values: &[T]) -> Cow<'_, [u8]> {
        const {
            assert!(
                cfg!(target_endian = "little"),
                "device buffers are little-endian"
            )
        };
        // SAFETY: T is a 4-byte plain number type; any initialized bytes of it are valid u8s.
        Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
        })
    }
    match &column.data {
        ColumnData::U8(v) => widen(v, |x| x as u32),
        ColumnData::U16(v) => widen(v, |x| x as u32),
        ColumnData::I8(v) => widen(v, |x| x as i32 as u32),
        ColumnData::I16(v) => widen(v, |x| x as i32 as u32),
        ColumnData::U32(v) => words(v),
        ColumnData::I32(v) => words(v),
        ColumnData::F32(v) => words(v),
    }
}

/// The dispatch grid for `rows` invocations and the rows per grid row it implies.
fn grid(device: &GpuDevice, rows: u32) -> Result<((u32, u32), u32)> {
    let groups = rows.div_ceil(WORKGROUP_SIZE).max(1);
    let max = device.limits.max_compute_workgroups_per_dimension;
    if groups <= max {
        return Ok(((groups, 1), groups * WORKGROUP_SIZE));
    }
    let y = groups.div_ceil(max);
    if y > max {
        return Err(GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!("{rows} rows need more than maxComputeWorkgroupsPerDimension^2 ({max}^2) workgroups"),
        ));
    }
    Ok(((max, y), max * WORKGROUP_SIZE))
}

async fn run_region(
    device: &GpuDevice,
    region: &Region,
    resident: &HashMap<u64, wgpu::Buffer>,
) -> Result<wgpu::Buffer> {
    let root = &region.root;
    let bytes = device_bytes(root);
    device.check_binding(bytes, &format!("output t{}", root.id))?;
    let rows = region.rows();
    let leaves: Vec<&wgpu::Buffer> = region
        .leaves
        .iter()
        .map(|leaf| &resident[&leaf.id])
        .collect();
    let output = device.take_buffer(bytes, STORAGE);
    let result = if root.op == Op::Extent {
        run_extent(device, region, rows, &leaves, &output).await
    } else if rows == 0 {
        Ok(())
    } else {
        run_elementwise(device, region, rows, &leaves, &output).await
    };
    match result {
        Ok(()) => Ok(output),
        Err(error) => {
            device.give_buffer(output);
            Err(error)
        }
    }
}

async fn run_elementwise(
    device: &GpuDevice,
    region: &Region,
    rows: u32,
    leaves: &[&wgpu::Buffer],
    output: &wgpu::Buffer,
) -> Result<()> {
    let ((x, y), row_stride) = grid(device, rows)?;
    let kernel = codegen::elementwise_kernel(region, rows, row_stride)?;
    dispatch(
        device,
        &kernel.source,
        &kernel.params,
        output,
        leaves,
        (x, y),
    )
    .await
}

/// `extent` in two passes: per-workgroup partial [min, max] with the fused prologue, then
/// one workgroup folding the partials.
async fn run_extent(
    device: &GpuDevice,
    region: &Region,
    rows: u32,
    leaves: &[&wgpu::Buffer],
    output: &wgpu::Buffer,
) -> Result<()> {
    if rows == 0 {
        return Err(GpuTableError::new(
            ErrorCode::EmptyInput,
            "extent of an empty input",
        ));
    }
    let input = &region.root.inputs[0];
    let groups = rows
        .div_ceil(codegen::REDUCE_WORKGROUP)
        .min(codegen::REDUCE_GROUPS);
    let partials_bytes = groups as u64 * input.meta.size as u64 * 2 * 4;
    device.check_binding(partials_bytes, "extent partials")?;
    let partials = device.take_buffer(partials_bytes, STORAGE);
    let kernel = codegen::extent_partials_kernel(region, rows, groups)?;
    let mut result = dispatch(
        device,
        &kernel.source,
        &kernel.params,
        &partials,
        leaves,
        (groups, 1),
    )
    .await;
    if result.is_ok() {
        let source = codegen::extent_final_source(input.meta.dtype.class(), input.meta.size);
        result = dispatch(
            device,
            &source,
            &[rows, groups, 0],
            output,
            &[&partials],
            (1, 1),
        )
        .await;
    }
    device.give_buffer(partials);
    result
}

/// Runs one compute pass of `source`: binding 0 the parameters, 1 `output`, 2.. `inputs`.
async fn dispatch(
    device: &GpuDevice,
    source: &str,
    params: &[u32],
    output: &wgpu::Buffer,
    inputs: &[&wgpu::Buffer],
    (x, y): (u32, u32),
) -> Result<()> {
    let pipeline = device.pipeline(source).await?;
    let mut words: Vec<u8> = params.iter().flat_map(|p| p.to_le_bytes()).collect();
    words.resize(params.len().div_ceil(4).max(1) * 16, 0);
    let uniform = device.take_buffer(
        words.len() as u64,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    );
    device.queue.write_buffer(&uniform, 0, &words);

    let scopes = scopes::ErrorScopes::push(&device.device);
    let mut entries = vec![
        wgpu::BindGroupEntry {
            binding: 0,
            resource: uniform.as_entire_binding(),
        },
        wgpu::BindGroupEntry {
            binding: 1,
            resource: output.as_entire_binding(),
        },
    ];
    for (k, buffer) in inputs.iter().enumerate() {
        entries.push(wgpu::BindGroupEntry {
            binding: k as u32 + 2,
            resource: buffer.as_entire_binding(),
        });
    }
    let bind_group = device.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("gputable pass"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut encoder = device.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }
    device.queue.submit([encoder.finish()]);
    let error = scopes.pop("dispatch failed").await;
    device.give_buffer(uniform);
    match error {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Device words (little-endian u32) as host values of `dtype`, narrowing 8/16-bit types.
pub(crate) fn decode(bytes: &[u8], dtype: crate::DType) -> ColumnData {
    fn each<T>(bytes: &[u8], f: impl Fn(u32) -> T) -> Vec<T> {
        bytes
            .chunks_exact(4)
            .map(|c| f(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect()
    }
    match dtype {
        crate::DType::U8 => ColumnData::U8(each(bytes, |w| w as u8)),
        crate::DType::U16 => ColumnData::U16(each(bytes, |w| w as u16)),
        crate::DType::I8 => ColumnData::I8(each(bytes, |w| w as i8)),
        crate::DType::I16 => ColumnData::I16(each(bytes, |w| w as i16)),
        crate::DType::U32 => ColumnData::U32(each(bytes, |w| w)),
        crate::DType::I32 => ColumnData::I32(each(bytes, |w| w as i32)),
        crate::DType::F32 => ColumnData::F32(each(bytes, f32::from_bits)),
    }
}

/// Copies a node's device output back into host storage of its type.
async fn read_back(device: &GpuDevice, buffer: &wgpu::Buffer, node: &NodeRef) -> Result<Column> {
    let bytes = device_bytes(node);
    let mut data = ColumnData::with_capacity(node.meta.dtype, 0)?;
    if bytes > 0 {
        let staging = device.take_buffer(
            bytes,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let mut encoder = device.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
        device.queue.submit([encoder.finish()]);
        let slice = staging.slice(..bytes);
        let (sender, mapped) = oneshot::channel();
        slice.map_async(wgpu::MapMode::Read, move |result| sender.send(result));
        // Natively the callback runs inside poll; in a browser the event loop runs it.
        #[cfg(not(target_arch = "wasm32"))]
        device
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| {
                GpuTableError::new(
                    ErrorCode::DeviceLost,
                    format!("waiting for the device failed: {e}"),
                )
            })?;
        mapped.await.map_err(|e| {
            GpuTableError::new(ErrorCode::DeviceLost, format!("readback failed: {e}"))
        })?;
        {
            let view = slice.get_mapped_range().map_err(|e| {
                GpuTableError::new(ErrorCode::Internal, format!("readback mapping failed: {e}"))
            })?;
            data = decode(&view, node.meta.dtype);
        }
        staging.unmap();
        device.give_buffer(staging);
    }
    Column::new(data, node.meta.size)
}
