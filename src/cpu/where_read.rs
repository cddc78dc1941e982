//! Nodes a consumer computes at the rows it reads (a segmented sum's values, see
//! `Op::computes_input_where_read`): each runs as a region of its own over just the rows one
//! block of the consumer reads, into a buffer the consumer then reads.

use std::rc::Rc;

use super::Block;
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

/// Rows of a segmented sum's values computed at once where read.
pub(super) const PIECE_ROWS: u32 = 1 << 16;

/// Bytes the buffers of `region`'s nodes computed where read take at most.
pub(super) fn scratch_bytes(region: &Region) -> u64 {
    (region.where_read.iter())
        .map(|w| {
            // A piece is no longer than the node.
            let meta = &w.producer.meta;
            let rows = PIECE_ROWS.min(meta.length) as u64;
            rows * meta.size as u64 * meta.dtype.byte_width() as u64
        })
        .sum()
}
