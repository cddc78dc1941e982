//! The stable sort on WebGL2: merge passes in a fragment shader (shaders/merge_sort.wgsl),
//! one draw per doubling of the sorted runs, each carrying the permutation and the keys in
//! render targets. Where only its first few rows are read (`topK`), one pass keeps each
//! run's first few (shaders/merge_sort.wgsl `first_rows`) and the merge passes sort those
//! candidates alone. A sort of more rows than one tile runs in runs of this sort and a merge
//! (engine/external_sort.rs); one by more keys than the render targets hold, or of rows past
//! a count that large, as the IR's one-bit split passes.

use std::rc::Rc;

use super::{internal, texture_format, GlBatch, GlDevice, GlValue, Shape, TextureLease};
use crate::dtype::{Class, DType};
use crate::engine::{split_sort_scratch_bytes, DeviceModel, SortModel, Sorts};
use crate::error::Result;
use crate::ir::Node;
use crate::value::Value;
use crate::wgsl::compute::{TOP_K_MOST, TOP_K_RUN};
use crate::wgsl::fragment::{
    first_rows_source, merge_sort_source, MERGE_PARAM_FIRST_PASS, MERGE_PARAM_MASKS,
    MERGE_PARAM_RUN, MERGE_SORT_MAX_KEYS,
};

/// Merge passes of a sort of `rows` rows: runs of 1, 2, 4, ... rows until one run is left.
fn merge_passes(rows: u32) -> u32 {
    32 - rows.saturating_sub(1).leading_zeros()
}

/// The rows each run of `TOP_K_RUN` keeps where a sort of `rows` rows is read for its first
/// `ordered_rows` alone and writes no key in order: at most `TOP_K_MOST`, from four runs on
/// (as on WebGPU).
fn first_rows_per_run(rows: u32, ordered_rows: u32, writes_keys: bool) -> Option<u32> {
    let kept = ordered_rows.min(rows);
    let fits = !writes_keys && rows >= 4 * TOP_K_RUN;
    (fits && (1..=TOP_K_MOST).contains(&kept)).then_some(kept)
}

/// The candidates of a sort of `rows` rows whose runs keep `kept` rows each: the last run
/// keeps at most its own rows.
fn candidates(rows: u32, kept: u32) -> u32 {
    (rows / TOP_K_RUN) * kept + (rows % TOP_K_RUN).min(kept)
}

impl GlDevice {
    /// Whether a sort of `rows` rows by `keys` keys runs as merge passes: its arrays in one
    /// tile, and a render target for each key besides the permutation's.
    fn merge_sorts(&self, rows: u32, keys: usize) -> bool {
        let targets = keys as u32 + 1;
        rows <= self.layout.tile_rows()
            && keys <= MERGE_SORT_MAX_KEYS
            && targets <= self.limits.max_color_attachments
            && targets * 4 <= self.limits.max_color_attachment_bytes_per_sample
    }

    /// Device bytes `merge_sort` holds besides its keys (and the executor's copies joining
    /// keys stored in chunks) and its permutation: the other permutation and the keys
    /// carried between passes (two of each). The last pass's carried keys that a plan asks
    /// for are also counted as the pass's outputs: an overestimate of one key each.
    fn merge_sort_scratch_bytes(&self, rows: u32, keys: usize) -> u64 {
        (1 + 2 * keys as u64) * self.value_bytes(DType::U32, 1, rows)
    }

    /// A texture for one of the sort's arrays of `rows` rows.
    fn sort_texture(&self, batch: &GlBatch, rows: u32) -> Result<TextureLease> {
        let format = texture_format(Class::U, 1);
        self.take_texture(format, rows.div_ceil(self.layout.width()), &batch.home)
    }
}

/// The texture of a key the executor joined into one value on this device.
fn key_texture(device: &GlDevice, key: &[Rc<Value>], rows: u32) -> Result<wgpu::Texture> {
    match key {
        [value] if value.rows == rows && value.device == device.core.id => {
            first_texture(super::gl_value(value)?)
        }
        _ => Err(internal(
            "a sort key is not one value of the sort's rows on this device",
        )),
    }
}

/// The texture of a one-tile, one-plane value.
fn first_texture(value: &GlValue) -> Result<wgpu::Texture> {
    value
        .tiles()
        .first()
        .and_then(|planes| planes.first())
        .map(|texture| (**texture).clone())
        .ok_or_else(|| internal("a sort key has no texture"))
}

