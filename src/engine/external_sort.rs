//! A sort larger than `allowedMem` (api.md "Memory"): runs that fit are sorted on the device,
//! then merged. Its keys are computed first and kept on the host; each run of rows is sorted
//! on the device and read back with its keys; then one merge pass: the host cuts the sorted
//! runs at each block of the final order (a multi-sequence selection), and the device sorts
//! each block's slices of the runs, which, joined in run order, hold exactly that block's
//! rows (a stable sort keeps equal keys in row order, as the runs are in row order). The
//! gathers through the sort's permutation (sorted values, their null flags, a topK's rows)
//! travel with the runs, so nothing reads a column larger than the budget at random.
//!
//! Everything is projected before any kernel runs: the keys' evaluation, a run's and a
//! merge block's graphs (over stand-ins of their inputs) and the rest of the evaluation
//! with the sort's results standing in as host values.

use std::collections::HashSet;
use std::fmt::Write;
use std::rc::Rc;

use super::{internal, resident_on, schedule_for, Backend, CostModel};
use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, key_mask, BinaryOp, Meta, NodeRef, Op};
use crate::plan::Fusion;
use crate::value::{Output, Value, HOST};

/// One sort run as runs and a merge pass.
pub(super) struct ExternalSort {
    sort: NodeRef,
    bits: Vec<u32>,
    /// Rows of the order anything reads (a topK's k): runs keep and blocks merge only these.
    ordered: u32,
    /// Gathers through the permutation (or through its first rows), computed along.
    carried: Vec<Carried>,
    run_rows: u32,
    runs: u32,
    blocks: u32,
    run_peak: u64,
    merge_peak: u64,
    /// Under `allowedMem` (else the sort is only longer than one pass sorts): its computed
    /// keys wait on the host.
    budgeted: bool,
    /// Device bytes the keys' evaluation is projected to hold, and those its computed keys
    /// and carried columns hold while the runs and merges run (none under a budget: they
    /// wait on the host).
    keys_peak: u64,
    held: u64,
    /// The keys and carried columns not computed yet: computed first, released after.
    computed: Vec<NodeRef>,
}

struct Carried {
    gather: NodeRef,
    source: NodeRef,
}

/// Outputs standing in for results the external sorts will compute, attached while the rest
/// is planned and removed when this is dropped.
pub(super) struct StandIns {
    nodes: Vec<NodeRef>,
    /// Ids of the stand-ins: host values, wherever the device reads those.
    ids: HashSet<u64>,
    /// Whether the device reads host values in place, asked once a stand-in is planned
    /// (an evaluation with no sort in runs never asks).
    host_in_place: std::cell::OnceCell<bool>,
}

impl StandIns {
    pub(super) fn new() -> StandIns {
        StandIns {
            nodes: Vec::new(),
            ids: HashSet::new(),
            host_in_place: std::cell::OnceCell::new(),
        }
    }

    /// Gives `node` (without an output) an empty host output until this is dropped.
    pub(super) fn attach(&mut self, node: &NodeRef) {
        if !node.has_output() {
            node.add_output(Output::new(HOST, Vec::new()));
            self.nodes.push(node.clone());
        }
        self.ids.insert(node.id);
    }

    /// A new plan input of `meta`'s shape in host memory (for projections).
    fn host_leaf(&mut self, meta: Meta, chunks: ir::Chunks) -> NodeRef {
        let leaf = ir::computed(meta, chunks, Output::new(HOST, Vec::new()));
        self.ids.insert(leaf.id);
        leaf
    }

    /// Whether `leaf` takes no new storage on `device` (see `resident_on`).
    pub fn resident(&self, device: &dyn CostModel, leaf: &NodeRef) -> bool {
        match self.ids.contains(&leaf.id) {
            true => *self.host_in_place.get_or_init(|| {
                let probe = Column::new(ColumnData::U32(vec![0]), 1);
                probe.is_ok_and(|c| device.reads_in_place(&Value::host(c)))
            }),
            false => resident_on(device, leaf),
        }
    }

    /// Whether `node` is a result an external sort computes.
    pub fn settles(&self, node: &NodeRef) -> bool {
        self.ids.contains(&node.id)
    }
}

