//! Fused elementwise passes on WebGL2: per tile of rows, one draw per group of output planes
//! (as many render targets as one draw writes), a fragment per row.

use std::rc::Rc;

use super::{bound_textures, GlBatch, GlDevice, Shape};
use crate::engine::{RegionModel, Regions};
use crate::error::Result;
use crate::ir::Node;
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::fragment::{self, PARAM_TILE_BASE};
use crate::wgsl::{plane_channels, planes};

use super::device::texture_format;

impl GlDevice {
    /// Output planes grouped into draws: as many render targets as one draw may write.
    fn plane_groups(&self, size: u32) -> Vec<std::ops::Range<u32>> {
        let bytes_per_plane = 4 * plane_channels(size);
        let per_draw = (self.limits.max_color_attachment_bytes_per_sample / bytes_per_plane)
            .min(self.limits.max_color_attachments)
            .max(1);
        let count = planes(size);
        (0..count.div_ceil(per_draw))
            .map(|g| g * per_draw..((g + 1) * per_draw).min(count))
            .collect()
    }
}

impl RegionModel for GlDevice {
    fn walks(&self, root: &Node) -> bool {
        self.blends_bins(root)
    }
    fn walk_scratch_bytes(&self, root: &Node) -> u64 {
        self.blended_scratch_bytes(root)
    }
    fn describe_walk(&self, root: &Node) -> (u64, String) {
        self.describe_blended_bins(root)
    }
    fn describe_region(&self, region: &Region) -> Result<(u64, String)> {
        let layout = self.layout;
        let rows = region.rows;
        if rows == 0 {
            return Ok((0, "no draw (0 rows)".to_string()));
        }
        let tiles = layout.tiles(rows);
        let groups = self.plane_groups(region.root.meta.size).len() as u32;
        let width = layout.width();
        let height = layout.rows_in_tile(rows, 0).div_ceil(width);
        Ok((
            (tiles * groups) as u64,
            format!(
                "{} draw(s): {tiles} tile(s) of up to {width}x{height} fragments, one per row, {groups} draw(s) per tile",
                tiles * groups
            ),
        ))
    }
}

impl Regions for GlDevice {
    /// Bin counts and float sums are walks of their stored input here
    /// (`PlanLimits::adds_rows_to_bins`).
    type Bins = ();
    async fn walk(
        &self,
        batch: &mut GlBatch,
        root: &Node,
        inputs: &[Vec<Rc<Value>>],
    ) -> Result<Vec<Value>> {
        let input =
            (inputs.first()).ok_or_else(|| crate::engine::internal("a walk without its input"))?;
        self.bins_by_blending(batch, root, input).await
    }
    async fn run_region(
        &self,
        batch: &mut GlBatch,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value> {
        let root = &region.root;
        let layout = self.layout;
        let rows = region.rows;
        let size = root.meta.size;
        let format = texture_format(root.meta.dtype.class(), plane_channels(size));
        let kernels = self
            .plane_groups(size)
            .into_iter()
            .map(|group| {
                fragment::elementwise_kernel(region, leaves, layout, rows, group.clone())
                    .map(|k| (group, k))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut tiles = Vec::new();
        for tile in 0..layout.tiles(rows) {
            let tile_rows = layout.rows_in_tile(rows, tile);
            let height = tile_rows.div_ceil(layout.width());
            let textures = (0..planes(size))
                .map(|_| self.take_texture(format, height, &batch.home))
                .collect::<Result<Vec<_>>>()?;
            if tile_rows > 0 {
                for (group, kernel) in &kernels {
                    let mut params = kernel.params.clone();
                    params[PARAM_TILE_BASE] = tile * layout.tile_rows();
                    let inputs = bound_textures(kernel, region, leaves, tile)?;
                    let targets: Vec<&wgpu::Texture> = textures
                        [group.start as usize..group.end as usize]
                        .iter()
                        .map(|t| &**t)
                        .collect();
                    let scissor = Some((0, 0, layout.width(), height));
                    self.draw(
                        batch,
                        &kernel.source,
                        &params,
                        &inputs,
                        &targets,
                        Shape::FullTarget(scissor),
                    )
                    .await?;
                }
            }
            tiles.push(textures);
        }
        Ok(self.value(region, tiles))
    }
}
