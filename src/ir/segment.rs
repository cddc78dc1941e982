//! Segmented sums. A short segment is summed by one loop over its rows; a long one (at
//! least `LONG_SEGMENT_ROWS`) as its head rows, then the sums of the whole
//! `SEGMENT_BLOCK_ROWS`-row blocks it covers (`SegmentBlocks`, a pass of its own, one block
//! per row), then its tail rows. An invocation then loops at most 8,191 times over rows and
//! `rows / SEGMENT_BLOCK_ROWS` over blocks: one long segment does not keep one GPU
//! invocation busy alone, and drivers that end an invocation's loops after 65,535
//! iterations (llvmpipe, lavapipe) sum every segment whole up to about 235 million values.
//! Every backend sums in this order, so float sums agree.

use std::ops::Range;

use super::{single_chunk, Meta, Node, NodeRef, Op, ReduceKind};
use crate::column::element_count;
use crate::error::{GpuTableError, Result};

/// Rows of one block of a long segment, summed by one row of `SegmentBlocks`.
pub const SEGMENT_BLOCK_ROWS: u32 = 4096;

/// Rows from which a segment is summed in blocks (it then covers at least one whole block).
pub const LONG_SEGMENT_ROWS: u32 = 2 * SEGMENT_BLOCK_ROWS;

/// Row `s` is the sum of rows `offsets[s]..offsets[s + 1]` of `values`, lane by lane, in
/// `sum`'s type: a segmented reduction (`offsets`: uint32, non-decreasing, `segments + 1`
/// rows, the last at most `values`' rows; rows out of range are skipped; decreasing offsets
/// sum no rows of theirs and may miss a long segment's blocks). Both read whole.
/// Where `values` has rows enough for a long segment, the sums of long segments' blocks are
/// a third input (`segment_blocks`), read whole.
pub fn segment_sum(values: &NodeRef, offsets: &NodeRef) -> Result<NodeRef> {
    values.check_alive()?;
    offsets.check_alive()?;
    if offsets.meta.size != 1 || offsets.meta.dtype != crate::dtype::DType::U32 {
        return Err(GpuTableError::invalid(format!(
            "segment offsets must be uint32 of size 1, got {} x{}",
            offsets.meta.dtype.name(),
            offsets.meta.size
        )));
    }
    if values.meta.constant || offsets.meta.constant {
        return Err(GpuTableError::invalid(
            "segmented sums read columns of rows, not constants",
        ));
    }
    let segments = offsets.meta.length.saturating_sub(1);
    let meta = Meta {
        dtype: ReduceKind::Sum.output_type(values.meta.dtype),
        size: values.meta.size,
        length: segments,
        constant: false,
    };
    element_count(segments as u64, meta.size, meta.dtype)?;
    let mut inputs = vec![values.clone(), offsets.clone()];
    if segments > 0 && values.meta.length >= LONG_SEGMENT_ROWS {
        inputs.push(segment_blocks(values, offsets, meta)?);
    }
    Ok(Node::new(
        Op::SegmentSum,
        inputs,
        meta,
        single_chunk(segments),
        None,
    ))
}

/// Row `k` is the sum of `values`' rows `k * SEGMENT_BLOCK_ROWS..` (one block) where the
/// block lies inside one segment of at least `LONG_SEGMENT_ROWS` rows, else zero. `sum`:
/// the segmented sum's meta.
fn segment_blocks(values: &NodeRef, offsets: &NodeRef, sum: Meta) -> Result<NodeRef> {
    let meta = Meta {
        length: values.meta.length / SEGMENT_BLOCK_ROWS,
        ..sum
    };
    element_count(meta.length as u64, meta.size, meta.dtype)?;
    Ok(Node::new(
        Op::SegmentBlocks,
        vec![values.clone(), offsets.clone()],
        meta,
        single_chunk(meta.length),
        None,
    ))
}

/// How a segment of rows `lo..hi` (`lo <= hi`) is summed, in this order: rows `head`, the
/// blocks `blocks` (rows of `SegmentBlocks`), rows `tail`. A short segment is all head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentParts {
    pub head: Range<u32>,
    pub blocks: Range<u32>,
    pub tail: Range<u32>,
}

