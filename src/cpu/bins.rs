//! Bin counts and sums on the CPU (`Op::BinCount`, `Op::BinSum`): a bin pass computes its
//! input a block at a time (fused with the work making the ids and values) and adds each
//! row into a total per bin (WebGPU adds them with atomics in a generated dispatch, src/gpu/bins.rs;
//! WebGL2 sorts the ids and searches each bin's first row).

use std::rc::Rc;

use super::block::Block;
use super::region::{run_blocks, Sink};
use super::{internal, CpuDevice};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::engine::DeviceModel;
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::memory::Home;
use crate::plan::Region;
use crate::value::Value;

/// Bins up to this many are counted in four tables at once (summed after): a run of equal
/// ids then makes four chains of increments, not one.
const SPLIT_TABLE_BINS: usize = 1 << 12;

/// A bin pass's totals: counts and integer sums in their output's type (wrapping as 32-bit
/// sums do), float sums in f64 (a group's sum is then as accurate as a pairwise one).
pub enum BinTotals {
    U32(Vec<u32>),
    I32(Vec<i32>),
    F64(Vec<f64>),
}

/// The totals of the bin count or sum `root`, every bin 0.
pub(super) fn bins_target(root: &Node) -> Result<BinTotals> {
    let bins = root.meta.length as usize;
    Ok(match (&root.op, root.meta.dtype) {
        (Op::BinCount { .. }, _) | (Op::BinSum { .. }, DType::U32) => BinTotals::U32(zeros(bins)?),
        (Op::BinSum { .. }, DType::I32) => BinTotals::I32(zeros(bins)?),
        (Op::BinSum { .. }, DType::F32) => BinTotals::F64(zeros(bins)?),
        _ => return Err(internal("a bin pass of a type not a count's or a sum's")),
    })
}

fn zeros<T: Copy + Default>(len: usize) -> Result<Vec<T>> {
    let mut zeros = crate::column::try_vec(len, "bin totals")?;
    zeros.resize(len, T::default());
    Ok(zeros)
}

/// One chunk task of a bin pass: its rows computed block by block, each added into `totals`.
pub(super) fn add_task(
    region: &Region,
    leaves: &[Rc<Value>],
    totals: &mut BinTotals,
) -> Result<()> {
    let root = &region.root;
    let mut adder = BinAdder {
        input: root.inputs[0].clone(),
        count: matches!(root.op, Op::BinCount { .. }),
        // Held by the adder while the blocks run, given back after.
        totals: std::mem::replace(totals, BinTotals::U32(Vec::new())),
        tables: Vec::new(),
    };
    let bins = root.meta.length as usize;
    if adder.count && bins <= SPLIT_TABLE_BINS && region.rows as usize >= 4 * bins {
        adder.tables = zeros(3 * bins)?;
    }
    run_blocks(region, leaves, 0..region.rows, Sink::Bins(&mut adder))?;
    *totals = adder.finish();
    Ok(())
}

/// The bin pass's output from its totals.
pub(super) fn finish_bins(
    device: &CpuDevice,
    home: &Home,
    root: &Node,
    totals: BinTotals,
) -> Result<Value> {
    let bins = root.meta.length as usize;
    let mut lease = device.take(home, root.meta.dtype, bins)?;
    let column = lease.get_mut();
    // Within the capacity `take` made room for: no allocation.
    match (&mut column.data, totals) {
        (ColumnData::U32(out), BinTotals::U32(totals)) => {
            out.clear();
            out.extend_from_slice(&totals);
        }
        (ColumnData::I32(out), BinTotals::I32(totals)) => {
            out.clear();
            out.extend_from_slice(&totals);
        }
        (ColumnData::F32(out), BinTotals::F64(totals)) => {
            out.clear();
            out.extend(totals.iter().map(|&v| v as f32));
        }
        _ => return Err(internal("a bin pass's totals are not of its output's type")),
    }
    column.rows = bins as u32;
    Ok(Value::from_host_lease(device.core().id, lease))
}

