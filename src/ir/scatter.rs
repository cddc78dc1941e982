//! Scatter: row `i` of `values` written to row `destinations[i]` of a new column; the one
//! primitive whose writes go where the data says. Every backend runs it as a pass over the
//! input rows (a compute dispatch on WebGPU, a point-list draw on WebGL2, a loop on the
//! CPU), one task per chunk of the inputs, all writing the same output.

use super::ops::row_numbers;
use super::{rechunk, single_chunk, Meta, Node, NodeRef, Op};
use crate::column::element_count;
use crate::dtype::DType;
use crate::error::{GpuTableError, Result};

/// How many row numbers `node` scatters, where it is a scatter of its rows' numbers (its
/// destinations its only input): each of its rows holds one below that, or 0.
pub fn scattered_row_numbers(node: &Node) -> Option<u32> {
    (node.op == Op::Scatter && node.inputs.len() == 1).then(|| node.inputs[0].meta.length)
}

/// How many rows' flags `node` compacts, where it is a compaction (`Op::Compact`): each of
/// its rows holds one below that, or `u32::MAX` past its count.
pub fn compacted_rows(node: &Node) -> Option<u32> {
    (node.op == Op::Compact).then_some(node.meta.length)
}

/// A column of `length` rows: row `destinations[i]` is `values[i]`, rows nobody writes are
/// 0, destinations at or past `length` are dropped. Destinations must be distinct: where two
/// collide, which value lands is unspecified (the CPU and WebGL2 keep the later row, WebGPU
/// any). `values` are one 32-bit lane per row (scatter row numbers and gather the rest);
/// on WebGL2 floats pass through a flat varying, which may not keep a NaN's payload. Where
/// `values` are the rows' numbers (`u32_rows`), the scatter has `destinations` as its only
/// input and writes each row's number itself.
pub fn scatter(destinations: &NodeRef, values: &NodeRef, length: u32) -> Result<NodeRef> {
    destinations.check_alive()?;
    values.check_alive()?;
    if destinations.meta.dtype != DType::U32 || destinations.meta.size != 1 {
        return Err(GpuTableError::type_mismatch(format!(
            "scatter destinations are uint32 of size 1, got {:?} of size {}",
            destinations.meta.dtype, destinations.meta.size
        )));
    }
    if values.meta.size != 1 || values.meta.dtype.byte_width() != 4 {
        return Err(GpuTableError::type_mismatch(format!(
            "scatter values are one 32-bit lane per row, got {:?} of size {}",
            values.meta.dtype, values.meta.size
        )));
    }
    if destinations.meta.constant
        || values.meta.constant
        || destinations.meta.length != values.meta.length
    {
        return Err(GpuTableError::invalid(format!(
            "scatter needs one destination per value row: {} destinations for {} rows",
            destinations.meta.length, values.meta.length
        )));
    }
    element_count(length as u64, 1, values.meta.dtype)?;
    let inputs = match row_numbers(values) {
        // Each input row's own number: written by the scatter's tasks, never stored.
        Some(_) => vec![destinations.clone()],
        // A task writes the rows of one chunk of both inputs.
        None if values.chunks == destinations.chunks => vec![destinations.clone(), values.clone()],
        None => vec![
            destinations.clone(),
            rechunk(values, destinations.chunks.clone())?,
        ],
    };
    let meta = Meta {
        dtype: values.meta.dtype,
        size: 1,
        length,
        constant: false,
    };
    Ok(Node::new(
        Op::Scatter,
        inputs,
        meta,
        single_chunk(length),
        None,
    ))
}
