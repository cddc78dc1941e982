//! The backend-neutral IR: a DAG of typed nodes built lazily by the operations.
//!
//! Each node knows its output type, row size, row count and constness up front (the
//! deduction rules of `api.md`), so backends can plan and fuse without running anything.
//! Every op except `extent` is row-local: output row `r` depends only on row `r` of its
//! inputs (plus random access into a materialized `gather` source or segment list), which is
//! what lets one graph run per chunk of rows and lets chains of ops fuse into one pass.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::column::{element_count, Column, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::value::{DeviceId, Value};

pub type NodeRef = Rc<Node>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Pow,
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
}

impl BinaryOp {
    pub fn parse(name: &str) -> Result<BinaryOp> {
        Ok(match name {
            "add" => BinaryOp::Add,
            "subtract" => BinaryOp::Subtract,
            "multiply" => BinaryOp::Multiply,
            "divide" => BinaryOp::Divide,
            "pow" => BinaryOp::Pow,
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
    /// inputs: condition, whenTrue, whenFalse
    Select,
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
    Extent,
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Source => "source",
            Op::Binary(op) => op.name(),
            Op::Unary(op) => op.name(),
            Op::Interleave => "interleave",
            Op::Swizzle(_) => "swizzle",
            Op::Select => "select",
            Op::Dot => "dot",
            Op::Length => "length",
            Op::EqualAll => "equalAll",
            Op::Fround => "fround",
            Op::Sequence { .. } => "sequence",
            Op::Gather => "gather",
            Op::SegmentedMap => "segmentedMap",
            Op::Extent => "extent",
        }
    }

    /// Whether input `index` is read at the output row (fusable) rather than by random access
    /// into a whole materialized column.
    pub fn reads_input_at_row(&self, index: usize) -> bool {
        !matches!((self, index), (Op::Gather, 1) | (Op::SegmentedMap, 0))
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
    /// Logical row count; 1 for constants.
    pub length: u32,
    pub constant: bool,
}

#[derive(Default)]
struct NodeState {
    /// The output on each device it is on; the first is where it was computed or loaded,
    /// the others are copies made when another device read it.
    values: Vec<Rc<Value>>,
    destroyed: bool,
}

pub struct Node {
    pub id: u64,
    pub op: Op,
    pub inputs: Vec<NodeRef>,
    pub meta: Meta,
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
    fn new(op: Op, inputs: Vec<NodeRef>, meta: Meta, value: Option<Value>) -> NodeRef {
        Rc::new(Node {
            id: NEXT_NODE_ID.fetch_add(1, Ordering::Relaxed),
            op,
            inputs,
            meta,
            state: RefCell::new(NodeState {
                values: value.into_iter().map(Rc::new).collect(),
                destroyed: false,
            }),
        })
    }

    /// Where the output was computed or loaded (sources always have one until destroyed).
    pub fn home(&self) -> Option<Rc<Value>> {
        self.state.borrow().values.first().cloned()
    }

    /// The output on `device`, if it is there.
    pub fn value_on(&self, device: DeviceId) -> Option<Rc<Value>> {
        self.state
            .borrow()
            .values
            .iter()
            .find(|v| v.device == device)
            .cloned()
    }

    /// The output in host memory, if it is there (any CPU device reads it in place).
    pub fn host_value(&self) -> Option<Rc<Value>> {
        self.state
            .borrow()
            .values
            .iter()
            .find(|v| v.host_column().is_some())
            .cloned()
    }

    /// Records an output (the first one is the home; later ones are copies).
    pub fn add_value(&self, value: Rc<Value>) {
        self.state.borrow_mut().values.push(value);
    }

    /// Makes `value` the only copy (a table moved onto a device keeps no host copy).
    pub fn replace_values(&self, value: Rc<Value>) {
        let old = std::mem::replace(&mut self.state.borrow_mut().values, vec![value]);
        drop(old);
    }

    pub fn is_destroyed(&self) -> bool {
        self.state.borrow().destroyed
    }

    pub fn is_source(&self) -> bool {
        self.op == Op::Source
    }

    pub fn is_evaluated(&self) -> bool {
        !self.state.borrow().values.is_empty()
    }

    /// Releases the output and makes the node unusable.
    pub fn destroy(&self) {
        let old = {
            let mut state = self.state.borrow_mut();
            state.destroyed = true;
            std::mem::take(&mut state.values)
        };
        drop(old);
    }

    /// Drops a computed output so it is recomputed on demand; sources keep their data.
    pub fn release_output(&self) {
        if !self.is_source() {
            let old = std::mem::take(&mut self.state.borrow_mut().values);
            drop(old);
        }
    }

    pub fn check_alive(&self) -> Result<()> {
        if self.is_destroyed() {
            return Err(GpuTableError::new(
                ErrorCode::Destroyed,
                format!("evaluator #{} was destroyed", self.id),
            ));
        }
        Ok(())
    }
}

/// Creates a source from packed values: `size` lanes per row; a constant has one row.
pub fn source(data: ColumnData, size: u32, constant: bool) -> Result<NodeRef> {
    let column = Column::new(data, size)?;
    if constant && column.rows != 1 {
        return Err(GpuTableError::invalid(format!(
            "a constant needs exactly one row of {size} values, got {} rows",
            column.rows
        )));
    }
    let meta = Meta {
        dtype: column.dtype(),
        size,
        length: column.rows,
        constant,
    };
    Ok(Node::new(
        Op::Source,
        vec![],
        meta,
        Some(Value::host(column)),
    ))
}

fn alive(inputs: &[&NodeRef]) -> Result<()> {
    inputs.iter().try_for_each(|n| n.check_alive())
}

/// Output rows: the longest non-constant input; constants broadcast and do not count.
fn max_length(inputs: &[&NodeRef]) -> (u32, bool) {
    let constant = inputs.iter().all(|n| n.meta.constant);
    let length = if constant {
        1
    } else {
        inputs
            .iter()
            .filter(|n| !n.meta.constant)
            .map(|n| n.meta.length)
            .max()
            .unwrap_or(0)
    };
    (length, constant)
}

fn elementwise(op: Op, inputs: Vec<NodeRef>, dtype: DType, size: u32) -> Result<NodeRef> {
    let refs: Vec<&NodeRef> = inputs.iter().collect();
    alive(&refs)?;
    let (length, constant) = max_length(&refs);
    element_count(length as u64, size, dtype)?;
    Ok(Node::new(
        op,
        inputs,
        Meta {
            dtype,
            size,
            length,
            constant,
        },
        None,
    ))
}

pub fn binary(op: BinaryOp, a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    let dtype = match op {
        BinaryOp::Pow => DType::F32,
        _ => DType::join([a.meta.dtype, b.meta.dtype]),
    };
    let size = a.meta.size.max(b.meta.size);
    elementwise(Op::Binary(op), vec![a.clone(), b.clone()], dtype, size)
}

pub fn unary(op: UnaryOp, x: &NodeRef) -> Result<NodeRef> {
    let dtype = if op == UnaryOp::Abs {
        x.meta.dtype
    } else {
        DType::F32
    };
    elementwise(Op::Unary(op), vec![x.clone()], dtype, x.meta.size)
}

/// Inputs one interleave node reads at most: wider interleaves nest, so a kernel never
/// binds more inputs for one node than every device allows (the nesting gives the same
/// values: each group's type represents its values exactly, as the outer type does).
pub const MAX_INTERLEAVE_INPUTS: usize = 4;

pub fn interleave(inputs: &[NodeRef]) -> Result<NodeRef> {
    match inputs {
        [] => Err(GpuTableError::invalid(
            "interleave needs at least one input",
        )),
        [single] => {
            single.check_alive()?;
            Ok(single.clone())
        }
        _ => {
            alive(&inputs.iter().collect::<Vec<_>>())?;
            let size = inputs
                .iter()
                .try_fold(0u32, |s, n| s.checked_add(n.meta.size));
            let size = size.ok_or_else(|| {
                GpuTableError::new(ErrorCode::LimitExceeded, "interleaved row size overflows")
            })?;
            let dtype = DType::join(inputs.iter().map(|n| n.meta.dtype));
            let refs: Vec<&NodeRef> = inputs.iter().collect();
            let (length, _) = max_length(&refs);
            element_count(length as u64, size, dtype)?;
            let mut level = inputs.to_vec();
            while level.len() > MAX_INTERLEAVE_INPUTS {
                level = level
                    .chunks(MAX_INTERLEAVE_INPUTS)
                    .map(|group| match group {
                        [one] => Ok(one.clone()),
                        group => interleave_node(group),
                    })
                    .collect::<Result<_>>()?;
            }
            interleave_node(&level)
        }
    }
}

fn interleave_node(inputs: &[NodeRef]) -> Result<NodeRef> {
    let size = inputs.iter().map(|n| n.meta.size).sum();
    let dtype = DType::join(inputs.iter().map(|n| n.meta.dtype));
    elementwise(Op::Interleave, inputs.to_vec(), dtype, size)
}

pub fn swizzle(x: &NodeRef, channels: &[f64]) -> Result<NodeRef> {
    if channels.is_empty() {
        return Err(GpuTableError::invalid("swizzle needs at least one channel"));
    }
    let mut lanes = Vec::with_capacity(channels.len());
    for &c in channels {
        if c.fract() != 0.0 || !(0.0..x.meta.size as f64).contains(&c) {
            return Err(GpuTableError::invalid(format!(
                "swizzle channel {c} is out of range for a row of size {}",
                x.meta.size
            )));
        }
        lanes.push(c as u32);
    }
    let size = lanes.len() as u32;
    elementwise(Op::Swizzle(lanes), vec![x.clone()], x.meta.dtype, size)
}

pub fn select(cond: &NodeRef, a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    let size = a.meta.size.max(b.meta.size);
    for (what, n) in [("condition", cond), ("whenTrue", a), ("whenFalse", b)] {
        if n.meta.size != 1 && n.meta.size != size {
            return Err(GpuTableError::invalid(format!(
                "select {what} must have size 1 or {size}, got {}",
                n.meta.size
            )));
        }
    }
    let dtype = DType::join([a.meta.dtype, b.meta.dtype]);
    elementwise(
        Op::Select,
        vec![cond.clone(), a.clone(), b.clone()],
        dtype,
        size,
    )
}

fn matching_sizes(name: &str, a: &NodeRef, b: &NodeRef) -> Result<()> {
    if a.meta.size != b.meta.size {
        return Err(GpuTableError::invalid(format!(
            "{name} inputs must have matching row sizes, got {} and {}",
            a.meta.size, b.meta.size
        )));
    }
    Ok(())
}

pub fn dot(a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    matching_sizes("dot", a, b)?;
    elementwise(Op::Dot, vec![a.clone(), b.clone()], DType::F32, 1)
}

pub fn length(x: &NodeRef) -> Result<NodeRef> {
    elementwise(Op::Length, vec![x.clone()], DType::F32, 1)
}

pub fn equal_all(a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    matching_sizes("equalAll", a, b)?;
    elementwise(Op::EqualAll, vec![a.clone(), b.clone()], DType::U32, 1)
}

pub fn fround(x: &NodeRef) -> Result<NodeRef> {
    if x.meta.dtype != DType::U32 {
        return Err(GpuTableError::type_mismatch(format!(
            "fround needs uint32 word pairs of float64 (fromArray(Float64Array)), got {}",
            x.meta.dtype.name()
        )));
    }
    if x.meta.size % 2 != 0 {
        return Err(GpuTableError::invalid(format!(
            "fround needs an even row size (word pairs), got {}",
            x.meta.size
        )));
    }
    elementwise(Op::Fround, vec![x.clone()], DType::F32, x.meta.size)
}

fn integer_arg(name: &str, value: f64) -> Result<i64> {
    if !value.is_finite() || value.fract() != 0.0 || value.abs() > 9007199254740991.0 {
        return Err(GpuTableError::invalid(format!(
            "{name} must be a safe integer, got {value}"
        )));
    }
    Ok(value as i64)
}

fn row_count(name: &str, value: f64) -> Result<u32> {
    let n = integer_arg(name, value)?;
    if n < 0 {
        return Err(GpuTableError::invalid(format!(
            "{name} must be non-negative, got {n}"
        )));
    }
    u32::try_from(n).map_err(|_| {
        GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!("{name} {n} exceeds the 2^32-1 row limit"),
        )
    })
}

pub fn sequence(count: f64, start: f64, step: f64) -> Result<NodeRef> {
    let count = row_count("sequence count", count)?;
    let start = integer_arg("sequence start", start)?;
    let step = integer_arg("sequence step", step)?;
    if step == 0 {
        return Err(GpuTableError::invalid("sequence step must not be 0"));
    }
    element_count(count as u64, 1, DType::I32)?;
    let meta = Meta {
        dtype: DType::I32,
        size: 1,
        length: count,
        constant: false,
    };
    Ok(Node::new(Op::Sequence { start, step }, vec![], meta, None))
}

pub fn gather(ids: &NodeRef, values: &NodeRef) -> Result<NodeRef> {
    alive(&[ids, values])?;
    if ids.meta.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "gather ids must have size 1, got {}",
            ids.meta.size
        )));
    }
    let meta = Meta {
        dtype: values.meta.dtype,
        size: values.meta.size,
        length: ids.meta.length,
        constant: ids.meta.constant,
    };
    element_count(meta.length as u64, meta.size, meta.dtype)?;
    Ok(Node::new(
        Op::Gather,
        vec![ids.clone(), values.clone()],
        meta,
        None,
    ))
}

