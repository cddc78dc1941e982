//! Scatter on WebGL2: the output's tiles cleared to 0, then per chunk task a point-list
//! draw for each pair of an input tile and an output tile, each point placed by its
//! destination (a vertex shader reading the destination texture).

use super::{gl_value, texture_format, GlBatch, GlDevice, Shape};
use crate::engine::{internal, ScatterModel, Scatters, Written};
use crate::error::Result;
use crate::ir::Node;
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::fragment::scatter_points_source;
use crate::wgsl::FIXED_PARAMS;

impl GlDevice {
    /// Every texel of `texture` set to 0.
    pub(super) fn clear(&self, texture: &wgpu::Texture) {
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
}

impl ScatterModel for GlDevice {
    fn describe_scatter(&self, region: &Region) -> (u64, String) {
        let layout = self.layout;
        let out_tiles = layout.tiles(region.output_rows());
        let draws = match region.rows {
            0 => 0,
            rows => layout.tiles(rows) * out_tiles,
        };
        (
            draws as u64,
            format!("{draws} point-list draw(s): a point per input row, placed at its destination, per tile of the input and of the output"),
        )
    }
}

impl Scatters for GlDevice {
    async fn scatter_target(&self, batch: &mut GlBatch, root: &Node) -> Result<Vec<Value>> {
        let rows = root.meta.length;
        let layout = self.layout;
        let format = texture_format(root.meta.dtype.class(), 1);
        let mut tiles = Vec::new();
        for tile in 0..layout.tiles(rows) {
            let height = layout.rows_in_tile(rows, tile).div_ceil(layout.width());
            let texture = self.take_texture(format, height, &batch.home)?;
            self.clear(&texture);
            tiles.push(vec![texture]);
        }
        // One value, tiled within.
        Ok(vec![self.stored(root.meta.dtype, 1, rows, tiles)])
    }
    async fn scatter_rows(
        &self,
        batch: &mut GlBatch,
        task: &Region,
        destinations: &Value,
        written: Written<'_>,
        parts: &mut [Value],
    ) -> Result<()> {
        let [target] = parts else {
            return Err(internal(
                "a WebGL2 scatter output is one value (tiled within)",
            ));
        };
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
            let d = (from.tiles().get(tile as usize))
                .ok_or_else(|| internal("a scatter input lacks a tile"))?;
            let mut inputs = vec![&*d[0]];
            if let Some(values) = values {
                let v = (values.tiles().get(tile as usize))
                    .ok_or_else(|| internal("a scatter input lacks a tile"))?;
                inputs.push(&*v[0]);
            }
            if points == 0 {
                continue;
            }
            for (t, planes) in out.tiles().iter().enumerate() {
                let texture = &*planes[0];
                let t = t as u32;
                let mut params = vec![
                    t * layout.tile_rows(),
                    layout.rows_in_tile(target.rows, t),
                    first_row + tile * layout.tile_rows(),
                    layout.width(),
                    texture.height(),
                ];
                params.resize(FIXED_PARAMS, 0);
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
