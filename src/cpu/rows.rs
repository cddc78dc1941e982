//! Random-access inputs by row: a leaf stored whole, or in parts (a chunked gather source
//! read where each chunk is stored), and the per-row ops that read them: `gather` from
//! parts.

use std::cell::Cell;

use super::internal;
use super::lane::{Lane, Stored};
use crate::column::{try_collect, try_vec, Column, Elem};
use crate::error::Result;
use crate::value::{Storage, Value};

/// The rows of a stored value of element type `S`, `lanes` values each.
pub(super) struct StoredRows<'a, S> {
    parts: Vec<&'a [S]>,
    /// The row after each part.
    ends: Vec<usize>,
    lanes: usize,
    /// The part of the last row read: reads mostly go forward, so it is checked first.
    last_part: Cell<usize>,
}

fn host(value: &Value) -> Result<&Column> {
    value
        .host_column()
        .ok_or_else(|| internal("a random-access input is not in host memory"))
}

impl<'a, S: Elem> StoredRows<'a, S> {
    pub fn new(value: &'a Value) -> Result<StoredRows<'a, S>> {
        let mut rows = StoredRows {
            parts: Vec::new(),
            ends: Vec::new(),
            lanes: value.size as usize,
            last_part: Cell::new(0),
        };
        match &value.storage {
            Storage::Parts(parts) => parts.iter().try_for_each(|p| rows.push(host(p)?))?,
            _ => rows.push(host(value)?)?,
        }
        Ok(rows)
    }

    fn push(&mut self, column: &'a Column) -> Result<()> {
        let values =
            S::slice_of(&column.data).ok_or_else(|| internal("stored rows of another type"))?;
        self.parts.push(values);
        self.ends.push(self.rows() + column.rows as usize);
        Ok(())
    }

    pub fn rows(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// The values from row `first` on, in order, across parts.
    pub fn values_from(&self, first: usize) -> impl Iterator<Item = &'a S> + '_ {
        let part = self.ends.partition_point(|&end| end <= first);
        let start = part.checked_sub(1).map_or(0, |p| self.ends[p]);
        let (parts, lanes) = (self.parts.get(part..).unwrap_or_default(), self.lanes);
        let skip = (first.saturating_sub(start)) * lanes;
        let head = parts.first().map(|p| p.get(skip..).unwrap_or_default());
        head.into_iter()
            .chain(parts.iter().skip(1).copied())
            .flat_map(|p| p.iter())
    }

    /// The values as one slice, where they are stored in one part.
    pub fn contiguous(&self) -> Option<&'a [S]> {
        match self.parts[..] {
            [part] => Some(part),
            _ => None,
        }
    }

    /// Row `r` (< `rows()`): in the part of the last row read, or found by binary search.
    #[inline]
    pub fn row(&self, r: usize) -> &'a [S] {
        let start_of = |p: usize| if p == 0 { 0 } else { self.ends[p - 1] };
        let p = match self.parts.len() {
            1 => 0,
            _ => {
                let last = self.last_part.get();
                match (start_of(last)..self.ends[last]).contains(&r) {
                    true => last,
                    false => {
                        let p = self.ends.partition_point(|&end| end <= r);
                        self.last_part.set(p);
                        p
                    }
                }
            }
        };
        let at = (r - start_of(p)) * self.lanes;
        &self.parts[p][at..at + self.lanes]
    }
}

/// `gather` of rows `ids` from `source` into rows of `lanes` (0 where an id is no row).
pub(super) fn gather_stored<I: Lane, S: Elem, T: Lane>(
    ids: &[I],
    source: &StoredRows<S>,
    lanes: usize,
    dst: &mut [T],
) {
    let rows = source.rows();
    for (row, id) in dst.chunks_exact_mut(lanes).zip(ids) {
        match id.as_row(rows) {
            Some(r) => {
                for (o, v) in row.iter_mut().zip(source.row(r)) {
                    *o = T::from_elem(*v);
                }
            }
            None => row.fill(T::default()),
        }
    }
}

