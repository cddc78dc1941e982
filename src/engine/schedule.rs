//! An evaluation's schedule: its plan made explicit, once, as the executor will run it. Per
//! pass, its chunk tasks (row ranges), whether it submits the recorded work first, what it
//! frees after, a reduction's combine rounds, a sort's own split passes, and the device bytes
//! each task is projected to hold. The executor runs it (`run.rs`), the memory budget checks
//! its projection (`budget.rs`) and `explain` prints it, so the three cannot disagree.

use std::collections::{HashMap, HashSet};

use super::budget::{output_bytes, Ledger};
use super::{internal, CostModel};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, combine_rounds, NodeRef, Op};
use crate::plan::{plan_with, Fusion, Plan, PlanLimits, PlanOptions, Region};
use crate::value::Output;

pub struct Schedule {
    pub plan: Plan,
    /// One per region of the plan, in its order.
    pub passes: Vec<Pass>,
    /// Roots whose outputs are read back to the host as they are computed (larger than half
    /// of the budget).
    pub streamed: HashSet<u64>,
    /// Plan inputs copied whole onto the device before the first pass (the copies stay:
    /// later evaluations read them). Other inputs not on the device are copied a task's
    /// rows at a time.
    pub copied_whole: HashSet<u64>,
    /// `allowedMem` when the schedule was made.
    pub budget: Option<u64>,
}

pub struct Pass {
    pub tasks: Vec<Task>,
    /// Why the tasks are more than the pass's chunks, if they are.
    pub cut: Option<Cut>,
    /// The pass runs as one task whose output is cut into its root's chunks after (a leaf
    /// read both whole and at the row).
    pub cut_after: bool,
    /// The work recorded so far is submitted before the pass (it copies host rows): a
    /// device that keeps earlier passes' working arrays until a submit frees them first.
    pub submit_before: bool,
    /// Computed outputs no later pass and no root reads, freed after the pass.
    pub frees: Vec<u64>,
    /// A reduction's combine rounds: the partials left after each.
    pub rounds: Vec<u32>,
    /// A sort or a compaction the device runs as passes of other ops (a sort's one-bit
    /// split passes): their own schedule.
    pub composed: Option<Box<Composed>>,
}

/// One chunk task: rows `first..first + rows` of the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub first: u64,
    pub rows: u32,
    /// Device bytes the task is projected to hold while it runs (earlier results included).
    pub bytes: u64,
}

/// Why a pass's tasks are smaller than its chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// A chunk holds more rows than one of the device's bindings.
    Binding,
    /// A chunk's task would hold more than `allowedMem`: row-local work is cut into row
    /// ranges that fit.
    Budget,
}

/// A pass composed of other passes: the inputs it reads (stand-ins the executor gives the
/// stored inputs to), its roots (a sort's permutation, then each key its pass writes in
/// order; a compaction's kept rows) and their schedule.
pub struct Composed {
    pub inputs: Vec<NodeRef>,
    pub roots: Vec<NodeRef>,
    pub schedule: Schedule,
}

/// What the executor did, in order, as the schedule lists it (`Schedule::steps`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A pass began (its index in its schedule).
    Pass(usize),
    /// A chunk task ran over these rows.
    Task { first: u64, rows: u32 },
    /// A computed output was freed.
    Free(u64),
}

impl Schedule {
    /// The schedule of `plan` on `device`: `roots` are the evaluation's roots, `resident`
    /// says which plan inputs are on the device already (the caller's, not the
    /// evaluation's), `budget` is `allowedMem`.
    pub fn new(
        device: &dyn CostModel,
        plan: Plan,
        roots: &HashSet<u64>,
        resident: &dyn Fn(&NodeRef) -> bool,
        budget: Option<u64>,
    ) -> Result<Schedule> {
        // Roots larger than half the budget are read back as they are computed. Where a task
        // still does not fit, so are the roots held while it runs, the largest first, until
        // it does (a table's columns, each small, together too large): if none makes it fit,
        // the first schedule stands, refused by `check`.
        let mut read_back = HashSet::new();
        let mut made = projected(device, &plan, roots, resident, budget, &read_back)?;
        let fits = loop {
            let Some(over) = made.over else { break true };
            let held = (plan.regions[..over].iter())
                .map(|region| &region.root)
                .filter(|root| roots.contains(&root.id) && !made.streamed.contains(&root.id))
                .max_by_key(|root| output_bytes(device, root));
            let Some(root) = held else { break false };
            read_back.insert(root.id);
            made = projected(device, &plan, roots, resident, budget, &read_back)?;
        };
        if !fits && !read_back.is_empty() {
            made = projected(device, &plan, roots, resident, budget, &HashSet::new())?;
        }
        Ok(Schedule {
            passes: made.passes,
            streamed: made.streamed,
            copied_whole: made.copied_whole,
            budget,
            plan,
        })
    }

