//! The WebGL2 device: wgpu on its GL backend (WebGL2 in a browser, EGL natively), used only
//! through render pipelines, as WebGL2 has no compute shaders and no storage buffers.

use std::rc::Rc;

use crate::dtype::Class;
use crate::engine::{device_name, DeviceCore, DeviceModel};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::memory::{Budget, Home, Lease, Pool, Resource};
use crate::plan::{Access, PlanLimits, SortWrites, MAX_REGION_NODES};
use crate::value::Value;
use crate::wgpu_shared::{open, unavailable, PipelineCache};
use crate::wgsl::{is_literal, plane_channels, planes, TextureLayout};

use super::rows_of;

/// The limits that decide what fits in one draw.
#[derive(Clone, Copy, Debug)]
pub struct GlLimits {
    pub max_texture_dimension_2d: u32,
    pub max_color_attachments: u32,
    pub max_color_attachment_bytes_per_sample: u32,
    pub max_sampled_textures_per_shader_stage: u32,
}

impl Resource for wgpu::Texture {
    fn discard(self) {
        self.destroy();
    }
}

impl Resource for wgpu::Buffer {
    fn discard(self) {
        self.destroy();
    }
}

/// Textures are pooled by format and width; their heights come in size classes.
pub type TextureKey = (wgpu::TextureFormat, u32);
pub type TextureLease = Lease<TextureKey, wgpu::Texture>;
pub type GlBufferLease = Lease<wgpu::BufferUsages, wgpu::Buffer>;

pub struct GlInner {
    pub core: DeviceCore,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: GlLimits,
    pub adapter_name: String,
    /// How every column of this device lies in textures.
    pub layout: TextureLayout,
    /// Whether draws may add into float32 render targets (EXT_float_blend): bin counts are
    /// then blended point draws (gl/bins.rs).
    pub blends_floats: bool,
    pipelines: PipelineCache<wgpu::RenderPipeline>,
    textures: Rc<Pool<TextureKey, wgpu::Texture>>,
    buffers: Rc<Pool<wgpu::BufferUsages, wgpu::Buffer>>,
    /// A WebGL2 context belongs to its canvas: kept for the device's lifetime.
    #[cfg(target_arch = "wasm32")]
    _surface: wgpu::Surface<'static>,
}

/// A WebGL2 device (cheap to clone: clones share the device).
#[derive(Clone)]
pub struct GlDevice(pub(crate) Rc<GlInner>);

impl std::ops::Deref for GlDevice {
    type Target = GlInner;
    fn deref(&self) -> &GlInner {
        &self.0
    }
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

/// Bytes of one texel of `format` (every format here has 32-bit channels).
pub fn texel_bytes(format: wgpu::TextureFormat) -> u32 {
    format.components() as u32 * 4
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
        let options = wgpu::RequestAdapterOptions {
            #[cfg(target_arch = "wasm32")]
            compatible_surface: Some(&surface),
            ..Default::default()
        };
        let mut blends_floats = false;
        let check = |adapter: &wgpu::Adapter| {
            blends_floats = has_float_blend(adapter);
            check_capabilities(adapter)
        };
        let opened = open(&instance, &options, "WebGL2", false, check).await?;
        let l = opened.limits;
        let counters = opened.core.counters.clone();
        // Textures and buffers share one cap.
        let budget = Rc::new(Budget::default());
        let textures = Pool::with_budget(counters.clone(), u64::MAX, budget.clone());
        let buffers = Pool::with_budget(counters, l.max_buffer_size, budget);
        Ok(GlDevice(Rc::new(GlInner {
            limits: GlLimits {
                max_texture_dimension_2d: l.max_texture_dimension_2d,
                max_color_attachments: l.max_color_attachments,
                max_color_attachment_bytes_per_sample: l.max_color_attachment_bytes_per_sample,
                max_sampled_textures_per_shader_stage: l.max_sampled_textures_per_shader_stage,
            },
            layout: layout_for(l.max_texture_dimension_2d),
            blends_floats,
            adapter_name: opened.adapter_name,
            core: opened.core,
            device: opened.device,
            queue: opened.queue,
            pipelines: PipelineCache::default(),
            textures,
            buffers,
            #[cfg(target_arch = "wasm32")]
            _surface: surface,
        })))
    }