/// Adds a bin pass's computed blocks into its totals.
pub(super) struct BinAdder {
    /// The root's input: uint32 ids, or `[id, value]` pairs in the sum's type.
    input: crate::ir::NodeRef,
    count: bool,
    totals: BinTotals,
    /// Three more count tables (`SPLIT_TABLE_BINS`), or none.
    tables: Vec<u32>,
}

impl BinAdder {
    /// Adds the block's rows of the input into the totals.
    pub(super) fn add(&mut self, b: &mut Block) -> Result<()> {
        let not_pairs = || internal("a bin sum's pairs are not of its type");
        match &mut self.totals {
            BinTotals::U32(counts) if self.count => {
                let v = b.prepare::<u32>(&self.input, 1, 0)?;
                let ids = b.view::<u32>(v, 1);
                match self.tables.is_empty() {
                    true => count_into(ids, counts),
                    false => count_split(ids, counts, &mut self.tables),
                }
            }
            BinTotals::U32(sums) => {
                let v = b.prepare::<u32>(&self.input, 2, 0)?;
                let pairs = b.view::<u32>(v, 2);
                sum_pairs(pairs, sums, |id| id as usize, |s, v| *s = s.wrapping_add(v));
            }
            BinTotals::I32(sums) => {
                let v = b.prepare::<i32>(&self.input, 2, 0)?;
                let pairs = b.view::<i32>(v, 2);
                // A negative id reads as one past every bin.
                let id = |id: i32| usize::try_from(id).unwrap_or(usize::MAX);
                sum_pairs(pairs, sums, id, |s, v| *s = s.wrapping_add(v));
            }
            BinTotals::F64(sums) => {
                if self.input.meta.dtype != DType::F32 {
                    return Err(not_pairs());
                }
                let v = b.prepare::<f32>(&self.input, 2, 0)?;
                let pairs = b.view::<f32>(v, 2);
                sum_pairs(pairs, sums, |id| id as usize, |s, v| *s += f64::from(v));
            }
        }
        Ok(())
    }

    /// The totals, the split tables folded into the counts.
    fn finish(mut self) -> BinTotals {
        if let BinTotals::U32(counts) = &mut self.totals {
            for table in self.tables.chunks_exact(counts.len().max(1)) {
                for (count, more) in counts.iter_mut().zip(table) {
                    *count = count.wrapping_add(*more);
                }
            }
        }
        self.totals
    }
}

fn count_into(ids: &[u32], counts: &mut [u32]) {
    for &id in ids {
        if let Some(count) = counts.get_mut(id as usize) {
            *count = count.wrapping_add(1);
        }
    }
}

/// Four ids at a time into `counts` and the three tables after it in `tables`.
fn count_split(ids: &[u32], counts: &mut [u32], tables: &mut [u32]) {
    let (one, rest) = tables.split_at_mut(counts.len());
    let (two, three) = rest.split_at_mut(counts.len());
    let mut quads = ids.chunks_exact(4);
    for quad in &mut quads {
        for (table, &id) in [&mut *counts, &mut *one, &mut *two, &mut *three]
            .into_iter()
            .zip(quad)
        {
            if let Some(count) = table.get_mut(id as usize) {
                *count = count.wrapping_add(1);
            }
        }
    }
    count_into(quads.remainder(), counts);
}

/// Each `[id, value]` pair's value added into its id's sum; ids past the sums add nothing.
fn sum_pairs<T: Copy, S>(
    pairs: &[T],
    sums: &mut [S],
    id: impl Fn(T) -> usize,
    add: impl Fn(&mut S, T),
) {
    for pair in pairs.chunks_exact(2) {
        if let Some(sum) = sums.get_mut(id(pair[0])) {
            add(sum, pair[1]);
        }
    }
}
