//! The WebGPU backend (wgpu): the shared plan, run as generated WGSL compute kernels.
//!
//! Every value lives on the device as 32-bit words (WGSL storage has no 8/16-bit types):
//! 8- and 16-bit inputs are widened on upload and narrowed on readback. An evaluation
//! records its dispatches and submits them at once, with one block of parameters for all.

mod device;
pub(crate) mod oneshot;
mod reduce;
mod scatter;
pub(crate) mod scopes;
mod sort;

use std::borrow::Cow;
use std::num::NonZeroU64;
use std::rc::Rc;

use crate::column::{try_vec, Column, ColumnData, Elem};
use crate::dtype::DType;
use crate::engine::{device_name, internal, Backend, DeviceCore, DeviceModel, Written};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::NodeRef;
use crate::memory::Home;
use crate::plan::{PlanLimits, Region, SortWrites, MAX_REGION_NODES};
use crate::value::{RowSink, Storage, Value};
use crate::wgsl::compute::{self, WORKGROUP_SIZE};
use crate::wgsl::{is_literal, Kernel};
pub use device::{BufferLease, GpuDevice, GpuLimits};

/// Values can also be bound as vertex buffers by a renderer on the same device.
const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::VERTEX)
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);
const STAGING: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);
/// Bytes a WebGPU read copies and maps at once (its staging buffer's size at most).
const READBACK_PIECE_BYTES: u64 = 8 << 20;
const UNIFORM: wgpu::BufferUsages = wgpu::BufferUsages::UNIFORM.union(wgpu::BufferUsages::COPY_DST);

/// A value in a buffer of this device.
pub struct GpuValue {
    lease: BufferLease,
    device: GpuDevice,
}

impl GpuValue {
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }
    /// The buffer: 32-bit values, rows packed (it may be longer than the value).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.lease.buffer
    }
}

/// One recorded dispatch: binding 0 its parameters, 1.. `buffers` (bytes each binds).
struct Dispatch {
    pipeline: Rc<wgpu::ComputePipeline>,
    params: Vec<u32>,
    buffers: Vec<(wgpu::Buffer, u64)>,
    grid: (u32, u32),
}

/// The work of one evaluation: recorded dispatches, submitted by `flush`.
pub struct GpuBatch {
    home: Home,
    scopes: Option<scopes::ErrorScopes>,
    dispatches: Vec<Dispatch>,
    /// Buffers the recorded dispatches use besides values (reduction partials).
    keep: Vec<BufferLease>,
    _recording: Recording,
}

/// While a batch records, buffers the pool frees wait for its submit to be destroyed.
struct Recording(Rc<device::Graveyard>);

impl Drop for Recording {
    fn drop(&mut self) {
        self.0.stop_recording();
        self.0.bury();
    }
}

/// Bytes of a region's output on the device: 4 per value.
fn output_bytes(region: &Region) -> u64 {
    region.output_rows() as u64 * region.root.meta.size as u64 * 4
}

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

/// Waits for all work submitted to `device` (native only: a browser runs it on its own).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn wait_idle(device: &wgpu::Device) -> Result<()> {
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(poll_failed)
}

/// A failed poll: the device is gone.
#[cfg(any(not(target_arch = "wasm32"), gl_backend))]
pub(crate) fn poll_failed(e: wgpu::PollError) -> GpuTableError {
    GpuTableError::new(
        ErrorCode::DeviceLost,
        format!("waiting for the device failed: {e}"),
    )
}

/// A column as device words (little-endian 32-bit values, 8/16-bit types widened).
pub(crate) fn device_words(column: &Column) -> Result<Cow<'_, [u8]>> {
    fn widen<T: Elem>(values: &[T], to_word: impl Fn(T) -> u32) -> Result<Cow<'_, [u8]>> {
        let mut bytes = try_vec(values.len() * 4, "widening an upload")?;
        bytes.extend(values.iter().flat_map(|v| to_word(*v).to_le_bytes()));
        Ok(Cow::Owned(bytes))
    }
    // 32-bit columns already have the device layout: borrowed, not copied.
    fn words<T: Elem>(values: &[T]) -> Result<Cow<'_, [u8]>> {
        const {
            assert!(
                cfg!(target_endian = "little"),
                "device buffers are little-endian"
            )
        };
        // SAFETY: T is a 4-byte plain number type; any initialized bytes of it are valid u8s.
        Ok(Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
        }))
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

