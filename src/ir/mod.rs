//! The backend-neutral IR: a DAG of typed nodes built lazily by the operations.
//!
//! Each node knows its output type, row size, row count and constness up front (the
//! deduction rules of `api.md`), so backends can plan and fuse without running anything.
//! Every op except a reduction is row-local: output row `r` depends only on row `r` of its
//! inputs (plus random access into a materialized `gather` source or segment list), which is
//! what lets one graph run per chunk of rows and lets chains of ops fuse into one pass.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::value::{DeviceId, Output, HOST};

mod chunked;
mod counted;
mod cumulative;
mod group;
mod group_stages;
mod histogram;
mod join;
mod nulls;
mod ops;
mod order;
mod predicate;
mod reduce;
mod scan;
mod scatter;
mod segment;
mod sort;
pub use chunked::*;
pub use counted::*;
pub use cumulative::*;
pub use group::*;
pub use group_stages::{GroupStages, PartialRows};
pub use histogram::*;
pub use join::*;
pub use nulls::*;
pub use ops::*;
pub use order::*;
pub use predicate::*;
pub use reduce::*;
pub use scan::*;
pub use scatter::*;
pub use segment::*;
pub use sort::*;

pub type NodeRef = Rc<Node>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Pow,
    Minimum,
    Maximum,
    /// The remainder with the divisor's sign (Python's `%`).
    Mod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Sqrt,
    Abs,
    Sin,
    Cos,
    Tan,
    Exp,
    Log,
    Floor,
    Ceil,
    Trunc,
    /// Halves to even.
    Round,
    Sign,
}

