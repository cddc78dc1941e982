//! Reductions over all rows (`sum min max mean argmin argmax extent`): what each computes,
//! its output type, the per-lane state every backend folds rows into, and the tree of
//! combine rounds over chunk partials (api.md's `splitEvery`).

use super::chunked::single_chunk;
use super::{Meta, Node, NodeRef, Op};
use crate::column::element_count;
use crate::dtype::{Class, DType};
use crate::error::{ErrorCode, GpuTableError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Min,
    Max,
    Mean,
    ArgMin,
    ArgMax,
    /// `[min, max]` per lane, as rows of 2.
    Extent,
}

/// A reduction op: what it computes, and how many partials each combine takes at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reduction {
    pub kind: ReduceKind,
    pub split_every: u32,
}

/// api.md's default `splitEvery`.
pub const DEFAULT_SPLIT_EVERY: u32 = 4;

impl ReduceKind {
    pub const ALL: [ReduceKind; 7] = [
        ReduceKind::Sum,
        ReduceKind::Min,
        ReduceKind::Max,
        ReduceKind::Mean,
        ReduceKind::ArgMin,
        ReduceKind::ArgMax,
        ReduceKind::Extent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Min => "min",
            ReduceKind::Max => "max",
            ReduceKind::Mean => "mean",
            ReduceKind::ArgMin => "argmin",
            ReduceKind::ArgMax => "argmax",
            ReduceKind::Extent => "extent",
        }
    }

    pub fn parse(name: &str) -> Result<ReduceKind> {
        ReduceKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                GpuTableError::invalid(format!(
                    "unknown reduction '{name}'; expected sum min max mean argmin argmax extent"
                ))
            })
    }

    /// Output values per input lane.
    pub fn outputs(self) -> u32 {
        match self {
            ReduceKind::Extent => 2,
            _ => 1,
        }
    }

    /// api.md: `sum` float32, sint32 or uint32 by the input's class; `min max extent` keep
    /// the type; `mean` float32; the arg-reductions sint32 row indices.
    pub fn output_type(self, input: DType) -> DType {
        match self {
            ReduceKind::Sum => match input.class() {
                Class::F => DType::F32,
                Class::I => DType::I32,
                Class::U => DType::U32,
            },
            ReduceKind::Min | ReduceKind::Max | ReduceKind::Extent => input,
            ReduceKind::Mean => DType::F32,
            ReduceKind::ArgMin | ReduceKind::ArgMax => DType::I32,
        }
    }

    /// The classes of the 32-bit words of one lane's state, for inputs of `class`: a sum;
    /// a running `[min, max]`; a float sum and a count; a value and its row (-1: none).
    pub fn state_words(self, class: Class) -> Vec<Class> {
        match self {
            ReduceKind::Sum => vec![class],
            ReduceKind::Min | ReduceKind::Max | ReduceKind::Extent => vec![class, class],
            ReduceKind::Mean => vec![Class::F, Class::U],
            ReduceKind::ArgMin | ReduceKind::ArgMax => vec![class, Class::I],
        }
    }
}

impl Reduction {
    /// The reduction a node computes, if it is one.
    pub fn of(node: &Node) -> Option<Reduction> {
        match node.op {
            Op::Reduce(reduction) => Some(reduction),
            _ => None,
        }
    }

    /// What the reduction `node` computes (an internal error for any other node: backends
    /// are handed reduction roots only).
    pub fn kind_of(node: &Node) -> Result<ReduceKind> {
        Reduction::of(node)
            .map(|r| r.kind)
            .ok_or_else(|| GpuTableError::new(ErrorCode::Internal, "not a reduction"))
    }

    /// 32-bit words of one lane's state of the reduction `node`.
    pub fn state_words_of(node: &Node) -> usize {
        let class = node.inputs[0].meta.dtype.class();
        Reduction::of(node).map_or(2, |r| r.kind.state_words(class).len())
    }
}

