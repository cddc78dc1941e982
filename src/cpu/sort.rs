//! The CPU's sort by one or more uint32 keys (most significant first), four ways:
//! - **by counts**: one key of few values (at most 16 bits, no more values than rows):
//!   a counting pass and a placing pass, as a counting sort;
//! - **packed**: where the keys' bits and the row number fit in 64 bits (a sparse matrix's
//!   row and column numbers, say), each row is one word, keys above the row number, and an
//!   LSD radix sort in digits of up to 11 bits moves the words themselves: every pass reads
//!   in order, and the sorted words hold the permutation;
//! - **by buckets**: where the first key has about as many values as there are rows (a
//!   sparse matrix's row numbers), one counting pass puts each row in its key's bucket, as
//!   scipy's conversions do, and the few rows sharing a bucket are sorted by the other keys;
//! - **by digits**: an LSD radix sort of (key, row) pairs in digits of up to 11 bits, whose
//!   counts stay in L1, from the last key's lowest digit up. One read of each key counts
//!   every digit; a digit all rows share moves nothing and is skipped.
//!
//! Keys are read by their low bits alone (higher bits are masked off), so every backend
//! orders keys past their bound alike.

use std::borrow::Cow;
use std::cmp::Ordering;

use std::rc::Rc;

use super::{internal, CpuDevice};
use crate::column::{try_collect, ColumnData};
use crate::dtype::DType;
use crate::engine::{DeviceModel, SortModel, Sorts};
use crate::error::Result;
use crate::memory::Home;
use crate::value::Value;

/// 2^11 counts (8 KiB) per digit stay in L1 beside the pass's streams.
const MAX_DIGIT_BITS: u32 = 11;

/// Buckets at most this many times the rows: beyond, the counts outweigh the data.
const MAX_BUCKETS_PER_ROW: u64 = 2;
/// Rows per bucket at most, on average, for sorting by buckets (each bucket is sorted by
/// comparisons).
const MAX_ROWS_PER_BUCKET: u64 = 8;
/// Buckets up to this size are sorted by insertion.
const INSERTION_ROWS: usize = 16;

/// Fills `out` (empty, with room for every row) with the stable permutation ordering rows
/// by `keys` (each key's chunks, in order; the most significant key first), each by its low
/// `bits` bits, and each of `sorted` (a key's index, and an empty list with room for every
/// row) with that key in the permutation's order. Only the first `ordered_rows` rows are
/// read (the rest may be 0). Returns the passes over the rows it made.
pub(super) fn sort_permutation(
    keys: &[&[&[u32]]],
    bits: &[u32],
    ordered_rows: u32,
    out: &mut Vec<u32>,
    sorted: &mut [(usize, &mut Vec<u32>)],
) -> Result<u64> {
    let passes = match super::top_rows::first_rows(keys, bits, ordered_rows, out)? {
        Some(passes) => passes,
        None => sort_rows(keys, bits, out, sorted)?,
    };
    // Keys the sort did not write as it sorted are gathered through the permutation.
    for (key, dst) in sorted.iter_mut() {
        if dst.len() != out.len() {
            let key = contiguous(keys[*key])?;
            dst.clear();
            dst.extend(
                out.iter()
                    .map(|&row| key.get(row as usize).copied().unwrap_or(0)),
            );
        }
    }
    Ok(passes + sorted.len() as u64)
}

fn sort_rows(
    keys: &[&[&[u32]]],
    bits: &[u32],
    out: &mut Vec<u32>,
    sorted: &mut [(usize, &mut Vec<u32>)],
) -> Result<u64> {
    let n: usize = keys
        .first()
        .map_or(0, |chunks| chunks.iter().map(|c| c.len()).sum());
    let masks: Vec<u32> = bits.iter().map(|&b| crate::ir::key_mask(b)).collect();
    out.clear();
    if let Some(passes) = sort_by_counts(keys, &masks, n, out, sorted)? {
        return Ok(passes);
    }
    if let Some(passes) = sort_packed(keys, bits, &masks, n, out, sorted)? {
        return Ok(passes);
    }
    // In u64: a 32-bit first key has 2^32 buckets, past a wasm32 usize.
    let (buckets, rows) = (masks.first().map_or(0, |&m| m as u64 + 1), n as u64);
    if keys.len() > 1
        && buckets <= MAX_BUCKETS_PER_ROW * rows
        && rows <= MAX_ROWS_PER_BUCKET * buckets
    {
        return sort_by_buckets(keys, &masks, out);
    }
    sort_by_digits(keys, bits, &masks, out)
}

