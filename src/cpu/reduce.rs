//! Reductions on the CPU, with the state rules of the GPU kernels (`wgsl::reduce`): rows
//! fold into per-lane states a block at a time, and block states combine in a binary-counter
//! tree (pairwise order, so a float sum does not drift with the row count). A chunk's
//! partial is stored as the GPU backends store theirs: up to two 32-bit words per lane.

use std::rc::Rc;

use super::lane::{Buf, Lane};
use super::{append_block, internal, Block, CpuDevice};
use crate::column::{try_vec, Column};
use crate::dtype::{Class, DType};
use crate::engine::{DeviceModel, ReductionModel, Reductions, Transfers};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{Node, NodeRef, ReduceKind, Reduction};
use crate::memory::Home;
use crate::plan::Region;
use crate::value::Value;

/// One lane's state as the device stores it.
pub type Words = [u32; 2];

/// Partial states on the CPU: `parts` rows of `lanes` states.
pub struct CpuStates {
    lanes: usize,
    words: Vec<Words>,
}

impl CpuStates {
    pub fn new(lanes: u32, parts: u32) -> Result<CpuStates> {
        let len = (lanes as usize)
            .checked_mul(parts as usize)
            .ok_or_else(|| {
                GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    format!("{parts} partial states of {lanes} lanes exceed this build's memory"),
                )
            })?;
        let mut words = try_vec(len, "reduction partials")?;
        words.resize(len, [0, 0]);
        Ok(CpuStates {
            lanes: lanes as usize,
            words,
        })
    }
}

/// A 32-bit lane value as a state word.
trait Word: Copy {
    fn to_word(self) -> u32;
    fn from_word(word: u32) -> Self;
}

impl Word for f32 {
    fn to_word(self) -> u32 {
        self.to_bits()
    }
    fn from_word(word: u32) -> Self {
        f32::from_bits(word)
    }
}

impl Word for i32 {
    fn to_word(self) -> u32 {
        self as u32
    }
    fn from_word(word: u32) -> Self {
        word as i32
    }
}

impl Word for u32 {
    fn to_word(self) -> u32 {
        self
    }
    fn from_word(word: u32) -> Self {
        word
    }
}

/// What one reduction does with values of `T`: its state, fold step and combine. A rule is
/// a value (the arg-reductions' direction is data, so both share one instance per type).
trait Rule<T: Lane + Word>: Copy {
    type S: Copy;
    /// Whether `add` reads the row (the arg-reductions).
    const NEEDS_ROW: bool;
    fn identity(&self) -> Self::S;
    fn add(&self, s: Self::S, v: T, row: i32) -> Self::S;
    /// `x` holds rows before `y`'s.
    fn combine(&self, x: Self::S, y: Self::S) -> Self::S;
    fn pack(&self, s: Self::S) -> Words;
    fn unpack(&self, w: Words) -> Self::S;
    /// Folds a block of rows of `lanes` lanes into `states` (one per lane) by a faster path
    /// than `add` row by row, where the rule has one; false: not handled.
    fn fold_block(
        &self,
        _states: &mut [Self::S],
        _values: &[T],
        _lanes: usize,
        _first_row: i32,
    ) -> bool {
        false
    }
}

fn is_nan<T: Lane>(v: T) -> bool {
    v.partial_cmp(&v).is_none()
}

#[derive(Clone, Copy)]
struct Sum;
impl<T: Lane + Word> Rule<T> for Sum {
    type S = T;
    const NEEDS_ROW: bool = false;
    #[inline(always)]
    fn identity(&self) -> T {
        T::default()
    }
    #[inline(always)]
    fn add(&self, s: T, v: T, _: i32) -> T {
        s.add(v)
    }
    #[inline(always)]
    fn combine(&self, x: T, y: T) -> T {
        x.add(y)
    }
    fn pack(&self, s: T) -> Words {
        [s.to_word(), 0]
    }
    fn unpack(&self, w: Words) -> T {
        T::from_word(w[0])
    }
}

