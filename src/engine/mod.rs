//! The one executor every device runs: it plans a graph and makes the plan, once, an explicit
//! schedule (`schedule.rs`: tasks, copies, submits, frees and projected memory), which the
//! memory budget checks (`budget.rs`), `explain` prints and the executor runs (`run.rs`):
//! the plan's inputs brought onto the device (read in place where they already are, copied
//! once otherwise), the passes through the device's capabilities (`backend.rs`), each
//! intermediate freed after its last use, and the roots' outputs left on the device until
//! someone reads them.

mod backend;
pub mod budget;
mod explain;
mod external_sort;
mod lost;
mod queue;
mod run;
mod schedule;
mod staged_filter;
mod staged_group;
mod staged_scan;

pub use backend::*;
pub use explain::explain;
use external_sort::StandIns;
use run::Run;
pub use schedule::{Cut, Pass, Schedule, Step, Task};

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{Check, NodeRef};
use crate::plan::{plan_with, Fusion, Plan, PlanOptions};
use crate::value::{DeviceStorage, Output, Reading, RowSink, Storage, Value};
pub use lost::LostFlag;
pub use queue::{Turn, Turnstile};

/// Evaluates `roots` on `device`, leaving each root's output there (and its null flags').
/// Roots that have an output already are left alone (a second evaluation does no work).
/// (Boxed: the evaluations of parts that group-bys and sorts larger than `allowedMem` run
/// come back here.)
pub fn evaluate<'a>(device: &'a dyn Backend, roots: &'a [NodeRef]) -> Pending<'a, ()> {
    Box::pin(evaluate_with(device, roots, Fusion::On))
}

/// `evaluate`, blocking (native only).
#[cfg(not(target_arch = "wasm32"))]
pub fn evaluate_blocking(device: &dyn Backend, roots: &[NodeRef]) -> Result<()> {
    pollster::block_on(evaluate(device, roots))
}

/// `evaluate`, with every node materialized when `fusion` is off (the reference that tests
/// "fusion never changes a result").
pub async fn evaluate_with(device: &dyn Backend, roots: &[NodeRef], fusion: Fusion) -> Result<()> {
    let roots = &evaluated_with(device, roots)?;
    let (checks, fresh, all) = checks_of(roots);
    run(device, &all, fusion, None).await?;
    run_checks(checks, fresh).await?;
    settle_counts(roots).await
}

/// Reads back the counts of the roots whose rows are counted on the device (4 bytes a
/// chunk), which set their length: the only read an evaluation makes of them.
async fn settle_counts(roots: &[NodeRef]) -> Result<()> {
    let mut read: HashMap<u64, crate::ir::Chunks> = HashMap::new();
    for root in roots {
        let Some(counted) = root.counted() else {
            continue;
        };
        if root.settled().is_some() {
            continue;
        }
        let chunks = match read.get(&counted.chunks.id) {
            Some(chunks) => chunks.clone(),
            None => {
                let output = counted
                    .chunks
                    .home()
                    .ok_or_else(|| internal("a device count was not computed"))?;
                let rows = read_rows(&output, 0, counted.chunks.meta.length).await?;
                let chunks = crate::ir::settled_chunks(&rows);
                read.insert(counted.chunks.id, chunks.clone());
                chunks
            }
        };
        root.settle(chunks);
    }
    Ok(())
}

/// `roots` and what an evaluation of them keeps with them: their null flags and counts,
/// and where a renderer draws from them, their draw arguments.
fn evaluated_with(device: &dyn CostModel, roots: &[NodeRef]) -> Result<Vec<NodeRef>> {
    let roots = crate::ir::with_companions(roots);
    match device.draws_indirect() {
        true => crate::ir::with_draw_args(&roots),
        false => Ok(roots),
    }
}

type Checks = (Vec<(NodeRef, Check)>, Vec<NodeRef>, Vec<NodeRef>);

/// The checks (`Check`) of the nodes an evaluation of `roots` computes; the roots computed
/// now; and the roots to evaluate: `roots` and the nodes the checks read.
fn checks_of(roots: &[NodeRef]) -> Checks {
    let mut all = roots.to_vec();
    let (mut checks, mut fresh) = (Vec::new(), Vec::new());
    if roots.iter().all(|r| r.has_output()) {
        return (checks, fresh, all);
    }
    for node in crate::ir::all_nodes(roots) {
        if let (false, Some(check)) = (node.has_output(), node.check()) {
            all.extend(check.nodes());
            checks.push((node.clone(), check.clone()));
        }
    }
    if !checks.is_empty() {
        fresh = roots.iter().filter(|r| !r.has_output()).cloned().collect();
    }
    (checks, fresh, all)
}

