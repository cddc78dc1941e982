//! Reductions on WebGPU: a chunk task folds its rows into partial states per row group,
//! combine rounds shrink them to one state per lane stored as the chunk's part, rounds of
//! `splitEvery` combine the parts, and a last dispatch writes the output row.

use std::rc::Rc;

use super::{BufferLease, Dispatch, GpuBatch, GpuDevice, STORAGE};
use crate::engine::{ReductionModel, Reductions};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{combine_rounds, Node, Reduction};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::compute::{self, is_narrow, REDUCE_WORKGROUP, WORKGROUP_SIZE};

/// Partial states on the device: `parts` x lanes states in one buffer, and the scratch
/// buffers chunk tasks fold row groups in (reused by every task of the reduction, so the
/// scratch a reduction holds is one task's, whatever its chunks).
pub struct GpuStates {
    lease: BufferLease,
    bytes: u64,
    scratch: [Option<(BufferLease, u64)>; 2],
}

/// A buffer and the bytes a dispatch binds of it.
type Bound = (wgpu::Buffer, u64);

/// Rows each invocation of the first pass folds in order, at most (while the dispatch grid
/// allows): a float sum's running error stays that of a few dozen additions.
const ROWS_PER_INVOCATION: u32 = 64;

/// Row-group states a combine round folds into one (within a chunk task): a tree of 16-way
/// folds keeps a long float sum as accurate as its first pass.
const GROUPS_PER_COMBINE: u32 = 16;

/// One combine round: `parts` states per lane folded `every` at a time into states
/// `base ..` of the output.
struct Round {
    parts: u32,
    every: u32,
    base: u32,
}

/// Parameters of the standalone kernels: two vec4 blocks.
const TAIL_PARAMS: usize = 8;

/// Bytes of one state of `root`'s reduction.
fn state_bytes(root: &Node) -> u64 {
    Reduction::state_words_of(root) as u64 * 4
}

/// Keeps `states`' buffers until the recorded dispatches using them have run.
fn keep_all(batch: &mut GpuBatch, states: GpuStates) {
    batch.keep.push(states.lease);
    batch
        .keep
        .extend(states.scratch.into_iter().flatten().map(|(lease, _)| lease));
}

impl GpuDevice {
    /// Row groups of a chunk task's first pass over `rows` rows of `lanes` lanes: enough
    /// that no invocation folds more than `ROWS_PER_INVOCATION` rows, within one dimension
    /// of the dispatch grid.
    fn reduction_groups(&self, rows: u32, lanes: u32) -> u32 {
        let most = self.limits.max_compute_workgroups_per_dimension.max(1);
        match is_narrow(lanes) {
            true => rows.div_ceil(REDUCE_WORKGROUP * ROWS_PER_INVOCATION),
            false => rows.div_ceil(ROWS_PER_INVOCATION),
        }
        .clamp(1, most)
    }

    /// Scratch buffer `k` of `states` with room for `parts` states: the one an earlier task
    /// used where it is large enough.
    fn scratch(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        states: &mut GpuStates,
        k: usize,
        parts: u32,
    ) -> Result<Bound> {
        let bytes = (parts as u64 * root.inputs[0].meta.size as u64 * state_bytes(root)).max(4);
        if let Some((lease, size)) = &states.scratch[k] {
            if *size >= bytes {
                return Ok((lease.buffer.clone(), bytes));
            }
        }
        self.check_binding(bytes, "the partial states of a reduction")?;
        let lease = self.take_buffer(bytes, STORAGE, &batch.home)?;
        let buffer = lease.buffer.clone();
        // A smaller buffer an earlier task recorded dispatches with lives until they ran.
        if let Some((old, _)) = states.scratch[k].replace((lease, bytes)) {
            batch.keep.push(old);
        }
        Ok((buffer, bytes))
    }

    /// Records one combine round: states `j * every ..` of `from` folded into state
    /// `base + j` of `to`.
    async fn combine_round(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        from: Bound,
        to: Bound,
        round: Round,
    ) -> Result<()> {
        let Round { parts, every, base } = round;
        let input = &root.inputs[0];
        let lanes = input.meta.size;
        let class = input.meta.dtype.class();
        let source =
            compute::reduce_tail_source("combine", Reduction::kind_of(root)?, class, lanes, class)?;
        let invocations = parts.div_ceil(every).checked_mul(lanes).ok_or_else(|| {
            GpuTableError::new(
                ErrorCode::LimitExceeded,
                "a reduction's partial states exceed 2^32 in one round",
            )
        })?;
        let (grid, stride) = self.grid(invocations, WORKGROUP_SIZE)?;
        let mut params = vec![parts, every, 0, stride, base];
        params.resize(TAIL_PARAMS, 0);
        batch.dispatches.push(Dispatch {
            pipeline: self.pipeline(&source).await?,
            params,
            buffers: vec![to, from],
            grid,
        });
        Ok(())
    }
}

