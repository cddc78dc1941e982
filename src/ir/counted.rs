//! Results whose length depends on the data (api.md "Results whose length depends on the
//! data"): `filter` and what is built on it (`unique` and grouping in `group.rs`). Such a node is computed over a
//! capacity of rows (its `meta.length`) with the rows of the result packed at the start,
//! and a count on the device says how many they are (`Counted`). Nothing is read back
//! mid-graph: later ops read the count where they run (rows past it are skipped by
//! reductions, sorted last, and read as a shorter column's rows past its end by ops over
//! other columns), and an evaluation reads back only its roots' counts (`settle`).

use std::rc::Rc;

use super::chunked::{concat as concat_rows, rechunk as rechunk_rows, slice as slice_rows};
use super::nulls::{and_flags, with_validity};
use super::ops::{
    cast_plain, elementwise_plain, gather, gather_plain, sequence_like, source, u32_constant,
    u32_row,
};
use super::{scan, scatter, BinaryOp, Chunks, NodeRef, Op, Predicate, ScanFold};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::error::{GpuTableError, Result};

/// How a node's rows are counted on the device.
#[derive(Clone, Debug)]
pub struct Counted {
    /// uint32, one constant row: the rows of the result.
    pub total: NodeRef,
    /// uint32, one row per chunk of the result (never a constant): the rows of each, which
    /// an evaluation reads back. Sums to `total`.
    pub chunks: NodeRef,
    /// `[total, 1, 0, 0]` (uint32), made where a device draws from it (`draw_args`).
    draw: Rc<std::cell::OnceCell<NodeRef>>,
}

impl Counted {
    pub(super) fn new(total: NodeRef, chunks: NodeRef) -> Counted {
        Counted {
            total,
            chunks,
            draw: Rc::default(),
        }
    }

    /// The draw arguments `[rows, 1, 0, 0]` (uint32, 4 rows): a non-indexed draw of the
    /// result's rows, one instance.
    pub fn draw_args(&self) -> Result<NodeRef> {
        if let Some(args) = self.draw.get() {
            return Ok(args.clone());
        }
        // One value of 4 rows: a renderer binds it whole.
        let rest = u32_column(vec![1, 0, 0])?;
        let args = concat_rows(&[self.total.clone(), rest])?;
        let args = rechunk_rows(&args, super::single_chunk(4))?;
        Ok(self.draw.get_or_init(|| args).clone())
    }

    /// The draw arguments, if an evaluation made them.
    pub fn made_draw_args(&self) -> Option<NodeRef> {
        self.draw.get().cloned()
    }

    pub(super) fn same(&self, other: &Counted) -> bool {
        Rc::ptr_eq(&self.total, &other.total)
    }

    /// One chunk of `total` rows.
    pub(super) fn whole(total: NodeRef) -> Result<Counted> {
        let chunks = plain_binary(BinaryOp::Add, &u32_row(0)?, &total)?;
        Ok(Counted::new(total, chunks))
    }
}

/// Records that `node`'s rows are counted by `counted` (a constant has its one row).
pub(super) fn attach(node: &NodeRef, counted: Option<Counted>) {
    if let (Some(counted), false) = (counted, node.meta.constant) {
        let _ = node.counted.set(counted);
    }
}

/// `node` (counted by `from`'s count, as a new node where `node` is shared with `from`'s flags).
pub(super) fn counted_like(node: NodeRef, from: &NodeRef) -> Result<NodeRef> {
    let Some(counted) = from.counted() else {
        return Ok(node);
    };
    let node = match node.counted() {
        Some(held) if held.same(counted) => return Ok(node),
        Some(_) => rechunk_rows(&node, node.chunks.clone())?,
        None if Some(node.id) == from.validity().map(|v| v.id) => {
            rechunk_rows(&node, node.chunks.clone())?
        }
        None => node,
    };
    attach(&node, Some(counted.clone()));
    Ok(node)
}

