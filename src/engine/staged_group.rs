//! A group-by larger than `allowedMem`, grouped in parts (api.md "Memory"; the parts are
//! made in `ir/group_stages.rs`): its rows a range at a time on the device (the input's
//! chunks, cut smaller where one does not fit), each range's groups read back to the host,
//! blocks of `DEFAULT_SPLIT_EVERY` of them grouped again on the device until one block is
//! left, and the group-by's results made of that one on the device. The ranges are
//! projected before any kernel runs; the group-bys combining them hold as many rows as the
//! ranges have groups, so they are projected once those are known (one too large for the
//! budget is `LIMIT_EXCEEDED` then).
//!
//! Only a group-by whose results the evaluation returns, and nothing in it reads, is
//! grouped in parts (a result read by later work is made whole, as without a budget).

use std::collections::HashSet;
use std::fmt::Write;
use std::rc::Rc;

use super::{external_sort, internal, read_rows, schedule, Backend, CostModel};
use crate::column::{Column, ColumnData};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, GroupStages, NodeRef, PartialRows, DEFAULT_SPLIT_EVERY};
use crate::value::{DeviceId, Output, Value, HOST};

/// The most ranges a group-by is cut into: past it, the budget is too small for one.
const MOST_RANGES: usize = 1 << 12;

/// A group-by planned in parts.
pub(super) struct StagedGroup {
    stages: Rc<GroupStages>,
    /// Its results: its keys', then its aggregates'.
    results: Vec<NodeRef>,
    /// The row ranges grouped one at a time.
    ranges: Vec<(u32, u32)>,
    /// The most device bytes a range's group-by is projected to hold.
    range_peak: u64,
}