/// `kind` over every row of `x`, skipping rows (or lanes) whose `validity` flag is 0.
/// `validity`: uint8, one flag per row or per lane, as long as `x`; by default `x`'s nulls.
/// A counted `x` is reduced over the rows of its result; no row left (or none valid) is
/// `EMPTY_INPUT` but for sum.
pub fn reduce(
    kind: ReduceKind,
    x: &NodeRef,
    validity: Option<&NodeRef>,
    split_every: u32,
) -> Result<NodeRef> {
    x.check_alive()?;
    // Rows past a count, or null ones, are skipped as a mask drops them: none left is
    // EMPTY_INPUT but for sum (a column of nulls has no value to give). Flags in host
    // memory with a valid row need no count.
    let flags = validity.or(x.validity()).filter(|v| v.meta.size == 1);
    let may_be_empty = flags.is_some_and(|v| !stored_flag_set(v));
    let skips = x.counted().is_some() || (may_be_empty && kind != ReduceKind::Sum);
    if skips && !x.meta.constant {
        let every_row = super::source(crate::column::ColumnData::U8(vec![1]), 1, true)?;
        return reduce_where(kind, x, validity, &every_row, None, split_every);
    }
    reduce_flagged(kind, x, validity, split_every)
}

/// Whether `flags` (uint8) are stored in host memory with a nonzero flag (most often the
/// first): a reduction skipping the rows they clear has a row left.
fn stored_flag_set(flags: &NodeRef) -> bool {
    let Some(output) = flags.host_output() else {
        return false;
    };
    (output.chunks.iter()).any(|chunk| match chunk.host_column().map(|c| &c.data) {
        Some(crate::column::ColumnData::U8(values)) => values.iter().any(|&f| f != 0),
        _ => false,
    })
}

/// `reduce` of the rows `validity` flags (x is read over its whole capacity).
fn reduce_flagged(
    kind: ReduceKind,
    x: &NodeRef,
    validity: Option<&NodeRef>,
    split_every: u32,
) -> Result<NodeRef> {
    if split_every < 2 {
        return Err(GpuTableError::invalid(format!(
            "splitEvery must be an integer of at least 2, got {split_every}"
        )));
    }
    if matches!(kind, ReduceKind::ArgMin | ReduceKind::ArgMax) && x.meta.length > i32::MAX as u32 {
        return Err(GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{} returns sint32 row indices; {} rows do not fit",
                kind.name(),
                x.meta.length
            ),
        ));
    }
    let mut inputs = vec![x.clone()];
    if let Some(validity) = validity.or(x.validity()) {
        validity.check_alive()?;
        let lanes_ok = validity.meta.size == 1 || validity.meta.size == x.meta.size;
        if validity.meta.dtype != DType::U8
            || !lanes_ok
            || validity.meta.length != x.meta.length
            || validity.meta.constant != x.meta.constant
        {
            return Err(GpuTableError::invalid(format!(
                "validity must be uint8 with 1 or {} flags per row and {} rows, got {} x {} with {} rows",
                x.meta.size,
                x.meta.length,
                validity.meta.dtype.name(),
                validity.meta.size,
                validity.meta.length
            )));
        }
        inputs.push(validity.clone());
    }
    let dtype = kind.output_type(x.meta.dtype);
    let meta = match kind {
        ReduceKind::Extent => Meta {
            dtype,
            size: 2,
            length: x.meta.size,
            constant: false,
        },
        // One constant row: it broadcasts like a literal where other columns use it.
        _ => Meta {
            dtype,
            size: x.meta.size,
            length: 1,
            constant: true,
        },
    };
    element_count(meta.length as u64, meta.size, meta.dtype)?;
    Ok(Node::new(
        Op::Reduce(Reduction { kind, split_every }),
        inputs,
        meta,
        single_chunk(meta.length),
        None,
    ))
}

/// Per row of `x`, 1 where `mask` (size 1; `x`'s length, or constant) is nonzero and the
/// row is not null (in `x`'s or the mask's validity, by default their nulls), else 0: a
/// fused `uint8` mask.
pub fn where_flags(
    x: &NodeRef,
    mask: &NodeRef,
    validity: Option<&NodeRef>,
    mask_validity: Option<&NodeRef>,
) -> Result<NodeRef> {
    mask.check_alive()?;
    if mask.meta.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "a where mask has size 1, got {}",
            mask.meta.size
        )));
    }
    if !mask.meta.constant && (x.meta.constant || mask.meta.length != x.meta.length) {
        return Err(GpuTableError::invalid(format!(
            "a where mask has its column's {} rows or is a constant, got {} rows",
            x.meta.length, mask.meta.length
        )));
    }
    let mut parts = vec![mask.clone()];
    parts.extend(mask_validity.or(mask.validity()).cloned());
    parts.extend(validity.or(x.validity()).cloned());
    // The rows of a counted result (x and the mask are counted alike here).
    let counted = [x, mask]
        .into_iter()
        .find_map(|n| n.counted().filter(|_| !n.meta.constant).map(|c| (n, c)));
    if let Some((node, counted)) = counted {
        parts.push(super::live_flags(node, counted)?);
    }
    parts.dedup_by_key(|p| p.id);
    if mask.meta.constant && !x.meta.constant && parts.len() == 1 {
        // A constant mask over every row of x.
        parts.push(super::flags_like(x, 1)?);
    }
    super::and_flags(&parts)
}

