//! Grouping (api.md "Grouping and histograms"): `groupBy`, and `unique` and `valueCounts`
//! as its special cases, on one stable sort of the keys. A group is a run of equal keys in
//! the sorted rows; the runs' first rows are a compaction of run-start flags, counted on the
//! device, and every aggregate is read at the runs' bounds: a count as the next run's start
//! less this one's, a sum by a segmented sum (tree order within long runs), `first`/`last`
//! through a running count of the value's non-null rows, and `min max argmin argmax` as the
//! first row of each run of a sort by the keys and then the value (stable: the lowest row
//! of a tie).

use std::cell::RefCell;

use super::chunked::{concat as concat_rows, rechunk as rechunk_rows};
use super::counted::{
    align_rows, attach, compact, counted_like, plain_binary, plain_predicate, plain_select,
    row_numbers_of, u32_column, zero_of,
};
use super::nulls::with_validity;
use super::ops::{cast_plain, gather, gather_plain, source, u32_constant};
use super::order::{check_size, column_of};
use super::{argsort, filter, group_stages, interleave, scan, segment_sum, single_chunk, swizzle};
use super::{BinaryOp, NodeRef, Nulls, Predicate, ReduceKind, ScanFold};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::error::{GpuTableError, Result};

/// What `groupBy` computes of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupOp {
    Count,
    Sum,
    Min,
    Max,
    Mean,
    ArgMin,
    ArgMax,
    First,
    Last,
}

impl GroupOp {
    pub const ALL: [GroupOp; 9] = [
        GroupOp::Count,
        GroupOp::Sum,
        GroupOp::Min,
        GroupOp::Max,
        GroupOp::Mean,
        GroupOp::ArgMin,
        GroupOp::ArgMax,
        GroupOp::First,
        GroupOp::Last,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GroupOp::Count => "count",
            GroupOp::Sum => "sum",
            GroupOp::Min => "min",
            GroupOp::Max => "max",
            GroupOp::Mean => "mean",
            GroupOp::ArgMin => "argmin",
            GroupOp::ArgMax => "argmax",
            GroupOp::First => "first",
            GroupOp::Last => "last",
        }
    }

    pub fn parse(name: &str) -> Result<GroupOp> {
        GroupOp::ALL
            .into_iter()
            .find(|op| op.name() == name)
            .ok_or_else(|| {
                GpuTableError::invalid(format!(
                    "unknown aggregate '{name}'; expected count sum min max mean argmin \
                     argmax first last"
                ))
            })
    }
}

/// One aggregate of `groupBy`: `op` of `value` (`count` of no value: the group's rows).
#[derive(Clone)]
pub struct Aggregate {
    pub op: GroupOp,
    pub value: Option<NodeRef>,
}

/// `groupBy(keys, aggregates)`: one row per group of rows with equal keys (compared as
/// `argsort` orders them: -0 and +0 one key, NaN one, null rows one), groups in ascending
/// key order (lexicographic; NaN, then null, last): `(keys, aggregates)`, the keys' values
/// and each aggregate's, all counted alike on the device. Aggregates follow the
/// whole-column reductions (null rows skipped; NaN skipped by `min max argmin argmax`); a
/// group with no row to reduce is null where the reduction would have none (`sum`: 0).
pub fn group_by(
    keys: &[NodeRef],
    aggregates: &[Aggregate],
) -> Result<(Vec<NodeRef>, Vec<NodeRef>)> {
    group_by_recorded(keys, aggregates, true)
}

/// `group_by`, its results not recorded for grouping in parts (a part's own group-by).
pub(super) fn group_by_unrecorded(
    keys: &[NodeRef],
    aggregates: &[Aggregate],
) -> Result<(Vec<NodeRef>, Vec<NodeRef>)> {
    group_by_recorded(keys, aggregates, false)
}

