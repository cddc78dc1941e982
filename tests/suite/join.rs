//! `lookup` and `join` (api.md "Joins") against a plain reference on every backend: keys of
//! every type matched with keys of another type (compared exactly), duplicates on both
//! sides, NaN and null keys, a filter's rows, no rows, no and all matches, capacities too
//! small, and the bad arguments.

use super::filter::{nullable, rows_here, rows_read, same_rows};
use super::reduce::{as_f64, column_of, sample};
use super::*;
use gputable::engine::RegionModel;
use gputable::DType;

/// The lowest row of `table` equal to each key (None: null), or -1.
fn reference(keys: &[Option<f64>], table: &[Option<f64>]) -> Vec<Option<f64>> {
    keys.iter()
        .map(|k| {
            let found = k.and_then(|k| table.iter().position(|t| *t == Some(k)));
            Some(found.map_or(-1.0, |r| r as f64))
        })
        .collect()
}

/// `join`'s pairs by a double loop: by left row, then right row; with `left`, each left row
/// with no match once, right -1.
fn join_reference(
    keys: &[Option<f64>],
    table: &[Option<f64>],
    how: ir::JoinHow,
) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for (l, k) in keys.iter().enumerate() {
        let before = left.len();
        for (r, t) in table.iter().enumerate() {
            if k.is_some() && *k == *t {
                left.push(Some(l as f64));
                right.push(Some(r as f64));
            }
        }
        if how == ir::JoinHow::Left && left.len() == before {
            left.push(Some(l as f64));
            right.push(Some(-1.0));
        }
    }
    (left, right)
}

/// The pairs of a join, evaluated in one evaluation on `T`.
async fn pairs_here<T: Target>(joined: &ir::Joined) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    evaluate_here::<T>(&[joined.left.clone(), joined.right.clone()]).await;
    (
        rows_here::<T>(&joined.left).await,
        rows_here::<T>(&joined.right).await,
    )
}

fn held(dtype: DType, values: &[f64], valid: &[u8]) -> Vec<Option<f64>> {
    let exact = column_of(dtype, values);
    (0..values.len())
        .map(|r| (valid[r] == 1).then(|| exact.get_f64(r)))
        .collect()
}

/// Keys of every type in table keys of every other type (a few pairs each), with repeated
/// table keys (the lowest row wins), NaN, -0, nulls and uneven chunks on both sides.
pub async fn lookup_finds_the_lowest_equal_row_for_every_pair_of_types<T: Target>() {
    let mut rng = Rng(97);
    let (n, m) = (70, 40);
    for (i, key_type) in DType::ALL.into_iter().enumerate() {
        for table_type in [DType::ALL[(i + 2) % 7], key_type, DType::F32] {
            let mut keys = sample(key_type, n, &mut rng);
            let mut table = sample(table_type, m, &mut rng);
            if key_type == DType::F32 {
                keys[3] = -0.0;
            }
            if table_type == DType::F32 {
                table[4] = 0.0;
            }
            let key_valid: Vec<u8> = (0..n).map(|r| u8::from(r % 9 != 2)).collect();
            let table_valid: Vec<u8> = (0..m).map(|r| u8::from(r % 5 != 0)).collect();
            let k = nullable(column_of(key_type, &keys), Some(&key_valid), &[30, 0, 40]);
            let t = nullable(column_of(table_type, &table), Some(&table_valid), &[15, 25]);
            let rows = ir::lookup(&k, &t).unwrap();
            assert_eq!(rows.meta.dtype, DType::I32);
            let expected = reference(
                &held(key_type, &keys, &key_valid),
                &held(table_type, &table, &table_valid),
            );
            let what = format!("{key_type:?} keys in {table_type:?}");
            same_rows(&what, &rows_here::<T>(&rows).await, &expected);
        }
    }
}

