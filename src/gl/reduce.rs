//! Reductions in draws: a chunk task's fragment kernels fold rows into partial-state
//! textures, fold draws shrink them into the chunk's texels of the states textures, combine
//! rounds fold parts, and a last draw per output texture writes the result.

use std::rc::Rc;

use super::{
    bound_textures, gl_value, texture_format, GlBatch, GlDevice, GlValue, Shape, TextureLease,
};
use crate::engine::{internal, ReductionModel, Reductions};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{Node, ReduceKind, Reduction};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::fragment::PARAM_TILE_BASE;
use crate::wgsl::fragment_reduce::{
    self as fragment, FOLD_TEXELS, PARAM_FIRST_ROW, REDUCE_FOLD, STATE_WIDTH_SHIFT,
};
use crate::wgsl::{is_literal, plane_channels, planes, Kernel, TextureLayout};

/// Texels per row of a partial-state texture.
const STATE_WIDTH: u32 = 1 << STATE_WIDTH_SHIFT;

/// Partial states in textures `STATE_WIDTH` wide, one per state word: texel
/// `part * planes + plane` holds the states of lanes `4 * plane ..` of part `part`.
pub struct GlStates {
    words: Vec<TextureLease>,
}

impl GlStates {
    fn targets(&self) -> Vec<&wgpu::Texture> {
        self.words.iter().map(|t| &**t).collect()
    }
}