impl BinaryOp {
    pub fn parse(name: &str) -> Result<BinaryOp> {
        Ok(match name {
            "add" => BinaryOp::Add,
            "subtract" => BinaryOp::Subtract,
            "multiply" => BinaryOp::Multiply,
            "divide" => BinaryOp::Divide,
            "pow" => BinaryOp::Pow,
            "minimum" => BinaryOp::Minimum,
            "maximum" => BinaryOp::Maximum,
            "mod" => BinaryOp::Mod,
            _ => {
                return Err(GpuTableError::invalid(format!(
                    "unknown binary operation '{name}'"
                )))
            }
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Subtract => "subtract",
            BinaryOp::Multiply => "multiply",
            BinaryOp::Divide => "divide",
            BinaryOp::Pow => "pow",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Mod => "mod",
        }
    }
}

impl UnaryOp {
    pub fn parse(name: &str) -> Result<UnaryOp> {
        Ok(match name {
            "sqrt" => UnaryOp::Sqrt,
            "abs" => UnaryOp::Abs,
            "sin" => UnaryOp::Sin,
            "cos" => UnaryOp::Cos,
            "tan" => UnaryOp::Tan,
            "exp" => UnaryOp::Exp,
            "log" => UnaryOp::Log,
            "floor" => UnaryOp::Floor,
            "ceil" => UnaryOp::Ceil,
            "trunc" => UnaryOp::Trunc,
            "round" => UnaryOp::Round,
            "sign" => UnaryOp::Sign,
            _ => {
                return Err(GpuTableError::invalid(format!(
                    "unknown unary operation '{name}'"
                )))
            }
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Round => "round",
            UnaryOp::Sign => "sign",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Data supplied by the user (`fromArray`, `fromConstant`, literals, vectors).
    Source,
    Binary(BinaryOp),
    Unary(UnaryOp),
    Interleave,
    Swizzle(Vec<u32>),
    /// A `uint8` 1 or 0 per lane; inputs read in their own types (predicate.rs).
    Predicate(Predicate),
    /// inputs: condition, whenTrue, whenFalse
    Select,
    /// The uint32 key that orders a size-1 input as argsort does (order.rs): its type's
    /// width of bits (floats by value, -0 as +0, NaN after every number), inverted within
    /// that width where `descending` (NaN still last).
    SortKey {
        descending: bool,
    },
    Dot,
    Length,
    EqualAll,
    Fround,
    Sequence {
        start: i64,
        step: i64,
    },
    /// inputs: ids, source
    Gather,
    /// inputs: segment starts; the node's length is the vertex count
    SegmentedMap,
    /// inputs: the reduced column, and optionally its validity (uint8, 0: skipped)
    Reduce(Reduction),
    /// Folds of `SCAN_FAN_IN` consecutive input rows (scan.rs); the input read whole.
    GroupFold(ScanFold),
    /// inputs: a scanned column and its `GroupFold` levels, all read whole (scan.rs); each
    /// row folds the rows before it (and itself where `inclusive`).
    ScanApply {
        fold: ScanFold,
        inclusive: bool,
    },
    /// inputs: a sorted column (read whole), queries (scan.rs).
    SearchSorted {
        upper: bool,
    },
    /// inputs: values, segment offsets, and where long segments may be, the sums of their
    /// blocks (`SegmentBlocks`); all read whole (segment.rs).
    SegmentSum,
    /// inputs: values, segment offsets, both read whole: a long segment's block sums
    /// (segment.rs).
    SegmentBlocks,
    /// The input's values in rows of the node's size, read whole (scan.rs).
    Reshape,
    /// inputs: destinations, values; the node's length is its own (scatter.rs). Its pass
    /// walks the input rows, so it is a region of its own over materialized inputs.
    Scatter,
    /// The stable permutation sorting rows by uint32 keys (inputs, most significant first,
    /// each read whole), each by its low `bits` bits (sort.rs): a pass of its own, native
    /// on some backends, composed on the others. Only its first `ordered_rows` rows are
    /// read (`topK`'s slice), and only they need be right: a backend may leave the rest.
    SortPermutation {
        bits: Vec<u32>,
        ordered_rows: u32,
    },
    /// The numbers of the rows whose uint8 flag (the input, read whole) is nonzero, in
    /// order, then `u32::MAX` up to the input's length: ascending, so `searchSorted` counts
    /// them (counted.rs). A walk (`is_walk`).
    Compact,
    /// Row r folds the input's rows before it (and itself where `inclusive`) across its
    /// chunks, per lane, in the input's type (`sum`'s type of its class; scan.rs). A walk
    /// (`is_walk`).
    Scan {
        fold: ScanFold,
        inclusive: bool,
    },
    /// Row b counts the rows of the uint32 input holding b, for b below the node's `bins`
    /// rows; larger ids are not counted (histogram.rs). A walk (`is_walk`) of its stored
    /// input, or a pass adding the input rows it computes into the bins
    /// (`PlanLimits::adds_rows_to_bins`).
    BinCount {
        bins: u32,
    },
    /// Row b sums the values of the input's rows whose id is b, for b below the node's
    /// `bins` rows: the input is `[id, value]` pairs in the sum's type (ids below 2^24, exact
    /// as float32). A walk or a bin pass, as `BinCount`.
    BinSum {
        bins: u32,
    },
    /// inputs: keys, table keys and, where some table rows cannot match (null, past a
    /// filter's count), their uint8 flags, all read whole: per key row the lowest table row
    /// holding an equal key (as `equal` compares; NaN never matches), or -1, as sint32
    /// (join.rs). A walk (`is_walk`): a device's hash table, or the sort and search it is
    /// composed of.
    Lookup,
    /// Rows of each input in order, chunks concatenated (a view: no kernel of its own).
    Concat,
    /// Every lane converted to the node's type (api.md's `cast` rules).
    Cast(DType),
    /// Rows `start..start + length` of the input (a view of the chunks it touches).
    Slice {
        start: u32,
    },
    /// The input's rows with the node's chunk boundaries.
    Rechunk,
    /// Internal to the executor: the rows `start..end` of each input, in order, as one
    /// chunk (inputs read at any row). Assembles a chunk that spans several stored ones.
    Rows(Vec<(u32, u32)>),
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Source => "source",
            Op::Binary(op) => op.name(),
            Op::Unary(op) => op.name(),
            Op::Predicate(p) => p.name(),
            Op::Interleave => "interleave",
            Op::Swizzle(_) => "swizzle",
            Op::Select => "select",
            Op::SortKey { .. } => "sortKey",
            Op::Dot => "dot",
            Op::Length => "length",
            Op::EqualAll => "equalAll",
            Op::Fround => "fround",
            Op::Sequence { .. } => "sequence",
            Op::Gather => "gather",
            Op::SegmentedMap => "segmentedMap",
            Op::Reduce(r) => r.kind.name(),
            Op::GroupFold(_) => "groupFold",
            Op::ScanApply { .. } => "scanApply",
            Op::SearchSorted { .. } => "searchSorted",
            Op::Scatter => "scatter",
            Op::SortPermutation { .. } => "sort",
            Op::Compact => "compact",
            Op::Scan { .. } => "scan",
            Op::BinCount { .. } => "binCount",
            Op::BinSum { .. } => "binSum",
            Op::Lookup => "lookup",
            Op::SegmentSum => "segmentSum",
            Op::SegmentBlocks => "segmentBlocks",
            Op::Reshape => "reshape",
            Op::Cast(_) => "cast",
            Op::Concat => "concat",
            Op::Slice { .. } => "slice",
            Op::Rechunk => "rechunk",
            Op::Rows(_) => "rows",
        }
    }

    /// Whether input `index` is read at the output row (fusable) rather than by random access
    /// into a whole materialized column.
    pub fn reads_input_at_row(&self, index: usize) -> bool {
        !(matches!(
            (self, index),
            (Op::Gather, 1) | (Op::SegmentedMap, 0) | (Op::SearchSorted { .. }, 0)
        ) || self.is_assembly()
            || matches!(
                self,
                Op::Rows(_)
                    | Op::GroupFold(_)
                    | Op::ScanApply { .. }
                    | Op::SegmentSum
                    | Op::SegmentBlocks
                    | Op::Reshape
                    | Op::SortPermutation { .. }
                    | Op::Compact
                    | Op::Scan { .. }
                    | Op::Lookup
            ))
    }

    /// Whether input `index`, read at rows other than the output row, may still be computed
    /// in the consumer's kernel at the rows it reads: a segmented sum's values, each read
    /// once (the products of a sparse matrix-vector product, say, need not be stored).
    pub fn computes_input_where_read(&self, index: usize) -> bool {
        matches!((self, index), (Op::SegmentSum | Op::SegmentBlocks, 0))
    }

    /// Whether the op computes from its output row's index (kernels add their task's first
    /// row to the row they compute).
    pub fn numbers_rows(&self) -> bool {
        matches!(
            self,
            Op::Sequence { .. }
                | Op::GroupFold(_)
                | Op::ScanApply { .. }
                | Op::SegmentSum
                | Op::SegmentBlocks
                | Op::Reshape
        )
    }

    /// Ops whose output chunks are made of their inputs' stored rows (shared where a chunk
    /// is a whole stored chunk, copied otherwise) by the executor, not computed by a kernel.
    pub fn is_assembly(&self) -> bool {
        matches!(self, Op::Concat | Op::Slice { .. } | Op::Rechunk)
    }

    /// A pass of its own reading its inputs whole, in row order: the device's own kernels
    /// where it runs them (`RegionModel::walks`), composed of other ops' passes elsewhere
    /// (`compose_walk`).
    pub fn is_walk(&self) -> bool {
        matches!(
            self,
            Op::Compact | Op::Scan { .. } | Op::BinCount { .. } | Op::BinSum { .. } | Op::Lookup
        )
    }

    /// Whether a lane of the output reads its inputs at other lanes (or at all of them).
    pub fn reads_across_lanes(&self) -> bool {
        matches!(
            self,
            Op::Interleave | Op::Swizzle(_) | Op::Fround | Op::Dot | Op::Length | Op::EqualAll
        )
    }
}

/// What every backend needs to know about a node's output before running it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub dtype: DType,
    pub size: u32,
    /// Row count; 1 for constants. For rows counted on the device (counted.rs), the
    /// capacity computed: the rows of the result are the first ones.
    pub length: u32,
    pub constant: bool,
}

/// A fact about a node's output known only once the device computes it, which the engine
/// reads back (a few bytes) and checks after the evaluation computing the node.
#[derive(Clone, Debug)]
pub enum Check {
    /// A reduction over the rows a `where` mask keeps: the kept rows per lane (`reduce_where`);
    /// none kept is EMPTY_INPUT.
    KeptRows(NodeRef),
    /// A result packed into `capacity` rows (a join's pairs): `rows` (uint32, wrapping) and
    /// `about` (float32, the same sum, which never wraps) are the rows it needs; more than
    /// the capacity is LIMIT_EXCEEDED.
    Capacity {
        rows: NodeRef,
        about: NodeRef,
        capacity: u32,
        what: &'static str,
    },
    /// A histogram's range found on the device (x's extent, float32 `[lo, hi]`): an
    /// infinite end is INVALID_ARGUMENT, as a range given must be finite.
    FiniteRange(NodeRef),
    /// A uint32 count of rows breaking a rule (a histogram's edges out of order): any is
    /// INVALID_ARGUMENT, with these words.
    Refused(NodeRef, &'static str),
}

impl Check {
    /// The nodes the engine reads back.
    pub fn nodes(&self) -> Vec<NodeRef> {
        match self {
            Check::KeptRows(kept) | Check::FiniteRange(kept) | Check::Refused(kept, _) => {
                vec![kept.clone()]
            }
            Check::Capacity { rows, about, .. } => vec![rows.clone(), about.clone()],
        }
    }
}

#[derive(Default)]
struct NodeState {
    /// The output on each device it is on; the first is where it was computed or loaded,
    /// the others are copies made when another device read it.
    outputs: Vec<Output>,
    /// The device holding the evaluator's materialized output (api.md's `evaluated` and
    /// `device`): where it was last evaluated, or a device an input was copied to for a
    /// graph. User data in host memory is not one: a source is materialized once evaluated
    /// or uploaded.
    materialized: Option<DeviceId>,
    /// For a node whose rows are counted on the device: the rows of each of its chunks,
    /// read back by the evaluation that computed it (counted.rs).
    settled: Option<Chunks>,
    destroyed: bool,
}

/// Row counts of a node's chunks, in order (one chunk for an unchunked column).
pub type Chunks = Rc<[u32]>;

pub struct Node {
    pub id: u64,
    pub op: Op,
    pub inputs: Vec<NodeRef>,
    pub meta: Meta,
    /// Sums to `meta.length`; a reduction's output and a constant are one chunk.
    pub chunks: Chunks,
    /// `chunk_offsets`, made once: executors and projections look rows up per chunk task.
    offsets: std::cell::OnceCell<Rc<[u64]>>,
    /// For `concat`: the first row of each input, and the end.
    input_offsets: std::cell::OnceCell<Rc<[u64]>>,
    /// What the engine checks after the evaluation computing this node (`Check`).
    check: std::cell::OnceCell<Check>,
    /// uint8 flags, 0 where a row is null, chunked like the node (nulls.rs); none when
    /// every row is valid.
    validity: std::cell::OnceCell<NodeRef>,
    /// Where the rows are counted on the device (a filter's, say): how many of the node's
    /// rows are rows of the result (counted.rs).
    counted: std::cell::OnceCell<Counted>,
    /// For a filter's mask: its compaction, count and counts per chunk of the filtered
    /// column (with that column's chunks), shared by every filter by this mask while one of
    /// them lives (weak: they read the mask), so a table's columns run one compaction.
    kept_places: RefCell<Option<([std::rc::Weak<Node>; 3], Chunks)>>,
    /// For a group-by's result: what it groups, for grouping in parts (group_stages.rs).
    group_stages: std::cell::OnceCell<Rc<GroupStages>>,
    /// For a filter's result: the column filtered and the mask, for filtering in parts.
    filtered: std::cell::OnceCell<(NodeRef, NodeRef)>,
    /// The least and greatest of its 32-bit integer values stored in host memory, once read
    /// (group.rs `host_range`): a stored output never changes.
    stored_range: std::cell::OnceCell<(i64, i64)>,
    state: RefCell<NodeState>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t{} = {}{:?}", self.id, self.op.name(), self.meta)
    }
}

/// Dropping a long chain must not recurse once per node: wasm stacks are small.
impl Drop for Node {
    fn drop(&mut self) {
        let mut pending = std::mem::take(&mut self.inputs);
        while let Some(input) = pending.pop() {
            if let Ok(mut node) = Rc::try_unwrap(input) {
                pending.append(&mut node.inputs);
            }
        }
    }
}

static NEXT_NODE_ID: AtomicU64 = AtomicU64::new(1);

impl Node {
    fn new(
        op: Op,
        inputs: Vec<NodeRef>,
        meta: Meta,
        chunks: Chunks,
        output: Option<Output>,
    ) -> NodeRef {
        Rc::new(Node {
            id: NEXT_NODE_ID.fetch_add(1, Ordering::Relaxed),
            op,
            inputs,
            meta,
            chunks,
            offsets: std::cell::OnceCell::new(),
            input_offsets: std::cell::OnceCell::new(),
            check: std::cell::OnceCell::new(),
            kept_places: RefCell::new(None),
            group_stages: std::cell::OnceCell::new(),
            filtered: std::cell::OnceCell::new(),
            stored_range: std::cell::OnceCell::new(),
            validity: std::cell::OnceCell::new(),
            counted: std::cell::OnceCell::new(),
            state: RefCell::new(NodeState {
                materialized: output.as_ref().map(|o| o.device).filter(|&d| d != HOST),
                outputs: output.into_iter().collect(),
                settled: None,
                destroyed: false,
            }),
        })
    }

