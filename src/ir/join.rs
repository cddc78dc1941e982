//! Joins (api.md "Joins") on the stable sort and `searchSorted`: the right (table) keys
//! sorted once, their null rows (and rows past a filter's count) left past the count of the
//! rest, and each left key's equal run found by searching them. Keys compare as `equal`
//! does (exactly across types); NaN and null keys never match.

use super::counted::{attach, counted_like, plain_predicate, plain_select, Counted};
use super::nulls::and_flags;
use super::ops::{cast_plain, gather_plain, source};
use super::{argsort, live_flags, rechunk, reduce, search_sorted, NodeRef, Nulls, Predicate};
use super::{ReduceKind, DEFAULT_SPLIT_EVERY};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::error::{GpuTableError, Result};

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

fn check_keys(keys: &NodeRef, what: &str) -> Result<()> {
    keys.check_alive()?;
    if keys.meta.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "{what} have rows of size 1, got size {}",
            keys.meta.size
        )));
    }
    Ok(())
}

/// `lookup(keys, tableKeys)`: per row of `keys`, the lowest row of `tableKeys` holding an
/// equal key, or -1 (sint32, never null; counted as `keys` are).
pub fn lookup(keys: &NodeRef, table_keys: &NodeRef) -> Result<NodeRef> {
    check_keys(keys, "lookup's keys")?;
    check_keys(table_keys, "lookup's table keys")?;
    if table_keys.meta.constant {
        return Err(GpuTableError::invalid(
            "lookup's table keys are a column, not a constant",
        ));
    }
    let table = SortedKeys::of(table_keys)?;
    let (first, hit) = table.find(keys)?;
    let row = cast_plain(&gather_plain(&first, &table.order)?, DType::I32)?;
    let none = source(ColumnData::I32(vec![-1]), 1, true)?;
    counted_like(plain_select(&hit, &row, &none)?, keys)
}