/// The sort by counts, or `None` unless there is one key whose values (as masked) span at
/// most this many bits and are no more than the rows: 2^16 counts (256 KiB).
const COUNTED_KEY_BITS: u32 = 16;

/// A lone key of few values (categories, codes, small integers): one pass counts each
/// value's rows, one places each row after the rows of smaller values and the earlier rows
/// of its own (stable), and the sorted key is each value repeated its count.
fn sort_by_counts(
    keys: &[&[&[u32]]],
    masks: &[u32],
    n: usize,
    out: &mut Vec<u32>,
    sorted: &mut [(usize, &mut Vec<u32>)],
) -> Result<Option<u64>> {
    let ([key], &[mask]) = (keys, masks) else {
        return Ok(None);
    };
    // Folded without an early exit, so it vectorizes.
    let seen = key
        .iter()
        .fold(0, |all, chunk| chunk.iter().fold(all, |all, &k| all | k));
    let bits = u32::BITS - (seen & mask).leading_zeros();
    // Checked before the shift: 1 << 32 overflows a 32-bit usize (wasm).
    if bits > COUNTED_KEY_BITS || 1usize << bits > n {
        return Ok(None);
    }
    let values = 1usize << bits;
    let mut counts = zeros(values)?;
    for chunk in key.iter() {
        for &k in chunk.iter() {
            counts[(k & mask) as usize] += 1;
        }
    }
    let mut start = 0;
    let mut next = try_collect(
        values,
        counts.iter().map(|&count| {
            start += count;
            start - count
        }),
    )?;
    out.resize(n, 0);
    let mut row = 0u32;
    for chunk in key.iter() {
        for &k in chunk.iter() {
            let at = &mut next[(k & mask) as usize];
            out[*at as usize] = row;
            *at += 1;
            row += 1;
        }
    }
    // Keys with bits past the mask are gathered whole after (`sort_permutation`).
    for (_, dst) in sorted.iter_mut().filter(|_| seen & !mask == 0) {
        for (value, &count) in counts.iter().enumerate() {
            dst.extend(std::iter::repeat_n(value as u32, count as usize));
        }
    }
    Ok(Some(2))
}

