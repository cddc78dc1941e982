//! Reductions in draws: fragment kernels fold rows into partial-state textures, fold draws
//! shrink them, a last draw writes the result.

use std::rc::Rc;

use super::{bound_textures, gl_value, texture_format, GlBatch, GlDevice, GlValue};
use crate::engine::internal;
use crate::error::Result;
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::fragment::{self, PARAM_TILE_BASE, REDUCE_FOLD};
use crate::wgsl::reduce::ReduceOp;
use crate::wgsl::{is_literal, planes, Kernel, TextureLayout};

impl GlDevice {
    /// A reduction in draws: per plane of 4 lanes, each tile folds into a band of partial
    /// state textures (fused prologue included), fold passes shrink them `REDUCE_FOLD`
    /// times each, and a last draw writes the plane's lanes of the result.
    pub(super) async fn reduce(
        &self,
        batch: &GlBatch,
        region: &Region,
        leaves: &[Rc<Value>],
        op: ReduceOp,
    ) -> Result<Value> {
        let rows = region.rows;
        let layout = self.layout;
        let width = layout.width();
        let input = &region.root.inputs[0];
        let class = input.meta.dtype.class();
        let lanes = input.meta.size;
        let partial_format = texture_format(class, 4);
        let (bands, partial_height) = reduce_bands(layout, rows);
        // One texel per output row (a lane's outputs in its channels).
        let output =
            self.take_texture(texture_format(class, 4), lanes.div_ceil(width), &batch.home)?;
        let fold = fragment::reduce_fold_source(op, class, layout);
        let last = fragment::reduce_final_source(op, class, layout);
        // A materialized input is read a plane at a time, whatever its width and texture
        // shape; a fused prologue is computed per row.
        let stored = match region.nodes.len() {
            1 if !is_literal(input) => Some((
                gl_value(&leaves[0])?,
                fragment::reduce_plane_partials_source(op, class, layout),
            )),
            _ => None,
        };
        for plane in 0..planes(lanes) {
            let mut a = self.take_texture(partial_format, partial_height, &batch.home)?;
            let mut b = self.take_texture(partial_format, partial_height, &batch.home)?;
            let first_pass = match &stored {
                Some((value, source)) => FirstPass::Stored { value, source },
                None => FirstPass::Fused(fragment::reduce_partials_kernel(
                    region, leaves, op, layout, plane,
                )?),
            };
            for (tile, &(y0, height)) in bands.iter().enumerate() {
                let tile = tile as u32;
                let tile_rows = layout.rows_in_tile(rows, tile);
                let scissor = Some((0, y0, width, height));
                match &first_pass {
                    FirstPass::Stored { value, source } => {
                        let texture = value
                            .tiles
                            .get(tile as usize)
                            .and_then(|planes| planes.get(plane as usize))
                            .ok_or_else(|| internal("a reduced input lacks a tile"))?;
                        let params = [tile_rows, texture.width().trailing_zeros(), 0, y0];
                        self.draw(batch, source, &params, &[texture], &[&a, &b], scissor)
                            .await?;
                    }
                    FirstPass::Fused(kernel) => {
                        let mut params = kernel.params.clone();
                        params[0] = rows;
                        params[PARAM_TILE_BASE] = tile * layout.tile_rows();
                        params[3] = y0;
                        params[4] = tile_rows;
                        let inputs = bound_textures(kernel, region, leaves, tile)?;
                        self.draw(batch, &kernel.source, &params, &inputs, &[&a, &b], scissor)
                            .await?;
                    }
                }
            }
            let mut texels = partial_height * width;
            while texels > REDUCE_FOLD {
                let folded = texels.div_ceil(REDUCE_FOLD);
                let height = folded.div_ceil(width);
                let next_a = self.take_texture(partial_format, height, &batch.home)?;
                let next_b = self.take_texture(partial_format, height, &batch.home)?;
                let scissor = Some((0, 0, width, height));
                self.draw(
                    batch,
                    &fold,
                    &[texels],
                    &[&a, &b],
                    &[&next_a, &next_b],
                    scissor,
                )
                .await?;
                (a, b, texels) = (next_a, next_b, folded);
            }
            let first = plane * 4;
            let scissor = Some((first % width, first / width, (lanes - first).min(4), 1));
            self.draw(batch, &last, &[texels], &[&a, &b], &[&output], scissor)
                .await?;
        }
        Ok(self.value(region, vec![vec![output]]))
    }
}

/// How a reduction's first pass reads its input.
enum FirstPass<'a> {
    /// A materialized input, a plane texture per draw.
    Stored { value: &'a GlValue, source: &'a str },
    /// Computed per row by the region's fused prologue.
    Fused(Kernel),
}

/// Per tile, the first row of its band in the partial textures and the band's rows; and the
/// partial textures' height.
fn reduce_bands(layout: TextureLayout, rows: u32) -> (Vec<(u32, u32)>, u32) {
    let mut bands = Vec::new();
    let mut y = 0;
    for tile in 0..layout.tiles(rows) {
        let fragments = layout.rows_in_tile(rows, tile).div_ceil(REDUCE_FOLD);
        let height = fragments.div_ceil(layout.width()).max(1);
        bands.push((y, height));
        y += height;
    }
    (bands, y)
}

/// Fold passes after the first reduction pass.
pub(super) fn reduce_fold_passes(layout: TextureLayout, rows: u32) -> u32 {
    let mut texels = reduce_bands(layout, rows).1 * layout.width();
    let mut passes = 0;
    while texels > REDUCE_FOLD {
        texels = texels.div_ceil(REDUCE_FOLD);
        passes += 1;
    }
    passes
}
