//! `explain`: the plan a node runs on a device, the kernels of each pass (counted as the
//! executor runs them), and the device memory each chunk task is projected to hold.

use std::collections::HashSet;

use super::{budget, internal, resident_on, run, CostModel};
use crate::error::Result;
use crate::ir::{combine_rounds, NodeRef, Op};
use crate::plan::{plan_with, Fusion, Plan, PlanLimits, PlanOptions, Region, ASSEMBLY_PASS};
use crate::value::Output;

/// The plan `root` runs on `device` (as if it had not run yet), with the device's kernels.
pub fn explain(device: &dyn CostModel, root: &NodeRef) -> Result<String> {
    root.check_alive()?;
    let limits = device.plan_limits();
    let plan = plan_with(
        std::slice::from_ref(root),
        &PlanOptions {
            fusion: Fusion::On,
            replan_roots: true,
            limits: &limits,
        },
    )?;
    let mut text = plan.describe(&device.name());
    text.push_str(&describe_passes(device, &plan)?);
    let budget = device.core().allowed_mem.get();
    let roots = HashSet::from([root.id]);
    let resident = |leaf: &NodeRef| resident_on(device, leaf);
    let projection = budget::project(device, &plan, &roots, &resident, budget);
    for (index, tasks) in projection.tasks.iter().enumerate() {
        let most = tasks.iter().max().copied().unwrap_or(0);
        text.push_str(&format!(
            "pass {}: projected device memory {most} bytes per chunk task\n",
            index + 1
        ));
    }
    match budget {
        Some(budget) => {
            let verdict = match projection.check(&plan, budget) {
                Ok(()) => "fits".to_string(),
                Err(e) => format!("refused: {}", e.message),
            };
            text.push_str(&format!("allowedMem {budget} bytes: {verdict}\n"));
            if !projection.streamed.is_empty() {
                text.push_str("the output is larger than half of allowedMem: its chunks are read back to the host as they are computed\n");
            }
        }
        None => text.push_str("no allowedMem: tasks are not bounded\n"),
    }
    Ok(text)
}

/// The kernels each pass of `plan` runs on `device`, a line per pass and a total. Chunk
/// tasks run the same kernels: a pass is described once and counted per task.
fn describe_passes(device: &dyn CostModel, plan: &Plan) -> Result<String> {
    let Some((one, many)) = device.kernel_words() else {
        return Ok(String::new());
    };
    let (lines, total) = pass_kernels(device, plan)?;
    let mut text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let word = if total == 1 { one } else { many };
    text.push_str(&format!("{total} {word} in all\n"));
    Ok(text)
}

/// `describe_passes`' lines, and the kernels of every pass together.
fn pass_kernels(device: &dyn CostModel, plan: &Plan) -> Result<(Vec<String>, u64)> {
    let mut lines = Vec::with_capacity(plan.regions.len());
    let mut total = 0;
    for (index, region) in plan.regions.iter().enumerate() {
        let pass = index + 1;
        if region.root.op.is_assembly() {
            lines.push(format!("pass {pass}: {ASSEMBLY_PASS}"));
            continue;
        }
        if region.is_sort() {
            let (kernels, line) =
                match device.sorts(region.root.meta.length, region.root.inputs.len()) {
                    true => describe_native_sort(device, region)?,
                    false => describe_split_sort(device, region)?,
                };
            total += kernels;
            lines.push(format!("pass {pass}: {line}"));
            continue;
        }
        let (tasks, _) = run::planned_tasks(device, region, &region.random_access_inputs());
        let largest = region.task(tasks.iter().copied().max().unwrap_or(0));
        let (kernels, line) = match () {
            _ if region.is_reduction() => device.describe_reduction(&largest),
            _ if region.is_scatter() => device.describe_scatter(&largest),
            _ => device.describe_region(&largest)?,
        };
        total += kernels * tasks.len() as u64;
        if region.is_scatter() {
            total += device.scatter_pass_kernels(region);
        }
        let split = match tasks.len() > region.task_chunks().len() {
            true => " (chunks cut at this device's binding size)",
            false => "",
        };
        let line = match tasks.len() {
            1 => line,
            n => format!("each of {n} chunk tasks{split}: {line}"),
        };
        if let Some(reduction) = crate::ir::Reduction::of(&region.root) {
            let rounds = combine_rounds(tasks.len() as u32, reduction.split_every);
            let (per_round, last) = device.reduction_tail_kernels(&region.root);
            total += per_round * rounds.len() as u64 + last;
        }
        lines.push(format!("pass {pass}: {line}"));
    }
    Ok((lines, total))
}

/// The kernels of a device's own sort, with the copies joining keys stored in chunks.
fn describe_native_sort(device: &dyn CostModel, region: &Region) -> Result<(u64, String)> {
    let (kernels, line) = device.describe_sort(&region.root);
    if device.sorts_keys_in_chunks() {
        return Ok((kernels, line));
    }
    let mut copies = 0;
    for key in &region.root.inputs {
        copies += joining_copies(&device.plan_limits(), key)?;
    }
    let (one, many) = device.kernel_words().unwrap_or(("kernel", "kernels"));
    Ok(match copies {
        0 => (kernels, line),
        1 => (
            kernels + 1,
            format!("{line}, after 1 {one} joining keys stored in chunks"),
        ),
        n => (
            n + kernels,
            format!("{line}, after {n} {many} joining keys stored in chunks"),
        ),
    })
}

/// The copy kernels `Run::assemble` runs joining the stored chunks of `key` into one value.
fn joining_copies(limits: &PlanLimits, key: &NodeRef) -> Result<u64> {
    let offsets = key.chunk_offsets();
    // Each piece's rows; the slices stand for the stored chunks a copy binds.
    let mut pieces: Vec<(u64, u64)> = (offsets.windows(2))
        .map(|w| (w[0], w[1]))
        .filter(|(start, end)| end > start)
        .collect();
    let mut copies = 0;
    while pieces.len() > 1 {
        let stand_ins = (pieces.iter())
            .map(|&(start, end)| crate::ir::slice(key, start as f64, end as f64))
            .collect::<Result<Vec<_>>>()?;
        let joined = run::pieces_per_copy(limits, &stand_ins);
        // No copy joins two pieces here: `assemble` reports the limit when it runs.
        if joined < 2 {
            break;
        }
        let rows = (pieces[0].0, pieces[joined - 1].1);
        pieces.splice(0..joined, [rows]);
        copies += 1;
    }
    Ok(copies)
}

/// The kernels of a sort composed of split passes, counted over the plan it runs as.
fn describe_split_sort(device: &dyn CostModel, region: &Region) -> Result<(u64, String)> {
    let Op::SortPermutation { bits } = &region.root.op else {
        return Err(internal("a sort pass without a sort"));
    };
    // Planning looks only at the keys' shape: outputs with no chunks stand for them.
    let stand_ins = (region.root.inputs.iter())
        .map(|_| Output::new(device.core().id, Vec::new()))
        .collect();
    let sorted = region.sorted_key_indices();
    let limits = device.plan_limits();
    let (_, plan) = run::split_sort(&region.root.inputs, stand_ins, bits, &sorted, &limits)?;
    let bits: u32 = bits.iter().sum();
    let (_, kernels) = pass_kernels(device, &plan)?;
    let (one, many) = device.kernel_words().unwrap_or(("kernel", "kernels"));
    let word = if kernels == 1 { one } else { many };
    Ok((
        kernels,
        format!(
            "{kernels} {word} in {bits} one-bit split passes (scan, gather and scatter kernels)"
        ),
    ))
}