/// Device words (little-endian u32) as host values of `dtype`, narrowing 8/16-bit types.
pub(crate) fn decode(bytes: &[u8], dtype: DType) -> Result<ColumnData> {
    fn each<T>(bytes: &[u8], f: impl Fn(u32) -> T) -> Result<Vec<T>> {
        let mut out = try_vec(bytes.len() / 4, "a readback")?;
        out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        );
        Ok(out)
    }
    Ok(match dtype {
        DType::U8 => ColumnData::U8(each(bytes, |w| w as u8)?),
        DType::U16 => ColumnData::U16(each(bytes, |w| w as u16)?),
        DType::I8 => ColumnData::I8(each(bytes, |w| w as i8)?),
        DType::I16 => ColumnData::I16(each(bytes, |w| w as i16)?),
        DType::U32 => ColumnData::U32(each(bytes, |w| w)?),
        DType::I32 => ColumnData::I32(each(bytes, |w| w as i32)?),
        DType::F32 => ColumnData::F32(each(bytes, f32::from_bits)?),
    })
}

impl GpuDevice {
    /// The dispatch grid for `invocations` in workgroups of `workgroup`, and the invocations
    /// per grid row it implies (grids past 65,535 workgroups wrap into a second dimension).
    fn grid(&self, invocations: u32, workgroup: u32) -> Result<((u32, u32), u32)> {
        let groups = invocations.div_ceil(workgroup).max(1);
        let max = self.limits.max_compute_workgroups_per_dimension;
        if groups <= max {
            return Ok(((groups, 1), groups * workgroup));
        }
        let y = groups.div_ceil(max);
        if y > max {
            return Err(GpuTableError::new(
                ErrorCode::LimitExceeded,
                format!("{invocations} invocations need more than maxComputeWorkgroupsPerDimension^2 ({max}^2) workgroups"),
            ));
        }
        Ok(((max, y), max * workgroup))
    }

    fn value(&self, region: &Region, lease: BufferLease) -> Value {
        let node = &region.root;
        Value {
            device: self.core.id,
            dtype: node.meta.dtype,
            size: node.meta.size,
            rows: region.output_rows(),
            storage: Storage::WebGpu(GpuValue {
                lease,
                device: self.clone(),
            }),
        }
    }

    /// An output buffer for `node`, checked against the binding limit.
    fn output(&self, batch: &GpuBatch, region: &Region) -> Result<(BufferLease, u64)> {
        let bytes = output_bytes(region);
        let node = &region.root;
        self.check_binding(bytes, &format!("the output of t{}", node.id))?;
        Ok((self.take_buffer(bytes, STORAGE, &batch.home)?, bytes))
    }
}

impl GpuDevice {
    /// Records a dispatch of `kernel` writing `target` and reading the leaves it binds.
    async fn record(
        &self,
        batch: &mut GpuBatch,
        kernel: Kernel,
        target: (wgpu::Buffer, u64),
        leaves: &[Rc<Value>],
        grid: (u32, u32),
    ) -> Result<()> {
        let mut buffers = vec![target];
        for &(k, part) in &kernel.buffers {
            let value = match leaves.get(k).map(|v| &v.storage) {
                Some(Storage::Parts(parts)) => parts.get(part),
                _ => leaves.get(k).filter(|_| part == 0),
            };
            match value.map(|v| (&v.storage, v.elements())) {
                Some((Storage::WebGpu(value), elements)) => {
                    buffers.push((value.buffer().clone(), elements * 4))
                }
                _ => return Err(internal("a kernel input is not on this WebGPU device")),
            }
        }
        batch.dispatches.push(Dispatch {
            pipeline: self.pipeline(&kernel.source).await?,
            params: kernel.params,
            buffers,
            grid,
        });
        Ok(())
    }
}