impl Drop for StandIns {
    fn drop(&mut self) {
        for node in &self.nodes {
            node.release_output();
        }
    }
}

/// The sorts among `roots`' pending work larger than `allowedMem` or than the device sorts
/// in one pass (past one storage binding or texture tile), in the order they run, each
/// planned as runs and a merge; the stand-ins for their results stay attached while the
/// returned guard lives. `replan_roots` plans roots that have an output as if they had none
/// (`explain`). LIMIT_EXCEEDED, before anything runs, where a run, a merge block, the keys or
/// the rest of the evaluation cannot fit.
pub(super) fn plan(
    device: &dyn CostModel,
    roots: &[NodeRef],
    replan_roots: bool,
) -> Result<(Vec<ExternalSort>, StandIns)> {
    let mut stand_ins = StandIns::new();
    let mut sorts = Vec::new();
    let budget = device.core().allowed_mem.get();
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    loop {
        let pending = |n: &NodeRef| {
            !stand_ins.settles(n)
                && (!n.has_output() || (replan_roots && root_ids.contains(&n.id) && !n.is_source()))
        };
        let order = ir::topological_order_with(roots, &|n| !pending(n));
        // Whether a pending sort runs in runs: past what the device sorts in one pass, where
        // runs of fewer rows are (a WebGL2 sort of more keys than its merge passes carry
        // runs as split passes), or over the budget.
        let in_runs = |node: &NodeRef, stand_ins: &StandIns| -> Result<bool> {
            let Op::SortPermutation { .. } = node.op else {
                return Ok(false);
            };
            if node.counted().is_some() {
                return Ok(false);
            }
            let keys = node.inputs.len();
            let too_long = !device.sorts(node.meta.length, keys) && device.sorts(2, keys);
            Ok(too_long
                || match budget {
                    Some(budget) => peak(device, stand_ins, std::slice::from_ref(node))? > budget,
                    None => false,
                })
        };
        let mut found = None;
        for node in order.iter().filter(|n| pending(n)) {
            if in_runs(node, &stand_ins)? {
                found = Some(node.clone());
                break;
            }
        }
        let Some(mut sort) = found else {
            break;
        };
        // A column gathered through it that waits on another sort in runs: that sort first,
        // so the gather travels with this one's runs once its column stands in.
        // (Each sort once: two sorts whose gathers wait on each other keep this one.)
        let mut seen = vec![sort.id];
        'waiting: loop {
            for carried in carried_gathers(&sort, &order) {
                let waits = ir::topological_order(std::slice::from_ref(&carried.source));
                for node in waits.iter().filter(|n| !seen.contains(&n.id) && pending(n)) {
                    if in_runs(node, &stand_ins)? {
                        seen.push(node.id);
                        sort = node.clone();
                        continue 'waiting;
                    }
                }
            }
            break;
        }
        let external = ExternalSort::plan(device, &mut stand_ins, &sort, &order, budget)?;
        stand_ins.attach(&sort);
        for carried in &external.carried {
            stand_ins.attach(&carried.gather);
        }
        sorts.push(external);
    }
    if !sorts.is_empty() {
        let rest: Vec<NodeRef> = (roots.iter())
            .filter(|r| !stand_ins.settles(r))
            .cloned()
            .collect();
        let resident = |leaf: &NodeRef| stand_ins.resident(device, leaf);
        if let Some((_, schedule)) = schedule_for(device, &rest, Fusion::On, &resident)? {
            schedule.check()?;
        }
    }
    Ok((sorts, stand_ins))
}

/// Where a batch's row numbers come from: a run's first row, or a merge block's column.
enum Rows<'a> {
    From(u32),
    Column(&'a NodeRef),
}

