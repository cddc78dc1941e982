//! The WebGL2 device: wgpu on its GL backend (WebGL2 in a browser, EGL natively), used only
//! through render pipelines, as WebGL2 has no compute shaders and no storage buffers.

use crate::gpu::lost::LostFlag;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use crate::dtype::Class;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::gpu::codegen::TextureLayout;
use crate::ir::{Node, NodeRef};

/// The limits that decide what fits in one draw.
#[derive(Clone, Copy, Debug)]
pub struct GlLimits {
    pub max_texture_dimension_2d: u32,
    pub max_color_attachments: u32,
    pub max_color_attachment_bytes_per_sample: u32,
    pub max_sampled_textures_per_shader_stage: u32,
}

/// A column on the device: per tile, one texture per plane (see `TextureLayout`).
pub struct GlColumn {
    pub tiles: Vec<Vec<LiveTexture>>,
}

pub struct GlDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: GlLimits,
    pub adapter_name: String,
    /// How every column of this device lies in textures.
    pub layout: TextureLayout,
    pipelines: RefCell<HashMap<String, Rc<wgpu::RenderPipeline>>>,
    /// Columns already on the device, by node (uploaded once, freed with their node).
    uploads: RefCell<HashMap<u64, Upload>>,
    live_textures: Rc<Cell<usize>>,
    lost: LostFlag,
    /// A WebGL2 context belongs to its canvas: kept for the device's lifetime.
    #[cfg(target_arch = "wasm32")]
    _surface: wgpu::Surface<'static>,
}

fn unavailable(message: impl Into<String>) -> GpuTableError {
    GpuTableError::new(ErrorCode::BackendUnavailable, message)
}

/// The largest texture side the layout uses: a power of two, at most 2^14 so a tile's rows
/// fit in u32, at least 64 so texture rows are 256-byte aligned for copies.
const MAX_SIDE_SHIFT: u32 = 14;
const MIN_SIDE_SHIFT: u32 = 6;

fn layout_for(side: u32) -> TextureLayout {
    let shift = (31 - side.max(1).leading_zeros()).clamp(MIN_SIDE_SHIFT, MAX_SIDE_SHIFT);
    TextureLayout {
        width_shift: shift,
        tile_shift: 2 * shift,
    }
}

/// The texture format of a plane of `channels` values of `class`.
pub fn texture_format(class: Class, channels: u32) -> wgpu::TextureFormat {
    use wgpu::TextureFormat as F;
    match (class, channels) {
        (Class::F, 1) => F::R32Float,
        (Class::U, 1) => F::R32Uint,
        (Class::I, 1) => F::R32Sint,
        (Class::F, _) => F::Rgba32Float,
        (Class::U, _) => F::Rgba32Uint,
        (Class::I, _) => F::Rgba32Sint,
    }
}