pub(super) fn plain_binary(op: BinaryOp, a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    let dtype = DType::join([a.meta.dtype, b.meta.dtype]);
    let size = a.meta.size.max(b.meta.size);
    elementwise_plain(Op::Binary(op), vec![a.clone(), b.clone()], dtype, size)
}

pub(super) fn plain_predicate(predicate: Predicate, a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    elementwise_plain(
        Op::Predicate(predicate),
        vec![a.clone(), b.clone()],
        DType::U8,
        1,
    )
}

pub(super) fn plain_select(cond: &NodeRef, a: &NodeRef, b: &NodeRef) -> Result<NodeRef> {
    let dtype = DType::join([a.meta.dtype, b.meta.dtype]);
    let size = a.meta.size.max(b.meta.size);
    let inputs = vec![cond.clone(), a.clone(), b.clone()];
    elementwise_plain(Op::Select, inputs, dtype, size)
}

pub(super) fn u32_column(values: Vec<u32>) -> Result<NodeRef> {
    source(ColumnData::U32(values), 1, false)
}

/// The uint32 row numbers of `node`'s rows (its capacity), chunked like it.
pub(super) fn row_numbers_of(node: &NodeRef) -> Result<NodeRef> {
    cast_plain(&sequence_like(node, 0, 1), DType::U32)
}

/// uint32, per row r of `node` (counted by `counted`), the row `count - 1 - r` (wrapping
/// past the count: no row).
pub(super) fn rows_backwards(node: &NodeRef, counted: &Counted) -> Result<NodeRef> {
    let last = plain_binary(BinaryOp::Subtract, &counted.total, &u32_constant(1)?)?;
    plain_binary(BinaryOp::Subtract, &last, &row_numbers_of(node)?)
}

/// uint8, 1 on the rows of `node` (counted by `counted`) that are rows of the result.
pub fn live_flags(node: &NodeRef, counted: &Counted) -> Result<NodeRef> {
    plain_predicate(Predicate::Less, &row_numbers_of(node)?, &counted.total)
}

/// `node`'s rows as a column of its capacity, no longer counted: rows past the count hold 0
/// and are null, as a shorter column's rows past its end read.
fn masked(node: &NodeRef, counted: &Counted) -> Result<NodeRef> {
    let live = live_flags(node, counted)?;
    let zero = zero_of(node.meta.dtype)?;
    let values = elementwise_plain(
        Op::Select,
        vec![live.clone(), node.clone(), zero],
        node.meta.dtype,
        node.meta.size,
    )?;
    let flags = match node.validity() {
        Some(valid) => and_flags(&[live, valid.clone()])?,
        None => live,
    };
    with_validity(&values, Some(&flags))
}

pub(super) fn zero_of(dtype: DType) -> Result<NodeRef> {
    let data = match dtype {
        DType::U8 => ColumnData::U8(vec![0]),
        DType::I8 => ColumnData::I8(vec![0]),
        DType::U16 => ColumnData::U16(vec![0]),
        DType::I16 => ColumnData::I16(vec![0]),
        DType::U32 => ColumnData::U32(vec![0]),
        DType::I32 => ColumnData::I32(vec![0]),
        DType::F32 => ColumnData::F32(vec![0.0]),
    };
    source(data, 1, true)
}

