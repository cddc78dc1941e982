//! A stable sort by integer keys: one `sort` node, the permutation that orders rows by one
//! or more uint32 keys (a lexicographic sort, numpy's `lexsort`), each by its low bits. A
//! backend that sorts natively runs it as one pass (the CPU: radix and counting sorts); on
//! the others the executor runs `split_permutation`, the sort composed of the IR's scan,
//! gather and scatter.

use super::{
    binary, cast, exclusive_scan, gather, scatter, select, single_chunk, u32_constant, u32_rows,
    BinaryOp, Meta, Node, NodeRef, Op,
};
use crate::dtype::{Class, DType};
use crate::error::{GpuTableError, Result};

/// The permutation that sorts `keys` (integers, size 1) ascending, stably, and the keys in
/// that order: `(perm, sorted)` with `sorted[k] = keys[perm[k]]`.
pub fn sort_permutation(keys: &NodeRef) -> Result<(NodeRef, NodeRef)> {
    check_keys(keys)?;
    let bits = keys.meta.dtype.byte_width() as u32 * 8;
    let as_u32 = cast(keys, DType::U32)?;
    // Signed keys in order as unsigned ones: the sign bit flipped (a wrapping add of
    // 2^(bits-1) to the two's complement word, which leaves the bits above `bits` zero).
    let ordered = match keys.meta.dtype.class() {
        Class::I => binary(BinaryOp::Add, &as_u32, &u32_constant(1 << (bits - 1))?)?,
        _ => as_u32,
    };
    let perm = sort_node(&[ordered], vec![bits])?;
    Ok((perm.clone(), gather(&perm, keys)?))
}

/// `sort_permutation` of uint32 keys known to be below `bound`: only the bits below it are
/// sorted on (a sparse matrix's row numbers take log2(rows) passes, not 32). Keys at or
/// past the bound are ordered by those bits alone: callers pass validated indices.
pub fn sort_permutation_below(keys: &NodeRef, bound: u64) -> Result<(NodeRef, NodeRef)> {
    let perm = lexsort_permutation(&[(keys, bound)])?;
    Ok((perm.clone(), gather(&perm, keys)?))
}

/// The stable permutation ordering rows by the first key, then by the second among equal
/// first keys, and so on: uint32 keys of one length, each known to be below its bound (as
/// in `sort_permutation_below`).
pub fn lexsort_permutation(keys: &[(&NodeRef, u64)]) -> Result<NodeRef> {
    let Some(((first, _), rest)) = keys.split_first() else {
        return Err(GpuTableError::invalid("a sort needs at least one key"));
    };
    for (key, _) in keys {
        check_keys(key)?;
        if key.meta.dtype != DType::U32 {
            return Err(GpuTableError::type_mismatch(
                "keys sorted below a bound are uint32",
            ));
        }
    }
    if let Some((other, _)) = rest
        .iter()
        .find(|(k, _)| k.meta.length != first.meta.length)
    {
        return Err(GpuTableError::invalid(format!(
            "sort keys have {} and {} rows",
            first.meta.length, other.meta.length
        )));
    }
    let bits = keys
        .iter()
        .map(|(_, bound)| (64 - bound.saturating_sub(1).leading_zeros()).min(32))
        .collect();
    sort_node(
        &keys.iter().map(|(k, _)| (*k).clone()).collect::<Vec<_>>(),
        bits,
    )
}

/// The mask of a sort key's low `bits` bits (a sort node's keys have at least one).
pub fn key_mask(bits: u32) -> u32 {
    u32::MAX >> (32 - bits.clamp(1, 32))
}

fn check_keys(keys: &NodeRef) -> Result<()> {
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
    Ok(())
}

/// The stable sorting permutation of rows by uint32 `keys` (most significant first), each
/// by its low `bits` bits, as one node; keys of no bits order nothing and are left out
/// (nothing to sort: the identity).
pub(super) fn sort_node(keys: &[NodeRef], bits: Vec<u32>) -> Result<NodeRef> {
    sort_node_ordering(keys, bits, u32::MAX)
}

/// `sort_node` whose first `ordered_rows` rows alone are read (the rest may be anything).
pub fn sort_node_ordering(keys: &[NodeRef], bits: Vec<u32>, ordered_rows: u32) -> Result<NodeRef> {
    let rows = keys[0].meta.length;
    let (keys, bits): (Vec<NodeRef>, Vec<u32>) = keys
        .iter()
        .cloned()
        .zip(bits)
        .filter(|(_, bits)| *bits > 0)
        .unzip();
    if rows < 2 || keys.is_empty() {
        return u32_rows(rows);
    }
    let meta = Meta {
        dtype: DType::U32,
        size: 1,
        length: rows,
        constant: false,
    };
    Ok(Node::new(
        Op::SortPermutation { bits, ordered_rows },
        keys,
        meta,
        single_chunk(rows),
        None,
    ))
}

/// The stable sorting permutation of rows by uint32 `keys` (most significant first), each
/// by its low `bits` bits, composed of one-bit splits from the last key's lowest bit up:
/// each pass numbers the rows whose bit is 0 by an exclusive scan, sends them to the front
/// in order and the others after them in order, and scatters the permutation there; the
/// keys are gathered through it for the next pass. O(n) work per bit, on any backend's
/// scan, gather and scatter kernels.
pub fn split_permutation(keys: &[NodeRef], bits: &[u32]) -> Result<NodeRef> {
    let rows = keys.first().map_or(0, |k| k.meta.length);
    let k = u32_rows(rows)?;
    if rows < 2 {
        return Ok(k);
    }
    let last = u32_constant(rows - 1)?;
    let mut perm = k.clone();
    let passes = keys.iter().zip(bits).rev();
    for (pass, (key, bit)) in passes
        .flat_map(|(key, &bits)| (0..bits).map(move |bit| (key, bit)))
        .enumerate()
    {
        let current = match pass {
            0 => key.clone(),
            _ => gather(&perm, key)?,
        };
        let set = bit_of(&current, bit)?;
        let clear = binary(BinaryOp::Subtract, &u32_constant(1)?, &set)?;
        // Row k's place among the clear rows; set rows go after all of them, in order.
        let clear_before = exclusive_scan(&clear)?;
        let clear_count = binary(
            BinaryOp::Add,
            &gather(&last, &clear_before)?,
            &gather(&last, &clear)?,
        )?;
        let set_place = binary(
            BinaryOp::Add,
            &clear_count,
            &binary(BinaryOp::Subtract, &k, &clear_before)?,
        )?;
        let destination = select(&set, &set_place, &clear_before)?;
        perm = scatter(&destination, &perm, rows)?;
    }
    Ok(perm)
}

/// Bit `bit` of each uint32 key (0 or 1), by integer division.
fn bit_of(keys: &NodeRef, bit: u32) -> Result<NodeRef> {
    let below = binary(BinaryOp::Divide, keys, &u32_constant(1 << bit)?)?;
    if bit == 31 {
        return Ok(below);
    }
    let above = binary(BinaryOp::Divide, keys, &u32_constant(1 << (bit + 1))?)?;
    binary(
        BinaryOp::Subtract,
        &below,
        &binary(BinaryOp::Multiply, &above, &u32_constant(2)?)?,
    )
}
