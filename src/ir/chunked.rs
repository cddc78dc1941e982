//! Chunked columns (api.md "Chunked evaluation"): the chunk rule of elementwise ops, chunked
//! sources, and the view ops `concat`, `slice` and `rechunk`, whose output chunks the executor
//! assembles from stored ones (sharing whole chunks, copying only where a chunk spans a part
//! of one or several stored chunks).

use std::collections::HashMap;
use std::rc::Rc;

use super::{Chunks, Meta, Node, NodeRef, Op};
use crate::column::{element_count, try_vec, Column, ColumnData};
use crate::error::{ErrorCode, GpuTableError, Result, Shown};
use crate::value::{Output, Value};

pub fn single_chunk(rows: u32) -> Chunks {
    Rc::from([rows])
}

/// The chunks of an elementwise op's output: those of its first input with more than one
/// chunk (the last stretched to `length` where that input is shorter), else one chunk.
pub(crate) fn elementwise_chunks(inputs: &[&NodeRef], length: u32, constant: bool) -> Chunks {
    let chunked = inputs
        .iter()
        .find(|n| !n.meta.constant && n.chunks.len() > 1);
    match chunked {
        Some(input) if !constant => {
            if input.meta.length == length {
                return input.chunks.clone();
            }
            let mut chunks = input.chunks.to_vec();
            if let Some(last) = chunks.last_mut() {
                *last += length - input.meta.length;
            }
            chunks.into()
        }
        _ => single_chunk(length),
    }
}

fn whole_count(name: &str, value: f64) -> Result<u32> {
    if !value.is_finite() || value.fract() != 0.0 || value < 0.0 {
        return Err(GpuTableError::invalid(format!(
            "{name} must be a non-negative integer, got {}",
            Shown(value)
        )));
    }
    u32::try_from(value as u64).map_err(|_| {
        GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!("{name} {value} exceeds the 2^32-1 row limit"),
        )
    })
}

/// Chunks one column may have: each is stored (and run) on its own, so a list sized by a
/// careless argument (`chunks: 1` over 10^8 rows) must be refused, not allocated.
pub const MAX_CHUNKS: usize = 1 << 20;

pub fn check_chunk_count(count: usize) -> Result<()> {
    if count > MAX_CHUNKS {
        return Err(GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!("{count} chunks exceed the {MAX_CHUNKS} one column may have"),
        ));
    }
    Ok(())
}

/// `chunks: n`: chunks of `n` rows over `length` rows, the last shorter.
pub fn regular_chunks(rows_per_chunk: f64, length: u32) -> Result<Chunks> {
    let every = whole_count("chunks", rows_per_chunk)?;
    if every == 0 {
        return Err(GpuTableError::invalid("chunks must be at least 1 row"));
    }
    if length == 0 {
        return Ok(single_chunk(0));
    }
    let count = length.div_ceil(every) as usize;
    check_chunk_count(count)?;
    let mut chunks = try_vec(count, "the chunk list")?;
    let mut left = length;
    while left > 0 {
        chunks.push(every.min(left));
        left -= every.min(left);
    }
    Ok(chunks.into())
}

/// `chunks: [counts]`: row counts that must sum to `length`.
pub fn explicit_chunks(counts: &[f64], length: u32) -> Result<Chunks> {
    if counts.is_empty() {
        return Err(GpuTableError::invalid(
            "chunks needs at least one row count",
        ));
    }
    check_chunk_count(counts.len())?;
    let chunks: Vec<u32> = counts
        .iter()
        .map(|&c| whole_count("a chunk's row count", c))
        .collect::<Result<_>>()?;
    let total: u64 = chunks.iter().map(|&c| c as u64).sum();
    if total != length as u64 {
        return Err(GpuTableError::invalid(format!(
            "chunk row counts sum to {total}, but the column has {length} rows"
        )));
    }
    Ok(chunks.into())
}