/// `[min, max]`, NaN ignored (`min`, `max` and `extent` share it).
#[derive(Clone, Copy)]
struct MinMax;
impl<T: Lane + Word> Rule<T> for MinMax {
    type S = (T, T);
    const NEEDS_ROW: bool = false;
    #[inline(always)]
    fn identity(&self) -> (T, T) {
        (T::MIN_IDENTITY, T::MAX_IDENTITY)
    }
    #[inline(always)]
    fn add(&self, s: (T, T), v: T, _: i32) -> (T, T) {
        (s.0.fold_min(v), s.1.fold_max(v))
    }
    #[inline(always)]
    fn combine(&self, x: (T, T), y: (T, T)) -> (T, T) {
        (x.0.fold_min(y.0), x.1.fold_max(y.1))
    }
    fn pack(&self, s: (T, T)) -> Words {
        [s.0.to_word(), s.1.to_word()]
    }
    fn unpack(&self, w: Words) -> (T, T) {
        (T::from_word(w[0]), T::from_word(w[1]))
    }
}

/// A float sum and a count.
#[derive(Clone, Copy)]
struct Mean;
impl<T: Lane + Word> Rule<T> for Mean {
    type S = (f32, u32);
    const NEEDS_ROW: bool = false;
    #[inline(always)]
    fn identity(&self) -> (f32, u32) {
        (0.0, 0)
    }
    #[inline(always)]
    fn add(&self, s: (f32, u32), v: T, _: i32) -> (f32, u32) {
        (s.0 + v.to_f32(), s.1.wrapping_add(1))
    }
    #[inline(always)]
    fn combine(&self, x: (f32, u32), y: (f32, u32)) -> (f32, u32) {
        (x.0 + y.0, x.1.wrapping_add(y.1))
    }
    fn pack(&self, s: (f32, u32)) -> Words {
        [s.0.to_bits(), s.1]
    }
    fn unpack(&self, w: Words) -> (f32, u32) {
        (f32::from_bits(w[0]), w[1])
    }
}

/// The first row holding the least (`max == false`) or greatest value, NaN ignored; -1:
/// none. The direction is data, not a type: argmin and argmax share each type's folder.
#[derive(Clone, Copy)]
struct Arg {
    max: bool,
}

impl Arg {
    #[inline(always)]
    fn beats<T: Lane>(&self, v: T, than: T) -> bool {
        if self.max {
            v > than
        } else {
            v < than
        }
    }
}

impl<T: Lane + Word> Rule<T> for Arg {
    type S = (T, i32);
    const NEEDS_ROW: bool = true;
    #[inline(always)]
    fn identity(&self) -> (T, i32) {
        (T::default(), -1)
    }
    #[inline(always)]
    fn add(&self, s: (T, i32), v: T, row: i32) -> (T, i32) {
        if !is_nan(v) && (s.1 < 0 || self.beats(v, s.0)) {
            (v, row)
        } else {
            s
        }
    }
    #[inline(always)]
    fn combine(&self, x: (T, i32), y: (T, i32)) -> (T, i32) {
        if y.1 < 0 {
            return x;
        }
        if x.1 < 0 {
            return y;
        }
        if self.beats(y.0, x.0) || (y.0 == x.0 && y.1 < x.1) {
            y
        } else {
            x
        }
    }
    fn pack(&self, s: (T, i32)) -> Words {
        [s.0.to_word(), s.1 as u32]
    }
    fn unpack(&self, w: Words) -> (T, i32) {
        (T::from_word(w[0]), w[1] as i32)
    }
    /// One lane: the block's extreme number in a branch-free (vectorizable) pass, then a scan
    /// for its first row only when it beats the state (on ties the state's earlier row stays).
    fn fold_block(
        &self,
        states: &mut [(T, i32)],
        values: &[T],
        lanes: usize,
        first_row: i32,
    ) -> bool {
        if lanes != 1 {
            return false;
        }
        let extreme = match self.max {
            true => extreme_of::<T, true>(values),
            false => extreme_of::<T, false>(values),
        };
        let (value, row) = states[0];
        if row < 0 || self.beats(extreme, value) {
            // None when the block holds only NaN (the identity is then no value of it).
            if let Some(i) = values.iter().position(|&v| v == extreme) {
                states[0] = (extreme, first_row.wrapping_add(i as i32));
            }
        }
        true
    }
}

/// The least (`MAX == false`) or greatest number of `values`, NaN skipped (the fold's
/// identity where there is none), in a branch-free pass of UNROLL states.
#[inline(never)]
fn extreme_of<T: Lane, const MAX: bool>(values: &[T]) -> T {
    let identity = if MAX {
        T::MAX_IDENTITY
    } else {
        T::MIN_IDENTITY
    };
    let fold = |a: T, b: T| if MAX { a.fold_max(b) } else { a.fold_min(b) };
    let mut extremes = [identity; UNROLL];
    let mut steps = values.chunks_exact(UNROLL);
    for step in &mut steps {
        for (e, v) in extremes.iter_mut().zip(step) {
            *e = fold(*e, *v);
        }
    }
    (steps.remainder().iter()).fold(extremes.into_iter().fold(identity, fold), |a, b| {
        fold(a, *b)
    })
}

