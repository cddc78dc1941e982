//! The WebGPU backend (wgpu): the shared plan, run as generated WGSL compute kernels.
//!
//! Every value lives on the device as 32-bit words (WGSL storage has no 8/16-bit types):
//! 8- and 16-bit inputs are widened on upload and narrowed on readback. An evaluation
//! records its dispatches and submits them at once, with one block of parameters for all.

mod bins;
mod device;
mod lookup;
mod reduce;
mod region;
mod scatter;
mod sort;
mod transfer;

use std::num::NonZeroU64;
use std::rc::Rc;

use crate::dtype::DType;
use crate::engine::{internal, Batches, OnDevice};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::memory::Home;
use crate::plan::Region;
use crate::value::{Storage, Value};
use crate::wgpu_shared::scopes;
use crate::wgsl::Kernel;
pub use device::{BufferLease, GpuDevice, GpuLimits};

/// Values can also be bound as vertex buffers by a renderer on the same device, and a
/// count's draw arguments read by `drawIndirect`.
const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::VERTEX)
    .union(wgpu::BufferUsages::INDIRECT)
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);
const UNIFORM: wgpu::BufferUsages = wgpu::BufferUsages::UNIFORM.union(wgpu::BufferUsages::COPY_DST);

/// A value in a buffer of this device.
pub type GpuValue = OnDevice<GpuDevice, BufferLease>;

impl GpuValue {
    /// The buffer: 32-bit values, rows packed (it may be longer than the value).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.storage.buffer
    }
}

/// The buffer of a value of this backend, and the bytes it binds.
fn bound(value: &Value) -> Result<(wgpu::Buffer, u64)> {
    match value.storage_of::<GpuValue>() {
        Some(gpu) => Ok((gpu.buffer().clone(), value.elements() * 4)),
        None => Err(internal("a kernel input is not on this WebGPU device")),
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
        self.stored(node.meta.dtype, node.meta.size, region.output_rows(), lease)
    }

    /// A value of `rows` rows of `size` lanes of `dtype` in `lease`'s buffer.
    fn stored(&self, dtype: DType, size: u32, rows: u32, lease: BufferLease) -> Value {
        Value {
            device: self.core.id,
            dtype,
            size,
            rows,
            storage: Storage::Device(Box::new(GpuValue {
                device: self.clone(),
                storage: lease,
            })),
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
            let value = value.ok_or_else(|| internal("a kernel input the pass lacks"))?;
            buffers.push(bound(value)?);
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

impl Batches for GpuDevice {
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
}
