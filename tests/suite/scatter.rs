//! The scatter primitive and what is built on it (compaction, the radix sort), against
//! host references and the CPU oracle.

use super::*;
use gputable::engine::SortModel;

pub async fn scatter_writes_each_row_where_it_says<T: Target>() {
    let destinations = u32s(&[3, 0, 9, 1], 1);
    let floats = ir::scatter(&destinations, &f32s(&[1.5, -2., 7., 4.], 1), 5).unwrap();
    // Chunked inputs (a task per chunk, one output), signed values, unwritten rows 0.
    let ints = ir::scatter(
        &chunked(ColumnData::U32(vec![4, 2, 0, 7]), 1, &[1, 3]),
        &chunked(ColumnData::I32(vec![-1, -2, -3, -4]), 1, &[2, 2]),
        6,
    )
    .unwrap();
    let nothing_written = ir::scatter(&u32s(&[], 1), &u32s(&[], 1), 3).unwrap();
    let no_rows = ir::scatter(&destinations, &destinations, 0).unwrap();
    let roots = [
        floats.clone(),
        ints.clone(),
        nothing_written.clone(),
        no_rows.clone(),
    ];
    evaluate::<T>(&roots).await.unwrap();
    assert_eq!(floats.home().unwrap().device, T::device().core().id);
    assert_eq!(read_f32(&floats).await, vec![-2., 4., 0., 1.5, 0.]);
    assert_eq!(read_i32(&ints).await, vec![-3, 0, -2, 0, -1, 0]);
    assert_eq!(read_u32(&nothing_written).await, vec![0, 0, 0]);
    assert!(read_u32(&no_rows).await.is_empty());
    let wrong = [
        ir::scatter(&f32s(&[0.], 1), &u32s(&[1], 1), 2),
        ir::scatter(&u32s(&[0], 1), &u32s(&[1, 2], 2), 2),
        ir::scatter(&u32s(&[0], 1), &u8s(&[1], 1), 2),
        ir::scatter(&u32s(&[0, 1], 1), &u32s(&[1], 1), 2),
        ir::scatter(&u32s(&[0], 1), &lit(&[1.]), 2),
    ];
    let codes: Vec<ErrorCode> = wrong.into_iter().map(code).collect();
    use ErrorCode::{InvalidArgument, TypeMismatch};
    assert_eq!(
        codes,
        [
            TypeMismatch,
            TypeMismatch,
            TypeMismatch,
            InvalidArgument,
            InvalidArgument
        ]
    );
}

/// Compaction (and the first split pass of a sort) scatters each row's number: the scatter
/// writes the numbers itself, where a pass used to store a full-length column of them for it
/// to read. Chunked destinations are one task each, numbered from their first row on.
pub async fn row_numbers_are_scattered_without_a_column_of_them<T: Target>() {
    let device = T::fresh().await;
    let rows = 70_000u32;
    // Distinct (7,919 and 70,500 are coprime), 500 of them past the end.
    let destinations: Vec<u32> = (0..rows).map(|i| i * 7_919 % (rows + 500)).collect();
    let chunked_destinations = chunked(
        ColumnData::U32(destinations.clone()),
        1,
        &[20_000, 25_000, 25_000],
    );
    let numbers = ir::scatter(&chunked_destinations, &ir::u32_rows(rows).unwrap(), rows).unwrap();
    let stored_numbers: Vec<u32> = (0..rows).collect();
    let stored = ir::scatter(&u32s(&destinations, 1), &u32s(&stored_numbers, 1), rows).unwrap();
    assert_eq!(numbers.inputs.len(), 1, "no column of row numbers is read");
    let roots = [numbers.clone()];
    let passes = gputable::plan::plan(&roots, gputable::plan::Fusion::On).unwrap();
    let text = passes.describe("test");
    assert!(
        passes.regions.len() == 1 && text.contains("each input row's number written"),
        "{text}"
    );
    gputable::engine::evaluate(&device, &[numbers.clone(), stored.clone()])
        .await
        .unwrap();
    assert_eq!(numbers.home().unwrap().device, device.core().id);
    let mut expected = vec![0u32; rows as usize];
    for (row, &d) in destinations.iter().enumerate() {
        if d < rows {
            expected[d as usize] = row as u32;
        }
    }
    assert_eq!(read_u32(&numbers).await, expected);
    assert_eq!(read_u32(&stored).await, expected);
    // Kept rows of every third row: their numbers, in order.
    let flags: Vec<u32> = (0..rows).map(|i| u32::from(i % 3 == 0)).collect();
    let kept = gputable::dynamic::Kept::new(&u32s(&flags, 1))
        .unwrap()
        .kept_rows();
    gputable::engine::evaluate(&device, std::slice::from_ref(&kept))
        .await
        .unwrap();
    let kept = ir::known_rows(&kept, "kept rows").unwrap();
    let every_third: Vec<u32> = (0..rows).step_by(3).collect();
    assert_eq!(read_u32(&kept).await, every_third);
}

