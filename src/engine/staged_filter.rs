//! A filter larger than `allowedMem` (api.md "Memory": row-local verbs stream chunk by
//! chunk). A filter's kept rows are packed into one capacity of its input's rows and its
//! gathers read the filtered column whole, so a budget smaller than that takes it in parts:
//! each range of the input's rows (its chunks, cut smaller where one does not fit) filtered
//! on its own and its kept rows read back, and the results made of them in host memory, as
//! an output the budget does not hold stays there. The ranges are projected before any
//! kernel runs.
//!
//! Only filters whose results the evaluation returns, and nothing in it reads, are taken in
//! parts (a result read by later work is made whole, as without a budget), and only where
//! the column and the mask are row-local work over stored values (a range of them computes
//! nothing twice).

use std::fmt::Write;
use std::rc::Rc;

use super::staged_group::{cut_to_fit, projected_peak, push_settled, results_read_by_pending_work};
use super::{internal, read_outputs, Backend, CostModel};
use crate::column::{Column, ColumnData};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, NodeRef};
use crate::value::{Output, Value, HOST};

/// The most ranges a filter is cut into: past it, the budget is too small for one.
const MOST_RANGES: usize = 1 << 14;

/// Filters by one mask (a table's columns) planned in parts.
pub(super) struct StagedFilter {
    /// The results, each with the column it filters.
    results: Vec<(NodeRef, NodeRef)>,
    mask: NodeRef,
    /// The row ranges filtered one at a time, each within one chunk of the input.
    ranges: Vec<(u32, u32)>,
    /// The most device bytes a range's filters are projected to hold.
    range_peak: u64,
}

