//! The CPU's sort: an LSD radix sort of (key, row) pairs in digits of up to 11 bits, whose
//! counts stay in L1. One read of the keys counts every digit; a digit all keys share
//! moves nothing and is skipped, and the last pass writes the permutation in place.

use crate::column::try_collect;
use crate::error::Result;

/// 2^11 counts (8 KiB) per digit stay in L1 beside the pass's streams.
const MAX_DIGIT_BITS: u32 = 11;

/// Fills `out` (empty, with room for every key) with the stable permutation ordering
/// `keys` (chunks, in order) by their low `bits` bits alone. Returns the passes over the
/// keys it made.
pub(super) fn sort_permutation(keys: &[&[u32]], bits: u32, out: &mut Vec<u32>) -> Result<u64> {
    let n: usize = keys.iter().map(|k| k.len()).sum();
    let passes = bits.div_ceil(MAX_DIGIT_BITS).max(1) as usize;
    let width = bits.div_ceil(passes as u32).max(1);
    let radix = 1usize << width;
    let mask = (radix - 1) as u32;
    // Digits may span more bits than asked for: higher bits are dropped, so every backend
    // orders keys past the bound alike.
    let low = u32::MAX >> (32 - bits.clamp(1, 32));
    let zeros = |len: usize| try_collect(len, std::iter::repeat_n(0u32, len));
    let mut counts = zeros(radix * passes)?;
    for key in keys.iter().flat_map(|k| k.iter()).map(|&k| k & low) {
        for (pass, counts) in counts.chunks_exact_mut(radix).enumerate() {
            counts[((key >> (pass as u32 * width)) & mask) as usize] += 1;
        }
    }
    let moving: Vec<usize> = (0..passes)
        .filter(|&p| !counts[p * radix..(p + 1) * radix].contains(&(n as u32)))
        .collect();
    out.clear();
    if moving.is_empty() {
        out.extend(0..n as u32);
        return Ok(1);
    }
    let passes = moving.len();
    // Keys and rows between passes: the last pass writes its rows to `out` and no keys.
    let mut keys_between = [
        zeros(if passes > 1 { n } else { 0 })?,
        zeros(if passes > 2 { n } else { 0 })?,
    ];
    let mut spare_rows = zeros(if passes > 1 { n } else { 0 })?;
    out.resize(n, 0);
    for (step, &pass) in moving.iter().enumerate() {
        let counts = &mut counts[pass * radix..(pass + 1) * radix];
        let mut start = 0;
        for count in counts.iter_mut() {
            (*count, start) = (start, start + *count);
        }
        let shift = pass as u32 * width;
        let last = step + 1 == passes;
        // Rows alternate so that the last pass writes `out`.
        let (rows_in, rows_out): (&[u32], &mut [u32]) = match (passes - step) % 2 {
            1 => (&spare_rows, out),
            _ => (out, &mut spare_rows),
        };
        let (first, second) = keys_between.split_at_mut(1);
        let (keys_in, keys_out) = match step % 2 {
            0 => (&second[0], &mut first[0]),
            _ => (&first[0], &mut second[0]),
        };
        let mut place = |key: u32, row: u32| {
            let key = key & low;
            let digit = ((key >> shift) & mask) as usize;
            let at = counts[digit] as usize;
            counts[digit] += 1;
            rows_out[at] = row;
            if !last {
                keys_out[at] = key;
            }
        };
        match step {
            // The first pass reads the keys where they are stored and numbers the rows.
            0 => keys
                .iter()
                .flat_map(|k| k.iter())
                .zip(0u32..)
                .for_each(|(&key, row)| place(key, row)),
            _ => keys_in
                .iter()
                .zip(rows_in)
                .for_each(|(&key, &row)| place(key, row)),
        }
    }
    Ok(1 + passes as u64)
}

#[cfg(test)]
mod tests {
    use super::sort_permutation;

    fn sorted_by(keys: &[u32], bits: u32) -> Vec<u32> {
        let mut expected: Vec<u32> = (0..keys.len() as u32).collect();
        expected.sort_by_key(|&i| keys[i as usize] & (((1u64 << bits) - 1) as u32));
        expected
    }

    #[test]
    fn radix_passes_give_the_stable_order() {
        let mut state = 7u32;
        let keys: Vec<u32> = (0..5000)
            .map(|_| {
                state = state.wrapping_mul(1664525).wrapping_add(1013904223);
                state >> 7
            })
            .collect();
        for bits in [1, 5, 11, 12, 13, 20, 23, 25, 32] {
            let mut out = Vec::with_capacity(keys.len());
            let (a, b) = keys.split_at(1234);
            sort_permutation(&[a, b], bits, &mut out).unwrap();
            assert_eq!(out, sorted_by(&keys, bits), "{bits} bits");
        }
        // Every key alike in a digit: that digit moves nothing.
        let same = vec![5u32; 100];
        let mut out = Vec::new();
        assert_eq!(sort_permutation(&[&same], 20, &mut out).unwrap(), 1);
        assert_eq!(out, (0..100).collect::<Vec<u32>>());
    }
}
