//! Joins (api.md "Joins") on the stable sort and `searchSorted`: the right (table) keys
//! sorted once, their null rows (and rows past a filter's count) left past the count of the
//! rest, and each left key's equal run found by searching them. Keys compare as `equal`
//! does (exactly across types); NaN and null keys never match.
//!
//! A join's pairs are counted on the device like a filter's rows, packed into a capacity
//! fixed when the join is built (its length): the left rows' match counts, scanned, place
//! each left row's run of pairs, and each pair row finds its left row by searching those
//! ends. A join needing more rows than its capacity fails its evaluation (LIMIT_EXCEEDED,
//! naming the rows needed) rather than lose pairs.

use super::counted::{attach, counted_like, plain_binary, plain_predicate, plain_select};
use super::counted::{u32_column, Counted};
use super::nulls::{and_flags, with_validity};
use super::ops::{cast_plain, gather_plain, sequence_like, source};
use super::order::{check_size, column_of};
use super::{argsort, live_flags, rechunk, reduce, scan, search_sorted, sequence};
use super::{u32_constant, DEFAULT_SPLIT_EVERY};
use super::{BinaryOp, Check, Meta, Node, NodeRef, Nulls, Op, Predicate, ReduceKind, ScanFold};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result, Shown};

/// A table's keys in ascending order, the rows that can match first.
struct SortedKeys {
    /// uint32: the keys' rows in that order (a stable sort: equal keys lowest row first).
    order: NodeRef,
    /// The keys in that order, counted by the rows that can match (not null, of the result).
    sorted: NodeRef,
    /// uint32, one constant row: the rows that can match.
    matchable: NodeRef,
}

impl SortedKeys {
    fn of(keys: &NodeRef) -> Result<SortedKeys> {
        let order = argsort(std::slice::from_ref(keys), &[false], Nulls::Last)?;
        let mut flags = Vec::new();
        flags.extend(keys.validity().cloned());
        if let Some(counted) = keys.counted() {
            flags.push(live_flags(keys, counted)?);
        }
        let sorted = gather_plain(&order, keys)?;
        let matchable = match flags.is_empty() {
            true => super::u32_constant(keys.meta.length)?,
            false => {
                let flags = cast_plain(&and_flags(&flags)?, DType::U32)?;
                reduce(ReduceKind::Sum, &flags, None, DEFAULT_SPLIT_EVERY)?
            }
        };
        // Rows past the matchable ones read as past every key (searchSorted of a counted
        // column).
        let sorted = rechunk(&sorted, sorted.chunks.clone())?;
        attach(&sorted, Some(Counted::whole(matchable.clone())?));
        Ok(SortedKeys {
            order,
            sorted,
            matchable,
        })
    }

    /// uint32 `(first, hit)` per row of `keys`: the first sorted row at or above its key,
    /// and 1 where that row holds a key equal to it (the key not null).
    fn find(&self, keys: &NodeRef) -> Result<(NodeRef, NodeRef)> {
        let first = search_sorted(&self.sorted, keys, false)?;
        let within = plain_predicate(Predicate::Less, &first, &self.matchable)?;
        let found = gather_plain(&first, &self.sorted)?;
        let equal = plain_predicate(Predicate::Equal, keys, &found)?;
        let mut flags = vec![within, equal];
        flags.extend(keys.validity().cloned());
        Ok((first, and_flags(&flags)?))
    }
}

