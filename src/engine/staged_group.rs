//! A group-by larger than `allowedMem`, grouped in parts (api.md "Memory"; the parts are
//! made in `ir/group_stages.rs`): its rows a range at a time on the device (the input's
//! chunks, cut smaller where one does not fit), each range's groups read back to the host,
//! blocks of them grouped again on the device until one block is left, and the group-by's
//! results made of that one on the device. The ranges are projected before any kernel runs.
//! Once the ranges' groups are known, the most groups a block of `DEFAULT_SPLIT_EVERY`
//! parts may hold within the budget is projected; where the ranges hold more distinct
//! groups, they are cut by key into key ranges of that many, each combined and made on the
//! device and read back in key order, and the results wait on the host (as a sort's larger
//! than the budget do) to be read a task's rows at a time.
//!
//! Only a group-by whose results the evaluation returns, and nothing in it reads, is
//! grouped in parts (a result read by later work is made whole, as without a budget).

use std::collections::HashSet;
use std::fmt::Write;
use std::rc::Rc;

use super::{external_sort, internal, read_outputs, schedule, Backend, CostModel};
use crate::column::{Column, ColumnData};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::heap_sort::sift_down;
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
    /// Its results that later work of the evaluation reads and it does not return: released
    /// once the evaluation ends.
    read_later: Vec<NodeRef>,
}