    /// What the engine checks after computing this node.
    pub fn check(&self) -> Option<&Check> {
        self.check.get()
    }

    /// A filter by this mask's compaction, its count and its counts per chunk of the
    /// filtered column, with that column's chunks, if they still live.
    pub(crate) fn kept_places(&self) -> Option<([NodeRef; 3], Chunks)> {
        let cache = self.kept_places.borrow();
        let ([kept, total, chunks], layout) = cache.as_ref()?;
        let nodes = [kept.upgrade()?, total.upgrade()?, chunks.upgrade()?];
        (nodes.iter().all(|n| !n.is_destroyed())).then(|| (nodes, layout.clone()))
    }

    /// Records a filter by this mask's compaction, count and counts per chunk of `layout`.
    pub(crate) fn share_kept_places(&self, nodes: &[NodeRef; 3], layout: Chunks) {
        *self.kept_places.borrow_mut() = Some((nodes.each_ref().map(Rc::downgrade), layout));
    }

    /// What the group-by this node is a result of groups, where it can group in parts.
    pub fn group_stages(&self) -> Option<&Rc<GroupStages>> {
        self.group_stages.get()
    }

    pub(super) fn set_group_stages(&self, stages: Rc<GroupStages>) {
        let _ = self.group_stages.set(stages);
    }

