//! Segmented sums (`SegmentSum`, `SegmentBlocks`; ir/segment.rs) of stored values or of
//! values computed where read, summed in the parts' order every backend follows.

use std::ops::Range;
use std::rc::Rc;

use super::lane::{same_class, Stored as StoredType};
use super::rows::StoredRows;
use super::where_read::PIECE_ROWS;
use super::{internal, run_blocks, Block, Lane, Sink};
use crate::column::{with_column_data, Column, Elem};
use crate::error::Result;
use crate::ir::{block_is_summed, segment_parts, segment_rows, NodeRef, Op, SEGMENT_BLOCK_ROWS};
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
    segment_sums(
        &mut Stored(values),
        offsets,
        blocks,
        first,
        rows,
        lanes,
        dst,
    )
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
    block_sums(&mut Stored(values), offsets, first, rows, lanes, dst)
}

/// Rows `first..` of a `SegmentSum` or `SegmentBlocks` whose values this block computes
/// where read, a piece of rows at a time (the blocks of long segments skipped).
pub(super) fn where_read<T: Lane>(
    node: &NodeRef,
    b: &mut Block,
    first: usize,
    dst: &mut [T],
) -> Result<()> {
    let (values, lanes) = (&node.inputs[0], node.meta.size as usize);
    let offsets_value = b.leaf(&node.inputs[1])?.clone();
    let offsets = StoredRows::<u32>::new(&offsets_value)?;
    let mut piece = Piece::new(b, values)?;
    let rows = values.meta.length;
    if node.op == Op::SegmentBlocks {
        return block_sums(&mut piece, &offsets, first, rows, lanes, dst);
    }
    let blocks_value = (node.inputs.get(2))
        .map(|blocks| b.leaf(blocks).cloned())
        .transpose()?;
    let blocks = (blocks_value.as_deref())
        .map(StoredRows::<T>::new)
        .transpose()?;
    segment_sums(
        &mut piece,
        &offsets,
        blocks.as_ref(),
        first,
        rows,
        lanes,
        dst,
    )
}

/// Where a segmented sum's values come from: stored, or computed where read.
trait SegmentValues {
    /// Adds rows `rows` to `out`, lane by lane, in row order.
    fn add<T: Lane>(&mut self, rows: Range<u32>, lanes: usize, out: &mut [T]) -> Result<()>;
    /// Adds to `dst` (segments `first..` of `offsets`, none long) each segment's rows.
    fn add_short<T: Lane>(
        &mut self,
        offsets: &StoredRows<u32>,
        first: usize,
        rows: u32,
        lanes: usize,
        dst: &mut [T],
    ) -> Result<()>;
}

/// Rows `first..` of `SegmentSum` of `rows` values: runs of short segments as one sweep,
/// each long one as its head, its blocks (`blocks`) and its tail.
fn segment_sums<T: Lane>(
    values: &mut impl SegmentValues,
    offsets: &StoredRows<u32>,
    blocks: Option<&StoredRows<T>>,
    first: usize,
    rows: u32,
    lanes: usize,
    dst: &mut [T],
) -> Result<()> {
    let segments = dst.len() / lanes;
    check_offsets(offsets, first, segments)?;
    dst.fill(T::default());
    let long = long_segments(offsets, first, segments, rows);
    for run in short_runs(&long, segments) {
        let dst = &mut dst[run.start * lanes..run.end * lanes];
        values.add_short(offsets, first + run.start, rows, lanes, dst)?;
    }
    for &(s, lo, hi) in &long {
        let out = &mut dst[s * lanes..(s + 1) * lanes];
        let parts = segment_parts(lo, hi);
        values.add(parts.head, lanes, out)?;
        add_blocks(blocks, parts.blocks, out)?;
        values.add(parts.tail, lanes, out)?;
    }
    Ok(())
}

/// Rows `first..` of `SegmentBlocks` of `rows` values.
fn block_sums<T: Lane>(
    values: &mut impl SegmentValues,
    offsets: &StoredRows<u32>,
    first: usize,
    rows: u32,
    lanes: usize,
    dst: &mut [T],
) -> Result<()> {
    let segments = offsets.rows().saturating_sub(1) as u32;
    for (k, out) in (first as u32..).zip(dst.chunks_exact_mut(lanes)) {
        out.fill(T::default());
        if block_is_summed(k, rows, segments, |s| offsets.row(s as usize)[0]) {
            values.add(block_rows(k), lanes, out)?;
        }
    }
    Ok(())
}