/// A filter's keys on both sides, a table with every key null, no keys, no table rows,
/// 100,000 table keys, and the bad arguments.
pub async fn lookup_of_counted_empty_and_large_inputs<T: Target>() {
    let keys = chunked(ColumnData::U32(vec![5, 7, 1, 9, 7]), 1, &[2, 3]);
    let table = chunked(ColumnData::I32(vec![7, 9, 5, 7, 1, 5]), 1, &[6]);
    let keep_table = chunked(ColumnData::U8(vec![1, 0, 1, 1, 0, 1]), 1, &[6]);
    let keep_keys = chunked(ColumnData::U8(vec![1, 1, 1, 1, 0]), 1, &[2, 3]);
    let kept_table = ir::filter(&table, &keep_table).unwrap();
    // The filtered table is [7, 5, 7, 5]: rows of the result.
    let rows = ir::lookup(&ir::filter(&keys, &keep_keys).unwrap(), &kept_table).unwrap();
    same_rows(
        "kept",
        &rows_here::<T>(&rows).await,
        &[Some(1.0), Some(0.0), Some(-1.0), Some(-1.0)],
    );
    let nulls =
        ir::with_validity(&table, Some(&chunked(ColumnData::U8(vec![0; 6]), 1, &[6]))).unwrap();
    let rows = ir::lookup(&keys, &nulls).unwrap();
    same_rows("all null", &rows_here::<T>(&rows).await, &[Some(-1.0); 5]);
    let no_keys = chunked(ColumnData::F32(vec![]), 1, &[0]);
    same_rows(
        "no keys",
        &rows_here::<T>(&ir::lookup(&no_keys, &table).unwrap()).await,
        &[],
    );
    let no_table = chunked(ColumnData::F32(vec![]), 1, &[0]);
    let rows = ir::lookup(&keys, &no_table).unwrap();
    same_rows(
        "no table rows",
        &rows_here::<T>(&rows).await,
        &[Some(-1.0); 5],
    );

    let m = 100_000u32;
    let big = chunked(
        ColumnData::U32((0..m).map(|r| (r * 7919) % m).collect()),
        1,
        &[m / 2, m / 2],
    );
    let probes: Vec<u32> = (0..3000).map(|r| r * 37).collect();
    let rows = ir::lookup(&chunked(ColumnData::U32(probes.clone()), 1, &[3000]), &big).unwrap();
    let got = rows_here::<T>(&rows).await;
    for (p, row) in probes.iter().zip(&got) {
        let row = row.unwrap();
        match p < &m {
            true => assert_eq!((row as u32 * 7919) % m, *p, "key {p}"),
            false => assert_eq!(row, -1.0, "key {p}"),
        }
    }

    let wide = chunked(ColumnData::U32(vec![1, 2, 3, 4]), 2, &[2]);
    assert_eq!(
        code(ir::lookup(&wide, &table).map(|_| ())),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::lookup(&keys, &wide).map(|_| ())),
        ErrorCode::InvalidArgument
    );
}

/// Many equal table keys (the lowest row wins whatever order a device's atomics insert them
/// in), 32-bit words with the top bit set in a signed and an unsigned type (different
/// values), -0 and +0, NaN and infinities; and on WebGPU, the lookup is its own hash table:
/// three dispatches (a clear, the inserts, the probes), every other device composing it.
pub async fn lookup_keeps_the_lowest_of_many_equal_rows<T: Target>() {
    let device = T::fresh().await;
    let m = 20_000u32;
    let table: Vec<u32> = (0..m).map(|r| (r * 7 + r / 1000) % 100).collect();
    let keys: Vec<u32> = (0..150).rev().collect();
    let t = chunked(ColumnData::U32(table.clone()), 1, &[m]);
    let rows = ir::lookup(&chunked(ColumnData::U32(keys.clone()), 1, &[150]), &t).unwrap();
    let kernels = || device.core().counters.stats().kernels;
    let before = kernels();
    gputable::engine::evaluate(&device, std::slice::from_ref(&rows))
        .await
        .unwrap();
    let webgpu = device.kernel_words() == Some(("dispatch", "dispatches"));
    assert_eq!(RegionModel::walks(&device, &rows), webgpu, "hashed here");
    if webgpu {
        assert_eq!(kernels() - before, 3, "a clear, the inserts, the probes");
    }
    let expected = reference(
        &keys.iter().map(|&k| Some(k as f64)).collect::<Vec<_>>(),
        &table.iter().map(|&k| Some(k as f64)).collect::<Vec<_>>(),
    );
    same_rows("repeated", &rows_read(&rows).await, &expected);

    let high = chunked(ColumnData::U32(vec![0x8000_0000, u32::MAX, 5, 0]), 1, &[4]);
    let signed = chunked(ColumnData::I32(vec![-1, i32::MIN, 5, 0, 5]), 1, &[5]);
    let rows = ir::lookup(&high, &signed).unwrap();
    let expected = [-1.0, -1.0, 2.0, 3.0].map(Some);
    same_rows("u32 in i32", &rows_here::<T>(&rows).await, &expected);
    let rows = ir::lookup(&signed, &high).unwrap();
    let expected = [-1.0, -1.0, 2.0, 3.0, 2.0].map(Some);
    same_rows("i32 in u32", &rows_here::<T>(&rows).await, &expected);

    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let floats = chunked(
        ColumnData::F32(vec![-0.0, 0.0, nan, 1.5, -inf, inf]),
        1,
        &[6],
    );
    let table = chunked(
        ColumnData::F32(vec![nan, 0.0, -0.0, -inf, 1.5, -nan]),
        1,
        &[6],
    );
    let rows = ir::lookup(&floats, &table).unwrap();
    let expected = [1.0, 1.0, -1.0, 4.0, 3.0, -1.0].map(Some);
    same_rows("floats", &rows_here::<T>(&rows).await, &expected);
}

