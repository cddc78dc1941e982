//! `cumsum cumprod cummin cummax` (api.md "Order"): a scan of the rows in order across
//! chunks (reversed by a gather where asked), with null rows folded as nothing and null in
//! the output, which keeps `x`'s chunks.

use super::nulls::with_validity;
use super::ops::{cast, elementwise_plain, gather_plain, sequence_like, source};
use super::{scan, BinaryOp, NodeRef, Op, Predicate, ReduceKind, ScanFold};
use crate::column::ColumnData;
use crate::dtype::{Class, DType};
use crate::error::Result;

/// `fold` along the rows of `x` (per lane): each row folds the rows before it (`exclusive`)
/// or up to it, counted from the end where `reverse`. Sums and products take `sum`'s type;
/// a minimum or maximum keeps x's type and skips NaN (a float row with no number before it
/// is NaN; an integer one the type's far end).
pub fn cumulative(fold: ScanFold, x: &NodeRef, exclusive: bool, reverse: bool) -> Result<NodeRef> {
    x.check_alive()?;
    let x = &super::constant_as_column(x, None)?;
    let wide = ReduceKind::Sum.output_type(x.meta.dtype);
    // Null rows hold the fold's identity, so the running value passes over them.
    let values = match x.validity() {
        Some(valid) => {
            let inputs = vec![valid.clone(), x.clone(), identity(fold, wide)?];
            elementwise_plain(Op::Select, inputs, wide, x.meta.size)?
        }
        None => x.clone(),
    };
    let scanned = match reverse {
        // Row r reads row rows - 1 - r (uint32 bits of the wrapping sint32; of a counted x
        // its count's rows), chunked like x: reversed, scanned, and reversed back into x's
        // chunks.
        true => {
            let backwards = match x.counted() {
                Some(counted) => super::counted::rows_backwards(x, counted)?,
                None => {
                    let start = x.meta.length as i64 - 1;
                    cast(&sequence_like(x, start, -1), DType::U32)?
                }
            };
            let reversed = scan(&gather_plain(&backwards, &values)?, fold, !exclusive)?;
            gather_plain(&backwards, &reversed)?
        }
        false => scan(&values, fold, !exclusive)?,
    };
    let dtype = x.meta.dtype;
    let result = match (fold, dtype.class()) {
        (ScanFold::Sum | ScanFold::Prod, _) => scanned,
        (_, Class::F) => scanned,
        _ if dtype == wide => scanned,
        // A row with nothing before it holds the 32-bit far end: x's type's instead.
        (fold, _) => {
            let (lo, end) = dtype.int_bounds();
            let (op, bound) = match fold {
                ScanFold::Min => (BinaryOp::Minimum, end - 1.0),
                _ => (BinaryOp::Maximum, lo),
            };
            let inputs = vec![scanned, constant_of(wide, bound)?];
            let kept = elementwise_plain(Op::Binary(op), inputs, wide, x.meta.size)?;
            elementwise_plain(Op::Cast(dtype), vec![kept], dtype, x.meta.size)?
        }
    };
    let result = with_validity(&result, x.validity())?;
    super::counted::counted_like(result, x)
}

/// The fold of no row, as a one-row constant of `dtype` (a 32-bit type).
fn identity(fold: ScanFold, dtype: DType) -> Result<NodeRef> {
    let value = match (fold, dtype.class()) {
        (ScanFold::Sum, _) => 0.0,
        (ScanFold::Prod, _) => 1.0,
        (_, Class::F) => f64::NAN,
        (ScanFold::Min, _) => dtype.int_bounds().1 - 1.0,
        (_, _) => dtype.int_bounds().0,
    };
    constant_of(dtype, value)
}

fn constant_of(dtype: DType, value: f64) -> Result<NodeRef> {
    let data = match dtype {
        DType::F32 => ColumnData::F32(vec![value as f32]),
        DType::I32 => ColumnData::I32(vec![value as i32]),
        _ => ColumnData::U32(vec![value as u32]),
    };
    source(data, 1, true)
}

