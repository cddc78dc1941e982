//! A groupBy larger than `allowedMem` (api.md "Memory": `groupBy` and `valueCounts`
//! combine per-chunk partial groups). Each group-by records what it grouped (`GroupStages`);
//! where its whole plan does not fit the budget, the engine (`engine/staged_group.rs`)
//! groups its rows a range at a time (`partial`), reads each range's groups back, groups
//! blocks of those again (`combine`) until one is left, and makes the group-by's results of
//! it (`finish`). A partial keeps what combines:
//! counts and sums add, a mean is a sum and a count, `min`/`max` keep theirs, `argmin`/
//! `argmax` keep their extreme and its row, `first`/`last` their row (rows of the range,
//! offset to the whole input's when read back).

use std::rc::{Rc, Weak};

use super::chunked::source_chunked;
use super::counted::{plain_binary, plain_predicate, plain_select, zero_of};
use super::group::{group_by_unrecorded, Aggregate, GroupOp};
use super::nulls::with_validity;
use super::ops::{cast, cast_plain, gather_plain, source};
use super::{BinaryOp, Chunks, Node, NodeRef, Predicate};
use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::error::Result;

/// What a group-by grouped, kept on each of its results.
pub struct GroupStages {
    keys: Vec<NodeRef>,
    aggregates: Vec<Aggregate>,
    /// The group-by's results: its keys', then its aggregates' (weak: they hold this).
    results: Vec<Weak<Node>>,
}

/// A part's groups read back: per partial column, its values and null flags (rows of a
/// range offset to the whole input's).
#[derive(Clone)]
pub struct PartialRows {
    pub columns: Vec<(ColumnData, Option<ColumnData>)>,
}

impl PartialRows {
    /// `rows` groups in the shape of a part's columns (`nodes`, `keys` of them keys), for
    /// projections: zeros, but for 32-bit integer keys, whose last group holds the type's
    /// greatest value (a key range too wide for the bins of `group_by`'s small keys: the
    /// group-by sorts, as it may for keys of any range).
    pub fn projected(nodes: &[NodeRef], rows: u32, keys: usize) -> Result<PartialRows> {
        let columns = nodes
            .iter()
            .enumerate()
            .map(|(c, node)| {
                let mut values = Column::empty(node.meta.dtype, node.meta.size)?;
                values.append_zero_rows(rows)?;
                match &mut values.data {
                    ColumnData::I32(v) if c < keys => v.last_mut().map(|x| *x = i32::MAX),
                    ColumnData::U32(v) if c < keys => v.last_mut().map(|x| *x = u32::MAX),
                    _ => None,
                };
                let valid = match node.validity() {
                    Some(_) => Some(ColumnData::U8(crate::column::try_collect(
                        rows as usize,
                        std::iter::repeat_n(1, rows as usize),
                    )?)),
                    None => None,
                };
                Ok((values.data, valid))
            })
            .collect::<Result<_>>()?;
        Ok(PartialRows { columns })
    }

    /// The groups it holds (its first column is a key: one value a row).
    pub fn rows(&self) -> u32 {
        self.columns
            .first()
            .map_or(0, |(data, _)| data.len() as u32)
    }

    /// Column `c` (of `lanes` lanes) of every partial, one after another, and their null
    /// flags where any partial has them (all set for the others).
    pub fn joined(
        partials: &[PartialRows],
        c: usize,
        lanes: u32,
    ) -> Result<(Column, Option<Column>)> {
        let (first, _) = &partials
            .first()
            .ok_or_else(|| crate::engine::internal("a group-by in parts of no part"))?
            .columns[c];
        let mut values = Column::empty(first.dtype(), lanes)?;
        let nullable = partials.iter().any(|p| p.columns[c].1.is_some());
        let mut flags = Column::empty(DType::U8, 1)?;
        for partial in partials {
            let (data, valid) = &partial.columns[c];
            values.append(data)?;
            if nullable {
                match valid {
                    Some(valid) => flags.append(valid)?,
                    None => {
                        let rows = partial.rows() as usize;
                        let ones = crate::column::try_collect(rows, std::iter::repeat_n(1, rows))?;
                        flags.append(&ColumnData::U8(ones))?
                    }
                }
            }
        }
        Ok((values, nullable.then_some(flags)))
    }

    /// Its groups `start..end`.
    pub fn slice(&self, start: u32, end: u32) -> Result<PartialRows> {
        let rows = self.rows().max(1) as usize;
        let (start, end) = (start as usize, end as usize);
        let columns = (self.columns.iter())
            .map(|(data, valid)| {
                let lanes = data.len() / rows;
                let values = data.slice(start * lanes, end * lanes)?;
                let valid = valid.as_ref().map(|v| v.slice(start, end)).transpose()?;
                Ok((values, valid))
            })
            .collect::<Result<_>>()?;
        Ok(PartialRows { columns })
    }
}