fn group_by_recorded(
    keys: &[NodeRef],
    aggregates: &[Aggregate],
    recorded: bool,
) -> Result<(Vec<NodeRef>, Vec<NodeRef>)> {
    if keys.is_empty() {
        return Err(GpuTableError::invalid("groupBy needs at least one key"));
    }
    for key in keys {
        key.check_alive()?;
        check_size(key, "a groupBy key")?;
    }
    let mut inputs = keys.to_vec();
    for aggregate in aggregates {
        match (&aggregate.value, aggregate.op) {
            (Some(value), _) => inputs.push(value.clone()),
            (None, GroupOp::Count) => {}
            (None, op) => {
                return Err(GpuTableError::invalid(format!(
                    "groupBy's {} needs a value to aggregate",
                    op.name()
                )))
            }
        }
    }
    inputs.iter().try_for_each(|x| x.check_alive())?;
    let inputs = rows_alike(inputs)?;
    // Constants (a key or a value) are repeated on the columns' rows: one row where all are.
    let column = inputs.iter().find(|x| !x.meta.constant).cloned();
    let inputs = (inputs.iter())
        .map(|x| super::constant_as_column(x, column.as_ref()))
        .collect::<Result<Vec<_>>>()?;
    let (keys, values) = inputs.split_at(keys.len());
    let grouped = match small_group_by(keys, aggregates, values)? {
        Some(grouped) => grouped,
        None => sorted_group_by(keys, aggregates, values)?,
    };
    if recorded {
        let mut values = values.iter();
        let aligned: Vec<Aggregate> = (aggregates.iter())
            .map(|a| Aggregate {
                op: a.op,
                value: a.value.as_ref().and_then(|_| values.next().cloned()),
            })
            .collect();
        group_stages::record(keys, &aligned, &grouped.0, &grouped.1);
    }
    Ok(grouped)
}