/// Rows `start..end` of `result`, row-local work over the scan `scanned` (an `Op::Scan`),
/// with that scan made of its input's rows alone and `carry` (one row: the fold of the rows
/// before `start`; none: the fold of no row, so that every range runs the same work) folded
/// into each: a cumulative op taken a range at a time. Gives the result's rows and the next
/// range's carry (one row).
pub fn scan_range(
    result: &NodeRef,
    scanned: &NodeRef,
    (start, end): (u32, u32),
    carry: Option<ColumnData>,
) -> Result<[NodeRef; 2]> {
    let (&Op::Scan { fold, inclusive }, [input]) = (&scanned.op, &scanned.inputs[..]) else {
        return Err(crate::engine::internal("a scan range of no scan"));
    };
    let mut made = super::chunked::RowsMade::default();
    let rows = super::chunked::rows_of(input, start, end, &mut made)?;
    let local = scan(&rows, fold, inclusive)?;
    let carry = match carry {
        Some(row) => source(row, scanned.meta.size, true)?,
        None => identity(fold, local.meta.dtype)?,
    };
    let carried = carried_by(fold, &carry, &local)?;
    let carried = match scanned.validity() {
        Some(valid) => {
            let valid = super::chunked::rows_of(valid, start, end, &mut made)?;
            with_validity(&carried, Some(&valid))?
        }
        None => carried,
    };
    made.insert(scanned.id, carried.clone());
    let part = super::chunked::rows_of(result, start, end, &mut made)?;
    let last = |x: &NodeRef| super::slice(x, (end - start - 1) as f64, (end - start) as f64);
    let next = match inclusive {
        true => last(&carried)?,
        false => carried_by(fold, &last(&carried)?, &last(&rows)?)?,
    };
    Ok([part, next])
}

/// The rows a reversed cumulative op scans backwards, where `scanned` (an `Op::Scan`) reads
/// them through the reversal `cumulative` makes (row r reads row rows - 1 - r), with the
/// reversal itself.
pub fn reversed_scan_input(scanned: &NodeRef) -> Option<(&NodeRef, &NodeRef)> {
    let [read] = &scanned.inputs[..] else {
        return None;
    };
    let (Op::Gather, [backwards, values]) = (&read.op, &read.inputs[..]) else {
        return None;
    };
    let rows = values.meta.length;
    let reversal = matches!(backwards.op, Op::Cast(DType::U32))
        && backwards.inputs.first().is_some_and(|sequence| {
            sequence.op
                == Op::Sequence {
                    start: rows as i64 - 1,
                    step: -1,
                }
        })
        && backwards.meta.length == rows
        && values.counted().is_none()
        && scanned.validity().is_none();
    reversal.then_some((backwards, values))
}

/// `scan_range` of a reversed cumulative op: `back` puts the scan (`scanned`, of the rows
/// read backwards) in row order, `carry` is the fold of the rows from `end` on, and the
/// carry given is the next range's: the one before.
pub fn reversed_scan_range(
    result: &NodeRef,
    back: &NodeRef,
    scanned: &NodeRef,
    (start, end): (u32, u32),
    carry: Option<ColumnData>,
) -> Result<[NodeRef; 2]> {
    let (&Op::Scan { fold, inclusive }, Some((_, values))) =
        (&scanned.op, reversed_scan_input(scanned))
    else {
        return Err(crate::engine::internal(
            "a reversed scan range of no reversed scan",
        ));
    };
    let mut made = super::chunked::RowsMade::default();
    let rows = super::chunked::rows_of(values, start, end, &mut made)?;
    let n = end - start;
    let backwards = cast(&sequence_like(&rows, n as i64 - 1, -1), DType::U32)?;
    let read = gather_plain(&backwards, &rows)?;
    let local = scan(&read, fold, inclusive)?;
    let carry = match carry {
        Some(row) => source(row, scanned.meta.size, true)?,
        None => identity(fold, local.meta.dtype)?,
    };
    let carried = carried_by(fold, &carry, &local)?;
    made.insert(back.id, gather_plain(&backwards, &carried)?);
    let part = super::chunked::rows_of(result, start, end, &mut made)?;
    let last = |x: &NodeRef| super::slice(x, (n - 1) as f64, n as f64);
    let next = match inclusive {
        true => last(&carried)?,
        false => carried_by(fold, &last(&carried)?, &last(&read)?)?,
    };
    Ok([part, next])
}

/// `carry` (one row) folded into each row of `local`: a minimum or maximum skips NaN on
/// either side (none folded yet).
fn carried_by(fold: ScanFold, carry: &NodeRef, local: &NodeRef) -> Result<NodeRef> {
    let (dtype, size) = (local.meta.dtype, local.meta.size);
    let op = |op: Op, inputs: &[&NodeRef]| {
        elementwise_plain(op, inputs.iter().map(|&n| n.clone()).collect(), dtype, size)
    };
    let extreme = match fold {
        ScanFold::Sum => return op(Op::Binary(BinaryOp::Add), &[carry, local]),
        ScanFold::Prod => return op(Op::Binary(BinaryOp::Multiply), &[carry, local]),
        ScanFold::Min => BinaryOp::Minimum,
        ScanFold::Max => BinaryOp::Maximum,
    };
    let folded = op(Op::Binary(extreme), &[carry, local])?;
    if dtype.class() != Class::F {
        return Ok(folded);
    }
    let nan = |x: &NodeRef| {
        elementwise_plain(
            Op::Predicate(Predicate::IsNaN),
            vec![x.clone()],
            DType::U8,
            size,
        )
    };
    let kept = op(Op::Select, &[&nan(local)?, carry, &folded])?;
    op(Op::Select, &[&nan(carry)?, local, &kept])
}
