//! The WebGPU device: wgpu device and queue, its limits, a pool of buffers and a pipeline
//! cache.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use crate::engine::{DeviceCore, LostFlag};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::memory::{Home, Lease, Pool, Resource};

/// The limits that decide what fits in one dispatch.
#[derive(Clone, Copy, Debug)]
pub struct GpuLimits {
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_storage_buffers_per_shader_stage: u32,
    pub min_uniform_buffer_offset_alignment: u32,
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
    pipelines: RefCell<HashMap<String, Rc<wgpu::ComputePipeline>>>,
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

fn unavailable(message: impl Into<String>) -> GpuTableError {
    GpuTableError::new(ErrorCode::BackendUnavailable, message)
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
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions::default())
            .await
            .map_err(|e| unavailable(format!("no WebGPU adapter: {e}")))?;
        // Ask for everything the adapter offers: bigger bindings mean fewer LIMIT_EXCEEDED.
        let required_limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                required_limits,
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(format!("the WebGPU adapter refused a device: {e}")))?;
        let l = device.limits();
        let core = DeviceCore::new(LostFlag::watch(&device, "WebGPU"));
        let limits = GpuLimits {
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
            max_buffer_size: l.max_buffer_size,
            max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            max_storage_buffers_per_shader_stage: l.max_storage_buffers_per_shader_stage,
            min_uniform_buffer_offset_alignment: l.min_uniform_buffer_offset_alignment,
        };
        let pool = Pool::new(core.counters.clone(), limits.max_buffer_size);
        Ok(GpuDevice(Rc::new(GpuInner {
            core,
            limits,
            adapter_name: adapter.get_info().name,
            device,
            queue,
            pipelines: RefCell::new(HashMap::new()),
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

    pub(crate) fn set_cap(&self, bytes: u64) {
        self.pool.set_cap(bytes);
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

    /// The pipeline for `source`, compiled once: kernel source depends only on a graph's
    /// structure and types, so the source itself is the cache key.
    pub async fn pipeline(&self, source: &str) -> Result<Rc<wgpu::ComputePipeline>> {
        if let Some(pipeline) = self.pipelines.borrow().get(source) {
            return Ok(pipeline.clone());
        }
        let scopes = super::scopes::ErrorScopes::push(&self.device);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("gputable kernel"),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("gputable kernel"),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        if let Some(error) = scopes.pop(&format!("kernel rejected\n{source}\n")).await {
            return Err(self.core.lost.explain(error));
        }
        self.core.counters.add_pipeline();
        let pipeline = Rc::new(pipeline);
        self.pipelines
            .borrow_mut()
            .insert(source.to_string(), pipeline.clone());
        Ok(pipeline)
    }

    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.borrow().len()
    }

    pub(crate) fn trim_pool(&self, cache: Option<&str>) {
        self.pool.trim(cache);
    }

    /// Frees every buffer and pipeline and destroys the device; later use is `DESTROYED`.
    pub fn destroy_device(&self) {
        self.core.lost.set_destroyed("WebGPU");
        self.pool.close();
        self.pipelines.borrow_mut().clear();
        self.graveyard.bury();
        self.device.destroy();
    }
}
