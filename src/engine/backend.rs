//! What a device is to the executor, split by capability. Each capability is a pair: an
//! object-safe model of what its passes hold and run (read by the planner, the schedule and
//! `explain`, compiled once) and the async trait that runs them, typed by the work it
//! carries. `Backend` is all of them with that work erased, the one trait the executor and
//! the code above it call, so they are compiled once rather than once per backend. Every
//! backend implements each pair in the file that owns those kernels, with the same file
//! roles everywhere:
//!
//! | file | implements |
//! |---|---|
//! | `device.rs` | `DeviceModel`: identity, limits, storage costs and upkeep |
//! | `mod.rs` | the backend's stored values and `Batches`: recording and submitting work |
//! | `transfer.rs` | `Transfers`: host data in, rows out |
//! | `region.rs` | `RegionModel`, `Regions`: fused elementwise passes |
//! | `reduce.rs` | `ReductionModel`, `Reductions` |
//! | `scatter.rs` | `ScatterModel`, `Scatters` |
//! | `sort.rs` | `SortModel`, `Sorts` |

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::Node;
use crate::memory::{size_class, Counters, Home, Homes};
use crate::plan::{PlanLimits, Region};
use crate::value::{DeviceId, RowSink, Value};

use super::{LostFlag, Turnstile};

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