/// The parts of the segment of rows `lo..hi` (a `lo` past `hi` is an empty segment).
pub fn segment_parts(lo: u32, hi: u32) -> SegmentParts {
    let lo = lo.min(hi);
    if hi - lo < LONG_SEGMENT_ROWS {
        return SegmentParts {
            head: lo..hi,
            blocks: 0..0,
            tail: hi..hi,
        };
    }
    let (first, end) = (lo.div_ceil(SEGMENT_BLOCK_ROWS), hi / SEGMENT_BLOCK_ROWS);
    SegmentParts {
        head: lo..first * SEGMENT_BLOCK_ROWS,
        blocks: first..end,
        tail: end * SEGMENT_BLOCK_ROWS..hi,
    }
}

/// The rows from offset `start` to offset `end` that a segment sums, clamped to `rows`
/// values as the kernels clamp them: an end past the values stops at them, and a start past
/// the end is empty.
pub fn segment_rows(start: u32, end: u32, rows: u32) -> (u32, u32) {
    let hi = end.min(rows);
    (start.min(hi), hi)
}

/// Whether `SegmentBlocks` sums block `block` of `rows` values: the segment holding the
/// block's first row (the last whose offset is at most that row; `offsets` has
/// `segments + 1` rows, read through `offset`) is long and holds the whole block.
pub fn block_is_summed(block: u32, rows: u32, segments: u32, offset: impl Fn(u32) -> u32) -> bool {
    let (Some(start), Some(offset_rows)) = (
        block.checked_mul(SEGMENT_BLOCK_ROWS),
        segments.checked_add(1),
    ) else {
        return false;
    };
    // The first offset past `start`, over offsets `0..=segments`.
    let (mut lo, mut hi) = (0, offset_rows);
    while lo < hi && segments > 0 {
        let mid = lo + (hi - lo) / 2;
        match offset(mid) <= start {
            true => lo = mid + 1,
            false => hi = mid,
        }
    }
    if lo == 0 || lo > segments {
        return false;
    }
    let (first, end) = segment_rows(offset(lo - 1), offset(lo), rows);
    end - first >= LONG_SEGMENT_ROWS && start.saturating_add(SEGMENT_BLOCK_ROWS) <= end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_segments_are_a_head_whole_blocks_and_a_tail() {
        let b = SEGMENT_BLOCK_ROWS;
        assert_eq!(segment_parts(5, 5 + LONG_SEGMENT_ROWS - 1).blocks, 0..0);
        let parts = segment_parts(5, 5 + LONG_SEGMENT_ROWS);
        assert_eq!(parts.head, 5..b);
        assert_eq!(parts.blocks, 1..2);
        assert_eq!(parts.tail, 2 * b..5 + 2 * b);
        let aligned = segment_parts(b, 4 * b);
        assert_eq!(
            (aligned.head, aligned.blocks, aligned.tail),
            (b..b, 1..4, 4 * b..4 * b)
        );
    }

    #[test]
    fn a_block_is_summed_only_inside_a_long_segment() {
        let b = SEGMENT_BLOCK_ROWS;
        // Segments: 0..10, 10..10 (empty), 10..10 + 3b, then 10 + 3b..rows (short).
        let offsets = [0, 10, 10, 10 + 3 * b, 10 + 3 * b + 100];
        let rows = 10 + 3 * b + 100;
        let at = |i: u32| offsets[i as usize];
        let summed = |rows: u32| -> Vec<bool> {
            (0..rows / b)
                .map(|k| block_is_summed(k, rows, 4, at))
                .collect()
        };
        // Block 0 starts in the first segment; blocks 1 and 2 lie in the long one.
        assert_eq!(summed(rows), vec![false, true, true]);
        // The long segment cut short by the values' end covers one block less.
        let cut = 10 + 2 * b + 50;
        assert_eq!(summed(cut), vec![false, true]);
        assert!(!block_is_summed(0, rows, 0, at));
    }
}
