//! A heapsort for the engine's few small orderings (a plan's members, a schedule's frees, a
//! bucket of rows): each of std's sorts adds kilobytes of wasm per type it sorts, this a few
//! hundred bytes, in O(n log n) at worst and with no allocation.

/// Sorts `items` by `less` (not stable).
pub fn heap_sort_by<T>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    // The largest at the root of a max-heap, moved to the end, one at a time.
    for start in (0..items.len() / 2).rev() {
        sift_down(items, start, &less);
    }
    for end in (1..items.len()).rev() {
        items.swap(0, end);
        sift_down(&mut items[..end], 0, &less);
    }
}

/// Sorts `items` in their order.
pub fn heap_sort<T: Ord>(items: &mut [T]) {
    heap_sort_by(items, |a, b| a < b);
}

/// Restores the max-heap `heap` below `at` after the item at `at` changed.
pub fn sift_down<T>(heap: &mut [T], mut at: usize, less: &impl Fn(&T, &T) -> bool) {
    loop {
        let left = 2 * at + 1;
        let mut largest = at;
        for child in [left, left + 1] {
            if child < heap.len() && less(&heap[largest], &heap[child]) {
                largest = child;
            }
        }
        if largest == at {
            return;
        }
        heap.swap(at, largest);
        at = largest;
    }
}

#[cfg(test)]
mod tests {
    use super::heap_sort;

    #[test]
    fn sorts_every_length_with_ties() {
        let mut seed = 7u32;
        for len in 0..70 {
            let mut items: Vec<u32> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    seed >> 28
                })
                .collect();
            let mut expected = items.clone();
            expected.sort();
            heap_sort(&mut items);
            assert_eq!(items, expected, "{len} items");
        }
    }
}