impl Sorts for GlDevice {
    /// Draws the sort of `keys` (each one value on this device, the most significant key
    /// first) by their low `bits` bits, and returns the permutation it leaves and the keys
    /// `sorted` (indices into `keys`) in its order, as its last pass carried them.
    async fn sort_permutation_and_keys(
        &self,
        batch: &mut GlBatch,
        keys: &[&[Rc<Value>]],
        bits: &[u32],
        ordered_rows: u32,
        sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)> {
        let rows: u32 = keys
            .first()
            .map_or(0, |key| key.iter().map(|c| c.rows).sum());
        // Fewer than 2 rows never get a sort node (they are in order).
        if rows < 2 || !self.merge_sorts(rows, keys.len()) || keys.len() != bits.len() {
            return Err(internal("a WebGL2 merge sort it cannot draw"));
        }
        // The executor holds the keys until the draws are recorded, so none is in the pool
        // to become one of the first pass's render targets.
        let joined = (keys.iter())
            .map(|key| key_texture(self, key, rows))
            .collect::<Result<Vec<_>>>()?;
        let layout = self.layout;
        let kept = first_rows_per_run(rows, ordered_rows, !sorted.is_empty());
        // The rows the merge passes order: every row, or each run's candidates. Every array
        // is as tall as the rows (a render pass's targets are one size), drawn as far as
        // these reach.
        let merged = kept.map_or(rows, |kept| candidates(rows, kept));
        let scissor = Shape::FullTarget(Some((
            0,
            0,
            layout.width(),
            merged.div_ceil(layout.width()),
        )));
        let take_carried = || -> Result<Vec<TextureLease>> {
            (0..keys.len())
                .map(|_| self.sort_texture(batch, rows))
                .collect()
        };
        let mut permutations = [
            self.sort_texture(batch, rows)?,
            self.sort_texture(batch, rows)?,
        ];
        let mut carried = [take_carried()?, take_carried()?];
        let mut params = vec![merged, 0, 0, layout.width_shift, 0, 0, 0, 0];
        for (key, &bits) in bits.iter().enumerate() {
            params[MERGE_PARAM_MASKS + key] = crate::ir::key_mask(bits);
        }
        if let Some(kept) = kept {
            // Each run's first rows and their keys, in run order, for the merge passes.
            let mut first_rows = params.clone();
            first_rows[..5].copy_from_slice(&[rows, merged, 0, layout.width_shift, kept]);
            let inputs: Vec<&wgpu::Texture> = joined.iter().collect();
            let targets: Vec<&wgpu::Texture> = [&*permutations[0]]
                .into_iter()
                .chain(carried[0].iter().map(|t| &**t))
                .collect();
            let source = first_rows_source(keys.len())?;
            self.draw(batch, &source, &first_rows, &inputs, &targets, scissor)
                .await?;
        }
        let source = merge_sort_source(keys.len())?;
        for pass in 0..merge_passes(merged) {
            // The first pass of every row reads the keys in row order (the permutation
            // bound is unread); candidates carry their rows and keys.
            let in_row_order = pass == 0 && kept.is_none();
            params[MERGE_PARAM_RUN] = 1 << pass;
            params[MERGE_PARAM_FIRST_PASS] = u32::from(in_row_order);
            let inputs: Vec<&wgpu::Texture> = match in_row_order {
                true => [&joined[0]].into_iter().chain(&joined).collect(),
                false => [&*permutations[0]]
                    .into_iter()
                    .chain(carried[0].iter().map(|t| &**t))
                    .collect(),
            };
            let targets: Vec<&wgpu::Texture> = [&*permutations[1]]
                .into_iter()
                .chain(carried[1].iter().map(|t| &**t))
                .collect();
            self.draw(batch, &source, &params, &inputs, &targets, scissor)
                .await?;
            permutations.swap(0, 1);
            carried.swap(0, 1);
        }
        let value = |texture: TextureLease| self.stored(DType::U32, 1, rows, vec![vec![texture]]);
        let [permutation, _spare] = permutations;
        let [last, _] = carried;
        let mut last: Vec<Option<TextureLease>> = last.into_iter().map(Some).collect();
        let mut sorted_keys = Vec::with_capacity(sorted.len());
        for &key in sorted {
            // The planner writes each key once (`PlanLimits::sort_writes_keys`).
            let texture = (last.get_mut(key).and_then(Option::take))
                .ok_or_else(|| internal("a sorted key the sort does not have, or twice"))?;
            sorted_keys.push(value(texture));
        }
        Ok((value(permutation), sorted_keys))
    }
}

impl SortModel for GlDevice {
    fn sorts(&self, rows: u32, keys: usize) -> bool {
        self.merge_sorts(rows, keys)
    }
    fn sort_scratch_bytes(&self, rows: u32, keys: usize) -> u64 {
        match self.merge_sorts(rows, keys) {
            true => self.merge_sort_scratch_bytes(rows, keys),
            false => split_sort_scratch_bytes(self, rows),
        }
    }
    /// The draws of the merge sort `sort` (one per merge pass; where only its first rows are
    /// read, one keeping each run's first rows first), and `explain`'s line for them.
    fn describe_sort(&self, sort: &Node, writes_keys: bool) -> (u64, String) {
        let rows = sort.meta.length;
        let ordered_rows = match &sort.op {
            crate::ir::Op::SortPermutation { ordered_rows, .. } => *ordered_rows,
            _ => rows,
        };
        let merges = |rows: u32| {
            let passes = merge_passes(rows);
            format!("{passes} merge passes (runs of 1, 2, 4, ... rows merged in pairs, a fragment per row)")
        };
        match first_rows_per_run(rows, ordered_rows, writes_keys) {
            Some(kept) => {
                let merged = candidates(rows, kept);
                let draws = 1 + merge_passes(merged) as u64;
                let runs = rows.div_ceil(TOP_K_RUN);
                (
                    draws,
                    format!(
                        "{draws} draws: the first {kept} rows of each of {runs} runs of {TOP_K_RUN} rows kept (a fragment per row kept), then {} over their {merged} rows",
                        merges(merged)
                    ),
                )
            }
            None => {
                let passes = merge_passes(rows) as u64;
                (passes, format!("{passes} draws: {}", merges(rows)))
            }
        }
    }
}
