//! `explain`: the schedule a node runs on a device, pass by pass: what each fused, its chunk
//! tasks, a reduction's combine rounds, the kernels each task runs (counted as the executor
//! runs them) and the device memory each task is projected to hold.

use std::fmt::Write;

use super::schedule::{self, sorts_natively, Cut, Pass, Schedule};
use super::{internal, CostModel};
use crate::error::Result;
use crate::ir::{describe_rounds, NodeRef, Reduction};
use crate::plan::{PlanLimits, Region, ASSEMBLY_PASS};

/// The schedule `root` runs on `device` (as if it had not run yet), with the device's kernels.
pub fn explain(device: &dyn CostModel, root: &NodeRef) -> Result<String> {
    root.check_alive()?;
    let roots = crate::ir::with_companions(std::slice::from_ref(root));
    // Filters, group-bys and cumulative ops larger than allowedMem run in parts, before the
    // rest.
    let filters = super::staged_filter::plan(device, &roots, true)?;
    let groups = super::staged_group::plan(device, &roots, true)?;
    let scans = super::staged_scan::plan(device, &roots, true)?;
    let mut settled = Vec::new();
    filters.iter().for_each(|f| f.settles(&mut settled));
    groups.iter().for_each(|g| g.settles(&mut settled));
    scans.iter().for_each(|s| s.settles(&mut settled));
    let roots: Vec<NodeRef> = (roots.iter())
        .filter(|r| !settled.iter().any(|s| s.id == r.id))
        .cloned()
        .collect();
    if roots.is_empty() {
        let what = match (groups.is_empty(), scans.is_empty()) {
            (false, _) => "a group-by",
            (true, false) => "a cumulative op",
            (true, true) => "a filter",
        };
        let mut text = format!("plan on {}: {what} in parts\n", device.name());
        for filter in &filters {
            filter.describe(&mut text);
        }
        for group in &groups {
            group.describe(&mut text);
        }
        for scan in &scans {
            scan.describe(&mut text);
        }
        if let Some(budget) = device.core().allowed_mem.get() {
            let combined = match groups.is_empty() {
                true => "",
                false => "; the groups combining them are projected once known",
            };
            let _ = writeln!(
                text,
                "allowedMem {budget} bytes: fits (its ranges{combined})"
            );
        }
        return Ok(text);
    }
    // What an evaluation runs besides (where nothing ran in parts): draw arguments, and
    // the nodes its checks read.
    let roots = super::evaluated_with(device, &roots)?;
    let (_, _, roots) = super::checks_of(&roots);
    // Sorts larger than allowedMem run first, as runs and a merge; the rest reads their
    // results from the host.
    let (sorts, stand_ins) = super::external_sort::plan(device, &roots, true)?;
    let rest: Vec<NodeRef> = (roots.iter())
        .filter(|r| !stand_ins.settles(r))
        .cloned()
        .collect();
    let resident = |leaf: &NodeRef| stand_ins.resident(device, leaf);
    let schedule = schedule::of_roots(device, &rest, true, &resident)?;
    drop(stand_ins);
    let plan = &schedule.plan;
    let mut text = plan.describe_header(&device.name());
    for filter in &filters {
        filter.describe(&mut text);
    }
    for group in &groups {
        group.describe(&mut text);
    }
    for scan in &scans {
        scan.describe(&mut text);
    }
    for sort in &sorts {
        sort.describe(&mut text);
    }
    let words = device.kernel_words();
    let mut total = 0;
    for (index, (region, pass)) in plan.regions.iter().zip(&schedule.passes).enumerate() {
        text.push_str(&plan.describe_pass(index));
        let tasks = pass.tasks.len();
        if tasks > 1 && !region.root.op.is_assembly() {
            let cut = match pass.cut {
                Some(Cut::Binding) => " (chunks cut at this device's binding size)",
                Some(Cut::Budget) => " (chunks cut into row ranges that fit allowedMem)",
                None => "",
            };
            let _ = writeln!(text, "    runs as {tasks} chunk tasks{cut}");
        }
        if region.root.counted().is_some() {
            let capacity = region.root.meta.length;
            let _ = writeln!(
                text,
                "    rows counted on the device: capacity {capacity} rows allocated"
            );
        }
        if let Some(reduction) = Reduction::of(&region.root) {
            let rounds = describe_rounds(tasks as u32, &pass.rounds, reduction.split_every);
            let _ = writeln!(text, "    a partial per chunk; {rounds}");
        }
        if words.is_some() {
            let (kernels, line) = pass_kernels(device, &schedule, region, pass)?;
            total += kernels;
            let _ = writeln!(text, "    kernels: {line}");
        }
        let most = pass.tasks.iter().map(|t| t.bytes).max().unwrap_or(0);
        let _ = writeln!(
            text,
            "    projected device memory: at most {most} bytes per chunk task"
        );
    }
    if let Some((one, many)) = words {
        let word = if total == 1 { one } else { many };
        let _ = writeln!(text, "{total} {word} in all");
    }
    if let Some(counted) = root.counted() {
        let bytes = 4 * counted.chunks.meta.length;
        let _ = writeln!(
            text,
            "its rows are counted on the device: the count ({bytes} bytes) is read back at the end"
        );
    }
    describe_budget(&schedule, &mut text);
    Ok(text)
}

