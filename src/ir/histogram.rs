//! `histogram` (api.md "Grouping and histograms"): per row, the bin it falls in, by a
//! `searchSorted` in the bins' edges that compares x's values exactly; rows not counted
//! (NaN, nulls, outside the edges, masked out by `where`, past a filter's count) take a
//! bin number past the bins. The counts: a counter per bin that a device adding rows into
//! bins fills in the pass computing the numbers (`Op::BinCount`: the CPU, WebGPU), else the
//! numbers' run lengths, by a sort of the numbers on their few low bits and a search of each
//! bin's first row in them.

use std::borrow::Cow;

use super::counted::{align_rows, plain_binary, plain_predicate, plain_select};
use super::ops::{cast_plain, gather_plain, source, u32_constant};
use super::order::check_size;
use super::{
    concat, count, extent, search_sorted, sequence, single_chunk, sort_permutation_below, swizzle,
    u32_rows, where_flags, BinaryOp, Meta, Node, NodeRef, Op, Predicate,
};
use crate::column::{element_count, try_collect, try_vec, ColumnData};
use crate::dtype::DType;
use crate::error::{GpuTableError, Result, Shown};

/// The bins of a histogram.
#[derive(Clone)]
pub enum Bins {
    /// `bins` equal bins over `[lo, hi]`, or over x's extent (found on the device) where
    /// `range` is None.
    Equal {
        bins: f64,
        range: Option<(f64, f64)>,
    },
    /// Ascending edges: bin i is `[e_i, e_i+1)`, the last also holding its upper edge.
    Edges(Vec<f64>),
    /// Edges in a column, compared with x's values exactly; out of order (or NaN) they are
    /// INVALID_ARGUMENT once computed.
    EdgesOf(NodeRef),
}

/// `histogram(x, bins, {where})`: uint32 counts of the rows of a size-1 `x` in each bin, one
/// row per bin (one chunk). NaN, nulls, values outside the edges and rows `mask` drops are
/// not counted.
pub fn histogram(x: &NodeRef, bins: &Bins, mask: Option<&NodeRef>) -> Result<NodeRef> {
    x.check_alive()?;
    check_size(x, "histogram's input")?;
    // A constant beside a mask is on each of its rows (the mask picks which count).
    let x = &super::constant_as_column(x, mask.filter(|m| !m.meta.constant))?;
    let every_row = source(ColumnData::U8(vec![1]), 1, true)?;
    let (aligned, _) = align_rows(vec![x.clone(), mask.cloned().unwrap_or(every_row)])?;
    let x = &aligned[0];
    // Rows a mask drops, nulls and rows past a count are not counted (flags only where there
    // are such rows), nor NaN where the extent is found. Made anew for each pass reading
    // them, which computes them where it reads them (one node read by two passes would be
    // stored whole between them).
    let masked = mask.is_some() || x.validity().is_some() || x.counted().is_some();
    let auto_float = matches!(bins, Bins::Equal { range: None, .. }) && x.meta.dtype == DType::F32;
    let keep = || -> Result<Option<NodeRef>> {
        let mut flags = Vec::new();
        if masked {
            flags.push(where_flags(x, &aligned[1], None, None)?);
        }
        if auto_float {
            flags.push(plain_predicate(Predicate::Equal, x, x)?);
        }
        flags.first().map(|_| super::and_flags(&flags)).transpose()
    };
    let numbered = match bins {
        Bins::Equal {
            bins,
            range: Some(range),
        } => Some(Cow::Owned(equal_edges(bin_count(*bins)?, *range)?)),
        Bins::Edges(edges) => {
            check_edges(edges)?;
            Some(Cow::Borrowed(&edges[..]))
        }
        _ => None,
    };
    // Edges give rows outside them (and NaN) a bin number past the bins.
    let mut check = None;
    let (bin, count) = match (bins, numbered) {
        (_, Some(edges)) => {
            let count = (edges.len() - 1) as u32;
            let by_keys = matches!(bins, Bins::Edges(_));
            let Some(bin) = exact_bin(x, &edges, by_keys)? else {
                return zero_counts(count);
            };
            (bin, count)
        }
        (Bins::EdgesOf(edges), None) => {
            let (bin, bins, unordered) = device_bin(x, edges)?;
            check = Some(super::Check::Refused(
                unordered,
                "histogram's edges must be ascending",
            ));
            (bin, bins)
        }
        (Bins::Equal { bins, .. }, None) => {
            let count = bin_count(*bins)?;
            // Nothing masked: the mask aligned with x is every row's.
            let kept = keep()?.unwrap_or_else(|| aligned[1].clone());
            let (bin, extent) = auto_bin(x, &kept, count)?;
            check = extent.map(super::Check::FiniteRange);
            (bin, count)
        }
        (Bins::Edges(_), None) => return Err(crate::engine::internal("edges not numbered")),
    };
    let ids = match keep()? {
        None => bin,
        Some(kept) => plain_select(&kept, &bin, &u32_constant(count)?)?,
    };
    let counts = counts_of_ids(&ids, count)?;
    if let Some(check) = check {
        let _ = counts.check.set(check);
    }
    Ok(counts)
}

