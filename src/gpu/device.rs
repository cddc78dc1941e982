//! The WebGPU device: wgpu device and queue, its limits, a buffer pool and a pipeline cache.

use super::lost::LostFlag;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use crate::ir::{Node, NodeRef};

use crate::error::{ErrorCode, GpuTableError, Result};

/// The limits that decide what fits in one dispatch.
#[derive(Clone, Copy, Debug)]
pub struct GpuLimits {
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroups_per_dimension: u32,
}

pub struct GpuDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: GpuLimits,
    pub adapter_name: String,
    pipelines: RefCell<HashMap<String, Rc<wgpu::ComputePipeline>>>,
    pool: RefCell<HashMap<(u64, wgpu::BufferUsages), Vec<wgpu::Buffer>>>,
    /// Columns already on the device, by node: a node's data never changes, so each is
    /// uploaded once and stays while its node lives (the table-on-the-GPU model).
    uploads: RefCell<HashMap<u64, (Weak<Node>, wgpu::Buffer)>>,
    lost: LostFlag,
}

fn unavailable(message: impl Into<String>) -> GpuTableError {
    GpuTableError::new(ErrorCode::BackendUnavailable, message)
}

impl GpuDevice {
    /// A device on the first adapter wgpu finds (natively Vulkan; `WGPU_BACKEND` overrides).
    pub async fn new() -> Result<GpuDevice> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
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
        let lost = LostFlag::watch(&device, "WebGPU");
        Ok(GpuDevice {
            limits: GpuLimits {
                max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
                max_buffer_size: l.max_buffer_size,
                max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            },
            adapter_name: adapter.get_info().name,
            device,
            queue,
            pipelines: RefCell::new(HashMap::new()),
            pool: RefCell::new(HashMap::new()),
            uploads: RefCell::new(HashMap::new()),
            lost,
        })
    }

    /// `new`, blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking() -> GpuDevice {
        pollster::block_on(GpuDevice::new())
            .expect("a WebGPU adapter (install mesa-vulkan-drivers for lavapipe)")
    }

    pub fn check_alive(&self) -> Result<()> {
        self.lost.check()
    }

    /// Frees every buffer and pipeline and destroys the device; any later use of it is
    /// `DEVICE_LOST`.
    pub fn destroy(&self) {
        self.pool.borrow_mut().clear();
        self.uploads.borrow_mut().clear();
        self.pipelines.borrow_mut().clear();
        self.device.destroy();
        self.lost.set_destroyed("WebGPU");
    }

    /// Lowers the binding limit this device enforces (to test `LIMIT_EXCEEDED` cheaply).
    pub fn cap_binding_size(&mut self, bytes: u64) {
        self.limits.max_storage_buffer_binding_size =
            self.limits.max_storage_buffer_binding_size.min(bytes);
    }

    /// Fails with `LIMIT_EXCEEDED`, naming the limit, if `bytes` cannot be one binding.
    pub fn check_binding(&self, bytes: u64, what: &str) -> Result<()> {
        let (limit, name) =
            if self.limits.max_storage_buffer_binding_size < self.limits.max_buffer_size {
                (
                    self.limits.max_storage_buffer_binding_size,
                    "maxStorageBufferBindingSize",
                )
            } else {
                (self.limits.max_buffer_size, "maxBufferSize")
            };
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

    /// A buffer of at least `bytes` (rounded up to a power of two), reused from the pool.
    pub fn take_buffer(&self, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        let size = bytes.max(16).next_power_of_two();
        if let Some(buffer) = self
            .pool
            .borrow_mut()
            .get_mut(&(size, usage))
            .and_then(Vec::pop)
        {
            return buffer;
        }
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gputable"),
            size,
            usage,
            mapped_at_creation: false,
        })
    }

    /// Returns a buffer from `take_buffer` to the pool.
    pub fn give_buffer(&self, buffer: wgpu::Buffer) {
        self.pool
            .borrow_mut()
            .entry((buffer.size(), buffer.usage()))
            .or_default()
            .push(buffer);
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
            return Err(error);
        }
        let pipeline = Rc::new(pipeline);
        self.pipelines
            .borrow_mut()
            .insert(source.to_string(), pipeline.clone());
        Ok(pipeline)
    }

    /// The device copy of `node`'s data, if it was uploaded before.
    pub fn uploaded(&self, node: &NodeRef) -> Option<wgpu::Buffer> {
        self.uploads
            .borrow()
            .get(&node.id)
            .map(|(_, buffer)| buffer.clone())
    }

    pub fn remember_upload(&self, node: &NodeRef, buffer: wgpu::Buffer) {
        self.uploads
            .borrow_mut()
            .insert(node.id, (Rc::downgrade(node), buffer));
    }

    /// Frees the uploads of nodes that were dropped or destroyed.
    pub fn prune_uploads(&self) {
        let mut uploads = self.uploads.borrow_mut();
        let dead: Vec<u64> = uploads
            .iter()
            .filter(|(_, (node, _))| node.upgrade().is_none_or(|n| n.is_destroyed()))
            .map(|(id, _)| *id)
            .collect();
        for id in dead {
            if let Some((_, buffer)) = uploads.remove(&id) {
                self.give_buffer(buffer);
            }
        }
    }

    pub fn resident_uploads(&self) -> usize {
        self.uploads.borrow().len()
    }

    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.borrow().len()
    }
}