/// Key `i` of a sorted column of size-1 rows, as f64 (exact for every type), and the count
/// of keys: what `search_sorted` reads.
pub(super) fn key_reader<'a, S: Stored>(
    sorted: StoredRows<'a, S>,
) -> (Box<dyn Fn(usize) -> f64 + 'a>, usize) {
    let rows = sorted.rows();
    match sorted.contiguous() {
        Some(keys) if sorted.lanes == 1 => (Box::new(move |i| keys[i].to_f64()), rows),
        _ => (Box::new(move |i| sorted.row(i)[0].to_f64()), rows),
    }
}

/// For each query, how many of the `rows` sorted keys read by `key` are below it (`upper`:
/// at most it); queries (of any type) as f64, which compares every pair of types exactly.
/// One instance for every key type (code size, in wasm): a search reads few keys per query.
pub(super) fn search_sorted(
    key: &dyn Fn(usize) -> f64,
    rows: usize,
    queries: &[f64],
    upper: bool,
    dst: &mut [u32],
) {
    // Whether the answer for `q` lies past row `i`, NaN ordered after every number (as
    // argsort orders it: NumPy's rule).
    let past = |i: usize, q: f64| {
        let v = key(i);
        match (v.is_nan(), q.is_nan()) {
            (false, false) if upper => v <= q,
            (false, false) => v < q,
            (false, true) => true,
            (true, q_nan) => upper && q_nan,
        }
    };
    // Queries in ascending order (row pointers, segment bounds) walk on from the answer
    // before: a few steps, then galloping, not O(log n) reads across the whole column.
    // Random queries (an answer far from the one before) search the whole column instead:
    // galloping there reads about twice the keys of one search.
    let mut before: Option<(f64, usize)> = None;
    let mut last_answer: Option<usize> = None;
    let mut next = 0;
    while next < dst.len().min(queries.len()) {
        // Queries searching the whole column halve it in lockstep, a group at a time:
        // their reads are independent, so their waits on memory overlap.
        if let (None, Some(group)) = (before, queries.get(next..next + LOCKSTEP)) {
            let mut base = [0usize; LOCKSTEP];
            let mut len = rows;
            while len > 1 {
                let half = len / 2;
                for (b, &q) in base.iter_mut().zip(group) {
                    *b += if past(*b + half - 1, q) { half } else { 0 };
                }
                len -= half;
            }
            for ((b, &q), out) in base.iter_mut().zip(group).zip(&mut dst[next..]) {
                *b += usize::from(len == 1 && past(*b, q));
                *out = *b as u32;
            }
            let [.., last, answer] = base;
            let close = answer.abs_diff(last) <= FAR_ROWS;
            (last_answer, before) = (Some(answer), close.then_some((group[LOCKSTEP - 1], answer)));
            next += LOCKSTEP;
            continue;
        }
        let (q, out) = (queries[next], &mut dst[next]);
        next += 1;
        let (lo, hi) = match before {
            Some((previous, answer)) if q >= previous => {
                // Keys are sorted, so the keys `q` lies past in the next few are a prefix of
                // them: counted without a branch per key.
                let near = (answer + WALK_STEPS).min(rows);
                let mut lo = answer + (answer..near).filter(|&i| past(i, q)).count();
                let (mut hi, mut step) = (lo, 1);
                if lo == near {
                    while hi < rows && past(hi, q) {
                        lo = hi + 1;
                        hi += step;
                        step *= 2;
                    }
                }
                (lo, hi.min(rows))
            }
            _ => (0, rows),
        };
        // Halving by a select, not a jump: random queries mispredict half their steps
        // otherwise. The answer stays within `base..=base + len`.
        let (mut base, mut len) = (lo, hi - lo);
        while len > 1 {
            let half = len / 2;
            base = if past(base + half - 1, q) {
                base + half
            } else {
                base
            };
            len -= half;
        }
        let answer = base + usize::from(len == 1 && past(base, q));
        let close = last_answer.is_none_or(|last| answer.abs_diff(last) <= FAR_ROWS);
        (last_answer, before) = (Some(answer), close.then_some((q, answer)));
        *out = answer as u32;
    }
}

