//! Order (api.md "Order"): `argsort` by one or more keys of any type, each ascending or
//! descending, stable, NaN after every number and nulls last (or first); `sort` and `topK`
//! through it. Each key becomes a uint32 sort key (`Op::SortKey`), and a nullable key a
//! one-bit null key before it; the sort is the IR's stable multi-key sort.

use super::nulls::not_flags;
use super::ops::{cast_plain, elementwise_plain, gather, u32_rows};
use super::sort::sort_node_ordering;
use super::{BinaryOp, NodeRef, Op};
use crate::dtype::DType;
use crate::error::{GpuTableError, Result, Shown};

/// The uint32 key ordering the rows of `x` (size 1) as `argsort` does, in x's width of bits.
pub fn sort_key(x: &NodeRef, descending: bool) -> Result<NodeRef> {
    x.check_alive()?;
    check_size(x, "a sort key")?;
    // A plain uint32 column is its own ascending key: `sort(x)`, a gather of x through the
    // permutation, is then a key the sort writes as it sorts, not a gather of its own.
    let plain = x.validity().is_none() && x.counted().is_none() && !x.meta.constant;
    if x.meta.dtype == DType::U32 && !descending && plain {
        return Ok(x.clone());
    }
    elementwise_plain(Op::SortKey { descending }, vec![x.clone()], DType::U32, 1)
}

/// A float's ascending sort key: its bits made to order as words (-0 as +0), NaN (of either
/// sign) after every number.
pub fn float_sort_key(x: f32) -> u32 {
    let bits = if x == 0.0 { 0 } else { x.to_bits() };
    match (x.is_nan(), bits >> 31) {
        (true, _) => u32::MAX,
        (false, 1) => !bits,
        (false, _) => bits | 1 << 31,
    }
}

/// `x` (alive, rows of size 1) as a column: a constant as its one row.
pub(super) fn column_of(x: &NodeRef, what: &str) -> Result<NodeRef> {
    x.check_alive()?;
    check_size(x, what)?;
    super::constant_as_column(x, None)
}

pub(super) fn check_size(x: &NodeRef, what: &str) -> Result<()> {
    match x.meta.size {
        1 => Ok(()),
        size => Err(GpuTableError::invalid(format!(
            "{what} must have rows of size 1, got size {size}"
        ))),
    }
}

/// Where null rows go in an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nulls {
    First,
    Last,
}

impl Nulls {
    pub fn parse(name: &str) -> Result<Nulls> {
        match name {
            "first" => Ok(Nulls::First),
            "last" => Ok(Nulls::Last),
            other => Err(GpuTableError::invalid(format!(
                "nulls must be 'first' or 'last', got '{other}'"
            ))),
        }
    }
}

/// The `uint32` rows that order `keys` lexicographically (the first first), each ascending
/// or `descending` (one flag for all, or one per key), stably: one chunk. A constant key
/// orders nothing.
pub fn argsort(keys: &[NodeRef], descending: &[bool], nulls: Nulls) -> Result<NodeRef> {
    argsort_first(keys, descending, nulls, u32::MAX)
}

/// `argsort` whose first `ordered_rows` rows alone need be in order.
fn argsort_first(
    keys: &[NodeRef],
    descending: &[bool],
    nulls: Nulls,
    ordered_rows: u32,
) -> Result<NodeRef> {
    if keys.is_empty() {
        return Err(GpuTableError::invalid("argsort needs at least one key"));
    }
    if descending.len() != 1 && descending.len() != keys.len() {
        return Err(GpuTableError::invalid(format!(
            "descending is one flag or one per key: {} flags for {} keys",
            descending.len(),
            keys.len()
        )));
    }
    for key in keys {
        key.check_alive()?;
        check_size(key, "an argsort key")?;
    }
    // Keys counted on the device sort the rows of their result first (the rest last).
    let (keys, counted) = super::counted::align_rows(keys.to_vec())?;
    let keys = &keys[..];
    let columns: Vec<(usize, &NodeRef)> = (keys.iter().enumerate())
        .filter(|(_, k)| !k.meta.constant)
        .collect();
    let rows = columns.first().map_or(1, |(_, k)| k.meta.length);
    if let Some((_, other)) = columns.iter().find(|(_, k)| k.meta.length != rows) {
        return Err(GpuTableError::invalid(format!(
            "argsort keys have {rows} and {} rows",
            other.meta.length
        )));
    }
    let mut sort_keys = Vec::with_capacity(2 * columns.len() + 1);
    let mut bits = Vec::with_capacity(2 * columns.len() + 1);
    if let (Some(counted), Some((_, key))) = (&counted, columns.first()) {
        let past = not_flags(&super::live_flags(key, counted)?)?;
        sort_keys.push(cast_plain(&past, DType::U32)?);
        bits.push(1);
    }
    for (k, key) in columns {
        let down = descending[k.min(descending.len() - 1)];
        let mut value_key = sort_key(key, down)?;
        if let Some(flags) = key.validity() {
            let valid = cast_plain(&super::and_flags(std::slice::from_ref(flags))?, DType::U32)?;
            let null_key = match nulls {
                Nulls::Last => cast_plain(&not_flags(flags)?, DType::U32)?,
                Nulls::First => valid.clone(),
            };
            sort_keys.push(null_key);
            bits.push(1);
            // Null rows tie (their values do not count): they keep their order.
            let inputs = vec![value_key, valid];
            value_key = elementwise_plain(Op::Binary(BinaryOp::Multiply), inputs, DType::U32, 1)?;
        }
        sort_keys.push(value_key);
        bits.push(key.meta.dtype.byte_width() as u32 * 8);
    }
    let order = match sort_keys.is_empty() {
        true => u32_rows(rows)?,
        false => sort_node_ordering(&sort_keys, bits, ordered_rows)?,
    };
    // The order of a counted result's rows: as many as it has.
    let counted = match counted {
        Some(c) => Some(super::counted::Counted::whole(c.total)?),
        None => None,
    };
    super::counted::attach(&order, counted);
    Ok(order)
}

/// The values of `x` (size 1) in `argsort`'s order (its nulls with them), one chunk.
pub fn sort(x: &NodeRef, descending: bool, nulls: Nulls) -> Result<NodeRef> {
    check_size(x, "sort's input")?;
    gather(&argsort(std::slice::from_ref(x), &[descending], nulls)?, x)
}

/// The first `k` rows of `sort(x, descending)` and their rows in `x` (`uint32`): `(values,
/// indices)`; every row where `k` exceeds them.
pub fn top_k(x: &NodeRef, k: f64, descending: bool) -> Result<(NodeRef, NodeRef)> {
    if !(k >= 0.0 && k.fract() == 0.0) {
        return Err(GpuTableError::invalid(format!(
            "topK's k must be a non-negative integer, got {}",
            Shown(k)
        )));
    }
    check_size(x, "topK's input")?;
    // k is an integer: past u32::MAX it orders every row anyway.
    let ordered_rows = k.min(u32::MAX as f64) as u32;
    let order = argsort_first(
        std::slice::from_ref(x),
        &[descending],
        Nulls::Last,
        ordered_rows,
    )?;
    let indices = super::slice_counted(&order, 0.0, k)?;
    Ok((gather(&indices, x)?, indices))
}