/// The filters among `roots` to take in parts on `device`: under `allowedMem`, those whose
/// whole plan does not fit it, whose results are roots read by nothing else pending.
/// `replan_roots` plans roots that have an output as if they had none (`explain`).
pub(super) fn plan(
    device: &dyn CostModel,
    roots: &[NodeRef],
    replan_roots: bool,
) -> Result<Vec<StagedFilter>> {
    let Some(budget) = device.core().allowed_mem.get() else {
        return Ok(Vec::new());
    };
    // By mask and the filtered columns' chunks: one compaction's filters.
    let mut found: Vec<StagedFilter> = Vec::new();
    for root in roots {
        let Some((x, mask)) = root.filtered() else {
            continue;
        };
        let pending = replan_roots || !root.has_output();
        if !pending || !ir::rows_computed_alone(x, None) || !ir::rows_computed_alone(mask, None) {
            continue;
        }
        let entry = (root.clone(), x.clone());
        match (found.iter_mut()).find(|f| f.mask.id == mask.id && f.results[0].1.chunks == x.chunks)
        {
            Some(filter) if !filter.results.iter().any(|(r, _)| r.id == root.id) => {
                filter.results.push(entry)
            }
            Some(_) => {}
            None => found.push(StagedFilter {
                results: vec![entry],
                mask: mask.clone(),
                ranges: Vec::new(),
                range_peak: 0,
            }),
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let read = results_read_by_pending_work(roots, replan_roots);
    let mut staged = Vec::new();
    for mut filter in found {
        let results: Vec<NodeRef> = filter.results.iter().map(|(r, _)| r.clone()).collect();
        if results.iter().any(|r| read.contains(&r.id)) {
            continue;
        }
        match projected_peak(device, &results, replan_roots) {
            Ok(_) => continue,
            Err(e) if e.code == ErrorCode::LimitExceeded => {}
            Err(e) => return Err(e),
        }
        let refused = |e: GpuTableError| {
            let message = format!("a filter in parts under allowedMem {budget}: {}", e.message);
            GpuTableError::new(e.code, message)
        };
        let (mut ranges, mut range_peak) = (Vec::new(), 0);
        let part = |a: u32, b: u32| projected_peak(device, &filter.part(a, b)?, replan_roots);
        for window in filter.results[0].1.chunk_offsets().windows(2) {
            let (start, end) = (window[0] as u32, window[1] as u32);
            if start < end {
                let peak = cut_to_fit((start, end), &part, &mut ranges, MOST_RANGES, &refused)?;
                range_peak = range_peak.max(peak);
            }
        }
        (filter.ranges, filter.range_peak) = (ranges, range_peak);
        staged.push(filter);
    }
    Ok(staged)
}

impl StagedFilter {
    /// Each result's filter of the rows `start..end` alone.
    fn part(&self, start: u32, end: u32) -> Result<Vec<NodeRef>> {
        // The mask and the columns remade together, so work they share is made once.
        let wholes = std::iter::once(&self.mask).chain(self.results.iter().map(|(_, x)| x));
        let rows = ir::rows_of_work(&wholes.cloned().collect::<Vec<_>>(), start, end)?;
        let mut filtered = Vec::with_capacity(self.results.len());
        for x in &rows[1..] {
            filtered.push(ir::filter(x, &rows[0])?);
        }
        Ok(filtered)
    }

    /// Adds the results this computes, with their null flags and counts, to `settled`.
    pub fn settles(&self, settled: &mut Vec<NodeRef>) {
        for (result, _) in &self.results {
            push_settled(result, settled);
        }
    }

    /// The most device bytes a range's filters are projected to hold.
    pub fn peak(&self) -> u64 {
        self.range_peak
    }

    /// A line for `explain`.
    pub fn describe(&self, text: &mut String) {
        let most = self.ranges.iter().map(|(a, b)| b - a).max().unwrap_or(0);
        let _ = writeln!(
            text,
            "filter in parts ({} columns of {} rows, more than allowedMem holds at once): {} row ranges of up to {most} rows filtered on the device one at a time (at most {} bytes each), their kept rows read back and joined",
            self.results.len(),
            self.mask.meta.length.max(self.results[0].1.meta.length),
            self.ranges.len(),
            self.range_peak,
        );
    }

    /// Filters the ranges and gives each result (its null flags and counts) the rows they
    /// kept, in host memory.
    pub async fn run(&self, device: &dyn Backend) -> Result<()> {
        let x = &self.results[0].1;
        let offsets = x.chunk_offsets();
        let mut kept_per_chunk = vec![0u32; x.chunks.len()];
        let mut columns = Vec::with_capacity(self.results.len());
        for (result, _) in &self.results {
            let flags = match result.validity() {
                Some(_) => Some(Column::empty(crate::dtype::DType::U8, 1)?),
                None => None,
            };
            columns.push((Column::empty(result.meta.dtype, result.meta.size)?, flags));
        }
        for &(start, end) in &self.ranges {
            let part = self.part(start, end)?;
            crate::engine::evaluate(device, &part).await?;
            let chunk = offsets.partition_point(|&o| o <= start as u64) - 1;
            let rows = part[0]
                .known_length()
                .ok_or_else(|| internal("a filter's part was not counted"))?;
            // Every column's kept rows and null flags, read together.
            let mut outputs = Vec::with_capacity(part.len() * 2);
            for (node, (_, flags)) in part.iter().zip(&columns) {
                outputs.push(computed(node)?);
                if let (Some(_), Some(valid)) = (flags, node.validity()) {
                    outputs.push(computed(valid)?);
                }
            }
            let reads: Vec<_> = outputs.iter().map(|output| (output, rows)).collect();
            let mut read = read_outputs(device, &reads).await?.into_iter();
            let mut next = || read.next().ok_or_else(|| internal("a part was not read"));
            for (node, (values, flags)) in part.iter().zip(columns.iter_mut()) {
                values.append(&next()?)?;
                if let Some(flags) = flags {
                    let valid = match node.validity() {
                        Some(_) => next()?,
                        None => ColumnData::U8(crate::column::try_collect(
                            rows as usize,
                            std::iter::repeat_n(1, rows as usize),
                        )?),
                    };
                    flags.append(&valid)?;
                }
            }
            kept_per_chunk[chunk] += rows;
        }
        let chunks: ir::Chunks = kept_per_chunk.into();
        let here = device.core().id;
        for ((result, _), (values, flags)) in self.results.iter().zip(columns) {
            adopt(result, values, &chunks)?;
            if let (Some(valid), Some(flags)) = (result.validity(), flags) {
                if !valid.has_output() {
                    adopt(valid, flags, &chunks)?;
                }
            }
            if let Some(counted) = result.counted() {
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
            result.settle(chunks.clone());
            for node in std::iter::once(result).chain(result.validity()) {
                node.materialize_on(here);
            }
        }
        Ok(())
    }
}

/// Gives `node` (a filter's result or its null flags, over a capacity of its input's rows)
/// the kept rows `column` holds, packed at the start of its capacity as an evaluation leaves
/// them, in host memory.
pub(super) fn adopt(node: &NodeRef, mut column: Column, chunks: &ir::Chunks) -> Result<()> {
    let kept: u32 = chunks.iter().sum();
    column.append_zero_rows(node.meta.length.saturating_sub(kept))?;
    let offsets = node.chunk_offsets();
    let mut stored = Vec::with_capacity(node.chunks.len());
    for window in offsets.windows(2) {
        let data = column.slice_rows(window[0] as u32, window[1] as u32)?;
        stored.push(Rc::new(Value::host(Column::new(data, column.size)?)));
    }
    node.add_output(Output::new(HOST, stored));
    Ok(())
}

pub(super) fn computed(node: &NodeRef) -> Result<Output> {
    node.home()
        .ok_or_else(|| internal(format!("t{} was not computed", node.id)))
}