impl DeviceModel for GpuDevice {
    fn core(&self) -> &DeviceCore {
        &self.core
    }
    fn name(&self) -> String {
        device_name("webgpu", &self.adapter_name)
    }
    fn plan_limits(&self) -> PlanLimits {
        PlanLimits {
            max_region_nodes: MAX_REGION_NODES,
            // One storage binding is the output.
            max_bindings: self
                .limits
                .max_storage_buffers_per_shader_stage
                .saturating_sub(1) as usize,
            binding_limit_name: "maxStorageBuffersPerShaderStage",
            binding_cost: Box::new(|node, _| usize::from(!is_literal(node))),
            sort_writes_keys: SortWrites::MostSignificantKey,
        }
    }
    fn max_binding_rows(&self, size: u32) -> Option<u32> {
        // Every value is a 32-bit word on the device.
        let rows = self.binding_limit().0 / (size.max(1) as u64 * 4);
        Some(rows.min(u32::MAX as u64) as u32)
    }
    fn binds_parts(&self, _read_at_row: bool) -> bool {
        true
    }
    fn reads_in_place(&self, value: &Value) -> bool {
        value.device == self.core.id
    }
    fn takes_from_host(&self, leaf: &crate::ir::Node) -> bool {
        is_literal(leaf)
    }
    fn sorts(&self, rows: u32, _keys: usize) -> bool {
        self.sorts_natively(rows)
    }
    fn keeps_scratch_until_flush(&self) -> bool {
        true
    }
    fn sort_scratch_bytes(&self, rows: u32, _keys: usize) -> u64 {
        match self.sorts_natively(rows) {
            true => self.radix_sort_scratch_bytes(rows),
            // A split pass's flags, their scan, destinations and the previous permutation.
            false => 4 * self.value_bytes(DType::U32, 1, rows),
        }
    }
    fn reduction_scratch_bytes(&self, root: &crate::ir::Node, rows: u32) -> u64 {
        let lanes = root.inputs[0].meta.size;
        // The first pass's row-group states and the first combine round's.
        let groups = self.reduction_groups(rows, lanes) as u64;
        (groups + groups.div_ceil(16)) * lanes as u64 * 8
    }
    fn reduction_tail_kernels(&self, _: &crate::ir::Node) -> (u64, u64) {
        (1, 1)
    }
    fn describe_task(&self, region: &Region) -> Result<(u64, String)> {
        let rows = region.rows;
        let described = if region.is_reduction() {
            self.describe_reduction(region)
        } else if region.is_sort() {
            sort::describe_radix_sort(&region.root)
        } else if region.is_scatter() {
            let parts = self.scatter_parts(region.output_rows());
            (
                u64::from(rows > 0) * parts as u64,
                format!("{parts} dispatch(es) writing each input row where it says, one per part of the output that fits a binding (each part cleared once by 1 more)"),
            )
        } else if rows == 0 {
            (0, "no dispatch (0 rows)".to_string())
        } else {
            let invocations = elementwise_invocations(&region.root, rows)?;
            let ((x, y), _) = self.grid(invocations, WORKGROUP_SIZE)?;
            let each = match compute::computes_per_lane(region.root.meta.size) {
                true => "lane of each row",
                false => "row",
            };
            (
                1,
                format!(
                    "1 dispatch of {x}x{y} workgroups of {WORKGROUP_SIZE} (one invocation per {each})"
                ),
            )
        };
        Ok(described)
    }
    fn kernel_words(&self) -> Option<(&'static str, &'static str)> {
        Some(("dispatch", "dispatches"))
    }
    fn pass_kernels(&self, region: &Region) -> u64 {
        match region.is_scatter() && region.output_rows() > 0 {
            true => self.scatter_parts(region.output_rows()) as u64,
            false => 0,
        }
    }
}

