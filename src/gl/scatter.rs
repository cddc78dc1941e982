//! Scatter on WebGL2: the output's tiles cleared to 0, then per chunk task a point-list
//! draw for each pair of an input tile and an output tile, each point placed by its
//! destination (a vertex shader reading the destination texture).

use super::{gl_value, GlBatch, GlDevice, GlValue, Shape};
use crate::engine::Written;
use crate::error::Result;
use crate::ir::Node;
use crate::plan::Region;
use crate::value::{Storage, Value};
use crate::wgsl::fragment::scatter_points_source;
use crate::wgsl::SCATTER_PARAMS;

impl GlDevice {
    pub(super) fn scatter_target_of(&self, batch: &GlBatch, root: &Node) -> Result<Value> {
        let rows = root.meta.length;
        let layout = self.layout;
        let format = super::texture_format(root.meta.dtype.class(), 1);
        let mut tiles = Vec::new();
        for tile in 0..layout.tiles(rows) {
            let height = layout.rows_in_tile(rows, tile).div_ceil(layout.width());
            let texture = self.take_texture(format, height, &batch.home)?;
            self.clear(&texture);
            tiles.push(vec![texture]);
        }
        Ok(Value {
            device: self.core.id,
            dtype: root.meta.dtype,
            size: 1,
            rows,
            storage: Storage::WebGl(GlValue {
                tiles,
                device: self.clone(),
            }),
        })
    }

    /// Every texel of `texture` set to 0.
    fn clear(&self, texture: &wgpu::Texture) {
        let view = texture.create_view(&Default::default());
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("gputable clear"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
        self.queue.submit([encoder.finish()]);
    }

    pub(super) async fn scatter_task(
        &self,
        batch: &GlBatch,
        task: &Region,
        destinations: &Value,
        written: Written<'_>,
        target: &Value,
    ) -> Result<()> {
        let layout = self.layout;
        let (from, out) = (gl_value(destinations)?, gl_value(target)?);
        let (values, first_row) = match written {
            Written::Rows(values) => (Some(gl_value(values)?), 0),
            Written::RowNumbers { first } => (None, first),
        };
        let class = values.map(|_| target.dtype.class());
        let source = scatter_points_source(class)?;
        for tile in 0..layout.tiles(task.rows) {
            let points = layout.rows_in_tile(task.rows, tile);
            let d = (from.tiles.get(tile as usize))
                .ok_or_else(|| super::internal("a scatter input lacks a tile"))?;
            let mut inputs = vec![&*d[0]];
            if let Some(values) = values {
                let v = (values.tiles.get(tile as usize))
                    .ok_or_else(|| super::internal("a scatter input lacks a tile"))?;
                inputs.push(&*v[0]);
            }
            if points == 0 {
                continue;
            }
            for (t, planes) in out.tiles.iter().enumerate() {
                let texture = &*planes[0];
                let t = t as u32;
                let mut params = vec![
                    t * layout.tile_rows(),
                    layout.rows_in_tile(target.rows, t),
                    first_row + tile * layout.tile_rows(),
                    layout.width(),
                    texture.height(),
                ];
                params.resize(SCATTER_PARAMS, 0);
                self.draw(
                    batch,
                    &source,
                    &params,
                    &inputs,
                    &[texture],
                    Shape::Points(points),
                )
                .await?;
            }
        }
        Ok(())
    }
}
