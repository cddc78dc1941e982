//! A cumulative op larger than `allowedMem`. A scan's rows each fold those before them, so
//! a budget smaller than its column takes it a range of rows at a time, in order: each range
//! scanned on its own with the fold of the ranges before it (one row, kept on the host)
//! folded into its rows, and the results made of the ranges in host memory, as an output the
//! budget does not hold stays there. The ranges are projected before any kernel runs. Float
//! sums and products then add a range's total to the next in order, where a whole scan may
//! group its rows otherwise (api.md lets a float sum add in any order).
//!
//! A reversed scan takes its ranges from the last: each range read backwards, scanned with
//! the fold of the ranges after it, and put back in row order.
//!
//! Only a scan whose result the evaluation returns, and nothing in it reads, is taken in
//! parts, and only where its input and the rest of the result's work are row-local over
//! stored values.

use std::collections::HashSet;
use std::fmt::Write;

use super::staged_filter::{adopt, computed};
use super::staged_group::{projected_peak, push_settled, results_read_by_pending_work};
use super::{internal, read_outputs, Backend, CostModel};
use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, NodeRef, Op};

/// The most ranges a scan is cut into: past it, the budget is too small for one.
const MOST_RANGES: usize = 1 << 14;

/// A cumulative op's result planned in parts.
pub(super) struct StagedScan {
    result: NodeRef,
    /// The `Op::Scan` in the result's work.
    scan: NodeRef,
    /// Of a reversed scan: the gather putting its rows back in row order.
    back: Option<NodeRef>,
    /// The row ranges scanned one at a time, in order.
    ranges: Vec<(u32, u32)>,
    /// The most device bytes a range's work is projected to hold.
    range_peak: u64,
}

/// The scans among `roots` to take in parts on `device`: under `allowedMem`, the results
/// whose whole plan does not fit it, read by nothing else pending. `replan_roots` plans
/// roots that have an output as if they had none (`explain`).
pub(super) fn plan(
    device: &dyn CostModel,
    roots: &[NodeRef],
    replan_roots: bool,
) -> Result<Vec<StagedScan>> {
    let Some(budget) = device.core().allowed_mem.get() else {
        return Ok(Vec::new());
    };
    let read = results_read_by_pending_work(roots, replan_roots);
    let mut seen = HashSet::new();
    let mut staged = Vec::new();
    for root in roots {
        let pending = replan_roots || !root.has_output();
        if !pending || !seen.insert(root.id) || read.contains(&root.id) {
            continue;
        }
        let Some((scan, back)) = scan_under(root) else {
            continue;
        };
        match projected_peak(device, std::slice::from_ref(root), replan_roots) {
            Ok(_) => continue,
            Err(e) if e.code == ErrorCode::LimitExceeded => {}
            Err(e) => return Err(e),
        }
        let refused = |e: GpuTableError| {
            let message = format!(
                "a cumulative op in parts under allowedMem {budget}: {}",
                e.message
            );
            GpuTableError::new(e.code, message)
        };
        let mut parts = StagedScan {
            result: root.clone(),
            scan,
            back,
            ranges: Vec::new(),
            range_peak: 0,
        };
        let part = |a: u32, b: u32| projected_peak(device, &parts.part(a, b, None)?, replan_roots);
        // Ranges across chunk boundaries (the rows are joined before the result's chunks are
        // cut from them, so many small chunks are few ranges), each projected: ranges over
        // different chunks hold different parts.
        let rows = root.meta.length;
        let mut pieces = 1u32;
        let (ranges, range_peak) = loop {
            let step = rows.div_ceil(pieces).max(1);
            let ranges: Vec<(u32, u32)> = (0..rows)
                .step_by(step as usize)
                .map(|a| (a, a.saturating_add(step).min(rows)))
                .collect();
            if ranges.len() > MOST_RANGES {
                let message = format!(
                    "it needs ranges of at most {step} rows: more than {MOST_RANGES} of them"
                );
                return Err(refused(GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    message,
                )));
            }
            let mut peak = Some(0);
            for &(a, b) in &ranges {
                match part(a, b) {
                    Ok(bytes) => peak = peak.map(|p| p.max(bytes)),
                    Err(e) if e.code == ErrorCode::LimitExceeded && step > 1 => {
                        peak = None;
                        break;
                    }
                    Err(e) => return Err(refused(e)),
                }
            }
            match peak {
                Some(peak) => break (ranges, peak),
                None => pieces = pieces.saturating_mul(2),
            }
        };
        (parts.ranges, parts.range_peak) = (ranges, range_peak);
        staged.push(parts);
    }
    Ok(staged)
}

