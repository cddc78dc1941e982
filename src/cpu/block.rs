//! A region's block: the rows `r0..r0 + n` every node of the region computes at once, the
//! buffers holding them, and views of the inputs a node reads (a slot, a leaf in place, a
//! broadcast constant or a converted copy).

use std::collections::HashMap;
use std::rc::Rc;

use super::rows::KeySearch;
use super::{internal, Buf, Lane};
use crate::column::{with_column_data, Column, ColumnData, Elem};
use crate::dtype::Class;
use crate::error::Result;
use crate::ir::NodeRef;
use crate::plan::Region;
use crate::value::Value;

/// Where an operand's block lives.
#[derive(Clone, Copy)]
pub(super) enum View {
    Slot(usize),
    Leaf { index: usize, lanes: usize },
    Const(usize),
    Tmp(usize),
}

pub(super) struct Block {
    pub(super) r0: u32,
    pub(super) n: usize,
    pub(super) block_rows: usize,
    /// Node ids of `slots`, in the same order (regions are small: a scan beats hashing).
    pub(super) slot_ids: Vec<u64>,
    pub(super) slots: Vec<Buf>,
    pub(super) leaf_ids: Vec<u64>,
    pub(super) leaves: Vec<Rc<Value>>,
    pub(super) consts: Vec<((u64, usize, Class), Buf)>,
    pub(super) tmps: Vec<Buf>,
    pub(super) segment_starts: HashMap<u64, Vec<i64>>,
    /// The task's first row in the whole pass (ops computing from the row index add it).
    pub(super) first_row: u64,
    /// A region of its own for each node a consumer computes where it reads it.
    pub(super) where_read: Vec<Rc<Region>>,
    /// `constant_exactly_in`'s answers so far in the pass: `(node id, class, answer)`.
    pub(super) exact_constants: Vec<(u64, Class, bool)>,
    /// Rows the task computes (a search index pays for itself over many queries).
    pub(super) task_rows: usize,
    /// How the task searches each sorted leaf read so far, by node id.
    pub(super) key_searches: Vec<(u64, Rc<KeySearch>)>,
}

/// Expands `rows` rows of `src_size`-lane values into `lanes` lanes of `T` using the lane
/// rule: lane i < size reads lane i, a size-1 input broadcasts, anything else reads 0.
/// Rows at or past `avail` are zero (an input shorter than the output).
#[inline(never)]
fn expand<S: Elem, T: Lane>(
    src: &[S],
    src_size: usize,
    avail: usize,
    rows: usize,
    lanes: usize,
    out: &mut [T],
) {
    let full = avail.min(rows);
    let (head, tail) = out.split_at_mut(full * lanes);
    if src_size == lanes {
        for (o, s) in head.iter_mut().zip(&src[..full * lanes]) {
            *o = T::from_elem(*s);
        }
    } else if src_size == 1 {
        for (row, s) in head.chunks_exact_mut(lanes).zip(&src[..full]) {
            row.fill(T::from_elem(*s));
        }
    } else {
        let common = src_size.min(lanes);
        for (row, s) in head.chunks_exact_mut(lanes).zip(src.chunks_exact(src_size)) {
            for (o, v) in row[..common].iter_mut().zip(s) {
                *o = T::from_elem(*v);
            }
            row[common..].fill(T::default());
        }
    }
    tail.fill(T::default());
}

impl Block {
    /// Makes input `node`'s block available as `lanes` lanes of `T`; `k` names a scratch
    /// buffer for the cases that need a converted or broadcast copy.
    pub(super) fn prepare<T: Lane>(
        &mut self,
        node: &NodeRef,
        lanes: u32,
        k: usize,
    ) -> Result<View> {
        let (n, lanes) = (self.n, lanes as usize);
        let size = node.meta.size as usize;
        if let Some(slot) = self.slot_ids.iter().position(|&id| id == node.id) {
            if size == lanes && self.slots[slot].class() == T::CLASS {
                return Ok(View::Slot(slot));
            }
            let tmp = scratch::<T>(&mut self.tmps, k, n * lanes)?;
            with_buf!(&self.slots[slot], s => expand(&s[..n * size], size, n, n, lanes, tmp));
            return Ok(View::Tmp(k));
        }
        let index = self.leaf_index(node)?;
        let value = self.leaves[index].clone();
        let column = value
            .host_column()
            .ok_or_else(|| internal("leaf in host memory"))?;
        if node.meta.constant {
            let key = (node.id, lanes, T::CLASS);
            if let Some(i) = self.consts.iter().position(|(k, _)| *k == key) {
                return Ok(View::Const(i));
            }
            let rows = self.block_rows;
            let mut buf = Buf::try_new(T::CLASS, rows * lanes)?;
            with_column_data!(&column.data, s => expand(s, size, 1, 1, lanes, &mut T::of_mut(&mut buf)[..lanes]));
            let first: Vec<T> = T::of(&buf)[..lanes].to_vec();
            for row in T::of_mut(&mut buf).chunks_exact_mut(lanes) {
                row.copy_from_slice(&first);
            }
            self.consts.push((key, buf));
            return Ok(View::Const(self.consts.len() - 1));
        }
        let r0 = self.r0 as usize;
        let avail = (column.rows as usize).saturating_sub(r0);
        if size == lanes
            && column.dtype().bits() == 32
            && column.dtype().class() == T::CLASS
            && avail >= n
        {
            return Ok(View::Leaf { index, lanes });
        }
        let tmp = scratch::<T>(&mut self.tmps, k, n * lanes)?;
        let start = (r0 * size).min(column.data.len());
        with_column_data!(&column.data, s => expand(&s[start..], size, avail, n, lanes, tmp));
        Ok(View::Tmp(k))
    }