/// A lookup whose keys (and rows found) are several times allowedMem: the small table is
/// held whole while the keys are looked up a part at a time, within the budget.
pub async fn lookup_of_keys_larger_than_the_budget<T: Target>() {
    let device = T::fresh().await;
    // A WebGL2 texture holds rows in whole texel rows: its budget allows for that.
    let n = 1_000_000u32;
    let keys: Vec<u32> = (0..n).map(|r| (r * 7) % 1_500).collect();
    let table: Vec<u32> = (0..1_000).map(|r| (r * 3) % 1_000).collect();
    let k = chunked(ColumnData::U32(keys.clone()), 1, &[n / 16; 16]);
    let t = chunked(ColumnData::U32(table.clone()), 1, &[1_000]);
    let rows = ir::lookup(&k, &t).unwrap();
    let allowed = 1_500_000;
    device.core().allowed_mem.set(Some(allowed));
    device.core().counters.reset_peak();
    let evaluated = gputable::engine::evaluate(&device, std::slice::from_ref(&rows)).await;
    let peak = device.core().counters.memory().peak_bytes;
    device.core().allowed_mem.set(None);
    evaluated.unwrap();
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    let got = as_f64(&read(&rows).await);
    let mut first = [-1.0; 1_500];
    for (r, &t) in table.iter().enumerate().rev() {
        first[t as usize] = r as f64;
    }
    for (key, row) in keys.iter().zip(&got) {
        assert_eq!(*row, first[*key as usize], "key {key}");
    }
}

/// Inner and left joins of keys of every type with keys of another type: duplicates on both
/// sides (many-to-many), NaN, -0, nulls and uneven chunks.
pub async fn join_pairs_equal_keys_of_every_pair_of_types<T: Target>() {
    let mut rng = Rng(131);
    let (n, m) = (60, 45);
    for (i, key_type) in DType::ALL.into_iter().enumerate() {
        for table_type in [DType::ALL[(i + 3) % 7], key_type] {
            // Few distinct values: most keys repeat on both sides.
            let mut keys: Vec<f64> = sample(key_type, n, &mut rng)
                .iter()
                .map(|v| (v % 7.0).abs())
                .collect();
            let mut table: Vec<f64> = sample(table_type, m, &mut rng)
                .iter()
                .map(|v| (v % 7.0).abs())
                .collect();
            if key_type == DType::F32 {
                keys[3] = -0.0;
                keys[5] = f64::NAN;
            }
            if table_type == DType::F32 {
                table[4] = 0.0;
                table[6] = f64::NAN;
            }
            let key_valid: Vec<u8> = (0..n).map(|r| u8::from(r % 11 != 2)).collect();
            let table_valid: Vec<u8> = (0..m).map(|r| u8::from(r % 7 != 0)).collect();
            let k = nullable(column_of(key_type, &keys), Some(&key_valid), &[25, 0, 35]);
            let t = nullable(column_of(table_type, &table), Some(&table_valid), &[20, 25]);
            for how in [ir::JoinHow::Inner, ir::JoinHow::Left] {
                let joined = ir::join(&k, &t, how, None, false).unwrap();
                assert!(joined.fits, "{n} x {m} keys fit the default capacity");
                assert_eq!(joined.left.meta.dtype, DType::I32);
                let expected = join_reference(
                    &held(key_type, &keys, &key_valid),
                    &held(table_type, &table, &table_valid),
                    how,
                );
                let what = format!("{how:?} join of {key_type:?} keys with {table_type:?}");
                let (left, right) = pairs_here::<T>(&joined).await;
                same_rows(&format!("{what}: left"), &left, &expected.0);
                same_rows(&format!("{what}: right"), &right, &expected.1);
                let pairs = rows_here::<T>(&joined.pairs).await;
                assert_eq!(pairs, [Some(expected.0.len() as f64)], "{what}: pairs");
            }
        }
    }
}

