//! Segmented sums (`SegmentSum`, `SegmentBlocks`; ir/segment.rs) of stored values or of
//! values computed where read, summed in the parts' order every backend follows.

use std::ops::Range;
use std::rc::Rc;

use super::rows::StoredRows;
use super::where_read::PIECE_ROWS;
use super::{internal, run_blocks, Block, Lane, Sink};
use crate::column::{with_column_data, Column, Elem};
use crate::error::Result;
use crate::ir::{block_is_summed, segment_parts, segment_rows, NodeRef, SEGMENT_BLOCK_ROWS};
use crate::plan::Region;
use crate::value::Value;

/// Rows `first..` of `SegmentSum` of stored values (`blocks`: its third input, if any).
pub(super) fn sums<S: Elem, T: Lane>(
    values: &StoredRows<S>,
    offsets: &StoredRows<u32>,
    blocks: Option<&StoredRows<T>>,
    first: usize,
    lanes: usize,
    dst: &mut [T],
) -> Result<()> {
    let rows = stored_rows(values)?;
    let segments = dst.len() / lanes;
    check_offsets(offsets, first, segments)?;
    dst.fill(T::default());
    let long = long_segments(offsets, first, segments, rows);
    for run in short_runs(&long, segments) {
        let dst = &mut dst[run.start * lanes..run.end * lanes];
        match values.contiguous() {
            Some(slice) => sums_from(slice, 0, offsets, first + run.start, lanes, dst),
            None => {
                for (out, (lo, hi)) in
                    dst.chunks_exact_mut(lanes)
                        .zip(bounds(offsets, first + run.start, rows))
                {
                    add_stored(values, lo..hi, lanes, out);
                }
            }
        }
    }
    for &(s, lo, hi) in &long {
        let out = &mut dst[s * lanes..(s + 1) * lanes];
        let parts = segment_parts(lo, hi);
        add_stored(values, parts.head, lanes, out);
        add_blocks(blocks, parts.blocks, out)?;
        add_stored(values, parts.tail, lanes, out);
    }
    Ok(())
}

/// Rows `first..` of `SegmentBlocks` of stored values.
pub(super) fn blocks<S: Elem, T: Lane>(
    values: &StoredRows<S>,
    offsets: &StoredRows<u32>,
    first: usize,
    lanes: usize,
    dst: &mut [T],
) -> Result<()> {
    let rows = stored_rows(values)?;
    let segments = offsets.rows().saturating_sub(1) as u32;
    for (k, out) in (first as u32..).zip(dst.chunks_exact_mut(lanes)) {
        out.fill(T::default());
        if block_is_summed(k, rows, segments, |s| offsets.row(s as usize)[0]) {
            add_stored(values, block_rows(k), lanes, out);
        }
    }
    Ok(())
}

/// Rows `first..` of a `SegmentSum` whose values this block computes where read: a piece
/// of the rows its segments read at a time, skipping the blocks of long segments.
pub(super) fn sums_where_read<T: Lane>(
    node: &NodeRef,
    b: &mut Block,
    first: usize,
    dst: &mut [T],
) -> Result<()> {
    let (values, lanes) = (&node.inputs[0], node.meta.size as usize);
    let offsets_value = b.leaf(&node.inputs[1])?.clone();
    let offsets = StoredRows::<u32>::new(&offsets_value)?;
    let blocks_value = (node.inputs.get(2))
        .map(|blocks| b.leaf(blocks).cloned())
        .transpose()?;
    let blocks = (blocks_value.as_deref())
        .map(StoredRows::<T>::new)
        .transpose()?;
    let segments = dst.len() / lanes;
    check_offsets(&offsets, first, segments)?;
    dst.fill(T::default());
    let rows = values.meta.length;
    let long = long_segments(&offsets, first, segments, rows);
    let mut piece = Piece::new(b, values)?;
    for run in short_runs(&long, segments) {
        // Every row the run's segments read (offsets that go down, outside the contract,
        // still sum what the stored path would), a piece at a time.
        let spans = bounds(&offsets, first + run.start, rows).take(run.len());
        let (lo, hi) = spans.fold((rows, 0), |(lo, hi), (l, h)| (lo.min(l), hi.max(h)));
        let dst = &mut dst[run.start * lanes..run.end * lanes];
        for start in (lo..hi).step_by(PIECE_ROWS as usize) {
            piece.compute(start..hi.min(start.saturating_add(PIECE_ROWS)))?;
            let start = piece.start as usize;
            with_column_data!(&piece.rows.data, v => {
                sums_from(v, start, &offsets, first + run.start, lanes, dst)
            });
        }
    }
    for &(s, lo, hi) in &long {
        let out = &mut dst[s * lanes..(s + 1) * lanes];
        let parts = segment_parts(lo, hi);
        piece.add(parts.head, lanes, out)?;
        add_blocks(blocks.as_ref(), parts.blocks, out)?;
        piece.add(parts.tail, lanes, out)?;
    }
    Ok(())
}