/// A device's identity, limits, what its values cost and how its storage is kept.
pub trait DeviceModel {
    fn core(&self) -> &DeviceCore;
    /// `cpu`, or the GPU API and adapter, for `explain()`.
    fn name(&self) -> String;
    fn plan_limits(&self) -> PlanLimits;
    /// Device bytes a task may hold beyond its values: parameter blocks in uniform buffers
    /// (one block a dispatch or draw, kept until the batch's work is submitted).
    fn task_overhead_bytes(&self) -> u64 {
        super::budget::TASK_OVERHEAD_BYTES
    }
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
    fn takes_from_host(&self, _leaf: &Node) -> bool {
        false
    }
    /// Whether a pass's working arrays (a native sort's, a reduction's partial states) stay
    /// held until the batch is submitted (WebGPU keeps them for its recorded dispatches),
    /// not just through the pass.
    fn keeps_scratch_until_flush(&self) -> bool {
        false
    }
    /// Whether a renderer on this device draws from a buffer of draw arguments (WebGPU's
    /// `drawIndirect`): an evaluation then keeps `[rows, 1, 0, 0]` with each root whose rows
    /// are counted on the device.
    fn draws_indirect(&self) -> bool {
        false
    }
    /// What this device calls one kernel run and several (`("dispatch", "dispatches")`) for
    /// `explain()`'s kernel lines; `None`: no kernels of its own to show (the CPU).
    fn kernel_words(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// Frees the pool and every cache (`None`), or one cache.
    fn trim(&self, cache: Option<&str>);
    /// The most bytes the shared pool keeps (storage past it is freed on release).
    fn set_pool_cap(&self, bytes: u64);
    /// Frees everything the device holds; later use is `DESTROYED`.
    fn destroy(&self);
}

/// What a fused elementwise pass holds and runs.
pub trait RegionModel: DeviceModel {
    /// Device bytes one chunk task of `region` holds for the values its nodes compute where
    /// read (`Region::where_read`), besides its inputs and its output.
    fn where_read_scratch_bytes(&self, _region: &Region) -> u64 {
        0
    }
    /// The kernels one chunk task of the elementwise `region` runs: how many, and a line
    /// saying what they do (read only where `kernel_words` names kernels).
    fn describe_region(&self, _region: &Region) -> Result<(u64, String)> {
        Ok((0, String::new()))
    }
    /// Whether `Regions::walk` runs the walk `root` (`Op::is_walk`) as a pass of its own
    /// here; elsewhere the executor runs it as other ops' passes (`ir::compose_walk`).
    fn walks(&self, _root: &Node) -> bool {
        false
    }
    /// Whether the device's own walk of `root` reads its input `k` as one value (the
    /// executor joins one stored in parts).
    fn walk_joins_input(&self, _root: &Node, _k: usize) -> bool {
        false
    }
    /// Device bytes the walk `root` holds besides its inputs and output where the device
    /// walks it (a lookup's hash table).
    fn walk_scratch_bytes(&self, _root: &Node) -> u64 {
        0
    }
    /// The kernels the walk `root` runs where the device walks it, and a line saying what
    /// they do.
    fn describe_walk(&self, _root: &Node) -> (u64, String) {
        (1, "one loop over the rows in order".to_string())
    }
    /// The kernels one chunk task of the bin pass `region` (`Region::adds_to_bins`) runs,
    /// and a line saying what they do.
    fn describe_bins(&self, _region: &Region) -> (u64, String) {
        (
            1,
            "one loop over the rows computing each and adding it to its bin".to_string(),
        )
    }
    /// Kernels a bin pass runs once besides its tasks' (clearing the bins).
    fn bins_pass_kernels(&self, _region: &Region) -> u64 {
        0
    }
    /// Device bytes a bin pass's bins hold while its rows are added (the output's, by
    /// default).
    fn bins_bytes(&self, root: &Node) -> u64 {
        size_class(root.meta.length as u64 * 4, u64::MAX)
    }
}

/// What a reduction's passes hold and run.
pub trait ReductionModel: DeviceModel {
    /// Device bytes of `parts` partial states of the reduction `root`, as the device
    /// stores them.
    fn reduction_state_bytes(&self, root: &Node, parts: u32) -> u64 {
        let words = crate::ir::Reduction::state_words_of(root) as u64;
        size_class(
            parts as u64 * root.inputs[0].meta.size as u64 * words * 4,
            u64::MAX,
        )
    }
    /// Device bytes one chunk task of the reduction `root` over `rows` rows holds besides
    /// its inputs and the partial states of each chunk (partials of row groups).
    fn reduction_scratch_bytes(&self, _root: &Node, _rows: u32) -> u64 {
        0
    }
    /// Kernels of one combine round and of the final pass of the reduction `root`.
    fn reduction_tail_kernels(&self, _root: &Node) -> (u64, u64) {
        (0, 0)
    }
    /// The kernels one chunk task of the reduction `region` runs, and a line saying what
    /// they do.
    fn describe_reduction(&self, _region: &Region) -> (u64, String) {
        (0, String::new())
    }
}

/// What a scatter's pass holds and runs.
pub trait ScatterModel: DeviceModel {
    /// The kernels one chunk task of the scatter `region` runs, and a line saying what they do.
    fn describe_scatter(&self, _region: &Region) -> (u64, String) {
        (0, String::new())
    }
    /// Kernels the scatter pass of `region` runs once besides its tasks' (its clears).
    fn scatter_pass_kernels(&self, _region: &Region) -> u64 {
        0
    }
}

/// What a sort's pass holds and runs.
pub trait SortModel: DeviceModel {
    /// Whether `Sorts::sort_permutation_and_keys` runs a sort of `rows` rows by `keys`
    /// keys here; elsewhere the executor runs it as the IR's one-bit split passes
    /// (`ir::split_permutation`).
    fn sorts(&self, rows: u32, keys: usize) -> bool;
    /// Whether `sort_permutation_and_keys` reads a key stored in several chunks where it
    /// is; elsewhere the executor first joins each key into one value on the device.
    fn sorts_keys_in_chunks(&self) -> bool {
        false
    }
    /// Device bytes a sort of `rows` rows by `keys` keys holds besides its keys and its
    /// permutation.
    fn sort_scratch_bytes(&self, rows: u32, _keys: usize) -> u64 {
        split_sort_scratch_bytes(self, rows)
    }
    /// The kernels of this device's own sort of `sort` (a sort's pass, which writes its
    /// first key in order too where `writes_first_key`), and a line saying what they do.
    fn describe_sort(&self, _sort: &Node, _writes_first_key: bool) -> (u64, String) {
        (0, String::new())
    }
}

/// Bytes a one-bit split pass holds besides its keys: the flags, their scan, the
/// destinations and the previous permutation.
pub fn split_sort_scratch_bytes<D: DeviceModel + ?Sized>(device: &D, rows: u32) -> u64 {
    4 * device.value_bytes(DType::U32, 1, rows)
}

/// Every model of a device together, as the schedule, the budget and `explain` read it.
pub trait CostModel: RegionModel + ReductionModel + ScatterModel + SortModel {}

impl<T: RegionModel + ReductionModel + ScatterModel + SortModel + ?Sized> CostModel for T {}

/// The work one evaluation records, and submitting it.
#[allow(async_fn_in_trait)]
pub trait Batches: DeviceModel {
    /// Work recorded by one evaluation, run by `flush` and `finish`.
    type Batch;
    fn begin(&self, home: Home) -> Result<Self::Batch>;
    /// Runs everything recorded so far (before a read in the middle of a plan).
    async fn flush(&self, batch: &mut Self::Batch) -> Result<()>;
    /// Runs what is left and reports any error the device raised during the batch.
    async fn finish(&self, batch: Self::Batch) -> Result<()>;
}

/// Host data onto the device, and rows back.
#[allow(async_fn_in_trait)]
pub trait Transfers: Batches {
    /// A copy of host data on this device.
    fn upload(&self, batch: &mut Self::Batch, column: &Column) -> Result<Value>;
    /// Rows `start..end` of one of this device's values, handed to `sink` a piece at a time.
    async fn read_rows(
        &self,
        value: &Value,
        start: u32,
        end: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<()>;
    /// Rows `start..end` of each of `reads` (this device's values), each as one host array.
    /// A device may read them all in one round trip.
    async fn read_together(&self, reads: &[(&Value, u32, u32)]) -> Result<Vec<ColumnData>>;
}

/// Fused elementwise passes.
#[allow(async_fn_in_trait)]
pub trait Regions: Batches + RegionModel {
    /// A bin pass's totals (`Region::adds_to_bins`), which its chunk tasks add into.
    type Bins;
    /// Records (or runs) the pass of `region` over `leaves` (its leaves' values, in order).
    async fn run_region(
        &self,
        batch: &mut Self::Batch,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value>;
    /// The walk `root` over its inputs' stored chunks, in order, where `walks` says the
    /// device runs it: its output's chunks (a compaction's one, a scan's and a lookup's one
    /// per chunk of its first input).
    async fn walk(
        &self,
        _batch: &mut Self::Batch,
        _root: &Node,
        _inputs: &[Vec<Rc<Value>>],
    ) -> Result<Vec<Value>> {
        Err(super::internal("this device composes its walks"))
    }
    /// The totals of the bin count or sum `root`, every bin 0.
    async fn bins_target(&self, _batch: &mut Self::Batch, _root: &Node) -> Result<Self::Bins> {
        Err(super::internal("this device walks its bin counts"))
    }
    /// Records one chunk task of a bin pass: each row it computes added into `bins`.
    async fn add_to_bins(
        &self,
        _batch: &mut Self::Batch,
        _task: &Region,
        _leaves: &[Rc<Value>],
        _bins: &mut Self::Bins,
    ) -> Result<()> {
        Err(super::internal("this device walks its bin counts"))
    }
    /// The bin pass's output from its totals.
    async fn finish_bins(
        &self,
        _batch: &mut Self::Batch,
        _root: &Node,
        _bins: Self::Bins,
    ) -> Result<Value> {
        Err(super::internal("this device walks its bin counts"))
    }
}

/// Reductions: a partial state per chunk task, combine rounds, the final row.
#[allow(async_fn_in_trait)]
pub trait Reductions: Batches + ReductionModel {
    /// Partial states of a reduction, per part and lane, in the device's own storage.
    type States;
    /// Storage for `parts` partial states of the reduction `root`.
    fn reduction_states(
        &self,
        batch: &mut Self::Batch,
        root: &Node,
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
        root: &Node,
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
}

/// Scatters: rows written where their destinations say.
#[allow(async_fn_in_trait)]
pub trait Scatters: Batches + ScatterModel {
    /// The output of the scatter `root`, every row 0, which its chunk tasks write into: one
    /// value, or parts of consecutive rows where one binding cannot hold it all.
    async fn scatter_target(&self, batch: &mut Self::Batch, root: &Node) -> Result<Vec<Value>>;
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
}

/// The device's own sort (where `SortModel::sorts` says it runs one).
#[allow(async_fn_in_trait)]
pub trait Sorts: Batches + SortModel {
    /// The stable permutation ordering rows by the uint32 `keys` (each key's chunks, in
    /// order, or its one value; the most significant key first), each by its low `bits`
    /// bits, and the keys `sorted` (indices into `keys`, each one the device's plans let
    /// its sort write: `PlanLimits::sort_writes_keys`) in its order. Only the first
    /// `ordered_rows` rows are read; a device may find them alone (the CPU's top-k).
    async fn sort_permutation_and_keys(
        &self,
        batch: &mut Self::Batch,
        keys: &[&[Rc<Value>]],
        bits: &[u32],
        ordered_rows: u32,
        sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)>;
}

/// A future a `Backend` call returns.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + 'a>>;

/// A device the executor runs plans on (the CPU, WebGPU or WebGL2): every capability's
/// calls with the work they carry (a batch, partial states, bin totals) erased (`Erased`).
/// Object safe, so the executor and the code above it are compiled once, not once per
/// backend; each backend implements the typed capability traits above.
pub trait Backend: CostModel {
    fn begin(&self, home: Home) -> Result<Erased>;
    fn flush<'a>(&'a self, batch: &'a mut Erased) -> Pending<'a, ()>;
    fn finish(&self, batch: Erased) -> Pending<'_, ()>;
    fn upload(&self, batch: &mut Erased, column: &Column) -> Result<Value>;
    fn read_rows<'a>(
        &'a self,
        value: &'a Value,
        start: u32,
        end: u32,
        sink: &'a mut RowSink<'_>,
    ) -> Pending<'a, ()>;
    fn read_together<'a>(
        &'a self,
        reads: &'a [(&'a Value, u32, u32)],
    ) -> Pending<'a, Vec<ColumnData>>;
    fn run_region<'a>(
        &'a self,
        batch: &'a mut Erased,
        region: &'a Region,
        leaves: &'a [Rc<Value>],
    ) -> Pending<'a, Value>;
    fn walk<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
        inputs: &'a [Vec<Rc<Value>>],
    ) -> Pending<'a, Vec<Value>>;
    fn bins_target<'a>(&'a self, batch: &'a mut Erased, root: &'a Node) -> Pending<'a, Erased>;
    fn add_to_bins<'a>(
        &'a self,
        batch: &'a mut Erased,
        task: &'a Region,
        leaves: &'a [Rc<Value>],
        bins: &'a mut Erased,
    ) -> Pending<'a, ()>;
    fn finish_bins<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
        bins: Erased,
    ) -> Pending<'a, Value>;
    fn reduction_states(&self, batch: &mut Erased, root: &Node, parts: u32) -> Result<Erased>;
    #[allow(clippy::too_many_arguments)]
    fn reduce_chunk<'a>(
        &'a self,
        batch: &'a mut Erased,
        task: &'a Region,
        leaves: &'a [Rc<Value>],
        first_row: u64,
        states: &'a mut Erased,
        part: u32,
    ) -> Pending<'a, ()>;
    fn combine_states<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
        states: Erased,
        parts: u32,
        every: u32,
    ) -> Pending<'a, Erased>;
    fn finish_reduction<'a>(
        &'a self,
        batch: &'a mut Erased,
        region: &'a Region,
        states: Erased,
    ) -> Pending<'a, Value>;
    fn scatter_target<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
    ) -> Pending<'a, Vec<Value>>;
    fn scatter_rows<'a>(
        &'a self,
        batch: &'a mut Erased,
        task: &'a Region,
        destinations: &'a Value,
        written: Written<'a>,
        parts: &'a mut [Value],
    ) -> Pending<'a, ()>;
    fn sort_permutation_and_keys<'a>(
        &'a self,
        batch: &'a mut Erased,
        keys: &'a [&'a [Rc<Value>]],
        bits: &'a [u32],
        ordered_rows: u32,
        sorted: &'a [usize],
    ) -> Pending<'a, (Value, Vec<Value>)>;
}