/// `lookup(keys, tableKeys)`: per row of `keys`, the lowest row of `tableKeys` holding an
/// equal key, or -1 (sint32, never null; counted as `keys` are). One `Op::Lookup` pass (a
/// device's hash table, or the sort and search it is composed of), its null keys -1 after.
pub fn lookup(keys: &NodeRef, table_keys: &NodeRef) -> Result<NodeRef> {
    keys.check_alive()?;
    check_size(keys, "lookup's keys")?;
    let table_keys = &column_of(table_keys, "lookup's table keys")?;
    let mut flags = Vec::new();
    flags.extend(table_keys.validity().cloned());
    if let Some(counted) = table_keys.counted() {
        flags.push(live_flags(table_keys, counted)?);
    }
    let mut inputs = vec![keys.clone(), table_keys.clone()];
    if !flags.is_empty() {
        inputs.push(and_flags(&flags)?);
    }
    let rows = match keys.meta.constant {
        // A walk reads columns: one key is searched for as the sort would.
        true => compose_lookup(&inputs)?,
        false => {
            let meta = Meta {
                dtype: DType::I32,
                ..keys.meta
            };
            Node::new(Op::Lookup, inputs, meta, keys.chunks.clone(), None)
        }
    };
    let rows = match keys.validity() {
        Some(valid) => plain_select(valid, &rows, &none_found()?)?,
        None => rows,
    };
    counted_like(rows, keys)
}

/// `Op::Lookup` of `inputs` (keys, table keys, the table rows' flags if any) composed of
/// other ops, for a device without its own: the table keys sorted, each key searched for.
pub fn compose_lookup(inputs: &[NodeRef]) -> Result<NodeRef> {
    let [keys, table_keys, flags @ ..] = inputs else {
        return Err(crate::engine::internal("a lookup without its keys"));
    };
    let table = SortedKeys::of(&with_validity(table_keys, flags.first())?)?;
    let (first, hit) = table.find(keys)?;
    let row = cast_plain(&gather_plain(&first, &table.order)?, DType::I32)?;
    plain_select(&hit, &row, &none_found()?)
}

/// The sint32 -1 of a key found nowhere.
fn none_found() -> Result<NodeRef> {
    source(ColumnData::I32(vec![-1]), 1, true)
}

/// Which left rows a join gives (api.md "Joins").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinHow {
    /// Only rows with a match.
    Inner,
    /// Also each left row with no match, once, with right row -1.
    Left,
}

impl JoinHow {
    pub fn parse(how: &str) -> Result<JoinHow> {
        match how {
            "inner" => Ok(JoinHow::Inner),
            "left" => Ok(JoinHow::Left),
            other => Err(GpuTableError::invalid(format!(
                "join's how is 'inner' or 'left', got '{other}'"
            ))),
        }
    }
}

/// The rows a join's pairs get unless told otherwise, where the rows could need more: the
/// keys' rows together (every join where one side's keys are distinct fits), or this many.
pub const JOIN_ROWS: u32 = 1 << 22;

/// The most rows a join's pairs may be given: their rows are sint32, and 2^30 pairs are
/// 8 GiB of row numbers.
pub const JOIN_MOST_ROWS: u32 = 1 << 30;

/// A join's row pairs (sint32, counted on the device) and their number.
pub struct Joined {
    pub left: NodeRef,
    /// -1 for a left row with no match (`JoinHow::Left`); null there too where asked.
    pub right: NodeRef,
    /// uint32, one row: the pairs (a join evaluated with a capacity too small for
    /// them still counts them all).
    pub pairs: NodeRef,
    /// Whether every pair the keys could make fits the capacity.
    pub fits: bool,
    /// The rows the pairs are packed into.
    pub capacity: u32,
}

/// How many rows a join's pairs are packed into.
enum PairRows {
    /// As asked (`join`'s `capacity`).
    Given(f64),
    /// Every pair where that is at most the keys' rows or `JOIN_ROWS`, else those.
    Default,
    /// The keys' rows together, with no check that the pairs fit (`join_guessed`).
    Guessed,
}