/// A million rows through a random permutation (a few sent past the end), in chunks whose
/// destinations are computed just before the scatter reads them.
pub async fn scatter_of_a_million_rows_matches_a_reference<T: Target>() {
    let rows = 1usize << 20;
    let mut rng = Rng(11);
    let mut permutation: Vec<u32> = (0..rows as u32).collect();
    for i in (1..rows).rev() {
        permutation.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let length = rows as u32 - 1000;
    let values: Vec<u32> = (0..rows).map(|_| rng.next() as u32).collect();
    let chunks = [300_000, 500_000, rows as u32 - 800_000];
    for round in 0..3u32 {
        let stored = chunked(ColumnData::U32(permutation.clone()), 1, &chunks);
        // Computed on the device: permutation + round - round.
        let shifted = ir::binary(Add, &stored, &ir::u32_constant(round).unwrap()).unwrap();
        let destinations =
            ir::binary(Subtract, &shifted, &ir::u32_constant(round).unwrap()).unwrap();
        let scattered = ir::scatter(&destinations, &u32s(&values, 1), length).unwrap();
        evaluate::<T>(std::slice::from_ref(&scattered))
            .await
            .unwrap();
        assert_eq!(scattered.home().unwrap().device, T::device().core().id);
        let mut expected = vec![0u32; length as usize];
        for (&d, &v) in permutation.iter().zip(&values) {
            if d < length {
                expected[d as usize] = v;
            }
        }
        assert!(
            read_u32(&scattered).await == expected,
            "round {round} differs"
        );
    }
}

/// Sorts of keys of every integer width through the radix passes, chunked and long enough
/// to use every bit the type has, against a stable host sort.
pub async fn radix_sorts_use_every_bit_of_the_keys<T: Target>() {
    let mut rng = Rng(17);
    let rows = 5000;
    let wide: Vec<u32> = (0..rows).map(|_| rng.next() as u32).collect();
    let signed: Vec<i32> = wide.iter().map(|&w| w as i32).collect();
    let bytes: Vec<i8> = wide.iter().map(|&w| (w >> 24) as i8).collect();
    let keyed = [
        (
            chunked(ColumnData::U32(wide.clone()), 1, &[1200, 3800]),
            wide.iter().map(|&w| w as i64).collect::<Vec<_>>(),
        ),
        (i32s(&signed, 1), signed.iter().map(|&w| w as i64).collect()),
        (i8s(&bytes, 1), bytes.iter().map(|&w| w as i64).collect()),
    ];
    for (node, keys) in keyed {
        let (perm, _) = ir::sort_permutation(&node).unwrap();
        evaluate::<T>(std::slice::from_ref(&perm)).await.unwrap();
        let mut expected: Vec<u32> = (0..rows as u32).collect();
        expected.sort_by_key(|&i| keys[i as usize]);
        assert_eq!(
            read_u32(&perm).await,
            expected,
            "{:?} keys",
            node.meta.dtype
        );
    }
    // Skewed digits over several WebGPU blocks of 4,096 rows and a partial one: every row
    // of a round ranked within one digit's ballot (equal keys, keys differing only in
    // their top byte, descending keys), each order stable.
    let skewed_rows = 2 * 4096 + 17;
    for (name, key) in [
        ("equal", (|_| 7) as fn(u32) -> u32),
        ("top byte", |i| (i % 3) << 24),
        ("descending", |i| u32::MAX - i / 2),
    ] {
        let keys: Vec<u32> = (0..skewed_rows).map(key).collect();
        let (perm, sorted) = ir::sort_permutation(&u32s(&keys, 1)).unwrap();
        evaluate::<T>(&[perm.clone(), sorted.clone()])
            .await
            .unwrap();
        let mut expected: Vec<u32> = (0..skewed_rows).collect();
        expected.sort_by_key(|&i| keys[i as usize]);
        assert_eq!(read_u32(&perm).await, expected, "{name} keys");
        let in_order: Vec<u32> = expected.iter().map(|&i| keys[i as usize]).collect();
        assert_eq!(read_u32(&sorted).await, in_order, "{name} keys in order");
    }
    // Many short chunked sorts in a row: llvmpipe's GL let a scatter's vertex shader read
    // destinations before the draw rendering them had run, and lost the first chunk in
    // about one sort of six (now each scatter waits for the work before it, natively).
    for round in 0..12u32 {
        let keys: Vec<u32> = (0..1000).map(|i| (i * 37 + round) % 50).collect();
        let node = chunked(ColumnData::U32(keys.clone()), 1, &[300, 700]);
        let (perm, _) = ir::sort_permutation_below(&node, 1 << 16).unwrap();
        evaluate::<T>(std::slice::from_ref(&perm)).await.unwrap();
        let mut expected: Vec<u32> = (0..1000).collect();
        expected.sort_by_key(|&i| keys[i as usize]);
        assert_eq!(read_u32(&perm).await, expected, "round {round}");
    }
    // Below a bound: only its bits are sorted on.
    let small: Vec<u32> = (0..rows).map(|_| rng.below(1000) as u32).collect();
    let (perm, sorted) = ir::sort_permutation_below(&u32s(&small, 1), 1000).unwrap();
    evaluate::<T>(&[perm.clone(), sorted.clone()])
        .await
        .unwrap();
    let mut expected: Vec<u32> = (0..rows as u32).collect();
    expected.sort_by_key(|&i| small[i as usize]);
    assert_eq!(read_u32(&perm).await, expected);
    let mut in_order = small.clone();
    in_order.sort();
    assert_eq!(read_u32(&sorted).await, in_order);
    assert_eq!(
        code(ir::sort_permutation_below(&i32s(&[1], 1), 2)),
        ErrorCode::TypeMismatch
    );
}

/// A sort is one pass of the plan, run natively (the CPU a radix pass per digit of up to 11
/// bits after one count, WebGPU three dispatches per 8-bit digit, WebGL2 a draw per merge
/// pass) or, past the rows a backend sorts natively, as runs it sorts and a merge;
/// all give the same stable order.
pub async fn a_sort_is_one_pass_native_or_composed<T: Target>() {
    let device = T::fresh().await;
    let rows = 100_000u32;
    // Keys past the bound: every backend orders them by the low 20 bits alone.
    let keys: Vec<u32> = (0..rows).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let (perm, _) = ir::sort_permutation_below(&u32s(&keys, 1), 1 << 20).unwrap();
    let text = gputable::engine::explain(&device, &perm).unwrap();
    assert!(
        text.contains("stable sort by the keys' low 20 bits"),
        "{text}"
    );
    let before = device.core().counters.stats().kernels;
    gputable::engine::evaluate(&device, std::slice::from_ref(&perm))
        .await
        .unwrap();
    let kernels = device.core().counters.stats().kernels - before;
    let counted = text.lines().find(|l| l.ends_with(" in all"));
    match (device.sorts(rows, 1), device.kernel_words()) {
        // The CPU: one count, then two 10-bit digits.
        (true, None) => assert_eq!(kernels, 3),
        // WebGL2: a draw merging runs in pairs per doubling of their length.
        (true, Some(("draw", _))) => {
            assert_eq!(kernels, 17);
            assert!(
                text.contains("17 draws: 17 merge passes") && counted == Some("17 draws in all"),
                "{text}"
            );
        }
        // WebGPU: a count, a scan and a placing dispatch per 8-bit digit.
        (true, Some(_)) => {
            assert_eq!(kernels, 9);
            assert!(
                text.contains("9 dispatches: 3 passes of an 8-bit radix sort")
                    && counted == Some("9 dispatches in all"),
                "{text}"
            );
        }
        // Past what it sorts in one pass: runs it sorts natively, then a merge pass.
        (false, _) => assert!(
            text.contains("external sort")
                && text.contains("more than this device sorts in one pass"),
            "{text}"
        ),
    }
    let mut expected: Vec<u32> = (0..rows).collect();
    expected.sort_by_key(|&i| keys[i as usize] & 0xf_ffff);
    assert_eq!(read_u32(&perm).await, expected);
}

/// A sort by several keys (most significant first) orders by each in turn, stably: on the
/// CPU by counting rows into buckets where the first key has about one value per row, and
/// by digits otherwise; on WebGPU by digits of every key's bits; on WebGL2 by merge passes
/// comparing all three keys.
pub async fn a_sort_by_several_keys_orders_by_each_in_turn<T: Target>() {
    let device = T::fresh().await;
    let rows = 20_000u32;
    let mut rng = Rng(23);
    // Row-like first keys (about one per row), then few distinct ones; chunked second keys
    // with values past their bound (ordered by the low bits alone); a third key.
    let row_like: Vec<u32> = (0..rows).map(|_| rng.below(rows as u64) as u32).collect();
    let few: Vec<u32> = (0..rows).map(|_| rng.below(5) as u32).collect();
    let second: Vec<u32> = (0..rows).map(|_| rng.next() as u32).collect();
    let third: Vec<u32> = (0..rows).map(|_| rng.below(3) as u32).collect();
    let low = |k: u32, bound: u64| k & ((bound.next_power_of_two() - 1) as u32);
    for (first, bound, first_bits) in [(&row_like, rows as u64, 15), (&few, 5, 3)] {
        let first_node = u32s(first, 1);
        let second_node = chunked(ColumnData::U32(second.clone()), 1, &[5000, 15000]);
        let third_node = u32s(&third, 1);
        let keys = [
            (&first_node, bound),
            (&second_node, 1 << 12),
            (&third_node, 3),
        ];
        let perm = ir::lexsort_permutation(&keys).unwrap();
        let text = gputable::engine::explain(&device, &perm).unwrap();
        let line =
            format!("stable sort by 3 keys, most significant first, of {first_bits} + 12 + 2 bits");
        assert!(text.contains(&line), "{text}");
        gputable::engine::evaluate(&device, std::slice::from_ref(&perm))
            .await
            .unwrap();
        let mut expected: Vec<u32> = (0..rows).collect();
        expected.sort_by_key(|&i| {
            let i = i as usize;
            (first[i], low(second[i], 1 << 12), third[i])
        });
        assert_eq!(read_u32(&perm).await, expected);
    }
    let (a, b) = (u32s(&[1, 2], 1), u32s(&[1, 2, 3], 1));
    assert_eq!(
        code(ir::lexsort_permutation(&[(&a, 4), (&b, 4)])),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::lexsort_permutation(&[])),
        ErrorCode::InvalidArgument
    );
}

