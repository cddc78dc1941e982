//! Fused elementwise passes on the CPU: each region runs as one pass over rows in
//! cache-sized blocks: every node of the region computes one block into a small reused
//! buffer, and only the region's root is written to a full-length output. Inner loops are
//! flat slices so they vectorize (simd128 in the wasm build).

use std::collections::HashMap;
use std::rc::Rc;

use super::bins::BinTotals;
use super::block::Block;
use super::kernels::{
    binary, compare, equal_rows, f32_slice, gather_rows, place_columns, row_dot, sqrt_in_place,
    test, u32_slice, unary, widen, UNROLL,
};
use super::lane::{same_class, Buf, Lane, Stored};
use super::reduce::{self, Words};
use super::rows::{self, StoredRows};
use super::{internal, CpuDevice};
use super::{scan, segment, where_read};
use crate::column::{element_count, try_collect, with_column_data, with_elem_type, ColumnData};
use crate::dtype::{Class, DType};
use crate::engine::{DeviceModel, RegionModel, Regions};
use crate::error::Result;
use crate::ir::{validate_segments, Node, NodeRef, Op, Predicate, Reduction};
use crate::memory::Home;
use crate::plan::Region;
use crate::value::{HostLease, Storage, Value};

/// Elements per block buffer: a region's few buffers stay in L1 (measured best on the
/// bench workloads; 2048 already thrashes a 32 KiB L1).
const BLOCK_ELEMENTS: usize = 768;

/// Runs one elementwise region over its leaves' host values into storage from
/// `allocate(type, values)` (empty, with room for them).
fn run_region(
    region: &Region,
    leaves: &[Rc<Value>],
    allocate: impl FnOnce(DType, usize) -> Result<HostLease>,
) -> Result<HostLease> {
    let root = &region.root;
    let out_len = element_count(region.output_rows() as u64, root.meta.size, root.meta.dtype)?;
    let mut lease = allocate(root.meta.dtype, out_len)?;
    // Filled by appending finished blocks in row order: no zero-fill pass over the output.
    let computed = rows_before_repeated_ids(region, leaves);
    run_blocks(
        region,
        leaves,
        0..computed,
        Sink::Output(&mut lease.get_mut().data),
    )?;
    let column = lease.get_mut();
    let lanes = root.meta.size as usize;
    if computed < region.rows {
        // The rows gathered by the repeated id are its row again.
        with_column_data!(&mut column.data, d => {
            let last = d.len() - lanes;
            match lanes {
                1 => d.resize(out_len, d[last]),
                _ => {
                    let row = d[last..].to_vec();
                    while d.len() < out_len {
                        d.extend_from_slice(&row);
                    }
                }
            }
        });
    }
    column.size = root.meta.size;
    column.rows = (column.data.len() / root.meta.size as usize) as u32;
    Ok(lease)
}

/// The rows a pass computes: all, but for one gather whose last ids are one id repeated (a
/// compaction's `u32::MAX` past its count, or a scatter's 0), up to the first of them.
fn rows_before_repeated_ids(region: &Region, leaves: &[Rc<Value>]) -> u32 {
    let root = &region.root;
    if root.op != Op::Gather || region.nodes.len() != 1 || root.inputs[0].meta.size != 1 {
        return region.rows;
    }
    let ids = region.leaves.iter().position(|l| l.id == root.inputs[0].id);
    let ids = ids
        .and_then(|k| leaves.get(k)?.host_column())
        .map(|c| &c.data);
    let Some(ids) = (match ids {
        Some(ColumnData::U32(ids)) => ids.get(..region.rows as usize),
        _ => None,
    }) else {
        return region.rows;
    };
    let Some(&last) = ids.last() else {
        return region.rows;
    };
    if root.inputs[0].op == Op::Compact {
        // Ascending, then u32::MAX: the first of those found by halving.
        let first = ids.partition_point(|&id| id != u32::MAX);
        return (first as u32).saturating_add(1).min(region.rows);
    }
    // Whole steps folded without an early exit, so they vectorize; then the last step's.
    const STEP: usize = 256;
    let mut end = ids.len();
    while end >= STEP
        && ids[end - STEP..end]
            .iter()
            .fold(true, |all, &id| all & (id == last))
    {
        end -= STEP;
    }
    let first = ids[..end]
        .iter()
        .rposition(|&id| id != last)
        .map_or(0, |r| r + 1);
    first as u32 + 1
}

