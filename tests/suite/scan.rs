//! The exclusive scan (ir/scan.rs), a primitive of the sparse work: every type, row widths
//! 1 and 3, lengths around each level's fan-in, chunked columns and a fused prologue and
//! epilogue, against a plain reference written here (integers exactly, with wrapping;
//! float sums within 1e-6 of the largest prefix).

use super::*;
use gputable::ir::{exclusive_scan, SCAN_FAN_IN};
use gputable::DType;

/// Prefix sums of rows of `size` lanes: f64 for floats, wrapping u32 words for integers.
fn reference(values: &[f64], size: usize, float: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(values.len());
    let mut acc = vec![0f64; size];
    let mut wrapped = vec![0u32; size];
    for row in values.chunks(size) {
        for l in 0..size {
            if float {
                out.push(acc[l]);
                acc[l] += row[l];
            } else {
                out.push(wrapped[l] as f64);
                wrapped[l] = wrapped[l].wrapping_add(row[l] as i64 as u32);
            }
        }
    }
    out
}

async fn check_scan<T: Target>(x: NodeRef, values: &[f64]) {
    let size = x.meta.size as usize;
    let float = x.meta.dtype == DType::F32;
    let scan = exclusive_scan(&x).unwrap();
    evaluate::<T>(std::slice::from_ref(&scan)).await.unwrap();
    assert_eq!(scan.home().unwrap().device, T::device().core().id);
    assert_eq!(&*scan.chunks, &*x.chunks, "chunked like its input");
    let expected = reference(values, size, float);
    let actual: Vec<f64> = match read(&scan).await {
        ColumnData::F32(v) => v.iter().map(|&v| v as f64).collect(),
        ColumnData::U32(v) => v.iter().map(|&v| v as f64).collect(),
        ColumnData::I32(v) => v.iter().map(|&v| v as u32 as f64).collect(),
        other => panic!("a scan of {other:?}"),
    };
    assert_eq!(actual.len(), expected.len());
    let scale = expected.iter().fold(1f64, |m, v| m.max(v.abs()));
    for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
        let ok = match float {
            true => (a - e).abs() <= 1e-6 * scale,
            false => a == e,
        };
        assert!(
            ok,
            "{:?} x{size}, {} rows: row {} lane {}: {a} vs {e}",
            x.meta.dtype,
            values.len() / size,
            i / size,
            i % size
        );
    }
}

pub async fn exclusive_scans_match_a_plain_reference<T: Target>() {
    let fan = SCAN_FAN_IN;
    let mut rng = Rng(7);
    for rows in [
        0,
        1,
        2,
        fan - 1,
        fan,
        fan + 1,
        fan * fan,
        fan * fan + 3,
        5000,
    ] {
        for size in [1u32, 3] {
            let n = rows as usize * size as usize;
            let floats: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
            check_scan::<T>(
                f32s(&floats, size),
                &floats.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            )
            .await;
            let ints: Vec<i32> = (0..n).map(|i| (i as i32 * 7919) % 2001 - 1000).collect();
            check_scan::<T>(
                i32s(&ints, size),
                &ints.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            )
            .await;
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
            check_scan::<T>(
                u8s(&bytes, size),
                &bytes.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            )
            .await;
        }
    }
    // uint32 sums wrap.
    let big = vec![u32::MAX - 1, 5, u32::MAX, 7];
    check_scan::<T>(
        u32s(&big, 1),
        &big.iter().map(|&v| v as f64).collect::<Vec<_>>(),
    )
    .await;
    let small: Vec<i8> = (0..300).map(|i| (i % 256) as i8).collect();
    check_scan::<T>(
        i8s(&small, 1),
        &small.iter().map(|&v| v as f64).collect::<Vec<_>>(),
    )
    .await;
}