/// A source of packed values split into `chunks` (row counts summing to its rows).
pub fn source_chunked(data: ColumnData, size: u32, chunks: Chunks) -> Result<NodeRef> {
    let column = Column::new(data, size)?;
    let total: u64 = chunks.iter().map(|&c| c as u64).sum();
    if total != column.rows as u64 || chunks.is_empty() {
        return Err(GpuTableError::invalid(format!(
            "chunk row counts sum to {total}, but the column has {} rows",
            column.rows
        )));
    }
    let meta = Meta {
        dtype: column.dtype(),
        size,
        length: column.rows,
        constant: false,
    };
    let values = if chunks.len() == 1 {
        vec![Rc::new(Value::host(column))]
    } else {
        let mut values = Vec::with_capacity(chunks.len());
        let mut row = 0;
        for &rows in chunks.iter() {
            let part = Column::new(column.slice_rows(row, row + rows)?, size)?;
            values.push(Rc::new(Value::host(part)));
            row += rows;
        }
        values
    };
    let output = Output::new(crate::value::HOST, values);
    Ok(Node::new(Op::Source, vec![], meta, chunks, Some(output)))
}

/// A source over `output`'s stored values, as one logical chunk (of several stored parts
/// where a chunk was computed a binding at a time).
pub fn resident_parts(output: Output) -> NodeRef {
    let first = &output.chunks[0];
    let meta = Meta {
        dtype: first.dtype,
        size: first.size,
        length: output.rows() as u32,
        constant: false,
    };
    let chunks = single_chunk(meta.length);
    Node::new(Op::Source, vec![], meta, chunks, Some(output))
}

/// A source holding `value` where it is: the executor's handle on one stored chunk.
pub fn resident(value: Rc<Value>) -> NodeRef {
    let device = value.device;
    resident_parts(Output::new(device, vec![value]))
}

/// Rows a node stores: a constant's one row, or its length.
pub(crate) fn stored_rows(node: &Node) -> u32 {
    if node.meta.constant {
        1
    } else {
        node.meta.length
    }
}

pub(super) fn stored_chunks(node: &Node) -> Chunks {
    if node.meta.constant {
        single_chunk(1)
    } else {
        node.chunks.clone()
    }
}

/// Rows of each input in order; the chunks of each input, in order. Inputs need the same
/// type and row size; a constant counts as its one row.
pub fn concat(inputs: &[NodeRef]) -> Result<NodeRef> {
    let first = inputs
        .first()
        .ok_or_else(|| GpuTableError::invalid("concat needs at least one input"))?;
    inputs.iter().try_for_each(|n| n.check_alive())?;
    if inputs.len() == 1 {
        return Ok(first.clone());
    }
    for input in inputs {
        if input.meta.dtype != first.meta.dtype {
            return Err(GpuTableError::type_mismatch(format!(
                "concat needs inputs of one type, got {} and {}",
                first.meta.dtype.name(),
                input.meta.dtype.name()
            )));
        }
        if input.meta.size != first.meta.size {
            return Err(GpuTableError::invalid(format!(
                "concat needs inputs of one row size, got {} and {}",
                first.meta.size, input.meta.size
            )));
        }
    }
    let length: u64 = inputs.iter().map(|n| stored_rows(n) as u64).sum();
    let length = u32::try_from(length).map_err(|_| {
        GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!("concat of {length} rows exceeds the 2^32-1 row limit"),
        )
    })?;
    element_count(length as u64, first.meta.size, first.meta.dtype)?;
    check_chunk_count(inputs.iter().map(|n| stored_chunks(n).len()).sum())?;
    let chunks: Vec<u32> = inputs
        .iter()
        .flat_map(|n| stored_chunks(n).to_vec())
        .collect();
    let meta = Meta {
        length,
        constant: false,
        ..first.meta
    };
    let node = Node::new(Op::Concat, inputs.to_vec(), meta, chunks.into(), None);
    super::nulls::propagate_view(&node)?;
    Ok(node)
}

/// The row range `start..end` of `rows` rows: truncated, clamped, `end` at least `start`;
/// NaN is `INVALID_ARGUMENT` (`names` say which argument).
pub fn clamp_rows(rows: u32, start: f64, end: f64, names: (&str, &str)) -> Result<(u32, u32)> {
    let clamp = |v: f64, name: &str| {
        if v.is_nan() {
            Err(GpuTableError::invalid(format!(
                "{name} must be a number, got NaN"
            )))
        } else {
            Ok(v.trunc().clamp(0.0, rows as f64) as u32)
        }
    };
    let start = clamp(start, names.0)?;
    Ok((start, clamp(end, names.1)?.max(start)))
}

