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
use crate::wgsl::fragment::{
    bin_points_source, block_bins_source, block_totals_source, BIN_BLOCK, BLENDED_SUM_BLOCK,
};
use crate::wgsl::FIXED_PARAMS;

/// The most rows a blended count adds: each bin's float32 total stays exact.
const MOST_BLENDED_ROWS: u32 = 1 << 24;

impl GlDevice {
    /// Whether the bin count or sum `root` adds rows by blended draws here.
    pub(super) fn blends_bins(&self, root: &Node) -> bool {
        self.few_bin_targets(root).is_some() || self.blends_counts(root) || self.blends_sums(root)
    }

    /// Where the bin count or float32 sum `root` has few bins (four a render target, in the
    /// targets one draw writes), the targets of its blocks' partials: a fragment per block of
    /// `BIN_BLOCK` rows adds them in row order, reading each row once (where a point per row
    /// is blended one after another into few texels).
    fn few_bin_targets(&self, root: &Node) -> Option<u32> {
        let rows = root.inputs[0].meta.length;
        let fits = match root.op {
            Op::BinCount { .. } => rows <= MOST_BLENDED_ROWS,
            Op::BinSum { .. } => root.meta.dtype == DType::F32,
            _ => false,
        };
        let targets = root.meta.length.div_ceil(4).max(1);
        (fits
            && self.blends_floats
            && targets <= self.limits.max_color_attachments
            && rows.div_ceil(BIN_BLOCK) <= self.layout.tile_rows())
        .then_some(targets)
    }

    /// Blocks of `BIN_BLOCK` rows of the bin count or sum `root`'s input.
    fn bin_blocks(&self, root: &Node) -> u32 {
        root.inputs[0].meta.length.div_ceil(BIN_BLOCK).max(1)
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

    /// Device bytes of the float32 texels the draws add into (the output is its own).
    pub(super) fn blended_scratch_bytes(&self, root: &Node) -> u64 {
        if let Some(targets) = self.few_bin_targets(root) {
            let rows = self.texel_rows(self.bin_blocks(root)) as u64;
            return targets as u64 * rows * self.layout.width() as u64 * 16;
        }
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

    /// The non-empty tiles of the stored chunks `input` that a bin draw reads: each one's first
    /// row among all the chunks' rows, its rows, and its texture (one plane).
    fn stored_tiles(&self, input: &[Rc<Value>]) -> Result<Vec<(u32, u32, wgpu::Texture)>> {
        let layout = self.layout;
        let mut tiles = Vec::new();
        let mut first_row = 0;
        for chunk in input {
            for (tile, planes) in gl_value(chunk)?.tiles().iter().enumerate() {
                let rows = layout.rows_in_tile(chunk.rows, tile as u32);
                if rows > 0 {
                    let first = first_row + tile as u32 * layout.tile_rows();
                    tiles.push((first, rows, (*planes[0]).clone()));
                }
            }
            first_row += chunk.rows;
        }
        Ok(tiles)
    }

    /// The draws of the bin count or sum `root`, and a line saying what they do.
    pub(super) fn describe_blended_bins(&self, root: &Node) -> (u64, String) {
        let tiles = self.point_draws(root);
        if self.few_bin_targets(root).is_some() {
            let (bins, blocks) = (root.meta.length, self.bin_blocks(root));
            let written = match root.op {
                Op::BinSum { .. } => "",
                _ => ", as uint32",
            };
            return (
                tiles as u64 + 1,
                format!("{tiles} draw(s) adding each block of {BIN_BLOCK} rows into its {bins} bins' partials (blended), one per tile of rows, and 1 draw adding each bin's {blocks} blocks pairwise{written}"),
            );
        }
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
        match (self.few_bin_targets(root), &root.op) {
            (Some(targets), _) => self.few_bins(batch, root, input, targets).await,
            (None, Op::BinSum { .. }) => self.sum_by_blending(batch, root, input).await,
            _ => self.count_by_blending(batch, root, input).await,
        }
    }

    /// The bin count or float32 sum `root` (few bins) of its input's stored chunks `input`:
    /// a draw per tile adding each block's rows into its bins' partials in `targets` float32
    /// textures (four bins each), then one draw adding each bin's blocks pairwise.
    async fn few_bins(
        &self,
        batch: &mut GlBatch,
        root: &Node,
        input: &[Rc<Value>],
        targets: u32,
    ) -> Result<Vec<Value>> {
        let layout = self.layout;
        let width = layout.width();
        let sums = matches!(root.op, Op::BinSum { .. });
        let (bins, blocks) = (root.meta.length, self.bin_blocks(root));
        let height = self.texel_rows(blocks);
        let partials = (0..targets)
            .map(|_| self.take_texture(wgpu::TextureFormat::Rgba32Float, height, &batch.home))
            .collect::<Result<Vec<_>>>()?;
        for texture in &partials {
            self.clear(texture);
        }
        let partial_targets: Vec<&wgpu::Texture> = partials.iter().map(|t| &**t).collect();
        let mut params = vec![bins, width, 0, 0, blocks, 0];
        params.resize(FIXED_PARAMS, 0);
        let source = block_bins_source(sums, targets)?;
        for (first, rows, plane) in self.stored_tiles(input)? {
            params[3] = first;
            params[5] = rows;
            // The texel rows of the blocks these rows fall in.
            let (top, bottom) = (
                first / BIN_BLOCK / width,
                (first + rows - 1) / BIN_BLOCK / width,
            );
            let shape = Shape::AddedTarget((0, top, width, bottom - top + 1));
            self.draw(batch, &source, &params, &[&plane], &partial_targets, shape)
                .await?;
        }
        let (format, dtype) = match sums {
            true => (wgpu::TextureFormat::R32Float, DType::F32),
            false => (wgpu::TextureFormat::R32Uint, DType::U32),
        };
        let totals_height = self.texel_rows(bins);
        let totals = self.take_texture(format, totals_height, &batch.home)?;
        let whole = Shape::FullTarget(Some((0, 0, width, totals_height)));
        let source = block_totals_source(!sums, targets)?;
        self.draw(batch, &source, &params, &partial_targets, &[&totals], whole)
            .await?;
        Ok(vec![self.stored(dtype, 1, bins, vec![vec![totals]])])
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
        params.resize(FIXED_PARAMS, 0);
        let points = bin_points_source("sum_points")?;
        for (first, rows, plane) in self.stored_tiles(pairs)? {
            params[3] = first;
            let shape = Shape::AddedPoints(rows);
            self.draw(batch, &points, &params, &[&plane], &[&partials], shape)
                .await?;
        }
        let totals_height = self.texel_rows(bins);
        let totals =
            self.take_texture(wgpu::TextureFormat::R32Float, totals_height, &batch.home)?;
        let whole = Shape::FullTarget(Some((0, 0, layout.width(), totals_height)));
        let source = block_totals_source(false, 0)?;
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
        params.resize(FIXED_PARAMS, 0);
        let points = bin_points_source("points")?;
        for (_, rows, plane) in self.stored_tiles(ids)? {
            let shape = Shape::AddedPoints(rows);
            self.draw(batch, &points, &params, &[&plane], &[&totals], shape)
                .await?;
        }
        let counts = self.take_texture(wgpu::TextureFormat::R32Uint, height, &batch.home)?;
        let whole = Shape::FullTarget(Some((0, 0, layout.width(), height)));
        let source = bin_points_source("counts")?;
        self.draw(batch, &source, &params, &[&totals], &[&counts], whole)
            .await?;
        Ok(vec![self.stored(DType::U32, 1, bins, vec![vec![counts]])])
    }
}
