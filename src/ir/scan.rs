//! Scans (prefix sums, products, minimums and maximums per lane): `Op::Scan`, a walk the
//! CPU runs as one loop, and elsewhere composed of two per-row ops that every backend runs
//! as ordinary kernels: `GroupFold` folds `SCAN_FAN_IN` consecutive rows into one, level
//! after level until at most `SCAN_FAN_IN` rows are left, and `ScanApply` folds, for each
//! row, the rows before it in its group at every level (at most `SCAN_FAN_IN - 1` reads per
//! level). A fold down to one row would be a pass that no row of the scan reads. Float sums
//! and products come out in an order api.md allows (tree order on the GPUs, eight running
//! sums at a time on the CPU), not as one long running sum.

use super::{single_chunk, Meta, Node, NodeRef, Op, ReduceKind};
use crate::column::element_count;
use crate::error::{GpuTableError, Result};

/// Rows folded into one at each level of a scan.
pub const SCAN_FAN_IN: u32 = 16;

/// How a scan folds rows: per lane, in `sum`'s type (the 32-bit type of the input's class);
/// integers wrap. A minimum or maximum skips NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanFold {
    Sum,
    Prod,
    Min,
    Max,
}

impl ScanFold {
    pub fn name(self) -> &'static str {
        match self {
            ScanFold::Sum => "sum",
            ScanFold::Prod => "prod",
            ScanFold::Min => "min",
            ScanFold::Max => "max",
        }
    }
}

/// Row `j` is the fold of rows `j * SCAN_FAN_IN ..` (at most `SCAN_FAN_IN` of them) of `x`,
/// lane by lane, in `sum`'s type.
pub fn group_fold(x: &NodeRef, fold: ScanFold) -> Result<NodeRef> {
    x.check_alive()?;
    let meta = Meta {
        dtype: ReduceKind::Sum.output_type(x.meta.dtype),
        size: x.meta.size,
        length: x.meta.length.div_ceil(SCAN_FAN_IN),
        constant: false,
    };
    Ok(Node::new(
        Op::GroupFold(fold),
        vec![x.clone()],
        meta,
        single_chunk(meta.length),
        None,
    ))
}

/// Row `r` is the sum of rows `0..r` of `x`, lane by lane, in `sum`'s type (integers wrap;
/// row 0 is 0). Chunked like `x`.
pub fn exclusive_scan(x: &NodeRef) -> Result<NodeRef> {
    scan(x, ScanFold::Sum, false)
}

/// Row `r` is the `fold` of rows `0..r` of `x` (`0..=r` where `inclusive`), lane by lane, in
/// `sum`'s type; an exclusive row 0 folds no row (0, 1, or for a minimum or maximum NaN
/// or the integer type's far end). Chunked like `x`.
pub fn scan(x: &NodeRef, fold: ScanFold, inclusive: bool) -> Result<NodeRef> {
    x.check_alive()?;
    let x = &super::constant_as_column(x, None)?;
    let dtype = ReduceKind::Sum.output_type(x.meta.dtype);
    element_count(x.meta.length as u64, x.meta.size, dtype)?;
    // Scans read 32-bit values (one kernel per class, not per type).
    let x = match x.meta.dtype == dtype {
        true => x.clone(),
        false => super::cast(x, dtype)?,
    };
    Ok(Node::new(
        Op::Scan { fold, inclusive },
        vec![x.clone()],
        x.meta,
        x.chunks.clone(),
        None,
    ))
}

/// The walk `op` of `inputs` (`Op::is_walk`) composed of other ops, for a device that does
/// not run it with its own kernels.
pub fn compose_walk(op: &Op, inputs: &[NodeRef]) -> Result<NodeRef> {
    if *op == Op::Lookup {
        return super::join::compose_lookup(inputs);
    }
    let input =
        (inputs.first()).ok_or_else(|| crate::engine::internal("a walk without its input"))?;
    match *op {
        Op::Compact => super::counted::compose_compaction(input),
        Op::Scan { fold, inclusive } => compose_scan(input, fold, inclusive),
        Op::BinCount { bins } => super::histogram::counts_by_sort(input, bins),
        Op::BinSum { bins } => super::histogram::sums_by_sort(input, bins),
        _ => Err(crate::engine::internal(format!(
            "{} is not a walk",
            op.name()
        ))),
    }
}