/// The packed sort, or `None` where the keys' bits and the row number take more than 64.
/// The sorted words hold the keys of `sorted` too, unless a key has bits past its mask.
fn sort_packed(
    keys: &[&[&[u32]]],
    bits: &[u32],
    masks: &[u32],
    n: usize,
    out: &mut Vec<u32>,
    sorted: &mut [(usize, &mut Vec<u32>)],
) -> Result<Option<u64>> {
    let row_bits = u64::BITS - (n.max(1) as u64 - 1).leading_zeros();
    let key_bits: u32 = bits.iter().map(|&b| b.clamp(1, 32)).sum();
    if key_bits + row_bits > u64::BITS {
        return Ok(None);
    }
    // Each row's word: its keys, most significant first, above its row number.
    let mut words = try_collect(n, 0..n as u64)?;
    let mut shift = row_bits + key_bits;
    // Per key: where it sits in the words, and whether any of its values is past its mask.
    let mut placed = Vec::with_capacity(keys.len());
    for ((key, &bits), &mask) in keys.iter().zip(bits).zip(masks) {
        shift -= bits.clamp(1, 32);
        let mut past_mask = 0;
        let values = key.iter().flat_map(|c| c.iter());
        for (word, &k) in words.iter_mut().zip(values) {
            *word |= u64::from(k & mask) << shift;
            past_mask |= k & !mask;
        }
        placed.push((shift, past_mask == 0));
    }
    let passes = key_bits.div_ceil(MAX_DIGIT_BITS).max(1);
    let width = key_bits.div_ceil(passes);
    let radix = 1usize << width;
    let digit = |word: u64, pass: u32| (word >> (row_bits + pass * width)) as usize & (radix - 1);
    let mut counts = zeros(radix * passes as usize)?;
    for &word in &words {
        for (pass, counts) in (0..).zip(counts.chunks_exact_mut(radix)) {
            counts[digit(word, pass)] += 1;
        }
    }
    let mut spare = try_collect(n, std::iter::repeat_n(0u64, n))?;
    let mut moves = 0;
    for (pass, counts) in (0..).zip(counts.chunks_exact_mut(radix)) {
        // A digit all rows share moves nothing.
        if counts.contains(&(n as u32)) {
            continue;
        }
        let mut start = 0;
        for count in counts.iter_mut() {
            (*count, start) = (start, start + *count);
        }
        for &word in &words {
            let at = &mut counts[digit(word, pass)];
            spare[*at as usize] = word;
            *at += 1;
        }
        std::mem::swap(&mut words, &mut spare);
        moves += 1;
    }
    let row_mask = (1u64 << row_bits) - 1;
    out.extend(words.iter().map(|&word| (word & row_mask) as u32));
    for (key, dst) in sorted.iter_mut() {
        if let Some(&(shift, true)) = placed.get(*key) {
            let mask = masks[*key];
            dst.extend(words.iter().map(|&word| (word >> shift) as u32 & mask));
        }
    }
    Ok(Some(1 + moves))
}

/// A key as one slice: its chunk, or its chunks copied together.
pub(super) fn contiguous<'a>(chunks: &[&'a [u32]]) -> Result<Cow<'a, [u32]>> {
    Ok(match chunks {
        [one] => Cow::Borrowed(*one),
        _ => {
            let n = chunks.iter().map(|c| c.len()).sum();
            Cow::Owned(try_collect(
                n,
                chunks.iter().flat_map(|c| c.iter().copied()),
            )?)
        }
    })
}

fn zeros(len: usize) -> Result<Vec<u32>> {
    try_collect(len, std::iter::repeat_n(0u32, len))
}

/// Rows counted into buckets of the first key (the second key carried along, so that
/// buckets compare keys in order rather than at random rows), then each bucket of two rows
/// or more sorted by the other keys (rows in a bucket are in order: a tie falls to the row
/// number).
fn sort_by_buckets(keys: &[&[&[u32]]], masks: &[u32], out: &mut Vec<u32>) -> Result<u64> {
    let first = masks[0];
    let buckets = first as usize + 1;
    // Counted one place up, so that after the prefix sum `ends[b]` is where bucket b
    // starts, and after placing (which advances it) where bucket b ends.
    let mut ends = zeros(buckets + 1)?;
    for &key in keys[0].iter().flat_map(|c| c.iter()) {
        ends[(key & first) as usize + 1] += 1;
    }
    for b in 1..ends.len() {
        ends[b] += ends[b - 1];
    }
    let n = ends[buckets] as usize;
    let mut second = zeros(n)?;
    out.resize(n, 0);
    let pairs = keys[0].iter().flat_map(|c| c.iter());
    let seconds = keys[1].iter().flat_map(|c| c.iter());
    for ((&key, &then), row) in pairs.zip(seconds).zip(0u32..) {
        let at = &mut ends[(key & first) as usize];
        out[*at as usize] = row;
        second[*at as usize] = then & masks[1];
        *at += 1;
    }
    let rest: Vec<Cow<[u32]>> = keys[2..]
        .iter()
        .map(|k| contiguous(k))
        .collect::<Result<_>>()?;
    // (second key, row) pairs in order, then by the keys after the second.
    let order = |a: &(u32, u32), b: &(u32, u32)| {
        a.0.cmp(&b.0).then_with(|| {
            let (x, y) = (a.1 as usize, b.1 as usize);
            let low = |key: &[u32], row: usize, mask: u32| key.get(row).map(|k| k & mask);
            (rest.iter().zip(&masks[2..]))
                .map(|(key, &mask)| low(key, x, mask).cmp(&low(key, y, mask)))
                .find(|o| o.is_ne())
                .unwrap_or(x.cmp(&y))
        })
    };
    let mut bucket = Vec::new();
    let mut start = 0;
    for &end in &ends[..buckets] {
        let range = start..end as usize;
        start = end as usize;
        if range.len() < 2 {
            continue;
        }
        bucket.clear();
        bucket.extend(
            second[range.clone()]
                .iter()
                .copied()
                .zip(out[range.clone()].iter().copied()),
        );
        match range.len() {
            len if len <= INSERTION_ROWS => insertion_sort(&mut bucket, &order),
            _ => crate::heap_sort::heap_sort_by(&mut bucket, |a, b| order(a, b).is_lt()),
        }
        for (row, &(_, sorted)) in out[range].iter_mut().zip(&bucket) {
            *row = sorted;
        }
    }
    Ok(3)
}