impl ReductionModel for GpuDevice {
    /// Dispatches of one chunk task over `rows` rows, and a line saying what they do.
    fn describe_reduction(&self, region: &Region) -> (u64, String) {
        let lanes = region.root.inputs[0].meta.size;
        let groups = self.reduction_groups(region.rows, lanes);
        // The rounds of `reduce_task`: 16-way ones, the last writing the chunk's partial.
        let rounds = combine_rounds(groups, GROUPS_PER_COMBINE).len().max(1) as u64;
        let folding = match is_narrow(lanes) {
            true => format!("{groups} workgroup(s) of {REDUCE_WORKGROUP} fold partial states"),
            false => format!("{groups} row groups per lane fold partial states"),
        };
        (
            1 + rounds,
            format!(
                "{} dispatches: {folding}, then {rounds} combining them into the chunk's partial",
                1 + rounds
            ),
        )
    }
    fn reduction_scratch_bytes(&self, root: &Node, rows: u32) -> u64 {
        let lanes = root.inputs[0].meta.size;
        // The first pass's row-group states and the first combine round's.
        let groups = self.reduction_groups(rows, lanes) as u64;
        (groups + groups.div_ceil(16)) * lanes as u64 * 8
    }
    fn reduction_tail_kernels(&self, _: &Node) -> (u64, u64) {
        (1, 1)
    }
}

impl Reductions for GpuDevice {
    type States = GpuStates;
    fn reduction_states(&self, batch: &mut GpuBatch, root: &Node, parts: u32) -> Result<GpuStates> {
        let bytes = parts as u64 * root.inputs[0].meta.size as u64 * state_bytes(root);
        self.check_binding(bytes, "the partial states of a reduction")?;
        Ok(GpuStates {
            lease: self.take_buffer(bytes.max(4), STORAGE, &batch.home)?,
            bytes: bytes.max(4),
            scratch: [None, None],
        })
    }
    /// A chunk task: partial states per row group, combined into part `part` of `states`.
    async fn reduce_chunk(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &mut GpuStates,
        part: u32,
    ) -> Result<()> {
        let root = &task.root;
        let lanes = root.inputs[0].meta.size;
        let rows = task.rows;
        let groups = self.reduction_groups(rows, lanes);
        let partials = self.scratch(batch, root, states, 0, groups)?;
        let first_row = u32::try_from(first_row).unwrap_or(u32::MAX);
        let kernel = compute::reduce_partials_kernel(
            task,
            leaves,
            Reduction::kind_of(root)?,
            rows,
            groups,
            first_row,
        )?;
        let grid = if is_narrow(lanes) {
            (groups, 1)
        } else {
            let x = lanes.div_ceil(WORKGROUP_SIZE);
            if x > self.limits.max_compute_workgroups_per_dimension {
                return Err(GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    format!("rows of {lanes} lanes need more than maxComputeWorkgroupsPerDimension workgroups"),
                ));
            }
            (x, groups)
        };
        self.record(batch, kernel, partials.clone(), leaves, grid)
            .await?;
        // Rounds of GROUPS_PER_COMBINE ping-pong between the two scratch buffers.
        let (mut current, mut k) = (partials, 0);
        let mut parts = groups;
        while parts > GROUPS_PER_COMBINE {
            let next = parts.div_ceil(GROUPS_PER_COMBINE);
            k = 1 - k;
            let smaller = self.scratch(batch, root, states, k, next)?;
            let round = Round {
                parts,
                every: GROUPS_PER_COMBINE,
                base: 0,
            };
            self.combine_round(batch, root, current, smaller.clone(), round)
                .await?;
            (current, parts) = (smaller, next);
        }
        let round = Round {
            parts,
            every: parts,
            base: part,
        };
        let target = (states.lease.buffer.clone(), states.bytes);
        self.combine_round(batch, root, current, target, round)
            .await
    }
    /// One combine round over the parts.
    async fn combine_states(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        states: GpuStates,
        parts: u32,
        every: u32,
    ) -> Result<GpuStates> {
        let next = self.reduction_states(batch, root, parts.div_ceil(every))?;
        let round = Round {
            parts,
            every,
            base: 0,
        };
        let (from, to) = (
            (states.lease.buffer.clone(), states.bytes),
            (next.lease.buffer.clone(), next.bytes),
        );
        self.combine_round(batch, root, from, to, round).await?;
        keep_all(batch, states);
        Ok(next)
    }
    async fn finish_reduction(
        &self,
        batch: &mut GpuBatch,
        region: &Region,
        states: GpuStates,
    ) -> Result<Value> {
        let root = &region.root;
        let input = &root.inputs[0];
        let lanes = input.meta.size;
        let (output, bytes) = self.output(batch, region)?;
        let source = compute::reduce_tail_source(
            "final",
            Reduction::kind_of(root)?,
            input.meta.dtype.class(),
            lanes,
            root.meta.dtype.class(),
        )?;
        let (grid, stride) = self.grid(lanes, WORKGROUP_SIZE)?;
        let mut params = vec![0, 0, 0, stride];
        params.resize(TAIL_PARAMS, 0);
        batch.dispatches.push(Dispatch {
            pipeline: self.pipeline(&source).await?,
            params,
            buffers: vec![
                (output.buffer.clone(), bytes),
                (states.lease.buffer.clone(), states.bytes),
            ],
            grid,
        });
        keep_all(batch, states);
        Ok(self.value(region, output))
    }
}