/// `kind` of `x` over the rows `where_flags` keeps. Every reduction but `sum` of no kept
/// row is `EMPTY_INPUT`, found when the evaluation computing it checks its count.
pub fn reduce_where(
    kind: ReduceKind,
    x: &NodeRef,
    validity: Option<&NodeRef>,
    mask: &NodeRef,
    mask_validity: Option<&NodeRef>,
    split_every: u32,
) -> Result<NodeRef> {
    x.check_alive()?;
    mask.check_alive()?;
    // A constant is on each row of a column mask (the mask picks which count).
    let x = &super::constant_as_column(x, Some(mask).filter(|m| !m.meta.constant))?;
    let (aligned, _) = super::counted::align_rows(vec![x.clone(), mask.clone()])?;
    let (x, mask) = (&aligned[0], &aligned[1]);
    let flags = where_flags(x, mask, validity, mask_validity)?;
    let node = match kind {
        // Rows not kept add 0, which changes no sum (a float sum starts at +0): as a select,
        // the mask is computed in the sum's own pass instead of stored as flags.
        ReduceKind::Sum if !x.meta.constant => {
            let zero = super::ops::cast_plain(&super::u32_constant(0)?, x.meta.dtype)?;
            let inputs = vec![flags, x.clone(), zero];
            let kept =
                super::ops::elementwise_plain(Op::Select, inputs, x.meta.dtype, x.meta.size)?;
            return reduce_flagged(kind, &kept, None, split_every);
        }
        _ => reduce_flagged(kind, x, Some(&flags), split_every)?,
    };
    if kind != ReduceKind::Sum {
        // Its own copy of the flags' work: the reduction's pass reads them too.
        let kept = reduce_flagged(ReduceKind::Sum, &super::remade(&flags)?, None, split_every)?;
        let _ = node.check.set(super::Check::KeptRows(kept));
    }
    Ok(node)
}

/// `count(mask)`: the rows whose mask (size 1) is nonzero and not null, as one `uint32` row.
pub fn count(mask: &NodeRef, mask_validity: Option<&NodeRef>) -> Result<NodeRef> {
    let flags = where_flags(mask, mask, None, mask_validity)?;
    reduce_flagged(ReduceKind::Sum, &flags, None, DEFAULT_SPLIT_EVERY)
}

/// The partials left after each combine round when `parts` partials are combined in groups
/// of at most `every` until one is left (`[]` for one partial).
pub fn combine_rounds(parts: u32, every: u32) -> Vec<u32> {
    let mut rounds = Vec::new();
    let mut left = parts.max(1);
    while left > 1 {
        left = left.div_ceil(every.max(2));
        rounds.push(left);
    }
    rounds
}

/// `explain()`'s words for the tree over `parts` partials (`rounds`: `combine_rounds`).
pub fn describe_rounds(parts: u32, rounds: &[u32], every: u32) -> String {
    match rounds.len() {
        0 => "one partial: the final row straight from it".to_string(),
        n => {
            let counts: Vec<String> = std::iter::once(parts)
                .chain(rounds.iter().copied())
                .map(|c| c.to_string())
                .collect();
            format!(
                "tree of {n} combine round{} of at most {every} partials ({}), then the final row",
                if n == 1 { "" } else { "s" },
                counts.join(" -> ")
            )
        }
    }
}

/// `extent(x)` with api.md's default `splitEvery`.
pub fn extent(x: &NodeRef) -> Result<NodeRef> {
    reduce(ReduceKind::Extent, x, None, DEFAULT_SPLIT_EVERY)
}