/// One chunk task of a reduction region: its lane states (its rows start at `first_row`).
pub(super) fn reduce_region(
    region: &Region,
    leaves: &[Rc<Value>],
    first_row: u64,
) -> Result<Vec<Words>> {
    let root = &region.root;
    let kind = Reduction::kind_of(root)?;
    let mut fold = reduce::chunk_fold(kind, &root.inputs[0], root.inputs.get(1))?;
    let rows = 0..region.rows;
    run_blocks(
        region,
        leaves,
        rows,
        Sink::Reduce(&mut *fold, first_row as i64),
    )?;
    fold.finish()
}

/// Whether the kernels can read `value`: host memory, or parts that each are.
pub(super) fn in_host_memory(value: &Value) -> bool {
    match &value.storage {
        Storage::Parts(parts) => parts.iter().all(|p| p.host_column().is_some()),
        _ => value.host_column().is_some(),
    }
}

/// Where a region's computed rows go.
pub(super) enum Sink<'a> {
    /// Appended to the output.
    Output(&'a mut ColumnData),
    /// Folded into a reduction's states (rows numbered from the given first row).
    Reduce(&'a mut dyn reduce::ChunkFold, i64),
    /// The root's input rows added into its bins (the root is not computed per block).
    Bins(&'a mut super::bins::BinAdder),
}

/// Computes rows `range` of a region block by block into `sink`.
pub(super) fn run_blocks(
    region: &Region,
    leaves: &[Rc<Value>],
    range: std::ops::Range<u32>,
    mut sink: Sink,
) -> Result<()> {
    let root = &region.root;
    let rows = range.len();
    // The root folds or adds its input's blocks rather than computing its own.
    let root_folds = region.is_reduction() || region.adds_to_bins;
    let widest = region
        .computed()
        .map(|n| n.meta.size)
        .chain(region.leaves.iter().map(|n| n.meta.size))
        .max()
        .unwrap_or(1);
    // A multiple of UNROLL rows keeps every block on the kernels' unrolled path.
    let block_rows = match BLOCK_ELEMENTS / widest as usize {
        rows if rows >= UNROLL => rows / UNROLL * UNROLL,
        rows => rows.max(1),
    };
    let mut block = Block {
        r0: 0,
        n: 0,
        block_rows,
        slot_ids: Vec::new(),
        slots: Vec::new(),
        leaf_ids: Vec::new(),
        leaves: Vec::new(),
        consts: Vec::new(),
        tmps: Vec::new(),
        segment_starts: HashMap::new(),
        first_row: region.first_row,
        where_read: where_read::producers(region),
        exact_constants: Vec::new(),
        task_rows: rows,
        key_searches: Vec::new(),
    };
    for (leaf, value) in region.leaves.iter().zip(leaves) {
        if !in_host_memory(value) {
            return Err(internal(format!(
                "input t{} is not in host memory",
                leaf.id
            )));
        }
        block.leaf_ids.push(leaf.id);
        block.leaves.push(value.clone());
    }
    let computed: Vec<&NodeRef> = region
        .nodes
        .iter()
        .filter(|n| n.id != root.id || !root_folds)
        .collect();
    for node in &computed {
        block.slot_ids.push(node.id);
        // A 32-bit root writes straight into the output and needs no buffer.
        let direct = node.id == root.id && node.meta.dtype.bits() == 32;
        let len = if direct || rows == 0 {
            0
        } else {
            block_rows * node.meta.size as usize
        };
        block
            .slots
            .push(Buf::try_new(node.meta.dtype.class(), len)?);
        if node.op == Op::SegmentedMap {
            let segments = block.column(block.leaf_index(&node.inputs[0])?);
            validate_segments(segments, node.meta.length)?;
            let rows = segments.rows as usize;
            let starts = try_collect(rows, (0..rows).map(|i| segments.data.get_f64(i) as i64))?;
            block.segment_starts.insert(node.id, starts);
        }
    }

    let mut r0 = range.start;
    while r0 < range.end {
        let n = block_rows.min((range.end - r0) as usize);
        block.r0 = r0;
        block.n = n;
        for (slot, node) in computed.iter().enumerate() {
            let len = n * node.meta.size as usize;
            if let (true, true, Sink::Output(out)) =
                (node.id == root.id, node.meta.dtype.bits() == 32, &mut sink)
            {
                dispatch_class!(node.meta.dtype.class(), T => {
                    compute_into_output::<T>(node, &mut block, out, len)?;
                });
                continue;
            }
            let mut dst = std::mem::replace(&mut block.slots[slot], Buf::F(Vec::new()));
            dispatch_class!(node.meta.dtype.class(), T => {
                compute::<T>(node, &mut block, &mut T::of_mut(&mut dst)[..len])?;
            });
            if let (true, Sink::Output(out)) = (node.id == root.id, &mut sink) {
                append_block(&dst, out, len);
            }
            block.slots[slot] = dst;
        }
        match &mut sink {
            Sink::Reduce(fold, first_row) => fold.fold(&mut block, *first_row + r0 as i64)?,
            Sink::Bins(adder) => adder.add(&mut block)?,
            Sink::Output(_) => {}
        }
        r0 += n as u32;
    }
    Ok(())
}

/// Computes the next `len` values of the output in place, in its reserved capacity.
fn compute_into_output<T: Lane>(
    node: &NodeRef,
    block: &mut Block,
    out: &mut ColumnData,
    len: usize,
) -> Result<()> {
    let values = T::of_column(out).ok_or_else(|| internal("output storage class"))?;
    let start = values.len();
    let spare = &mut values.spare_capacity_mut()[..len];
    // SAFETY: `T` is f32, i32 or u32 (every bit pattern valid), the slice lies in reserved
    // capacity, and `compute` writes all `len` elements before anything reads them.
    let dst = unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr() as *mut T, len) };
    compute::<T>(node, block, dst)?;
    // SAFETY: the `len` elements after `start` were just written.
    unsafe { values.set_len(start + len) };
    Ok(())
}