/// Rows `start..end` of `x`, clamped to its rows; the output keeps the parts of `x`'s chunks
/// it covers.
pub fn slice(x: &NodeRef, start: f64, end: f64) -> Result<NodeRef> {
    x.check_alive()?;
    let (start, end) = clamp_rows(stored_rows(x), start, end, ("slice start", "slice end"))?;
    let meta = Meta {
        length: end - start,
        constant: false,
        ..x.meta
    };
    let chunks = chunks_within(x, start, end);
    let node = Node::new(Op::Slice { start }, vec![x.clone()], meta, chunks, None);
    super::nulls::propagate_view(&node)?;
    Ok(node)
}

/// The parts of `x`'s chunks within rows `start..end` (one empty chunk where none is).
fn chunks_within(x: &Node, start: u32, end: u32) -> Chunks {
    let mut chunks = Vec::new();
    let mut first = 0u32;
    for rows in stored_chunks(x).iter() {
        let (lo, hi) = (first.max(start), (first + rows).min(end));
        if lo < hi {
            chunks.push(hi - lo);
        }
        first += rows;
    }
    if chunks.is_empty() {
        chunks.push(0);
    }
    chunks.into()
}

/// Rows `start..end` of each of `xs` as the same row-local work over those rows of its
/// inputs: a slice of elementwise work computes all of it first, this only the rows it
/// keeps. Stored values, views and other work are sliced. Work the nodes share is made once.
pub fn rows_of_work(xs: &[NodeRef], start: u32, end: u32) -> Result<Vec<NodeRef>> {
    let mut made = RowsMade::default();
    let mut out = Vec::with_capacity(xs.len());
    for x in xs {
        out.push(rows_of(x, start, end, &mut made)?);
    }
    Ok(out)
}

/// A copy of `x`'s row-local work down to stored values, for a second pass reading it: each
/// pass then computes it where it reads it, where one node read by two passes is stored
/// whole between them, past a budget's reach. Other work is `x` itself.
pub fn remade(x: &NodeRef) -> Result<NodeRef> {
    if x.meta.constant || !rows_remade(x) || !rows_computed_alone(x, None) {
        return Ok(x.clone());
    }
    let mut made = RowsMade {
        whole: true,
        ..RowsMade::default()
    };
    rows_of(x, 0, x.meta.length, &mut made)
}

/// The nodes `rows_of` made, by the id of the node each is rows of.
#[derive(Default)]
pub(super) struct RowsMade {
    at: HashMap<u64, usize>,
    made: Vec<NodeRef>,
    /// Every row is made (`remade`): stored nodes are read as they are.
    whole: bool,
}

impl RowsMade {
    fn get(&self, id: u64) -> Option<&NodeRef> {
        self.at.get(&id).map(|&k| &self.made[k])
    }

    pub(super) fn insert(&mut self, id: u64, node: NodeRef) {
        self.at.insert(id, self.made.len());
        self.made.push(node);
    }
}

