//! Nulls through expressions (api.md "Nulls"): a node's null flags are a `uint8` node of its
//! own (`Node::validity`), chunked like it, built from its inputs' flags by the same ops as
//! any other work. An elementwise output is null where a row it reads is null; a row of
//! `select` is null where its condition is, or the branch it takes. A node with one nullable
//! input shares that input's flags: no work of its own.

use super::chunked::{concat, rechunk, slice, stored_rows};
use super::ops::{cast, cast_plain, elementwise_plain, gather_plain, sequence_like, source};
use super::{NodeRef, Op, Predicate};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::error::{GpuTableError, Result};

/// `node` with null flags `validity` (uint8, as long as `node`); chunked like `node`. A node
/// that has other flags already is given them through a view of its own.
pub fn with_validity(node: &NodeRef, validity: Option<&NodeRef>) -> Result<NodeRef> {
    let Some(validity) = validity else {
        return Ok(node.clone());
    };
    validity.check_alive()?;
    if validity.meta.dtype != DType::U8
        || validity.meta.length != node.meta.length
        || validity.meta.constant
    {
        return Err(GpuTableError::invalid(format!(
            "validity must be uint8 flags with the column's {} rows, got {} with {} rows",
            node.meta.length,
            validity.meta.dtype.name(),
            validity.meta.length
        )));
    }
    let node = match node.validity() {
        Some(held) if held.id != validity.id => rechunk(node, node.chunks.clone())?,
        _ => node.clone(),
    };
    attach(&node, Some(validity.clone()))?;
    Ok(node)
}

/// Sets `node`'s flags (aligned to its chunks), unless it is a constant or has them.
fn attach(node: &NodeRef, validity: Option<NodeRef>) -> Result<()> {
    let Some(validity) = validity else {
        return Ok(());
    };
    if node.meta.constant || node.validity().is_some() {
        return Ok(());
    }
    let aligned = aligned(validity, node)?;
    let _ = node.validity.set(aligned);
    Ok(())
}

/// `validity` with `node`'s rows and chunks: a shorter input's rows past its end are null.
fn aligned(validity: NodeRef, node: &NodeRef) -> Result<NodeRef> {
    let mut validity = validity;
    if validity.meta.length != node.meta.length {
        validity = and_flags(&[flags_like(node, 1)?, validity])?;
    }
    if validity.chunks != node.chunks {
        validity = rechunk(&validity, node.chunks.clone())?;
    }
    Ok(validity)
}

/// uint8 `value` on every row of `node` (none of its lanes), chunked like it: a row number
/// that does not count (no input read). A constant's is a constant.
pub fn flags_like(node: &NodeRef, value: u8) -> Result<NodeRef> {
    if node.meta.constant {
        return source(ColumnData::U8(vec![value]), 1, true);
    }
    cast(&sequence_like(node, value as i64, 0), DType::U8)
}

/// Flags of 1 for `rows` rows of `size` lanes (a batch without null flags among batches
/// with them), by row-local work: a range of them is made alone, on the device using them.
pub fn valid_rows(rows: u32, size: u32) -> Result<NodeRef> {
    let meta = super::Meta {
        dtype: DType::I32,
        size: 1,
        length: rows,
        constant: false,
    };
    let op = Op::Sequence { start: 1, step: 0 };
    let sequence = super::Node::new(op, vec![], meta, super::single_chunk(rows), None);
    let ones = cast(&sequence, DType::U8)?;
    if size == 1 {
        return Ok(ones);
    }
    // Lane 0 repeated: one node whatever the row size, its lane list allocated fallibly.
    let mut lanes = crate::column::try_vec(size as usize, "a row's null flags")?;
    lanes.resize(size as usize, 0);
    elementwise_plain(Op::Swizzle(lanes), vec![ones], DType::U8, size)
}

/// 1 where every one of `parts` is true (nonzero or NaN), else 0: `uint8`, with no nulls of
/// its own (the flags themselves).
pub fn and_flags(parts: &[NodeRef]) -> Result<NodeRef> {
    let (first, rest) = parts
        .split_first()
        .ok_or_else(|| GpuTableError::invalid("no flags to combine"))?;
    if rest.is_empty() {
        // A predicate's output is its own truth (1 or 0, no nulls of its own).
        if matches!(first.op, Op::Predicate(_)) && first.validity().is_none() {
            return Ok(first.clone());
        }
        let not = logic(Predicate::Not, vec![first.clone()])?;
        return logic(Predicate::Not, vec![not]);
    }
    rest.iter().try_fold(first.clone(), |acc, next| {
        logic(Predicate::And, vec![acc, next.clone()])
    })
}

/// 1 where `flags` is 0, else 0: `uint8`, no nulls of its own.
pub(super) fn not_flags(flags: &NodeRef) -> Result<NodeRef> {
    logic(Predicate::Not, vec![flags.clone()])
}

fn logic(predicate: Predicate, inputs: Vec<NodeRef>) -> Result<NodeRef> {
    let size = inputs.iter().map(|n| n.meta.size).max().unwrap_or(1);
    elementwise_plain(Op::Predicate(predicate), inputs, DType::U8, size)
}