/// Rows `first..` of a `SegmentBlocks` whose values this block computes where read.
pub(super) fn blocks_where_read<T: Lane>(
    node: &NodeRef,
    b: &mut Block,
    first: usize,
    dst: &mut [T],
) -> Result<()> {
    let (values, lanes) = (&node.inputs[0], node.meta.size as usize);
    let offsets_value = b.leaf(&node.inputs[1])?.clone();
    let offsets = StoredRows::<u32>::new(&offsets_value)?;
    let segments = offsets.rows().saturating_sub(1) as u32;
    let rows = values.meta.length;
    let mut piece = Piece::new(b, values)?;
    for (k, out) in (first as u32..).zip(dst.chunks_exact_mut(lanes)) {
        out.fill(T::default());
        let offset = |s: u32| offsets.row(s as usize)[0];
        if block_is_summed(k, rows, segments, offset) {
            piece.add(block_rows(k), lanes, out)?;
        }
    }
    Ok(())
}

/// The segments (index from `first`, rows) of the `segments` from `first` on that are long.
fn long_segments(
    offsets: &StoredRows<u32>,
    first: usize,
    segments: usize,
    rows: u32,
) -> Vec<(usize, u32, u32)> {
    (bounds(offsets, first, rows).take(segments).enumerate())
        .filter(|&(_, (lo, hi))| !segment_parts(lo, hi).blocks.is_empty())
        .map(|(s, (lo, hi))| (s, lo, hi))
        .collect()
}

/// The runs of segments between the long ones, in order.
fn short_runs(
    long: &[(usize, u32, u32)],
    segments: usize,
) -> impl Iterator<Item = Range<usize>> + '_ {
    let starts = std::iter::once(0).chain(long.iter().map(|&(s, _, _)| s + 1));
    let ends = long
        .iter()
        .map(|&(s, _, _)| s)
        .chain(std::iter::once(segments));
    starts
        .zip(ends)
        .map(|(start, end)| start..end)
        .filter(|run| !run.is_empty())
}

/// Adds to rows `first..` of `SegmentSum` (in `dst`, each segment's sum so far) the values
/// in one slice holding rows `base..` (rows outside it are skipped), in row order.
fn sums_from<S: Elem, T: Lane>(
    values: &[S],
    base: usize,
    offsets: &StoredRows<u32>,
    first: usize,
    lanes: usize,
    dst: &mut [T],
) {
    let end = base + values.len() / lanes;
    // Offsets in order, wherever they are stored (a concat's parts, say).
    let mut bounds = (offsets.values_from(first)).map(|&o| (o as usize).clamp(base, end) - base);
    let mut lo = bounds.next().unwrap_or(0);
    for (out, hi) in dst.chunks_exact_mut(lanes).zip(bounds) {
        let rows = values.get(lo * lanes..hi * lanes).unwrap_or_default();
        match lanes {
            1 => out[0] = (rows.iter()).fold(out[0], |total, &v| total.add(T::from_elem(v))),
            _ => {
                for row in rows.chunks_exact(lanes) {
                    for (o, v) in out.iter_mut().zip(row) {
                        *o = o.add(T::from_elem(*v));
                    }
                }
            }
        }
        lo = hi;
    }
}

fn block_rows(block: u32) -> Range<u32> {
    block * SEGMENT_BLOCK_ROWS..(block + 1) * SEGMENT_BLOCK_ROWS
}

fn stored_rows<S: Elem>(values: &StoredRows<S>) -> Result<u32> {
    u32::try_from(values.rows()).map_err(|_| internal("segmented values past 2^32 rows"))
}