/// `search_sorted` of few keys copied as f64 (NaN last, as argsort puts them): a halving of a
/// slice with no call per key read, 4x faster for a histogram's edges. A NaN query is past
/// every number, and past the NaN keys too for `upper`.
pub(super) fn search_few<const UPPER: bool>(keys: &[f64], queries: &[f64], dst: &mut [u32]) {
    let numbers = keys.partition_point(|k| !k.is_nan());
    let nan_answer = if UPPER { keys.len() } else { numbers } as u32;
    let keys = &keys[..numbers];
    let past = |v: f64, q: f64| if UPPER { v <= q } else { v < q };
    for (&q, out) in queries.iter().zip(dst) {
        if q.is_nan() {
            *out = nan_answer;
            continue;
        }
        let (mut base, mut len) = (0, keys.len());
        while len > 1 {
            let half = len / 2;
            base = if past(keys[base + half - 1], q) {
                base + half
            } else {
                base
            };
            len -= half;
        }
        *out = (base + usize::from(len == 1 && past(keys[base], q))) as u32;
    }
}

/// Few finite keys spread evenly (a histogram's equal edges), copied as f64: a query's
/// answer estimated from its distance to the first key, exact without reading a key where
/// that distance is far from every key's, else stepped to the exact one.
pub(super) struct EvenKeys {
    keys: Vec<f64>,
    first: f64,
    /// Keys per unit past the first.
    scale: f64,
    /// How far a key's place (`(key - first) scale`) lies from its index at most, with a
    /// margin for the rounding of a query's fraction: a query whose place is further than
    /// this from every whole number lies strictly between two keys.
    off: f64,
    /// The keys are consecutive whole numbers (ids), each at its place exactly: a whole
    /// query's place is whole and names the key equal to it.
    consecutive: bool,
}

impl EvenKeys {
    /// `keys` where each one's place is within a quarter of its index, so a query's
    /// estimate is at most a key or two from its answer.
    fn new(keys: Vec<f64>) -> std::result::Result<EvenKeys, Vec<f64>> {
        let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else {
            return Err(keys);
        };
        let scale = (keys.len() - 1) as f64 / (last - first);
        let off = (keys.iter().enumerate())
            .map(|(i, &k)| ((k - first) * scale - i as f64).abs())
            .fold(0.0, f64::max);
        // Whole numbers below 2^52 subtract exactly.
        let consecutive = scale == 1.0
            && off == 0.0
            && (keys.iter()).all(|k| k.fract() == 0.0 && k.abs() < (1u64 << 52) as f64);
        match keys.len() >= 4 && scale.is_finite() && scale > 0.0 && off < 0.25 {
            true => Ok(EvenKeys {
                keys,
                first,
                scale,
                off: off + 1e-6,
                consecutive,
            }),
            false => Err(keys),
        }
    }

    /// `search_few`'s answers: the estimate `⌊(q - first) scale⌋ + 1` keys at or below
    /// `q`. Places are rounded monotonically, so a key's place below `q`'s means the key is
    /// below `q`: where `q`'s place is more than `off` from a whole number, every key of a
    /// lower index is below `q` and every other one above, and the estimate is the answer.
    /// Consecutive whole keys also answer a whole query (a join's ids): it is the key at
    /// its place, below the answer for `upper` only. That first loop has no branch (it
    /// vectorizes); the few other queries (near a key, infinite or NaN) are stepped to
    /// their answers after.
    pub(super) fn search(&self, queries: &[f64], upper: bool, dst: &mut [u32]) {
        let n = self.keys.len() as f64;
        let below = f64::from(u8::from(!upper));
        let mut unsure = false;
        for (&q, out) in queries.iter().zip(dst.iter_mut()) {
            let (whole, on_key, sure) = self.place(q);
            unsure |= !sure;
            let estimate = whole + 1.0 - if on_key { below } else { 0.0 };
            // `as` saturates: below 0 (and NaN, an unsure query) is 0.
            *out = (if estimate > n { n } else { estimate }) as u32;
        }
        if unsure {
            for (&q, out) in queries.iter().zip(dst) {
                if !self.place(q).2 {
                    *out = self.step(q, upper);
                }
            }
        }
    }

    /// `q`'s place rounded down, whether it is a whole query on a consecutive key, and
    /// whether its estimate is sure (far enough from every key's place, or on such a key).
    #[inline(always)]
    fn place(&self, q: f64) -> (f64, bool, bool) {
        let place = (q - self.first) * self.scale;
        let whole = place.floor();
        let fraction = place - whole;
        let on_key = self.consecutive & (q.floor() == q);
        let sure = (fraction > self.off && fraction < 1.0 - self.off) | on_key;
        (whole, on_key, sure)
    }