/// Appends the first `len` values of a block to the output (narrowing values that are
/// already wrapped to the output type). Capacity was reserved up front.
pub(super) fn append_block(src: &Buf, out: &mut ColumnData, len: usize) {
    match (src, out) {
        (Buf::U(s), ColumnData::U8(d)) => d.extend(s[..len].iter().map(|&v| v as u8)),
        (Buf::U(s), ColumnData::U16(d)) => d.extend(s[..len].iter().map(|&v| v as u16)),
        (Buf::I(s), ColumnData::I8(d)) => d.extend(s[..len].iter().map(|&v| v as i8)),
        (Buf::I(s), ColumnData::I16(d)) => d.extend(s[..len].iter().map(|&v| v as i16)),
        (Buf::U(s), ColumnData::U32(d)) => d.extend_from_slice(&s[..len]),
        (Buf::I(s), ColumnData::I32(d)) => d.extend_from_slice(&s[..len]),
        (Buf::F(s), ColumnData::F32(d)) => d.extend_from_slice(&s[..len]),
        _ => unreachable!("output storage matches the root's type"),
    }
}

/// `cast`'s conversion of one lane: a float into an integer type truncates, and NaN or a
/// value outside `bounds` (the type's `(lowest, highest + 1)`) is 0; the rest converts as
/// `as` does (integers wrap, and narrowing after wraps to 8 or 16 bits).
#[inline(always)]
fn cast_lane<S: Lane, T: Lane>(v: S, (lo, end): (f64, f64)) -> T {
    if S::CLASS != Class::F || T::CLASS == Class::F {
        return T::from_elem(v);
    }
    let t = v.to_f64().trunc();
    // Chosen without a branch, and converted through i64: V8 takes a slow path for
    // `i32.trunc_sat_f64_u` of a negative value (8x slower on half-negative columns).
    let t = if t >= lo && t < end { t } else { 0.0 };
    match lo < 0.0 {
        true => T::from_elem(t as i64 as i32),
        false => T::from_elem(t as i64 as u32),
    }
}