    /// Whether `node` is a constant leaf whose every value is a value of `class` (so a
    /// comparison with it in that class is exact).
    pub(super) fn constant_exactly_in(&mut self, node: &NodeRef, class: Class) -> bool {
        let known = self
            .exact_constants
            .iter()
            .find(|(id, c, _)| *id == node.id && *c == class);
        if let Some(&(_, _, exact)) = known {
            return exact;
        }
        let exact = self.constant_values_in(node, class);
        self.exact_constants.push((node.id, class, exact));
        exact
    }

    fn constant_values_in(&self, node: &NodeRef, class: Class) -> bool {
        let column = match self.leaf_index(node) {
            Ok(index) if node.meta.constant && !self.slot_ids.contains(&node.id) => {
                self.column(index)
            }
            _ => return false,
        };
        let exact = |v: f64| match class {
            Class::F => v.is_nan() || v as f32 as f64 == v,
            Class::I => v.fract() == 0.0 && (i32::MIN as f64..=i32::MAX as f64).contains(&v),
            Class::U => v.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&v),
        };
        with_column_data!(&column.data, s => s.iter().all(|v| exact(v.to_f64())))
    }

    /// The host column of leaf `index`, read at the row (never bound in parts; every leaf
    /// is checked to be in host memory).
    pub(super) fn column(&self, index: usize) -> &Column {
        self.leaves[index]
            .host_column()
            .expect("leaves are checked to be in host memory")
    }

    /// The block's first row, counted from the whole pass's first row.
    pub(super) fn pass_row(&self) -> usize {
        (self.first_row + self.r0 as u64) as usize
    }

    /// The value of leaf `node` (an input read whole).
    pub(super) fn leaf(&self, node: &NodeRef) -> Result<&Rc<Value>> {
        Ok(&self.leaves[self.leaf_index(node)?])
    }

    pub(super) fn leaf_index(&self, node: &NodeRef) -> Result<usize> {
        self.leaf_ids
            .iter()
            .position(|&id| id == node.id)
            .ok_or_else(|| internal(format!("t{} is not an input of this pass", node.id)))
    }

    pub(super) fn view<T: Lane>(&self, view: View, lanes: usize) -> &[T] {
        let len = self.n * lanes;
        match view {
            View::Slot(i) => &T::of(&self.slots[i])[..len],
            View::Const(i) => &T::of(&self.consts[i].1)[..len],
            View::Tmp(i) => &T::of(&self.tmps[i])[..len],
            View::Leaf { index, lanes } => {
                let start = self.r0 as usize * lanes;
                let data = &self.column(index).data;
                leaf_slice::<T>(data, start, self.n * lanes)
            }
        }
    }
}

/// Scratch buffer `k` as `len` elements of `T`, reused across blocks.
fn scratch<T: Lane>(tmps: &mut Vec<Buf>, k: usize, len: usize) -> Result<&mut [T]> {
    while tmps.len() <= k {
        tmps.push(Buf::new(T::CLASS, 0));
    }
    if tmps[k].class() != T::CLASS || T::of(&tmps[k]).len() < len {
        tmps[k] = Buf::try_new(T::CLASS, len)?;
    }
    Ok(&mut T::of_mut(&mut tmps[k])[..len])
}

fn leaf_slice<T: Lane>(data: &ColumnData, start: usize, len: usize) -> &[T] {
    fn cast<S: Elem, T: Elem>(s: &[S]) -> &[T] {
        assert_eq!(
            S::DTYPE.class(),
            T::DTYPE.class(),
            "leaf views are only made for matching classes"
        );
        // Same class and width: identical layout.
        unsafe { std::slice::from_raw_parts(s.as_ptr() as *const T, s.len()) }
    }
    with_column_data!(data, v => &cast::<_, T>(v)[start..start + len])
}