/// Reads what the checks need (4 bytes a lane) and releases it; on a failed check the roots
/// the evaluation computed (`fresh`) are not kept.
async fn run_checks(checks: Vec<(NodeRef, Check)>, fresh: Vec<NodeRef>) -> Result<()> {
    // Checks may share what they read: each node read once, all released after.
    let mut read: HashMap<u64, ColumnData> = HashMap::new();
    let mut failure = None;
    for (node, check) in &checks {
        let mut values = Vec::new();
        for value in check.nodes() {
            if let std::collections::hash_map::Entry::Vacant(e) = read.entry(value.id) {
                let rows = match value.home() {
                    Some(output) => read_rows(&output, 0, 1).await,
                    None => Err(internal("a checked count was not computed")),
                };
                e.insert(rows?);
            }
            values.push(read[&value.id].clone());
        }
        if failure.is_none() {
            failure = check_failure(node, check, &values);
        }
    }
    for value in checks.iter().flat_map(|(_, check)| check.nodes()) {
        value.release_output();
    }
    let Some(error) = failure else {
        return Ok(());
    };
    for root in fresh {
        root.release_output();
    }
    Err(error)
}

/// The error a check's values (`Check::nodes`' first rows) make, if any.
fn check_failure(node: &NodeRef, check: &Check, values: &[ColumnData]) -> Option<GpuTableError> {
    match (check, values) {
        (Check::KeptRows(_), [counts]) => (0..counts.len())
            .any(|lane| counts.get_f64(lane) == 0.0)
            .then(|| {
                GpuTableError::new(
                    ErrorCode::EmptyInput,
                    format!(
                        "{} of no rows: every row is null or its where mask keeps none",
                        node.op.name()
                    ),
                )
            }),
        (Check::FiniteRange(_), [range]) => (0..range.len())
            .any(|end| range.get_f64(end).is_infinite())
            .then(|| {
                GpuTableError::invalid(format!(
                    "histogram's range 'auto' is its input's extent, [{}, {}]: not finite (give a range)",
                    range.get_f64(0),
                    range.get_f64(1)
                ))
            }),
        (Check::Refused(_, what), [broken]) => {
            (broken.get_f64(0) > 0.0).then(|| GpuTableError::invalid(*what))
        }
        (Check::Capacity { capacity, what, .. }, [rows, about]) => {
            let (rows, about) = (rows.get_f64(0), about.get_f64(0));
            // The float sum tells a uint32 sum that wrapped: capacities stay below 2^30,
            // so a sum past 1.5 * 2^31 is 2^32 rows or more.
            let wrapped = about >= 1.5 * 2f64.powi(31);
            (wrapped || rows > *capacity as f64).then(|| {
                let needed = match wrapped {
                    true => format!("about {}", about as u64),
                    false => format!("{}", rows as u64),
                };
                GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    format!("{what} has {needed} rows, past the {capacity} allocated for it"),
                )
            })
        }
        _ => Some(internal("a check read the wrong number of values")),
    }
}

/// What an evaluation's schedule listed and what its executor did (`evaluate_listed`).
pub struct Listed {
    /// The schedule's steps, in order.
    pub listed: Vec<Step>,
    /// The steps the executor took.
    pub ran: Vec<Step>,
    /// The most device bytes the schedule projected any task to hold.
    pub projected_peak: u64,
}

/// `evaluate`, also returning what its schedule listed and what ran (for tests that check
/// the executor runs what the schedule says, within its projected memory).
pub async fn evaluate_listed(device: &dyn Backend, roots: &[NodeRef]) -> Result<Listed> {
    let mut ran = Vec::new();
    let roots = &crate::ir::with_companions(roots);
    let (schedule, sorts_peak) = run(device, roots, Fusion::On, Some(&mut ran)).await?;
    settle_counts(roots).await?;
    Ok(Listed {
        listed: schedule.as_ref().map(Schedule::steps).unwrap_or_default(),
        ran,
        projected_peak: schedule.as_ref().map_or(0, Schedule::peak).max(sorts_peak),
    })
}