fn insertion_sort<T: Copy>(items: &mut [T], order: &impl Fn(&T, &T) -> Ordering) {
    for i in 1..items.len() {
        let item = items[i];
        let mut j = i;
        while j > 0 && order(&items[j - 1], &item).is_gt() {
            items[j] = items[j - 1];
            j -= 1;
        }
        items[j] = item;
    }
}

/// One radix pass: a digit of one key, and where each digit value's rows go.
struct Digit {
    key: usize,
    shift: u32,
    /// The digit's values below this: `(1 << width) - 1`.
    mask: u32,
    counts: Vec<u32>,
}

/// The LSD radix sort, from the last key's lowest digit to the first key's highest.
fn sort_by_digits(
    keys: &[&[&[u32]]],
    bits: &[u32],
    masks: &[u32],
    out: &mut Vec<u32>,
) -> Result<u64> {
    let n: usize = keys[0].iter().map(|c| c.len()).sum();
    let mut digits = Vec::new();
    for key in (0..keys.len()).rev() {
        // The widest digits below the limit that cover the key, all of one width.
        let passes = bits[key].div_ceil(MAX_DIGIT_BITS).max(1);
        let width = bits[key].div_ceil(passes).max(1);
        let radix = 1usize << width;
        let mut counts = zeros(radix * passes as usize)?;
        for &k in keys[key].iter().flat_map(|c| c.iter()) {
            let k = k & masks[key];
            for (pass, counts) in counts.chunks_exact_mut(radix).enumerate() {
                counts[((k >> (pass as u32 * width)) as usize) & (radix - 1)] += 1;
            }
        }
        for (pass, counts) in counts.chunks_exact(radix).enumerate() {
            // A digit all rows share moves nothing.
            if !counts.contains(&(n as u32)) {
                digits.push(Digit {
                    key,
                    shift: pass as u32 * width,
                    mask: radix as u32 - 1,
                    counts: try_collect(radix, counts.iter().copied())?,
                });
            }
        }
    }
    if digits.is_empty() {
        out.extend(0..n as u32);
        return Ok(1);
    }
    let passes = digits.len();
    // Keys whose first pass follows another key's are read at the rows so far.
    let by_row: Vec<Option<Cow<[u32]>>> = (0..keys.len())
        .map(|k| {
            let first_pass = digits.iter().position(|d| d.key == k);
            (first_pass.is_some_and(|p| p > 0))
                .then(|| contiguous(keys[k]))
                .transpose()
        })
        .collect::<Result<_>>()?;
    // The current key (masked) in the order of the rows so far, between its passes.
    let carries = (1..passes).any(|p| digits[p].key == digits[p - 1].key);
    let mut carried = [
        zeros(if carries { n } else { 0 })?,
        zeros(if carries { n } else { 0 })?,
    ];
    let mut spare_rows = zeros(if passes > 1 { n } else { 0 })?;
    out.resize(n, 0);
    for step in 0..passes {
        let same_key_before = step > 0 && digits[step - 1].key == digits[step].key;
        let carry_on = step + 1 < passes && digits[step + 1].key == digits[step].key;
        let digit = &mut digits[step];
        let mut start = 0;
        for count in digit.counts.iter_mut() {
            (*count, start) = (start, start + *count);
        }
        let (key, shift, mask, key_mask) = (digit.key, digit.shift, digit.mask, masks[digit.key]);
        let counts = &mut digit.counts;
        // Rows alternate so that the last pass writes `out`.
        let (rows_in, rows_out): (&[u32], &mut [u32]) = match (passes - step) % 2 {
            1 => (&spare_rows, out),
            _ => (out, &mut spare_rows),
        };
        let (first, second) = carried.split_at_mut(1);
        let (keys_in, keys_out) = match step % 2 {
            0 => (&second[0], &mut first[0]),
            _ => (&first[0], &mut second[0]),
        };
        let mut place = |k: u32, row: u32| {
            let k = k & key_mask;
            let d = ((k >> shift) & mask) as usize;
            let at = counts[d] as usize;
            counts[d] += 1;
            rows_out[at] = row;
            if carry_on {
                keys_out[at] = k;
            }
        };
        match () {
            // The first pass reads the key where it is stored and numbers the rows.
            _ if step == 0 => (keys[key].iter().flat_map(|c| c.iter()).zip(0u32..))
                .for_each(|(&k, row)| place(k, row)),
            _ if same_key_before => {
                (keys_in.iter().zip(rows_in)).for_each(|(&k, &row)| place(k, row))
            }
            _ => {
                let by_row = by_row[key].as_deref().unwrap_or_default();
                rows_in
                    .iter()
                    .for_each(|&row| place(by_row.get(row as usize).copied().unwrap_or(0), row))
            }
        }
    }
    Ok(1 + passes as u64)
}