/// `bins` as a bin count: an integer from 1 (the count plus one, the id of rows not
/// counted, fits a uint32).
fn bin_count(bins: f64) -> Result<u32> {
    if !(bins >= 1.0 && bins.fract() == 0.0 && bins < u32::MAX as f64) {
        return Err(GpuTableError::invalid(format!(
            "histogram's bins must be an integer from 1, got {}",
            Shown(bins)
        )));
    }
    Ok(bins as u32)
}

/// The `bins + 1` edges of equal bins over `[lo, hi]` (finite, `lo < hi`), the last `hi`.
fn equal_edges(bins: u32, (lo, hi): (f64, f64)) -> Result<Vec<f64>> {
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(GpuTableError::invalid(format!(
            "histogram's range is [lo, hi] with lo < hi, both finite, got [{}, {}]",
            Shown(lo),
            Shown(hi)
        )));
    }
    // (lo (bins - i) + hi i) / bins, as 'auto' edges are made on the device (`auto_bin`):
    // exact wherever its terms are (a value on an edge of whole numbers or tenths is in the
    // bin above it); lo + step i where a term overflows.
    // Kept ascending and within [lo, hi] where rounding would not (bins far narrower than
    // the values' ulp).
    let step = (hi - lo) / bins as f64;
    let edges = (0..=bins).scan(lo, |last, i| {
        let weighted = (lo * (bins - i) as f64 + hi * i as f64) / bins as f64;
        *last = match i == bins {
            true => hi,
            false if weighted.is_finite() => weighted.max(*last).min(hi),
            false => lo + step * i as f64,
        };
        Some(*last)
    });
    try_collect(bins as usize + 1, edges)
}

fn check_edges(edges: &[f64]) -> Result<()> {
    if edges.len() < 2 || edges.len() > u32::MAX as usize {
        return Err(GpuTableError::invalid(format!(
            "histogram's edges are at least two numbers, got {}",
            edges.len()
        )));
    }
    if edges.iter().any(|e| e.is_nan()) || edges.windows(2).any(|w| w[0] > w[1]) {
        return Err(GpuTableError::invalid(
            "histogram's edges must be ascending numbers",
        ));
    }
    Ok(())
}

/// uint32 zero counts of `bins` bins (no row can fall in one), computed where the
/// histogram is.
fn zero_counts(bins: u32) -> Result<NodeRef> {
    plain_binary(BinaryOp::Multiply, &u32_rows(bins)?, &u32_constant(0)?)
}

/// The least value of `dtype` at or above `e` (None: above every value of it).
fn at_least(dtype: DType, e: f64) -> Option<f64> {
    if dtype == DType::F32 {
        let f = e as f32;
        return Some(if (f as f64) < e { f.next_up() } else { f } as f64);
    }
    let (lowest, end) = dtype.int_bounds();
    let c = e.ceil().max(lowest);
    (c < end).then_some(c)
}