    /// The answer for `q` stepped from its estimate, one key at a time.
    fn step(&self, q: f64, upper: bool) -> u32 {
        let (keys, n) = (&self.keys[..], self.keys.len());
        // A key is past a query where it is below it (or equal, for `upper`).
        let past = |v: f64| v < q || (upper && v == q);
        // NaN is past every (finite) key; infinities clamp to the ends.
        if q.is_nan() {
            return n as u32;
        }
        let estimate = ((q - self.first) * self.scale).floor() + 1.0;
        let mut i = estimate.clamp(0.0, n as f64) as usize;
        while i < n && past(keys[i]) {
            i += 1;
        }
        while i > 0 && !past(keys[i - 1]) {
            i -= 1;
        }
        i as u32
    }
}

/// Sorted keys (past `FEW_KEYS`) copied as f64, with where each bucket of their range starts:
/// a query's answer lies among its bucket's keys, a halving of a few rows rather than one
/// of the whole column (for 1M random queries into 100k keys, 17 dependent reads become 3).
pub(super) struct SearchIndex {
    keys: Vec<f64>,
    /// Keys before the NaN ones (argsort puts NaN last).
    numbers: usize,
    low: f64,
    scale: f64,
    last_bucket: usize,
    /// Per bucket, its first key (the keys of every lower bucket before it), then `numbers`.
    starts: Vec<u32>,
}

impl SearchIndex {
    /// The index of `rows` sorted keys read by `key`; None where their range is not finite
    /// or is one value (a halving then does as well).
    pub fn new(key: &dyn Fn(usize) -> f64, rows: usize) -> Result<Option<SearchIndex>> {
        let keys = try_collect(rows, (0..rows).map(key))?;
        let numbers = keys.partition_point(|k| !k.is_nan());
        let (Some(&low), Some(&high)) = (keys.first(), keys[..numbers].last()) else {
            return Ok(None);
        };
        if !(low.is_finite() && high.is_finite() && high > low) {
            return Ok(None);
        }
        // About two keys a bucket, where the keys spread evenly.
        let buckets = (numbers / 2).clamp(1, 1 << 22).next_power_of_two();
        let mut index = SearchIndex {
            keys,
            numbers,
            low,
            scale: buckets as f64 / (high - low),
            last_bucket: buckets - 1,
            starts: try_vec(buckets + 1, "a search index")?,
        };
        // `bucket` never decreases as its argument grows: a key of a lower bucket is below
        // every query of a higher one.
        index.starts.push(0);
        for (i, &k) in index.keys[..numbers].iter().enumerate() {
            let b = index.bucket(k);
            while index.starts.len() <= b {
                index.starts.push(i as u32);
            }
        }
        index.starts.resize(buckets + 1, numbers as u32);
        Ok(Some(index))
    }

    fn bucket(&self, q: f64) -> usize {
        let at = (q - self.low) * self.scale;
        match at >= 0.0 {
            // Saturating: +Inf is the last bucket.
            true => (at as usize).min(self.last_bucket),
            false => 0,
        }
    }

    /// `search_sorted` of `queries` (a NaN query is past every number, and past the NaN
    /// keys too for `upper`).
    pub fn search(&self, queries: &[f64], upper: bool, dst: &mut [u32]) {
        let past = |v: f64, q: f64| if upper { v <= q } else { v < q };
        // Ascending queries (the pairs of a join finding their left rows) walk on from the
        // answer before: a step or two each, where a bucket's search reads three rows; a
        // query further on than `WALK_STEPS` keys searches its bucket instead.
        let ascending = queries.len() > 1 && queries.windows(2).all(|w| w[0] <= w[1]);
        if let (Some(&q), true) = (queries.first(), ascending) {
            let mut i = self.find(q, upper);
            dst[0] = i as u32;
            for (&q, out) in queries.iter().zip(dst.iter_mut()).skip(1) {
                let near = (i + WALK_STEPS).min(self.numbers);
                while i < near && past(self.keys[i], q) {
                    i += 1;
                }
                if i == near && i < self.numbers && past(self.keys[i], q) {
                    i = self.find(q, upper);
                }
                *out = i as u32;
            }
            return;
        }
        for (&q, out) in queries.iter().zip(dst) {
            *out = self.find(q, upper) as u32;
        }
    }

