//! Bin counts and float32 bin sums on WebGL2 (`Op::BinCount`, `Op::BinSum`), where the
//! context blends into float32 targets (EXT_float_blend). A count draws a point per id at its
//! bin's texel with additive blending (a draw per tile of ids), then one draw writes the
//! totals as uint32; a float32 total is exact up to 2^24, so a count of more rows than that
//! is composed of a sort and a segmented sum instead. A float32 sum draws a point per row
//! adding its value at its bin's texel of the row's block of rows (blending keeps the rows'
//! order, so each texel is a sum of a few rows in order), then one draw adds each bin's
//! blocks pairwise; integer sums (wrapping, exact) stay a sort and a segmented sum.

use std::rc::Rc;

use super::{gl_value, GlBatch, GlDevice, Shape};
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::value::Value;
use crate::wgsl::fragment::{bin_points_source, BLENDED_SUM_BLOCK};
use crate::wgsl::SCATTER_PARAMS;

/// The most rows a blended count adds: each bin's float32 total stays exact.
const MOST_BLENDED_ROWS: u32 = 1 << 24;

impl GlDevice {
    /// Whether the bin count or sum `root` adds rows by blended point draws here.
    pub(super) fn blends_bins(&self, root: &Node) -> bool {
        self.blends_counts(root) || self.blends_sums(root)
    }

    /// Whether the bin count `root` is counted by blended point draws here: the context
    /// blends float32 targets, the bins fit one tile and the rows keep each total exact.
    fn blends_counts(&self, root: &Node) -> bool {
        matches!(root.op, Op::BinCount { .. })
            && self.blends_floats
            && root.meta.length <= self.layout.tile_rows()
            && root.inputs[0].meta.length <= MOST_BLENDED_ROWS
    }

    /// Whether the float32 bin sum `root` is added by blended point draws here: the context
    /// blends float32 targets and every bin's blocks of rows fit one tile.
    fn blends_sums(&self, root: &Node) -> bool {
        let texels = (root.meta.length as u64) * self.sum_blocks(root) as u64;
        matches!(root.op, Op::BinSum { .. })
            && root.meta.dtype == DType::F32
            && self.blends_floats
            && texels <= self.layout.tile_rows() as u64
    }

    /// Blocks of `BLENDED_SUM_BLOCK` rows of the bin sum `root`'s pairs.
    fn sum_blocks(&self, root: &Node) -> u32 {
        root.inputs[0]
            .meta
            .length
            .div_ceil(BLENDED_SUM_BLOCK)
            .max(1)
    }

    /// Texel rows of `texels` float32 texels.
    fn texel_rows(&self, texels: u32) -> u32 {
        texels.div_ceil(self.layout.width()).max(1)
    }

    /// Device bytes of the float32 texels the points add into (a sum's output is its own).
    pub(super) fn blended_scratch_bytes(&self, root: &Node) -> u64 {
        let texels = match root.op {
            Op::BinSum { .. } => root.meta.length * self.sum_blocks(root),
            _ => root.meta.length,
        };
        self.texel_rows(texels) as u64 * self.layout.width() as u64 * 4
    }

    /// Point-list draws of the stored chunks of `root`'s input: one per tile.
    fn point_draws(&self, root: &Node) -> u32 {
        (root.inputs[0].chunks.iter())
            .map(|&rows| match rows {
                0 => 0,
                rows => self.layout.tiles(rows),
            })
            .sum::<u32>()
    }

    /// The draws of the bin count or sum `root`, and a line saying what they do.
    pub(super) fn describe_blended_bins(&self, root: &Node) -> (u64, String) {
        let tiles = self.point_draws(root);
        let line = match root.op {
            Op::BinSum { .. } => format!("{tiles} point-list draw(s) adding each row's value at its bin's texel of its block of {BLENDED_SUM_BLOCK} rows (blended), one per tile of pairs, and 1 draw adding each bin's {} blocks pairwise", self.sum_blocks(root)),
            _ => format!("{tiles} point-list draw(s) adding each row's 1 at its bin's texel (blended), one per tile of ids, and 1 draw writing the totals as uint32"),
        };
        (tiles as u64 + 1, line)
    }

    /// The bin count or sum `root` of its input's stored chunks `input`.
    pub(super) async fn bins_by_blending(
        &self,
        batch: &mut GlBatch,
        root: &Node,
        input: &[Rc<Value>],
    ) -> Result<Vec<Value>> {
        match root.op {
            Op::BinSum { .. } => self.sum_by_blending(batch, root, input).await,
            _ => self.count_by_blending(batch, root, input).await,
        }
    }

    /// The float32 sums of the bin sum `root` of the `[id, value]` pairs' stored chunks.
    async fn sum_by_blending(
        &self,
        batch: &mut GlBatch,
        root: &Node,
        pairs: &[Rc<Value>],
    ) -> Result<Vec<Value>> {
        let layout = self.layout;
        let (bins, blocks) = (root.meta.length, self.sum_blocks(root));
        let height = self.texel_rows(bins * blocks);
        let partials = self.take_texture(wgpu::TextureFormat::R32Float, height, &batch.home)?;
        self.clear(&partials);
        let mut params = vec![bins, layout.width(), partials.height(), 0, blocks];
        params.resize(SCATTER_PARAMS, 0);
        let points = bin_points_source("sum_points")?;
        let mut first_row = 0;
        for chunk in pairs {
            for (tile, planes) in gl_value(chunk)?.tiles().iter().enumerate() {
                let rows = layout.rows_in_tile(chunk.rows, tile as u32);
                if rows > 0 {
                    params[3] = first_row + tile as u32 * layout.tile_rows();
                    let shape = Shape::AddedPoints(rows);
                    self.draw(batch, &points, &params, &[&planes[0]], &[&partials], shape)
                        .await?;
                }
            }
            first_row += chunk.rows;
        }
        let totals_height = self.texel_rows(bins);
        let totals =
            self.take_texture(wgpu::TextureFormat::R32Float, totals_height, &batch.home)?;
        let whole = Shape::FullTarget(Some((0, 0, layout.width(), totals_height)));
        let source = bin_points_source("sums")?;
        self.draw(batch, &source, &params, &[&partials], &[&totals], whole)
            .await?;
        Ok(vec![self.stored(DType::F32, 1, bins, vec![vec![totals]])])
    }

    /// The counts of the bin count `root` of the ids' stored chunks `ids`.
    async fn count_by_blending(
        &self,
        batch: &mut GlBatch,
        root: &Node,
        ids: &[Rc<Value>],
    ) -> Result<Vec<Value>> {
        let layout = self.layout;
        let (bins, height) = (root.meta.length, self.texel_rows(root.meta.length));
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