/// The aggregates a partial computes for one of the group-by's.
fn partial_ops(op: GroupOp) -> &'static [GroupOp] {
    match op {
        GroupOp::Mean => &[GroupOp::Sum, GroupOp::Count],
        GroupOp::ArgMin => &[GroupOp::ArgMin, GroupOp::Min],
        GroupOp::ArgMax => &[GroupOp::ArgMax, GroupOp::Max],
        GroupOp::Count => &[GroupOp::Count],
        GroupOp::Sum => &[GroupOp::Sum],
        GroupOp::Min => &[GroupOp::Min],
        GroupOp::Max => &[GroupOp::Max],
        GroupOp::First => &[GroupOp::First],
        GroupOp::Last => &[GroupOp::Last],
    }
}

/// Whether a partial column holds rows of its range (offset when read back).
fn holds_rows(op: GroupOp) -> bool {
    matches!(
        op,
        GroupOp::ArgMin | GroupOp::ArgMax | GroupOp::First | GroupOp::Last
    )
}

/// Records on `key_results` and `results` what they group, where the engine can group it in
/// parts: inputs not counted on the device (their rows are known), `argmin`/`argmax` of
/// size-1 values.
pub(super) fn record(
    keys: &[NodeRef],
    aggregates: &[Aggregate],
    key_results: &[NodeRef],
    results: &[NodeRef],
) {
    let inputs = keys.iter().chain(aggregates.iter().flat_map(|a| &a.value));
    if inputs
        .clone()
        .any(|x| x.counted().is_some() || x.meta.constant)
    {
        return;
    }
    let lanes_of_args = aggregates.iter().any(|a| {
        matches!(a.op, GroupOp::ArgMin | GroupOp::ArgMax)
            && a.value.as_ref().is_some_and(|v| v.meta.size > 1)
    });
    if lanes_of_args {
        return;
    }
    let stages = Rc::new(GroupStages {
        keys: keys.to_vec(),
        aggregates: aggregates.to_vec(),
        results: key_results
            .iter()
            .chain(results)
            .map(Rc::downgrade)
            .collect(),
    });
    for result in key_results.iter().chain(results) {
        result.set_group_stages(stages.clone());
    }
}

impl GroupStages {
    /// The group-by's results, if every one still lives.
    pub fn results(&self) -> Option<Vec<NodeRef>> {
        self.results.iter().map(Weak::upgrade).collect()
    }

    /// The group-by's keys: a partial's first columns.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The rows grouped.
    pub fn rows(&self) -> u32 {
        self.keys[0].meta.length
    }

    /// The keys' chunks, as row ranges (empty ones left out).
    pub fn chunk_ranges(&self) -> Vec<(u32, u32)> {
        let mut start = 0;
        let mut ranges = Vec::new();
        for &rows in self.keys[0].chunks.iter() {
            if rows > 0 {
                ranges.push((start, start + rows));
            }
            start += rows;
        }
        ranges
    }

    /// The groups of rows `start..end`: the keys, then each aggregate's partial columns.
    pub fn partial(&self, start: u32, end: u32) -> Result<Vec<NodeRef>> {
        // The keys and values remade over the range's rows alone (a computed key is not made
        // whole for each range), work they share made once.
        let mut wholes = self.keys.clone();
        wholes.extend(self.aggregates.iter().filter_map(|a| a.value.clone()));
        let rows = super::chunked::rows_of_work(&wholes, start, end)?;
        let (keys, values) = rows.split_at(self.keys.len());
        let mut values = values.iter();
        let mut parts = Vec::new();
        for aggregate in &self.aggregates {
            let value = aggregate
                .value
                .as_ref()
                .and_then(|_| values.next().cloned());
            for &op in partial_ops(aggregate.op) {
                // A mean's sum is of float32 values, as the whole group-by's is.
                let value = match (aggregate.op, &value) {
                    (GroupOp::Mean, Some(v)) if op == GroupOp::Sum => Some(cast(v, DType::F32)?),
                    _ => value.clone(),
                };
                parts.push(Aggregate { op, value });
            }
        }
        let (mut out, results) = group_by_unrecorded(keys, &parts)?;
        out.extend(results);
        Ok(out)
    }

    /// Per partial column: its lanes (sums and extremes have their value's; counts, rows and
    /// keys one).
    fn lanes(&self) -> Vec<u32> {
        let keys = self.keys.iter().map(|_| 1);
        let parts = self.aggregates.iter().flat_map(|a| {
            let lanes = a.value.as_ref().map_or(1, |v| v.meta.size);
            (partial_ops(a.op).iter()).map(move |&op| match op {
                GroupOp::Sum | GroupOp::Min | GroupOp::Max => lanes,
                _ => 1,
            })
        });
        keys.chain(parts).collect()
    }