/// The inputs of a row-wise op made to read the same rows, and how the output's rows are
/// counted. Inputs counted alike (or constants) are read as they are. Otherwise every
/// counted input reads as a column of its capacity whose rows past its count are null (a
/// shorter column), and the output is counted only where a count can be the longest
/// length: then by the largest of the counts and the other inputs' lengths, in one chunk.
pub(crate) fn align(inputs: Vec<NodeRef>) -> Result<(Vec<NodeRef>, Option<Counted>)> {
    let columns: Vec<&NodeRef> = inputs.iter().filter(|x| !x.meta.constant).collect();
    let Some(first) = columns.iter().find_map(|x| x.counted()).cloned() else {
        return Ok((inputs, None));
    };
    let alike = columns
        .iter()
        .all(|x| x.counted().is_some_and(|c| c.same(&first)));
    if alike {
        return Ok((inputs, Some(first)));
    }
    if (columns.iter()).any(|x| x.counted().is_some() && x.settled().is_some()) {
        // Evaluated already: read as the rows it has (api.md: the length rules hold with
        // the counts the device decided).
        return align(inputs.iter().map(settled_rows).collect::<Result<_>>()?);
    }
    let capacity = columns
        .iter()
        .filter(|x| x.counted().is_some())
        .map(|x| x.meta.length)
        .max()
        .unwrap_or(0);
    let longest_plain = columns
        .iter()
        .filter(|x| x.counted().is_none())
        .map(|x| x.meta.length)
        .max();
    let mut total: Option<NodeRef> = None;
    let mut longest = |count: NodeRef| -> Result<()> {
        total = Some(match total.take() {
            None => count,
            Some(t) => plain_binary(BinaryOp::Maximum, &t, &count)?,
        });
        Ok(())
    };
    let mut aligned = Vec::with_capacity(inputs.len());
    for x in &inputs {
        match x.counted() {
            Some(c) if !x.meta.constant => {
                longest(c.total.clone())?;
                aligned.push(masked(x, c)?);
            }
            _ => aligned.push(x.clone()),
        }
    }
    match longest_plain {
        Some(rows) if rows >= capacity => Ok((aligned, None)),
        plain => {
            if let Some(rows) = plain {
                longest(u32_constant(rows)?)?;
            }
            let total = total.ok_or_else(|| crate::engine::internal("no count to align"))?;
            Ok((aligned, Some(Counted::whole(total)?)))
        }
    }
}

/// `align` for an op that reads its inputs' rows side by side (a mask beside its column,
/// sort or group keys): where a count decides the rows, a shorter column reads as one of the
/// longest one's rows, its rows past its end 0 and null as an elementwise op reads them, so
/// a column made for the rows the device keeps is taken.
pub(crate) fn align_rows(inputs: Vec<NodeRef>) -> Result<(Vec<NodeRef>, Option<Counted>)> {
    let (aligned, counted) = align(inputs)?;
    let longest = aligned
        .iter()
        .filter(|x| !x.meta.constant)
        .max_by_key(|x| x.meta.length);
    let (Some(_), Some(longest)) = (&counted, longest) else {
        return Ok((aligned, counted));
    };
    let rows = longest.meta.length;
    let shape = super::flags_like(longest, 1)?;
    let padded = (aligned.iter())
        .map(|x| match x.meta.constant || x.meta.length == rows {
            true => Ok(x.clone()),
            false => read_over(x, &shape),
        })
        .collect::<Result<_>>()?;
    Ok((padded, counted))
}

/// Plain column `x` read over `shape`'s longer rows (uint8 flags of 1).
fn read_over(x: &NodeRef, shape: &NodeRef) -> Result<NodeRef> {
    let inside = match x.validity() {
        Some(valid) => valid.clone(),
        None => super::flags_like(x, 1)?,
    };
    let inside = and_flags(&[shape.clone(), inside])?;
    let inputs = vec![shape.clone(), x.clone(), zero_of(x.meta.dtype)?];
    let values = elementwise_plain(Op::Select, inputs, x.meta.dtype, x.meta.size)?;
    with_validity(&values, Some(&inside))
}

