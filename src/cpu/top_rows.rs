//! The first rows of a stable sort alone (`topK` of a few rows): one read of the keys keeps
//! the smallest in a heap, as a JS loop would, instead of ordering every row. Each row is
//! one 64-bit word, its keys above its row number (as the packed sort), so the smallest
//! words are the first rows of the stable order.

use crate::column::try_collect;
use crate::error::Result;

/// Ordering this many times fewer rows than there are is worth a pass of its own.
const FEW_ROWS: usize = 16;

/// Fills `out` (empty) with the first `ordered` rows of the stable order of rows by `keys`
/// (each key's chunks; the most significant first; each by its low `bits` bits), then 0
/// for every other row. `None` where a full sort does as well: `ordered` is not much
/// smaller than the rows, or the keys and row number do not fit one word.
pub(super) fn first_rows(
    keys: &[&[&[u32]]],
    bits: &[u32],
    ordered: u32,
    out: &mut Vec<u32>,
) -> Result<Option<u64>> {
    let n: usize = keys
        .first()
        .map_or(0, |chunks| chunks.iter().map(|c| c.len()).sum());
    let ordered = ordered as usize;
    let row_bits = u64::BITS - (n.max(1) as u64 - 1).leading_zeros();
    let key_bits: u32 = bits.iter().map(|&b| b.clamp(1, 32)).sum();
    if ordered.saturating_mul(FEW_ROWS) > n || key_bits + row_bits > u64::BITS {
        return Ok(None);
    }
    let masks: Vec<u32> = bits.iter().map(|&b| crate::ir::key_mask(b)).collect();
    let mut shifts = Vec::with_capacity(bits.len());
    let mut shift = row_bits + key_bits;
    for &b in bits {
        shift -= b.clamp(1, 32);
        shifts.push(shift);
    }
    let columns = (keys.iter())
        .map(|key| super::sort::contiguous(key))
        .collect::<Result<Vec<_>>>()?;
    // The `ordered` smallest words so far, as a max-heap: a word below its top replaces it.
    let mut best: Vec<u64> = try_collect(ordered, std::iter::empty())?;
    // Words at or above `top` (the heap's largest once it is full) are passed over after
    // one comparison, in a loop with no call.
    let mut top = if ordered == 0 { 0 } else { u64::MAX };
    if let ([column], [mask], [shift]) = (&columns[..], &masks[..], &shifts[..]) {
        for (row, &key) in column.iter().enumerate() {
            let word = u64::from(key & mask) << shift | row as u64;
            if word < top {
                top = keep(&mut best, ordered, word);
            }
        }
    } else {
        for row in 0..n {
            let mut word = row as u64;
            for ((column, &mask), &shift) in columns.iter().zip(&masks).zip(&shifts) {
                word |= u64::from(column.get(row).copied().unwrap_or(0) & mask) << shift;
            }
            if word < top {
                top = keep(&mut best, ordered, word);
            }
        }
    }
    crate::heap_sort::heap_sort(&mut best);
    let row_mask = (1u64 << row_bits) - 1;
    out.clear();
    out.extend(best.iter().map(|&word| (word & row_mask) as u32));
    // The rows past the ordered ones are read by nothing (`Op::SortPermutation`).
    out.resize(n, 0);
    Ok(Some(1))
}

/// `word` kept among the `ordered` smallest words so far (`best`, a max-heap); the word
/// that later words must be below.
#[inline(never)]
fn keep(best: &mut Vec<u64>, ordered: usize, word: u64) -> u64 {
    if best.len() < ordered {
        best.push(word);
        sift_up(best);
    } else {
        best[0] = word;
        crate::heap_sort::sift_down(best, 0, &|a, b| a < b);
    }
    match best.len() == ordered {
        true => best[0],
        false => u64::MAX,
    }
}

/// Restores the max-heap after a push to its end.
fn sift_up(heap: &mut [u64]) {
    let mut i = heap.len().saturating_sub(1);
    while i > 0 && heap[(i - 1) / 2] < heap[i] {
        heap.swap(i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

#[cfg(test)]
mod tests {
    use super::first_rows;

    /// The first rows match a full stable sort's (ties by row), for two keys in uneven
    /// chunks; large `ordered`, and keys too wide for one word, leave it to the sort.
    #[test]
    fn the_first_rows_are_a_stable_sorts_first_rows() {
        let mut seed = 7u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let n = 5000usize;
        let ties: Vec<u32> = (0..n).map(|_| next() % 50).collect();
        let wide: Vec<u32> = (0..n).map(|_| next()).collect();
        let mut expected: Vec<u32> = (0..n as u32).collect();
        expected.sort_by_key(|&r| (ties[r as usize], wide[r as usize] & 0xffff, r));
        let (a, b) = ties.split_at(1234);
        for ordered in [0u32, 1, 7, 300] {
            let mut out = Vec::new();
            let keys: [&[&[u32]]; 2] = [&[a, &[], b], &[&wide]];
            let passes = first_rows(&keys, &[6, 16], ordered, &mut out).unwrap();
            assert_eq!(passes, Some(1));
            let k = ordered as usize;
            assert_eq!(out[..k], expected[..k], "the first {k} rows");
            assert!(
                out.len() == n && out[k..].iter().all(|&r| r == 0),
                "0 past them"
            );
        }
        let mut out = Vec::new();
        assert_eq!(first_rows(&[&[&ties]], &[6], 1000, &mut out).unwrap(), None);
        assert_eq!(
            first_rows(&[&[&ties], &[&wide]], &[32, 32], 1, &mut out).unwrap(),
            None
        );
    }
}