/// Rows folded per step of the block loop: a state per lane per step keeps the loop free of
/// a dependency chain (and vectorizable for sums).
const UNROLL: usize = 16;

/// A chunk's fold: per-lane block states merged in a binary-counter tree.
pub(super) trait ChunkFold {
    /// Folds the `block.n` rows of the current block, the first being row `first_row`.
    fn fold(&mut self, block: &mut Block, first_row: i64) -> Result<()>;
    /// The chunk's states, one per lane.
    fn finish(self: Box<Self>) -> Result<Vec<Words>>;
}

struct Folder<T: Lane + Word, R: Rule<T>> {
    rule: R,
    input: NodeRef,
    validity: Option<NodeRef>,
    lanes: usize,
    /// Block states not yet merged, with their tree level (oldest first).
    stack: Vec<(u32, Vec<R::S>)>,
    /// Per step lane states of the block loop.
    steps: Vec<R::S>,
}

impl<T: Lane + Word, R: Rule<T>> Folder<T, R> {
    fn new(rule: R, input: &NodeRef, validity: Option<&NodeRef>) -> Result<Self> {
        let lanes = input.meta.size as usize;
        // Wide rows fold one row per step: 16 rows of 10,000 lanes would be a large buffer.
        let unroll = if lanes <= 64 { UNROLL } else { 1 };
        let mut steps = try_vec(lanes * unroll, "reduction states")?;
        steps.resize(lanes * unroll, rule.identity());
        Ok(Folder {
            rule,
            input: input.clone(),
            validity: validity.cloned(),
            lanes,
            stack: Vec::new(),
            steps,
        })
    }

    /// Pushes one block's lane states, merging equal levels (older on the left).
    fn push(&mut self, mut states: Vec<R::S>) {
        let mut level = 0;
        while let Some((top, _)) = self.stack.last() {
            if *top != level {
                break;
            }
            let (_, older) = self.stack.pop().expect("checked above");
            for (newer, old) in states.iter_mut().zip(older) {
                *newer = self.rule.combine(old, *newer);
            }
            level += 1;
        }
        self.stack.push((level, states));
    }

    fn fold_values(&mut self, values: &[T], first_row: i64) -> Result<Vec<R::S>> {
        let (lanes, rule) = (self.lanes, self.rule);
        // The block's lane states (one allocation per block: the tree keeps them).
        let mut states = try_vec(lanes, "reduction states")?;
        states.resize(lanes, rule.identity());
        if rule.fold_block(&mut states, values, lanes, first_row as i32) {
            return Ok(states);
        }
        let width = self.steps.len();
        let steps = &mut self.steps;
        steps.fill(rule.identity());
        let rows_per_step = width / lanes;
        let mut chunks = values.chunks_exact(width);
        // Rows past i32 only reach reductions that never read them (arg-reductions are
        // limited to i32 rows): wrapping keeps the loop free of overflow checks.
        let mut row = first_row as i32;
        for chunk in &mut chunks {
            if R::NEEDS_ROW {
                let rows = steps.chunks_exact_mut(lanes).zip(chunk.chunks_exact(lanes));
                for (k, (states, row_values)) in rows.enumerate() {
                    let at = row.wrapping_add(k as i32);
                    for (s, v) in states.iter_mut().zip(row_values) {
                        *s = rule.add(*s, *v, at);
                    }
                }
            } else {
                for (s, v) in steps.iter_mut().zip(chunk) {
                    *s = rule.add(*s, *v, 0);
                }
            }
            row = row.wrapping_add(rows_per_step as i32);
        }
        states.copy_from_slice(&steps[..lanes]);
        // Step k holds rows k, k + steps, ...: combined in step order, ties still go to the
        // lower row (the arg-reductions compare rows on equal values).
        for step in steps[lanes..].chunks_exact(lanes) {
            for (s, t) in states.iter_mut().zip(step) {
                *s = rule.combine(*s, *t);
            }
        }
        for (i, v) in chunks.remainder().iter().enumerate() {
            let lane = i % lanes;
            states[lane] = rule.add(states[lane], *v, row.wrapping_add((i / lanes) as i32));
        }
        Ok(states)
    }