/// The greatest value of `dtype` at or below `e` (None: below every value of it).
fn at_most(dtype: DType, e: f64) -> Option<f64> {
    if dtype == DType::F32 {
        let f = e as f32;
        return Some(if (f as f64) > e { f.next_down() } else { f } as f64);
    }
    let (lowest, end) = dtype.int_bounds();
    let c = e.floor().min(end - 1.0);
    (c >= lowest).then_some(c)
}

/// The bin of each row of `x` for ascending `edges` (checked), as x's type holds them
/// (`bin_within`): x is at or above an edge exactly where it is at or above the least value
/// of its type at or above it, and at or below the last exactly where it is at or below the
/// greatest value at or below it. None where no value of x's type is inside the edges.
/// `by_keys`: float edges are searched as their sort keys (uint32, the query's made per
/// row), so each step of a GPU's search compares two words rather than making a float's
/// key from its bits; equal bins keep float edges, which the CPU searches from an estimate
/// of each row's place.
fn exact_bin(x: &NodeRef, edges: &[f64], by_keys: bool) -> Result<Option<NodeRef>> {
    let dtype = x.meta.dtype;
    // Edges above every value of the type are a tail: no value reaches them.
    let mut held = try_vec(edges.len(), "histogram edges")?;
    held.extend(edges.iter().map_while(|&e| at_least(dtype, e)));
    let (Some(last), false) = (at_most(dtype, edges[edges.len() - 1]), held.is_empty()) else {
        return Ok(None);
    };
    let bins = (edges.len() - 1) as u32;
    if let (true, Some(past)) = (held.len() == edges.len(), value_above(dtype, last)) {
        // x is at or below the last edge exactly where it is below the next value of its
        // type: with that value as the last edge, the edges reached less one is the bin (0
        // reached wraps past the bins, and all of them, past the last or NaN, is `bins`).
        held[bins as usize] = past;
        let reached = match by_keys && dtype == DType::F32 {
            true => {
                let keys = try_collect(
                    held.len(),
                    held.iter().map(|&e| super::float_sort_key(e as f32)),
                )?;
                let keys = source(ColumnData::U32(keys), 1, false)?;
                search_sorted(&keys, &super::sort_key(x, false)?, true)?
            }
            false => search_sorted(
                &source(ColumnData::from_f64(dtype, &held)?, 1, false)?,
                x,
                true,
            )?,
        };
        return plain_binary(BinaryOp::Subtract, &reached, &u32_constant(1)?).map(Some);
    }
    let held = source(ColumnData::from_f64(dtype, &held)?, 1, false)?;
    let last = source(ColumnData::from_f64(dtype, &[last])?, 1, true)?;
    bin_within(x, &held, &last, bins).map(Some)
}

/// The least value of `dtype` above `v` (one of its values, finite), if it has one.
fn value_above(dtype: DType, v: f64) -> Option<f64> {
    if dtype == DType::F32 {
        let f = v as f32;
        return f.is_finite().then(|| f.next_up() as f64);
    }
    let (_, end) = dtype.int_bounds();
    (v + 1.0 < end).then_some(v + 1.0)
}

/// `(bin, bins, unordered)` for edges in a column on the device (`bin_within`), with the
/// count of pairs of edges out of order (or NaN), which the engine checks.
fn device_bin(x: &NodeRef, edges: &NodeRef) -> Result<(NodeRef, u32, NodeRef)> {
    edges.check_alive()?;
    let edges = super::known_rows(edges, "histogram's edges")?;
    if edges.meta.size != 1 || edges.meta.constant || edges.meta.length < 2 {
        return Err(GpuTableError::invalid(format!(
            "histogram's edges are a column of at least two rows of size 1, got {} rows of \
             size {}",
            edges.meta.length, edges.meta.size
        )));
    }
    let bins = edges.meta.length - 1;
    let last = gather_plain(&u32_constant(bins)?, &edges)?;
    let from = |first| gather_plain(&sequence(bins as f64, first, 1.0)?, &edges);
    let ordered = plain_predicate(Predicate::LessEqual, &from(0.0)?, &from(1.0)?)?;
    let unordered = count(
        &plain_select(&ordered, &u32_constant(0)?, &u32_constant(1)?)?,
        None,
    )?;
    Ok((bin_within(x, &edges, &last, bins)?, bins, unordered))
}