    /// The answer for one query: a halving of its bucket's keys.
    fn find(&self, q: f64, upper: bool) -> usize {
        if q.is_nan() {
            return if upper { self.keys.len() } else { self.numbers };
        }
        let past = |v: f64| if upper { v <= q } else { v < q };
        let b = self.bucket(q);
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        let (mut base, mut len) = (lo, hi - lo);
        while len > 1 {
            let half = len / 2;
            base = if past(self.keys[base + half - 1]) {
                base + half
            } else {
                base
            };
            len -= half;
        }
        base + usize::from(len == 1 && past(self.keys[base]))
    }
}

/// How a task searches one sorted column, decided once in the task.
pub(super) enum KeySearch {
    /// At most `FEW_KEYS` keys, copied as f64 (`search_few`).
    Few(Vec<f64>),
    /// At most `FEW_KEYS` keys spread evenly (`EvenKeys`).
    Even(EvenKeys),
    /// Many keys searched by at least an eighth as many queries (`SearchIndex`).
    Indexed(SearchIndex),
    /// A halving of the column read in place (`search_sorted`).
    Halving,
}

impl KeySearch {
    /// The search of `rows` sorted keys read by `key` for a task of `queries` rows.
    pub fn new(key: &dyn Fn(usize) -> f64, rows: usize, queries: usize) -> Result<KeySearch> {
        if rows <= FEW_KEYS {
            let keys = try_collect(rows, (0..rows).map(key))?;
            return Ok(EvenKeys::new(keys).map_or_else(KeySearch::Few, KeySearch::Even));
        }
        // The index reads every key once; each query then saves most of a halving.
        let index = match queries >= rows / 8 {
            true => SearchIndex::new(key, rows)?,
            false => None,
        };
        Ok(index.map_or(KeySearch::Halving, KeySearch::Indexed))
    }
}

/// Sorted columns up to this many rows are searched by `search_few`.
pub(super) const FEW_KEYS: usize = 4096;

/// Queries searched together where each searches the whole column.
const LOCKSTEP: usize = 8;

/// Keys an ascending query steps over one by one before it gallops.
const WALK_STEPS: usize = 8;
/// Rows between two answers past which the queries are taken as random (no galloping).
const FAR_ROWS: usize = 4096;