/// `Op::Scan` of `x` (of `sum`'s type) as its `GroupFold` levels and a `ScanApply`.
fn compose_scan(x: &NodeRef, fold: ScanFold, inclusive: bool) -> Result<NodeRef> {
    let dtype = x.meta.dtype;
    let mut levels = vec![x.clone()];
    while levels[levels.len() - 1].meta.length > SCAN_FAN_IN {
        let folded = group_fold(&levels[levels.len() - 1], fold)?;
        levels.push(folded);
    }
    let meta = Meta {
        dtype,
        size: x.meta.size,
        length: x.meta.length,
        constant: false,
    };
    Ok(Node::new(
        Op::ScanApply { fold, inclusive },
        levels,
        meta,
        x.chunks.clone(),
        None,
    ))
}

/// The groups before row `row` at each level of a scan: per level, the first row of the
/// group and how many rows of it precede (`row`'s digits in base `SCAN_FAN_IN`).
pub fn scan_digits(row: u64, levels: usize) -> impl Iterator<Item = (u64, u32)> {
    let fan_in = SCAN_FAN_IN as u64;
    (0..levels).scan(row, move |at, _| {
        let digit = *at % fan_in;
        let first = *at - digit;
        *at /= fan_in;
        Some((first, digit as u32))
    })
}

/// For each row of `queries`, the number of rows of `sorted` (non-decreasing, size 1) that
/// are below it (`upper`: at most it): NumPy's `searchsorted` with side 'left' ('right'),
/// as uint32. Values of any types compare exactly, NaN after every number (api.md's
/// `searchSorted`); `sorted` is read whole, but for its null rows.
pub fn search_sorted(sorted: &NodeRef, queries: &NodeRef, upper: bool) -> Result<NodeRef> {
    sorted.check_alive()?;
    queries.check_alive()?;
    if sorted.meta.size != 1 || queries.meta.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "searchSorted needs rows of size 1, got {} and {}",
            sorted.meta.size, queries.meta.size
        )));
    }
    let sorted = &super::constant_as_column(sorted, None)?;
    if let Some(valid) = sorted.validity() {
        // Null rows (sorted last, or first) hold no value: the rows searched are the others
        // (of a counted column, those within its count). The rows kept hold no nulls, so
        // the flags their filter carries are dropped (searched again, they recursed).
        let keep = match sorted.counted() {
            Some(counted) => {
                super::and_flags(&[valid.clone(), super::live_flags(sorted, counted)?])?
            }
            None => valid.clone(),
        };
        let zero = super::u32_constant(0)?;
        let values = super::fill_null(sorted, &zero)?;
        let kept = super::filter(&values, &keep)?;
        return search_sorted(&super::fill_null(&kept, &zero)?, queries, upper);
    }
    if let Some(counted) = sorted.counted() {
        return super::counted::search_counted(sorted, counted, queries, upper);
    }
    let meta = Meta {
        dtype: crate::dtype::DType::U32,
        size: 1,
        length: queries.meta.length,
        constant: queries.meta.constant,
    };
    let chunks = match queries.meta.constant {
        true => single_chunk(1),
        false => queries.chunks.clone(),
    };
    let inputs = vec![sorted.clone(), queries.clone()];
    let node = Node::new(Op::SearchSorted { upper }, inputs, meta, chunks, None);
    // A null query has a null answer.
    super::nulls::inherit(&node, queries)?;
    super::counted::counted_like(node, queries)
}

/// The same values in rows of `size` lanes (row-major order kept): `rows x s` values as
/// `rows * s / size` rows of `size`. The input is read whole.
pub fn reshape(x: &NodeRef, size: u32) -> Result<NodeRef> {
    x.check_alive()?;
    let elements = x.meta.length as u64 * x.meta.size as u64;
    if size == 0 || elements % size as u64 != 0 || x.meta.constant {
        return Err(GpuTableError::invalid(format!(
            "{} values cannot be rows of size {size}",
            elements
        )));
    }
    let length = u32::try_from(elements / size as u64)
        .map_err(|_| GpuTableError::invalid("a reshape past 2^32 rows"))?;
    if x.meta.size == size {
        return Ok(x.clone());
    }
    let meta = Meta {
        dtype: x.meta.dtype,
        size,
        length,
        constant: false,
    };
    Ok(Node::new(
        Op::Reshape,
        vec![x.clone()],
        meta,
        single_chunk(length),
        None,
    ))
}