/// Whether the schedule fits `allowedMem`, and what streams to the host.
fn describe_budget(schedule: &Schedule, text: &mut String) {
    let Some(budget) = schedule.budget else {
        text.push_str("no allowedMem: tasks are not bounded\n");
        return;
    };
    let verdict = match schedule.check() {
        Ok(()) => "fits".to_string(),
        Err(e) => format!("refused: {}", e.message),
    };
    let _ = writeln!(text, "allowedMem {budget} bytes: {verdict}");
    if !schedule.streamed.is_empty() {
        text.push_str("read back to the host as they are computed (larger than half of allowedMem, or held while a later task would not fit):");
        for region in &schedule.plan.regions {
            if schedule.streamed.contains(&region.root.id) {
                let _ = write!(text, " t{}", region.root.id);
            }
        }
        text.push('\n');
    }
}

/// The kernels `pass` of `region` (in `schedule`) runs on `device` (every task's, a
/// reduction's rounds, a scatter's clears, a sort's split passes, a view's copies), and a line
/// saying what they do.
fn pass_kernels(
    device: &dyn CostModel,
    schedule: &Schedule,
    region: &Region,
    pass: &Pass,
) -> Result<(u64, String)> {
    if region.root.op.is_assembly() {
        let copies = assembly_copies(device, schedule, &region.root, pass)?;
        return Ok((copies, ASSEMBLY_PASS.to_string()));
    }
    if region.is_sort() {
        return match &pass.composed {
            None => describe_native_sort(device, schedule, region),
            Some(split) => describe_split_sort(device, region, &split.schedule),
        };
    }
    if region.is_walk() {
        let (kernels, line) = match &pass.composed {
            None => {
                let root = &region.root;
                let mut copies = 0;
                for (k, input) in root.inputs.iter().enumerate() {
                    if device.walk_joins_input(root, k) {
                        copies += joining_copies(device, schedule, input)?;
                    }
                }
                after_joining(device, device.describe_walk(root), copies, "inputs")
            }
            Some(composed) => {
                let kernels = composed_kernels(device, &composed.schedule)?;
                let (one, many) = device.kernel_words().unwrap_or(("kernel", "kernels"));
                let word = if kernels == 1 { one } else { many };
                (kernels, format!("{kernels} {word} of other ops"))
            }
        };
        return Ok((kernels, line));
    }
    let tasks = pass.tasks.len() as u64;
    // Each task's kernels (one of no rows may run none); the line is the largest's.
    let describe = |rows: u32| {
        let task = region.task(rows);
        match () {
            _ if region.is_reduction() => Ok(device.describe_reduction(&task)),
            _ if region.is_scatter() => Ok(device.describe_scatter(&task)),
            _ if region.adds_to_bins => Ok(device.describe_bins(&task)),
            _ => device.describe_region(&task),
        }
    };
    let largest = pass.tasks.iter().map(|t| t.rows).max().unwrap_or(0);
    let (_, line) = describe(largest)?;
    let mut kernels = 0;
    for task in &pass.tasks {
        kernels += describe(task.rows)?.0;
    }
    if region.is_scatter() {
        kernels += device.scatter_pass_kernels(region);
    }
    if region.adds_to_bins {
        kernels += device.bins_pass_kernels(region);
    }
    if region.is_reduction() {
        let (per_round, last) = device.reduction_tail_kernels(&region.root);
        kernels += per_round * pass.rounds.len() as u64 + last;
    }
    let cut = match pass.cut {
        Some(Cut::Binding) => " (chunks cut at this device's binding size)",
        Some(Cut::Budget) => " (chunks cut to fit allowedMem)",
        None => "",
    };
    let line = match tasks {
        1 => line,
        n => format!("each of {n} chunk tasks{cut}: {line}"),
    };
    Ok((kernels, line))
}