impl SortModel for CpuDevice {
    fn sorts(&self, _rows: u32, _keys: usize) -> bool {
        true
    }
    fn sorts_keys_in_chunks(&self) -> bool {
        true
    }
    fn sort_scratch_bytes(&self, rows: u32, keys: usize) -> u64 {
        // Packed: two arrays of 64-bit words. By digits: the key carried between passes
        // (two arrays) and the rows between passes; by buckets: up to two bucket ends per
        // row and the carried second key.
        // Keys stored in several chunks are copied whole to be read by row.
        (3 + keys as u64) * self.value_bytes(DType::U32, 1, rows)
    }
}

impl Sorts for CpuDevice {
    async fn sort_permutation_and_keys(
        &self,
        home: &mut Home,
        keys: &[&[Rc<Value>]],
        bits: &[u32],
        ordered_rows: u32,
        sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)> {
        let mut chunks: Vec<Vec<&[u32]>> = Vec::with_capacity(keys.len());
        for key in keys {
            let mut parts = Vec::with_capacity(key.len());
            for value in key.iter() {
                match value.host_column().map(|c| &c.data) {
                    Some(ColumnData::U32(keys)) => parts.push(keys.as_slice()),
                    _ => return Err(internal("sort keys are not uint32 host columns")),
                }
            }
            chunks.push(parts);
        }
        let chunks: Vec<&[&[u32]]> = chunks.iter().map(|c| &c[..]).collect();
        let rows: usize = chunks
            .first()
            .map_or(0, |c| c.iter().map(|p| p.len()).sum());
        if sorted.iter().any(|&k| k >= chunks.len()) {
            return Err(internal("a sorted key the sort does not have"));
        }
        let mut leases = Vec::with_capacity(1 + sorted.len());
        for _ in 0..=sorted.len() {
            leases.push(self.take(home, DType::U32, rows)?);
        }
        let mut lists = Vec::with_capacity(leases.len());
        for lease in leases.iter_mut() {
            let column = lease.get_mut();
            column.rows = rows as u32;
            match &mut column.data {
                ColumnData::U32(list) => lists.push(list),
                _ => return Err(internal("a uint32 lease holds another type")),
            }
        }
        let Some((out, keys_out)) = lists.split_first_mut() else {
            return Err(internal("a sort without its permutation's list"));
        };
        let mut sorted_out: Vec<(usize, &mut Vec<u32>)> = sorted
            .iter()
            .copied()
            .zip(keys_out.iter_mut().map(|l| &mut **l))
            .collect();
        let passes = sort_permutation(&chunks, bits, ordered_rows, out, &mut sorted_out)?;
        self.core().counters.add_kernels(passes);
        let id = self.core().id;
        let mut values = (leases.into_iter()).map(|lease| Value::from_host_lease(id, lease));
        let permutation = values
            .next()
            .ok_or_else(|| internal("a sort without its permutation"))?;
        Ok((permutation, values.collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::{sort_by_buckets, sort_by_digits, sort_packed, sort_permutation};
    use crate::ir::key_mask;

    fn sorted_by(keys: &[&[u32]], bits: &[u32]) -> Vec<u32> {
        let mut expected: Vec<u32> = (0..keys[0].len() as u32).collect();
        let low =
            |key: &[u32], bits: u32, row: u32| key[row as usize] & (((1u64 << bits) - 1) as u32);
        expected.sort_by_key(|&i| {
            keys.iter()
                .zip(bits)
                .map(|(k, &b)| low(k, b, i))
                .collect::<Vec<_>>()
        });
        expected
    }

    fn random(len: usize, seed: u32) -> Vec<u32> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state.wrapping_mul(1664525).wrapping_add(1013904223);
                state >> 7
            })
            .collect()
    }