/// The part of a block's `dst` holding rows of `node` itself (from pass row `first`): in a
/// region with a longer operand the rest are zeroed afterwards, and ops reading their
/// inputs whole by the output row must not read past them.
fn own_rows<'a, T>(node: &NodeRef, first: usize, lanes: usize, dst: &'a mut [T]) -> &'a mut [T] {
    let own = (node.meta.length as usize).saturating_sub(first) * lanes;
    let end = own.min(dst.len());
    &mut dst[..end]
}

/// `gather_rows` from a whole stored column into blocks of its class.
fn gather_whole<I: Lane, S: Stored, T: Lane>(
    ids: &[I],
    source: &[S],
    rows: usize,
    lanes: usize,
    dst: &mut [T],
) -> Result<()> {
    gather_rows(ids, source, rows, lanes, same_class::<S::Lane, T>(dst)?);
    Ok(())
}

/// One block of `searchSorted` (uint32 out, so instantiated once, not per class): queries of
/// any type widened to f64 (exact) a piece at a time on the stack, one search per stored key
/// type.
fn search_block(upper: bool, node: &NodeRef, b: &mut Block, out: &mut [u32]) -> Result<()> {
    const PIECE: usize = 256;
    let (sorted, queries) = (&node.inputs[0], &node.inputs[1]);
    let sorted = b.leaf(sorted)?.clone();
    let class = queries.meta.dtype.class();
    let view = dispatch_class!(class, Q => { b.prepare::<Q>(queries, 1, 0)? });
    let (key, rows) = with_elem_type!(sorted.dtype, S => {
        rows::key_reader(StoredRows::<S>::new(&sorted)?)
    });
    // How this task searches the sorted leaf: decided, and its keys copied, once per task.
    let id = node.inputs[0].id;
    let search = match b.key_searches.iter().find(|(leaf, _)| *leaf == id) {
        Some((_, search)) => search.clone(),
        None => {
            let search = Rc::new(rows::KeySearch::new(&*key, rows, b.task_rows)?);
            b.key_searches.push((id, search.clone()));
            search
        }
    };
    let mut wide = [0f64; PIECE];
    for start in (0..out.len()).step_by(PIECE) {
        let end = (start + PIECE).min(out.len());
        dispatch_class!(class, Q => { widen(&b.view::<Q>(view, 1)[start..end], &mut wide) });
        let (queries, dst) = (&wide[..end - start], &mut out[start..end]);
        match (&*search, upper) {
            (rows::KeySearch::Few(keys), true) => rows::search_few::<true>(keys, queries, dst),
            (rows::KeySearch::Few(keys), false) => rows::search_few::<false>(keys, queries, dst),
            (rows::KeySearch::Even(keys), _) => keys.search(queries, upper, dst),
            (rows::KeySearch::Indexed(index), _) => index.search(queries, upper, dst),
            (rows::KeySearch::Halving, _) => rows::search_sorted(&*key, rows, queries, upper, dst),
        }
    }
    Ok(())
}

/// One block of `equalAll` (uint32 out, so instantiated once, not per class).
fn equal_all_block(node: &NodeRef, b: &mut Block, out: &mut [u32]) -> Result<()> {
    let (a, c) = (&node.inputs[0], &node.inputs[1]);
    // The lane rule: a size-1 input broadcasts, lanes past a row read 0.
    let width = a.meta.size.max(c.meta.size);
    dispatch_class!(a.meta.dtype.class(), A => {
        dispatch_class!(c.meta.dtype.class(), B => {
            let x = b.prepare::<A>(a, width, 0)?;
            let y = b.prepare::<B>(c, width, 1)?;
            equal_rows(b.view::<A>(x, width as usize), b.view::<B>(y, width as usize), width as usize, out);
        });
    });
    Ok(())
}