pub fn segmented_map(segments: &NodeRef, vertex_count: f64) -> Result<NodeRef> {
    segments.check_alive()?;
    let vertex_count = row_count("segmentedMap vertexCount", vertex_count)?;
    if segments.meta.dtype.is_float() {
        return Err(GpuTableError::invalid(
            "segmentedMap segments must be an integer type, got float32",
        ));
    }
    if segments.meta.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "segmentedMap segments must have size 1, got {}",
            segments.meta.size
        )));
    }
    if segments.meta.length < 1 {
        return Err(GpuTableError::invalid(
            "segmentedMap needs at least one segment start",
        ));
    }
    if let Some(value) = segments.host_value() {
        if let Some(column) = value.host_column() {
            validate_segments(column, vertex_count)?;
        }
    }
    element_count(vertex_count as u64, 2, DType::U32)?;
    let meta = Meta {
        dtype: DType::U32,
        size: 2,
        length: vertex_count,
        constant: false,
    };
    Ok(Node::new(
        Op::SegmentedMap,
        vec![segments.clone()],
        meta,
        None,
    ))
}

/// Segment starts begin at 0, never decrease, and the last is at most `vertex_count`.
pub fn validate_segments(column: &Column, vertex_count: u32) -> Result<()> {
    let mut previous = 0.0;
    for i in 0..column.rows as usize {
        let start = column.data.get_f64(i);
        if i == 0 && start != 0.0 {
            return Err(GpuTableError::invalid(format!(
                "segmentedMap segments must start at 0, got {start}"
            )));
        }
        if start < previous {
            return Err(GpuTableError::invalid(format!(
                "segmentedMap segments must be non-decreasing, got {start} after {previous}"
            )));
        }
        previous = start;
    }
    if previous > vertex_count as f64 {
        return Err(GpuTableError::invalid(format!(
            "segmentedMap last segment start must be <= vertexCount, got {previous} > {vertex_count}"
        )));
    }
    Ok(())
}

pub fn extent(x: &NodeRef) -> Result<NodeRef> {
    x.check_alive()?;
    let meta = Meta {
        dtype: x.meta.dtype,
        size: 2,
        length: x.meta.size,
        constant: false,
    };
    element_count(meta.length as u64, meta.size, meta.dtype)?;
    Ok(Node::new(Op::Extent, vec![x.clone()], meta, None))
}

/// Every node reachable from `roots`, inputs before consumers, each once.
pub fn topological_order(roots: &[NodeRef]) -> Vec<NodeRef> {
    topological_order_with(roots, &|n: &NodeRef| n.is_evaluated())
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

/// `add subtract multiply divide` over any number of arguments, folded left to right.
pub fn fold_binary(op: BinaryOp, args: &[NodeRef]) -> Result<NodeRef> {
    let (first, rest) = args.split_first().ok_or_else(|| {
        GpuTableError::invalid(format!("{} needs at least one argument", op.name()))
    })?;
    first.check_alive()?;
    rest.iter()
        .try_fold(first.clone(), |acc, next| binary(op, &acc, next))
}