/// `filter(x, mask)`: the rows of `x` whose `mask` (size 1; x's rows, or a constant) is
/// nonzero and not null, in order; chunk k of the result holds the kept rows of x's chunk k.
/// One pass marks the rows, a compaction packs their numbers (`Op::Compact`) and a gather
/// reads them; the counts are searched in the packed numbers: they stay on the device.
pub fn filter(x: &NodeRef, mask: &NodeRef) -> Result<NodeRef> {
    x.check_alive()?;
    mask.check_alive()?;
    if mask.meta.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "filter's mask has size 1, got {}",
            mask.meta.size
        )));
    }
    // A constant is the rows of its mask (one row beside a constant mask).
    let x = &super::constant_as_column(x, Some(mask).filter(|m| !m.meta.constant))?;
    let (aligned, counted) = align_rows(vec![x.clone(), mask.clone()])?;
    let (x, mask) = (&aligned[0], &aligned[1]);
    if !mask.meta.constant && mask.meta.length != x.meta.length {
        return Err(GpuTableError::invalid(format!(
            "filter's mask has its column's {} rows or is a constant, got {} rows",
            x.meta.length, mask.meta.length
        )));
    }
    // Filters by one mask (a table's columns) share its compaction, and its counts where
    // chunked alike.
    let shared = counted.is_none() && !mask.meta.constant;
    // The row offsets where x's chunks end.
    let ends = || match &counted {
        Some(c) => scan(&c.chunks, ScanFold::Sum, true),
        None => {
            let offsets = super::chunk_offsets(&x.chunks);
            u32_column(offsets[1..].iter().map(|&e| e as u32).collect())
        }
    };
    let [kept_rows, total, chunks] = match shared.then(|| mask.kept_places()).flatten() {
        Some((places, layout)) if layout == x.chunks => places,
        Some(([kept_rows, total, _], _)) => {
            let (_, chunks) = kept_per_chunk(&kept_rows, &ends()?)?;
            [kept_rows, total, chunks]
        }
        None => {
            let mut parts = vec![mask.clone()];
            parts.extend(mask.validity().cloned());
            if let Some(c) = &counted {
                parts.push(live_flags(x, c)?);
            }
            if parts.len() == 1 && mask.meta.constant {
                parts.push(super::flags_like(x, 1)?);
            }
            let kept_rows = compact(&and_flags(&parts)?)?;
            let (total, chunks) = kept_per_chunk(&kept_rows, &ends()?)?;
            let places = [kept_rows, total, chunks];
            if shared {
                mask.share_kept_places(&places, x.chunks.clone());
            }
            places
        }
    };
    let result = gather(&kept_rows, x)?;
    // Row numbers gathered are the compaction itself, which other filters by this mask
    // share: the count goes on a view of it.
    let result = match Rc::ptr_eq(&result, &kept_rows) {
        true => rechunk_rows(&result, result.chunks.clone())?,
        false => result,
    };
    attach(&result, Some(Counted::new(total, chunks)));
    if counted.is_none() {
        let _ = result.filtered.set((x.clone(), mask.clone()));
    }
    Ok(result)
}

/// `(total, per chunk)`: the rows a compaction (`kept_rows`) keeps, and those it keeps of
/// each chunk ending at `ends` (uint32 row offsets): the kept rows before each end, less
/// those before the chunk's start (a row before 0 wraps past the end and reads 0).
fn kept_per_chunk(kept_rows: &NodeRef, ends: &NodeRef) -> Result<(NodeRef, NodeRef)> {
    let kept_before_ends = super::search_sorted(kept_rows, ends, false)?;
    let last = u32_constant(ends.meta.length.wrapping_sub(1))?;
    let total = gather_plain(&last, &kept_before_ends)?;
    let chunk_before = plain_binary(
        BinaryOp::Subtract,
        &row_numbers_of(&kept_before_ends)?,
        &u32_constant(1)?,
    )?;
    let before = gather_plain(&chunk_before, &kept_before_ends)?;
    let chunks = plain_binary(BinaryOp::Subtract, &kept_before_ends, &before)?;
    Ok((total, chunks))
}

/// `Op::Compact` of uint8 `flags` (0 or 1, size 1, a column).
pub(super) fn compact(flags: &NodeRef) -> Result<NodeRef> {
    if flags.meta.dtype != DType::U8 || flags.meta.size != 1 || flags.meta.constant {
        return Err(crate::engine::internal(
            "a compaction reads one uint8 flag per row",
        ));
    }
    let rows = flags.meta.length;
    crate::column::element_count(rows as u64, 1, DType::U32)?;
    let meta = super::Meta {
        dtype: DType::U32,
        size: 1,
        length: rows,
        constant: false,
    };
    let inputs = vec![flags.clone()];
    Ok(super::Node::new(
        Op::Compact,
        inputs,
        meta,
        super::single_chunk(rows),
        None,
    ))
}