/// One block of a predicate (always `uint8` out): inputs of one class compared as they
/// are; a pair of classes widened to f64, which holds every value of every type exactly, a
/// piece at a time, so those loops are instantiated once, not once per pair of classes.
fn predicate_block(
    predicate: Predicate,
    node: &NodeRef,
    b: &mut Block,
    out: &mut [u32],
) -> Result<()> {
    const PIECE: usize = 256;
    let (size, lanes) = (node.meta.size, node.meta.size as usize);
    // No allocation per block: a predicate reads one or two inputs.
    let (x, y) = match &node.inputs[..] {
        [x] => (x, None),
        [x, y] => (x, Some(y)),
        _ => return Err(internal("a predicate reads one or two inputs")),
    };
    let mut a = x.meta.dtype.class();
    let Some(y) = y else {
        let v = dispatch_class!(a, A => { b.prepare::<A>(x, size, 0)? });
        dispatch_class!(a, A => { test(predicate, b.view::<A>(v, lanes), out) });
        return Ok(());
    };
    let mut c = y.meta.dtype.class();
    // A constant that is a value of the other input's class is compared in that class.
    if a != c {
        if b.constant_exactly_in(y, a) {
            c = a;
        } else if b.constant_exactly_in(x, c) {
            a = c;
        }
    }
    let vx = dispatch_class!(a, A => { b.prepare::<A>(x, size, 0)? });
    let vy = dispatch_class!(c, A => { b.prepare::<A>(y, size, 1)? });
    let views = [(vx, a), (vy, c)];
    match views {
        [(x, a), (y, c)] if a == c => dispatch_class!(a, A => {
            compare(predicate, b.view::<A>(x, lanes), b.view::<A>(y, lanes), out)
        }),
        _ => {
            let mut wide = [[0f64; PIECE]; 2];
            for start in (0..out.len()).step_by(PIECE) {
                let end = (start + PIECE).min(out.len());
                for ((view, class), wide) in views.iter().zip(&mut wide) {
                    dispatch_class!(*class, A => { widen(&b.view::<A>(*view, lanes)[start..end], wide) });
                }
                let piece = end - start;
                compare(
                    predicate,
                    &wide[0][..piece],
                    &wide[1][..piece],
                    &mut out[start..end],
                );
            }
        }
    }
    Ok(())
}

/// One block of a sort key (uint32 out, one lane; `ir::SortKey`): floats by their bits
/// (-0 as +0, NaN after every number), signed values with the width's sign bit flipped,
/// inverted within the width where descending.
fn sort_key_block(descending: bool, node: &NodeRef, b: &mut Block, out: &mut [u32]) -> Result<()> {
    let input = &node.inputs[0];
    let width = input.meta.dtype.byte_width() as u32 * 8;
    let mask = crate::ir::key_mask(width);
    let flip = if descending { mask } else { 0 };
    match input.meta.dtype.class() {
        Class::F => {
            let v = b.prepare::<f32>(input, 1, 0)?;
            for (o, x) in out.iter_mut().zip(b.view::<f32>(v, 1)) {
                // NaN stays last either way.
                *o = crate::ir::float_sort_key(*x) ^ if x.is_nan() { 0 } else { flip };
            }
        }
        Class::I => {
            let v = b.prepare::<i32>(input, 1, 0)?;
            let half = 1u32 << (width - 1);
            for (o, x) in out.iter_mut().zip(b.view::<i32>(v, 1)) {
                *o = ((*x as u32).wrapping_add(half) & mask) ^ flip;
            }
        }
        Class::U => {
            let v = b.prepare::<u32>(input, 1, 0)?;
            for (o, x) in out.iter_mut().zip(b.view::<u32>(v, 1)) {
                *o = (x & mask) ^ flip;
            }
        }
    }
    Ok(())
}