/// The bin of each row of `x` among `bins` bins of ascending `edges` (a column, compared
/// exactly) whose last edge is `last`, the last bin holding it; a number past the bins for
/// a row outside them or NaN: below the first edge no edge is reached, and 0 - 1 wraps.
fn bin_within(x: &NodeRef, edges: &NodeRef, last: &NodeRef, bins: u32) -> Result<NodeRef> {
    // The edges at or below each row: every edge for the last, and for rows past it (NaN
    // too), which count one more so as to stay past the bins.
    let reached = search_sorted(edges, x, true)?;
    let at_most_last = plain_predicate(Predicate::LessEqual, x, last)?;
    let most = plain_select(
        &at_most_last,
        &u32_constant(bins)?,
        &u32_constant(bins.saturating_add(1))?,
    )?;
    let within = plain_binary(BinaryOp::Minimum, &reached, &most)?;
    plain_binary(BinaryOp::Subtract, &within, &u32_constant(1)?)
}

/// The bin of each row of `x` among `bins` equal bins over the extent of the rows `keep`
/// holds, found on the device in float32 (NumPy's rule: a range of one value is widened by
/// 0.5 each side), and that extent where an infinite end is possible (NumPy refuses it, as
/// a range given must be finite). Every value lies inside the extent: the bin is the count
/// of inner edges at or below it.
fn auto_bin(x: &NodeRef, keep: &NodeRef, bins: u32) -> Result<(NodeRef, Option<NodeRef>)> {
    let float = x.meta.dtype == DType::F32;
    match () {
        _ if bins == 1 && !float => return Ok((u32_constant(0)?, None)),
        _ if !float && bins <= EXACT_INTEGER_BINS => {
            return Ok((auto_integer_bin(x, keep, bins)?, None))
        }
        _ => {}
    }
    let nan = source(ColumnData::F32(vec![f32::NAN]), 1, true)?;
    let values = plain_select(keep, &cast_plain(x, DType::F32)?, &nan)?;
    // No rows kept give NaN, not EMPTY_INPUT.
    let one_nan = source(ColumnData::F32(vec![f32::NAN]), 1, false)?;
    let range = extent(&with_row_if_empty(values, one_nan)?)?;
    if bins == 1 {
        // One bin holds every kept value, once its range is known to be finite.
        return Ok((u32_constant(0)?, Some(range)));
    }
    // The extent is a column of one row: each end a constant read from it.
    let end = |lane: f64| gather_plain(&u32_constant(0)?, &swizzle(&range, &[lane])?);
    let (lo, hi) = (end(0.0)?, end(1.0)?);
    let one_value = plain_predicate(Predicate::Equal, &lo, &hi)?;
    let half = source(ColumnData::F32(vec![0.5]), 1, true)?;
    let lo = plain_select(
        &one_value,
        &plain_binary(BinaryOp::Subtract, &lo, &half)?,
        &lo,
    )?;
    let hi = plain_select(&one_value, &plain_binary(BinaryOp::Add, &hi, &half)?, &hi)?;
    // Inner edge i is e = (lo (bins - i) + hi i) / bins, as the least float32 at or above
    // it (a value on it or past it is in bin i): the quotient, one float32 up where it is
    // below e (its product with bins, its halves of 12 bits each times bins exact, is below
    // the numerator). Exact wherever the numerator is (integers, tenths: data one bins by
    // hand). Where a product overflows, lo (1 - i/bins) + hi i/bins, which never does.
    // A range given takes the same numerator (`equal_edges`), so both bin alike.
    let inner = bins - 1;
    element_count(inner as u64, 1, DType::F32)?;
    // One float32 up, of either sign (2^-24 alone would leave a power of two); none past
    // bins whose product with a half is not exact.
    let up = match bins <= 1 << 12 {
        true => f32::from_bits(0x3380_0001),
        false => 0.0,
    };
    let mut values = Vec::with_capacity(12 + EDGE_STEPS.len());
    values.extend([lo, hi]);
    for weight in 0..4 {
        let weights = (1..bins).map(|i| {
            let share = i as f64 / bins as f64;
            let of = [(bins - i) as f64, i as f64, 1.0 - share, share];
            of[weight] as f32
        });
        let weights = ColumnData::F32(try_collect(inner as usize, weights)?);
        values.push(source(weights, 1, false)?);
    }
    for constant in [
        bins as f32,
        4097.0,
        up,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ] {
        values.push(source(ColumnData::F32(vec![constant]), 1, true)?);
    }
    for &(step, [a, b, c]) in EDGE_STEPS {
        let [a, b, c] = [&values[a], &values[b], &values[c]];
        let value = match step {
            Step::Op(op) => plain_binary(op, a, b)?,
            Step::Is(predicate) => plain_predicate(predicate, a, b)?,
            Step::Pick => plain_select(a, b, c)?,
        };
        values.push(value);
    }
    let edges = values
        .pop()
        .ok_or_else(|| crate::engine::internal("no edges"))?;
    let infinite = float.then_some(range);
    Ok((search_sorted(&edges, x, true)?, infinite))
}