/// The kernels of a device's own sort, with the copies joining keys stored in chunks.
fn describe_native_sort(
    device: &dyn CostModel,
    schedule: &Schedule,
    region: &Region,
) -> Result<(u64, String)> {
    let (kernels, line) = device.describe_sort(&region.root, !region.sorted_keys.is_empty());
    if device.sorts_keys_in_chunks() {
        return Ok((kernels, line));
    }
    let mut copies = 0;
    for key in &region.root.inputs {
        copies += joining_copies(device, schedule, key)?;
    }
    Ok(after_joining(device, (kernels, line), copies, "keys"))
}

/// A pass's `kernels` and line, after `copies` kernels joining its `inputs` stored in
/// chunks into one value each.
fn after_joining(
    device: &dyn CostModel,
    (kernels, line): (u64, String),
    copies: u64,
    inputs: &str,
) -> (u64, String) {
    let (one, many) = device.kernel_words().unwrap_or(("kernel", "kernels"));
    match copies {
        0 => (kernels, line),
        n => {
            let word = if n == 1 { one } else { many };
            let line = format!("{line}, after {n} {word} joining {inputs} stored in chunks");
            (kernels + n, line)
        }
    }
}

/// The copy kernels `Run::assemble` runs joining the stored chunks of `input` (as
/// `schedule` stores them: a pass cut to fit the budget stores a chunk per task) into one
/// value.
fn joining_copies(device: &dyn CostModel, schedule: &Schedule, input: &NodeRef) -> Result<u64> {
    let (offsets, uploaded) = stored_chunks(device, schedule, input);
    let pieces = (offsets.windows(2).filter(|w| w[1] > w[0]))
        .map(|w| Piece::of(input, (w[0], w[1]), (w[0], w[1]), uploaded))
        .collect::<Result<Vec<_>>>()?;
    copies_joining(&device.plan_limits(), pieces)
}

/// The copy kernels `Run::assembly` runs for the view `root` in `pass` of `schedule`: per
/// task, the rows it takes of each input's stored chunks, copied where they are not one
/// whole chunk.
fn assembly_copies(
    device: &dyn CostModel,
    schedule: &Schedule,
    root: &NodeRef,
    pass: &Pass,
) -> Result<u64> {
    let limits = device.plan_limits();
    let stored: Vec<(Vec<u64>, bool)> = (root.inputs.iter())
        .map(|source| stored_chunks(device, schedule, source))
        .collect();
    let mut copies = 0;
    for task in &pass.tasks {
        let end = task.first + task.rows as u64;
        let mut pieces = Vec::new();
        for (input, lo, hi) in crate::ir::assembly_ranges(root, task.first, end) {
            let (offsets, uploaded) = &stored[input];
            // The chunks from the one holding row `lo` on, while they start before `hi`.
            let first = offsets[1..].partition_point(|&e| e <= lo);
            for w in offsets[first..].windows(2).take_while(|w| w[0] < hi) {
                let rows = (lo.max(w[0]), hi.min(w[1]));
                if rows.0 < rows.1 {
                    let source = &root.inputs[input];
                    pieces.push(Piece::of(source, (w[0], w[1]), rows, *uploaded)?);
                }
            }
        }
        copies += copies_joining(&limits, pieces)?;
    }
    Ok(copies)
}