pub async fn exclusive_scans_of_chunked_and_fused_columns<T: Target>() {
    // Chunked: each chunk's rows continue the sum of the chunks before it.
    let values: Vec<u32> = (0..1000).map(|i| i % 13).collect();
    let x = chunked(ColumnData::U32(values.clone()), 1, &[300, 0, 17, 683]);
    check_scan::<T>(x, &values.iter().map(|&v| v as f64).collect::<Vec<_>>()).await;
    // A fused prologue is computed once, then read whole; an epilogue fuses after.
    let ones: Vec<f32> = vec![1.0; 777];
    let doubled = ir::binary(Multiply, &f32s(&ones, 1), &lit(&[2.0])).unwrap();
    let offsets = ir::binary(Add, &exclusive_scan(&doubled).unwrap(), &lit(&[1.0])).unwrap();
    evaluate::<T>(std::slice::from_ref(&offsets)).await.unwrap();
    let expected: Vec<f32> = (0..777).map(|i| (2 * i + 1) as f32).collect();
    assert_eq!(read_f32(&offsets).await, expected);
    // A constant is one row: its exclusive sum is 0.
    let constant = exclusive_scan(&lit(&[1.0])).unwrap();
    evaluate::<T>(std::slice::from_ref(&constant))
        .await
        .unwrap();
    assert_eq!(read_f32(&constant).await, vec![0.0]);
}

pub async fn search_sorted_finds_left_and_right_sides<T: Target>() {
    let sorted = i32s(&[-5, 0, 0, 0, 3, 9, 9, 12], 1);
    let queries = chunked(
        ColumnData::I32(vec![-9, -5, 0, 1, 9, 12, 13]),
        1,
        &[3, 0, 4],
    );
    let left = ir::search_sorted(&sorted, &queries, false).unwrap();
    let right = ir::search_sorted(&sorted, &queries, true).unwrap();
    evaluate::<T>(&[left.clone(), right.clone()]).await.unwrap();
    assert_eq!(left.home().unwrap().device, T::device().core().id);
    assert_eq!(&*left.chunks, &[3, 0, 4]);
    assert_eq!(read_u32(&left).await, vec![0, 0, 1, 4, 5, 7, 8]);
    assert_eq!(read_u32(&right).await, vec![0, 1, 4, 4, 7, 8, 8]);
    // Every short length, empty included (the GPUs' halvings end on one key, or none).
    for n in 0..10 {
        let keys: Vec<i32> = (0..n).map(|k| 2 * k).collect();
        let probes: Vec<i32> = (-1..=2 * n).collect();
        let (sorted, queries) = (i32s(&keys, 1), i32s(&probes, 1));
        for upper in [false, true] {
            let found = ir::search_sorted(&sorted, &queries, upper).unwrap();
            evaluate::<T>(std::slice::from_ref(&found)).await.unwrap();
            let expected: Vec<u32> = (probes.iter())
                .map(|&q| keys.iter().filter(|&&k| k < q || (upper && k == q)).count() as u32)
                .collect();
            assert_eq!(read_u32(&found).await, expected, "{n} keys, upper {upper}");
        }
    }
    // Floats, a computed sorted column, and every row of a long one.
    let n = 3000u32;
    let steps = f32s(&(0..n).map(|i| (i / 3) as f32 * 0.5).collect::<Vec<_>>(), 1);
    let doubled = ir::binary(Multiply, &steps, &lit(&[2.0])).unwrap();
    let probes = f32s(&(0..n).map(|i| i as f32 * 0.75).collect::<Vec<_>>(), 1);
    let found = ir::search_sorted(&doubled, &probes, true).unwrap();
    evaluate::<T>(std::slice::from_ref(&found)).await.unwrap();
    let expected: Vec<u32> = (0..n)
        .map(|i| {
            (0..n)
                .filter(|&k| (k / 3) as f32 <= i as f32 * 0.75)
                .count() as u32
        })
        .collect();
    assert_eq!(read_u32(&found).await, expected);
    // Queries in random order (each searched whole), then an ascending run (walked on from
    // the answer before), over duplicates, with NaN last: the CPU switches between them.
    let mut rng = Rng(29);
    let mut keys: Vec<f32> = (0..5000).map(|_| rng.below(700) as f32 / 4.0).collect();
    keys.extend([f32::NAN; 3]);
    keys.sort_by(f32::total_cmp);
    let mut probes: Vec<f32> = (0..3000)
        .map(|_| rng.below(800) as f32 / 4.0 - 10.0)
        .collect();
    probes.extend((0..2000).map(|i| i as f32 / 10.0));
    probes.extend([f32::NAN, 3.0, f32::NAN]);
    let (sorted_node, query_node) = (f32s(&keys, 1), f32s(&probes, 1));
    for upper in [false, true] {
        let found = ir::search_sorted(&sorted_node, &query_node, upper).unwrap();
        evaluate::<T>(std::slice::from_ref(&found)).await.unwrap();
        let expected: Vec<u32> = (probes.iter())
            .map(|&q| {
                let past = |&k: &f32| match (k.is_nan(), q.is_nan()) {
                    (false, false) => k < q || (upper && k == q),
                    (false, true) => true,
                    (true, q_nan) => upper && q_nan,
                };
                keys.iter().filter(|k| past(k)).count() as u32
            })
            .collect();
        assert_eq!(read_u32(&found).await, expected, "upper {upper}");
    }
    // Queries of another type compare exactly (search_sorted_compares_exactly_with_nan_last).
    assert_eq!(
        code(ir::search_sorted(&i32s(&[1, 2], 2), &queries, true)),
        ErrorCode::InvalidArgument
    );
}