/// The group-bys among `roots` to group in parts on `device`: under `allowedMem`, those
/// whose whole plan does not fit it, whose results are roots and read by nothing else
/// pending. `replan_roots` plans roots that have an output as if they had none (`explain`).
pub(super) fn plan(
    device: &dyn CostModel,
    roots: &[NodeRef],
    replan_roots: bool,
) -> Result<Vec<StagedGroup>> {
    let Some(budget) = device.core().allowed_mem.get() else {
        return Ok(Vec::new());
    };
    let mut found: Vec<(Rc<GroupStages>, Vec<NodeRef>)> = Vec::new();
    for root in roots {
        let pending = replan_roots || !root.has_output();
        if let (Some(stages), true) = (root.group_stages(), pending) {
            if !found.iter().any(|(s, _)| Rc::ptr_eq(s, stages)) {
                if let Some(results) = stages.results() {
                    found.push((stages.clone(), results));
                }
            }
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let read = results_read_by_pending_work(roots, replan_roots);
    let project = |nodes: &[NodeRef]| projected_peak(device, nodes, replan_roots);
    let mut staged = Vec::new();
    for (stages, results) in found {
        if results.iter().any(|r| read.contains(&r.id)) {
            continue;
        }
        match project(&results) {
            Ok(_) => continue,
            Err(e) if e.code == ErrorCode::LimitExceeded => {}
            Err(e) => return Err(e),
        }
        let mut ranges = Vec::new();
        let mut range_peak = 0;
        let refused = |e: GpuTableError| {
            let message = format!(
                "a group-by in parts under allowedMem {budget}: {}",
                e.message
            );
            GpuTableError::new(e.code, message)
        };
        for (start, end) in stages.chunk_ranges() {
            // A range of one row that does not fit means none does.
            project(&stages.partial(start, start + 1)?).map_err(refused)?;
            let part = |a: u32, b: u32| project(&stages.partial(a, b)?);
            let peak = cut_to_fit((start, end), &part, &mut ranges, MOST_RANGES, &refused)?;
            range_peak = range_peak.max(peak);
        }
        // No rows: nothing to part (the whole plan's refusal stands).
        let Some(&(first, _)) = ranges.first() else {
            continue;
        };
        // Combining a block of one-group parts is the least a combination holds: a budget
        // too small for it is refused now.
        let one_group = PartialRows::one_group(&stages.partial(first, first + 1)?)?;
        let parts = vec![one_group; ranges.len().min(DEFAULT_SPLIT_EVERY as usize)];
        project(&stages.finish(&stages.combine(&parts)?)?).map_err(refused)?;
        staged.push(StagedGroup {
            stages,
            results,
            ranges,
            range_peak,
        });
    }
    Ok(staged)
}

/// Rows `start..end` appended to `ranges` as ranges whose parts fit (`project` of rows `a..b`
/// projects the part's peak): a range too large is cut into 2, 4, 8... equal ranges until
/// the first fits (the others, no longer, fit as well: a projection grows with its rows),
/// at most `most` ranges in all. The first range's peak; a refusal passes through `refused`.
pub(super) fn cut_to_fit(
    (start, end): (u32, u32),
    project: &dyn Fn(u32, u32) -> Result<u64>,
    ranges: &mut Vec<(u32, u32)>,
    most: usize,
    refused: &dyn Fn(GpuTableError) -> GpuTableError,
) -> Result<u64> {
    let mut pieces = 1u32;
    let (step, peak) = loop {
        let step = (end - start).div_ceil(pieces);
        match project(start, start + step) {
            Ok(peak) => break (step, peak),
            Err(e) if e.code == ErrorCode::LimitExceeded && step > 1 => pieces *= 2,
            Err(e) => return Err(refused(e)),
        }
    };
    if ranges.len() + (end - start).div_ceil(step) as usize > most {
        return Err(refused(GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!("it needs ranges of at most {step} rows: more than {most} of them"),
        )));
    }
    ranges.extend(
        (start..end)
            .step_by(step as usize)
            .map(|a| (a, (a + step).min(end))),
    );
    Ok(peak)
}

/// The most device bytes an evaluation of `nodes` alone would hold, as it would run: sorts
/// larger than the budget in runs first (`LIMIT_EXCEEDED` where a task does not fit).
pub(super) fn projected_peak(
    device: &dyn CostModel,
    nodes: &[NodeRef],
    replan_roots: bool,
) -> Result<u64> {
    let roots = ir::with_companions(nodes);
    let (sorts, stand_ins) = external_sort::plan(device, &roots, replan_roots)?;
    let rest: Vec<NodeRef> = (roots.iter())
        .filter(|r| !stand_ins.settles(r))
        .cloned()
        .collect();
    let resident = |leaf: &NodeRef| stand_ins.resident(device, leaf);
    let mut peak = sorts.iter().map(|s| s.peak()).max().unwrap_or(0);
    if !rest.is_empty() {
        let schedule = schedule::of_roots(device, &rest, replan_roots, &resident)?;
        schedule.check()?;
        peak = peak.max(schedule.peak());
    }
    Ok(peak)
}

/// Ids of the nodes among the pending work of `roots` that some other pending node reads.
pub(super) fn results_read_by_pending_work(roots: &[NodeRef], replan_roots: bool) -> HashSet<u64> {
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    let mut read = HashSet::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<NodeRef> = roots.to_vec();
    while let Some(node) = stack.pop() {
        if !seen.insert(node.id) {
            continue;
        }
        let replanned = replan_roots && root_ids.contains(&node.id);
        if node.has_output() && !replanned {
            continue;
        }
        for input in node.inputs.iter().chain(node.validity()) {
            read.insert(input.id);
            stack.push(input.clone());
        }
    }
    read
}

/// Adds `result` computed in parts, with its null flags and counts (what the parts settle),
/// to `settled`.
pub(super) fn push_settled(result: &NodeRef, settled: &mut Vec<NodeRef>) {
    settled.push(result.clone());
    settled.extend(result.validity().cloned());
    if let Some(counted) = result.counted() {
        settled.push(counted.total.clone());
        settled.push(counted.chunks.clone());
    }
}

impl StagedGroup {
    /// Adds the results this computes, with their null flags and counts, to `settled`.
    pub fn settles(&self, settled: &mut Vec<NodeRef>) {
        for result in &self.results {
            push_settled(result, settled);
        }
    }

    /// The most device bytes a range's group-by is projected to hold.
    pub fn peak(&self) -> u64 {
        self.range_peak
    }

    /// A line for `explain`.
    pub fn describe(&self, text: &mut String) {
        let most = self.ranges.iter().map(|(a, b)| b - a).max().unwrap_or(0);
        let _ = writeln!(
            text,
            "group-by in parts ({} rows, more than allowedMem holds at once): {} row ranges of up to {most} rows grouped on the device one at a time (at most {} bytes each), their groups read back; then blocks of {DEFAULT_SPLIT_EVERY} ranges' groups grouped again until one is left (each projected once the groups before it are known)",
            self.stages.rows(),
            self.ranges.len(),
            self.range_peak,
        );
    }

    /// Groups the ranges, combines their groups, and gives the group-by's results (and their
    /// null flags and counts) the outputs made of them on `device`.
    pub async fn run(&self, device: &dyn Backend) -> Result<()> {
        let stages = &self.stages;
        let holds_rows = stages.holds_rows();
        let mut partials = Vec::with_capacity(self.ranges.len());
        for &(start, end) in &self.ranges {
            let nodes = stages.partial(start, end)?;
            partials.push(read_back(device, &nodes, start, &holds_rows).await?);
        }
        let block = DEFAULT_SPLIT_EVERY as usize;
        while partials.len() > block {
            let mut combined = Vec::with_capacity(partials.len().div_ceil(block));
            for part in partials.chunks(block) {
                let nodes = stages.combine(part)?;
                combined.push(read_back(device, &nodes, 0, &[]).await?);
            }
            partials = combined;
        }
        let mut finals = stages.finish(&stages.combine(&partials)?)?;
        for (result, made) in self.results.iter().zip(finals.iter_mut()) {
            // A result that may be null keeps null flags, all set where none are made.
            if result.validity().is_some() && made.validity().is_none() {
                *made = ir::with_validity(made, Some(&ir::flags_like(made, 1)?))?;
            }
        }
        crate::engine::evaluate(device, &finals).await?;
        // The ranges' groups, read back, may be grouped another way than the whole input
        // would be (by bins where its range was unknown, a chunk of them and one of the null
        // row): such a result takes the group-by's chunks, its rows in the first.
        let mut moved = Vec::new();
        for (result, made) in self.results.iter().zip(finals.iter_mut()) {
            let wanted = result.counted().map(|c| c.chunks.meta.length as usize);
            if let (Some(wanted), Some(chunks)) = (wanted, made.settled()) {
                if wanted != chunks.len() && wanted > 0 {
                    let mut moved_chunks = vec![0; wanted];
                    moved_chunks[0] = chunks.iter().sum();
                    // A view of its rows: the null flags move with them.
                    *made = ir::rechunk_counted(made, moved_chunks.into())?;
                    moved.push(made.clone());
                }
            }
        }
        crate::engine::evaluate(device, &moved).await?;
        let here = device.core().id;
        for (result, made) in self.results.iter().zip(&finals) {
            adopt(result, made, here)?;
        }
        Ok(())
    }
}

/// Evaluates a part's nodes and reads their rows back (rows of a range offset by `start`
/// where `holds_rows` says).
async fn read_back(
    device: &dyn Backend,
    nodes: &[NodeRef],
    start: u32,
    holds_rows: &[bool],
) -> Result<PartialRows> {
    crate::engine::evaluate(device, nodes).await?;
    let mut columns = Vec::with_capacity(nodes.len());
    for (c, node) in nodes.iter().enumerate() {
        let rows = node
            .known_length()
            .ok_or_else(|| internal("a part's groups were not counted"))?;
        let mut data = read_rows(&computed(node)?, 0, rows).await?;
        if let (true, ColumnData::I32(values)) = (holds_rows.get(c) == Some(&true), &mut data) {
            for row in values.iter_mut().filter(|r| **r >= 0) {
                *row += start as i32;
            }
        }
        let valid = match node.validity() {
            Some(valid) => Some(read_rows(&computed(valid)?, 0, rows).await?),
            None => None,
        };
        columns.push((data, valid));
    }
    Ok(PartialRows { columns })
}

fn computed(node: &NodeRef) -> Result<Output> {
    node.home()
        .ok_or_else(|| internal(format!("t{} was not computed", node.id)))
}

/// Gives `result` the output `made` computed on device `here`, with its null flags', and
/// its count: the rows `made` has.
fn adopt(result: &NodeRef, made: &NodeRef, here: DeviceId) -> Result<()> {
    result.add_output(computed(made)?);
    result.materialize_on(here);
    if let (Some(valid), Some(made_valid)) = (result.validity(), made.validity()) {
        if !valid.has_output() {
            valid.add_output(computed(made_valid)?);
            valid.materialize_on(here);
        }
    }
    let chunks = made.settled().unwrap_or_else(|| made.chunks.clone());
    if let Some(counted) = result.counted() {
        if counted.chunks.meta.length as usize != chunks.len() {
            return Err(internal(
                "a group-by in parts made its rows in other chunks",
            ));
        }
        let rows: u32 = chunks.iter().sum();
        for (node, counts) in [
            (&counted.total, vec![rows]),
            (&counted.chunks, chunks.to_vec()),
        ] {
            if !node.has_output() {
                let column = Column::new(ColumnData::U32(counts), 1)?;
                node.add_output(Output::new(HOST, vec![Rc::new(Value::host(column))]));
            }
        }
    }
    result.settle(chunks);
    Ok(())
}