    /// `new`, blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking() -> Result<GlDevice> {
        pollster::block_on(GlDevice::new())
    }

    /// Uses textures of at most `side` texels a side (rounded down to a power of two, at
    /// least 64), so tests reach several tiles with small columns.
    pub fn cap_texture_side(&mut self, side: u32) -> Result<()> {
        let inner = Rc::get_mut(&mut self.0)
            .ok_or_else(|| crate::engine::internal("cap limits before sharing the device"))?;
        inner.layout = layout_for(side.min(inner.limits.max_texture_dimension_2d));
        Ok(())
    }

    /// A texture of the layout's width and at least `height` rows.
    pub fn take_texture(
        &self,
        format: wgpu::TextureFormat,
        height: u32,
        home: &Home,
    ) -> Result<TextureLease> {
        self.take_texture_of(format, self.layout.width(), height, home)
    }

    /// A texture `width` texels wide (a power of two) and at least `height` rows.
    pub fn take_texture_of(
        &self,
        format: wgpu::TextureFormat,
        width: u32,
        height: u32,
        home: &Home,
    ) -> Result<TextureLease> {
        self.core.lost.check()?;
        let max = self.limits.max_texture_dimension_2d;
        let height = height.max(1);
        if height > max {
            return Err(GpuTableError::new(
                ErrorCode::LimitExceeded,
                format!("a texture of {height} rows exceeds this device's maxTextureDimension2D ({max})"),
            ));
        }
        let row_bytes = width as u64 * texel_bytes(format) as u64;
        self.textures
            .take((format, width), height as u64 * row_bytes, home, |class| {
                let rows = ((class / row_bytes) as u32).clamp(height, max);
                Ok(self.device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("gputable"),
                    size: wgpu::Extent3d {
                        width,
                        height: rows,
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
                }))
            })
    }

    /// The texture width for a value of `planes` planes: the layout's, or for a value wider
    /// than one draw samples (read only plane by plane), the narrowest that holds a tile of
    /// `tile_rows` rows, so thousands of planes of a few rows stay small. At least 256 bytes
    /// a texel row, as copies need.
    pub fn texture_width(&self, format: wgpu::TextureFormat, planes: u32, tile_rows: u32) -> u32 {
        let full = self.layout.width();
        if planes <= self.limits.max_sampled_textures_per_shader_stage {
            return full;
        }
        let max_height = self.limits.max_texture_dimension_2d.min(full);
        let least = 256 / texel_bytes(format);
        tile_rows
            .div_ceil(max_height)
            .next_power_of_two()
            .clamp(least, full)
    }

    pub fn take_buffer(
        &self,
        bytes: u64,
        usage: wgpu::BufferUsages,
        home: &Home,
    ) -> Result<GlBufferLease> {
        self.core.lost.check()?;
        self.buffers.take(usage, bytes, home, |size| {
            Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gputable"),
                size,
                usage,
                mapped_at_creation: false,
            }))
        })
    }

    /// The render pipeline for `source` writing `targets` (adding to them where `adds`),
    /// compiled once per structure.
    pub async fn pipeline(
        &self,
        source: &str,
        targets: &[wgpu::TextureFormat],
        topology: wgpu::PrimitiveTopology,
        adds: bool,
    ) -> Result<Rc<wgpu::RenderPipeline>> {
        let key = format!("{targets:?} {topology:?} {adds}\n{source}");
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let blend = adds.then_some(wgpu::BlendState {
            color: add,
            alpha: add,
        });
        let build = || {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("gputable fragment kernel"),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                });
            let color_targets: Vec<Option<wgpu::ColorTargetState>> = (targets.iter())
                .map(|&format| {
                    Some(wgpu::ColorTargetState {
                        format,
                        blend,
                        write_mask: wgpu::ColorWrites::ALL,
                    })
                })
                .collect();
            self.device
                .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: Some("gputable fragment kernel"),
                    layout: None,
                    vertex: wgpu::VertexState {
                        module: &module,
                        entry_point: Some("vs"),
                        compilation_options: Default::default(),
                        buffers: &[],
                    },
                    primitive: wgpu::PrimitiveState {
                        topology,
                        ..Default::default()
                    },
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
                })
        };
        let kind = "fragment kernel";
        (self.pipelines)
            .get_or_build(&key, &self.device, &self.core, kind, source, build)
            .await
    }

    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.len()
    }
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
            adds_rows_to_bins: Box::new(|_| false),
        }
    }
    fn value_bytes(&self, dtype: crate::dtype::DType, size: u32, rows: u32) -> u64 {
        let layout = self.layout;
        let format = texture_format(dtype.class(), plane_channels(size));
        let width = self.texture_width(format, planes(size), layout.rows_in_tile(rows, 0));
        let row_bytes = width as u64 * texel_bytes(format) as u64;
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
    fn kernel_words(&self) -> Option<(&'static str, &'static str)> {
        Some(("draw", "draws"))
    }
    fn trim(&self, cache: Option<&str>) {
        self.textures.trim(cache);
        self.buffers.trim(cache);
    }
    fn set_pool_cap(&self, bytes: u64) {
        self.textures.set_cap(bytes);
        self.buffers.set_cap(bytes);
    }
    /// Frees every texture and pipeline and destroys the device; later use is `DESTROYED`.
    fn destroy(&self) {
        self.core.lost.set_destroyed("WebGL2");
        self.textures.close();
        self.buffers.close();
        self.pipelines.clear();
        self.device.destroy();
    }
}

/// Whether draws may blend into float32 targets: core in desktop GL (3.0 on), and in GLES
/// and WebGL2 with EXT_float_blend (glow enables it in WebGL2 where offered). wgpu's GL layer
/// reports float32 targets blendable without checking.
fn has_float_blend(adapter: &wgpu::Adapter) -> bool {
    use glow::HasContext;
    // SAFETY: the adapter's GL context is only asked its version and extension list.
    let Some(hal) = (unsafe { adapter.as_hal::<wgpu::hal::api::Gles>() }) else {
        return false;
    };
    let gl = hal.adapter_context().lock();
    let extensions = gl.supported_extensions();
    !gl.version().is_embedded
        || extensions.contains("EXT_float_blend")
        || extensions.contains("GL_EXT_float_blend")
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