    /// The most any task is projected to hold.
    pub fn peak(&self) -> u64 {
        (self.passes.iter())
            .flat_map(|p| &p.tasks)
            .map(|t| t.bytes)
            .max()
            .unwrap_or(0)
    }

    /// `LIMIT_EXCEEDED` naming the first task over the budget and both numbers.
    pub fn check(&self) -> Result<()> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        for (index, (region, pass)) in self.plan.regions.iter().zip(&self.passes).enumerate() {
            if let Some((k, task)) = pass
                .tasks
                .iter()
                .enumerate()
                .find(|(_, t)| t.bytes > budget)
            {
                return Err(GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "chunk task {k} of pass {} (t{}) needs {} bytes of device memory; allowedMem is {budget}",
                        index + 1,
                        region.root.id,
                        task.bytes
                    ),
                ));
            }
        }
        Ok(())
    }

    /// What the executor runs, in order: each pass, its tasks (a composed pass's passes
    /// within its own), then what it frees.
    pub fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        for (index, pass) in self.passes.iter().enumerate() {
            steps.push(Step::Pass(index));
            match &pass.composed {
                Some(composed) => steps.extend(composed.schedule.steps()),
                None => steps.extend(pass.tasks.iter().map(|t| Step::Task {
                    first: t.first,
                    rows: t.rows,
                })),
            }
            steps.extend(pass.frees.iter().map(|&id| Step::Free(id)));
        }
        steps
    }
}

impl Composed {
    /// The split passes of the sort `region`, over stand-ins for its keys.
    fn split_sort(
        device: &dyn CostModel,
        region: &Region,
        limits: &PlanLimits,
    ) -> Result<Composed> {
        let Op::SortPermutation { bits, .. } = &region.root.op else {
            return Err(internal("a sort pass without a sort"));
        };
        let keys = stand_ins(device, region);
        let permutation = ir::split_permutation(&keys, bits)?;
        let mut roots = vec![permutation.clone()];
        for key in region.sorted_key_indices() {
            let key = keys
                .get(key)
                .ok_or_else(|| internal("a sorted key the sort does not have"))?;
            roots.push(ir::gather(&permutation, key)?);
        }
        Composed::new(device, keys, roots, limits, None, &|_| true)
    }

    /// The walk `region` as other ops' passes, over stand-ins for its inputs. A lookup's
    /// passes keep to `budget` themselves (its search is row-local work over the keys),
    /// bringing the inputs the pass would copy a task at a time (`copied`) as they go.
    fn walk(
        device: &dyn CostModel,
        region: &Region,
        limits: &PlanLimits,
        budget: Option<u64>,
        copied: &dyn Fn(&NodeRef) -> bool,
    ) -> Result<Composed> {
        let inputs = stand_ins(device, region);
        let output = ir::compose_walk(&region.root.op, &inputs)?;
        let budget = budget.filter(|_| region.root.op == Op::Lookup);
        // Other composed walks read their stand-ins as on the device, as before.
        let brought: HashSet<u64> = (inputs.iter().zip(&region.root.inputs))
            .filter(|(_, outer)| budget.is_some() && copied(outer))
            .map(|(stand_in, _)| stand_in.id)
            .collect();
        let resident = |node: &NodeRef| !brought.contains(&node.id);
        Composed::new(device, inputs, vec![output], limits, budget, &resident)
    }

    fn new(
        device: &dyn CostModel,
        inputs: Vec<NodeRef>,
        roots: Vec<NodeRef>,
        limits: &PlanLimits,
        budget: Option<u64>,
        resident: &dyn Fn(&NodeRef) -> bool,
    ) -> Result<Composed> {
        let plan = plan_with(
            &roots,
            &PlanOptions {
                fusion: Fusion::On,
                replan_roots: false,
                limits,
            },
        )?;
        let ids = roots.iter().map(|r| r.id).collect();
        let schedule = Schedule::new(device, plan, &ids, resident, budget)?;
        Ok(Composed {
            inputs,
            roots,
            schedule,
        })
    }
}