/// The schedule `roots` would run on `device` now (as if they had not run yet).
pub fn schedule_of(device: &dyn CostModel, roots: &[NodeRef]) -> Result<Schedule> {
    let resident = |leaf: &NodeRef| resident_on(device, leaf);
    schedule::of_roots(device, roots, true, &resident)
}

/// Runs the schedule of `roots`' pending work on `device` (the steps it took into `steps`
/// when asked), after the sorts larger than `allowedMem` or than one pass sorts (run as
/// runs and merges first); returns that schedule, if there was work, and the most device
/// bytes the sorts were projected to hold.
async fn run(
    device: &dyn Backend,
    roots: &[NodeRef],
    fusion: Fusion,
    steps: Option<&mut Vec<Step>>,
) -> Result<(Option<Schedule>, u64)> {
    device.core().lost.check()?;
    // Filters, group-bys and cumulative ops larger than allowedMem run first, in parts, then
    // sorts larger than it (or than one pass) as runs and merges: all are planned, and the
    // rest projected with their results standing in, before any of them runs.
    let filters = staged_filter::plan(device, roots, false)?;
    let groups = staged_group::plan(device, roots, false)?;
    let scans = staged_scan::plan(device, roots, false)?;
    let (mut staged_peak, mut settled) = (0, Vec::new());
    for filter in &filters {
        staged_peak = staged_peak.max(filter.peak());
        filter.settles(&mut settled);
    }
    for group in &groups {
        staged_peak = staged_peak.max(group.peak());
        group.settles(&mut settled);
    }
    for scan in &scans {
        staged_peak = staged_peak.max(scan.peak());
        scan.settles(&mut settled);
    }
    let mut staged = StandIns::new();
    for node in &settled {
        staged.attach(node);
    }
    let (sorts, stand_ins) = external_sort::plan(device, roots, false)?;
    drop(stand_ins);
    if sorts.is_empty() && !(filters.is_empty() && groups.is_empty() && scans.is_empty()) {
        let resident = |leaf: &NodeRef| staged.resident(device, leaf);
        if let Some((_, schedule)) = schedule_for(device, roots, fusion, &resident)? {
            schedule.check()?;
        }
    }
    drop(staged);
    for filter in &filters {
        filter.run(device).await?;
    }
    for group in &groups {
        group.run(device).await?;
    }
    for scan in &scans {
        // A boxed future: its state machine stays out of this one's (a smaller module).
        let ranges: std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + '_>> =
            Box::pin(scan.run(device));
        ranges.await?;
    }
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    if sorts.is_empty() {
        let schedule = run_schedule(device, roots, fusion, steps).await;
        // Group-bys' results read by later work are intermediates too.
        for group in &groups {
            group.release_intermediates();
        }
        return Ok((schedule?, staged_peak));
    }
    let sorts_peak = sorts
        .iter()
        .map(|s| s.peak())
        .max()
        .unwrap_or(0)
        .max(staged_peak);
    let mut result = Ok(None);
    for sort in &sorts {
        if let Err(e) = sort.run(device, &root_ids).await {
            result = Err(e);
            break;
        }
    }
    if result.is_ok() {
        result = run_schedule(device, roots, fusion, steps).await;
    }
    // The sorts' results are intermediates unless the evaluation returns them.
    for sort in &sorts {
        for node in sort.results().filter(|n| !root_ids.contains(&n.id)) {
            node.release_output();
        }
    }
    for group in &groups {
        group.release_intermediates();
    }
    Ok((result?, sorts_peak))
}

/// The plan and schedule of `roots`' pending work on `device` (`None`: nothing to do), and
/// the roots pending; `resident` says which plan inputs take no new storage there.
fn schedule_for(
    device: &dyn CostModel,
    roots: &[NodeRef],
    fusion: Fusion,
    resident: &dyn Fn(&NodeRef) -> bool,
) -> Result<Option<(Vec<NodeRef>, Schedule)>> {
    let mut seen = HashSet::new();
    let pending: Vec<NodeRef> = roots
        .iter()
        .map(|r| r.check_alive().map(|_| r))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .filter(|r| !r.has_output() && seen.insert(r.id))
        .cloned()
        .collect();
    if pending.is_empty() {
        return Ok(None);
    }
    let limits = device.plan_limits();
    let plan = plan_with(
        &pending,
        &PlanOptions {
            fusion,
            replan_roots: false,
            limits: &limits,
        },
    )?;
    check_before_running(&plan)?;
    let root_ids: HashSet<u64> = pending.iter().map(|r| r.id).collect();
    let budget = device.core().allowed_mem.get();
    let schedule = Schedule::new(device, plan, &root_ids, resident, budget)?;
    Ok(Some((pending, schedule)))
}