/// The device graph of one batch (a run or a merge block): the permutation sorting `keys`,
/// and through it the batch's rows in the whole input, the keys (`with_keys`) and each
/// payload.
fn batch_roots(
    keys: &[NodeRef],
    bits: &[u32],
    ordered: u32,
    rows: Rows,
    payloads: &[NodeRef],
    with_keys: bool,
) -> Result<Vec<NodeRef>> {
    let perm = ir::sort_node_ordering(keys, bits.to_vec(), ordered)?;
    let mut roots = vec![match rows {
        Rows::From(first) => ir::binary(BinaryOp::Add, &perm, &ir::u32_constant(first)?)?,
        Rows::Column(rows) => ir::gather_plain(&perm, rows)?,
    }];
    if with_keys {
        for key in keys {
            roots.push(ir::gather_plain(&perm, key)?);
        }
    }
    for payload in payloads {
        roots.push(ir::gather_plain(&perm, payload)?);
    }
    Ok(roots)
}

impl ExternalSort {
    fn plan(
        device: &dyn CostModel,
        stand_ins: &mut StandIns,
        sort: &NodeRef,
        order: &[NodeRef],
        budget: Option<u64>,
    ) -> Result<ExternalSort> {
        let Op::SortPermutation { bits, ordered_rows } = &sort.op else {
            return Err(internal("an external sort without a sort"));
        };
        let rows = sort.meta.length;
        if let Some(key) = sort.inputs.iter().find(|k| k.meta.dtype != DType::U32) {
            return Err(internal(format!("a sort key of {}", key.meta.dtype.name())));
        }
        let carried = carried_gathers(sort, order);
        // The keys and carried columns as they will be: host values (computed ones are read
        // back), or where they are already.
        let mut computed = Vec::new();
        let stand_in = |node: &NodeRef, stand_ins: &mut StandIns| match node.has_output() {
            true => node.clone(),
            false => stand_ins.host_leaf(node.meta, node.chunks.clone()),
        };
        let keys: Vec<NodeRef> = (sort.inputs.iter())
            .map(|k| stand_in(k, stand_ins))
            .collect();
        let sources: Vec<NodeRef> = (carried.iter())
            .map(|c| stand_in(&c.source, stand_ins))
            .collect();
        for node in sort.inputs.iter().chain(carried.iter().map(|c| &c.source)) {
            if !node.has_output() && !computed.iter().any(|c: &NodeRef| c.id == node.id) {
                computed.push(node.clone());
            }
        }
        let resident = |leaf: &NodeRef| stand_ins.resident(device, leaf);
        let mut keys_peak = 0;
        if let Some((_, schedule)) = schedule_for(device, &computed, Fusion::On, &resident)? {
            schedule.check()?;
            keys_peak = schedule.peak();
        }
        let held = match budget {
            Some(_) => 0,
            None => (computed.iter())
                .flat_map(|n| n.chunks.iter().map(move |&rows| (n, rows)))
                .map(|(n, rows)| device.value_bytes(n.meta.dtype, n.meta.size, rows))
                .sum(),
        };
        // Run `index` of `run_rows` rows.
        let run_at = |run_rows: u32, index: u32, stand_ins: &StandIns| {
            let first = index * run_rows;
            let end = first.saturating_add(run_rows).min(rows);
            let slice = |n: &NodeRef| ir::slice(n, first as f64, end as f64);
            let keys = keys.iter().map(slice).collect::<Result<Vec<_>>>()?;
            let payloads = sources.iter().map(slice).collect::<Result<Vec<_>>>()?;
            let roots = batch_roots(&keys, bits, end - first, Rows::From(first), &payloads, true)?;
            peak(device, stand_ins, &roots)
        };
        let merge = |block_rows: u32, stand_ins: &mut StandIns| -> Result<u64> {
            let chunks = ir::single_chunk(block_rows);
            let meta = |node: &NodeRef| Meta {
                length: block_rows,
                constant: false,
                ..node.meta
            };
            let keys: Vec<NodeRef> = (keys.iter())
                .map(|k| stand_ins.host_leaf(meta(k), chunks.clone()))
                .collect();
            let row_numbers = stand_ins.host_leaf(meta(&keys[0]), chunks.clone());
            let payloads: Vec<NodeRef> = (sources.iter())
                .map(|s| stand_ins.host_leaf(meta(s), chunks.clone()))
                .collect();
            let rows = Rows::Column(&row_numbers);
            let roots = batch_roots(&keys, bits, block_rows, rows, &payloads, false)?;
            peak(device, stand_ins, &roots)
        };
        // The most rows a run (and a merge block) may hold: the device sorts them in one
        // pass, and the budget's bytes grow with them.
        let key_count = sort.inputs.len();
        let fits_rows = |r: u32, s: &mut StandIns| -> Result<bool> {
            Ok(device.sorts(r, key_count)
                && match budget {
                    Some(budget) => run_at(r, 0, s)? <= budget && merge(r, s)? <= budget,
                    None => true,
                })
        };
        let (mut lo, mut hi) = (0u32, rows);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match fits_rows(mid, stand_ins)? {
                true => lo = mid,
                false => hi = mid,
            }
        }
        // Every run as it will be cut from the keys' chunks (a run across a chunk's end
        // holds a copy joining its parts): while one is over the budget, an eighth fewer rows.
        let mut run_peak = 0;
        while let (Some(budget), true) = (budget, lo > 0) {
            // Runs differ only where one crosses a key's chunk boundary, and the last.
            let mut indices: Vec<u32> = vec![0, (rows - 1) / lo];
            for key in &keys {
                let offsets = key.chunk_offsets();
                indices.extend(
                    offsets
                        .iter()
                        .map(|&o| (o.min(rows as u64 - 1) / lo as u64) as u32),
                );
            }
            crate::heap_sort::heap_sort(&mut indices);
            indices.dedup();
            run_peak = 0;
            for index in indices {
                run_peak = run_peak.max(run_at(lo, index, stand_ins)?);
            }
            if run_peak.max(merge(lo, stand_ins)?) <= budget {
                break;
            }
            lo -= lo.div_ceil(8);
        }
        if lo == 0 {
            let budget = budget.map_or("no allowedMem".into(), |b| format!("allowedMem {b}"));
            return Err(GpuTableError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the sort of {rows} rows (t{}) does not fit {budget} even in runs of one row",
                    sort.id
                ),
            ));
        }
        if budget.is_none() {
            run_peak = run_at(lo, 0, stand_ins)?;
        }
        let ordered = (*ordered_rows).min(rows);
        Ok(ExternalSort {
            sort: sort.clone(),
            bits: bits.clone(),
            ordered,
            carried,
            run_rows: lo,
            runs: rows.div_ceil(lo),
            blocks: ordered.div_ceil(lo),
            run_peak,
            merge_peak: merge(lo, stand_ins)?,
            budgeted: budget.is_some(),
            keys_peak,
            held,
            computed,
        })
    }

    /// The most device bytes the sort is projected to hold.
    pub fn peak(&self) -> u64 {
        let batches = self.run_peak.max(self.merge_peak);
        self.keys_peak.max(self.held.saturating_add(batches))
    }

    /// A line for `explain`.
    pub fn describe(&self, text: &mut String) {
        let (rows, id) = (self.sort.meta.length, self.sort.id);
        let _ = writeln!(
            text,
            "external sort t{id} ({rows} rows, {}): {} runs of up to {} rows sorted on the device (at most {} bytes each); then one merge pass of {} blocks of up to {} rows, the slices of the runs each block takes sorted on the device (at most {} bytes each){}",
            match self.budgeted {
                true => "more than allowedMem holds at once; its keys computed and kept on the host",
                false => "more than this device sorts in one pass",
            },
            self.runs,
            self.run_rows,
            self.run_peak,
            self.blocks,
            self.run_rows,
            self.merge_peak,
            match self.carried.len() {
                0 => String::new(),
                n => format!("; {n} gathers through its order carried along"),
            }
        );
    }

    /// Runs the sort: keys, runs, the merge pass; then its permutation and the carried
    /// gathers hold their results on the host. `roots` (the evaluation's) keep what they
    /// computed.
    pub async fn run(&self, device: &dyn Backend, roots: &HashSet<u64>) -> Result<()> {
        let result = self.sort_in_runs(device).await;
        // The keys and carried columns computed for it, succeeded or not.
        for node in &self.computed {
            if !roots.contains(&node.id) {
                node.release_output();
            }
        }
        result
    }

    async fn sort_in_runs(&self, device: &dyn Backend) -> Result<()> {
        let rows = self.sort.meta.length;
        let keys: Vec<NodeRef> = self.sort.inputs.to_vec();
        let sources: Vec<NodeRef> = self.carried.iter().map(|c| c.source.clone()).collect();
        crate::engine::evaluate(device, &self.computed).await?;
        if self.budgeted {
            for node in &self.computed {
                to_host(node).await?;
            }
        }
        // A topK of no rows reads none.
        let runs_needed = if self.ordered == 0 { 0 } else { self.runs };
        let mut runs = Vec::with_capacity(runs_needed as usize);
        for index in 0..runs_needed {
            let first = index * self.run_rows;
            let end = first.saturating_add(self.run_rows).min(rows);
            let slice = |n: &NodeRef| ir::slice(n, first as f64, end as f64);
            let run_keys = keys.iter().map(slice).collect::<Result<Vec<_>>>()?;
            let payloads = sources.iter().map(slice).collect::<Result<Vec<_>>>()?;
            let kept = self.ordered.min(end - first);
            let batch = batch_roots(
                &run_keys,
                &self.bits,
                kept,
                Rows::From(first),
                &payloads,
                true,
            )?;
            let columns = sorted_batch(device, &batch, kept).await?;
            runs.push(SortedRun::new(columns, keys.len())?);
        }
        let masks: Vec<u32> = self.bits.iter().map(|&b| key_mask(b)).collect();
        let mut order = Column::empty(DType::U32, 1)?;
        order.reserve_rows(rows)?;
        let mut carried: Vec<Column> = (self.carried.iter())
            .map(|c| {
                let mut column = Column::empty(c.source.meta.dtype, c.source.meta.size)?;
                column.reserve_rows(c.gather.meta.length)?;
                Ok(column)
            })
            .collect::<Result<_>>()?;
        let mut from = vec![0u32; runs.len()];
        let mut done = 0u32;
        while done < self.ordered {
            let end = done.saturating_add(self.run_rows).min(self.ordered);
            let to = cuts(&runs, &masks, &from, end as u64);
            // A block's column: each run's rows `from..to` of one of its columns, in run order.
            let take = |part: &dyn Fn(&SortedRun, u32, u32) -> Result<ColumnData>,
                        (dtype, size): (DType, u32)|
             -> Result<NodeRef> {
                let mut joined = Column::empty(dtype, size)?;
                joined.reserve_rows(end - done)?;
                for (run, (&a, &b)) in runs.iter().zip(from.iter().zip(&to)) {
                    joined.append(&part(run, a, b)?)?;
                }
                ir::source(joined.data, size, false)
            };
            let words =
                |w: &[u32], a: u32, b: u32| Ok(ColumnData::U32(w[a as usize..b as usize].to_vec()));
            let block_keys = (0..keys.len())
                .map(|k| take(&|run, a, b| words(&run.keys[k], a, b), (DType::U32, 1)))
                .collect::<Result<Vec<_>>>()?;
            let row_numbers = take(&|run, a, b| words(&run.rows, a, b), (DType::U32, 1))?;
            let payloads = (sources.iter().enumerate())
                .map(|(p, s)| {
                    let part = |run: &SortedRun, a, b| run.payloads[p].slice_rows(a, b);
                    take(&part, (s.meta.dtype, s.meta.size))
                })
                .collect::<Result<Vec<_>>>()?;
            let rows_in = Rows::Column(&row_numbers);
            let batch = batch_roots(
                &block_keys,
                &self.bits,
                end - done,
                rows_in,
                &payloads,
                false,
            )?;
            let mut columns = sorted_batch(device, &batch, end - done).await?.into_iter();
            for column in std::iter::once(&mut order).chain(carried.iter_mut()) {
                let part = columns
                    .next()
                    .ok_or_else(|| internal("a merge block left no rows"))?;
                column.append(&part.data)?;
            }
            from = to;
            done = end;
        }
        drop(runs);
        // Rows past those the order's readers read: never read.
        order.append_zero_rows(rows - self.ordered)?;
        let here = device.core().id;
        settle(&self.sort, order, here)?;
        // A carried gather's rows (a topK's k): the merged rows, or zeros past them.
        for (c, mut column) in self.carried.iter().zip(carried) {
            let rows = c.gather.meta.length;
            let column = match rows.cmp(&column.rows) {
                std::cmp::Ordering::Less => Column::new(column.slice_rows(0, rows)?, column.size)?,
                _ => {
                    column.append_zero_rows(rows - column.rows)?;
                    column
                }
            };
            settle(&c.gather, column, here)?;
        }
        Ok(())
    }

    /// The results this sort settled: released after the evaluation unless it returns them.
    pub fn results(&self) -> impl Iterator<Item = &NodeRef> {
        std::iter::once(&self.sort).chain(self.carried.iter().map(|c| &c.gather))
    }
}