/// The one scan in `root`'s work (as if `root` had no output yet), where the rest of that
/// work, the scan's input and its null flags compute a range of rows from those rows alone
/// (`ir::rows_computed_alone`) and the scan has `root`'s rows and chunks; with, for a
/// reversed scan (`ir::reversed_scan_input`), the gather putting it back in row order, which
/// stands for the scan in the work above it.
fn scan_under(root: &NodeRef) -> Option<(NodeRef, Option<NodeRef>)> {
    if root.counted().is_some() {
        return None;
    }
    let mut scans = Vec::new();
    let mut gathers = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        if !seen.insert(node.id) || (node.has_output() && node.id != root.id) {
            continue;
        }
        match node.op {
            Op::Scan { .. } => {
                scans.push(node);
                continue;
            }
            Op::Gather => gathers.push(node.clone()),
            _ => {}
        }
        stack.extend(node.inputs.iter().chain(node.validity()).cloned());
    }
    let [scan] = &scans[..] else {
        return None;
    };
    let alone = |x: &NodeRef| ir::rows_computed_alone(x, None);
    let (top, below) = match ir::reversed_scan_input(scan) {
        Some((backwards, values)) => {
            let back = gathers.into_iter().find(|g| {
                matches!(&g.inputs[..], [ids, read] if ids.id == backwards.id && read.id == scan.id)
            })?;
            (back, alone(values))
        }
        None => {
            let below = scan.inputs.iter().chain(scan.validity()).all(alone);
            (scan.clone(), below)
        }
    };
    let alike = top.meta.length == root.meta.length && top.chunks == root.chunks;
    let work_above = |x: &NodeRef| x.id == top.id || ir::rows_computed_alone(x, Some(top.id));
    let above = root.id == top.id
        || (ir::rows_remade(root) && root.inputs.iter().chain(root.validity()).all(work_above));
    let back = (top.id != scan.id).then_some(top);
    (alike && above && below).then(|| (scan.clone(), back))
}

impl StagedScan {
    /// The result's rows `start..end` and the next range's carry.
    fn part(&self, start: u32, end: u32, carry: Option<ColumnData>) -> Result<[NodeRef; 2]> {
        let range = (start, end);
        match &self.back {
            Some(back) => ir::reversed_scan_range(&self.result, back, &self.scan, range, carry),
            None => ir::scan_range(&self.result, &self.scan, range, carry),
        }
    }

    /// Adds the result this computes, with its null flags, to `settled`.
    pub fn settles(&self, settled: &mut Vec<NodeRef>) {
        push_settled(&self.result, settled);
    }

    /// The most device bytes a range's work is projected to hold.
    pub fn peak(&self) -> u64 {
        self.range_peak
    }

    /// A line for `explain`.
    pub fn describe(&self, text: &mut String) {
        // Ranges of one size, the last shorter.
        let most = self.ranges.first().map_or(0, |(a, b)| b - a);
        let (order, others) = match self.back {
            Some(_) => ("backwards from the last", "after"),
            None => ("in order", "before"),
        };
        let _ = writeln!(
            text,
            "cumulative op in parts ({} rows, more than allowedMem holds at once): {} row ranges of up to {most} rows scanned on the device {order} (at most {} bytes each), each folding in the ranges {others} it, read back and joined",
            self.result.meta.length,
            self.ranges.len(),
            self.range_peak,
        );
    }

    /// Scans the ranges in order (a reversed scan's from the last) and gives the result
    /// (and its null flags) their rows, in host memory.
    pub async fn run(&self, device: &dyn Backend) -> Result<()> {
        let result = &self.result;
        let mut values = Column::empty(result.meta.dtype, result.meta.size)?;
        // Null flags computed here (not x's own, stored already).
        let computed_flags = result.validity().filter(|valid| !valid.has_output());
        let mut flags = match computed_flags {
            Some(_) => Some(Column::empty(DType::U8, 1)?),
            None => None,
        };
        // A reversed scan's ranges run from the last, their rows joined in row order after.
        let in_order: Box<dyn Iterator<Item = &(u32, u32)>> = match self.back {
            Some(_) => Box::new(self.ranges.iter().rev()),
            None => Box::new(self.ranges.iter()),
        };
        let (mut value_parts, mut flag_parts) = (Vec::new(), Vec::new());
        let mut carry = None;
        for &(start, end) in in_order {
            let [rows, next] = self.part(start, end, carry)?;
            crate::engine::evaluate(device, &[rows.clone(), next.clone()]).await?;
            let length = end - start;
            // The range's rows, its null flags and the carry, read together.
            let (values_of, carry_of) = (computed(&rows)?, computed(&next)?);
            let flags_of = match (&flags, rows.validity()) {
                (Some(_), Some(valid)) => Some(computed(valid)?),
                _ => None,
            };
            let mut reads = vec![(&values_of, length), (&carry_of, 1)];
            reads.extend(flags_of.iter().map(|output| (output, length)));
            let mut read = read_outputs(device, &reads).await?.into_iter();
            let mut next = || read.next().ok_or_else(|| internal("a range was not read"));
            value_parts.push(next()?);
            carry = Some(next()?);
            if flags_of.is_some() {
                flag_parts.push(next()?);
            }
        }
        if self.back.is_some() {
            value_parts.reverse();
            flag_parts.reverse();
        }
        for part in &value_parts {
            values.append(part)?;
        }
        if let Some(flags) = &mut flags {
            for part in &flag_parts {
                flags.append(part)?;
            }
        }
        let chunks = result.chunks.clone();
        adopt(result, values, &chunks)?;
        if let (Some(valid), Some(flags)) = (computed_flags, flags) {
            adopt(valid, flags, &chunks)?;
        }
        let here = device.core().id;
        for node in std::iter::once(result).chain(computed_flags) {
            node.materialize_on(here);
        }
        Ok(())
    }
}