/// Stand-ins for the inputs of `region`: planning looks only at their shape; the executor
/// gives each its input's stored output before running the composed passes.
fn stand_ins(device: &dyn CostModel, region: &Region) -> Vec<NodeRef> {
    (region.root.inputs.iter())
        .map(|input| {
            let stand_in = Output::new(device.core().id, Vec::new());
            ir::computed(input.meta, input.chunks.clone(), stand_in)
        })
        .collect()
}

/// Whether the device runs the sort `region` with its own kernels.
pub(super) fn sorts_natively(device: &dyn CostModel, region: &Region) -> bool {
    device.sorts(region.root.meta.length, region.root.inputs.len())
}

/// Whether a pass's tasks may be cut into any row ranges: each computes its rows alone
/// (elementwise work, a reduction's partials, a scatter's writes). A leaf bound whole is
/// read at the row from its first row: tasks past the first would read the wrong rows, so a
/// pass reading a leaf both ways is never cut.
fn row_local(region: &Region) -> bool {
    !region.root.op.is_assembly()
        && !region.is_whole()
        && !region.reads_a_leaf_both_ways(&region.random_access_inputs())
}

/// The rows of each task a pass runs on `device` (`(first row, rows)`), why they are more
/// than its chunks, and whether it runs as one task whose output is cut into its chunks after
/// (a leaf read both whole and at the row). Chunks too large for one binding are cut into
/// parts that fit (stored as separate chunks of the output; a reduction folds each into a
/// partial of its own).
fn planned_tasks(device: &dyn CostModel, region: &Region) -> (Vec<(u64, u32)>, Option<Cut>, bool) {
    let chunks = match () {
        // A view's output chunks, each made of its inputs' rows; a sort reads its keys whole,
        // a compaction its flags.
        _ if region.root.op.is_assembly() => region.root.chunks.to_vec(),
        _ if region.is_whole() => vec![region.rows],
        _ => region.task_chunks(),
    };
    let random = region.random_access_inputs();
    // Not even at the binding size (see `row_local`).
    if !region.is_whole() && !region.root.op.is_assembly() && !row_local(region) {
        return (vec![(0, region.rows)], None, chunks.len() > 1);
    }
    let widest = (region.leaves.iter())
        .filter(|l| !l.meta.constant && !random.contains(&l.id))
        .map(|l| l.meta.size)
        .chain([region.root.meta.size])
        .max()
        .unwrap_or(1);
    let most = match row_local(region) {
        true => device.max_binding_rows(widest).map(|most| most.max(1)),
        false => None,
    };
    let mut tasks = Vec::with_capacity(chunks.len());
    let mut first = 0u64;
    for rows in chunks {
        let most = most.unwrap_or(u32::MAX);
        // An empty chunk is still one (empty) task.
        for k in 0..rows.div_ceil(most).max(1) {
            tasks.push((first + k as u64 * most as u64, (rows - k * most).min(most)));
        }
        first += rows as u64;
    }
    let cut = (tasks.len() > region.task_chunks().len()).then_some(Cut::Binding);
    (tasks, cut, false)
}

/// A schedule's passes, projected with roots `read_back` read back as they are computed.
struct Projected {
    passes: Vec<Pass>,
    streamed: HashSet<u64>,
    copied_whole: HashSet<u64>,
    /// The first pass with a task over the budget.
    over: Option<usize>,
}