/// `Op::Compact` of `flags` composed of other ops, for a device without its own: the kept
/// rows placed by a scan, their numbers scattered there, the rows past the count filled.
pub(super) fn compose_compaction(flags: &NodeRef) -> Result<NodeRef> {
    let keep = cast_plain(flags, DType::U32)?;
    let (scattered, _, total) = place_kept(&keep)?;
    let live = plain_predicate(Predicate::Less, &row_numbers_of(&scattered)?, &total)?;
    plain_select(&live, &scattered, &u32_constant(u32::MAX)?)
}

/// The kept rows of uint32 `keep` flags (0 or 1): `(kept, placed, total)`, each kept row's
/// number packed in order (a scatter to its place, the kept rows up to it less one), the
/// kept rows up to each row (an inclusive scan), and their count (one constant row).
fn place_kept(keep: &NodeRef) -> Result<(NodeRef, NodeRef, NodeRef)> {
    let placed = scan(keep, ScanFold::Sum, true)?;
    let place = plain_binary(BinaryOp::Subtract, &placed, &u32_constant(1)?)?;
    let destinations = plain_select(keep, &place, &u32_constant(u32::MAX)?)?;
    let rows = keep.meta.length;
    let kept = scatter(&destinations, &row_numbers_of(keep)?, rows)?;
    let total = gather_plain(&u32_constant(rows.wrapping_sub(1))?, &placed)?;
    Ok((kept, placed, total))
}

/// The rows whose `flags` (size 1, a column not counted) are nonzero, as `filter` keeps
/// them: `(kept, placed)`: each kept row's number, in order, counted on the device; and per
/// row, the kept rows up to it (uint32).
/// Sparse results are built on it: no count is read until they are evaluated.
pub fn kept_row_numbers(flags: &NodeRef) -> Result<(NodeRef, NodeRef)> {
    flags.check_alive()?;
    if flags.meta.size != 1 || flags.meta.constant || flags.counted().is_some() {
        return Err(crate::engine::internal(
            "kept rows need flags of size 1 in a column not counted",
        ));
    }
    let nonzero = plain_predicate(Predicate::NotEqual, flags, &zero_of(flags.meta.dtype)?)?;
    let (kept, placed, total) = place_kept(&cast_plain(&nonzero, DType::U32)?)?;
    attach(&kept, Some(Counted::whole(total)?));
    Ok((kept, placed))
}

/// A counted uint32 `x` as a column of its capacity (not counted) whose rows past the
/// count hold `fill`.
pub fn padded(x: &NodeRef, fill: u32) -> Result<NodeRef> {
    match x.counted() {
        Some(counted) => plain_select(&live_flags(x, counted)?, x, &u32_constant(fill)?),
        None => Ok(x.clone()),
    }
}

/// `node` counted by `from`'s count: rows computed over `from`'s capacity, one per row of
/// it, whose rows past the count are not rows of the result.
pub fn counted_by(node: NodeRef, from: &NodeRef) -> Result<NodeRef> {
    if node.meta.length != from.meta.length || node.chunks != from.chunks {
        return Err(crate::engine::internal(
            "a node counted by another has its rows and chunks",
        ));
    }
    counted_like(node, from)
}

/// `gather`'s ids for a counted `values`: an id at or past the count reads no row (uint32,
/// `u32::MAX` there), with the ids' nulls and count.
pub(super) fn ids_within(ids: &NodeRef, counted: &Counted) -> Result<NodeRef> {
    let at_least_zero = plain_predicate(Predicate::GreaterEqual, ids, &zero_of(DType::U32)?)?;
    let below = plain_predicate(Predicate::Less, ids, &counted.total)?;
    let inside = plain_binary(BinaryOp::Multiply, &at_least_zero, &below)?;
    let as_rows = cast_plain(ids, DType::U32)?;
    let read = plain_select(&inside, &as_rows, &u32_constant(u32::MAX)?)?;
    let read = with_validity(&read, ids.validity())?;
    attach(&read, ids.counted().cloned());
    Ok(read)
}

