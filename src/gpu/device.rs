//! The WebGPU device: wgpu device and queue, its limits, a pool of buffers and a pipeline
//! cache.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::engine::{device_name, DeviceCore, DeviceModel};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::Node;
use crate::memory::{Home, Lease, Pool, Resource};
use crate::plan::{PlanLimits, SortWrites, MAX_REGION_NODES};
use crate::value::Value;
use crate::wgpu_shared::{open, PipelineCache};
use crate::wgsl::is_literal;

/// The limits that decide what fits in one dispatch.
#[derive(Clone, Copy, Debug)]
pub struct GpuLimits {
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_storage_buffers_per_shader_stage: u32,
    pub min_uniform_buffer_offset_alignment: u32,
    /// The adapter's smallest subgroup, where the device runs subgroup operations.
    pub subgroup_min_size: Option<u32>,
}

/// Buffers the pool hands out; destroying one waits while a batch that may use it is only
/// recorded (a destroyed buffer fails the submit), and happens after the submit.
pub struct GpuBuffer {
    pub buffer: wgpu::Buffer,
    graveyard: Rc<Graveyard>,
}

#[derive(Default)]
pub struct Graveyard {
    recording: Cell<u32>,
    buffers: RefCell<Vec<wgpu::Buffer>>,
}

impl Graveyard {
    pub fn start_recording(&self) {
        self.recording.set(self.recording.get() + 1);
    }
    pub fn stop_recording(&self) {
        self.recording.set(self.recording.get().saturating_sub(1));
    }
    /// Destroys the buffers released while work was only recorded (it is submitted now).
    pub fn bury(&self) {
        for buffer in std::mem::take(&mut *self.buffers.borrow_mut()) {
            buffer.destroy();
        }
    }
}

impl Resource for GpuBuffer {
    fn discard(self) {
        if self.graveyard.recording.get() > 0 {
            self.graveyard.buffers.borrow_mut().push(self.buffer);
        } else {
            self.buffer.destroy();
        }
    }
}

pub type BufferLease = Lease<wgpu::BufferUsages, GpuBuffer>;

pub struct GpuInner {
    pub core: DeviceCore,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: GpuLimits,
    pub adapter_name: String,
    pipelines: PipelineCache<wgpu::ComputePipeline>,
    pool: Rc<Pool<wgpu::BufferUsages, GpuBuffer>>,
    pub graveyard: Rc<Graveyard>,
}

/// A WebGPU device (cheap to clone: clones share the device).
#[derive(Clone)]
pub struct GpuDevice(pub(crate) Rc<GpuInner>);

impl std::ops::Deref for GpuDevice {
    type Target = GpuInner;
    fn deref(&self) -> &GpuInner {
        &self.0
    }
}

impl GpuDevice {
    /// A device on the first adapter wgpu finds (natively Vulkan; `WGPU_BACKEND` overrides).
    pub async fn new() -> Result<GpuDevice> {
        #[allow(unused_mut)]
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        // Natively Vulkan alone: an instance of every backend also starts EGL, and on an H100
        // NVIDIA's EGL hung devices made on many threads at once.
        #[cfg(not(target_arch = "wasm32"))]
        {
            descriptor.backends = wgpu::Backends::VULKAN;
        }
        let instance = wgpu::Instance::new(descriptor.with_env());
        let opened = open(&instance, &Default::default(), "WebGPU", true, |_| Ok(())).await?;
        let l = opened.limits;
        let limits = GpuLimits {
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
            max_buffer_size: l.max_buffer_size,
            max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            max_storage_buffers_per_shader_stage: l.max_storage_buffers_per_shader_stage,
            min_uniform_buffer_offset_alignment: l.min_uniform_buffer_offset_alignment,
            subgroup_min_size: opened.subgroup_min_size,
        };
        let pool = Pool::new(opened.core.counters.clone(), limits.max_buffer_size);
        Ok(GpuDevice(Rc::new(GpuInner {
            core: opened.core,
            limits,
            adapter_name: opened.adapter_name,
            device: opened.device,
            queue: opened.queue,
            pipelines: PipelineCache::default(),
            pool,
            graveyard: Rc::new(Graveyard::default()),
        })))
    }