    /// For a filter's result: the column it filters and the mask, where it can filter in
    /// parts (a column not counted itself).
    pub fn filtered(&self) -> Option<&(NodeRef, NodeRef)> {
        self.filtered.get()
    }

    /// The node's null flags (`nulls.rs`), if any row may be null.
    pub fn validity(&self) -> Option<&NodeRef> {
        self.validity.get()
    }

    /// How the node's rows are counted on the device, if they are (counted.rs).
    pub fn counted(&self) -> Option<&Counted> {
        self.counted.get()
    }

    /// The rows of each chunk of a counted node, once an evaluation has read them back.
    pub fn settled(&self) -> Option<Chunks> {
        self.state.borrow().settled.clone()
    }

    /// Records the rows of each chunk of a counted node, read back after its evaluation.
    pub fn settle(&self, chunks: Chunks) {
        self.state.borrow_mut().settled = Some(chunks);
    }

    /// The rows of the result (api.md's `length`): known up front, or for a counted node
    /// once an evaluation has counted them.
    pub fn known_length(&self) -> Option<u32> {
        match self.counted() {
            None => Some(self.meta.length),
            Some(_) => self.settled().map(|c| c.iter().sum()),
        }
    }

    /// The chunks of the result: known up front, or for a counted node once evaluated.
    pub fn known_chunks(&self) -> Option<Chunks> {
        match self.counted() {
            None => Some(self.chunks.clone()),
            Some(_) => self.settled(),
        }
    }