/// The flags of an elementwise `node` built from its inputs' (called by every elementwise
/// constructor).
pub(super) fn propagate(node: &NodeRef) -> Result<()> {
    if node.meta.constant {
        return Ok(());
    }
    let inputs = &node.inputs;
    if inputs.iter().all(|i| i.validity().is_none()) {
        return Ok(());
    }
    let validity = match node.op {
        // The condition's flags, and those of the branch each row takes.
        Op::Select => {
            let (cond, a, b) = (&inputs[0], &inputs[1], &inputs[2]);
            let branch = |x: &NodeRef| match x.validity() {
                Some(v) => Ok(v.clone()),
                None => flags_like(x, 1),
            };
            let taken = match (a.validity(), b.validity()) {
                (None, None) => None,
                _ => Some(select_plain(cond, &branch(a)?, &branch(b)?)?),
            };
            let parts: Vec<NodeRef> = (cond.validity().cloned().into_iter())
                .chain(taken)
                .collect();
            combine(parts)?
        }
        _ => combine(
            inputs
                .iter()
                .filter_map(|i| i.validity().cloned())
                .collect(),
        )?,
    };
    attach(node, validity)
}

/// One node of the flags (the only one, or their `and`).
fn combine(parts: Vec<NodeRef>) -> Result<Option<NodeRef>> {
    match parts.len() {
        0 => Ok(None),
        1 => Ok(parts.into_iter().next()),
        _ => and_flags(&parts).map(Some),
    }
}

fn select_plain(cond: &NodeRef, a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    let inputs = vec![cond.clone(), a.clone(), b.clone()];
    elementwise_plain(Op::Select, inputs, DType::U8, 1)
}

/// `node`'s flags are `from`'s (rows alike: searchSorted's queries).
pub(super) fn inherit(node: &NodeRef, from: &NodeRef) -> Result<()> {
    attach(node, from.validity().cloned())
}

/// A gather's flags: null where its id is, or the row it reads.
pub(super) fn propagate_gather(node: &NodeRef, ids: &NodeRef, values: &NodeRef) -> Result<()> {
    let read = match values.validity() {
        Some(v) => Some(gather_plain(ids, v)?),
        None => None,
    };
    attach(
        node,
        combine(ids.validity().cloned().into_iter().chain(read).collect())?,
    )
}

/// A view's flags: the same view of its inputs' flags (all valid for an input without).
pub(super) fn propagate_view(node: &NodeRef) -> Result<()> {
    if node.inputs.iter().all(|i| i.validity().is_none()) {
        return Ok(());
    }
    // A constant stands for one row here.
    let flags = |x: &NodeRef| -> Result<NodeRef> {
        match x.validity() {
            Some(v) => Ok(v.clone()),
            None if x.meta.constant => source(ColumnData::U8(vec![1]), 1, false),
            None => flags_like(x, 1),
        }
    };
    let validity = match &node.op {
        Op::Concat => concat(&node.inputs.iter().map(flags).collect::<Result<Vec<_>>>()?)?,
        Op::Slice { start } => {
            let start = *start as f64;
            slice(
                &flags(&node.inputs[0])?,
                start,
                start + node.meta.length as f64,
            )?
        }
        Op::Rechunk => rechunk(&flags(&node.inputs[0])?, node.chunks.clone())?,
        _ => return Ok(()),
    };
    debug_assert_eq!(stored_rows(&validity), stored_rows(node));
    attach(node, Some(validity))
}

/// `isNull(x)`: 1 where a row of `x` is null; never null itself.
pub fn is_null(x: &NodeRef) -> Result<NodeRef> {
    x.check_alive()?;
    let flags = match x.validity() {
        Some(v) => not_flags(v)?,
        None => flags_like(x, 0)?,
    };
    super::counted::counted_like(flags, x)
}

/// `isValid(x)`: 1 where a row of `x` is not null; never null itself.
pub fn is_valid(x: &NodeRef) -> Result<NodeRef> {
    x.check_alive()?;
    let flags = match x.validity() {
        Some(v) => and_flags(std::slice::from_ref(v))?,
        None => flags_like(x, 1)?,
    };
    super::counted::counted_like(flags, x)
}

/// `fillNull(x, value)`: `x` with `value` (converted to x's type) on its null rows, x's
/// type, no nulls.
pub fn fill_null(x: &NodeRef, value: &NodeRef) -> Result<NodeRef> {
    x.check_alive()?;
    value.check_alive()?;
    if value.meta.size != 1 && value.meta.size != x.meta.size {
        return Err(GpuTableError::invalid(format!(
            "fillNull's value must have size 1 or {}, got {}",
            x.meta.size, value.meta.size
        )));
    }
    let Some(validity) = x.validity() else {
        return Ok(x.clone());
    };
    // The value's own nulls do not count: fillNull gives a column without.
    let inputs = vec![
        validity.clone(),
        x.clone(),
        cast_plain(value, x.meta.dtype)?,
    ];
    let filled = elementwise_plain(Op::Select, inputs, x.meta.dtype, x.meta.size)?;
    super::counted::counted_like(filled, x)
}

/// `roots` and the null flags of each, each node once (roots may share flags, and a list
/// that has them already gains nothing).
pub fn with_null_flags(roots: &[NodeRef]) -> Vec<NodeRef> {
    with_others(roots, roots.iter().filter_map(|r| r.validity().cloned()))
}

/// `roots` with what an evaluation computes and keeps with them: their null flags and the
/// counts of those counted on the device (counted.rs).
pub fn with_companions(roots: &[NodeRef]) -> Vec<NodeRef> {
    let flags = roots.iter().filter_map(|r| r.validity().cloned());
    with_others(roots, flags.chain(super::counted::counts_of(roots)))
}

/// `roots` and each of `others` not among them, each node once.
pub(super) fn with_others(
    roots: &[NodeRef],
    others: impl Iterator<Item = NodeRef>,
) -> Vec<NodeRef> {
    let mut all: Vec<NodeRef> = roots.to_vec();
    for node in others {
        if !all.iter().any(|n| n.id == node.id) {
            all.push(node);
        }
    }
    all
}