/// The gathers through `sort`'s permutation, or through its first rows, of columns as long
/// as it, that `order` (the pending work) computes.
fn carried_gathers(sort: &NodeRef, order: &[NodeRef]) -> Vec<Carried> {
    let rows = sort.meta.length;
    let through = |ids: &NodeRef| {
        ids.id == sort.id
            || (matches!(ids.op, Op::Slice { start: 0 })
                && ids.counted().is_none()
                && ids.inputs[0].id == sort.id)
    };
    (order.iter())
        .filter(|node| node.op == Op::Gather && !node.has_output() && node.counted().is_none())
        .filter(|node| through(&node.inputs[0]))
        .filter(|node| {
            let source = &node.inputs[1];
            source.meta.length == rows && !source.meta.constant && source.counted().is_none()
        })
        // A source that waits on this sort is read after it.
        .filter(|node| {
            let waits = ir::topological_order(std::slice::from_ref(&node.inputs[1]));
            !waits.iter().any(|n| n.id == sort.id)
        })
        .map(|node| Carried {
            gather: node.clone(),
            source: node.inputs[1].clone(),
        })
        .collect()
}

/// The most device bytes the schedule of `roots` holds in any task.
fn peak(device: &dyn CostModel, stand_ins: &StandIns, roots: &[NodeRef]) -> Result<u64> {
    let resident = |leaf: &NodeRef| stand_ins.resident(device, leaf);
    Ok(match schedule_for(device, roots, Fusion::On, &resident)? {
        Some((_, schedule)) => schedule.peak(),
        None => 0,
    })
}