/// How `Run::assembly` finds the rows of `source`: its stored chunks' offsets (stored on
/// the device, computed in this evaluation a chunk per task of its pass, copied here whole, or
/// read in place), and whether a piece of them is uploaded as itself instead (host rows
/// brought a task's rows at a time).
fn stored_chunks(
    device: &dyn CostModel,
    schedule: &Schedule,
    source: &NodeRef,
) -> (Vec<u64>, bool) {
    if let Some(output) = source.output_on(device.core().id) {
        return (output.offsets().to_vec(), false);
    }
    let computed = schedule
        .plan
        .regions
        .iter()
        .position(|r| r.root.id == source.id);
    if let Some(index) = computed {
        let pass = &schedule.passes[index];
        if schedule.streamed.contains(&source.id) {
            return (source.chunk_offsets().to_vec(), true);
        }
        if pass.cut_after || pass.tasks.is_empty() {
            return (source.chunk_offsets().to_vec(), false);
        }
        let mut offsets: Vec<u64> = pass.tasks.iter().map(|t| t.first).collect();
        offsets.extend(pass.tasks.last().map(|t| t.first + t.rows as u64));
        return (offsets, false);
    }
    match source.home() {
        Some(home)
            if super::reads_in_place(device, &home)
                || schedule.copied_whole.contains(&source.id) =>
        {
            (home.offsets().to_vec(), false)
        }
        _ => (source.chunk_offsets().to_vec(), true),
    }
}

/// A piece of a value `Run::assemble` makes: `rows` rows, and what a copy binds for it.
struct Piece {
    /// The stored chunk the piece is of (a joined piece: a value of its rows).
    bound: NodeRef,
    rows: u64,
    /// All of what `bound` stands for, read in place.
    whole: bool,
}

impl Piece {
    /// Rows `rows` of the stored chunk `chunk` of `source` (`uploaded`: brought as itself).
    fn of(source: &NodeRef, chunk: (u64, u64), rows: (u64, u64), uploaded: bool) -> Result<Piece> {
        Ok(Piece {
            bound: crate::ir::slice(source, chunk.0 as f64, chunk.1 as f64)?,
            rows: rows.1 - rows.0,
            whole: uploaded || rows == chunk,
        })
    }
}

/// The copies `Run::assemble` runs making one value of `pieces`, in order: each copy joins as
/// many as one kernel binds (a part of one chunk alone is copied too).
fn copies_joining(limits: &PlanLimits, mut pieces: Vec<Piece>) -> Result<u64> {
    let mut copies = 0;
    loop {
        match pieces.as_slice() {
            [] | [Piece { whole: true, .. }] => return Ok(copies),
            _ => {}
        }
        let bound: Vec<NodeRef> = pieces.iter().map(|p| p.bound.clone()).collect();
        let joined = super::run::pieces_per_copy(limits, &bound);
        // No copy joins two pieces here: `assemble` reports the limit when it runs.
        if joined < 2 && pieces.len() > 1 {
            return Ok(copies);
        }
        let rows: u64 = pieces[..joined].iter().map(|p| p.rows).sum();
        let first = &pieces[0].bound;
        let meta = crate::ir::Meta {
            length: rows as u32,
            constant: false,
            ..first.meta
        };
        let copy = crate::ir::computed(
            meta,
            crate::ir::single_chunk(rows as u32),
            crate::value::Output::new(crate::value::HOST, Vec::new()),
        );
        pieces.splice(
            0..joined,
            [Piece {
                bound: copy,
                rows,
                whole: true,
            }],
        );
        copies += 1;
    }
}

/// The kernels of a sort composed of split passes, counted over their schedule.
fn describe_split_sort(
    device: &dyn CostModel,
    region: &Region,
    split: &Schedule,
) -> Result<(u64, String)> {
    let crate::ir::Op::SortPermutation { bits, .. } = &region.root.op else {
        return Err(internal("a sort pass without a sort"));
    };
    debug_assert!(!sorts_natively(device, region));
    let kernels = composed_kernels(device, split)?;
    let bits: u32 = bits.iter().sum();
    let (one, many) = device.kernel_words().unwrap_or(("kernel", "kernels"));
    let word = if kernels == 1 { one } else { many };
    Ok((
        kernels,
        format!(
            "{kernels} {word} in {bits} one-bit split passes (scan, gather and scatter kernels)"
        ),
    ))
}

/// The kernels of every pass of a composed pass's schedule.
fn composed_kernels(device: &dyn CostModel, schedule: &Schedule) -> Result<u64> {
    let mut kernels = 0;
    for (region, pass) in schedule.plan.regions.iter().zip(&schedule.passes) {
        kernels += pass_kernels(device, schedule, region, pass)?.0;
    }
    Ok(kernels)
}
