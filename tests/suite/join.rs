//! `lookup` (api.md "Joins") against a plain reference on every backend: keys of every type
//! looked up in table keys of another type (compared exactly), duplicates, NaN and null keys
//! on both sides, a filter's rows, no rows, and the bad arguments.

use super::filter::{nullable, rows_here, same_rows};
use super::reduce::{column_of, sample};
use super::*;
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
    let constant = ir::u32_constant(7).unwrap();
    assert_eq!(
        code(ir::lookup(&keys, &constant).map(|_| ())),
        ErrorCode::InvalidArgument
    );
}