/// Runs the schedule of `roots`' pending work on `device` as one evaluation.
async fn run_schedule(
    device: &dyn Backend,
    roots: &[NodeRef],
    fusion: Fusion,
    steps: Option<&mut Vec<Step>>,
) -> Result<Option<Schedule>> {
    let core = device.core();
    let home = core.homes.current();
    core.lost.check()?;
    let resident = |leaf: &NodeRef| resident_on(device, leaf);
    let Some((pending, schedule)) = schedule_for(device, roots, fusion, &resident)? else {
        return Ok(None);
    };
    schedule.check()?;
    let limits = device.plan_limits();
    // Inputs that live on another GPU device come back to the host first, outside this
    // device's turn: waiting for that device while holding ours could deadlock.
    let mut fetched = HashMap::new();
    for leaf in schedule.plan.leaves() {
        let home = leaf_home(&leaf)?;
        let in_place = reads_in_place(device, &home) || leaf.output_on(core.id).is_some();
        if !in_place && !home.in_host_memory() {
            fetched.insert(leaf.id, read_whole_output(&home).await?);
        }
    }
    let _turn = core.queue.enter().await;
    core.lost.check()?;
    let mut batch = device.begin(home)?;
    let mut run = Run {
        device,
        batch: &mut batch,
        limits: &limits,
        steps: steps.as_ref().map(|_| Vec::new()),
    };
    let result = run.schedule(&schedule, fetched).await;
    if let (Some(steps), Some(ran)) = (steps, run.steps.take()) {
        *steps = ran;
    }
    let finished = device.finish(batch).await;
    let outputs = result?;
    finished.map_err(|e| core.lost.explain(e))?;
    for root in &pending {
        // A root destroyed while it was computed keeps nothing.
        root.check_alive()?;
        root.add_output(outputs[&root.id].clone());
        root.materialize_on(core.id);
    }
    Ok(Some(schedule))
}

/// Whether a plan input takes no new storage on `device`: on it already (read there, or
/// copied there before), or a literal its kernels take as parameters.
fn resident_on(device: &dyn CostModel, leaf: &NodeRef) -> bool {
    device.takes_from_host(leaf)
        || leaf.output_on(device.core().id).is_some()
        || leaf_home(leaf).is_ok_and(|home| reads_in_place(device, &home))
}

/// Whether `rows` rows of `size` lanes are more than one of `device`'s bindings holds (such
/// a chunk is copied to the device a task's part at a time).
fn rows_past_a_binding(device: &dyn CostModel, size: u32, rows: u32) -> bool {
    device
        .max_binding_rows(size)
        .is_some_and(|most| rows > most)
}

/// Whether every chunk of `output` is where `device`'s kernels read it.
fn reads_in_place(device: &dyn CostModel, output: &Output) -> bool {
    output.chunks.iter().all(|c| device.reads_in_place(c))
}

/// Errors the contract says come before any kernel runs.
fn check_before_running(plan: &Plan) -> Result<()> {
    for region in &plan.regions {
        let sum = crate::ir::Reduction::of(&region.root)
            .is_some_and(|r| r.kind == crate::ir::ReduceKind::Sum);
        if region.is_reduction() && !sum && region.rows == 0 {
            return Err(GpuTableError::new(
                ErrorCode::EmptyInput,
                format!("{} of an empty input", region.root.op.name()),
            ));
        }
    }
    Ok(())
}

fn leaf_home(leaf: &NodeRef) -> Result<Output> {
    leaf.check_alive()?;
    leaf.host_output().or_else(|| leaf.home()).ok_or_else(|| {
        GpuTableError::new(
            ErrorCode::Destroyed,
            format!("the output of t{} was released", leaf.id),
        )
    })
}