    fn fold_valid(
        &self,
        values: &[T],
        flags: &[u32],
        per_lane: bool,
        first_row: i64,
    ) -> Result<Vec<R::S>> {
        let (lanes, rule) = (self.lanes, self.rule);
        let mut states = try_vec(lanes, "reduction states")?;
        states.resize(lanes, rule.identity());
        for (r, row) in values.chunks_exact(lanes).enumerate() {
            let at = first_row.wrapping_add(r as i64) as i32;
            for (lane, (s, v)) in states.iter_mut().zip(row).enumerate() {
                let flag = if per_lane {
                    flags[r * lanes + lane]
                } else {
                    flags[r]
                };
                if flag != 0 {
                    *s = rule.add(*s, *v, at);
                }
            }
        }
        Ok(states)
    }
}

impl<T: Lane + Word, R: Rule<T> + 'static> ChunkFold for Folder<T, R> {
    fn fold(&mut self, block: &mut Block, first_row: i64) -> Result<()> {
        let lanes = self.lanes as u32;
        let input = self.input.clone();
        let view = block.prepare::<T>(&input, lanes, 0)?;
        let states = match self.validity.clone() {
            None => self.fold_values(block.view::<T>(view, lanes as usize), first_row)?,
            Some(validity) => {
                let flags = block.prepare::<u32>(&validity, validity.meta.size, 1)?;
                let per_lane = validity.meta.size > 1;
                let flags = block.view::<u32>(flags, validity.meta.size as usize);
                self.fold_valid(
                    block.view::<T>(view, lanes as usize),
                    flags,
                    per_lane,
                    first_row,
                )?
            }
        };
        self.push(states);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<Words>> {
        let mut levels = self.stack.into_iter();
        let mut states = match levels.next() {
            Some((_, first)) => first,
            None => {
                let mut empty = try_vec(self.lanes, "reduction states")?;
                empty.resize(self.lanes, self.rule.identity());
                empty
            }
        };
        for (_, newer) in levels {
            for (s, n) in states.iter_mut().zip(newer) {
                *s = self.rule.combine(*s, n);
            }
        }
        let mut words = try_vec(states.len(), "reduction states")?;
        words.extend(states.into_iter().map(|s| self.rule.pack(s)));
        Ok(words)
    }
}

/// Runs `$body` with `$r` bound to the rule of `$kind` (a value).
macro_rules! dispatch_rule {
    ($kind:expr, $r:ident => $body:block) => {
        match $kind {
            ReduceKind::Sum => {
                let $r = Sum;
                $body
            }
            ReduceKind::Min | ReduceKind::Max | ReduceKind::Extent => {
                let $r = MinMax;
                $body
            }
            ReduceKind::Mean => {
                let $r = Mean;
                $body
            }
            ReduceKind::ArgMin | ReduceKind::ArgMax => {
                let $r = Arg {
                    max: $kind == ReduceKind::ArgMax,
                };
                $body
            }
        }
    };
}

/// The fold of one chunk of `input` (skipping rows or lanes whose `validity` flag is 0).
pub(super) fn chunk_fold(
    kind: ReduceKind,
    input: &NodeRef,
    validity: Option<&NodeRef>,
) -> Result<Box<dyn ChunkFold>> {
    dispatch_class!(input.meta.dtype.class(), T => {
        dispatch_rule!(kind, rule => {
            Ok(Box::new(Folder::<T, _>::new(rule, input, validity)?) as Box<dyn ChunkFold>)
        })
    })
}

/// Stores a chunk's lane states as part `part`.
pub(super) fn store_part(states: &mut CpuStates, part: u32, words: &[Words]) -> Result<()> {
    let start = part as usize * states.lanes;
    states
        .words
        .get_mut(start..start + states.lanes)
        .ok_or_else(|| internal("a partial past the reduction's parts"))?
        .copy_from_slice(words);
    Ok(())
}