/// One step of `EDGE_STEPS`: an op of two values, a comparison, or a select of three.
#[derive(Clone, Copy)]
enum Step {
    Op(BinaryOp),
    Is(Predicate),
    Pick,
}

/// `auto_bin`'s edges from its values 0-11 (lo, hi, the weights bins - i and i, the shares
/// 1 - i/bins and i/bins, bins, 4097, the step up, 0, +inf, -inf), each step's value the
/// next (one call site per kind keeps the module small).
const EDGE_STEPS: &[(Step, [usize; 3])] = {
    use BinaryOp::*;
    use Step::*;
    &[
        (Op(Multiply), [0, 2, 0]),             // 12: lo (bins - i)
        (Op(Multiply), [1, 3, 0]),             // 13: hi i
        (Op(Add), [12, 13, 0]),                // 14: the numerator
        (Op(Divide), [14, 6, 0]),              // 15: the quotient
        (Op(Multiply), [15, 7, 0]),            // 16: Veltkamp's split
        (Op(Subtract), [16, 15, 0]),           // 17
        (Op(Subtract), [16, 17, 0]),           // 18: the high half
        (Op(Subtract), [15, 18, 0]),           // 19: the low half
        (Op(Multiply), [18, 6, 0]),            // 20: exact
        (Op(Subtract), [20, 14, 0]),           // 21: exact (within a factor 2)
        (Op(Multiply), [19, 6, 0]),            // 22: exact
        (Op(Add), [21, 22, 0]),                // 23: the sign of quotient times bins - numerator
        (Op(Subtract), [9, 15, 0]),            // 24
        (Op(Maximum), [15, 24, 0]),            // 25: |quotient|
        (Op(Multiply), [25, 8, 0]),            // 26
        (Op(Add), [15, 26, 0]),                // 27: one float32 up
        (Is(Predicate::Less), [23, 9, 0]),     // 28: the quotient is below the edge
        (Pick, [28, 27, 15]),                  // 29
        (Op(Multiply), [0, 4, 0]),             // 30
        (Op(Multiply), [1, 5, 0]),             // 31
        (Op(Add), [30, 31, 0]),                // 32: the shares' edge
        (Is(Predicate::Less), [14, 10, 0]),    // 33
        (Is(Predicate::Greater), [14, 11, 0]), // 34
        (Pick, [34, 29, 32]),                  // 35
        (Pick, [33, 35, 32]),                  // 36: the edges
    ]
};

/// The most equal bins over an integer column's extent found exactly in 32-bit words (the
/// products of an edge's remainder stay below 2^32).
const EXACT_INTEGER_BINS: u32 = 1 << 16;