impl Backend for GpuDevice {
    type Batch = GpuBatch;
    fn begin(&self, home: Home) -> Result<GpuBatch> {
        self.graveyard.start_recording();
        Ok(GpuBatch {
            home,
            scopes: Some(scopes::ErrorScopes::push(&self.device)),
            dispatches: Vec::new(),
            keep: Vec::new(),
            _recording: Recording(self.graveyard.clone()),
        })
    }
    fn upload(&self, batch: &mut GpuBatch, column: &Column) -> Result<Value> {
        let bytes = column.data.len() as u64 * 4;
        self.check_binding(bytes, "an input")?;
        let lease = self.take_buffer(bytes, STORAGE, &batch.home)?;
        if bytes > 0 {
            let words = device_words(column)?;
            self.queue.write_buffer(&lease.buffer, 0, &words);
            self.core.counters.add_upload(bytes);
        }
        Ok(Value {
            device: self.core.id,
            dtype: column.dtype(),
            size: column.size,
            rows: column.rows,
            storage: Storage::WebGpu(GpuValue {
                lease,
                device: self.clone(),
            }),
        })
    }
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
    async fn scatter_target(
        &self,
        batch: &mut GpuBatch,
        root: &crate::ir::Node,
    ) -> Result<Vec<Value>> {
        self.scatter_target_of(batch, root).await
    }
    async fn scatter_rows(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        destinations: &Value,
        written: Written<'_>,
        parts: &mut [Value],
    ) -> Result<()> {
        self.scatter_task(batch, task, destinations, written, parts)
            .await
    }
    type States = reduce::GpuStates;
    async fn sort_permutation_and_keys(
        &self,
        batch: &mut GpuBatch,
        keys: &[&[Rc<Value>]],
        bits: &[u32],
        sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)> {
        if sorted.iter().any(|&key| key != 0) {
            return Err(internal("WebGPU's sort writes only its first key"));
        }
        let (permutation, first_key) = self.radix_sort(batch, keys, bits, sorted == [0]).await?;
        Ok((permutation, first_key.into_iter().collect()))
    }
    fn reduction_states(
        &self,
        batch: &mut GpuBatch,
        root: &crate::ir::Node,
        parts: u32,
    ) -> Result<reduce::GpuStates> {
        self.states(batch, root, parts)
    }
    async fn reduce_chunk(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &mut reduce::GpuStates,
        part: u32,
    ) -> Result<()> {
        self.reduce_task(batch, task, leaves, first_row, states, part)
            .await
    }
    async fn combine_states(
        &self,
        batch: &mut GpuBatch,
        root: &crate::ir::Node,
        states: reduce::GpuStates,
        parts: u32,
        every: u32,
    ) -> Result<reduce::GpuStates> {
        self.combine(batch, root, states, parts, every).await
    }
    async fn finish_reduction(
        &self,
        batch: &mut GpuBatch,
        region: &Region,
        states: reduce::GpuStates,
    ) -> Result<Value> {
        self.finish_reduce(batch, region, states).await
    }
    async fn flush(&self, batch: &mut GpuBatch) -> Result<()> {
        if batch.dispatches.is_empty() {
            return Ok(());
        }
        // Every dispatch's parameters in one uniform buffer, at aligned offsets.
        let align = (self.limits.min_uniform_buffer_offset_alignment as usize).max(16);
        let mut words: Vec<u8> = Vec::new();
        let mut blocks = Vec::new();
        for dispatch in &batch.dispatches {
            let offset = words.len();
            words.extend(dispatch.params.iter().flat_map(|p| p.to_le_bytes()));
            let size = (dispatch.params.len().div_ceil(4).max(1) * 16) as u64;
            words.resize(offset + size as usize, 0);
            words.resize(words.len().next_multiple_of(align), 0);
            blocks.push((offset as u64, size));
        }
        let uniform = self.take_buffer(words.len() as u64, UNIFORM, &batch.home)?;
        self.queue.write_buffer(&uniform.buffer, 0, &words);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for (dispatch, &(offset, size)) in batch.dispatches.iter().zip(&blocks) {
                let mut entries = vec![wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &uniform.buffer,
                        offset,
                        size: NonZeroU64::new(size),
                    }),
                }];
                for (k, (buffer, bytes)) in dispatch.buffers.iter().enumerate() {
                    entries.push(wgpu::BindGroupEntry {
                        binding: k as u32 + 1,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer,
                            offset: 0,
                            size: NonZeroU64::new((*bytes).max(4)),
                        }),
                    });
                }
                let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("gputable pass"),
                    layout: &dispatch.pipeline.get_bind_group_layout(0),
                    entries: &entries,
                });
                pass.set_pipeline(&dispatch.pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(dispatch.grid.0, dispatch.grid.1, 1);
            }
        }
        self.queue.submit([encoder.finish()]);
        self.core
            .counters
            .add_kernels(batch.dispatches.len() as u64);
        batch.dispatches.clear();
        batch.keep.clear();
        self.graveyard.bury();
        Ok(())
    }
    async fn finish(&self, mut batch: GpuBatch) -> Result<()> {
        let flushed = self.flush(&mut batch).await;
        let caught = scopes::finish_evaluation(batch.scopes.take(), &self.core.lost).await;
        drop(batch);
        flushed?;
        caught
    }
    async fn read_rows(
        &self,
        value: &Value,
        start: u32,
        end: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<()> {
        let Storage::WebGpu(gpu) = &value.storage else {
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
            let (sender, mapped) = oneshot::channel();
            slice.map_async(wgpu::MapMode::Read, move |result| sender.send(result));
            // Natively the callback runs inside poll; in a browser the event loop runs it.
            #[cfg(not(target_arch = "wasm32"))]
            wait_idle(&self.device)?;
            mapped.await.map_err(|e| {
                GpuTableError::new(ErrorCode::DeviceLost, format!("readback failed: {e}"))
            })?;
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
    fn trim(&self, cache: Option<&str>) {
        self.trim_pool(cache);
    }
    fn set_pool_cap(&self, bytes: u64) {
        self.set_cap(bytes);
    }
    fn destroy(&self) {
        self.destroy_device();
    }
}