/// Gathers of a sort's keys through its permutation (`sort_permutation`'s sorted keys, a
/// sparse conversion's entries in order) are written by the sort's own pass where the
/// device's sort can (the CPU; WebGL2's merge passes carry them; WebGPU's radix passes
/// carry the first key), and gathered after it elsewhere; a key with values past its bound
/// keeps them whole, as a gather does.
pub async fn a_sorts_keys_gathered_through_it_are_written_by_its_pass<T: Target>() {
    let device = T::fresh().await;
    let rows = 30_000u32;
    let mut rng = Rng(41);
    let major: Vec<u32> = (0..rows).map(|_| rng.below(5000) as u32).collect();
    let past_bound: Vec<u32> = (0..rows).map(|_| rng.next() as u32).collect();
    let other: Vec<f32> = (0..rows).map(|i| i as f32 * 0.5).collect();
    let (major_node, past_node) = (u32s(&major, 1), u32s(&past_bound, 1));
    let perm = ir::lexsort_permutation(&[(&major_node, 5000), (&past_node, 1 << 12)]).unwrap();
    let sorted_major = ir::gather(&perm, &major_node).unwrap();
    let sorted_past = ir::gather(&perm, &past_node).unwrap();
    let gathered = ir::gather(&perm, &f32s(&other, 1)).unwrap();
    let text = gputable::engine::explain(&device, &sorted_major).unwrap();
    let writes = T::device().plan_limits().sort_writes_keys;
    match writes.writes(0) {
        true => assert!(
            text.starts_with(&format!("plan on {}: 1 pass\n", T::device().name()))
                && text.contains(&format!(
                    "writes its keys in order too: t{}",
                    sorted_major.id
                )),
            "{text}"
        ),
        false => assert!(!text.contains("writes its keys"), "{text}"),
    }
    let text = gputable::engine::explain(&device, &sorted_past).unwrap();
    assert_eq!(
        text.contains("writes its keys in order too"),
        writes.writes(1),
        "{text}"
    );
    let roots = [
        perm.clone(),
        sorted_major.clone(),
        sorted_past.clone(),
        gathered.clone(),
    ];
    gputable::engine::evaluate(&device, &roots).await.unwrap();
    let mut expected: Vec<u32> = (0..rows).collect();
    expected.sort_by_key(|&i| (major[i as usize], past_bound[i as usize] & 0xfff));
    assert_eq!(read_u32(&perm).await, expected);
    let in_order = |column: &[u32]| {
        expected
            .iter()
            .map(|&i| column[i as usize])
            .collect::<Vec<_>>()
    };
    assert_eq!(read_u32(&sorted_major).await, in_order(&major));
    assert_eq!(read_u32(&sorted_past).await, in_order(&past_bound));
    let other_in_order: Vec<f32> = expected.iter().map(|&i| other[i as usize]).collect();
    assert_eq!(read_f32(&gathered).await, other_in_order);
    assert_eq!(sorted_major.home().unwrap().device, device.core().id);

    // Four keys: more than WebGL2's merge passes carry, so it sorts in split passes and
    // gathers the keys after them. The same key gathered twice is written once.
    let keys: Vec<Vec<u32>> = (0..4)
        .map(|_| (0..3000).map(|_| rng.below(7) as u32).collect())
        .collect();
    let nodes: Vec<NodeRef> = keys.iter().map(|k| u32s(k, 1)).collect();
    let bounded: Vec<(&NodeRef, u64)> = nodes.iter().map(|n| (n, 7)).collect();
    let perm = ir::lexsort_permutation(&bounded).unwrap();
    let firsts = [
        ir::gather(&perm, &nodes[0]).unwrap(),
        ir::gather(&perm, &nodes[0]).unwrap(),
    ];
    let last = ir::gather(&perm, &nodes[3]).unwrap();
    let roots = [
        perm.clone(),
        firsts[0].clone(),
        firsts[1].clone(),
        last.clone(),
    ];
    gputable::engine::evaluate(&device, &roots).await.unwrap();
    let mut expected: Vec<u32> = (0..3000).collect();
    expected.sort_by_key(|&i| keys.iter().map(|k| k[i as usize]).collect::<Vec<_>>());
    assert_eq!(read_u32(&perm).await, expected);
    let in_order = |k: &[u32]| expected.iter().map(|&i| k[i as usize]).collect::<Vec<_>>();
    for first in &firsts {
        assert_eq!(read_u32(first).await, in_order(&keys[0]));
    }
    assert_eq!(read_u32(&last).await, in_order(&keys[3]));

    // One key of one digit: the sort's only pass reads the key in place and writes it.
    let small: Vec<u32> = (0..5000).map(|_| rng.below(10) as u32).collect();
    let (perm, sorted) = ir::sort_permutation_below(&u32s(&small, 1), 10).unwrap();
    gputable::engine::evaluate(&device, &[perm.clone(), sorted.clone()])
        .await
        .unwrap();
    let mut expected: Vec<u32> = (0..5000).collect();
    expected.sort_by_key(|&i| small[i as usize]);
    assert_eq!(read_u32(&perm).await, expected);
    let mut small_sorted = small.clone();
    small_sorted.sort_unstable();
    assert_eq!(read_u32(&sorted).await, small_sorted);
}

