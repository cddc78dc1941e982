//! The one executor every device runs: it plans a graph, brings the plan's inputs onto the
//! device (read in place where they already are, copied once otherwise), runs the regions
//! through the device's `Backend`, frees each intermediate after its last use, and leaves
//! the roots' outputs on the device until someone reads them.

pub mod budget;
mod explain;
mod lost;
mod queue;
mod run;

pub use explain::explain;
use run::Run;

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::NodeRef;
use crate::memory::{size_class, Counters, Home, Homes};
use crate::plan::{plan_with, Fusion, Plan, PlanLimits, PlanOptions, Region};
use crate::value::{DeviceId, Output, RowSink, Storage, Value};
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
    /// `allowedMem`: the device bytes one evaluation may hold at once, if bounded.
    pub allowed_mem: std::cell::Cell<Option<u64>>,
}

impl DeviceCore {
    pub fn new(lost: LostFlag) -> DeviceCore {
        DeviceCore {
            id: crate::value::next_device_id(),
            counters: Rc::new(Counters::default()),
            homes: Homes::default(),
            queue: Turnstile::default(),
            lost,
            allowed_mem: std::cell::Cell::new(None),
        }
    }
}

/// What the planner, the memory budget and `explain` ask of a device: its limits, what its
/// values and working arrays cost, and the kernels its passes run. Object safe, so the code
/// that reads it is compiled once rather than once per backend.
pub trait DeviceModel {
    fn core(&self) -> &DeviceCore;
    /// `cpu`, or the GPU API and adapter, for `explain()`.
    fn name(&self) -> String;
    fn plan_limits(&self) -> PlanLimits;
    /// Device bytes a value of `rows` rows takes, as the device's pool allocates them.
    fn value_bytes(&self, dtype: DType, size: u32, rows: u32) -> u64 {
        let _ = dtype;
        size_class(rows as u64 * size as u64 * 4, u64::MAX)
    }
    /// The most rows of `size` lanes one kernel binding holds, where values are bound whole
    /// (WebGPU's storage buffers); larger chunks are computed a part at a time.
    fn max_binding_rows(&self, _size: u32) -> Option<u32> {
        None
    }
    /// Whether kernels may bind a random-access input as several parts (`Storage::Parts`),
    /// each within one binding; `read_at_row`: the task also reads it at the output row.
    fn binds_parts(&self, _read_at_row: bool) -> bool {
        false
    }
    /// Whether kernels of this device read `value` where it is (no copy needed).
    fn reads_in_place(&self, value: &Value) -> bool;
    /// Whether the kernels take this leaf's values from host memory as parameters (small
    /// literals), so it needs no copy on the device.
    fn takes_from_host(&self, _leaf: &crate::ir::Node) -> bool {
        false
    }
    /// Device bytes of `parts` partial states of the reduction `root`, as the device
    /// stores them.
    fn reduction_state_bytes(&self, root: &crate::ir::Node, parts: u32) -> u64 {
        let words = crate::ir::Reduction::state_words_of(root) as u64;
        size_class(
            parts as u64 * root.inputs[0].meta.size as u64 * words * 4,
            u64::MAX,
        )
    }
    /// Device bytes one chunk task of the reduction `root` over `rows` rows holds besides
    /// its inputs and the partial states of each chunk (partials of row groups).
    fn reduction_scratch_bytes(&self, _root: &crate::ir::Node, _rows: u32) -> u64 {
        0
    }
    /// Device bytes one chunk task of `region` holds for the values its nodes compute where
    /// read (`Region::where_read`), besides its inputs and its output.
    fn where_read_scratch_bytes(&self, _region: &Region) -> u64 {
        0
    }
    /// Kernels of one combine round and of the final pass of the reduction `root`.
    fn reduction_tail_kernels(&self, _root: &crate::ir::Node) -> (u64, u64) {
        (0, 0)
    }
    /// Whether `sort_permutation_and_keys` runs a sort of `rows` rows by `keys` keys here;
    /// elsewhere the executor runs it as the IR's one-bit split passes
    /// (`ir::split_permutation`).
    fn sorts(&self, _rows: u32, _keys: usize) -> bool {
        false
    }
    /// Whether `sort_permutation_and_keys` reads a key stored in several chunks where it
    /// is; elsewhere the executor first joins each key into one value on the device.
    fn sorts_keys_in_chunks(&self) -> bool {
        false
    }
    /// Device bytes a sort of `rows` rows by `keys` keys holds besides its keys and its
    /// permutation.
    fn sort_scratch_bytes(&self, rows: u32, _keys: usize) -> u64 {
        // A split pass's flags, their scan, destinations and the previous permutation.
        4 * self.value_bytes(DType::U32, 1, rows)
    }
    /// Whether a pass's working arrays (a native sort's, a reduction's partial states) stay
    /// held until the batch is submitted (WebGPU keeps them for its recorded dispatches),
    /// not just through the pass.
    fn keeps_scratch_until_flush(&self) -> bool {
        false
    }
    /// What this device calls one kernel run and several (`("dispatch", "dispatches")`) for
    /// `explain()`'s kernel lines; `None`: no kernels of its own to show (the CPU).
    fn kernel_words(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// The kernels one chunk task of `region` runs: how many, and a line saying what they do.
    fn describe_task(&self, _region: &Region) -> Result<(u64, String)> {
        Ok((0, String::new()))
    }
    /// Kernels a pass of `region` runs once besides its tasks' (a scatter's clears).
    fn pass_kernels(&self, _region: &Region) -> u64 {
        0
    }
}

/// A device the executor can run plans on: the CPU, WebGPU or WebGL2.
#[allow(async_fn_in_trait)]
pub trait Backend: DeviceModel {
    /// Work recorded by one evaluation, run by `flush` and `finish`.
    type Batch;
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
    /// Partial states of a reduction, per part and lane, in the device's own storage.
    type States;
    /// Storage for `parts` partial states of the reduction `root`.
    fn reduction_states(
        &self,
        batch: &mut Self::Batch,
        root: &crate::ir::Node,
        parts: u32,
    ) -> Result<Self::States>;
    /// Folds one chunk task of a reduction region (whose rows start at row `first_row` of
    /// the reduced column) into part `part` of `states`.
    async fn reduce_chunk(
        &self,
        batch: &mut Self::Batch,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &mut Self::States,
        part: u32,
    ) -> Result<()>;
    /// One combine round: `parts` partials combined in order, `every` at a time.
    async fn combine_states(
        &self,
        batch: &mut Self::Batch,
        root: &crate::ir::Node,
        states: Self::States,
        parts: u32,
        every: u32,
    ) -> Result<Self::States>;
    /// The reduction's output from the one partial left.
    async fn finish_reduction(
        &self,
        batch: &mut Self::Batch,
        region: &Region,
        states: Self::States,
    ) -> Result<Value>;
    /// The output of the scatter `root`, every row 0, which its chunk tasks write into: one
    /// value, or parts of consecutive rows where one binding cannot hold it all.
    async fn scatter_target(
        &self,
        batch: &mut Self::Batch,
        root: &crate::ir::Node,
    ) -> Result<Vec<Value>>;
    /// Records one chunk task of a scatter: row `i` of `written` written to row
    /// `destinations[i]` of the output `parts`, where that is one of its rows.
    async fn scatter_rows(
        &self,
        batch: &mut Self::Batch,
        task: &Region,
        destinations: &Value,
        written: Written<'_>,
        parts: &mut [Value],
    ) -> Result<()>;
    /// The stable permutation ordering rows by the uint32 `keys` (each key's chunks, in
    /// order, or its one value; the most significant key first), each by its low `bits`
    /// bits, and the keys `sorted` (indices into `keys`, each one the device's plans let
    /// its sort write: `PlanLimits::sort_writes_keys`) in its order.
    async fn sort_permutation_and_keys(
        &self,
        _batch: &mut Self::Batch,
        _keys: &[&[Rc<Value>]],
        _bits: &[u32],
        _sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)> {
        Err(internal(format!(
            "{} sorts through split passes",
            self.name()
        )))
    }
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
    /// Frees the pool and every cache (`None`), or one cache.
    fn trim(&self, cache: Option<&str>);
    /// The most bytes the shared pool keeps (storage past it is freed on release).
    fn set_pool_cap(&self, bytes: u64);
    /// Frees everything the device holds; later use is `DESTROYED`.
    fn destroy(&self);
}

/// A device as the code above the executor sees it (sparse matrices, lengths known only
/// after a kernel): it evaluates roots and holds their outputs. Object safe, so that code is
/// compiled once rather than once per backend.
pub trait Evaluates {
    fn device_id(&self) -> DeviceId;
    /// `evaluate` on this device.
    fn evaluate_roots<'a>(
        &'a self,
        roots: &'a [NodeRef],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + 'a>>;
}

impl<B: Backend> Evaluates for B {
    fn device_id(&self) -> DeviceId {
        self.core().id
    }
    fn evaluate_roots<'a>(
        &'a self,
        roots: &'a [NodeRef],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + 'a>> {
        Box::pin(evaluate(self, roots))
    }
}

/// What a scatter task writes at its destinations.
#[derive(Clone, Copy)]
pub enum Written<'a> {
    /// The rows of a stored value, one per destination.
    Rows(&'a Value),
    /// Each input row's number: `first` (the task's first row in the scatter's input) plus
    /// its row in the task.
    RowNumbers { first: u32 },
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
    let budget = core.allowed_mem.get();
    // Only a budget needs the projection: which task would exceed it, which roots stream.
    let streamed = match budget {
        Some(budget) => {
            let root_ids: HashSet<u64> = pending.iter().map(|r| r.id).collect();
            let resident = |leaf: &NodeRef| resident_on(device, leaf);
            let projection = budget::project(device, &plan, &root_ids, &resident, Some(budget));
            projection.check(&plan, budget)?;
            projection.streamed
        }
        None => HashSet::new(),
    };
    // Inputs that live on another GPU device come back to the host first, outside this
    // device's turn: waiting for that device while holding ours could deadlock.
    let mut fetched = HashMap::new();
    for leaf in plan.leaves() {
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
        streaming: budget.is_some(),
        streamed,
    };
    let result = run.plan(&plan, &pending, fetched).await;
    let finished = device.finish(batch).await;
    let outputs = result?;
    finished.map_err(|e| core.lost.explain(e))?;
    for root in &pending {
        // A root destroyed while it was computed keeps nothing.
        root.check_alive()?;
        root.add_output(outputs[&root.id].clone());
    }
    Ok(())
}

/// Whether a plan input takes no new storage on `device`: on it already (read there, or
/// copied there before), or a literal its kernels take as parameters.
fn resident_on(device: &dyn DeviceModel, leaf: &NodeRef) -> bool {
    device.takes_from_host(leaf)
        || leaf.output_on(device.core().id).is_some()
        || leaf_home(leaf).is_ok_and(|home| reads_in_place(device, &home))
}

/// Whether `rows` rows of `size` lanes are more than one of `device`'s bindings holds (such
/// a chunk is copied to the device a task's part at a time).
fn rows_past_a_binding(device: &dyn DeviceModel, size: u32, rows: u32) -> bool {
    device
        .max_binding_rows(size)
        .is_some_and(|most| rows > most)
}

/// Whether every chunk of `output` is where `device`'s kernels read it.
fn reads_in_place(device: &dyn DeviceModel, output: &Output) -> bool {
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
    read_value(value, 0, value.rows, &mut |_, data| column.append(data)).await?;
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
        Storage::WebGpu(gpu) => read_in_turn(gpu.device(), value, start, end, sink).await,
        #[cfg(gl_backend)]
        Storage::WebGl(gl) => read_in_turn(gl.device(), value, start, end, sink).await,
        Storage::Parts(_) => Err(internal("a bound set of parts is never read")),
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
        read_value(&value, lo, hi, &mut |_, data| column.append(data)).await?;
    }
    Ok(column.data)
}

/// Puts a node's output on `device` now, copied once (later calls find the copy), and with
/// `only` drops every other copy (a table loaded onto a GPU device keeps no host copy).
pub async fn put_on<B: Backend>(device: &B, node: &NodeRef, only: bool) -> Result<()> {
    node.check_alive()?;
    let home = match node.output_on(device.core().id) {
        Some(output) => output,
        None => leaf_home(node)?,
    };
    if reads_in_place(device, &home) {
        if only {
            node.replace_outputs(home);
        }
        return Ok(());
    }
    if let Some(budget) = device.core().allowed_mem.get() {
        let bytes: u64 = home
            .chunks
            .iter()
            .map(|c| device.value_bytes(c.dtype, c.size, c.rows))
            .sum();
        if bytes.saturating_mul(2) > budget {
            // Larger than half of allowedMem: it stays on the host, streamed when read.
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
    let copy = Output::new(device.core().id, copies);
    if only {
        node.replace_outputs(copy);
    } else {
        node.add_output(copy);
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