/// One block of `dot` or `length` (float32 out, so instantiated once, not per class).
fn dot_block(node: &NodeRef, b: &mut Block, out: &mut [f32]) -> Result<()> {
    let width = node.inputs.iter().map(|i| i.meta.size).max().unwrap_or(1) as usize;
    let x = b.prepare::<f32>(&node.inputs[0], width as u32, 0)?;
    let last = node.inputs.last().expect("dot and length have inputs");
    let y = b.prepare::<f32>(last, width as u32, 1)?;
    let (x, y) = (b.view::<f32>(x, width), b.view::<f32>(y, width));
    row_dot(x, y, width, out);
    if node.op == Op::Length {
        sqrt_in_place(out);
    }
    Ok(())
}

/// One block of `fround` (float32 out): each float64 word pair as its float32 and the rest.
fn fround_block(node: &NodeRef, b: &mut Block, out: &mut [f32]) -> Result<()> {
    let lanes = node.meta.size as usize;
    let v = b.prepare::<u32>(&node.inputs[0], node.meta.size, 0)?;
    let words = b.view::<u32>(v, lanes);
    let half = lanes / 2;
    for (row, w) in out.chunks_exact_mut(lanes).zip(words.chunks_exact(lanes)) {
        for i in 0..half {
            let value = f64::from_bits(((w[2 * i + 1] as u64) << 32) | w[2 * i] as u64);
            let high = value as f32;
            row[i] = high;
            row[half + i] = (value - high as f64) as f32;
        }
    }
    Ok(())
}

