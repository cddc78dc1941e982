//! The one executor every device runs: it plans a graph, brings the plan's inputs onto the
//! device (read in place where they already are, copied once otherwise), runs the regions
//! through the device's `Backend`, frees each intermediate after its last use, and leaves
//! the roots' outputs on the device until someone reads them.

mod lost;
mod queue;

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{validate_segments, NodeRef, Op};
use crate::memory::{Counters, Home, Homes};
use crate::plan::{plan_with, Fusion, Plan, PlanLimits, PlanOptions, Region};
use crate::value::{DeviceId, RowSink, Storage, Value};
pub use lost::LostFlag;
pub use queue::{Turn, Turnstile};

/// What every device has, whatever runs its kernels.
pub struct DeviceCore {
    pub id: DeviceId,
    pub counters: Rc<Counters>,
    /// Where new storage goes: the pool, a named cache, or nowhere (`uncached`).
    pub homes: Homes,
    /// Evaluations and reads on this device take turns.
    pub queue: Turnstile,
    pub lost: LostFlag,
}

impl DeviceCore {
    pub fn new(lost: LostFlag) -> DeviceCore {
        DeviceCore {
            id: crate::value::next_device_id(),
            counters: Rc::new(Counters::default()),
            homes: Homes::default(),
            queue: Turnstile::default(),
            lost,
        }
    }
}

/// A device the executor can run plans on: the CPU, WebGPU or WebGL2.
#[allow(async_fn_in_trait)]
pub trait Backend {
    /// Work recorded by one evaluation, run by `flush` and `finish`.
    type Batch;

    fn core(&self) -> &DeviceCore;
    /// `cpu`, or the GPU API and adapter, for `explain()`.
    fn name(&self) -> String;
    fn plan_limits(&self) -> PlanLimits;
    /// Whether kernels of this device read `value` where it is (no copy needed).
    fn reads_in_place(&self, value: &Value) -> bool;
    /// Whether the kernels take this leaf's values from host memory as parameters (small
    /// literals), so it needs no copy on the device.
    fn takes_from_host(&self, _leaf: &crate::ir::Node) -> bool {
        false
    }