/// A backend's own work (a batch, partial states, bin totals), its type erased for the
/// executor and given back to the backend's typed calls.
pub struct Erased(Box<dyn Any>);

impl Erased {
    fn new<T: 'static>(work: T) -> Erased {
        Erased(Box::new(work))
    }
    fn typed<T: 'static>(&mut self) -> Result<&mut T> {
        (self.0.downcast_mut()).ok_or_else(|| super::internal("another device's work"))
    }
    fn into_typed<T: 'static>(self) -> Result<T> {
        (self.0.downcast().map(|b| *b)).map_err(|_| super::internal("another device's work"))
    }
}

/// The batch and another of the backend's work (partial states, bin totals), typed.
fn typed_with<'e, B: 'static, T: 'static>(
    batch: &'e mut Erased,
    other: &'e mut Erased,
) -> Result<(&'e mut B, &'e mut T)> {
    Ok((batch.typed()?, other.typed()?))
}

/// The batch, typed, and another of the backend's work, unboxed.
fn typed_and<B: 'static, T: 'static>(batch: &mut Erased, other: Erased) -> Result<(&mut B, T)> {
    Ok((batch.typed()?, other.into_typed()?))
}

/// `future` boxed, or the error that came before it.
fn pending<'a, T: 'a>(future: Result<impl Future<Output = Result<T>> + 'a>) -> Pending<'a, T> {
    match future {
        Ok(future) => Box::pin(future),
        Err(e) => Box::pin(std::future::ready(Err(e))),
    }
}

impl<D> Backend for D
where
    D: Transfers + Regions + Reductions + Scatters + Sorts,
    D::Batch: 'static,
    D::Bins: 'static,
    D::States: 'static,
{
    fn begin(&self, home: Home) -> Result<Erased> {
        Ok(Erased::new(Batches::begin(self, home)?))
    }
    fn flush<'a>(&'a self, batch: &'a mut Erased) -> Pending<'a, ()> {
        pending(batch.typed().map(|batch| Batches::flush(self, batch)))
    }
    fn finish(&self, batch: Erased) -> Pending<'_, ()> {
        pending(batch.into_typed().map(|batch| Batches::finish(self, batch)))
    }
    fn upload(&self, batch: &mut Erased, column: &Column) -> Result<Value> {
        Transfers::upload(self, batch.typed()?, column)
    }
    fn read_rows<'a>(
        &'a self,
        value: &'a Value,
        start: u32,
        end: u32,
        sink: &'a mut RowSink<'_>,
    ) -> Pending<'a, ()> {
        Box::pin(Transfers::read_rows(self, value, start, end, sink))
    }
    fn read_together<'a>(
        &'a self,
        reads: &'a [(&'a Value, u32, u32)],
    ) -> Pending<'a, Vec<ColumnData>> {
        Box::pin(Transfers::read_together(self, reads))
    }
    fn run_region<'a>(
        &'a self,
        batch: &'a mut Erased,
        region: &'a Region,
        leaves: &'a [Rc<Value>],
    ) -> Pending<'a, Value> {
        pending(
            batch
                .typed()
                .map(|batch| Regions::run_region(self, batch, region, leaves)),
        )
    }
    fn walk<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
        inputs: &'a [Vec<Rc<Value>>],
    ) -> Pending<'a, Vec<Value>> {
        pending(
            batch
                .typed()
                .map(|batch| Regions::walk(self, batch, root, inputs)),
        )
    }
    fn bins_target<'a>(&'a self, batch: &'a mut Erased, root: &'a Node) -> Pending<'a, Erased> {
        let target = batch
            .typed()
            .map(|batch| Regions::bins_target(self, batch, root));
        pending(target.map(|target| async { Ok(Erased::new(target.await?)) }))
    }
    fn add_to_bins<'a>(
        &'a self,
        batch: &'a mut Erased,
        task: &'a Region,
        leaves: &'a [Rc<Value>],
        bins: &'a mut Erased,
    ) -> Pending<'a, ()> {
        pending(
            typed_with(batch, bins)
                .map(|(batch, bins)| Regions::add_to_bins(self, batch, task, leaves, bins)),
        )
    }
    fn finish_bins<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
        bins: Erased,
    ) -> Pending<'a, Value> {
        pending(
            typed_and(batch, bins)
                .map(|(batch, bins)| Regions::finish_bins(self, batch, root, bins)),
        )
    }
    fn reduction_states(&self, batch: &mut Erased, root: &Node, parts: u32) -> Result<Erased> {
        let states = Reductions::reduction_states(self, batch.typed()?, root, parts)?;
        Ok(Erased::new(states))
    }
    fn reduce_chunk<'a>(
        &'a self,
        batch: &'a mut Erased,
        task: &'a Region,
        leaves: &'a [Rc<Value>],
        first_row: u64,
        states: &'a mut Erased,
        part: u32,
    ) -> Pending<'a, ()> {
        pending(typed_with(batch, states).map(|(batch, states)| {
            Reductions::reduce_chunk(self, batch, task, leaves, first_row, states, part)
        }))
    }
    fn combine_states<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
        states: Erased,
        parts: u32,
        every: u32,
    ) -> Pending<'a, Erased> {
        let combined = typed_and(batch, states).map(|(batch, states)| {
            Reductions::combine_states(self, batch, root, states, parts, every)
        });
        pending(combined.map(|combined| async { Ok(Erased::new(combined.await?)) }))
    }
    fn finish_reduction<'a>(
        &'a self,
        batch: &'a mut Erased,
        region: &'a Region,
        states: Erased,
    ) -> Pending<'a, Value> {
        pending(
            typed_and(batch, states)
                .map(|(batch, states)| Reductions::finish_reduction(self, batch, region, states)),
        )
    }
    fn scatter_target<'a>(
        &'a self,
        batch: &'a mut Erased,
        root: &'a Node,
    ) -> Pending<'a, Vec<Value>> {
        pending(
            batch
                .typed()
                .map(|batch| Scatters::scatter_target(self, batch, root)),
        )
    }
    fn scatter_rows<'a>(
        &'a self,
        batch: &'a mut Erased,
        task: &'a Region,
        destinations: &'a Value,
        written: Written<'a>,
        parts: &'a mut [Value],
    ) -> Pending<'a, ()> {
        pending(
            batch.typed().map(|batch| {
                Scatters::scatter_rows(self, batch, task, destinations, written, parts)
            }),
        )
    }
    fn sort_permutation_and_keys<'a>(
        &'a self,
        batch: &'a mut Erased,
        keys: &'a [&'a [Rc<Value>]],
        bits: &'a [u32],
        ordered_rows: u32,
        sorted: &'a [usize],
    ) -> Pending<'a, (Value, Vec<Value>)> {
        pending(batch.typed().map(|batch| {
            Sorts::sort_permutation_and_keys(self, batch, keys, bits, ordered_rows, sorted)
        }))
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