    #[test]
    fn radix_passes_give_the_stable_order() {
        let keys = random(5000, 7);
        for bits in [1, 5, 11, 12, 13, 20, 23, 25, 32] {
            let mut out = Vec::with_capacity(keys.len());
            let (a, b) = keys.split_at(1234);
            sort_permutation(&[&[a, b]], &[bits], u32::MAX, &mut out, &mut []).unwrap();
            assert_eq!(out, sorted_by(&[&keys], &[bits]), "{bits} bits");
        }
        // A 32-bit key written in order as it sorts.
        let mut out = Vec::new();
        let mut sorted_keys = Vec::new();
        sort_permutation(
            &[&[&keys]],
            &[32],
            u32::MAX,
            &mut out,
            &mut [(0, &mut sorted_keys)],
        )
        .unwrap();
        let mut expected = keys.clone();
        expected.sort();
        assert!(sorted_keys == expected);
        // Every key alike in a digit: that digit moves nothing (a key past the bits sorted
        // by counts).
        let same = vec![(5 << 18) + 3; 100];
        let mut out = Vec::new();
        assert_eq!(
            sort_permutation(&[&[&same]], &[20], u32::MAX, &mut out, &mut []).unwrap(),
            1
        );
        assert_eq!(out, (0..100).collect::<Vec<u32>>());
    }

    #[test]
    fn a_key_of_few_values_sorts_by_counts_stably_and_writes_itself_as_stored() {
        let keys: Vec<u32> = random(5000, 13)
            .iter()
            .map(|k| k % 100 + (7 << 24))
            .collect();
        let (a, b) = keys.split_at(2222);
        // 32 bits: past the counted bits (sorted packed); 12 and 8: by counts.
        for bits in [32, 12, 8] {
            let mut out = Vec::new();
            let mut sorted_keys = Vec::new();
            let chunks: &[&[u32]] = &[a, &[], b];
            sort_permutation(
                &[chunks],
                &[bits],
                u32::MAX,
                &mut out,
                &mut [(0, &mut sorted_keys)],
            )
            .unwrap();
            assert_eq!(out, sorted_by(&[&keys], &[bits]), "{bits} bits");
            // The key as stored, bits past the mask too (a gather through the order).
            let expected: Vec<u32> = out.iter().map(|&r| keys[r as usize]).collect();
            assert!(sorted_keys == expected, "{bits} bits: sorted keys");
            // Within the mask: written as the sort counts.
            let low: Vec<u32> = keys.iter().map(|k| k & key_mask(bits)).collect();
            let mut out = Vec::new();
            let mut sorted_low = Vec::new();
            let chunks: &[&[u32]] = &[&low];
            sort_permutation(
                &[chunks],
                &[bits],
                u32::MAX,
                &mut out,
                &mut [(0, &mut sorted_low)],
            )
            .unwrap();
            let expected: Vec<u32> = out.iter().map(|&r| low[r as usize]).collect();
            assert!(
                sorted_low == expected,
                "{bits} bits: sorted keys within the mask"
            );
        }
    }