#[inline(never)] // called three times by `Schedule::new`: one copy
fn projected(
    device: &dyn CostModel,
    plan: &Plan,
    roots: &HashSet<u64>,
    resident: &dyn Fn(&NodeRef) -> bool,
    budget: Option<u64>,
    read_back: &HashSet<u64>,
) -> Result<Projected> {
    let ledger = Ledger::new(device, plan, roots, resident, budget, read_back);
    let frees = last_uses(plan, roots);
    let limits = device.plan_limits();
    let mut passes = Vec::with_capacity(plan.regions.len());
    let mut kept_scratch = 0u64;
    for (index, (region, frees)) in plan.regions.iter().zip(frees).enumerate() {
        let submit_before =
            (region.leaves.iter()).any(|leaf| !leaf.meta.constant && ledger.copied_per_task(leaf));
        if submit_before {
            // The submit frees the working arrays kept for earlier passes.
            kept_scratch = 0;
        }
        let composed = match () {
            _ if region.is_sort() && !sorts_natively(device, region) => {
                Some(Box::new(Composed::split_sort(device, region, &limits)?))
            }
            _ if region.is_walk() && !device.walks(&region.root) => {
                let copied = |input: &NodeRef| ledger.copied_per_task(input);
                let walk = Composed::walk(device, region, &limits, budget, &copied)?;
                Some(Box::new(walk))
            }
            _ => None,
        };
        let (mut tasks, mut cut, cut_after) = planned_tasks(device, region);
        let extra = ledger.held_before(index).saturating_add(kept_scratch);
        let mut bytes = ledger.pass_bytes(region, &tasks, cut_after, extra);
        if let Some(composed) = &composed {
            let inner = composed.schedule.peak();
            bytes = match composed.schedule.budget {
                // A composed lookup's own schedule keeps to the budget: its keys are
                // looked up (and brought from the host) a part at a time and its rows
                // streamed back, as other row-local work.
                Some(_) => vec![extra.saturating_add(inner); tasks.len()],
                None => ledger.composed_bytes(region, &tasks, extra, inner, bytes),
            };
        }
        if let Some(budget) = budget {
            if row_local(region) && bytes.iter().any(|&b| b > budget) {
                if let Some(fitted) = ledger.fit(region, &tasks, extra, budget) {
                    tasks = fitted;
                    cut = Some(Cut::Budget);
                    bytes = ledger.pass_bytes(region, &tasks, cut_after, extra);
                }
            }
        }
        if device.keeps_scratch_until_flush() {
            kept_scratch = kept_scratch.saturating_add(ledger.scratch_bytes(region, &tasks));
        }
        match () {
            _ if region.is_walk() => ledger.record_walk(region, device.walks(&region.root)),
            // One output of the bins, whatever the tasks.
            _ if region.adds_to_bins => {}
            _ => ledger.record_tasks(region, &tasks),
        }
        let rounds = match ir::Reduction::of(&region.root) {
            Some(reduction) => combine_rounds(tasks.len() as u32, reduction.split_every),
            None => Vec::new(),
        };
        let tasks = (tasks.into_iter().zip(bytes))
            .map(|((first, rows), bytes)| Task { first, rows, bytes })
            .collect();
        passes.push(Pass {
            tasks,
            cut,
            cut_after,
            submit_before,
            frees,
            rounds,
            composed,
        });
    }
    let over = budget
        .and_then(|budget| (passes.iter()).position(|p| p.tasks.iter().any(|t| t.bytes > budget)));
    Ok(Projected {
        passes,
        over,
        streamed: ledger.streamed,
        copied_whole: ledger.copied_whole,
    })
}

/// Per pass, the computed outputs no later pass (and no root) reads: freed after it.
fn last_uses(plan: &Plan, roots: &HashSet<u64>) -> Vec<Vec<u64>> {
    let computed = plan.computed_ids();
    let mut last: HashMap<u64, usize> = HashMap::new();
    for (index, region) in plan.regions.iter().enumerate() {
        for leaf in &region.leaves {
            if computed.contains(&leaf.id) {
                last.insert(leaf.id, index);
            }
        }
    }
    let mut freed = vec![Vec::new(); plan.regions.len()];
    // An output no later pass reads (a sort's permutation when its pass also wrote the
    // only keys read through it) is freed after its own pass.
    for (index, region) in plan.regions.iter().enumerate() {
        for output in region.outputs() {
            if !last.contains_key(&output.id) && !roots.contains(&output.id) {
                freed[index].push(output.id);
            }
        }
    }
    let mut last: Vec<(u64, usize)> = last.into_iter().collect();
    // In a fixed order, so the executor's steps can be compared with the schedule's.
    crate::heap_sort::heap_sort(&mut last);
    for (id, index) in last {
        if !roots.contains(&id) {
            freed[index].push(id);
        }
    }
    freed
}

/// The schedule of `roots` on `device` as if they had not run, for `explain`: `resident`
/// says which plan inputs take no new storage there.
pub(super) fn of_roots(
    device: &dyn CostModel,
    roots: &[NodeRef],
    replan_roots: bool,
    resident: &dyn Fn(&NodeRef) -> bool,
) -> Result<Schedule> {
    let limits = device.plan_limits();
    let plan = plan_with(
        roots,
        &PlanOptions {
            fusion: Fusion::On,
            replan_roots,
            limits: &limits,
        },
    )?;
    let ids = roots.iter().map(|r| r.id).collect();
    Schedule::new(
        device,
        plan,
        &ids,
        resident,
        device.core().allowed_mem.get(),
    )
}