/// `rows_of_work` of one node, each node made once (`made`). Walked with a stack of its
/// own: a chain of elementwise ops built in JS may be far deeper than the wasm stack.
pub(super) fn rows_of(x: &NodeRef, start: u32, end: u32, made: &mut RowsMade) -> Result<NodeRef> {
    let rows_made = |node: &NodeRef, made: &RowsMade| match node.meta.constant {
        true => Ok(node.clone()),
        false => (made.get(node.id).cloned())
            .ok_or_else(|| crate::engine::internal("rows of an input not made")),
    };
    // Each node is popped once to push its inputs, then again to be made of their rows.
    let mut stack = vec![(x.clone(), false)];
    while let Some((node, inputs_made)) = stack.pop() {
        if node.meta.constant || made.get(node.id).is_some() {
            continue;
        }
        if parts_remade(&node) && !node.has_output() {
            // Its parts are made alone; its null flags (a table's, set apart) in this range.
            if !inputs_made {
                stack.push((node.clone(), true));
                stack.extend(node.validity().map(|valid| (valid.clone(), false)));
                continue;
            }
            let rows = parts_rows(&node, start, end)?;
            if let (Some(valid), None) = (node.validity(), rows.validity()) {
                let _ = rows.validity.set(rows_made(valid, made)?);
            }
            made.insert(node.id, rows);
            continue;
        }
        let op = match row_local(&node, start) {
            Some(op) if !node.has_output() && node.counted().is_none() => op,
            // A copy of whole work reads stored nodes themselves (no view to assemble).
            _ if made.whole && node.counted().is_none() => {
                made.insert(node.id, node.clone());
                continue;
            }
            _ => {
                made.insert(node.id, slice(&node, start as f64, end as f64)?);
                continue;
            }
        };
        if !inputs_made {
            stack.push((node.clone(), true));
            let inputs = node.inputs.iter().chain(node.validity());
            stack.extend(inputs.map(|input| (input.clone(), false)));
            continue;
        }
        let inputs = (node.inputs.iter())
            .map(|input| rows_made(input, made))
            .collect::<Result<Vec<_>>>()?;
        let meta = Meta {
            length: end - start,
            ..node.meta
        };
        let rows = Node::new(op, inputs, meta, chunks_within(&node, start, end), None);
        if let Some(valid) = node.validity() {
            let _ = rows.validity.set(rows_made(valid, made)?);
        }
        made.insert(node.id, rows);
    }
    rows_made(x, made)
}

/// Whether `rows_of` makes any range of `x`'s rows from the same rows of its inputs alone,
/// down to stored values (views of them sliced), `leaf` (a node's id) taken as stored: a
/// range of it computes nothing outside the range (a mask comparing with a reduction, or a
/// view of computed work, would be computed whole for every range).
pub fn rows_computed_alone(x: &NodeRef, leaf: Option<u64>) -> bool {
    let mut seen = std::collections::HashSet::new();
    // With each node, whether it is read through a view (then it must be stored).
    let mut stack = vec![(x.clone(), false)];
    while let Some((node, viewed)) = stack.pop() {
        // The leaf's rows are made for the range, unless a view reads it whole.
        if !seen.insert(node.id << 1 | viewed as u64) || (!viewed && Some(node.id) == leaf) {
            continue;
        }
        // A constant is used whole by every range: computed (a reduction), it is not alone.
        if node.has_output() || matches!(node.op, Op::Source) {
            // Its rows are sliced with its null flags, which may be computed.
            stack.extend(node.validity().map(|valid| (valid.clone(), true)));
            continue;
        }
        let remade = !viewed && rows_remade(&node);
        if !remade && !node.op.is_assembly() {
            return false;
        }
        let viewed = !remade;
        let inputs = node.inputs.iter().chain(node.validity());
        stack.extend(inputs.map(|input| (input.clone(), viewed)));
    }
    true
}

/// Whether `rows_of` makes `x`'s rows of its inputs' rows (not a slice of it whole).
pub fn rows_remade(x: &NodeRef) -> bool {
    x.counted().is_none() && (row_local(x, 0).is_some() || parts_remade(x))
}

/// A concat whose rows `rows_of` makes of its parts' rows, each part's alone (a table's
/// column over batches, flags made for the batches without them): parts stored or a few
/// row-local ops over stored values (a concat among them would be a call deeper).
fn parts_remade(x: &Node) -> bool {
    fn shallow(x: &Node, depth: u32) -> bool {
        x.has_output()
            || matches!(x.op, Op::Source)
            || (depth > 0
                && x.counted().is_none()
                && row_local(x, 0).is_some()
                && (x.inputs.iter().chain(x.validity())).all(|i| shallow(i, depth - 1)))
    }
    matches!(x.op, Op::Concat)
        && x.counted().is_none()
        && (x.inputs.iter()).all(|i| !i.meta.constant && shallow(i, 3))
}

/// Rows `start..end` of a concat (`parts_remade`): the concat of each part's rows there.
fn parts_rows(x: &NodeRef, start: u32, end: u32) -> Result<NodeRef> {
    let mut parts = Vec::new();
    let mut first = 0u32;
    for part in &x.inputs {
        let rows = part.meta.length;
        let (lo, hi) = (start.max(first), end.min(first + rows));
        if lo < hi {
            let mut made = RowsMade::default();
            parts.push(rows_of(part, lo - first, hi - first, &mut made)?);
        }
        first += rows;
    }
    match parts.is_empty() {
        true => slice(x, start as f64, end as f64),
        false => concat(&parts),
    }
}