/// Kept rows (the sparse arrays' compaction, `filter`'s steps) are counted on the device:
/// a gather of the kept rows' values, evaluated, reads back only the count at the end,
/// never the flags or the values.
pub async fn kept_rows_read_back_only_the_count<T: Target>() {
    let device = T::fresh().await;
    let rows = 100_000usize;
    let mut rng = Rng(11);
    let flags: Vec<u8> = (0..rows)
        .map(|_| (rng.below(3) == 0) as u8 * (1 + rng.below(2) as u8))
        .collect();
    let values: Vec<f32> = (0..rows * 2).map(|i| i as f32).collect();
    let flags_node = u8s(&flags, 1);
    let values_node = chunked(ColumnData::F32(values.clone()), 2, &[37_000, 63_000]);
    for node in [&flags_node, &values_node] {
        gputable::engine::put_on(&device, node, true).await.unwrap();
    }
    let before = device.core().counters.stats();
    let kept_rows = gputable::dynamic::Kept::new(&flags_node)
        .unwrap()
        .kept_rows();
    let kept = ir::gather(&kept_rows, &values_node).unwrap();
    assert_eq!(kept.known_length(), None, "counted on the device");
    gputable::engine::evaluate(&device, std::slice::from_ref(&kept))
        .await
        .unwrap();
    let after = device.core().counters.stats();
    // The count's row (WebGL2 reads a whole texel row of it: 64 KiB), never the 400 KB of
    // flags or the 800 KB of values.
    let read_back = after.readback_bytes - before.readback_bytes;
    assert!(read_back <= 65_536, "read back {read_back} bytes");
    // Uploads are the small constants and the count's one-row sources of the kernels'
    // graphs (WebGL2 uploads a whole texel row of one: 64 KiB), never the entries.
    let uploaded = after.upload_bytes - before.upload_bytes;
    assert!(uploaded <= 65_536, "uploaded {uploaded} bytes");
    assert_eq!(kept.home().unwrap().device, device.core().id);
    let expected: Vec<f32> = (0..rows)
        .filter(|&i| flags[i] != 0)
        .flat_map(|i| [values[2 * i], values[2 * i + 1]])
        .collect();
    let kept = ir::known_rows(&kept, "kept").unwrap();
    assert_eq!(read_f32(&kept).await, expected);
    // No row kept, no rows at all, and scans of several levels.
    for flags in [
        vec![0u8, 0],
        vec![],
        (0..4097).map(|i| (i % 3 != 1) as u8).collect(),
    ] {
        let values: Vec<i32> = (0..flags.len() as i32).collect();
        let kept_rows = gputable::dynamic::Kept::new(&u8s(&flags, 1))
            .unwrap()
            .kept_rows();
        let kept = ir::gather(&kept_rows, &i32s(&values, 1)).unwrap();
        gputable::engine::evaluate(&device, std::slice::from_ref(&kept))
            .await
            .unwrap();
        let expected: Vec<i32> = values
            .iter()
            .copied()
            .filter(|&v| flags[v as usize] != 0)
            .collect();
        let kept = ir::known_rows(&kept, "kept").unwrap();
        assert_eq!(read_i32(&kept).await, expected, "{} flags", flags.len());
    }
    let wide = gputable::dynamic::Kept::new(&u8s(&[1, 0], 2));
    assert_eq!(code(wide.map(|_| ())), ErrorCode::InvalidArgument);
}