    /// Per partial column: whether it holds rows of its range (offset to the whole input's
    /// rows when read back).
    pub fn holds_rows(&self) -> Vec<bool> {
        let keys = self.keys.iter().map(|_| false);
        let parts = (self.aggregates.iter())
            .flat_map(|a| partial_ops(a.op).iter().map(|&op| holds_rows(op)));
        keys.chain(parts).collect()
    }

    /// The groups of `partials`' rows together, as partial columns again: counts and sums
    /// added, the least of minimums and first rows, the greatest of maximums and last rows,
    /// and an extreme's row where the extreme of extremes is.
    pub fn combine(&self, partials: &[PartialRows]) -> Result<Vec<NodeRef>> {
        let rows: u32 = partials.iter().map(PartialRows::rows).sum();
        let chunks: Chunks = vec![rows].into();
        let columns = (self.lanes().into_iter().enumerate())
            .map(|(c, lanes)| joined(partials, c, lanes, &chunks))
            .collect::<Result<Vec<_>>>()?;
        let (keys, parts) = columns.split_at(self.keys.len());
        let mut combining = Vec::new();
        let mut at = 0;
        for aggregate in &self.aggregates {
            for &op in partial_ops(aggregate.op) {
                let op = match (aggregate.op, op) {
                    (GroupOp::ArgMin | GroupOp::ArgMax, GroupOp::ArgMin | GroupOp::ArgMax) => op,
                    (_, GroupOp::Count | GroupOp::Sum) => GroupOp::Sum,
                    (_, GroupOp::Min | GroupOp::First) => GroupOp::Min,
                    (_, _) => GroupOp::Max,
                };
                // An extreme's row is read where the extreme of extremes is: its value's.
                let value = match op {
                    GroupOp::ArgMin | GroupOp::ArgMax => parts[at + 1].clone(),
                    _ => parts[at].clone(),
                };
                combining.push(Aggregate {
                    op,
                    value: Some(value),
                });
                at += 1;
            }
        }
        let (mut out, results) = group_by_unrecorded(keys, &combining)?;
        for ((aggregate, part), result) in combining.iter().zip(parts).zip(results) {
            out.push(match aggregate.op {
                GroupOp::ArgMin | GroupOp::ArgMax => row_at(&result, part)?,
                _ => result,
            });
        }
        Ok(out)
    }

    /// The group-by's results from partial columns (`combine`'s).
    pub fn finish(&self, columns: &[NodeRef]) -> Result<Vec<NodeRef>> {
        let (keys, parts) = columns.split_at(self.keys.len());
        let mut out = keys.to_vec();
        let mut at = 0;
        for aggregate in &self.aggregates {
            out.push(match aggregate.op {
                GroupOp::Mean => mean_of(&parts[at], &parts[at + 1])?,
                _ => parts[at].clone(),
            });
            at += partial_ops(aggregate.op).len();
        }
        Ok(out)
    }
}

/// Column `c` of every partial joined into one source chunked as `chunks`, with null flags
/// where any partial has them.
fn joined(partials: &[PartialRows], c: usize, lanes: u32, chunks: &Chunks) -> Result<NodeRef> {
    let (values, flags) = PartialRows::joined(partials, c, lanes)?;
    // `source_chunked` checks the rows against `chunks`.
    let node = source_chunked(values.data, lanes, chunks.clone())?;
    match flags {
        Some(flags) => with_validity(&node, Some(&source_chunked(flags.data, 1, chunks.clone())?)),
        None => Ok(node),
    }
}

/// float32 sums over their counts, null where the count is 0 (a mean's rule).
fn mean_of(sums: &NodeRef, counts: &NodeRef) -> Result<NodeRef> {
    let quotient = plain_binary(BinaryOp::Divide, sums, &cast_plain(counts, DType::F32)?)?;
    let some = plain_predicate(Predicate::Greater, counts, &zero_of(DType::U32)?)?;
    super::counted::counted_like(with_validity(&quotient, Some(&some))?, counts)
}

/// The partial rows (`rows`) at the combining group-by's `argmin`/`argmax` rows (-1 stays
/// -1: a group of NaN alone), with its null flags.
fn row_at(at: &NodeRef, rows: &NodeRef) -> Result<NodeRef> {
    let some = plain_predicate(Predicate::GreaterEqual, at, &zero_of(DType::I32)?)?;
    let index = cast_plain(
        &plain_binary(BinaryOp::Maximum, at, &zero_of(DType::I32)?)?,
        DType::U32,
    )?;
    let none = source(ColumnData::I32(vec![-1]), 1, true)?;
    let row = plain_select(&some, &gather_plain(&index, rows)?, &none)?;
    super::counted::counted_like(with_validity(&row, at.validity())?, at)
}