impl GlDevice {
    /// State textures holding `texels` texels.
    fn state_textures(&self, batch: &GlBatch, root: &Node, texels: u32) -> Result<GlStates> {
        let class = root.inputs[0].meta.dtype.class();
        let height = texels.div_ceil(STATE_WIDTH);
        let words = Reduction::kind_of(root)?
            .state_words(class)
            .into_iter()
            .map(|word| {
                self.take_texture_of(texture_format(word, 4), STATE_WIDTH, height, &batch.home)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(GlStates { words })
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
        let height = fragments.div_ceil(STATE_WIDTH).max(1);
        bands.push((y, height));
        y += height;
    }
    (bands, y)
}

/// Fold passes after the first reduction pass.
fn reduce_fold_passes(layout: TextureLayout, rows: u32) -> u32 {
    let mut texels = reduce_bands(layout, rows).1 * STATE_WIDTH;
    let mut passes = 0;
    while texels > FOLD_TEXELS {
        texels = texels.div_ceil(FOLD_TEXELS);
        passes += 1;
    }
    passes
}

impl ReductionModel for GlDevice {
    /// Device bytes of `parts` partial states in state textures.
    fn reduction_state_bytes(&self, root: &Node, parts: u32) -> u64 {
        let input = &root.inputs[0];
        let words = Reduction::state_words_of(root) as u64;
        let texels = parts as u64 * planes(input.meta.size) as u64;
        let row_bytes = STATE_WIDTH as u64 * 16;
        words
            * crate::memory::size_class(
                texels.div_ceil(STATE_WIDTH as u64).max(1) * row_bytes,
                u64::MAX,
            )
    }
    /// Device bytes of a chunk task's partial-state textures: per plane of 4 lanes, the
    /// first pass's and each fold's, one texture per state word. The batch holds every
    /// texture its draws wrote until it is submitted, so the planes' add up.
    fn reduction_scratch_bytes(&self, root: &Node, rows: u32) -> u64 {
        let words = Reduction::state_words_of(root) as u64;
        let plane_count = planes(root.inputs[0].meta.size) as u64;
        let texture = |texels: u32| {
            let height = texels.div_ceil(STATE_WIDTH) as u64;
            crate::memory::size_class(height * STATE_WIDTH as u64 * 16, u64::MAX)
        };
        let mut texels = reduce_bands(self.layout, rows).1 * STATE_WIDTH;
        let mut bytes = texture(texels);
        while rows > 0 && texels > FOLD_TEXELS {
            texels = texels.div_ceil(FOLD_TEXELS);
            bytes += texture(texels);
        }
        words * plane_count * bytes
    }
    /// Draws of one chunk task, and a line saying what they do.
    fn describe_reduction(&self, region: &Region) -> (u64, String) {
        let layout = self.layout;
        let rows = region.rows;
        let tiles = layout.tiles(rows);
        let lanes = region.root.inputs[0].meta.size;
        let folds = reduce_fold_passes(layout, rows);
        let draws = planes(lanes) * (tiles + folds + 1);
        (
            draws as u64,
            format!(
                "{draws} draws: per 4 lanes, {tiles} draw(s) folding {REDUCE_FOLD} rows per fragment into partial states, {folds} folding {FOLD_TEXELS} texels per fragment, 1 writing the chunk's partial"
            ),
        )
    }
    fn reduction_tail_kernels(&self, root: &Node) -> (u64, u64) {
        let extent = Reduction::of(root).is_some_and(|r| r.kind == ReduceKind::Extent);
        (
            1,
            if extent {
                1
            } else {
                planes(root.inputs[0].meta.size) as u64
            },
        )
    }
}

impl Reductions for GlDevice {
    type States = GlStates;
    /// State textures for `parts` parts (each a texel per plane of 4 lanes).
    fn reduction_states(&self, batch: &mut GlBatch, root: &Node, parts: u32) -> Result<GlStates> {
        let texels = parts
            .checked_mul(planes(root.inputs[0].meta.size))
            .ok_or_else(|| {
                GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "{parts} partial states of {} lanes exceed 2^32 texels",
                        root.inputs[0].meta.size
                    ),
                )
            })?;
        self.state_textures(batch, root, texels)
    }
    /// A chunk task: per plane of 4 lanes, each tile folds into a band of partial-state
    /// textures (fused prologue included), fold draws shrink them `FOLD_TEXELS` times each,
    /// and the last writes texel `part * planes + plane` of `states`.
    async fn reduce_chunk(
        &self,
        batch: &mut GlBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &mut GlStates,
        part: u32,
    ) -> Result<()> {
        let rows = task.rows;
        let layout = self.layout;
        let width = STATE_WIDTH;
        let root = &task.root;
        let kind = Reduction::kind_of(root)?;
        let input = &root.inputs[0];
        let class = input.meta.dtype.class();
        let lanes = input.meta.size;
        let (bands, partial_height) = reduce_bands(layout, rows);
        let fold = fragment::reduce_fold_source(kind, class);
        let first_row = u32::try_from(first_row).unwrap_or(u32::MAX);
        // A materialized input alone is read a plane at a time, whatever its width and
        // texture shape; a fused prologue (or validity) is computed per row.
        let stored = match (task.nodes.len(), task.leaves.len()) {
            (1, 1) if !is_literal(input) => Some((
                gl_value(&leaves[0])?,
                fragment::reduce_plane_partials_source(kind, class),
            )),
            _ => None,
        };
        let plane_count = planes(lanes);
        for plane in 0..plane_count {
            let mut partials = self.state_textures(batch, root, partial_height * width)?;
            let first_pass = match &stored {
                Some((value, source)) => FirstPass::Stored { value, source },
                None => FirstPass::Fused(fragment::reduce_partials_kernel(
                    task, leaves, kind, layout, plane,
                )?),
            };
            for (tile, &(y0, height)) in bands.iter().enumerate() {
                let tile = tile as u32;
                let tile_rows = layout.rows_in_tile(rows, tile);
                let scissor = Some((0, y0, width, height));
                let targets = partials.targets();
                match &first_pass {
                    FirstPass::Stored { value, source } => {
                        let texture = value
                            .tiles()
                            .get(tile as usize)
                            .and_then(|planes| planes.get(plane as usize))
                            .ok_or_else(|| internal("a reduced input lacks a tile"))?;
                        let tile_first = first_row.wrapping_add(tile * layout.tile_rows());
                        let params = [
                            tile_rows,
                            texture.width().trailing_zeros(),
                            0,
                            y0,
                            tile_first,
                        ];
                        self.draw(
                            batch,
                            source,
                            &params,
                            &[texture],
                            &targets,
                            Shape::FullTarget(scissor),
                        )
                        .await?;
                    }
                    FirstPass::Fused(kernel) => {
                        let mut params = kernel.params.clone();
                        params[0] = rows;
                        params[PARAM_TILE_BASE] = tile * layout.tile_rows();
                        params[3] = y0;
                        params[4] = tile_rows;
                        params[PARAM_FIRST_ROW] = first_row;
                        let inputs = bound_textures(kernel, task, leaves, tile)?;
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
            }
            // An empty chunk's band holds identities; its partial is a fold of no texels.
            let mut texels = if rows == 0 { 0 } else { partial_height * width };
            while texels > FOLD_TEXELS {
                let folded = texels.div_ceil(FOLD_TEXELS);
                let height = folded.div_ceil(width);
                let next = self.state_textures(batch, root, folded)?;
                let scissor = Some((0, 0, width, height));
                self.draw(
                    batch,
                    &fold,
                    &[texels, 0],
                    &partials.targets(),
                    &next.targets(),
                    Shape::FullTarget(scissor),
                )
                .await?;
                (partials, texels) = (next, folded);
            }
            let at = part * plane_count + plane;
            let scissor = Some((at % width, at / width, 1, 1));
            self.draw(
                batch,
                &fold,
                &[texels, at],
                &partials.targets(),
                &states.targets(),
                Shape::FullTarget(scissor),
            )
            .await?;
        }
        Ok(())
    }
    /// One combine round over `parts` parts, `every` at a time.
    async fn combine_states(
        &self,
        batch: &mut GlBatch,
        root: &Node,
        states: GlStates,
        parts: u32,
        every: u32,
    ) -> Result<GlStates> {
        let input = &root.inputs[0];
        let plane_count = planes(input.meta.size);
        let next = self.reduction_states(batch, root, parts.div_ceil(every))?;
        let texels = parts.div_ceil(every) * plane_count;
        let source =
            fragment::reduce_combine_source(Reduction::kind_of(root)?, input.meta.dtype.class());
        let width = STATE_WIDTH;
        let scissor = Some((0, 0, width, texels.div_ceil(width)));
        self.draw(
            batch,
            &source,
            &[parts, every, 0, plane_count],
            &states.targets(),
            &next.targets(),
            Shape::FullTarget(scissor),
        )
        .await?;
        Ok(next)
    }
    /// The output from the one partial left: `extent`'s texel per lane, or a texture per
    /// plane of the one output row.
    async fn finish_reduction(
        &self,
        batch: &mut GlBatch,
        region: &Region,
        states: GlStates,
    ) -> Result<Value> {
        let root = &region.root;
        let kind = Reduction::kind_of(root)?;
        let input = &root.inputs[0];
        let (class, lanes) = (input.meta.dtype.class(), input.meta.size);
        let layout = self.layout;
        let width = layout.width();
        if kind == ReduceKind::Extent {
            let output =
                self.take_texture(texture_format(class, 4), lanes.div_ceil(width), &batch.home)?;
            let source = fragment::reduce_output_rows_source(kind, class, layout);
            let scissor = Some((0, 0, width, lanes.div_ceil(width)));
            self.draw(
                batch,
                &source,
                &[0],
                &states.targets(),
                &[&output],
                Shape::FullTarget(scissor),
            )
            .await?;
            return Ok(self.value(region, vec![vec![output]]));
        }
        let out_class = root.meta.dtype.class();
        let channels = plane_channels(lanes);
        let source = fragment::reduce_output_plane_source(kind, class, out_class, channels);
        let mut textures = Vec::new();
        for plane in 0..planes(lanes) {
            let output = self.take_texture(texture_format(out_class, channels), 1, &batch.home)?;
            self.draw(
                batch,
                &source,
                &[plane],
                &states.targets(),
                &[&output],
                Shape::FullTarget(Some((0, 0, 1, 1))),
            )
            .await?;
            textures.push(output);
        }
        Ok(self.value(region, vec![textures]))
    }
}