/// Kept rows count the kept rows before any row of their flags (a kept row's place, the
/// count past the last row), on the device, beside the kept rows themselves.
pub async fn kept_rows_count_the_kept_rows_before_any_row<T: Target>() {
    let device = T::fresh().await;
    let mut rng = Rng(17);
    for rows in [0usize, 1, 2, 17, 4097] {
        let flags: Vec<u8> = (0..rows).map(|_| (rng.below(3) == 0) as u8).collect();
        let mut before = Vec::with_capacity(rows + 1);
        let mut count = 0u32;
        for &flag in &flags {
            before.push(count);
            count += flag as u32;
        }
        before.push(count);
        let kept: Vec<u32> = (0..rows as u32)
            .filter(|&i| flags[i as usize] != 0)
            .collect();
        let rows_kept = gputable::dynamic::Kept::new(&u8s(&flags, 1)).unwrap();
        let queries = ir::u32_rows(rows as u32 + 1).unwrap();
        let places = rows_kept.kept_before(&queries).unwrap();
        let kept_rows = rows_kept.kept_rows();
        let roots = [places.clone(), kept_rows.clone()];
        gputable::engine::evaluate(&device, &roots).await.unwrap();
        assert_eq!(places.home().unwrap().device, device.core().id);
        assert_eq!(read_u32(&places).await, before, "{rows} flags");
        assert_eq!(kept_rows.known_length(), Some(count), "{rows} flags");
        let kept_rows = ir::known_rows(&kept_rows, "kept").unwrap();
        assert_eq!(read_u32(&kept_rows).await, kept, "{rows} flags");
    }
}

pub async fn stable_sort_permutations_match_a_reference<T: Target>() {
    let mut rng = Rng(5);
    for rows in [0usize, 1, 2, 3, 17, 1000, 4099] {
        let keys: Vec<i32> = (0..rows).map(|_| rng.below(50) as i32 - 25).collect();
        let mut expected: Vec<u32> = (0..rows as u32).collect();
        expected.sort_by_key(|&i| keys[i as usize]);
        let node = match rows {
            1000 => chunked(ColumnData::I32(keys.clone()), 1, &[300, 700]),
            _ => i32s(&keys, 1),
        };
        let (perm, sorted) = ir::sort_permutation(&node).unwrap();
        evaluate::<T>(&[perm.clone(), sorted.clone()])
            .await
            .unwrap();
        if rows > 1 {
            assert_eq!(perm.home().unwrap().device, T::device().core().id);
        }
        assert_eq!(
            read_u32(&perm).await,
            expected,
            "{rows} keys: ties keep their order"
        );
        let in_order: Vec<i32> = expected.iter().map(|&i| keys[i as usize]).collect();
        assert_eq!(read_i32(&sorted).await, in_order);
    }
    let unsigned = u32s(&[u32::MAX, 0, 7, u32::MAX - 1, 7], 1);
    let (perm, _) = ir::sort_permutation(&unsigned).unwrap();
    evaluate::<T>(std::slice::from_ref(&perm)).await.unwrap();
    assert_eq!(read_u32(&perm).await, vec![1, 2, 4, 3, 0]);
    assert_eq!(
        code(ir::sort_permutation(&f32s(&[1.0], 1))),
        ErrorCode::TypeMismatch
    );
}

