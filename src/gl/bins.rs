//! Bin counts on WebGL2 (`Op::BinCount`), where the context blends into float32 targets
//! (EXT_float_blend): a point per id, drawn at its bin's texel with additive blending (a
//! draw per tile of ids), then one draw writing the totals as uint32. A float32 total is
//! exact up to 2^24, so a count of more rows than that is composed of a sort and a
//! segmented sum instead, as bin sums always are (blended float adds would sum in no fixed
//! order, and a large group's total would drift with its size).

use std::rc::Rc;

use super::{gl_value, GlBatch, GlDevice, Shape};
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::value::Value;
use crate::wgsl::fragment::bin_points_source;
use crate::wgsl::SCATTER_PARAMS;

/// The most rows a blended count adds: each bin's float32 total stays exact.
const MOST_BLENDED_ROWS: u32 = 1 << 24;

impl GlDevice {
    /// Whether the bin count `root` is counted by blended point draws here: the context
    /// blends float32 targets, the bins fit one tile and the rows keep each total exact.
    pub(super) fn blends_counts(&self, root: &Node) -> bool {
        matches!(root.op, Op::BinCount { .. })
            && self.blends_floats
            && root.meta.length <= self.layout.tile_rows()
            && root.inputs[0].meta.length <= MOST_BLENDED_ROWS
    }

    /// Texels of the totals of the bin count `root`.
    fn total_rows(&self, root: &Node) -> u32 {
        root.meta.length.div_ceil(self.layout.width()).max(1)
    }

    /// Device bytes of the float32 totals the points add into.
    pub(super) fn blended_totals_bytes(&self, root: &Node) -> u64 {
        self.total_rows(root) as u64 * self.layout.width() as u64 * 4
    }

    /// The draws of the bin count `root`, and a line saying what they do.
    pub(super) fn describe_blended_count(&self, root: &Node) -> (u64, String) {
        let tiles = (root.inputs[0].chunks.iter())
            .map(|&rows| match rows {
                0 => 0,
                rows => self.layout.tiles(rows),
            })
            .sum::<u32>();
        (
            tiles as u64 + 1,
            format!("{tiles} point-list draw(s) adding each row's 1 at its bin's texel (blended), one per tile of ids, and 1 draw writing the totals as uint32"),
        )
    }

    /// The counts of the bin count `root` of the ids' stored chunks `ids`.
    pub(super) async fn count_by_blending(
        &self,
        batch: &mut GlBatch,
        root: &Node,
        ids: &[Rc<Value>],
    ) -> Result<Vec<Value>> {
        let layout = self.layout;
        let (bins, height) = (root.meta.length, self.total_rows(root));
        let totals = self.take_texture(wgpu::TextureFormat::R32Float, height, &batch.home)?;
        self.clear(&totals);
        let mut params = vec![bins, layout.width(), totals.height()];
        params.resize(SCATTER_PARAMS, 0);
        let points = bin_points_source("points")?;
        for chunk in ids {
            for (tile, planes) in gl_value(chunk)?.tiles().iter().enumerate() {
                let rows = layout.rows_in_tile(chunk.rows, tile as u32);
                if rows > 0 {
                    let shape = Shape::AddedPoints(rows);
                    self.draw(batch, &points, &params, &[&planes[0]], &[&totals], shape)
                        .await?;
                }
            }
        }
        let counts = self.take_texture(wgpu::TextureFormat::R32Uint, height, &batch.home)?;
        let whole = Shape::FullTarget(Some((0, 0, layout.width(), height)));
        let source = bin_points_source("counts")?;
        self.draw(batch, &source, &params, &[&totals], &[&counts], whole)
            .await?;
        Ok(vec![self.stored(DType::U32, 1, bins, vec![vec![counts]])])
    }
}