/// `join(leftKeys, rightKeys, {how})`: one pair of rows per pair of equal keys, by left row,
/// then right row; with `how` left, each left row with no match once (right -1). The pairs
/// are packed into `capacity` rows (by default every pair where that is at most the keys'
/// rows or `JOIN_ROWS`, else those). `null_unmatched` makes the right rows of unmatched left
/// rows null as well (a table join's missing columns).
pub fn join(
    left: &NodeRef,
    right: &NodeRef,
    how: JoinHow,
    capacity: Option<f64>,
    null_unmatched: bool,
) -> Result<Joined> {
    let rows = capacity.map_or(PairRows::Default, PairRows::Given);
    join_into(left, right, how, rows, null_unmatched)
}

/// `join`'s pairs packed into the keys' rows together, enough for every join where one
/// side's keys are distinct, without failing where they are more: the first try of a
/// table's join, which evaluates the pairs and their number at once and makes them again
/// with that number only where it is past `capacity`.
pub fn join_guessed(
    left: &NodeRef,
    right: &NodeRef,
    how: JoinHow,
    null_unmatched: bool,
) -> Result<Joined> {
    join_into(left, right, how, PairRows::Guessed, null_unmatched)
}

fn join_into(
    left: &NodeRef,
    right: &NodeRef,
    how: JoinHow,
    pair_rows: PairRows,
    null_unmatched: bool,
) -> Result<Joined> {
    let left = &column_of(left, "join's left keys")?;
    let right = &column_of(right, "join's right keys")?;
    let (rows_left, rows_right) = (left.meta.length as u64, right.meta.length as u64);
    // Below 2^64: each side has fewer than 2^32 rows.
    let every_pair = match how {
        JoinHow::Inner => rows_left * rows_right,
        JoinHow::Left => rows_left * rows_right.max(1),
    };
    let both = rows_left + rows_right;
    let capacity = match pair_rows {
        PairRows::Given(rows) => join_capacity(rows)?,
        PairRows::Default => every_pair
            .min(both.max(JOIN_ROWS as u64))
            .min(JOIN_MOST_ROWS as u64) as u32,
        PairRows::Guessed => every_pair.min(both).min(JOIN_MOST_ROWS as u64) as u32,
    };
    if every_pair == 0 {
        // Counted as every join's pairs are (its length is known once evaluated).
        let none = Counted::whole(u32_constant(0)?)?;
        let (left, right) = (sequence(0.0, 0.0, 1.0)?, sequence(0.0, 0.0, 1.0)?);
        attach(&left, Some(none.clone()));
        attach(&right, Some(none));
        return Ok(Joined {
            left,
            right,
            pairs: u32_constant(0)?,
            fits: true,
            capacity: 0,
        });
    }
    if rows_right == 0 {
        return unmatched_rows(left, null_unmatched);
    }
    // Kernels over no rows are not run: one row at least, past the count.
    let capacity = capacity.max(1);

    let table = SortedKeys::of(right)?;
    let (first, mut hit) = table.find(left)?;
    let live = match left.counted() {
        Some(counted) => Some(live_flags(left, counted)?),
        None => None,
    };
    if let Some(live) = &live {
        hit = and_flags(&[hit, live.clone()])?;
    }
    let past = search_sorted(&table.sorted, left, true)?;
    let matches = plain_binary(BinaryOp::Subtract, &past, &first)?;
    let unmatched = match (how, &live) {
        (JoinHow::Inner, _) => u32_constant(0)?,
        (JoinHow::Left, None) => u32_constant(1)?,
        (JoinHow::Left, Some(live)) => cast_plain(live, DType::U32)?,
    };
    // Pairs per left row, and where each left row's run of them ends.
    let runs = plain_select(&hit, &matches, &unmatched)?;
    let ends = scan(&runs, ScanFold::Sum, true)?;
    let rows = gather_plain(&u32_constant(left.meta.length - 1)?, &ends)?;
    let about = reduce(
        ReduceKind::Sum,
        &cast_plain(&runs, DType::F32)?,
        None,
        DEFAULT_SPLIT_EVERY,
    )?;
    // `node` as a node of its own carrying the check that the pairs fit `capacity` (so a
    // join's check and its count's never share one).
    let checked = |node: &NodeRef, capacity: u32, what: &'static str| -> Result<NodeRef> {
        let node = rechunk(node, node.chunks.clone())?;
        let _ = node.check.set(Check::Capacity {
            rows: rows.clone(),
            about: about.clone(),
            capacity,
            what,
        });
        Ok(node)
    };
    let pairs = checked(&rows, JOIN_MOST_ROWS, "a join's count")?;
    let kept = plain_binary(BinaryOp::Minimum, &rows, &u32_constant(capacity)?)?;
    let kept = match pair_rows {
        PairRows::Guessed => kept,
        _ => checked(&kept, capacity, "a join")?,
    };

    // Pair p belongs to the first left row whose run ends past it.
    let pair = cast_plain(&sequence(capacity as f64, 0.0, 1.0)?, DType::U32)?;
    let owner = search_sorted(&ends, &pair, true)?;
    let run_start = plain_binary(
        BinaryOp::Subtract,
        &gather_plain(&owner, &ends)?,
        &gather_plain(&owner, &runs)?,
    )?;
    let step = plain_binary(BinaryOp::Subtract, &pair, &run_start)?;
    let sorted_row = plain_binary(BinaryOp::Add, &gather_plain(&owner, &first)?, &step)?;
    let right_row = cast_plain(&gather_plain(&sorted_row, &table.order)?, DType::I32)?;
    let matched = gather_plain(&owner, &hit)?;
    let none = source(ColumnData::I32(vec![-1]), 1, true)?;
    let mut right_rows = plain_select(&matched, &right_row, &none)?;
    if null_unmatched && how == JoinHow::Left {
        right_rows = with_validity(&right_rows, Some(&matched))?;
    }
    let left_rows = cast_plain(&owner, DType::I32)?;
    let counted = Counted::whole(kept)?;
    for rows in [&left_rows, &right_rows] {
        attach(rows, Some(counted.clone()));
    }
    Ok(Joined {
        left: left_rows,
        right: right_rows,
        pairs,
        fits: every_pair <= capacity as u64,
        capacity,
    })
}