/// Rows `first..` of `Reshape`: output element `e` (row-major) is input element `e`.
pub(super) fn reshape<S: Elem, T: Lane>(
    x: &StoredRows<S>,
    first: usize,
    lanes: usize,
    dst: &mut [T],
) {
    let width = x.lanes;
    for (i, out) in dst.iter_mut().enumerate() {
        let e = first * lanes + i;
        *out = T::from_elem(x.row(e / width)[e % width]);
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::{search_few, search_sorted, SearchIndex, StoredRows};
    use crate::column::{Column, ColumnData};
    use crate::value::Value;

    /// Pseudo-random numbers below the one asked for, from `seed`.
    fn below_from(mut state: u32) -> impl FnMut(u32) -> u32 {
        move |below| {
            state = state.wrapping_mul(1664525).wrapping_add(1013904223);
            (state >> 8) % below
        }
    }

    #[test]
    fn values_from_a_row_run_on_across_parts() {
        let part = |v: Vec<u32>| Rc::new(Value::host(Column::new(ColumnData::U32(v), 2).unwrap()));
        // Rows of two lanes in parts of 2, 0 and 3 rows.
        let value = Value::parts(vec![
            part(vec![0, 1, 2, 3]),
            part(vec![]),
            part(vec![4, 5, 6, 7, 8, 9]),
        ]);
        let rows = StoredRows::<u32>::new(&value).unwrap();
        for first in 0..=6 {
            let expected: Vec<u32> = (2 * first as u32..10).collect();
            assert_eq!(
                rows.values_from(first).copied().collect::<Vec<_>>(),
                expected,
                "from {first}"
            );
        }
    }

    #[test]
    fn random_queries_search_in_lockstep_to_the_binary_search_answer() {
        let mut next = below_from(5);
        // Far apart (past FAR_ROWS), so groups of queries search the whole column; NaN
        // keys last, NaN queries among the others, a tail shorter than a group.
        for rows in [0usize, 1, 2, 7, 20_000] {
            let mut keys: Vec<f64> = (0..rows).map(|_| next(1000) as f64 - 500.0).collect();
            keys.sort_by(f64::total_cmp);
            if let Some(last) = keys.last_mut() {
                *last = f64::NAN;
            }
            let queries: Vec<f64> = (0..203)
                .map(|i| match i % 37 {
                    5 => f64::NAN,
                    _ => next(1200) as f64 - 600.0 + 0.5 * (i % 2) as f64,
                })
                .collect();
            for upper in [false, true] {
                let mut got = vec![0u32; queries.len()];
                search_sorted(&|i| keys[i], keys.len(), &queries, upper, &mut got);
                for (&q, g) in queries.iter().zip(&got) {
                    let expected = keys.partition_point(|&k| match (k.is_nan(), q.is_nan()) {
                        (false, false) if upper => k <= q,
                        (false, false) => k < q,
                        (false, true) => true,
                        (true, q_nan) => upper && q_nan,
                    });
                    assert_eq!(
                        *g as usize, expected,
                        "{rows} keys, query {q}, upper {upper}"
                    );
                }
                // The search of few keys copied gives the same answers.
                let mut few = vec![0u32; queries.len()];
                match upper {
                    true => search_few::<true>(&keys, &queries, &mut few),
                    false => search_few::<false>(&keys, &queries, &mut few),
                }
                assert_eq!(few, got, "search_few of {rows} keys, upper {upper}");
            }
        }
    }

    #[test]
    fn evenly_spread_keys_step_from_an_estimate_to_the_binary_search_answer() {
        let mut next = below_from(7);
        // Equal histogram edges as float32 holds them, whole numbers, keys a little uneven:
        // queries on, between, just off, below and past the keys, infinite and NaN.
        let edges: Vec<f64> = (0..=24)
            .map(|i| (-100.0 + i as f64 * 200.0 / 24.0) as f32 as f64)
            .collect();
        let whole: Vec<f64> = (0..50).map(|i| i as f64).collect();
        let spread: Vec<f64> = (0..30)
            .map(|i| i as f64 * 3.0 + (i % 2) as f64 / 2.0)
            .collect();
        let ids: Vec<f64> = (1..=260).map(|i| i as f64).collect();
        for keys in [edges, whole, spread, ids] {
            let mut queries: Vec<f64> = (0..400)
                .map(|_| next(30_000) as f64 / 100.0 - 150.0)
                .collect();
            for &k in &keys {
                queries.extend([k, k - 1e-9, k + 1e-9, f64::from_bits(k.to_bits() + 1)]);
            }
            queries.extend([f64::NEG_INFINITY, f64::INFINITY, f64::NAN, -1e300, 1e300]);
            // A tiny query whose distance to the first key rounds to a whole number; whole
            // numbers past f64's exact ones.
            let huge = (1u64 << 53) as f64;
            queries.extend([-0.0, 1e-20, -1e-20, huge, -huge, huge * 64.0, 0.5, -0.5]);
            let even = super::EvenKeys::new(keys.clone()).ok();
            let even = even.unwrap_or_else(|| panic!("{keys:?} are taken as evenly spread"));
            let whole_steps = keys.windows(2).all(|k| k[1] - k[0] == 1.0);
            assert_eq!(even.consecutive, whole_steps, "{keys:?}");
            for upper in [false, true] {
                let (mut want, mut got) = (vec![0; queries.len()], vec![0; queries.len()]);
                match upper {
                    true => search_few::<true>(&keys, &queries, &mut want),
                    false => search_few::<false>(&keys, &queries, &mut want),
                }
                even.search(&queries, upper, &mut got);
                assert_eq!(got, want, "keys {keys:?}, upper {upper}");
            }
        }
        // Keys bunched at one end, or repeated, are not taken as even.
        let bunched: Vec<f64> = (0..20).map(|i| (i * i) as f64).collect();
        assert!(super::EvenKeys::new(bunched).is_err());
        let repeated: Vec<f64> = (0..20).map(|i| i.min(18) as f64).collect();
        assert!(super::EvenKeys::new(repeated).is_err());
    }

    #[test]
    fn an_index_of_the_keys_gives_the_binary_search_answer() {
        let mut next = below_from(9);
        // Evenly spread, skewed (most keys in one bucket), with runs of ties, -0 and +0,
        // NaN keys last; queries below, between, on and past the keys, infinite and NaN.
        let spread: Vec<f64> = (0..20_000).map(|_| next(100_000) as f64 * 0.25).collect();
        let skewed: Vec<f64> = (0..9_000)
            .map(|i| match i % 100 {
                0 => 1e6 + next(1000) as f64,
                _ => next(50) as f64 - 25.0,
            })
            .chain([-0.0, 0.0, -0.0, f64::NAN, f64::NAN])
            .collect();
        for (what, mut keys) in [("spread", spread), ("skewed", skewed)] {
            keys.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
                (false, false) => a.partial_cmp(b).unwrap(),
                (a, b) => a.cmp(&b),
            });
            let index = SearchIndex::new(&|i| keys[i], keys.len()).unwrap().unwrap();
            let mut queries: Vec<f64> = (0..5_000)
                .map(|_| next(30_000) as f64 - 2_000.0 + 0.5 * (next(2) as f64))
                .collect();
            queries.extend(keys.iter().step_by(97).copied());
            queries.extend([f64::NEG_INFINITY, f64::INFINITY, f64::NAN, -0.0, 0.0, 1e300]);
            for upper in [false, true] {
                let mut expected = vec![0u32; queries.len()];
                search_sorted(&|i| keys[i], keys.len(), &queries, upper, &mut expected);
                let mut got = vec![0u32; queries.len()];
                index.search(&queries, upper, &mut got);
                assert_eq!(got, expected, "{what} keys, upper {upper}");
            }
            // Ascending queries (the walk), ties and infinities among them, NaN last; and
            // far apart (each past many keys: searched in their buckets, not walked).
            let mut ascending: Vec<f64> = queries.iter().copied().filter(|q| !q.is_nan()).collect();
            ascending.sort_by(|a, b| a.partial_cmp(b).unwrap());
            ascending.extend([f64::NAN]);
            let apart: Vec<f64> = (0..64).map(|j| j as f64 * 400.0 - 30.0).collect();
            for upper in [false, true] {
                for piece in [
                    &ascending[..ascending.len() - 1],
                    &ascending[..],
                    &ascending[..1],
                    &apart[..],
                ] {
                    let mut expected = vec![0u32; piece.len()];
                    search_sorted(&|i| keys[i], keys.len(), piece, upper, &mut expected);
                    let mut got = vec![0u32; piece.len()];
                    index.search(piece, upper, &mut got);
                    assert_eq!(got, expected, "{what} keys, ascending, upper {upper}");
                }
            }
        }
        // Keys of one value or an infinite range take no index.
        assert!(SearchIndex::new(&|_| 3.0, 10).unwrap().is_none());
        let infinite = [f64::NEG_INFINITY, 1.0, 2.0];
        assert!(SearchIndex::new(&|i| infinite[i], 3).unwrap().is_none());
    }

    #[test]
    fn ascending_queries_walk_and_gallop_to_the_binary_search_answer() {
        let mut next = below_from(3);
        let mut keys: Vec<u32> = (0..3000).map(|_| next(500)).collect();
        keys.sort();
        // Ascending with small and large steps, then out of order, then past the end.
        let mut queries: Vec<f64> = (0..400).map(|i| i as f64 * 0.5).collect();
        queries.extend((0..50).map(|_| next(600) as f64));
        queries.extend([f64::NAN, 10.0, 499.0, 499.0, 1e9, -1.0]);
        for upper in [false, true] {
            let mut got = vec![0u32; queries.len()];
            search_sorted(&|i| keys[i] as f64, keys.len(), &queries, upper, &mut got);
            for (&q, g) in queries.iter().zip(&got) {
                // NaN is after every key.
                let expected = keys.partition_point(|&k| match upper {
                    _ if q.is_nan() => true,
                    true => k as f64 <= q,
                    false => (k as f64) < q,
                });
                assert_eq!(*g as usize, expected, "query {q}, upper {upper}");
            }
        }
    }
}