    /// Where the output was computed or loaded (sources always have one until destroyed).
    pub fn home(&self) -> Option<Output> {
        self.state.borrow().outputs.first().cloned()
    }

    /// The output on `device`, if it is there.
    pub fn output_on(&self, device: DeviceId) -> Option<Output> {
        self.state
            .borrow()
            .outputs
            .iter()
            .find(|v| v.device == device)
            .cloned()
    }

    /// The output in host memory, if it is there (any CPU device reads it in place).
    pub fn host_output(&self) -> Option<Output> {
        self.state
            .borrow()
            .outputs
            .iter()
            .find(|v| v.in_host_memory())
            .cloned()
    }

    /// Records an output (the first one is the home; later ones are copies).
    pub fn add_output(&self, output: Output) {
        self.state.borrow_mut().outputs.push(output);
    }

    /// Makes `output` the only copy (a table moved onto a device keeps no host copy).
    pub fn replace_outputs(&self, output: Output) {
        let old = std::mem::replace(&mut self.state.borrow_mut().outputs, vec![output]);
        drop(old);
    }

    /// The device holding the materialized output, if one does (see `NodeState`).
    pub fn materialized_on(&self) -> Option<DeviceId> {
        self.state.borrow().materialized
    }

    /// Records that `device` holds the output now (it was evaluated or put there).
    pub fn materialize_on(&self, device: DeviceId) {
        self.state.borrow_mut().materialized = Some(device);
    }

