//! A stable sort by integer keys, as merge passes made of gathers: pass `w` merges runs of
//! `w` rows pairwise, each output row finding its source by a binary search along the merge
//! path of its pair (`MergeSource`), so every backend runs it as ordinary per-row kernels
//! (no scatter; O(n log² n) work in log2(n) passes).

use super::{gather, single_chunk, u32_rows, Meta, Node, NodeRef, Op};
use crate::dtype::{Class, DType};
use crate::error::{GpuTableError, Result};

/// Row `k`: the row of `keys` (sorted in runs of `width` rows) that row `k` of the merge of
/// each pair of runs takes, equal keys from the first run first.
fn merge_source(keys: &NodeRef, width: u32) -> NodeRef {
    let meta = Meta {
        dtype: DType::U32,
        size: 1,
        length: keys.meta.length,
        constant: false,
    };
    Node::new(
        Op::MergeSource { width },
        vec![keys.clone()],
        meta,
        single_chunk(meta.length),
        None,
    )
}

/// The permutation that sorts `keys` (integers, size 1) ascending, stably, and the keys in
/// that order: `(perm, sorted)` with `sorted[k] = keys[perm[k]]`.
pub fn sort_permutation(keys: &NodeRef) -> Result<(NodeRef, NodeRef)> {
    keys.check_alive()?;
    if keys.meta.size != 1 || keys.meta.constant {
        return Err(GpuTableError::invalid(format!(
            "sort keys must be a column of size 1, got size {}",
            keys.meta.size
        )));
    }
    if keys.meta.dtype.class() == Class::F {
        return Err(GpuTableError::type_mismatch(
            "sort keys must be integers (float keys have no total order with NaN)",
        ));
    }
    let rows = keys.meta.length;
    if rows > 1 << 31 {
        // Merge passes pair runs of up to 2^31 rows; their arithmetic is 32-bit.
        return Err(GpuTableError::new(
            crate::ErrorCode::LimitExceeded,
            format!("a sort of {rows} rows: at most 2^31"),
        ));
    }
    let mut perm = u32_rows(rows)?;
    let mut sorted = keys.clone();
    let mut width = 1u32;
    while width < rows {
        let source = merge_source(&sorted, width);
        perm = gather(&source, &perm)?;
        sorted = gather(&source, &sorted)?;
        width = width.saturating_mul(2);
    }
    Ok((perm, sorted))
}

/// `MergeSource` of row `k` over `rows` keys read by `key(i)`: the merge-path search.
pub(crate) fn merge_source_row(k: u64, rows: u64, width: u64, key: impl Fn(u64) -> f64) -> u64 {
    let first = k / (2 * width) * (2 * width);
    let len_a = width.min(rows - first);
    let b = first + len_a;
    let len_b = width.min(rows.saturating_sub(b));
    let d = k - first;
    let (mut lo, mut hi) = (d.saturating_sub(len_b), d.min(len_a));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match key(first + mid) <= key(b + d - mid - 1) {
            true => lo = mid + 1,
            false => hi = mid,
        }
    }
    let (i, j) = (lo, d - lo);
    match i < len_a && (j >= len_b || key(first + i) <= key(b + j)) {
        true => first + i,
        false => b + j,
    }
}