/// The whole of `value` in host memory, read through its own device.
pub async fn read_whole(value: &Value) -> Result<Column> {
    let mut column = Column::empty(value.dtype, value.size)?;
    column.reserve_rows(value.rows)?;
    read_value(value, 0, value.rows, &mut |_, data| column.append(&data)).await?;
    Ok(column)
}

/// Every chunk of `output` in host memory.
pub async fn read_whole_output(output: &Output) -> Result<Vec<Column>> {
    let mut columns = Vec::with_capacity(output.chunks.len());
    for chunk in output.chunks.iter() {
        columns.push(read_whole(chunk).await?);
    }
    Ok(columns)
}

/// Bytes a read hands its sink at once: a read needs at most this much extra host memory.
pub const READ_PIECE_BYTES: u64 = 32 << 20;

/// Rows `start..end` of `value`, wherever it lives, handed to `sink` a piece at a time. On
/// a GPU device the read waits for the device's work before it (its turn).
pub async fn read_value(value: &Value, start: u32, end: u32, sink: &mut RowSink<'_>) -> Result<()> {
    let (start, end) = (
        start.min(value.rows),
        end.min(value.rows).max(start.min(value.rows)),
    );
    match &value.storage {
        Storage::Host(column) => {
            let row_bytes = value.size as u64 * value.dtype.byte_width() as u64;
            let rows_per_piece = (READ_PIECE_BYTES / row_bytes).clamp(1, u32::MAX as u64) as u32;
            let mut row = start;
            while row < end {
                let next = row.saturating_add(rows_per_piece).min(end);
                sink(
                    row as u64 * value.size as u64,
                    column.slice_rows(row, next)?,
                )?;
                row = next;
            }
            Ok(())
        }
        Storage::Device(storage) => storage.read(value, start, end, sink).await,
        Storage::Parts(_) => Err(internal("a bound set of parts is never read")),
    }
}

/// A value's storage on a GPU backend's device (a buffer, textures), with the device, which
/// reads it in its turn.
pub struct OnDevice<B, S> {
    pub device: B,
    pub storage: S,
}

impl<B: Transfers + 'static, S: 'static> DeviceStorage for OnDevice<B, S> {
    fn read<'a, 's: 'a>(
        &'a self,
        value: &'a Value,
        start: u32,
        end: u32,
        sink: &'a mut RowSink<'s>,
    ) -> Reading<'a> {
        Box::pin(read_in_turn(&self.device, value, start, end, sink))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `read_rows` on `device` once its earlier work is done (`DeviceStorage::read`).
async fn read_in_turn<B: Transfers>(
    device: &B,
    value: &Value,
    start: u32,
    end: u32,
    sink: &mut RowSink<'_>,
) -> Result<()> {
    let _turn = device.core().queue.enter().await;
    device.core().lost.check()?;
    device
        .read_rows(value, start, end, sink)
        .await
        .map_err(|e| device.core().lost.explain(e))
}

/// `api` with the adapter's name, for `explain()`: `webgpu (SwiftShader)`.
pub fn device_name(api: &str, adapter: &str) -> String {
    match adapter {
        "" => api.to_string(),
        adapter => format!("{api} ({adapter})"),
    }
}

/// Rows `start..end` of a node's output (over its chunks) as one host array.
pub async fn read_rows(output: &Output, start: u32, end: u32) -> Result<ColumnData> {
    let first = output
        .chunks
        .first()
        .ok_or_else(|| internal("an output without chunks"))?;
    let mut column = Column::empty(first.dtype, first.size)?;
    let rows = (end as u64).min(output.rows()).saturating_sub(start as u64);
    column.reserve_rows(rows as u32)?;
    for (value, lo, hi) in output.pieces(start as u64, end as u64) {
        read_value(&value, lo, hi, &mut |_, data| column.append(&data)).await?;
    }
    Ok(column.data)
}