    /// `new`, blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking() -> Result<GpuDevice> {
        pollster::block_on(GpuDevice::new())
    }

    /// Lowers the binding limit this device enforces (to test `LIMIT_EXCEEDED` cheaply).
    pub fn cap_binding_size(&mut self, bytes: u64) -> Result<()> {
        let inner = Rc::get_mut(&mut self.0)
            .ok_or_else(|| crate::engine::internal("cap limits before sharing the device"))?;
        inner.limits.max_storage_buffer_binding_size =
            inner.limits.max_storage_buffer_binding_size.min(bytes);
        Ok(())
    }

    /// Runs without subgroup operations, as on a device that has none (to test both paths).
    pub fn forgo_subgroups(&mut self) -> Result<()> {
        let inner = Rc::get_mut(&mut self.0)
            .ok_or_else(|| crate::engine::internal("forgo subgroups before sharing the device"))?;
        inner.limits.subgroup_min_size = None;
        Ok(())
    }

    /// The most bytes one binding holds, and the limit that says so.
    pub fn binding_limit(&self) -> (u64, &'static str) {
        if self.limits.max_storage_buffer_binding_size < self.limits.max_buffer_size {
            (
                self.limits.max_storage_buffer_binding_size,
                "maxStorageBufferBindingSize",
            )
        } else {
            (self.limits.max_buffer_size, "maxBufferSize")
        }
    }

    /// Fails with `LIMIT_EXCEEDED`, naming the limit, if `bytes` cannot be one binding.
    pub fn check_binding(&self, bytes: u64, what: &str) -> Result<()> {
        let (limit, name) = self.binding_limit();
        if bytes > limit {
            return Err(GpuTableError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{what} needs {bytes} bytes in one binding; this device's {name} is {limit}"
                ),
            ));
        }
        Ok(())
    }

    /// A buffer of at least `bytes` from the pool (or `home`'s cache), else a new one.
    pub fn take_buffer(
        &self,
        bytes: u64,
        usage: wgpu::BufferUsages,
        home: &Home,
    ) -> Result<BufferLease> {
        self.core.lost.check()?;
        self.pool.take(usage, bytes, home, |size| {
            let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gputable"),
                size,
                usage,
                mapped_at_creation: false,
            });
            Ok(GpuBuffer {
                buffer,
                graveyard: self.graveyard.clone(),
            })
        })
    }

    /// The pipeline for `source`, compiled once (see `PipelineCache`).
    pub async fn pipeline(&self, source: &str) -> Result<Rc<wgpu::ComputePipeline>> {
        let build = || {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("gputable kernel"),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                });
            self.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some("gputable kernel"),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                })
        };
        (self.pipelines)
            .get_or_build(source, &self.device, &self.core, "kernel", source, build)
            .await
    }

    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.len()
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
        let binding_bytes = self.binding_limit().0;
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
            adds_rows_to_bins: Box::new(move |node| {
                super::bins::adds_rows_to_bins(node, binding_bytes)
            }),
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
    fn takes_from_host(&self, leaf: &Node) -> bool {
        is_literal(leaf)
    }
    fn keeps_scratch_until_flush(&self) -> bool {
        true
    }
    fn draws_indirect(&self) -> bool {
        true
    }
    fn kernel_words(&self) -> Option<(&'static str, &'static str)> {
        Some(("dispatch", "dispatches"))
    }
    fn trim(&self, cache: Option<&str>) {
        self.pool.trim(cache);
    }
    fn set_pool_cap(&self, bytes: u64) {
        self.pool.set_cap(bytes);
    }
    /// Frees every buffer and pipeline and destroys the device; later use is `DESTROYED`.
    fn destroy(&self) {
        self.core.lost.set_destroyed("WebGPU");
        self.pool.close();
        self.pipelines.clear();
        self.graveyard.bury();
        self.device.destroy();
    }
}