/// Moves a computed node's output to the host (it is read by later evaluations a task's
/// rows at a time, and holds no device memory meanwhile).
async fn to_host(node: &NodeRef) -> Result<()> {
    let home = node
        .home()
        .ok_or_else(|| internal(format!("t{} was not computed", node.id)))?;
    if home.device == HOST {
        return Ok(());
    }
    let columns = super::read_whole_output(&home).await?;
    let chunks = columns
        .into_iter()
        .map(|c| Rc::new(Value::host(c)))
        .collect();
    node.replace_outputs(Output::new(HOST, chunks));
    Ok(())
}

/// Evaluates a batch's roots and reads the first `rows` rows of each, as host columns.
async fn sorted_batch(device: &dyn Backend, batch: &[NodeRef], rows: u32) -> Result<Vec<Column>> {
    crate::engine::evaluate(device, batch).await?;
    let mut columns = Vec::with_capacity(batch.len());
    for node in batch {
        let home = node
            .home()
            .ok_or_else(|| internal(format!("t{} was not computed", node.id)))?;
        let data = super::read_rows(&home, 0, rows).await?;
        columns.push(Column::new(data, node.meta.size)?);
    }
    Ok(columns)
}

/// Gives `node` (one chunk: a permutation, and gathers through it or its first rows)
/// `column` as its output in host memory; the device `here` computed it.
fn settle(node: &NodeRef, column: Column, here: u32) -> Result<()> {
    if node.chunks.len() != 1 {
        return Err(internal("a sort's result in more than one chunk"));
    }
    node.add_output(Output::new(HOST, vec![Rc::new(Value::host(column))]));
    node.materialize_on(here);
    Ok(())
}