/// Computes one block of `node` (compute class `T`) into `dst` (`n * size` elements).
fn compute<T: Lane>(node: &NodeRef, b: &mut Block, dst: &mut [T]) -> Result<()> {
    let size = node.meta.size;
    let lanes = size as usize;
    let n = b.n;
    match &node.op {
        Op::Binary(op) => {
            let x = b.prepare::<T>(&node.inputs[0], size, 0)?;
            let y = b.prepare::<T>(&node.inputs[1], size, 1)?;
            binary(*op, b.view(x, lanes), b.view(y, lanes), dst);
        }
        Op::Unary(op) => {
            let x = b.prepare::<T>(&node.inputs[0], size, 0)?;
            unary(*op, b.view(x, lanes), dst);
        }
        Op::Predicate(predicate) => predicate_block(*predicate, node, b, u32_slice(dst))?,
        Op::SortKey { descending } => sort_key_block(*descending, node, b, u32_slice(dst))?,
        Op::Interleave => {
            let mut offset = 0;
            for (k, input) in node.inputs.iter().enumerate() {
                let width = input.meta.size as usize;
                let v = b.prepare::<T>(input, input.meta.size, k)?;
                place_columns(b.view::<T>(v, width), width, dst, lanes, offset);
                offset += width;
            }
        }
        Op::Swizzle(channels) => {
            let input = &node.inputs[0];
            let width = input.meta.size as usize;
            let v = b.prepare::<T>(input, input.meta.size, 0)?;
            let src = b.view::<T>(v, width);
            for (row, s) in dst.chunks_exact_mut(lanes).zip(src.chunks_exact(width)) {
                for (o, &c) in row.iter_mut().zip(channels) {
                    *o = s[c as usize];
                }
            }
        }
        Op::Select => {
            let cond = &node.inputs[0];
            let x = b.prepare::<T>(&node.inputs[1], size, 1)?;
            let y = b.prepare::<T>(&node.inputs[2], size, 2)?;
            dispatch_class!(cond.meta.dtype.class(), C => {
                let c = b.prepare::<C>(cond, size, 0)?;
                let (c, x, y) = (b.view::<C>(c, lanes), b.view::<T>(x, lanes), b.view::<T>(y, lanes));
                for (((o, c), x), y) in dst.iter_mut().zip(c).zip(x).zip(y) {
                    *o = if c.is_nonzero() { *x } else { *y };
                }
            });
        }
        Op::Dot | Op::Length => dot_block(node, b, f32_slice(dst))?,
        Op::EqualAll => equal_all_block(node, b, u32_slice(dst))?,
        Op::Fround => fround_block(node, b, f32_slice(dst))?,
        Op::Sequence { start, step } => {
            let row = b.pass_row() as i64;
            let first = start.wrapping_add(row.wrapping_mul(*step));
            for (i, o) in dst.iter_mut().enumerate() {
                *o = T::from_elem(first.wrapping_add((i as i64).wrapping_mul(*step)) as i32);
            }
        }
        Op::Gather => {
            let ids = &node.inputs[0];
            let source = b.leaf(&node.inputs[1])?.clone();
            dispatch_class!(ids.meta.dtype.class(), I => {
                let v = b.prepare::<I>(ids, 1, 0)?;
                let ids = b.view::<I>(v, 1);
                match &source.storage {
                    // A chunked source is read chunk by chunk where it is stored.
                    Storage::Parts(_) => with_elem_type!(source.dtype, S => {
                        let dst = same_class::<<S as Stored>::Lane, T>(dst)?;
                        rows::gather_stored(ids, &StoredRows::<S>::new(&source)?, lanes, dst)
                    }),
                    _ => {
                        let whole = source.host_column().ok_or_else(|| internal("a gather source is not in host memory"))?;
                        let rows = whole.rows as usize;
                        with_column_data!(&whole.data, s => gather_whole(ids, s, rows, lanes, dst)?);
                    }
                }
            });
        }
        Op::SearchSorted { upper } => search_block(*upper, node, b, same_class::<u32, T>(dst)?)?,
        // Ops that read input 0 whole (in its stored rows) and write this block's own rows.
        Op::SegmentSum | Op::SegmentBlocks if b.computes_where_read(&node.inputs[0]) => {
            let first = b.pass_row();
            segment::where_read(node, b, first, own_rows(node, first, lanes, dst))?;
        }
        op @ (Op::SegmentSum | Op::SegmentBlocks | Op::Reshape) => {
            let x = b.leaf(&node.inputs[0])?;
            let first = b.pass_row();
            let dst = own_rows(node, first, lanes, dst);
            // Each of these writes its input's class.
            with_elem_type!(x.dtype, S => {
                type L = <S as Stored>::Lane;
                let dst = same_class::<L, T>(dst)?;
                let x = StoredRows::<S>::new(x)?;
                match op {
                    Op::SegmentSum | Op::SegmentBlocks => {
                        let offsets = StoredRows::<u32>::new(b.leaf(&node.inputs[1])?)?;
                        match node.inputs.get(2) {
                            Some(blocks) => {
                                let blocks = StoredRows::<L>::new(b.leaf(blocks)?)?;
                                segment::sums(&x, &offsets, Some(&blocks), first, lanes, dst)?
                            }
                            None if *op == Op::SegmentSum => {
                                segment::sums(&x, &offsets, None, first, lanes, dst)?
                            }
                            None => segment::blocks(&x, &offsets, first, lanes, dst)?,
                        }
                    }
                    _ => rows::reshape(&x, first, lanes, dst),
                }
            });
        }
        Op::SegmentedMap => {
            let starts = &b.segment_starts[&node.id];
            let first_vertex = b.r0 as i64;
            // Last segment whose start is <= the vertex; later vertices only move forward.
            let mut segment = starts
                .partition_point(|&s| s <= first_vertex)
                .saturating_sub(1);
            for (i, row) in dst.chunks_exact_mut(2).enumerate() {
                let vertex = first_vertex + i as i64;
                while segment + 1 < starts.len() && starts[segment + 1] <= vertex {
                    segment += 1;
                }
                row[0] = T::from_elem(segment as u32);
                row[1] = T::from_elem((vertex - starts[segment]) as u32);
            }
        }
        Op::Cast(to) => {
            let input = &node.inputs[0];
            let bounds = to.int_bounds();
            dispatch_class!(input.meta.dtype.class(), S => {
                let x = b.prepare::<S>(input, size, 0)?;
                for (o, v) in dst.iter_mut().zip(b.view::<S>(x, lanes)) {
                    *o = cast_lane::<S, T>(*v, bounds);
                }
            });
        }
        Op::Rows(ranges) => {
            let (r0, r1) = (b.r0 as usize, b.r0 as usize + n);
            let mut base = 0usize;
            for (k, &(start, end)) in ranges.iter().enumerate() {
                let len = (end - start) as usize;
                let (lo, hi) = (base.max(r0), (base + len).min(r1));
                if lo < hi {
                    // Read whole, so possibly bound in parts: never assumed one column.
                    let column = b.leaf(&node.inputs[k])?.host_column().ok_or_else(|| {
                        internal("a copied piece is not one column in host memory")
                    })?;
                    let from = (start as usize + lo - base) * lanes;
                    let out = &mut dst[(lo - r0) * lanes..(hi - r0) * lanes];
                    with_column_data!(&column.data, s => {
                        for (o, v) in out.iter_mut().zip(&s[from..]) {
                            *o = T::from_elem(*v);
                        }
                    });
                }
                base += len;
            }
        }
        Op::Source
        | Op::Reduce(_)
        | Op::Scatter
        | Op::SortPermutation { .. }
        | Op::Compact
        | Op::Scan { .. }
        | Op::BinCount { .. }
        | Op::BinSum { .. }
        | Op::Lookup
        // The CPU walks its scans (`scan::scan_whole`): it never composes them.
        | Op::GroupFold(_)
        | Op::ScanApply { .. }
        | Op::Concat
        | Op::Slice { .. }
        | Op::Rechunk => {
            return Err(internal(format!(
                "{} is not computed per block",
                node.op.name()
            )))
        }
    }
    if node.meta.dtype.bits() < 32 {
        let dtype = node.meta.dtype;
        for v in dst.iter_mut() {
            *v = v.narrow(dtype);
        }
    }
    // Rows past a shorter node's own length are zero, as if it had been materialized.
    let end = b.r0 as usize + n;
    if !node.meta.constant && (node.meta.length as usize) < end {
        let keep = (node.meta.length as usize).saturating_sub(b.r0 as usize);
        dst[keep * lanes..].fill(T::default());
    }
    Ok(())
}

