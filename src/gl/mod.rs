//! The WebGL2 backend: the shared plan, run as fragment-shader kernels on wgpu's GL backend.
//!
//! Values live in data textures of 32-bit texels (see `TextureLayout`): float columns in
//! float textures, integer columns in integer textures, so integer results stay exact.
//! Each fused region is one draw per tile (more when the output row is wider than the
//! render targets one draw can write); a reduction folds rows over several draws.

mod bins;
mod device;
mod reduce;
mod region;
mod scatter;
mod sort;
mod transfer;

use std::rc::Rc;

use crate::dtype::DType;
use crate::engine::{internal, Batches, OnDevice};
use crate::error::Result;
use crate::memory::Home;
use crate::plan::Region;
use crate::value::{Storage, Value};
use crate::wgpu_shared::{scopes, scopes::ErrorScopes};
use crate::wgsl::{Kernel, TextureBinding};
pub use device::{texture_format, GlDevice, GlLimits, TextureLease};

/// A value on the device: per tile, one texture per plane (see `TextureLayout`).
pub type GlValue = OnDevice<GlDevice, Vec<Vec<TextureLease>>>;

impl GlValue {
    fn tiles(&self) -> &[Vec<TextureLease>] {
        &self.storage
    }
}

/// What a draw rasterizes.
#[derive(Clone, Copy)]
enum Shape {
    /// One triangle covering the target: a fragment per texel (within a scissor rect).
    FullTarget(Option<(u32, u32, u32, u32)>),
    /// This many points, placed by the vertex shader.
    Points(u32),
    /// This many points, each added to the texel it lands on (blended).
    AddedPoints(u32),
    /// One triangle covering the scissor rect, each fragment added to its texel (blended).
    AddedTarget((u32, u32, u32, u32)),
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
    (value.storage_of::<GlValue>())
        .ok_or_else(|| internal("a kernel input is not on this WebGL2 device"))
}

impl GlDevice {
    fn value(&self, region: &Region, tiles: Vec<Vec<TextureLease>>) -> Value {
        let node = &region.root;
        self.stored(node.meta.dtype, node.meta.size, region.output_rows(), tiles)
    }

    /// A value of `rows` rows of `size` lanes of `dtype` in `tiles`' textures.
    fn stored(&self, dtype: DType, size: u32, rows: u32, tiles: Vec<Vec<TextureLease>>) -> Value {
        Value {
            device: self.core.id,
            dtype,
            size,
            rows,
            storage: Storage::Device(Box::new(GlValue {
                device: self.clone(),
                storage: tiles,
            })),
        }
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
        let (topology, adds) = match shape {
            Shape::FullTarget(_) => (wgpu::PrimitiveTopology::TriangleList, false),
            Shape::Points(_) => (wgpu::PrimitiveTopology::PointList, false),
            Shape::AddedPoints(_) => (wgpu::PrimitiveTopology::PointList, true),
            Shape::AddedTarget(_) => (wgpu::PrimitiveTopology::TriangleList, true),
        };
        let pipeline = self.pipeline(source, &formats, topology, adds).await?;
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
            if let Shape::FullTarget(Some((x, y, w, h))) | Shape::AddedTarget((x, y, w, h)) = shape
            {
                pass.set_scissor_rect(x, y, w, h);
            }
            match shape {
                Shape::FullTarget(_) | Shape::AddedTarget(_) => pass.draw(0..3, 0..1),
                Shape::Points(count) | Shape::AddedPoints(count) => pass.draw(0..count, 0..1),
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
        crate::wgpu_shared::wait_idle(&self.device)?;
        Ok(())
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
                let t = (wanted as usize).min(value.tiles().len() - 1);
                Ok(&*value.tiles()[t][plane as usize])
            },
        )
        .collect()
}

impl Batches for GlDevice {
    type Batch = GlBatch;
    fn begin(&self, home: Home) -> Result<GlBatch> {
        Ok(GlBatch {
            home,
            scopes: Some(ErrorScopes::push(&self.device)),
        })
    }
    async fn flush(&self, _: &mut GlBatch) -> Result<()> {
        Ok(())
    }
    async fn finish(&self, mut batch: GlBatch) -> Result<()> {
        scopes::finish_evaluation(batch.scopes.take(), &self.core.lost).await
    }
}