/// Every key equal on both sides (all pairs), no key equal, a filter's keys on both sides,
/// no rows on either side, right rows null where asked, a capacity too small (LIMIT_EXCEEDED
/// naming the pairs, and their count still read), a larger join, and bad arguments.
pub async fn join_of_all_none_counted_empty_and_too_many_pairs<T: Target>() {
    let same = chunked(ColumnData::U32(vec![4; 30]), 1, &[10, 20]);
    let others = chunked(ColumnData::I32(vec![4; 25]), 1, &[25]);
    let joined = ir::join(&same, &others, ir::JoinHow::Inner, None, false).unwrap();
    let (left, right) = pairs_here::<T>(&joined).await;
    let every: Vec<_> = (0..30 * 25).map(|p| Some((p / 25) as f64)).collect();
    same_rows("all: left", &left, &every);
    let every: Vec<_> = (0..30 * 25).map(|p| Some((p % 25) as f64)).collect();
    same_rows("all: right", &right, &every);

    let apart = chunked(ColumnData::F32(vec![1.5, 2.5, 3.5]), 1, &[3]);
    let joined = ir::join(&same, &apart, ir::JoinHow::Inner, None, false).unwrap();
    assert_eq!(pairs_here::<T>(&joined).await, (vec![], vec![]));
    let joined = ir::join(&apart, &same, ir::JoinHow::Left, None, true).unwrap();
    let (left, right) = pairs_here::<T>(&joined).await;
    same_rows("none: left", &left, &[Some(0.0), Some(1.0), Some(2.0)]);
    same_rows("none, null: right", &right, &[None, None, None]);

    // Filters on both sides: left [5, 1, 9, 7] (of 5, 7, 1, 9, 7), right [7, 5, 7, 5].
    let keys = chunked(ColumnData::U32(vec![5, 7, 1, 9, 7]), 1, &[2, 3]);
    let keep_keys = chunked(ColumnData::U8(vec![1, 0, 1, 1, 1]), 1, &[2, 3]);
    let table = chunked(ColumnData::I32(vec![7, 9, 5, 7, 1, 5]), 1, &[6]);
    let keep_table = chunked(ColumnData::U8(vec![1, 0, 1, 1, 0, 1]), 1, &[6]);
    let kept_keys = ir::filter(&keys, &keep_keys).unwrap();
    let kept_table = ir::filter(&table, &keep_table).unwrap();
    for (how, left, right) in [
        (ir::JoinHow::Inner, vec![0, 0, 3, 3], vec![1, 3, 0, 2]),
        (
            ir::JoinHow::Left,
            vec![0, 0, 1, 2, 3, 3],
            vec![1, 3, -1, -1, 0, 2],
        ),
    ] {
        let joined = ir::join(&kept_keys, &kept_table, how, None, false).unwrap();
        let expected =
            |rows: Vec<i32>| rows.into_iter().map(|r| Some(r as f64)).collect::<Vec<_>>();
        let got = pairs_here::<T>(&joined).await;
        same_rows(&format!("{how:?} kept: left"), &got.0, &expected(left));
        same_rows(&format!("{how:?} kept: right"), &got.1, &expected(right));
    }
    let none = chunked(ColumnData::F32(vec![]), 1, &[0]);
    for (a, b, how, rows) in [
        (&none, &table, ir::JoinHow::Left, 0),
        (&keys, &none, ir::JoinHow::Inner, 0),
        (&keys, &none, ir::JoinHow::Left, 5),
        (&kept_keys, &none, ir::JoinHow::Left, 4),
    ] {
        let joined = ir::join(a, b, how, None, true).unwrap();
        let (left, right) = pairs_here::<T>(&joined).await;
        let expected: Vec<_> = (0..rows).map(|r| Some(r as f64)).collect();
        same_rows(&format!("{how:?} with no rows: left"), &left, &expected);
        same_rows(
            &format!("{how:?} with no rows: right"),
            &right,
            &vec![None; rows],
        );
    }

    // 30 x 25 pairs in 100 rows: the evaluation fails, and keeps nothing.
    let small = ir::join(&same, &others, ir::JoinHow::Inner, Some(100.0), false).unwrap();
    assert!(!small.fits);
    let roots = [small.left.clone(), small.right.clone()];
    let failed = gputable::evaluator::evaluate_on(&T::device(), &roots).await;
    let error = failed.unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitExceeded, "{error:?}");
    assert!(error.message.contains("750"), "{}", error.message);
    assert!(!small.left.has_output());
    assert_eq!(rows_here::<T>(&small.pairs).await, [Some(750.0)]);
    let exact = ir::join(&same, &others, ir::JoinHow::Inner, Some(750.0), false).unwrap();
    assert_eq!(pairs_here::<T>(&exact).await.0.len(), 750);
    // A table join's first try packs the 750 pairs into the keys' 55 rows without failing:
    // the first 55 pairs, and the number of them all.
    let guessed = ir::join_guessed(&same, &others, ir::JoinHow::Inner, false).unwrap();
    assert_eq!((guessed.fits, guessed.capacity), (false, 55));
    let (first, _) = pairs_here::<T>(&exact).await;
    assert_eq!(pairs_here::<T>(&guessed).await.0, first[..55]);
    assert_eq!(rows_here::<T>(&guessed.pairs).await, [Some(750.0)]);

    // 20,000 left keys in 5,000 right keys, ~3 matches each: past the default capacity
    // unless it is known to fit.
    let (n, m) = (20_000u32, 5_000u32);
    let left = chunked(
        ColumnData::U32((0..n).map(|r| (r * 13) % 7_000).collect()),
        1,
        &[7_000, 13_000],
    );
    let right = chunked(
        ColumnData::U32((0..m).map(|r| (r * 7) % 1_700).collect()),
        1,
        &[m],
    );
    let joined = ir::join(&left, &right, ir::JoinHow::Left, None, false).unwrap();
    let (got_left, got_right) = pairs_here::<T>(&joined).await;
    let mut runs: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for r in 0..m {
        runs.entry((r * 7) % 1_700).or_default().push(r);
    }
    let mut p = 0;
    for l in 0..n {
        let rows = runs.get(&((l * 13) % 7_000)).cloned().unwrap_or_default();
        let rows: Vec<i64> = match rows.is_empty() {
            true => vec![-1],
            false => rows.into_iter().map(i64::from).collect(),
        };
        for r in rows {
            assert_eq!(
                (got_left[p], got_right[p]),
                (Some(l as f64), Some(r as f64)),
                "pair {p}"
            );
            p += 1;
        }
    }
    assert_eq!(p, got_left.len());

    let wide = chunked(ColumnData::U32(vec![1, 2, 3, 4]), 2, &[2]);
    for (a, b) in [(&wide, &table), (&keys, &wide)] {
        assert_eq!(
            code(ir::join(a, b, ir::JoinHow::Inner, None, false).map(|_| ())),
            ErrorCode::InvalidArgument
        );
    }
    for capacity in [-1.0, 2.5, f64::NAN] {
        assert_eq!(
            code(ir::join(&keys, &table, ir::JoinHow::Inner, Some(capacity), false).map(|_| ())),
            ErrorCode::InvalidArgument
        );
    }
    assert_eq!(
        code(
            ir::join(
                &keys,
                &table,
                ir::JoinHow::Inner,
                Some(2f64.powi(31)),
                false
            )
            .map(|_| ())
        ),
        ErrorCode::LimitExceeded
    );
    assert_eq!(
        code(ir::JoinHow::parse("outer")),
        ErrorCode::InvalidArgument
    );
}