impl GlDevice {
    /// A device on wgpu's GL backend: WebGL2 through an `OffscreenCanvas` in a browser (page
    /// or worker), EGL natively. Fails with `BACKEND_UNAVAILABLE` naming what is missing.
    pub async fn new() -> Result<GlDevice> {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        descriptor.backends = wgpu::Backends::GL;
        let instance = wgpu::Instance::new(descriptor);
        #[cfg(target_arch = "wasm32")]
        let surface = {
            let canvas = web_sys::OffscreenCanvas::new(1, 1)
                .map_err(|e| unavailable(format!("no OffscreenCanvas for WebGL2: {e:?}")))?;
            instance
                .create_surface(wgpu::SurfaceTarget::OffscreenCanvas(canvas))
                .map_err(|e| unavailable(format!("no WebGL2 context: {e}")))?
        };
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                #[cfg(target_arch = "wasm32")]
                compatible_surface: Some(&surface),
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(format!("no WebGL2/GL adapter: {e}")))?;
        check_capabilities(&adapter)?;
        let required_limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                required_limits,
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(format!("the GL adapter refused a device: {e}")))?;
        let l = device.limits();
        let lost = LostFlag::watch(&device, "WebGL2");
        let info = adapter.get_info();
        Ok(GlDevice {
            limits: GlLimits {
                max_texture_dimension_2d: l.max_texture_dimension_2d,
                max_color_attachments: l.max_color_attachments,
                max_color_attachment_bytes_per_sample: l.max_color_attachment_bytes_per_sample,
                max_sampled_textures_per_shader_stage: l.max_sampled_textures_per_shader_stage,
            },
            layout: layout_for(l.max_texture_dimension_2d),
            adapter_name: info.name,
            device,
            queue,
            pipelines: RefCell::new(HashMap::new()),
            uploads: RefCell::new(HashMap::new()),
            live_textures: Rc::new(Cell::new(0)),
            lost,
            #[cfg(target_arch = "wasm32")]
            _surface: surface,
        })
    }

    /// `new`, blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking() -> Result<GlDevice> {
        pollster::block_on(GlDevice::new())
    }

    /// Uses textures of at most `side` texels a side (rounded down to a power of two, at
    /// least 64), so tests reach several tiles with small columns.
    pub fn cap_texture_side(&mut self, side: u32) {
        self.layout = layout_for(side.min(self.limits.max_texture_dimension_2d));
    }

    pub fn check_alive(&self) -> Result<()> {
        self.lost.check()
    }

    /// Frees every texture and pipeline and destroys the device; later use is `DEVICE_LOST`.
    pub fn destroy(&self) {
        self.uploads.borrow_mut().clear();
        self.pipelines.borrow_mut().clear();
        self.device.destroy();
        self.lost.set_destroyed("WebGL2");
    }

    /// A texture of the layout's width and `height` rows, counted while it lives.
    pub fn create_texture(&self, format: wgpu::TextureFormat, height: u32) -> Result<LiveTexture> {
        let max = self.limits.max_texture_dimension_2d;
        if height > max {
            return Err(GpuTableError::new(
                ErrorCode::LimitExceeded,
                format!("a texture of {height} rows exceeds this device's maxTextureDimension2D ({max})"),
            ));
        }
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("gputable"),
            size: wgpu::Extent3d {
                width: self.layout.width(),
                height: height.max(1),
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        self.live_textures.set(self.live_textures.get() + 1);
        Ok(LiveTexture {
            texture,
            live: self.live_textures.clone(),
        })
    }

    /// Textures this device holds now (uploads, outputs in flight).
    pub fn live_textures(&self) -> usize {
        self.live_textures.get()
    }

    /// The render pipeline for `source` writing `targets`, compiled once per structure.
    pub async fn pipeline(
        &self,
        source: &str,
        targets: &[wgpu::TextureFormat],
    ) -> Result<Rc<wgpu::RenderPipeline>> {
        let key = format!("{targets:?}\n{source}");
        if let Some(pipeline) = self.pipelines.borrow().get(&key) {
            return Ok(pipeline.clone());
        }
        let scopes = crate::gpu::scopes::ErrorScopes::push(&self.device);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("gputable fragment kernel"),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let color_targets: Vec<Option<wgpu::ColorTargetState>> =
            targets.iter().map(|&format| Some(format.into())).collect();
        let pipeline = self
            .device
            .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("gputable fragment kernel"),
                layout: None,
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some("vs"),
                    compilation_options: Default::default(),
                    buffers: &[],
                },
                primitive: Default::default(),
                depth_stencil: None,
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    targets: &color_targets,
                }),
                multiview_mask: None,
                cache: None,
            });
        if let Some(error) = scopes
            .pop(&format!("fragment kernel rejected\n{source}\n"))
            .await
        {
            return Err(error);
        }
        let pipeline = Rc::new(pipeline);
        self.pipelines.borrow_mut().insert(key, pipeline.clone());
        Ok(pipeline)
    }

    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.borrow().len()
    }

    pub fn uploaded(&self, node: &NodeRef) -> Option<Rc<GlColumn>> {
        self.uploads
            .borrow()
            .get(&node.id)
            .map(|(_, column)| column.clone())
    }

    pub fn remember_upload(&self, node: &NodeRef, column: Rc<GlColumn>) {
        self.uploads
            .borrow_mut()
            .insert(node.id, (Rc::downgrade(node), column));
    }

    /// Frees the uploads of nodes that were dropped or destroyed.
    pub fn prune_uploads(&self) {
        self.uploads
            .borrow_mut()
            .retain(|_, (node, _)| node.upgrade().is_some_and(|n| !n.is_destroyed()));
    }

    pub fn resident_uploads(&self) -> usize {
        self.uploads.borrow().len()
    }
}

/// A node's column on the device, dropped with the node.
type Upload = (Weak<Node>, Rc<GlColumn>);

/// A texture that keeps the device's live count right when dropped.
pub struct LiveTexture {
    pub texture: wgpu::Texture,
    live: Rc<Cell<usize>>,
}

impl Drop for LiveTexture {
    fn drop(&mut self) {
        self.texture.destroy();
        self.live.set(self.live.get() - 1);
    }
}

/// Render targets of every format the kernels write, and the texture size they need.
fn check_capabilities(adapter: &wgpu::Adapter) -> Result<()> {
    use wgpu::TextureFormat as F;
    let mut missing = Vec::new();
    for format in [
        F::R32Float,
        F::Rgba32Float,
        F::R32Uint,
        F::Rgba32Uint,
        F::R32Sint,
        F::Rgba32Sint,
    ] {
        let features = adapter.get_texture_format_features(format);
        if !features
            .allowed_usages
            .contains(wgpu::TextureUsages::RENDER_ATTACHMENT)
        {
            missing.push(format!("{format:?} render targets"));
        }
    }
    let side = adapter.limits().max_texture_dimension_2d;
    if side < 1 << MIN_SIDE_SHIFT {
        missing.push(format!("textures of 64 texels (max is {side})"));
    }
    if missing.is_empty() {
        return Ok(());
    }
    let hint = if missing.iter().any(|m| m.contains("Float")) {
        " (float render targets need EXT_color_buffer_float; with Mesa set MESA_EXTENSION_OVERRIDE=+GL_ARB_color_buffer_float)"
    } else {
        ""
    };
    Err(unavailable(format!(
        "the WebGL2 adapter lacks {}{hint}",
        missing.join(", ")
    )))
}