impl RegionModel for CpuDevice {
    fn where_read_scratch_bytes(&self, region: &Region) -> u64 {
        super::where_read::scratch_bytes(region)
    }
    fn walks(&self, root: &Node) -> bool {
        // A lookup sorts the table and searches it (`ir::compose_lookup`), fast on the CPU.
        root.op != Op::Lookup
    }
}

impl Regions for CpuDevice {
    type Bins = BinTotals;
    async fn run_region(
        &self,
        home: &mut Home,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value> {
        let lease = run_region(region, leaves, |dtype, len| self.take(home, dtype, len))?;
        self.core().counters.add_kernels(1);
        Ok(Value::from_host_lease(self.core().id, lease))
    }
    async fn walk(
        &self,
        home: &mut Home,
        root: &Node,
        inputs: &[Vec<Rc<Value>>],
    ) -> Result<Vec<Value>> {
        let input = (inputs.first()).ok_or_else(|| internal("a walk without its input"))?;
        let chunks = match root.op {
            Op::Compact => vec![super::scatter::compact(self, home, input)?],
            Op::Scan { .. } => scan::scan_whole(self, home, root, input)?,
            _ => return Err(internal(format!("{} is not a walk", root.op.name()))),
        };
        self.core().counters.add_kernels(1);
        Ok(chunks)
    }
    async fn bins_target(&self, _home: &mut Home, root: &Node) -> Result<BinTotals> {
        super::bins::bins_target(root)
    }
    async fn add_to_bins(
        &self,
        _home: &mut Home,
        task: &Region,
        leaves: &[Rc<Value>],
        bins: &mut BinTotals,
    ) -> Result<()> {
        super::bins::add_task(task, leaves, bins)?;
        self.core().counters.add_kernels(1);
        Ok(())
    }
    async fn finish_bins(&self, home: &mut Home, root: &Node, bins: BinTotals) -> Result<Value> {
        super::bins::finish_bins(self, home, root, bins)
    }
}