/// One sorted run on the host, in the run's order: its rows' numbers in the whole input,
/// its keys and its payloads.
struct SortedRun {
    rows: Vec<u32>,
    keys: Vec<Vec<u32>>,
    payloads: Vec<Column>,
}

impl SortedRun {
    /// A run from its batch's columns: the row numbers, the keys, then the payloads.
    fn new(columns: Vec<Column>, keys: usize) -> Result<SortedRun> {
        let mut columns = columns.into_iter();
        let mut words = || match columns.next().map(|c| c.data) {
            Some(ColumnData::U32(words)) => Ok(words),
            _ => Err(internal("a sorted run's keys are not uint32")),
        };
        let rows = words()?;
        let keys = (0..keys).map(|_| words()).collect::<Result<_>>()?;
        Ok(SortedRun {
            rows,
            keys,
            payloads: columns.collect(),
        })
    }

    fn len(&self) -> u32 {
        self.rows.len() as u32
    }
}

/// The merged order of `(run, row)` against `(other run, row)`: the keys' masked bits in
/// turn, then the row in the whole input (the order is stable).
fn compare(
    runs: &[SortedRun],
    masks: &[u32],
    a: (usize, u32),
    b: (usize, u32),
) -> std::cmp::Ordering {
    let (ra, rb) = (&runs[a.0], &runs[b.0]);
    let (ia, ib) = (a.1 as usize, b.1 as usize);
    for (k, &mask) in masks.iter().enumerate() {
        let order = (ra.keys[k][ia] & mask).cmp(&(rb.keys[k][ib] & mask));
        if order.is_ne() {
            return order;
        }
    }
    ra.rows[ia].cmp(&rb.rows[ib])
}