/// The group-by of aligned `keys` and `values` (one per aggregate of a value) by one sort.
fn sorted_group_by(
    keys: &[NodeRef],
    aggregates: &[Aggregate],
    values: &[NodeRef],
) -> Result<(Vec<NodeRef>, Vec<NodeRef>)> {
    let mut values = values.iter();
    let groups = Groups::of(keys)?;
    let key_values = keys
        .iter()
        .map(|k| groups.key(k))
        .collect::<Result<Vec<_>>>()?;
    let results = aggregates
        .iter()
        .map(|aggregate| {
            let value = match aggregate.value {
                Some(_) => values.next(),
                None => None,
            };
            groups.aggregate(aggregate.op, value, keys)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((key_values, results))
}

/// `unique(x)`: the distinct values of a size-1 `x`, ascending (NaN once, last; -0 and +0
/// one value, +0; null rows one null row, after every value).
pub fn unique(x: &NodeRef) -> Result<NodeRef> {
    let x = &column_of(x, "unique's input")?;
    if let Some((values, _)) = small_value_counts(x)? {
        group_stages::record(
            std::slice::from_ref(x),
            &[],
            std::slice::from_ref(&values),
            &[],
        );
        return Ok(values);
    }
    let (mut keys, _) = group_by(std::slice::from_ref(x), &[])?;
    Ok(keys.remove(0))
}

/// `valueCounts(x)`: `(values, counts)`: `unique(x)`, and the rows of `x` holding each
/// (uint32; the null row's: the null rows), counted alike on the device.
pub fn value_counts(x: &NodeRef) -> Result<(NodeRef, NodeRef)> {
    let count = Aggregate {
        op: GroupOp::Count,
        value: None,
    };
    let x = &column_of(x, "valueCounts' input")?;
    if let Some((values, counts)) = small_value_counts(x)? {
        let (keys, results) = (std::slice::from_ref(x), std::slice::from_ref(&counts));
        group_stages::record(
            keys,
            std::slice::from_ref(&count),
            std::slice::from_ref(&values),
            results,
        );
        return Ok((values, counts));
    }
    let (mut keys, mut counts) = group_by(std::slice::from_ref(x), &[count])?;
    Ok((keys.remove(0), counts.remove(0)))
}

/// The bins of a small key with at least a row per bin (fewer rows sort for less than a bin
/// per value): a bin per value of an 8- or 16-bit type, or of the range of a 32-bit integer
/// column held in host memory whose values span at most `RANGE_BINS` (its statistics, as
/// DuckDB's perfect hash aggregate reads them); the bins and the lowest value.
fn small_bins(x: &NodeRef) -> Option<(u32, i64)> {
    let (bins, low) = match x.meta.dtype {
        DType::U8 => (1u32 << 8, 0),
        DType::I8 => (1 << 8, -128),
        DType::U16 => (1 << 16, 0),
        DType::I16 => (1 << 16, -32768),
        DType::I32 | DType::U32 => {
            let (low, high) = host_range(x)?;
            let bins = u32::try_from(high - low + 1)
                .ok()
                .filter(|&b| b <= RANGE_BINS)?;
            (bins, low)
        }
        _ => return None,
    };
    (x.meta.length >= bins && x.meta.size == 1).then_some((bins, low))
}

/// Bins at most of a 32-bit key's range counted sort-free (`small_bins`).
const RANGE_BINS: u32 = 1 << 16;

/// The least and greatest value of a one-lane 32-bit integer column held in host memory (its
/// null rows' stored values included: they widen the range, never narrow it); None where it
/// is not there, is empty or is counted (rows past the count hold anything).
fn host_range(x: &NodeRef) -> Option<(i64, i64)> {
    if x.counted().is_some() || x.meta.constant || x.meta.size != 1 {
        return None;
    }
    x.stored_range(|| read_range(x))
}

/// `host_range` read from the values.
fn read_range(x: &NodeRef) -> Option<(i64, i64)> {
    let output = x.host_output()?;
    let mut range: Option<(i64, i64)> = None;
    for chunk in output.chunks.iter() {
        let data = &chunk.host_column()?.data;
        let extent = match data {
            ColumnData::U32(v) => v.iter().fold(None, |r: Option<(u32, u32)>, &x| {
                Some(r.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
            }),
            ColumnData::I32(v) => v
                .iter()
                .fold(None, |r: Option<(i32, i32)>, &x| {
                    Some(r.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
                })
                .map(|(lo, hi)| (lo as u32, hi as u32)),
            _ => return None,
        };
        let Some((lo, hi)) = extent else {
            continue;
        };
        let (lo, hi) = match data {
            ColumnData::I32(_) => (lo as i32 as i64, hi as i32 as i64),
            _ => (lo as i64, hi as i64),
        };
        range = Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
    }
    range
}

/// The bins of a small key (`small_bins`) as uint32 ids: each row's value less the lowest,
/// `bins` where the row is null or past a filter's count; and where the key has nulls, the
/// uint8 flags of its null rows (within the count).
fn small_ids(x: &NodeRef, bins: u32, low: i64) -> Result<(NodeRef, Option<NodeRef>)> {
    // Each row's place from the lowest value (a type from 0 is its own place), in 32-bit
    // words: the difference of two's complement words is the same for int32 and uint32.
    let place = match low {
        0 => cast_plain(x, DType::U32)?,
        _ => {
            let low_constant = source(ColumnData::I32(vec![low as i32]), 1, true)?;
            let place = plain_binary(
                BinaryOp::Subtract,
                &cast_plain(x, DType::I32)?,
                &low_constant,
            )?;
            cast_plain(&place, DType::U32)?
        }
    };
    // Null rows and rows past a count are in no bin: flags only where there are such rows.
    let ids = match (x.validity(), x.counted()) {
        (None, None) => place,
        _ => {
            let every_row = source(ColumnData::U8(vec![1]), 1, true)?;
            let counted = super::where_flags(x, &every_row, None, None)?;
            plain_select(&counted, &place, &u32_constant(bins)?)?
        }
    };
    let nulls = match x.validity() {
        None => None,
        Some(valid) => {
            let mut nulls = vec![plain_predicate(Predicate::Equal, valid, &u32_constant(0)?)?];
            if let Some(rows) = x.counted() {
                nulls.push(super::live_flags(x, rows)?);
            }
            Some(super::and_flags(&nulls)?)
        }
    };
    Ok((ids, nulls))
}

/// A small key's value per bin (`low`, `low + 1`, ...), then the null key's row where it has
/// nulls.
fn small_keys(x: &NodeRef, bins: u32, low: i64) -> Result<NodeRef> {
    let values_of_bins = super::sequence(bins as f64, low as f64, 1.0)?;
    let values = cast_plain(&values_of_bins, x.meta.dtype)?;
    if x.validity().is_none() {
        return Ok(values);
    }
    let values = concat_rows(&[values, zero_of(x.meta.dtype)?])?;
    let ones = super::flags_like(&values_of_bins, 1)?;
    let flags = concat_rows(&[ones, source(ColumnData::U8(vec![0]), 1, true)?])?;
    with_validity(&values, Some(&flags))
}

/// `value_counts` of a small key (`small_bins`), sort-free where the device adds rows into a
/// bin count (`Op::BinCount`): a counter per bin, then a null row's count, and
/// the values (null last) whose count is not 0, kept by a filter (counted on the device).
fn small_value_counts(x: &NodeRef) -> Result<Option<(NodeRef, NodeRef)>> {
    let Some((bins, low)) = small_bins(x) else {
        return Ok(None);
    };
    let (ids, nulls) = small_ids(x, bins, low)?;
    let mut counts = super::histogram::counts_of_ids(&ids, bins)?;
    if let Some(nulls) = &nulls {
        counts = concat_rows(&[counts, count_flags(nulls)?])?;
    }
    let values = small_keys(x, bins, low)?;
    let keep = plain_predicate(Predicate::Greater, &counts, &u32_constant(0)?)?;
    Ok(Some((filter(&values, &keep)?, filter(&counts, &keep)?)))
}

/// The rows of uint8 `flags` that are 1, as one uint32 row.
fn count_flags(flags: &NodeRef) -> Result<NodeRef> {
    let ones = cast_plain(flags, DType::U32)?;
    super::reduce(ReduceKind::Sum, &ones, None, super::DEFAULT_SPLIT_EVERY)
}

/// `group_by` of one small key (`small_bins`) for counts, sums and means alone: sort-free
/// where the device adds rows into bin counts and sums (`Op::BinCount`, `Op::BinSum`), a row
/// per bin (and one for the key's nulls) kept where it has rows. `values` are the
/// aggregates' values, read alike with the key.
fn small_group_by(
    keys: &[NodeRef],
    aggregates: &[Aggregate],
    values: &[NodeRef],
) -> Result<Option<(Vec<NodeRef>, Vec<NodeRef>)>> {
    let ([key], true) = (
        keys,
        aggregates
            .iter()
            .all(|a| matches!(a.op, GroupOp::Count | GroupOp::Sum | GroupOp::Mean)),
    ) else {
        return Ok(None);
    };
    let Some((bins, low)) = small_bins(key) else {
        return Ok(None);
    };
    if values.iter().any(|v| v.meta.size != 1) {
        return Ok(None);
    }
    let (ids, nulls) = small_ids(key, bins, low)?;
    // Per bin, then the null key's row.
    let with_nulls = |per_bin: NodeRef, of_nulls: &dyn Fn(&NodeRef) -> Result<NodeRef>| match &nulls
    {
        None => Ok(per_bin),
        Some(nulls) => concat_rows(&[per_bin, of_nulls(nulls)?]),
    };
    let rows = with_nulls(super::histogram::counts_of_ids(&ids, bins)?, &count_flags)?;
    // A value's count and sums, made once for every aggregate of it.
    let mut counts: Vec<(u64, NodeRef)> = Vec::new();
    let mut sums: Vec<(u64, DType, NodeRef)> = Vec::new();
    let mut values = values.iter();
    let mut results = Vec::with_capacity(aggregates.len());
    for aggregate in aggregates {
        let value = match aggregate.value {
            Some(_) => values.next(),
            None => None,
        };
        let Some(value) = value else {
            results.push(rows.clone());
            continue;
        };
        // The rows whose value is null are in no bin.
        let (ids, valid) = match value.validity() {
            Some(valid) => (
                plain_select(valid, &ids, &u32_constant(bins)?)?,
                Some(valid),
            ),
            None => (ids.clone(), None),
        };
        let in_nulls = |nulls: &NodeRef| -> Result<NodeRef> {
            match valid {
                Some(valid) => super::and_flags(&[nulls.clone(), valid.clone()]),
                None => Ok(nulls.clone()),
            }
        };
        let mut count = || -> Result<NodeRef> {
            if let Some((_, made)) = counts.iter().find(|(id, _)| *id == value.id) {
                return Ok(made.clone());
            }
            let made = match valid {
                None => rows.clone(),
                Some(_) => {
                    let per_bin = super::histogram::counts_of_ids(&ids, bins)?;
                    with_nulls(per_bin, &|nulls| count_flags(&in_nulls(nulls)?))?
                }
            };
            counts.push((value.id, made.clone()));
            Ok(made)
        };
        let mut sum = |dtype: DType| -> Result<NodeRef> {
            let found = sums
                .iter()
                .find(|(id, d, _)| *id == value.id && *d == dtype);
            if let Some((.., made)) = found {
                return Ok(made.clone());
            }
            let wide = cast_plain(value, dtype)?;
            let per_bin = super::histogram::sums_of_ids(&ids, &wide, bins)?;
            let made = with_nulls(per_bin, &|nulls| {
                let split = super::DEFAULT_SPLIT_EVERY;
                super::reduce(ReduceKind::Sum, &wide, Some(&in_nulls(nulls)?), split)
            })?;
            sums.push((value.id, dtype, made.clone()));
            Ok(made)
        };
        results.push(match aggregate.op {
            GroupOp::Count => count()?,
            GroupOp::Sum => sum(ReduceKind::Sum.output_type(value.meta.dtype))?,
            _ => {
                let count = count()?;
                let sum = sum(DType::F32)?;
                let mean = plain_binary(BinaryOp::Divide, &sum, &cast_plain(&count, DType::F32)?)?;
                let some = plain_predicate(Predicate::Greater, &count, &zero_of(DType::U32)?)?;
                with_validity(&mean, Some(&some))?
            }
        });
    }
    let keep = plain_predicate(Predicate::Greater, &rows, &u32_constant(0)?)?;
    let kept = |x: &NodeRef| filter(x, &keep);
    let keys = vec![kept(&small_keys(key, bins, low)?)?];
    let results = results.iter().map(kept).collect::<Result<Vec<_>>>()?;
    Ok(Some((keys, results)))
}

/// `inputs` (columns and constants) reading the same rows: of one length, and counted
/// alike where any is counted (a counted input with others is read as a shorter column).
fn rows_alike(inputs: Vec<NodeRef>) -> Result<Vec<NodeRef>> {
    let (aligned, counted) = align_rows(inputs)?;
    let mut columns = aligned.iter().filter(|x| !x.meta.constant);
    let rows = columns.next().map_or(0, |x| x.meta.length);
    if let Some(other) = columns.find(|x| x.meta.length != rows) {
        return Err(GpuTableError::invalid(format!(
            "groupBy's keys and values have {rows} and {} rows",
            other.meta.length
        )));
    }
    let Some(counted) = counted else {
        return Ok(aligned);
    };
    aligned
        .into_iter()
        .map(|x| match x.counted() {
            _ if x.meta.constant => Ok(x),
            Some(held) if held.same(&counted) => Ok(x),
            _ => {
                let view = rechunk_rows(&x, single_chunk(x.meta.length))?;
                attach(&view, Some(counted.clone()));
                Ok(view)
            }
        })
        .collect()
}

/// The groups of rows with equal keys: where each starts and ends in the keys' stable sort.
struct Groups {
    /// uint32: the keys' argsort (counted where the keys are).
    order: NodeRef,
    /// uint32, counted (the groups): each group's first row in `order`.
    first: NodeRef,
    /// uint32, over `first`'s capacity: the row of `order` after each group's last (the
    /// sorted rows' count past the groups).
    ends: NodeRef,
    /// uint32, over `first`'s capacity: the input row of each group's first row.
    first_rows: NodeRef,
    /// Nodes made for one value, shared by the aggregates of it (a mean and a sum of one
    /// value read one sort of it).
    made: RefCell<Vec<(Made, Vec<NodeRef>)>>,
}

/// What `Groups` made for a value (by its node id).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Made {
    Sum(u64, DType),
    Valid(u64),
    ValidBounds(u64),
    /// A lane of a value of several.
    Lane(u64, u32),
    /// The rows and values of its groups' extremes, least (false) or greatest (true).
    Extreme(u64, bool),
}

impl Groups {
    fn of(keys: &[NodeRef]) -> Result<Groups> {
        let order = argsort(keys, &[false], Nulls::Last)?;
        let positions = row_numbers_of(&order)?;
        // Row r starts a group where a key (or its nullness) differs from row r - 1's; row 0
        // always does (the row before it wraps past the end and reads no row).
        let before = plain_binary(BinaryOp::Subtract, &positions, &u32_constant(1)?)?;
        let differs = |column: &NodeRef| -> Result<NodeRef> {
            let previous = gather_plain(&before, column)?;
            plain_predicate(Predicate::NotEqual, column, &previous)
        };
        let mut starts = vec![plain_predicate(
            Predicate::Equal,
            &positions,
            &zero_of(DType::U32)?,
        )?];
        for key in keys {
            let sorted = gather(&order, key)?;
            let mut sort_key = super::sort_key(&sorted, false)?;
            if let Some(valid) = sorted.validity() {
                // Null rows are one key, whatever they hold.
                let valid = cast_plain(valid, DType::U32)?;
                sort_key = plain_binary(BinaryOp::Multiply, &sort_key, &valid)?;
                starts.push(differs(&valid)?);
            }
            starts.push(differs(&sort_key)?);
        }
        // Plain flags (no nulls, not counted): the fold is the `or` of them alone.
        let starts = counted_like(super::fold_logic(Predicate::Or, &starts)?, &order)?;
        let first = filter(&positions, &starts)?;
        let groups = match first.counted() {
            Some(c) => c.total.clone(),
            None => return Err(crate::engine::internal("a filter's rows are counted")),
        };
        let rows = match order.counted() {
            Some(c) => c.total.clone(),
            None => u32_constant(order.meta.length)?,
        };
        let next = plain_binary(BinaryOp::Add, &row_numbers_of(&first)?, &u32_constant(1)?)?;
        let ends = plain_select(
            &plain_predicate(Predicate::Less, &next, &groups)?,
            &gather_plain(&next, &first)?,
            &rows,
        )?;
        let first_rows = gather_plain(&first, &order)?;
        Ok(Groups {
            order,
            first,
            ends,
            first_rows,
            made: RefCell::default(),
        })
    }

    /// A key's value in each group (-0 as +0: one key).
    fn key(&self, key: &NodeRef) -> Result<NodeRef> {
        let values = gather(&self.first_rows, key)?;
        let values = match key.meta.dtype {
            DType::F32 => {
                let plus_zero = source(ColumnData::F32(vec![0.0]), 1, true)?;
                let sum = plain_binary(BinaryOp::Add, &values, &plus_zero)?;
                with_validity(&sum, values.validity())?
            }
            _ => values,
        };
        self.counted(values)
    }

    /// A node made once for several aggregates as one aggregate's own result (a view: one
    /// result destroyed leaves the others), counted as the groups are.
    fn own(&self, shared: &NodeRef) -> Result<NodeRef> {
        self.counted(rechunk_rows(shared, shared.chunks.clone())?)
    }

    /// `node` (over the groups' capacity) counted as the groups are.
    fn counted(&self, node: NodeRef) -> Result<NodeRef> {
        counted_like(node, &self.first)
    }

    fn aggregate(&self, op: GroupOp, value: Option<&NodeRef>, keys: &[NodeRef]) -> Result<NodeRef> {
        let Some(value) = value else {
            let rows = plain_binary(BinaryOp::Subtract, &self.ends, &self.first)?;
            return self.counted(rows);
        };
        let lanes = value.meta.size;
        if lanes > 1
            && matches!(
                op,
                GroupOp::Min | GroupOp::Max | GroupOp::ArgMin | GroupOp::ArgMax
            )
        {
            // A lane's extreme is the first row of its own sort: lane by lane.
            let parts = (0..lanes)
                .map(|lane| {
                    let column = self.made(Made::Lane(value.id, lane), || {
                        Ok(vec![swizzle(value, &[lane as f64])?])
                    })?;
                    self.aggregate(op, Some(&column[0]), keys)
                })
                .collect::<Result<Vec<_>>>()?;
            return self.counted(interleave(&parts)?);
        }
        match op {
            GroupOp::Count => self.count_of(value),
            GroupOp::Sum => {
                let sum = self.sum(value, ReduceKind::Sum.output_type(value.meta.dtype))?;
                self.own(&sum)
            }
            GroupOp::Mean => self.mean(value),
            GroupOp::First | GroupOp::Last => self.end_row(value, op == GroupOp::Last),
            GroupOp::Min | GroupOp::Max | GroupOp::ArgMin | GroupOp::ArgMax => {
                self.extreme(op, value, keys)
            }
        }
    }

    /// uint8, per sorted row: 1 where `value`'s row is not null (None: no nulls).
    fn sorted_valid(&self, value: &NodeRef) -> Result<Option<NodeRef>> {
        let Some(valid) = value.validity() else {
            return Ok(None);
        };
        let sorted = self.made(Made::Valid(value.id), || {
            Ok(vec![gather_plain(&self.order, valid)?])
        })?;
        Ok(Some(sorted[0].clone()))
    }

    /// The nodes `what` of a value, made once.
    fn made(
        &self,
        what: Made,
        make: impl FnOnce() -> Result<Vec<NodeRef>>,
    ) -> Result<Vec<NodeRef>> {
        if let Some((_, nodes)) = self.made.borrow().iter().find(|(w, _)| *w == what) {
            return Ok(nodes.clone());
        }
        let nodes = make()?;
        self.made.borrow_mut().push((what, nodes.clone()));
        Ok(nodes)
    }

    /// uint32 `(before, through)`: per group, `value`'s non-null sorted rows before its
    /// first row and through its last (`valid`: its sorted flags).
    fn valid_bounds(&self, value: &NodeRef, valid: &NodeRef) -> Result<(NodeRef, NodeRef)> {
        let bounds = self.made(Made::ValidBounds(value.id), || {
            let running = scan(&cast_plain(valid, DType::U32)?, ScanFold::Sum, true)?;
            let one = u32_constant(1)?;
            // The row before the first group's wraps past the end: it reads 0.
            let at = |rows: &NodeRef| -> Result<NodeRef> {
                gather_plain(&plain_binary(BinaryOp::Subtract, rows, &one)?, &running)
            };
            Ok(vec![at(&self.first)?, at(&self.ends)?])
        })?;
        Ok((bounds[0].clone(), bounds[1].clone()))
    }

    /// `value`'s non-null rows in each group (uint32).
    fn count_of(&self, value: &NodeRef) -> Result<NodeRef> {
        match self.sorted_valid(value)? {
            Some(valid) => {
                let (before, through) = self.valid_bounds(value, &valid)?;
                self.counted(plain_binary(BinaryOp::Subtract, &through, &before)?)
            }
            None => self.aggregate(GroupOp::Count, None, &[]),
        }
    }

    /// The sum of `value`'s non-null rows in each group, as `dtype` (its sum's type).
    fn sum(&self, value: &NodeRef, dtype: DType) -> Result<NodeRef> {
        let sums = self.made(Made::Sum(value.id, dtype), || {
            let wide = match value.meta.dtype == dtype {
                true => value.clone(),
                false => cast_plain(value, dtype)?,
            };
            let mut sorted = gather_plain(&self.order, &wide)?;
            if let Some(valid) = self.sorted_valid(value)? {
                sorted = plain_select(&valid, &sorted, &zero_of(dtype)?)?;
            }
            // Group g sums rows ends[g - 1]..ends[g] (from 0 for the first).
            let offsets = concat_rows(&[u32_column(vec![0])?, self.ends.clone()])?;
            Ok(vec![self.counted(segment_sum(&sorted, &offsets)?)?])
        })?;
        Ok(sums[0].clone())
    }

    /// float32: each group's sum of `value`'s non-null rows over their count (null where
    /// there are none).
    fn mean(&self, value: &NodeRef) -> Result<NodeRef> {
        let sum = self.sum(value, DType::F32)?;
        let count = self.count_of(value)?;
        let quotient = plain_binary(BinaryOp::Divide, &sum, &cast_plain(&count, DType::F32)?)?;
        let some = plain_predicate(Predicate::Greater, &count, &zero_of(DType::U32)?)?;
        self.counted(with_validity(&quotient, Some(&some))?)
    }

    /// sint32: the input row of each group's first (`last`: last) row where `value` is not
    /// null (null where there is none).
    fn end_row(&self, value: &NodeRef, last: bool) -> Result<NodeRef> {
        let Some(valid) = self.sorted_valid(value)? else {
            let rows = match last {
                false => self.first_rows.clone(),
                true => {
                    let before_end =
                        plain_binary(BinaryOp::Subtract, &self.ends, &u32_constant(1)?)?;
                    gather_plain(&before_end, &self.order)?
                }
            };
            return self.counted(cast_plain(&rows, DType::I32)?);
        };
        // The k-th non-null sorted row is row k of their compaction.
        let (before, through) = self.valid_bounds(value, &valid)?;
        let nth = match last {
            false => before.clone(),
            true => plain_binary(BinaryOp::Subtract, &through, &u32_constant(1)?)?,
        };
        let position = gather_plain(&nth, &compact(&valid)?)?;
        let rows = cast_plain(&gather_plain(&position, &self.order)?, DType::I32)?;
        let some = plain_predicate(Predicate::Greater, &through, &before)?;
        self.counted(with_validity(&rows, Some(&some))?)
    }

    /// `min max argmin argmax` of a size-1 `value`: each group's first row in the order of
    /// the keys, then `value` (descending for `max`/`argmax`; NaN, then nulls, last).
    fn extreme(&self, op: GroupOp, value: &NodeRef, keys: &[NodeRef]) -> Result<NodeRef> {
        let descending = matches!(op, GroupOp::Max | GroupOp::ArgMax);
        // `min` and `argmin` of one value read one sort (as do `max` and `argmax`).
        let made = self.made(Made::Extreme(value.id, descending), || {
            let mut sort_keys = keys.to_vec();
            sort_keys.push(value.clone());
            let mut directions = vec![false; keys.len()];
            directions.push(descending);
            let order = argsort(&sort_keys, &directions, Nulls::Last)?;
            let rows = gather_plain(&self.first, &order)?;
            // Null where the group's first row is: it has no value but nulls.
            Ok(vec![rows.clone(), gather(&rows, value)?])
        })?;
        let (rows, extreme) = (&made[0], &made[1]);
        if matches!(op, GroupOp::Min | GroupOp::Max) {
            return self.own(extreme);
        }
        let mut row = cast_plain(rows, DType::I32)?;
        if value.meta.dtype == DType::F32 {
            // A group with no number but NaN has no row (-1).
            let nan = plain_predicate(Predicate::NotEqual, extreme, extreme)?;
            let none = source(ColumnData::I32(vec![-1]), 1, true)?;
            row = plain_select(&nan, &none, &row)?;
        }
        self.counted(with_validity(&row, extreme.validity())?)
    }
}