/// Row numbers gathered are the ids themselves, and 0 past the end, without a column of
/// row numbers stored to be read at random.
pub async fn row_numbers_gathered_are_the_ids<T: Target>() {
    let ids = u32s(&[4, 0, 9, 3, 10, u32::MAX], 1);
    let gathered = ir::gather(&ids, &ir::u32_rows(10).unwrap()).unwrap();
    let text = gputable::engine::explain(&T::device(), &gathered).unwrap();
    assert!(!text.contains("sequence"), "{text}");
    evaluate::<T>(std::slice::from_ref(&gathered))
        .await
        .unwrap();
    assert_eq!(read_u32(&gathered).await, vec![4, 0, 9, 3, 0, 0]);
    // A scatter of 5 row numbers into 7 rows (rows 1, 4 and 5 unwritten, 0; destination 9
    // dropped) holds only ids below 5: gathered from 5 or more row numbers it is itself,
    // with no pass of its own.
    let kept = ir::scatter(&u32s(&[6, 0, 9, 2, 3], 1), &ir::u32_rows(5).unwrap(), 7).unwrap();
    for rows in [5, 6] {
        let same = ir::gather(&kept, &ir::u32_rows(rows).unwrap()).unwrap();
        assert_eq!(same.id, kept.id, "gathered from {rows} row numbers");
    }
    let fewer = ir::gather(&kept, &ir::u32_rows(3).unwrap()).unwrap();
    assert_ne!(fewer.id, kept.id);
    evaluate::<T>(&[kept.clone(), fewer.clone()]).await.unwrap();
    assert_eq!(read_u32(&kept).await, vec![1, 0, 3, 4, 0, 0, 0]);
    assert_eq!(read_u32(&fewer).await, vec![1, 0, 0, 0, 0, 0, 0]);
}