    /// Records that `device` holds a copy an evaluation made of this input, unless another
    /// device already holds the materialized output.
    pub fn materialize_copy_on(&self, device: DeviceId) {
        self.state.borrow_mut().materialized.get_or_insert(device);
    }

    pub fn is_destroyed(&self) -> bool {
        self.state.borrow().destroyed
    }

    pub fn is_source(&self) -> bool {
        self.op == Op::Source
    }

    /// Whether the node has data anywhere (a source's, or a computed output): planning
    /// reads it rather than computing it.
    pub fn has_output(&self) -> bool {
        !self.state.borrow().outputs.is_empty()
    }

    /// `read()`'s range of the node's stored values, read once it has one.
    pub(crate) fn stored_range(
        &self,
        read: impl FnOnce() -> Option<(i64, i64)>,
    ) -> Option<(i64, i64)> {
        if let Some(&range) = self.stored_range.get() {
            return Some(range);
        }
        let range = read()?;
        Some(*self.stored_range.get_or_init(|| range))
    }

    /// Row offset of each chunk, and the end: `chunks.len() + 1` entries.
    pub fn chunk_offsets(&self) -> Rc<[u64]> {
        self.offsets
            .get_or_init(|| chunk_offsets(&self.chunks).into())
            .clone()
    }

    /// The first row of each input in this node's rows (stored rows: a constant's one), and
    /// the end.
    pub fn input_offsets(&self) -> Rc<[u64]> {
        self.input_offsets
            .get_or_init(|| {
                let rows: Vec<u32> = self
                    .inputs
                    .iter()
                    .map(|i| chunked::stored_rows(i))
                    .collect();
                chunk_offsets(&rows).into()
            })
            .clone()
    }

    /// What a destroyed handle keeps in place of its node: destroyed, reading nothing, with
    /// its type, rows and chunks. The null flags and counts the node held (which other
    /// nodes may share) are then freed with their last holder, not with the handle.
    pub fn tombstone(&self) -> NodeRef {
        let destroyed = |meta: Meta, chunks: Chunks| {
            let node = Node::new(Op::Source, vec![], meta, chunks, None);
            node.state.borrow_mut().destroyed = true;
            node
        };
        let node = destroyed(self.meta, self.chunks.clone());
        if self.counted().is_some() {
            // Its rows stay unknown, as a destroyed counted node's are.
            let meta = Meta {
                dtype: DType::U32,
                size: 1,
                length: 1,
                constant: true,
            };
            let count = destroyed(meta, chunked::single_chunk(1));
            let _ = node.counted.set(Counted::new(count.clone(), count));
        }
        node
    }

    /// Releases the output and makes the node unusable.
    pub fn destroy(&self) {
        let old = {
            let mut state = self.state.borrow_mut();
            state.destroyed = true;
            state.materialized = None;
            state.settled = None;
            std::mem::take(&mut state.outputs)
        };
        drop(old);
    }