/// The group-bys among the pending work of `roots` to group in parts on `device`: under
/// `allowedMem`, those whose whole plan does not fit it (later work reads their results as
/// any input: a dictionary key's ranks mapped back to codes, say). `replan_roots` plans
/// roots that have an output as if they had none (`explain`).
pub(super) fn plan(
    device: &dyn CostModel,
    roots: &[NodeRef],
    replan_roots: bool,
) -> Result<Vec<StagedGroup>> {
    let Some(budget) = device.core().allowed_mem.get() else {
        return Ok(Vec::new());
    };
    let mut found: Vec<(Rc<GroupStages>, Vec<NodeRef>)> = Vec::new();
    for node in pending_work(roots, replan_roots) {
        if let Some(stages) = node.group_stages() {
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
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    let project = |nodes: &[NodeRef]| projected_peak(device, nodes, replan_roots);
    let mut staged = Vec::new();
    for (stages, results) in found {
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
        combination_peak(device, &stages, &results, first, 1).map_err(refused)?;
        let read_later = (results.iter())
            .filter(|r| read.contains(&r.id) && !root_ids.contains(&r.id))
            .cloned()
            .collect();
        staged.push(StagedGroup {
            stages,
            results,
            ranges,
            range_peak,
            read_later,
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

/// The nodes `roots` need computed: the roots without an output (every root where
/// `replan_roots`) and the inputs, null flags included, of each such node, transitively.
fn pending_work(roots: &[NodeRef], replan_roots: bool) -> Vec<NodeRef> {
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    let mut seen = HashSet::new();
    let mut pending = Vec::new();
    let mut stack: Vec<NodeRef> = roots.to_vec();
    while let Some(node) = stack.pop() {
        if !seen.insert(node.id) {
            continue;
        }
        let replanned = replan_roots && root_ids.contains(&node.id);
        if node.has_output() && !replanned {
            continue;
        }
        stack.extend(node.inputs.iter().chain(node.validity()).cloned());
        pending.push(node);
    }
    pending
}

/// Ids of the nodes among the pending work of `roots` that some other pending node reads.
pub(super) fn results_read_by_pending_work(roots: &[NodeRef], replan_roots: bool) -> HashSet<u64> {
    (pending_work(roots, replan_roots).iter())
        .flat_map(|node| node.inputs.iter().chain(node.validity()))
        .map(|input| input.id)
        .collect()
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

    /// Releases the outputs of its results that only later work of the evaluation read.
    pub fn release_intermediates(&self) {
        // Their null flags and counts stay: later work's results may share them.
        self.read_later.iter().for_each(|r| r.release_output());
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
            "group-by in parts ({} rows, more than allowedMem holds at once): {} row ranges of up to {most} rows grouped on the device one at a time (at most {} bytes each), their groups read back; then blocks of them grouped again until one is left, or, past the groups a block of {DEFAULT_SPLIT_EVERY} ranges' holds within the budget, cut by key into key ranges made one at a time, their results kept on the host (each projected once the groups before it are known)",
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
        let first = self.ranges.first().map_or(0, |r| r.0);
        let most = most_groups(device, stages, &self.results, first, &partials)?;
        let mut key_ranges = by_key_range(partials, stages.key_count(), most)?;
        let here = device.core().id;
        if key_ranges.len() == 1 {
            let finals = self.finals(device, key_ranges.remove(0), most).await?;
            return self.adopt_whole(device, finals).await;
        }
        // More groups than one combination holds: each key range's groups are made on the
        // device and read back, and the results wait on the host (as a sort's larger than
        // the budget do).
        let mut made = Vec::with_capacity(key_ranges.len());
        for parts in key_ranges {
            let finals = flagged(&self.results, self.finals(device, parts, most).await?)?;
            made.push(read_back(device, &finals, 0, &[]).await?);
        }
        for (c, result) in self.results.iter().enumerate() {
            let (values, valid) = PartialRows::joined(&made, c, result.meta.size)?;
            adopt_host(result, values, valid, here)?;
        }
        Ok(())
    }

    /// The nodes of the group-by's results from `parts` (one key range's), combined in
    /// blocks of at most `DEFAULT_SPLIT_EVERY * most` groups until one block is left.
    async fn finals(
        &self,
        device: &dyn Backend,
        mut parts: Vec<PartialRows>,
        most: u32,
    ) -> Result<Vec<NodeRef>> {
        let stages = &self.stages;
        let block_rows = DEFAULT_SPLIT_EVERY.saturating_mul(most);
        while parts.iter().map(PartialRows::rows).sum::<u32>() > block_rows {
            let mut combined = Vec::new();
            let mut block: Vec<PartialRows> = Vec::new();
            let mut rows = 0;
            for part in parts {
                if rows + part.rows() > block_rows && !block.is_empty() {
                    let nodes = stages.combine(&std::mem::take(&mut block))?;
                    combined.push(read_back(device, &nodes, 0, &[]).await?);
                    rows = 0;
                }
                rows += part.rows();
                block.push(part);
            }
            let nodes = stages.combine(&block)?;
            combined.push(read_back(device, &nodes, 0, &[]).await?);
            parts = combined;
        }
        stages.finish(&stages.combine(&parts)?)
    }

    /// Evaluates the results' nodes (`finals`) on the device and gives the group-by's
    /// results their outputs.
    async fn adopt_whole(&self, device: &dyn Backend, finals: Vec<NodeRef>) -> Result<()> {
        let mut finals = flagged(&self.results, finals)?;
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

/// The projected peak of combining `DEFAULT_SPLIT_EVERY` parts of `groups` groups each (the
/// most a block of parts holds), alone and making `results` of them (the last block's
/// combination keeps fewer columns); `first` is the group-by's first row (a part of it gives
/// the columns' shapes).
fn combination_peak(
    device: &dyn CostModel,
    stages: &GroupStages,
    results: &[NodeRef],
    first: u32,
    groups: u32,
) -> Result<u64> {
    let shape = stages.partial(first, first + 1)?;
    let part = PartialRows::projected(&shape, groups, stages.key_count())?;
    let combined = stages.combine(&vec![part; DEFAULT_SPLIT_EVERY as usize])?;
    let alone = projected_peak(device, &combined, false)?;
    let made = flagged(results, stages.finish(&combined)?)?;
    Ok(alone.max(projected_peak(device, &made, false)?))
}

/// The nodes of `results` made (`finals`), with null flags, all set, where a result may be
/// null and its node has none.
fn flagged(results: &[NodeRef], mut finals: Vec<NodeRef>) -> Result<Vec<NodeRef>> {
    for (result, made) in results.iter().zip(finals.iter_mut()) {
        if result.validity().is_some() && made.validity().is_none() {
            *made = ir::with_validity(made, Some(&ir::flags_like(made, 1)?))?;
        }
    }
    Ok(finals)
}

/// The most groups a key range may hold: as many as a block of parts of that many groups
/// each can be combined within the budget (at least one: `plan` checked it), and no more
/// than `partials` hold.
fn most_groups(
    device: &dyn CostModel,
    stages: &GroupStages,
    results: &[NodeRef],
    first: u32,
    partials: &[PartialRows],
) -> Result<u32> {
    let total: u32 = partials.iter().map(PartialRows::rows).sum();
    let fits = |groups: u32| match combination_peak(device, stages, results, first, groups) {
        Ok(_) => Ok(true),
        Err(e) if e.code == ErrorCode::LimitExceeded => Ok(false),
        Err(e) => Err(e),
    };
    // A group takes at least its columns' bytes: the budget bounds the search.
    let budget = device.core().allowed_mem.get().unwrap_or(u64::MAX);
    let group_bytes: u64 = (partials.first().into_iter())
        .flat_map(|p| &p.columns)
        .map(|(data, valid)| {
            let lanes = data.len() as u64 / u64::from(partials[0].rows().max(1));
            lanes * data.dtype().byte_width() as u64 + u64::from(valid.is_some())
        })
        .sum();
    let upper = total
        .min((budget / group_bytes.max(1)).min(u64::from(u32::MAX)) as u32)
        .max(1);
    if fits(upper)? {
        return Ok(upper);
    }
    // The most that fits: 1 fits, `upper` does not.
    let (mut fitting, mut too_many) = (1, upper);
    while too_many - fitting > 1 {
        let middle = fitting + (too_many - fitting) / 2;
        match fits(middle)? {
            true => fitting = middle,
            false => too_many = middle,
        }
    }
    Ok(fitting)
}

/// `partials` (each one range's groups, in ascending key order) as key ranges of at most
/// `most` groups each, in key order: per range, the parts of its groups in it.
fn by_key_range(
    partials: Vec<PartialRows>,
    keys: usize,
    most: u32,
) -> Result<Vec<Vec<PartialRows>>> {
    // Each group's keys as words that order and compare as the group-by does.
    let words: Vec<Vec<u64>> = (partials.iter())
        .map(|p| key_words(p, keys))
        .collect::<Result<_>>()?;
    let key = |r: usize, g: usize| &words[r][g * keys..(g + 1) * keys];
    let rows = |r: usize| partials[r].rows() as usize;
    for r in 0..partials.len() {
        if (1..rows(r)).any(|g| key(r, g - 1) > key(r, g)) {
            return Err(internal("a range's groups are not in key order"));
        }
    }
    // The first key of each key range: the ranges' groups walked in key order, a merge of
    // their ascending lists by a heap of the ranges, each at its next group.
    let next: Vec<std::cell::Cell<usize>> = vec![Default::default(); partials.len()];
    // A max-heap of the later key first: the least key at its root.
    let later = |a: &usize, b: &usize| key(*a, next[*a].get()) > key(*b, next[*b].get());
    let mut heap: Vec<usize> = (0..partials.len()).filter(|&r| rows(r) > 0).collect();
    for i in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, i, &later);
    }
    let mut starts: Vec<&[u64]> = Vec::new();
    let (mut held, mut last): (u32, Option<&[u64]>) = (0, None);
    while let Some(&r) = heap.first() {
        let k = key(r, next[r].get());
        if last != Some(k) {
            if held == most || last.is_none() {
                starts.push(k);
                held = 0;
            }
            held += 1;
            last = Some(k);
        }
        next[r].set(next[r].get() + 1);
        if next[r].get() == rows(r) {
            heap.swap_remove(0);
        }
        sift_down(&mut heap, 0, &later);
    }
    if starts.len() <= 1 {
        return Ok(vec![partials]);
    }
    let mut ranges: Vec<Vec<PartialRows>> = vec![Vec::new(); starts.len()];
    for (r, part) in partials.iter().enumerate() {
        let rows = rows(r);
        // The first of the range's groups (in key order) at or past `start`.
        let first_at = |start: &[u64]| {
            let (mut low, mut high) = (0, rows);
            while low < high {
                let middle = (low + high) / 2;
                match key(r, middle) < start {
                    true => low = middle + 1,
                    false => high = middle,
                }
            }
            low as u32
        };
        let mut cuts: Vec<u32> = starts.iter().map(|s| first_at(s)).collect();
        cuts.push(rows as u32);
        for (k, pair) in cuts.windows(2).enumerate() {
            if pair[1] > pair[0] {
                ranges[k].push(part.slice(pair[0], pair[1])?);
            }
        }
    }
    Ok(ranges)
}

/// A partial's keys (its first `keys` columns) as words per group, `keys` a group: ordered
/// as the group-by orders them (ascending, NaN then null last), equal where it groups them
/// together (-0 as +0, every NaN one).
fn key_words(partial: &PartialRows, keys: usize) -> Result<Vec<u64>> {
    let rows = partial.rows() as usize;
    let len = rows
        .checked_mul(keys)
        .ok_or_else(|| GpuTableError::new(ErrorCode::OutOfMemory, "a group-by's keys overflow"))?;
    let mut words = crate::column::try_collect(len, std::iter::repeat_n(0, len))?;
    if len == 0 {
        return Ok(words);
    }
    for (k, (data, valid)) in partial.columns[..keys].iter().enumerate() {
        let column = words[k..].iter_mut().step_by(keys);
        const SIGN: u32 = 1 << 31;
        match data {
            ColumnData::F32(v) => fill(column, v.iter().map(|&x| ir::float_sort_key(x))),
            ColumnData::I8(v) => fill(column, v.iter().map(|&x| x as i32 as u32 ^ SIGN)),
            ColumnData::I16(v) => fill(column, v.iter().map(|&x| x as i32 as u32 ^ SIGN)),
            ColumnData::I32(v) => fill(column, v.iter().map(|&x| x as u32 ^ SIGN)),
            ColumnData::U8(v) => fill(column, v.iter().map(|&x| u32::from(x))),
            ColumnData::U16(v) => fill(column, v.iter().map(|&x| u32::from(x))),
            ColumnData::U32(v) => fill(column, v.iter().copied()),
        }
        if let Some(ColumnData::U8(valid)) = valid {
            let column = words[k..].iter_mut().step_by(keys);
            for (word, _) in column.zip(valid).filter(|(_, &v)| v == 0) {
                *word = u64::MAX;
            }
        }
    }
    Ok(words)
}

/// Writes each of `values` to its place of `column` (one key's words, `keys` apart).
fn fill<'w>(column: impl Iterator<Item = &'w mut u64>, values: impl Iterator<Item = u32>) {
    for (word, value) in column.zip(values) {
        *word = u64::from(value);
    }
}

/// Evaluates a part's nodes and reads their rows and null flags back, together (rows of a
/// range offset by `start` where `holds_rows` says).
async fn read_back(
    device: &dyn Backend,
    nodes: &[NodeRef],
    start: u32,
    holds_rows: &[bool],
) -> Result<PartialRows> {
    crate::engine::evaluate(device, nodes).await?;
    let mut outputs = Vec::with_capacity(nodes.len() * 2);
    for node in nodes {
        let rows = node
            .known_length()
            .ok_or_else(|| internal("a part's groups were not counted"))?;
        outputs.push((computed(node)?, rows));
        if let Some(valid) = node.validity() {
            outputs.push((computed(valid)?, rows));
        }
    }
    let reads: Vec<_> = outputs
        .iter()
        .map(|(output, rows)| (output, *rows))
        .collect();
    let mut read = read_outputs(device, &reads).await?.into_iter();
    let mut columns = Vec::with_capacity(nodes.len());
    for (c, node) in nodes.iter().enumerate() {
        let mut data = read
            .next()
            .ok_or_else(|| internal("a part's rows were not read"))?;
        if let (true, ColumnData::I32(values)) = (holds_rows.get(c) == Some(&true), &mut data) {
            for row in values.iter_mut().filter(|r| **r >= 0) {
                *row += start as i32;
            }
        }
        let valid = match node.validity() {
            Some(_) => Some(
                read.next()
                    .ok_or_else(|| internal("null flags were not read"))?,
            ),
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

/// Gives `result` `values` and their null flags in host memory (its rows in its first
/// chunk), computed on device `here`, and its count.
fn adopt_host(
    result: &NodeRef,
    values: Column,
    valid: Option<Column>,
    here: DeviceId,
) -> Result<()> {
    let chunk_count = result
        .counted()
        .map_or(1, |c| c.chunks.meta.length as usize);
    let rows = values.rows;
    let mut chunks = vec![0; chunk_count.max(1)];
    chunks[0] = rows;
    let host = |first: Column| -> Result<Output> {
        let (dtype, size) = (first.dtype(), first.size);
        let mut values = vec![Rc::new(Value::host(first))];
        for _ in 1..chunks.len() {
            values.push(Rc::new(Value::host(Column::empty(dtype, size)?)));
        }
        Ok(Output::new(HOST, values))
    };
    result.add_output(host(values)?);
    result.materialize_on(here);
    if let (Some(flags), Some(valid)) = (result.validity(), valid) {
        if !flags.has_output() {
            flags.add_output(host(valid)?);
            flags.materialize_on(here);
        }
    }
    settle_counts(result, &chunks)?;
    result.settle(chunks.into());
    Ok(())
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
    settle_counts(result, &chunks)?;
    result.settle(chunks);
    Ok(())
}

/// Gives a counted `result`'s counts the rows of `chunks` (its chunks' rows).
fn settle_counts(result: &NodeRef, chunks: &[u32]) -> Result<()> {
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
    Ok(())
}