/// The primitives on a million-row scale, against the CPU device (the oracle).
pub async fn primitives_at_scale_match_the_cpu<T: Target>() {
    let rows = 1usize << 20;
    let mut rng = Rng(3);
    let keys: Vec<u32> = (0..rows).map(|_| rng.below(1 << 16) as u32).collect();
    let node = u32s(&keys, 1);
    let scan = ir::exclusive_scan(&node).unwrap();
    let sorted_rows = rows;
    let (perm, _) = ir::sort_permutation(&u32s(&keys[..sorted_rows], 1)).unwrap();
    let probes = ir::search_sorted(&scan, &u32s(&keys[..4096], 1), true).unwrap();
    let roots = [scan, perm, probes];
    let expected = oracle(&roots).await.unwrap();
    evaluate::<T>(&roots).await.unwrap();
    for (root, expected) in roots.iter().zip(&expected) {
        assert_eq!(root.home().unwrap().device, T::device().core().id);
        assert!(
            same(&read(root).await, expected),
            "{root:?} differs from the CPU"
        );
    }
}

pub async fn segment_sums_add_each_range<T: Target>() {
    let values = f32s(&[1., 10., 2., 20., 3., 30., 4., 40., 5., 50.], 2);
    let offsets = u32s(&[0, 2, 2, 5, 5], 1);
    let sums = ir::segment_sum(&values, &offsets).unwrap();
    evaluate::<T>(std::slice::from_ref(&sums)).await.unwrap();
    assert_eq!(sums.home().unwrap().device, T::device().core().id);
    assert_eq!(
        read_f32(&sums).await,
        vec![3., 30., 0., 0., 12., 120., 0., 0.]
    );
    // Integers wrap; offsets past the rows are clipped; computed offsets (a fused
    // producer is materialized first).
    let ints = i8s(&[100, 100, 100, -1], 1);
    let computed = ir::cast(
        &ir::binary(
            Multiply,
            &u32s(&[0, 1, 2], 1),
            &konst(ColumnData::U32(vec![3])),
        )
        .unwrap(),
        DType::U32,
    )
    .unwrap();
    let wrapped = ir::segment_sum(&ints, &computed).unwrap();
    evaluate::<T>(std::slice::from_ref(&wrapped)).await.unwrap();
    assert_eq!(read_i32(&wrapped).await, vec![300, -1]);
    // At scale: segments from a sorted column of row ids, as CSR row pointers.
    let rows = 200_000usize;
    let mut rng = Rng(9);
    let mut ids: Vec<u32> = (0..rows).map(|_| rng.below(5000) as u32).collect();
    ids.sort();
    let row_ptr = ir::search_sorted(
        &u32s(&ids, 1),
        &ir::cast(&ir::sequence(5001.0, 0.0, 1.0).unwrap(), DType::U32).unwrap(),
        false,
    )
    .unwrap();
    let weights: Vec<u32> = (0..rows as u32).collect();
    let per_row = ir::segment_sum(&u32s(&weights, 1), &row_ptr).unwrap();
    let expected = oracle(std::slice::from_ref(&per_row)).await.unwrap();
    evaluate::<T>(std::slice::from_ref(&per_row)).await.unwrap();
    assert!(same(&read(&per_row).await, &expected[0]));
    let mut by_hand = vec![0u32; 5000];
    for (i, &id) in ids.iter().enumerate() {
        by_hand[id as usize] = by_hand[id as usize].wrapping_add(i as u32);
    }
    assert_eq!(read_u32(&per_row).await, by_hand);
    assert_eq!(
        code(ir::segment_sum(&values, &i32s(&[0, 1], 1))),
        ErrorCode::InvalidArgument
    );
}

/// Sums of rows of `size` lanes over `offsets` in the order of ir/segment.rs: each
/// segment's head rows, the sums of its whole blocks, its tail rows; offsets past the rows
/// clamped.
fn sums_in_parts(values: &[f32], size: usize, offsets: &[u32]) -> Vec<f32> {
    let rows = (values.len() / size) as u32;
    let block = ir::SEGMENT_BLOCK_ROWS;
    let mut out = Vec::new();
    for bounds in offsets.windows(2) {
        let (lo, hi) = ir::segment_rows(bounds[0], bounds[1], rows);
        let parts = ir::segment_parts(lo, hi);
        for lane in 0..size {
            let add = |total: f32, rows: std::ops::Range<u32>| -> f32 {
                rows.fold(total, |total, r| total + values[r as usize * size + lane])
            };
            let mut total = add(0.0, parts.head.clone());
            for k in parts.blocks.clone() {
                total += add(0.0, k * block..(k + 1) * block);
            }
            out.push(add(total, parts.tail.clone()));
        }
    }
    out
}