/// One combine round: partials `j * every ..` folded into partial `j`, in order.
pub(super) fn combine(
    kind: ReduceKind,
    class: Class,
    states: &CpuStates,
    parts: u32,
    every: u32,
) -> Result<CpuStates> {
    fn round<T: Lane + Word, R: Rule<T>>(
        rule: R,
        states: &CpuStates,
        parts: usize,
        every: usize,
    ) -> Result<CpuStates> {
        let lanes = states.lanes;
        let out_parts = parts.div_ceil(every);
        let mut out = CpuStates::new(lanes as u32, out_parts as u32)?;
        for j in 0..out_parts {
            for lane in 0..lanes {
                let mut s = rule.identity();
                for p in j * every..((j + 1) * every).min(parts) {
                    s = rule.combine(s, rule.unpack(states.words[p * lanes + lane]));
                }
                out.words[j * lanes + lane] = rule.pack(s);
            }
        }
        Ok(out)
    }
    dispatch_class!(class, T => {
        dispatch_rule!(kind, rule => { round::<T, _>(rule, states, parts as usize, every as usize) })
    })
}

/// The reduction's output (`dtype` values, `outputs` per lane) from the one partial left.
pub(super) fn finish(kind: ReduceKind, input: DType, states: &CpuStates) -> Result<Column> {
    let lanes = states.lanes;
    let words = &states.words[..lanes];
    let out_type = kind.output_type(input);
    fn lane_values<T: Lane + Word>(kind: ReduceKind, words: &[Words]) -> Result<Buf> {
        let none = T::from_elem(f32::NAN);
        Ok(match kind {
            ReduceKind::Sum => Buf::collect(words.iter().map(|w| T::from_word(w[0])))?,
            ReduceKind::Min | ReduceKind::Max | ReduceKind::Extent => {
                let mut out = try_vec(words.len() * kind.outputs() as usize, "a reduction")?;
                for w in words {
                    let (lo, hi) = Rule::<T>::unpack(&MinMax, *w);
                    // A lane with no value but NaN (or null) was never updated.
                    let (lo, hi) = if lo > hi { (none, none) } else { (lo, hi) };
                    match kind {
                        ReduceKind::Min => out.push(lo),
                        ReduceKind::Max => out.push(hi),
                        _ => out.extend([lo, hi]),
                    }
                }
                Buf::collect(out)?
            }
            ReduceKind::Mean => Buf::collect(words.iter().map(|w| {
                let (sum, count) = Rule::<T>::unpack(&Mean, *w);
                if count == 0 {
                    f32::NAN
                } else {
                    sum / count as f32
                }
            }))?,
            ReduceKind::ArgMin | ReduceKind::ArgMax => {
                Buf::collect(words.iter().map(|w| w[1] as i32))?
            }
        })
    }
    let values = dispatch_class!(input.class(), T => { lane_values::<T>(kind, words)? });
    let len = lanes * kind.outputs() as usize;
    let size = match kind {
        ReduceKind::Extent => 2,
        _ => lanes as u32,
    };
    let mut column = Column::empty(out_type, size)?;
    append_block(&values, &mut column.data, len);
    column.rows = (len / column.size as usize) as u32;
    Ok(column)
}

impl ReductionModel for CpuDevice {
    fn reduction_tail_kernels(&self, _: &Node) -> (u64, u64) {
        (1, 1)
    }
}

impl Reductions for CpuDevice {
    type States = CpuStates;
    fn reduction_states(&self, _: &mut Home, root: &Node, parts: u32) -> Result<CpuStates> {
        CpuStates::new(root.inputs[0].meta.size, parts)
    }
    async fn reduce_chunk(
        &self,
        _: &mut Home,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &mut CpuStates,
        part: u32,
    ) -> Result<()> {
        let words = super::region::reduce_region(task, leaves, first_row)?;
        self.core().counters.add_kernels(1);
        store_part(states, part, &words)
    }
    async fn combine_states(
        &self,
        _: &mut Home,
        root: &Node,
        states: CpuStates,
        parts: u32,
        every: u32,
    ) -> Result<CpuStates> {
        let kind = Reduction::kind_of(root)?;
        self.core().counters.add_kernels(1);
        combine(
            kind,
            root.inputs[0].meta.dtype.class(),
            &states,
            parts,
            every,
        )
    }
    async fn finish_reduction(
        &self,
        home: &mut Home,
        region: &Region,
        states: CpuStates,
    ) -> Result<Value> {
        let root = &region.root;
        let column = finish(
            Reduction::kind_of(root)?,
            root.inputs[0].meta.dtype,
            &states,
        )?;
        self.core().counters.add_kernels(1);
        self.upload(home, &column)
    }
}
