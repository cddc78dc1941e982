//! Nodes a consumer computes at the rows it reads (a segmented sum's values, see
//! `Op::computes_input_where_read`): each runs as a region of its own over just the rows one
//! block of the consumer reads, into a buffer the consumer then reads.

use std::rc::Rc;

use super::rows::{segment_sums_from, StoredRows};
use super::{internal, run_blocks, Block, Lane, Sink};
use crate::column::Column;
use crate::error::Result;
use crate::ir::NodeRef;
use crate::plan::Region;

/// A region for each node `region` computes where read, over the region's leaves.
pub(super) fn producers(region: &Region) -> Vec<Rc<Region>> {
    (region.where_read.iter())
        .map(|w| {
            let (producer, nodes) = (w.producer.clone(), w.nodes.clone());
            Rc::new(Region::new(producer, nodes, region.leaves.clone()))
        })
        .collect()
}

impl Block {
    /// Whether `node` is computed where this block's consumer reads it.
    pub(super) fn computes_where_read(&self, node: &NodeRef) -> bool {
        self.where_read.iter().any(|r| r.root.id == node.id)
    }
}

/// Rows `first..` of a `SegmentSum` whose values are computed here: the rows this block's
/// segments span, then each segment's sum.
pub(super) fn segment_sums<T: Lane>(
    node: &NodeRef,
    b: &mut Block,
    first: usize,
    dst: &mut [T],
) -> Result<()> {
    let (values, offsets) = (&node.inputs[0], &node.inputs[1]);
    let producer = (b.where_read.iter())
        .find(|r| r.root.id == values.id)
        .cloned()
        .ok_or_else(|| internal("a segmented sum's values are computed nowhere"))?;
    let lanes = node.meta.size as usize;
    let segments = dst.len() / lanes;
    let offsets_value = b.leaf(offsets)?.clone();
    let offsets = StoredRows::<u32>::new(&offsets_value)?;
    if segments == 0 {
        return Ok(());
    }
    if offsets.rows() <= first + segments {
        return Err(internal("a segmented sum has fewer offsets than segments"));
    }
    // Every row a segment of the block may read, as the GPU loop reads them (offsets that go
    // down, outside the contract, still sum what the stored path would).
    let length = values.meta.length;
    let bounds = (first..=first + segments).map(|s| offsets.row(s)[0].min(length));
    let (lo, hi) = bounds.fold((length, 0), |(lo, hi), b| (lo.min(b), hi.max(b)));
    // A piece of those rows at a time (one long segment included): the buffer stays small.
    let mut rows = Column::empty(values.meta.dtype, values.meta.size)?;
    rows.reserve_rows((hi - lo).min(PIECE_ROWS))?;
    dst.fill(T::default());
    for start in (lo..hi).step_by(PIECE_ROWS as usize) {
        let end = hi.min(start.saturating_add(PIECE_ROWS));
        crate::column::with_column_data!(&mut rows.data, v => v.clear());
        run_blocks(
            &producer,
            &b.leaves,
            start..end,
            Sink::Output(&mut rows.data),
        )?;
        crate::column::with_column_data!(&rows.data, v => {
            segment_sums_from(v, start as usize, &offsets, first, lanes, dst)
        });
    }
    Ok(())
}

/// Rows of a segmented sum's values computed at once where read.
pub(super) const PIECE_ROWS: u32 = 1 << 16;

/// Bytes the buffers of `region`'s nodes computed where read take at most.
pub(super) fn scratch_bytes(region: &Region) -> u64 {
    (region.where_read.iter())
        .map(|w| {
            let meta = &w.producer.meta;
            PIECE_ROWS as u64 * meta.size as u64 * meta.dtype.byte_width() as u64
        })
        .sum()
}