/// Long segments are summed as head rows, whole blocks and tail rows on every backend: float
/// sums equal a reference summing in that order bit for bit, past the 65,535 loop
/// iterations llvmpipe and lavapipe give an invocation. Rows of 1 and 3 lanes computed
/// where read, of 1, 8 and 20 (a lane per GPU invocation) stored; segments block-aligned at
/// both ends, one short of long, long, 70,000 rows; a first offset past 0; offsets past the
/// values; values stored in two parts; integers.
pub async fn long_segments_are_summed_in_blocks_in_one_order<T: Target>() {
    let block = ir::SEGMENT_BLOCK_ROWS;
    let lengths = [
        2 * block,
        5,
        3 * block + 100,
        0,
        2 * block - 1,
        2 * block,
        70_000,
        3,
    ];
    let mut offsets = vec![block];
    for length in lengths {
        offsets.push(offsets.last().unwrap() + length);
    }
    let rows = *offsets.last().unwrap() as usize;
    let offset_column = u32s(&offsets, 1);
    let mut rng = Rng(21);
    let mut random = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| (rng.below(2000) as f32 - 1000.0) / 7.0)
            .collect()
    };
    let half = konst(ColumnData::F32(vec![0.5]));
    let mut roots = Vec::new();
    let mut expected = Vec::new();
    for (size, where_read) in [(1, false), (1, true), (3, true), (8, false), (20, false)] {
        let values = random(rows * size);
        let column = f32s(&values, size as u32);
        let summed = match where_read {
            true => ir::binary(Add, &column, &half).unwrap(),
            false => column,
        };
        roots.push(ir::segment_sum(&summed, &offset_column).unwrap());
        let values: Vec<f32> = match where_read {
            true => values.iter().map(|v| v + 0.5).collect(),
            false => values,
        };
        expected.push(sums_in_parts(&values, size, &offsets));
    }
    let text = gputable::engine::explain(&T::device(), &roots[1]).unwrap();
    assert!(text.contains("segmentBlocks"), "{text}");
    assert!(
        text.contains("computed at the rows a segmented sum reads"),
        "{text}"
    );
    // Offsets past the values cut the long segment short; values stored in two parts.
    let values = random(rows);
    let cut_rows = rows - 3 - 5000;
    let cut = f32s(&values[..cut_rows], 1);
    roots.push(ir::segment_sum(&cut, &offset_column).unwrap());
    let clipped: Vec<u32> = offsets.iter().map(|&o| o.min(cut_rows as u32)).collect();
    expected.push(sums_in_parts(&values[..cut_rows], 1, &clipped));
    let split = (2 * block + 77) as usize;
    let parts = ir::concat(&[f32s(&values[..split], 1), f32s(&values[split..], 1)]).unwrap();
    roots.push(ir::segment_sum(&parts, &offset_column).unwrap());
    expected.push(sums_in_parts(&values, 1, &offsets));
    let ints: Vec<i32> = (0..rows as i32).map(|r| r % 1001 - 500).collect();
    let int_sums = ir::segment_sum(&i32s(&ints, 1), &offset_column).unwrap();
    evaluate::<T>(&roots).await.unwrap();
    evaluate::<T>(std::slice::from_ref(&int_sums))
        .await
        .unwrap();
    for (k, (root, expected)) in roots.iter().zip(&expected).enumerate() {
        assert_eq!(root.home().unwrap().device, T::device().core().id);
        assert!(read_f32(root).await == *expected, "sums {k} differ");
    }
    let by_hand: Vec<i32> = (offsets.windows(2))
        .map(|b| {
            (b[0]..b[1])
                .map(|r| ints[r as usize])
                .fold(0i32, i32::wrapping_add)
        })
        .collect();
    assert_eq!(read_i32(&int_sums).await, by_hand);
}