fn check_offsets(offsets: &StoredRows<u32>, first: usize, segments: usize) -> Result<()> {
    match segments == 0 || offsets.rows() > first + segments {
        true => Ok(()),
        false => Err(internal("a segmented sum has fewer offsets than segments")),
    }
}

/// The rows of each segment from segment `first` on, clamped to `rows` values.
fn bounds<'a>(
    offsets: &'a StoredRows<u32>,
    first: usize,
    rows: u32,
) -> impl Iterator<Item = (u32, u32)> + 'a {
    let mut offsets = offsets.values_from(first).copied();
    let mut start = offsets.next().unwrap_or(0);
    offsets.map(move |end| {
        let segment = segment_rows(start, end, rows);
        start = end;
        segment
    })
}

/// Adds rows `range` of `values` (a slice holding rows `base..`) to `out`, lane by lane, in
/// row order.
#[inline]
fn add_slice<S: Elem, T: Lane>(
    values: &[S],
    base: u32,
    range: Range<u32>,
    lanes: usize,
    out: &mut [T],
) {
    let at = |r: u32| (r - base) as usize * lanes;
    let rows = values
        .get(at(range.start)..at(range.end))
        .unwrap_or_default();
    match lanes {
        1 => out[0] = (rows.iter()).fold(out[0], |total, &v| total.add(T::from_elem(v))),
        _ => {
            for row in rows.chunks_exact(lanes) {
                for (o, v) in out.iter_mut().zip(row) {
                    *o = o.add(T::from_elem(*v));
                }
            }
        }
    }
}

#[inline]
fn add_stored<S: Elem, T: Lane>(
    values: &StoredRows<S>,
    range: Range<u32>,
    lanes: usize,
    out: &mut [T],
) {
    match values.contiguous() {
        Some(slice) => add_slice(slice, 0, range, lanes, out),
        None => {
            for r in range {
                for (o, v) in out.iter_mut().zip(values.row(r as usize)) {
                    *o = o.add(T::from_elem(*v));
                }
            }
        }
    }
}

fn add_blocks<T: Lane>(
    blocks: Option<&StoredRows<T>>,
    range: Range<u32>,
    out: &mut [T],
) -> Result<()> {
    if range.is_empty() {
        return Ok(());
    }
    let blocks = blocks.ok_or_else(|| internal("a long segment's blocks are not summed"))?;
    if range.end as usize > blocks.rows() {
        return Err(internal("a long segment's blocks past their sums"));
    }
    for k in range {
        for (o, v) in out.iter_mut().zip(blocks.row(k as usize)) {
            *o = o.add(*v);
        }
    }
    Ok(())
}

/// Values computed where read: rows `start..end`, computed a piece at a time as the sums
/// read them (one long segment's rows never at once).
struct Piece {
    producer: Rc<Region>,
    leaves: Vec<Rc<Value>>,
    rows: Column,
    start: u32,
    end: u32,
}

impl Piece {
    fn new(b: &Block, values: &NodeRef) -> Result<Piece> {
        let producer = (b.where_read.iter())
            .find(|r| r.root.id == values.id)
            .cloned()
            .ok_or_else(|| internal("segmented values are computed nowhere"))?;
        Ok(Piece {
            producer,
            leaves: b.leaves.clone(),
            rows: Column::empty(values.meta.dtype, values.meta.size)?,
            start: 0,
            end: 0,
        })
    }

    /// Adds rows `range` to `out` in order, computing from a row not computed yet up to
    /// `PIECE_ROWS` rows of the range.
    fn add<T: Lane>(&mut self, range: Range<u32>, lanes: usize, out: &mut [T]) -> Result<()> {
        let mut r = range.start;
        while r < range.end {
            if !(self.start..self.end).contains(&r) {
                self.compute(r..range.end.min(r.saturating_add(PIECE_ROWS)))?;
            }
            let stop = range.end.min(self.end);
            with_column_data!(&self.rows.data, v => add_slice(v, self.start, r..stop, lanes, out));
            r = stop;
        }
        Ok(())
    }

    fn compute(&mut self, rows: Range<u32>) -> Result<()> {
        with_column_data!(&mut self.rows.data, v => v.clear());
        self.rows.reserve_rows(rows.len() as u32)?;
        let sink = Sink::Output(&mut self.rows.data);
        run_blocks(&self.producer, &self.leaves, rows.clone(), sink)?;
        (self.start, self.end) = (rows.start, rows.end);
        Ok(())
    }
}