    fn begin(&self, home: Home) -> Result<Self::Batch>;
    /// A copy of host data on this device.
    fn upload(&self, batch: &mut Self::Batch, column: &Column) -> Result<Value>;
    /// Records (or runs) the pass of `region` over `leaves` (its leaves' values, in order).
    async fn run_region(
        &self,
        batch: &mut Self::Batch,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value>;
    /// Runs everything recorded so far (before a read in the middle of a plan).
    async fn flush(&self, batch: &mut Self::Batch) -> Result<()>;
    /// Runs what is left and reports any error the device raised during the batch.
    async fn finish(&self, batch: Self::Batch) -> Result<()>;
    /// Rows `start..end` of one of this device's values, handed to `sink` a piece at a time.
    async fn read_rows(
        &self,
        value: &Value,
        start: u32,
        end: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<()>;
    /// The kernels each pass of `plan` runs on this device, a line per pass and a total.
    fn describe_passes(&self, plan: &Plan) -> Result<String>;
    /// Frees the pool and every cache (`None`), or one cache.
    fn trim(&self, cache: Option<&str>);
    /// The most bytes the shared pool keeps (storage past it is freed on release).
    fn set_pool_cap(&self, bytes: u64);
    /// Frees everything the device holds; later use is `DESTROYED`.
    fn destroy(&self);
}

/// Evaluates `roots` on `device`, leaving each root's output there. Roots that have an
/// output already are left alone (a second evaluation does no work).
pub async fn evaluate<B: Backend>(device: &B, roots: &[NodeRef]) -> Result<()> {
    evaluate_with(device, roots, Fusion::On).await
}

/// `evaluate`, blocking (native only).
#[cfg(not(target_arch = "wasm32"))]
pub fn evaluate_blocking<B: Backend>(device: &B, roots: &[NodeRef]) -> Result<()> {
    pollster::block_on(evaluate(device, roots))
}

/// `evaluate`, with every node materialized when `fusion` is off (the reference that tests
/// "fusion never changes a result").
pub async fn evaluate_with<B: Backend>(
    device: &B,
    roots: &[NodeRef],
    fusion: Fusion,
) -> Result<()> {
    let core = device.core();
    let home = core.homes.current();
    core.lost.check()?;
    let mut seen = HashSet::new();
    let pending: Vec<NodeRef> = roots
        .iter()
        .map(|r| r.check_alive().map(|_| r))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .filter(|r| !r.is_evaluated() && seen.insert(r.id))
        .cloned()
        .collect();
    if pending.is_empty() {
        return Ok(());
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
    // Inputs that live on another GPU device come back to the host first, outside this
    // device's turn: waiting for that device while holding ours could deadlock.
    let mut fetched = HashMap::new();
    for leaf in plan.leaves() {
        let home = leaf_home(&leaf)?;
        let in_place = device.reads_in_place(&home) || leaf.value_on(core.id).is_some();
        if !in_place && home.host_column().is_none() {
            fetched.insert(leaf.id, read_whole(&home).await?);
        }
    }
    let _turn = core.queue.enter().await;
    core.lost.check()?;
    let mut batch = device.begin(home)?;
    let result = run_plan(device, &mut batch, &plan, &pending, fetched).await;
    let finished = device.finish(batch).await;
    let outputs = result?;
    finished.map_err(|e| core.lost.explain(e))?;
    for root in &pending {
        // A root destroyed while it was computed keeps nothing.
        root.check_alive()?;
        root.add_value(outputs[&root.id].clone());
    }
    Ok(())
}

/// Errors the contract says come before any kernel runs.
fn check_before_running(plan: &Plan) -> Result<()> {
    for region in &plan.regions {
        if region.is_reduction() && region.rows() == 0 {
            return Err(GpuTableError::new(
                ErrorCode::EmptyInput,
                format!("{} of an empty input", region.root.op.name()),
            ));
        }
    }
    Ok(())
}

fn leaf_home(leaf: &NodeRef) -> Result<Rc<Value>> {
    leaf.check_alive()?;
    leaf.host_value().or_else(|| leaf.home()).ok_or_else(|| {
        GpuTableError::new(
            ErrorCode::Destroyed,
            format!("the output of t{} was released", leaf.id),
        )
    })
}

async fn run_plan<B: Backend>(
    device: &B,
    batch: &mut B::Batch,
    plan: &Plan,
    pending: &[NodeRef],
    mut fetched: HashMap<u64, Column>,
) -> Result<HashMap<u64, Rc<Value>>> {
    let mut values: HashMap<u64, Rc<Value>> = HashMap::new();
    for leaf in plan.leaves() {
        let host = match device.takes_from_host(&leaf) {
            true => leaf.host_value(),
            false => None,
        };
        let value = match host.or_else(|| leaf.value_on(device.core().id)) {
            Some(value) => value,
            None => {
                let home = leaf_home(&leaf)?;
                if device.reads_in_place(&home) {
                    home
                } else {
                    let copy = match fetched.remove(&leaf.id) {
                        Some(column) => device.upload(batch, &column)?,
                        None => {
                            let column = home
                                .host_column()
                                .ok_or_else(|| internal(format!("t{} was not fetched", leaf.id)))?;
                            device.upload(batch, column)?
                        }
                    };
                    let copy = Rc::new(copy);
                    // Copied once: later evaluations on this device read the copy.
                    if !leaf.is_destroyed() {
                        leaf.add_value(copy.clone());
                    }
                    copy
                }
            }
        };
        values.insert(leaf.id, value);
    }
    let keep: HashSet<u64> = pending.iter().map(|r| r.id).collect();
    let freed_after = last_uses(plan, &keep);
    for (index, region) in plan.regions.iter().enumerate() {
        check_segments(device, batch, region, &values).await?;
        let leaves: Vec<Rc<Value>> = region
            .leaves
            .iter()
            .map(|leaf| {
                values
                    .get(&leaf.id)
                    .cloned()
                    .ok_or_else(|| internal(format!("t{} has no value", leaf.id)))
            })
            .collect::<Result<_>>()?;
        let output = device.run_region(batch, region, &leaves).await?;
        values.insert(region.root.id, Rc::new(output));
        // An intermediate is freed (back to the pool) after its last reader.
        for id in &freed_after[index] {
            values.remove(id);
        }
    }
    Ok(values)
}

/// Per region, the computed values no later region (and no root) reads.
fn last_uses(plan: &Plan, keep: &HashSet<u64>) -> Vec<Vec<u64>> {
    let computed: HashSet<u64> = plan.regions.iter().map(|r| r.root.id).collect();
    let mut last: HashMap<u64, usize> = HashMap::new();
    for (index, region) in plan.regions.iter().enumerate() {
        for leaf in &region.leaves {
            if computed.contains(&leaf.id) {
                last.insert(leaf.id, index);
            }
        }
    }
    let mut freed = vec![Vec::new(); plan.regions.len()];
    for (id, index) in last {
        if !keep.contains(&id) {
            freed[index].push(id);
        }
    }
    freed
}

/// `segmentedMap` needs valid segment starts; computed ones are read back to check them.
async fn check_segments<B: Backend>(
    device: &B,
    batch: &mut B::Batch,
    region: &Region,
    values: &HashMap<u64, Rc<Value>>,
) -> Result<()> {
    for node in region.nodes.iter().filter(|n| n.op == Op::SegmentedMap) {
        let segments = &node.inputs[0];
        let value = values
            .get(&segments.id)
            .ok_or_else(|| internal("segment starts are not resident"))?;
        match value.host_column() {
            Some(column) => validate_segments(column, node.meta.length)?,
            None => {
                device.flush(batch).await?;
                let mut column = Column::empty(value.dtype, value.size)?;
                device
                    .read_rows(value, 0, value.rows, &mut |_, data| column.append(data))
                    .await?;
                validate_segments(&column, node.meta.length)?;
            }
        }
    }
    Ok(())
}

/// The whole of `value` in host memory, read through its own device.
pub async fn read_whole(value: &Value) -> Result<Column> {
    let mut column = Column::empty(value.dtype, value.size)?;
    column.reserve_rows(value.rows)?;
    read_value(value, 0, value.rows, &mut |_, data| column.append(data)).await?;
    Ok(column)
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
        Storage::WebGpu(gpu) => read_in_turn(gpu.device(), value, start, end, sink).await,
        Storage::WebGl(gl) => read_in_turn(gl.device(), value, start, end, sink).await,
    }
}

/// `read_rows` on `device` once its earlier work is done.
async fn read_in_turn<B: Backend>(
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

/// Rows `start..end` of a node's output as one host array.
pub async fn read_rows(value: &Value, start: u32, end: u32) -> Result<ColumnData> {
    let mut column = Column::empty(value.dtype, value.size)?;
    let rows = end.min(value.rows).saturating_sub(start);
    column.reserve_rows(rows)?;
    read_value(value, start, end, &mut |_, data| column.append(data)).await?;
    Ok(column.data)
}

/// The plan `root` runs on `device` (as if it had not run yet), with the device's kernels.
pub fn explain<B: Backend>(device: &B, root: &NodeRef) -> Result<String> {
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
    text.push_str(&device.describe_passes(&plan)?);
    Ok(text)
}

/// Puts a node's output on `device` now, copied once (later calls find the copy), and with
/// `only` drops every other copy (a table loaded onto a GPU device keeps no host copy).
pub async fn put_on<B: Backend>(device: &B, node: &NodeRef, only: bool) -> Result<()> {
    node.check_alive()?;
    let here = node.value_on(device.core().id);
    let home = match here {
        Some(value) => value,
        None => leaf_home(node)?,
    };
    if device.reads_in_place(&home) {
        if only {
            node.replace_values(home);
        }
        return Ok(());
    }
    let column = match home.host_column() {
        Some(_) => None,
        None => Some(read_whole(&home).await?),
    };
    let _turn = device.core().queue.enter().await;
    device.core().lost.check()?;
    let mut batch = device.begin(device.core().homes.current())?;
    let column = column.as_ref().or(home.host_column());
    let copy = match column {
        Some(column) => device.upload(&mut batch, column),
        None => Err(internal("no host data to copy")),
    };
    let finished = device.finish(batch).await;
    let copy = Rc::new(copy?);
    finished?;
    node.check_alive()?;
    if only {
        node.replace_values(copy);
    } else {
        node.add_value(copy);
    }
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