/// `values` followed by `row` where they have no rows (a reduction of none is EMPTY_INPUT),
/// else as they are: a reduction then reads them fused, chunk by chunk, nothing kept whole.
fn with_row_if_empty(values: NodeRef, row: NodeRef) -> Result<NodeRef> {
    match values.meta.length == 0 || values.meta.constant {
        true => concat(&[values, row]),
        false => Ok(values),
    }
}

/// `auto_bin` of an integer `x`, exact for every 32-bit value (float32 ends would merge values
/// past 2^24): with `lo` and `hi` the least and greatest kept values and `r = hi - lo`, a value
/// `v` is in bin `i` or later where `(v - lo) bins >= r i`, that is where `v - lo` is at least
/// `q i + ceil(m i / bins)` (`r = q bins + m`), all in uint32 words. One value: the middle
/// bin, as NumPy's range widened by 0.5 each side gives.
fn auto_integer_bin(x: &NodeRef, keep: &NodeRef, bins: u32) -> Result<NodeRef> {
    // Rows not kept take the other end, as does one row where there are none (no error).
    let (bounds, rows) = (
        type_bounds(x.meta.dtype, true)?,
        type_bounds(x.meta.dtype, false)?,
    );
    let end = |kind, other: usize| -> Result<NodeRef> {
        let kept = plain_select(keep, x, &bounds[other])?;
        let kept = with_row_if_empty(kept, rows[other].clone())?;
        super::reduce(kind, &kept, None, super::DEFAULT_SPLIT_EVERY)
    };
    let lo = end(super::ReduceKind::Min, 1)?;
    let hi = end(super::ReduceKind::Max, 0)?;
    let word = |n: &NodeRef| cast_plain(n, DType::U32);
    let (lo, hi) = (word(&lo)?, word(&hi)?);
    let range = plain_binary(BinaryOp::Subtract, &hi, &lo)?;
    let count = u32_constant(bins)?;
    let quotient = plain_binary(BinaryOp::Divide, &range, &count)?;
    let remainder = plain_binary(
        BinaryOp::Subtract,
        &range,
        &plain_binary(BinaryOp::Multiply, &quotient, &count)?,
    )?;
    let inner = bins - 1;
    let steps = source(
        ColumnData::U32(try_collect(inner as usize, 1..bins)?),
        1,
        false,
    )?;
    let rounded_up = plain_binary(
        BinaryOp::Divide,
        &plain_binary(
            BinaryOp::Add,
            &plain_binary(BinaryOp::Multiply, &remainder, &steps)?,
            &u32_constant(bins - 1)?,
        )?,
        &count,
    )?;
    let edges = plain_binary(
        BinaryOp::Add,
        &plain_binary(BinaryOp::Multiply, &quotient, &steps)?,
        &rounded_up,
    )?;
    let offset = plain_binary(BinaryOp::Subtract, &word(x)?, &lo)?;
    let bin = search_sorted(&edges, &offset, true)?;
    let one_value = plain_predicate(Predicate::Equal, &range, &u32_constant(0)?)?;
    plain_select(&one_value, &u32_constant(bins / 2)?, &bin)
}

/// The least and the greatest value of the integer type `dtype`, as constants of it or as
/// rows.
fn type_bounds(dtype: DType, constant: bool) -> Result<[NodeRef; 2]> {
    let (least, most) = match dtype {
        DType::U8 => (ColumnData::U8(vec![0]), ColumnData::U8(vec![u8::MAX])),
        DType::I8 => (ColumnData::I8(vec![i8::MIN]), ColumnData::I8(vec![i8::MAX])),
        DType::U16 => (ColumnData::U16(vec![0]), ColumnData::U16(vec![u16::MAX])),
        DType::I16 => (
            ColumnData::I16(vec![i16::MIN]),
            ColumnData::I16(vec![i16::MAX]),
        ),
        DType::U32 => (ColumnData::U32(vec![0]), ColumnData::U32(vec![u32::MAX])),
        DType::I32 => (
            ColumnData::I32(vec![i32::MIN]),
            ColumnData::I32(vec![i32::MAX]),
        ),
        DType::F32 => return Err(crate::engine::internal("integer bounds of float32")),
    };
    Ok([source(least, 1, constant)?, source(most, 1, constant)?])
}

