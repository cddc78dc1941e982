//! The operations of `api.md` as IR constructors: each checks its arguments and deduces the
//! output's type, row size, length, constness and chunks.

use std::rc::Rc;

use super::chunked::{elementwise_chunks, single_chunk};
use super::scatter::{compacted_rows, scattered_row_numbers};
use super::{BinaryOp, Meta, Node, NodeRef, Op, UnaryOp};
use crate::column::{element_count, Column, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result, Shown};
use crate::value::{Output, Value};

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
    let output = Output::new(crate::value::HOST, vec![Rc::new(Value::host(column))]);
    Ok(Node::new(
        Op::Source,
        vec![],
        meta,
        single_chunk(meta.length),
        Some(output),
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

/// An elementwise node, null where a row it reads is (nulls.rs), over the rows of its
/// inputs' results where those are counted on the device (counted.rs).
pub(super) fn elementwise(
    op: Op,
    inputs: Vec<NodeRef>,
    dtype: DType,
    size: u32,
) -> Result<NodeRef> {
    let (inputs, counted) = super::counted::align(inputs)?;
    let node = elementwise_plain(op, inputs, dtype, size)?;
    super::nulls::propagate(&node)?;
    super::counted::attach(&node, counted);
    Ok(node)
}

/// An elementwise node with no null flags of its own.
pub(super) fn elementwise_plain(
    op: Op,
    inputs: Vec<NodeRef>,
    dtype: DType,
    size: u32,
) -> Result<NodeRef> {
    let refs: Vec<&NodeRef> = inputs.iter().collect();
    alive(&refs)?;
    let (length, constant) = max_length(&refs);
    element_count(length as u64, size, dtype)?;
    let chunks = elementwise_chunks(&refs, length, constant);
    Ok(Node::new(
        op,
        inputs,
        Meta {
            dtype,
            size,
            length,
            constant,
        },
        chunks,
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

/// Every lane of `x` as `dtype`: float to integer truncates toward zero, NaN and values out
/// of the type's range give 0; integers wrap; to float32 rounds to nearest.
pub fn cast(x: &NodeRef, dtype: DType) -> Result<NodeRef> {
    elementwise(Op::Cast(dtype), vec![x.clone()], dtype, x.meta.size)
}

/// `cast` with no nulls or count of its own (for flags and row numbers).
pub(super) fn cast_plain(x: &NodeRef, dtype: DType) -> Result<NodeRef> {
    elementwise_plain(Op::Cast(dtype), vec![x.clone()], dtype, x.meta.size)
}

pub fn unary(op: UnaryOp, x: &NodeRef) -> Result<NodeRef> {
    let dtype = match op {
        UnaryOp::Abs | UnaryOp::Sign => x.meta.dtype,
        // Integers are their own floor; a float's floor is a float32.
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round => x.meta.dtype,
        _ => DType::F32,
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

/// Lanes follow api.md's lane rule: the output has the largest row size of the three, a
/// size-1 input broadcasts and lanes past an input's row read 0.
pub fn select(cond: &NodeRef, a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    let size = cond.meta.size.max(a.meta.size).max(b.meta.size);
    let dtype = DType::join([a.meta.dtype, b.meta.dtype]);
    elementwise(
        Op::Select,
        vec![cond.clone(), a.clone(), b.clone()],
        dtype,
        size,
    )
}

/// `dot` and `equalAll` read the widest input's lanes, the other's by the lane rule.
pub fn dot(a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    elementwise(Op::Dot, vec![a.clone(), b.clone()], DType::F32, 1)
}

pub fn length(x: &NodeRef) -> Result<NodeRef> {
    elementwise(Op::Length, vec![x.clone()], DType::F32, 1)
}

pub fn equal_all(a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
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
            "{name} must be a safe integer, got {}",
            Shown(value)
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
    // Rows wrap as sint32: a step of a multiple of 2^32 is a step of 0.
    if step as i32 == 0 {
        return Err(GpuTableError::invalid(format!(
            "sequence step must not be 0 as a sint32, got {step}"
        )));
    }
    element_count(count as u64, 1, DType::I32)?;
    let meta = Meta {
        dtype: DType::I32,
        size: 1,
        length: count,
        constant: false,
    };
    Ok(Node::new(
        Op::Sequence { start, step },
        vec![],
        meta,
        single_chunk(count),
        None,
    ))
}

/// `start + step * row` (sint32, wrapping) on every row of `node`, chunked like it: a
/// column of `node`'s shape that reads no input.
pub(super) fn sequence_like(node: &NodeRef, start: i64, step: i64) -> NodeRef {
    let meta = Meta {
        dtype: DType::I32,
        size: 1,
        length: node.meta.length,
        constant: false,
    };
    let op = Op::Sequence { start, step };
    Node::new(op, vec![], meta, node.chunks.clone(), None)
}

/// `x`'s one row repeated for each row of `like`, chunked like it (a constant or a
/// reduction's result as a table's column).
pub fn broadcast_like(x: &NodeRef, like: &NodeRef) -> Result<NodeRef> {
    let first_row = cast_plain(&sequence_like(like, 0, 0), DType::U32)?;
    gather(&first_row, x)
}

/// A verb's constant input as a column, as NumPy takes a scalar: its one row on each of
/// `like`'s rows (counted as `like` is), or, with no column beside it, one row. A column
/// as it is.
pub(super) fn constant_as_column(x: &NodeRef, like: Option<&NodeRef>) -> Result<NodeRef> {
    match (x.meta.constant, like) {
        (false, _) => Ok(x.clone()),
        (true, Some(like)) => super::counted::counted_like(broadcast_like(x, like)?, like),
        (true, None) => gather(&u32_row(0)?, x),
    }
}

/// Rows of `values` at `ids`, null where the id or the row read is. Ids at or past the
/// count of a counted `values` read no row; the output is counted as `ids` are.
pub fn gather(ids: &NodeRef, values: &NodeRef) -> Result<NodeRef> {
    let read = match values.counted() {
        Some(counted) => super::counted::ids_within(ids, counted)?,
        None => ids.clone(),
    };
    let node = gather_plain(&read, values)?;
    if node.op == Op::Gather {
        super::nulls::propagate_gather(&node, &read, values)?;
    }
    super::counted::counted_like(node, ids)
}

/// `gather` with no null flags of its own (for row numbers: those of `ids`).
pub fn gather_plain(ids: &NodeRef, values: &NodeRef) -> Result<NodeRef> {
    alive(&[ids, values])?;
    if ids.meta.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "gather ids must have size 1, got {}",
            ids.meta.size
        )));
    }
    if let Some(rows) = row_numbers(values).filter(|_| ids.meta.dtype == DType::U32) {
        // A scatter of no more row numbers than these holds only ids below `rows` (its
        // unwritten rows are 0): each is its own row number (compaction's kept rows).
        // A compaction's numbers are its flags' rows (u32::MAX past its count, where no
        // row is read).
        let packed = scattered_row_numbers(ids).or_else(|| compacted_rows(ids));
        if packed.is_some_and(|scattered| scattered <= rows) {
            return Ok(ids.clone());
        }
        // Row numbers gathered are the ids themselves (0 past the end): no column of them
        // stored to be read at random.
        let past_end = binary(BinaryOp::Divide, ids, &u32_constant(rows)?)?;
        return select(&past_end, &u32_constant(0)?, ids);
    }
    let meta = Meta {
        dtype: values.meta.dtype,
        size: values.meta.size,
        length: ids.meta.length,
        constant: ids.meta.constant,
    };
    element_count(meta.length as u64, meta.size, meta.dtype)?;
    let chunks = match ids.meta.constant {
        true => single_chunk(1),
        false => ids.chunks.clone(),
    };
    Ok(Node::new(
        Op::Gather,
        vec![ids.clone(), values.clone()],
        meta,
        chunks,
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
    // Stored starts are checked now; computed (or chunked) ones before the kernel runs.
    if let Some(output) = segments.host_output() {
        if let [value] = &output.chunks[..] {
            if let Some(column) = value.host_column() {
                validate_segments(column, vertex_count)?;
            }
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
        single_chunk(vertex_count),
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

/// `add subtract multiply divide` over any number of arguments, folded left to right.
pub fn fold_binary(op: BinaryOp, args: &[NodeRef]) -> Result<NodeRef> {
    let (first, rest) = args.split_first().ok_or_else(|| {
        GpuTableError::invalid(format!("{} needs at least one argument", op.name()))
    })?;
    first.check_alive()?;
    rest.iter()
        .try_fold(first.clone(), |acc, next| binary(op, &acc, next))
}

/// One uint32 row that broadcasts.
pub fn u32_constant(value: u32) -> Result<NodeRef> {
    source(ColumnData::U32(vec![value]), 1, true)
}

/// The quotient and remainder of uint32 `x` by `divisor` (lazy): the (outer, inner) of
/// row-major places in blocks of `divisor`.
pub fn split_place(x: &NodeRef, divisor: u32) -> Result<(NodeRef, NodeRef)> {
    let width = u32_constant(divisor)?;
    let outer = binary(BinaryOp::Divide, x, &width)?;
    let inner = binary(
        BinaryOp::Subtract,
        x,
        &binary(BinaryOp::Multiply, &outer, &width)?,
    )?;
    Ok((outer, inner))
}

/// One uint32 row that is not a constant (it joins other rows by `concat`).
pub fn u32_row(value: u32) -> Result<NodeRef> {
    source(ColumnData::U32(vec![value]), 1, false)
}

/// Rows `0..count` as uint32.
pub fn u32_rows(count: u32) -> Result<NodeRef> {
    cast(&sequence(count as f64, 0.0, 1.0)?, DType::U32)
}

/// The count of `u32_rows(count)` where `node` is one (and not empty).
pub(super) fn row_numbers(node: &Node) -> Option<u32> {
    let [sequence] = &node.inputs[..] else {
        return None;
    };
    let counts_up = sequence.op == (Op::Sequence { start: 0, step: 1 });
    let rows = node.meta.length;
    (node.op == Op::Cast(DType::U32) && counts_up && (1..=i32::MAX as u32).contains(&rows))
        .then_some(rows)
}