/// Rows `0..rows` of each of `outputs` (over its chunks; in host memory or on `device`),
/// each as one host array, once `device`'s earlier work is done. Its values on the device
/// are read together (`Transfers::read_together`: one round trip on a GPU).
pub async fn read_outputs(
    device: &dyn Backend,
    outputs: &[(&Output, u32)],
) -> Result<Vec<ColumnData>> {
    let here = device.core().id;
    let pieces: Vec<_> = (outputs.iter())
        .map(|&(output, rows)| output.pieces(0, rows as u64))
        .collect();
    let mut reads = Vec::new();
    for (&(output, _), pieces) in outputs.iter().zip(&pieces) {
        for (value, lo, hi) in pieces
            .iter()
            .filter(|(value, ..)| value.host_column().is_none())
        {
            if output.device != here {
                return Err(internal("a part's result is on another device"));
            }
            reads.push((&**value, *lo, *hi));
        }
    }
    let mut read = match reads.is_empty() {
        true => Vec::new(),
        false => {
            let _turn = device.core().queue.enter().await;
            device.core().lost.check()?;
            (device.read_together(&reads).await).map_err(|e| device.core().lost.explain(e))?
        }
    }
    .into_iter();
    let mut columns = Vec::with_capacity(outputs.len());
    for (&(output, rows), pieces) in outputs.iter().zip(&pieces) {
        let first = (output.chunks.first()).ok_or_else(|| internal("an output without chunks"))?;
        let mut column = Column::empty(first.dtype, first.size)?;
        column.reserve_rows((rows as u64).min(output.rows()) as u32)?;
        for (value, lo, hi) in pieces {
            let data = match value.host_column() {
                Some(host) => host.slice_rows(*lo, *hi)?,
                None => read.next().ok_or_else(|| internal("a read was lost"))?,
            };
            column.append(&data)?;
        }
        columns.push(column.data);
    }
    Ok(columns)
}

/// Puts a node's output on `device` now, copied once (later calls find the copy), and with
/// `only` drops every other copy (a table loaded onto a GPU device keeps no host copy). The
/// device holds the materialized output after (api.md's `evaluated` and `device`).
pub async fn put_on(device: &dyn Backend, node: &NodeRef, only: bool) -> Result<()> {
    node.check_alive()?;
    let id = device.core().id;
    let home = match node.output_on(id) {
        Some(output) => output,
        None => leaf_home(node)?,
    };
    if reads_in_place(device, &home) {
        if only {
            node.replace_outputs(home);
        }
        node.materialize_on(id);
        return Ok(());
    }
    if let Some(budget) = device.core().allowed_mem.get() {
        let bytes: u64 = home
            .chunks
            .iter()
            .map(|c| device.value_bytes(c.dtype, c.size, c.rows))
            .sum();
        if bytes.saturating_mul(2) > budget {
            // Larger than half of allowedMem: it stays on the host, streamed when read, as
            // an output that large is when the device computes it.
            node.materialize_on(id);
            return Ok(());
        }
    }
    let fetched = match home.in_host_memory() {
        true => None,
        false => Some(read_whole_output(&home).await?),
    };
    let _turn = device.core().queue.enter().await;
    device.core().lost.check()?;
    let mut batch = device.begin(device.core().homes.current())?;
    let mut copies = Vec::with_capacity(home.chunks.len());
    let mut copied = Ok(());
    for (k, chunk) in home.chunks.iter().enumerate() {
        let column = match &fetched {
            Some(columns) => Some(&columns[k]),
            None => chunk.host_column(),
        };
        let copy = match column {
            Some(column) => device.upload(&mut batch, column),
            None => Err(internal("no host data to copy")),
        };
        match copy {
            Ok(copy) => copies.push(Rc::new(copy)),
            Err(e) => {
                copied = Err(e);
                break;
            }
        }
    }
    let finished = device.finish(batch).await;
    copied?;
    finished?;
    node.check_alive()?;
    let copy = Output::new(id, copies);
    if only {
        node.replace_outputs(copy);
    } else {
        node.add_output(copy);
    }
    node.materialize_on(id);
    Ok(())
}

pub(crate) fn internal(message: impl Into<String>) -> GpuTableError {
    GpuTableError::new(ErrorCode::Internal, message)
}

/// Runs `future` to its end if it never has to wait (CPU work); work that would wait for a
/// GPU device is `INVALID_ARGUMENT`, for the synchronous API.
pub fn now<F: std::future::Future>(future: F) -> Result<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => Ok(output),
        std::task::Poll::Pending => Err(GpuTableError::invalid(
            "this needs a GPU device to finish its work first; use the asynchronous call (await)",
        )),
    }
}