/// uint32 `ids` (bin numbers, `bins` or more for rows not counted) counted per bin: a counter
/// per bin where the device adds rows into bins (or walks them), else `counts_by_sort`.
pub(super) fn counts_of_ids(ids: &NodeRef, bins: u32) -> Result<NodeRef> {
    ids.check_alive()?;
    if ids.meta.dtype != DType::U32 || ids.meta.size != 1 || ids.meta.constant {
        return Err(crate::engine::internal("a bin count of uint32 ids"));
    }
    if ids.meta.length == 0 {
        return counts_by_sort(ids, bins);
    }
    let meta = Meta {
        dtype: DType::U32,
        size: 1,
        length: bins,
        constant: false,
    };
    let op = Op::BinCount { bins };
    Ok(Node::new(
        op,
        vec![ids.clone()],
        meta,
        single_chunk(bins),
        None,
    ))
}

/// `counts_of_ids` composed of other ops: sorted by their low bits, each bin's rows are those
/// from its first row to the next bin's.
pub(super) fn counts_by_sort(ids: &NodeRef, bins: u32) -> Result<NodeRef> {
    // Ids past the bins (a histogram's rows below its first edge wrap to 2^32 - 1) all as
    // `bins`, so that the sort's low bits keep them past.
    let ids = plain_binary(BinaryOp::Minimum, ids, &u32_constant(bins)?)?;
    let (_, sorted) = sort_permutation_below(&ids, bins as u64 + 1)?;
    let first = search_sorted(&sorted, &u32_rows(bins + 1)?, false)?;
    let bin = u32_rows(bins)?;
    let next = plain_binary(BinaryOp::Add, &bin, &u32_constant(1)?)?;
    plain_binary(
        BinaryOp::Subtract,
        &gather_plain(&next, &first)?,
        &gather_plain(&bin, &first)?,
    )
}

/// Per bin, the sum of `values` (plain, of a sum's type: float32, sint32 or uint32) over the
/// rows whose uint32 `ids` (below 2^24; `bins` or more for rows not summed) hold it: a sum per
/// bin of `[id, value]` pairs where the device adds rows into bins, else `sums_by_sort`.
pub(super) fn sums_of_ids(ids: &NodeRef, values: &NodeRef, bins: u32) -> Result<NodeRef> {
    let dtype = values.meta.dtype;
    if !matches!(dtype, DType::F32 | DType::I32 | DType::U32) || values.meta.size != 1 {
        return Err(crate::engine::internal("a bin sum of one 32-bit value"));
    }
    // Ids of 2^24 and more stay past the bins as float32.
    let pairs = super::ops::elementwise_plain(
        Op::Interleave,
        vec![cast_plain(ids, dtype)?, values.clone()],
        dtype,
        2,
    )?;
    if ids.meta.length == 0 {
        return sums_by_sort(&pairs, bins);
    }
    let meta = Meta {
        dtype,
        size: 1,
        length: bins,
        constant: false,
    };
    Ok(Node::new(
        Op::BinSum { bins },
        vec![pairs],
        meta,
        single_chunk(bins),
        None,
    ))
}

/// `sums_of_ids` composed of other ops: the values in the order of a sort of their ids, and
/// each bin's rows (from its first row to the next bin's) summed by a segmented sum.
pub(super) fn sums_by_sort(pairs: &NodeRef, bins: u32) -> Result<NodeRef> {
    let ids = cast_plain(&swizzle(pairs, &[0.0])?, DType::U32)?;
    let values = swizzle(pairs, &[1.0])?;
    let (order, sorted) = sort_permutation_below(&ids, bins as u64 + 1)?;
    let first = search_sorted(&sorted, &u32_rows(bins + 1)?, false)?;
    super::segment_sum(&gather_plain(&order, &values)?, &first)
}