struct Stored<'a, 'b, S>(&'a StoredRows<'b, S>);

impl<S: Elem> SegmentValues for Stored<'_, '_, S> {
    fn add<T: Lane>(&mut self, rows: Range<u32>, lanes: usize, out: &mut [T]) -> Result<()> {
        match self.0.contiguous() {
            Some(slice) => add_slice(slice, 0, rows, lanes, out),
            None => {
                for r in rows {
                    add_rows(self.0.row(r as usize), lanes, out);
                }
            }
        }
        Ok(())
    }

    fn add_short<T: Lane>(
        &mut self,
        offsets: &StoredRows<u32>,
        first: usize,
        rows: u32,
        lanes: usize,
        dst: &mut [T],
    ) -> Result<()> {
        if let Some(slice) = self.0.contiguous() {
            sums_from(slice, 0, offsets, first, lanes, dst);
            return Ok(());
        }
        for (out, (lo, hi)) in dst
            .chunks_exact_mut(lanes)
            .zip(bounds(offsets, first, rows))
        {
            self.add(lo..hi, lanes, out)?;
        }
        Ok(())
    }
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
        add_rows(
            values.get(lo * lanes..hi * lanes).unwrap_or_default(),
            lanes,
            out,
        );
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

/// Adds rows `range` of `values` (a slice holding rows `base..`) to `out`.
#[inline]
fn add_slice<S: Elem, T: Lane>(
    values: &[S],
    base: u32,
    range: Range<u32>,
    lanes: usize,
    out: &mut [T],
) {
    let at = |r: u32| (r - base) as usize * lanes;
    add_rows(
        values
            .get(at(range.start)..at(range.end))
            .unwrap_or_default(),
        lanes,
        out,
    );
}

/// Adds rows of `lanes` values (`rows`, one after another) to `out`, lane by lane, in row
/// order.
#[inline]
fn add_rows<S: Elem, T: Lane>(rows: &[S], lanes: usize, out: &mut [T]) {
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

/// `out` as lanes of `values`' own class (the only class they are summed into): each sum of
/// a stored type is then one instance, not one per output class.
fn own_lanes<'a, S: StoredType, T: Lane>(
    _values: &[S],
    out: &'a mut [T],
) -> Result<&'a mut [S::Lane]> {
    same_class::<S::Lane, T>(out)
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

    fn compute(&mut self, rows: Range<u32>) -> Result<()> {
        with_column_data!(&mut self.rows.data, v => v.clear());
        self.rows.reserve_rows(rows.len() as u32)?;
        let sink = Sink::Output(&mut self.rows.data);
        run_blocks(&self.producer, &self.leaves, rows.clone(), sink)?;
        (self.start, self.end) = (rows.start, rows.end);
        Ok(())
    }
}

impl SegmentValues for Piece {
    /// Computes from a row not computed yet up to `PIECE_ROWS` rows of `rows`.
    fn add<T: Lane>(&mut self, rows: Range<u32>, lanes: usize, out: &mut [T]) -> Result<()> {
        let mut r = rows.start;
        while r < rows.end {
            if !(self.start..self.end).contains(&r) {
                self.compute(r..rows.end.min(r.saturating_add(PIECE_ROWS)))?;
            }
            let stop = rows.end.min(self.end);
            with_column_data!(&self.rows.data, v => add_slice(v, self.start, r..stop, lanes, own_lanes(v, out)?));
            r = stop;
        }
        Ok(())
    }

    /// Every row the segments read (offsets that go down, outside the contract, still sum
    /// what the stored path would), a piece at a time.
    fn add_short<T: Lane>(
        &mut self,
        offsets: &StoredRows<u32>,
        first: usize,
        rows: u32,
        lanes: usize,
        dst: &mut [T],
    ) -> Result<()> {
        let spans = bounds(offsets, first, rows).take(dst.len() / lanes);
        let (lo, hi) = spans.fold((rows, 0), |(lo, hi), (l, h)| (lo.min(l), hi.max(h)));
        for start in (lo..hi).step_by(PIECE_ROWS as usize) {
            self.compute(start..hi.min(start.saturating_add(PIECE_ROWS)))?;
            let base = self.start as usize;
            with_column_data!(&self.rows.data, v => sums_from(v, base, offsets, first, lanes, own_lanes(v, dst)?));
        }
        Ok(())
    }
}