/// `searchSorted` in a counted `sorted`: its rows past the count read as the far end of its
/// type (NaN for floats, after every number), and no answer is past the count.
pub(super) fn search_counted(
    sorted: &NodeRef,
    counted: &Counted,
    queries: &NodeRef,
    upper: bool,
) -> Result<NodeRef> {
    let dtype = sorted.meta.dtype;
    let far = match dtype {
        DType::F32 => source(ColumnData::F32(vec![f32::NAN]), 1, true)?,
        _ => {
            let (_, end) = dtype.int_bounds();
            cast_plain(&u32_constant((end - 1.0) as u32)?, dtype)?
        }
    };
    let live = live_flags(sorted, counted)?;
    let filled = elementwise_plain(Op::Select, vec![live, sorted.clone(), far], dtype, 1)?;
    let found = super::search_sorted(&filled, queries, upper)?;
    let within = elementwise_plain(
        Op::Binary(BinaryOp::Minimum),
        vec![found.clone(), counted.total.clone()],
        DType::U32,
        1,
    )?;
    let within = with_validity(&within, found.validity())?;
    counted_like(within, queries)
}

/// `slice(x, start, end)` of api.md: rows of the result, counted on the device where x is
/// (a counted x evaluated already is sliced as the rows it has).
pub fn slice_counted(x: &NodeRef, start: f64, end: f64) -> Result<NodeRef> {
    x.check_alive()?;
    let Some(counted) = x.counted() else {
        if !x.meta.constant && !x.has_output() && super::rows_computed_alone(x, None) {
            // Row-local work not computed yet: only the rows kept are (a view of it would
            // store it whole first, past a budget's reach).
            let (lo, hi) =
                super::clamp_rows(x.meta.length, start, end, ("slice start", "slice end"))?;
            return Ok(super::rows_of_work(std::slice::from_ref(x), lo, hi)?.remove(0));
        }
        return slice_rows(x, start, end);
    };
    if let Some(rows) = x.known_length() {
        let (start, end) = super::clamp_rows(rows, start, end, ("slice start", "slice end"))?;
        return slice_rows(x, start as f64, end as f64);
    }
    let (lo, hi) = super::clamp_rows(x.meta.length, start, end, ("slice start", "slice end"))?;
    let node = slice_rows(x, lo as f64, hi as f64)?;
    // Per chunk of x (rows starts..ends), the rows inside lo..hi.
    let ends = scan(&counted.chunks, ScanFold::Sum, true)?;
    let starts = plain_binary(BinaryOp::Subtract, &ends, &counted.chunks)?;
    let clamp = |v: &NodeRef| -> Result<NodeRef> {
        let above = plain_binary(BinaryOp::Maximum, v, &u32_constant(lo)?)?;
        plain_binary(BinaryOp::Minimum, &above, &u32_constant(hi)?)
    };
    let chunks = plain_binary(BinaryOp::Subtract, &clamp(&ends)?, &clamp(&starts)?)?;
    let total = plain_binary(
        BinaryOp::Subtract,
        &clamp(&counted.total)?,
        &u32_constant(lo)?,
    )?;
    attach(&node, Some(Counted::new(total, chunks)));
    Ok(node)
}

