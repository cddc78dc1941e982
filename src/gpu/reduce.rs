//! Reductions on WebGPU: a chunk task folds its rows into partial states per row group,
//! combine rounds shrink them to one state per lane stored as the chunk's part, rounds of
//! `splitEvery` combine the parts, and a last dispatch writes the output row.

use std::rc::Rc;

use super::{BufferLease, Dispatch, GpuBatch, GpuDevice, STORAGE};
use crate::engine::internal;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{Node, ReduceKind, Reduction};
use crate::plan::Region;
use crate::value::Value;
use crate::wgsl::compute::{self, is_narrow, REDUCE_GROUPS, REDUCE_WORKGROUP, WORKGROUP_SIZE};

/// Partial states on the device: `parts` x lanes states in one buffer.
pub struct GpuStates {
    lease: BufferLease,
    bytes: u64,
}

/// Rows each invocation of the narrow first pass folds, at least (up to 256 workgroups).
const ROWS_PER_INVOCATION: u32 = 32;

/// Row groups a combine round folds into one (within a chunk task).
const GROUPS_PER_COMBINE: u32 = 256;

/// One combine round: `parts` states per lane folded `every` at a time into states
/// `base ..` of the output.
struct Round {
    parts: u32,
    every: u32,
    base: u32,
}

/// Parameters of the standalone kernels: two vec4 blocks.
const TAIL_PARAMS: usize = 8;

pub(super) fn kind_of(root: &Node) -> Result<ReduceKind> {
    Reduction::of(root)
        .map(|r| r.kind)
        .ok_or_else(|| internal("not a reduction"))
}

/// Bytes of one state of `root`'s reduction.
fn state_bytes(root: &Node) -> Result<u64> {
    let input = &root.inputs[0];
    Ok(kind_of(root)?.state_words(input.meta.dtype.class()).len() as u64 * 4)
}

impl GpuDevice {
    /// Row groups of a chunk task's first pass over `rows` rows of `lanes` lanes.
    pub(super) fn reduction_groups(&self, rows: u32, lanes: u32) -> u32 {
        if is_narrow(lanes) {
            // Each invocation folds at least ROWS_PER_INVOCATION rows in order: a small
            // chunk needs few workgroups (and barriers), a large one all of them.
            rows.div_ceil(REDUCE_WORKGROUP * ROWS_PER_INVOCATION)
                .clamp(1, REDUCE_GROUPS)
        } else {
            // A lane's invocations fold at most 64 rows each in order (a float sum stays
            // accurate), within the dispatch grid and a few MB of states.
            let most = ((1u32 << 20) / lanes)
                .min(self.limits.max_compute_workgroups_per_dimension)
                .max(1);
            rows.div_ceil(64).clamp(1, most)
        }
    }

    pub(super) fn states(&self, batch: &GpuBatch, root: &Node, parts: u32) -> Result<GpuStates> {
        let bytes = parts as u64 * root.inputs[0].meta.size as u64 * state_bytes(root)?;
        self.check_binding(bytes, "the partial states of a reduction")?;
        Ok(GpuStates {
            lease: self.take_buffer(bytes.max(4), STORAGE, &batch.home)?,
            bytes: bytes.max(4),
        })
    }

    /// Records one combine round: states `j * every ..` of `from` folded into state
    /// `base + j` of `to`.
    async fn combine_round(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        from: &GpuStates,
        to: &GpuStates,
        round: Round,
    ) -> Result<()> {
        let Round { parts, every, base } = round;
        let input = &root.inputs[0];
        let lanes = input.meta.size;
        let class = input.meta.dtype.class();
        let source = compute::reduce_tail_source("combine", kind_of(root)?, class, lanes, class)?;
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
            buffers: vec![
                (to.lease.buffer.clone(), to.bytes),
                (from.lease.buffer.clone(), from.bytes),
            ],
            grid,
        });
        Ok(())
    }

    /// A chunk task: partial states per row group, combined into part `part` of `states`.
    pub(super) async fn reduce_task(
        &self,
        batch: &mut GpuBatch,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &GpuStates,
        part: u32,
    ) -> Result<()> {
        let root = &task.root;
        let lanes = root.inputs[0].meta.size;
        let rows = task.rows;
        let groups = self.reduction_groups(rows, lanes);
        let partials = self.states(batch, root, groups)?;
        let first_row = u32::try_from(first_row).unwrap_or(u32::MAX);
        let kernel =
            compute::reduce_partials_kernel(task, leaves, kind_of(root)?, rows, groups, first_row)?;
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
        let target = (partials.lease.buffer.clone(), partials.bytes);
        self.record(batch, kernel, target, leaves, grid).await?;
        let mut current = partials;
        let mut parts = groups;
        while parts > GROUPS_PER_COMBINE {
            let next = parts.div_ceil(GROUPS_PER_COMBINE);
            let smaller = self.states(batch, root, next)?;
            let round = Round {
                parts,
                every: GROUPS_PER_COMBINE,
                base: 0,
            };
            self.combine_round(batch, root, &current, &smaller, round)
                .await?;
            batch
                .keep
                .push(std::mem::replace(&mut current, smaller).lease);
            parts = next;
        }
        let round = Round {
            parts,
            every: parts,
            base: part,
        };
        self.combine_round(batch, root, &current, states, round)
            .await?;
        batch.keep.push(current.lease);
        Ok(())
    }

    pub(super) async fn combine(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        states: GpuStates,
        parts: u32,
        every: u32,
    ) -> Result<GpuStates> {
        let next = self.states(batch, root, parts.div_ceil(every))?;
        let round = Round {
            parts,
            every,
            base: 0,
        };
        self.combine_round(batch, root, &states, &next, round)
            .await?;
        batch.keep.push(states.lease);
        Ok(next)
    }

    pub(super) async fn finish_reduce(
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
            kind_of(root)?,
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
        batch.keep.push(states.lease);
        Ok(self.value(region, output))
    }

    /// Dispatches of one chunk task over `rows` rows, and a line saying what they do.
    pub(super) fn describe_reduction(&self, region: &Region) -> (u64, String) {
        let lanes = region.root.inputs[0].meta.size;
        let groups = self.reduction_groups(region.rows, lanes);
        let mut rounds = 1;
        let mut parts = groups;
        while parts > GROUPS_PER_COMBINE {
            parts = parts.div_ceil(GROUPS_PER_COMBINE);
            rounds += 1;
        }
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
}