/// `x`'s op over its rows from `start` on, where it computes each row from the same row of
/// its inputs and they are as long and chunked alike.
fn row_local(x: &Node, start: u32) -> Option<Op> {
    let aligned = (x.inputs.iter())
        .all(|i| i.meta.constant || (i.meta.length == x.meta.length && i.chunks == x.chunks));
    let op = match x.op {
        Op::Binary(op) => Op::Binary(op),
        Op::Unary(op) => Op::Unary(op),
        Op::Predicate(predicate) => Op::Predicate(predicate),
        Op::Cast(dtype) => Op::Cast(dtype),
        Op::SortKey { descending } => Op::SortKey { descending },
        Op::Sequence { start: first, step } => Op::Sequence {
            start: first.wrapping_add(step.wrapping_mul(start as i64)),
            step,
        },
        Op::Select => Op::Select,
        Op::Swizzle(ref lanes) => Op::Swizzle(lanes.clone()),
        Op::Interleave => Op::Interleave,
        Op::Dot => Op::Dot,
        Op::Length => Op::Length,
        Op::EqualAll => Op::EqualAll,
        Op::Fround => Op::Fround,
        // A rechunk to the chunks its input has (a table's column over its batches).
        Op::Rechunk => Op::Rechunk,
        _ => return None,
    };
    aligned.then_some(op)
}

/// `x`'s rows with new chunk boundaries (`chunks` sums to its rows).
pub fn rechunk(x: &NodeRef, chunks: Chunks) -> Result<NodeRef> {
    x.check_alive()?;
    let total: u64 = chunks.iter().map(|&c| c as u64).sum();
    if total != stored_rows(x) as u64 || chunks.is_empty() {
        return Err(GpuTableError::invalid(format!(
            "rechunk row counts sum to {total}, but the input has {} rows",
            stored_rows(x)
        )));
    }
    let meta = Meta {
        constant: false,
        length: stored_rows(x),
        ..x.meta
    };
    let node = Node::new(Op::Rechunk, vec![x.clone()], meta, chunks, None);
    super::nulls::propagate_view(&node)?;
    Ok(node)
}

/// The input rows an assembly node's rows `start..end` are made of, in order: `(input,
/// first row, end row)` in that input's rows.
pub fn assembly_ranges(node: &Node, start: u64, end: u64) -> Vec<(usize, u64, u64)> {
    match node.op {
        Op::Concat => {
            let offsets = node.input_offsets();
            // The first input ending after `start`, then on while inputs start before `end`.
            let from = offsets[1..].partition_point(|&e| e <= start);
            let mut ranges = Vec::new();
            for i in from..node.inputs.len() {
                let first = offsets[i];
                if first >= end {
                    break;
                }
                let (lo, hi) = (first.max(start), offsets[i + 1].min(end));
                if lo < hi {
                    ranges.push((i, lo - first, hi - first));
                }
            }
            ranges
        }
        Op::Slice { start: from } => vec![(0, from as u64 + start, from as u64 + end)],
        _ => vec![(0, start, end)],
    }
}

/// The executor's copy of several stored row ranges into one chunk: `ranges[i]` of
/// `inputs[i]` (resident sources of one type and row size), in order.
pub fn rows(inputs: Vec<NodeRef>, ranges: Vec<(u32, u32)>) -> Result<NodeRef> {
    let first = inputs
        .first()
        .ok_or_else(|| GpuTableError::new(ErrorCode::Internal, "a row copy needs an input"))?;
    let length: u64 = ranges.iter().map(|&(a, b)| (b - a) as u64).sum();
    let length = u32::try_from(length)
        .map_err(|_| GpuTableError::new(ErrorCode::LimitExceeded, "a chunk past 2^32-1 rows"))?;
    let meta = Meta {
        length,
        constant: false,
        ..first.meta
    };
    Ok(Node::new(
        Op::Rows(ranges),
        inputs,
        meta,
        single_chunk(length),
        None,
    ))
}