/// A join's capacity as asked: whole rows, at most `JOIN_MOST_ROWS`.
fn join_capacity(rows: f64) -> Result<u32> {
    if !(rows >= 0.0 && rows.fract() == 0.0) {
        return Err(GpuTableError::invalid(format!(
            "join's capacity must be a whole number of rows, got {}",
            Shown(rows)
        )));
    }
    match rows <= JOIN_MOST_ROWS as f64 {
        true => Ok(rows as u32),
        false => Err(GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!("a join's capacity of {rows} rows is past its {JOIN_MOST_ROWS}-row limit"),
        )),
    }
}

/// A left join with no right rows: each left row once, unmatched.
fn unmatched_rows(left: &NodeRef, null_unmatched: bool) -> Result<Joined> {
    let rows = left.meta.length;
    // A plain left column's rows are counted too, as every join's pairs are, per chunk (its
    // chunks kept).
    let counted = match left.counted() {
        Some(counted) => counted.clone(),
        None => Counted::new(u32_constant(rows)?, u32_column(left.chunks.to_vec())?),
    };
    let left = &super::chunked::rechunk(left, left.chunks.clone())?;
    attach(left, Some(counted.clone()));
    let left_rows = counted_like(sequence_like(left, 0, 1), left)?;
    let mut right_rows = sequence_like(left, -1, 0);
    if null_unmatched {
        let none = cast_plain(&sequence_like(left, 0, 0), DType::U8)?;
        right_rows = with_validity(&right_rows, Some(&none))?;
    }
    let right_rows = counted_like(right_rows, left)?;
    // A node of its own: the caller may destroy the pairs and keep the rows they count.
    let pairs = rechunk(&counted.total, counted.total.chunks.clone())?;
    Ok(Joined {
        left: left_rows,
        right: right_rows,
        pairs,
        fits: true,
        capacity: rows,
    })
}