    /// Drops a computed output so it is recomputed on demand. A source keeps its data: the
    /// copies made of user data in host memory are dropped, but data only a device holds
    /// (a table loaded there) stays.
    pub fn release_output(&self) {
        let old = {
            let mut state = self.state.borrow_mut();
            let keeps_data = self.is_source() && !state.outputs.iter().any(|o| o.device == HOST);
            if keeps_data {
                return;
            }
            state.materialized = None;
            state.settled = None;
            let (host, copies): (Vec<Output>, Vec<Output>) = std::mem::take(&mut state.outputs)
                .into_iter()
                .partition(|o| o.device == HOST && self.is_source());
            state.outputs = host;
            copies
        };
        drop(old);
    }

    pub fn check_alive(&self) -> Result<()> {
        if self.is_destroyed() {
            return Err(GpuTableError::new(
                ErrorCode::Destroyed,
                format!("evaluator #{} was destroyed", self.id),
            ));
        }
        // A view borrows its inputs' storage (through views of views): it ends with them,
        // and lets go of its share.
        if self.op.is_assembly() {
            // Each view once: views of one view shared at every level would double the walk
            // (only views are remembered: a view of stored values allocates nothing here).
            let mut seen = std::collections::HashSet::new();
            let mut pending: Vec<&NodeRef> = self.inputs.iter().collect();
            while let Some(input) = pending.pop() {
                if input.op.is_assembly() && !seen.insert(input.id) {
                    continue;
                }
                if input.is_destroyed() {
                    self.release_output();
                    return Err(GpuTableError::new(
                        ErrorCode::Destroyed,
                        format!(
                            "evaluator #{} is a view of #{}, which was destroyed",
                            self.id, input.id
                        ),
                    ));
                }
                if input.op.is_assembly() {
                    pending.extend(input.inputs.iter());
                }
            }
        }
        Ok(())
    }
}

/// A leaf standing for an output computed already: the executor's handle on an
/// intermediate that a plan of its own reads (a composed sort's keys).
pub fn computed(meta: Meta, chunks: Chunks, output: Output) -> NodeRef {
    Node::new(Op::Source, Vec::new(), meta, chunks, Some(output))
}

/// Row offset of each chunk, and the end.
pub fn chunk_offsets(chunks: &[u32]) -> Vec<u64> {
    let mut offsets = Vec::with_capacity(chunks.len() + 1);
    let mut at = 0u64;
    offsets.push(0);
    for &rows in chunks {
        at += rows as u64;
        offsets.push(at);
    }
    offsets
}

/// Every node reachable from `roots`, inputs before consumers, each once.
pub fn topological_order(roots: &[NodeRef]) -> Vec<NodeRef> {
    topological_order_with(roots, &|n: &NodeRef| n.has_output())
}

/// `topological_order`, where `is_leaf` says which nodes' inputs are not needed.
pub fn topological_order_with(
    roots: &[NodeRef],
    is_leaf: &dyn Fn(&NodeRef) -> bool,
) -> Vec<NodeRef> {
    let mut seen = std::collections::HashSet::new();
    let mut order = Vec::new();
    // Iterative DFS: user graphs can be deep chains, and wasm stacks are small.
    let mut stack: Vec<(NodeRef, bool)> = roots.iter().rev().map(|r| (r.clone(), false)).collect();
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            order.push(node);
            continue;
        }
        if !seen.insert(node.id) {
            continue;
        }
        stack.push((node.clone(), true));
        // A materialized node is a leaf for planning: its inputs are not needed again.
        if !is_leaf(&node) {
            for input in node.inputs.iter().rev() {
                if !seen.contains(&input.id) {
                    stack.push((input.clone(), false));
                }
            }
        }
    }
    order
}

/// Every node reachable from `roots`, through materialized nodes too.
pub fn all_nodes(roots: &[NodeRef]) -> Vec<NodeRef> {
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<NodeRef> = roots.to_vec();
    let mut out = Vec::new();
    while let Some(node) = stack.pop() {
        if seen.insert(node.id) {
            stack.extend(node.inputs.iter().cloned());
            out.push(node);
        }
    }
    out
}