/// Per run, how many of its first rows are among the first `p` rows of the merged order
/// (at least `from`, the cuts of fewer rows): a multi-sequence selection. Each round takes the weighted median of the runs' middle rows
/// still in doubt as a pivot and counts the rows before it in every run (a binary search
/// each); at least a quarter of the rows in doubt are settled a round.
fn cuts(runs: &[SortedRun], masks: &[u32], from: &[u32], p: u64) -> Vec<u32> {
    // The cuts of an earlier block bound these from below.
    let mut lo = from.to_vec();
    let mut hi: Vec<u32> = runs.iter().map(SortedRun::len).collect();
    loop {
        let mut middles: Vec<(usize, u32, u64)> = (0..runs.len())
            .filter(|&i| lo[i] < hi[i])
            .map(|i| (i, lo[i] + (hi[i] - lo[i]) / 2, (hi[i] - lo[i]) as u64))
            .collect();
        if middles.is_empty() {
            return lo;
        }
        // Insertion sort: few runs, and no sort routine instantiated for this alone.
        for i in 1..middles.len() {
            let mut k = i;
            while k > 0
                && compare(
                    runs,
                    masks,
                    (middles[k].0, middles[k].1),
                    (middles[k - 1].0, middles[k - 1].1),
                )
                .is_lt()
            {
                middles.swap(k, k - 1);
                k -= 1;
            }
        }
        let weight: u64 = middles.iter().map(|m| m.2).sum();
        let mut seen = 0u64;
        let &(j, m, _) = middles
            .iter()
            .find(|mid| {
                seen += mid.2;
                2 * seen >= weight
            })
            .unwrap_or(&middles[0]);
        let below: Vec<u32> = (0..runs.len())
            .map(|i| match i == j {
                true => m,
                false => {
                    let (mut a, mut b) = (0u32, runs[i].len());
                    while a < b {
                        let mid = a + (b - a) / 2;
                        match compare(runs, masks, (i, mid), (j, m)).is_lt() {
                            true => a = mid + 1,
                            false => b = mid,
                        }
                    }
                    a
                }
            })
            .collect();
        let before: u64 = below.iter().map(|&b| b as u64).sum();
        if before < p {
            // The pivot and every row before it are among the first p.
            for i in 0..runs.len() {
                lo[i] = lo[i].max(below[i]);
            }
            lo[j] = lo[j].max(m + 1);
        } else {
            for i in 0..runs.len() {
                hi[i] = hi[i].min(below[i]);
            }
        }
    }
}