    #[test]
    fn several_keys_sort_packed_by_buckets_or_by_digits_to_the_same_order() {
        let n = 5000;
        // Row-like first keys (about one bucket per row) and few distinct first keys, each
        // over chunked and masked second keys.
        let many = random(n, 3).iter().map(|k| k % 6000).collect::<Vec<_>>();
        let few = random(n, 5).iter().map(|k| k % 7).collect::<Vec<_>>();
        let minor = random(n, 9).iter().map(|k| k % 5000).collect::<Vec<_>>();
        let third = random(n, 11);
        let masks = |bits: &[u32]| bits.iter().map(|&b| key_mask(b)).collect::<Vec<_>>();
        for (first, first_bits) in [(&many, 13), (&few, 3)] {
            for minor_bits in [4, 6, 13] {
                let (a, b) = minor.split_at(777);
                let keys: &[&[&[u32]]] = &[&[first], &[a, b]];
                let bits = [first_bits, minor_bits];
                let expected = sorted_by(&[first, &minor], &bits);
                let mut out = Vec::new();
                // Packed: a pass numbering rows and counting digits, then a pass per digit
                // of 13 + 13 bits at most (all 11 bits wide at most).
                // The keys come out of the words in order too (a chunked key, and one with
                // values past its mask, which the words cannot give whole).
                let (mut first_sorted, mut minor_sorted) = (Vec::new(), Vec::new());
                let mut sorted = [(0, &mut first_sorted), (1, &mut minor_sorted)];
                let passes =
                    sort_packed(keys, &bits, &masks(&bits), n, &mut out, &mut sorted).unwrap();
                let digits = (first_bits + minor_bits).div_ceil(11) as u64;
                assert!(out == expected, "packed, {first_bits} + {minor_bits} bits");
                assert_eq!(passes, Some(1 + digits));
                let in_order =
                    |key: &[u32]| out.iter().map(|&r| key[r as usize]).collect::<Vec<u32>>();
                assert!(first_sorted == in_order(first));
                let whole = minor.iter().all(|&k| k < 1 << minor_bits);
                assert_eq!(minor_sorted == in_order(&minor), whole, "{minor_bits} bits");
                // Into buckets: count, place, sort each bucket.
                out.clear();
                if first_bits == 13 {
                    let passes = sort_by_buckets(keys, &masks(&bits), &mut out).unwrap();
                    assert!(out == expected, "by buckets, {minor_bits} bits");
                    assert_eq!(passes, 3);
                }
                // By digits: a count, then a pass per digit of each key.
                out.clear();
                let passes = sort_by_digits(keys, &bits, &masks(&bits), &mut out).unwrap();
                let digits = (first_bits.div_ceil(11) + minor_bits.div_ceil(11)) as u64;
                assert!(
                    out == expected,
                    "by digits, {first_bits} + {minor_bits} bits"
                );
                assert_eq!(passes, 1 + digits);
            }
            // Past 64 bits with the row number: by buckets or by digits.
            let bits = [first_bits, 20, 32];
            let keys: &[&[&[u32]]] = &[&[first], &[&minor], &[&third]];
            let mut out = Vec::new();
            assert_eq!(
                sort_packed(keys, &bits, &masks(&bits), n, &mut out, &mut []).unwrap(),
                None
            );
            let mut third_sorted = Vec::new();
            sort_permutation(
                keys,
                &bits,
                u32::MAX,
                &mut out,
                &mut [(2, &mut third_sorted)],
            )
            .unwrap();
            assert!(out == sorted_by(&[first, &minor, &third], &bits));
            // Keys asked for in order are gathered through the permutation here.
            assert!(third_sorted
                .iter()
                .zip(&out)
                .all(|(&k, &row)| k == third[row as usize]));
        }
    }
}