/// `concat(...xs)` of api.md where some input is counted: the rows of each input in order,
/// counted on the device (row j reads the last input starting at or before it).
pub fn concat_counted(inputs: &[NodeRef]) -> Result<NodeRef> {
    inputs.iter().try_for_each(|n| n.check_alive())?;
    if inputs
        .iter()
        .all(|x| x.counted().is_none() || x.known_length().is_some())
    {
        let rows: Vec<NodeRef> = inputs.iter().map(settled_rows).collect::<Result<_>>()?;
        return concat_rows(&rows);
    }
    // Checks the types and sizes, and the capacity.
    let capacity = concat_rows(inputs)?.meta.length;
    let rows = super::u32_rows(capacity)?;
    let mut result: Option<NodeRef> = None;
    let mut offset: NodeRef = u32_constant(0)?;
    let mut sizes = Vec::with_capacity(inputs.len());
    for x in inputs {
        let count = match x.counted() {
            Some(c) => c.total.clone(),
            None => u32_constant(super::stored_rows(x))?,
        };
        sizes.push(match x.counted() {
            Some(c) => c.chunks.clone(),
            None => u32_column(super::chunked::stored_chunks(x).to_vec())?,
        });
        let ids = plain_binary(BinaryOp::Subtract, &rows, &offset)?;
        let read = gather(&ids, x)?;
        result = Some(match result {
            None => read,
            Some(before) => {
                let here = plain_predicate(Predicate::GreaterEqual, &rows, &offset)?;
                super::select(&here, &read, &before)?
            }
        });
        offset = plain_binary(BinaryOp::Add, &offset, &count)?;
    }
    let result = result.ok_or_else(|| GpuTableError::invalid("concat needs at least one input"))?;
    let chunks = concat_rows(&sizes)?;
    attach(&result, Some(Counted::new(offset, chunks)));
    Ok(result)
}

/// A counted node evaluated already as the rows it has (a view); others as they are.
fn settled_rows(x: &NodeRef) -> Result<NodeRef> {
    match (x.counted(), x.settled()) {
        (Some(_), Some(chunks)) => {
            let rows: u32 = chunks.iter().sum();
            rechunk_rows(&slice_rows(x, 0.0, rows as f64)?, chunks)
        }
        _ => Ok(x.clone()),
    }
}

/// `rechunk(x, chunks)` of api.md: a counted x only once evaluated (its length is not known
/// before).
pub fn rechunk_counted(x: &NodeRef, chunks: Chunks) -> Result<NodeRef> {
    x.check_alive()?;
    rechunk_rows(&known_rows(x, "rechunk")?, chunks)
}

/// The error for an op that needs a counted node's length before it is evaluated.
pub fn unknown_length(what: &str) -> GpuTableError {
    GpuTableError::invalid(format!(
        "{what} needs its input's length, which a result whose length depends on the data \
         (filter, unique) has only once evaluated"
    ))
}

/// `x` where an op needs its rows known: as it is, or a counted x evaluated already as the
/// rows it has; a counted x not evaluated is `INVALID_ARGUMENT` naming `what`.
pub fn known_rows(x: &NodeRef, what: &str) -> Result<NodeRef> {
    match (x.counted(), x.settled()) {
        (None, _) => Ok(x.clone()),
        (Some(_), Some(_)) => settled_rows(x),
        (Some(_), None) => Err(unknown_length(what)),
    }
}

/// The roots' counts, which an evaluation computes and reads with them.
pub(super) fn counts_of(roots: &[NodeRef]) -> impl Iterator<Item = NodeRef> + '_ {
    roots
        .iter()
        .filter_map(|r| r.counted())
        .map(|c| c.chunks.clone())
}

/// `roots` with the draw arguments of those counted on the device (each once).
pub fn with_draw_args(roots: &[NodeRef]) -> Result<Vec<NodeRef>> {
    let args = (roots.iter().filter_map(|r| r.counted()))
        .map(Counted::draw_args)
        .collect::<Result<Vec<_>>>()?;
    Ok(super::nulls::with_others(roots, args.into_iter()))
}

/// uint32 `chunks` rows read back, as a node's settled chunks.
pub fn settled_chunks(rows: &ColumnData) -> Chunks {
    (0..rows.len())
        .map(|i| rows.get_f64(i) as u32)
        .collect::<Vec<_>>()
        .into()
}
