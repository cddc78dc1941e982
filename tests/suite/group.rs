//! `groupBy` (api.md "Grouping and histograms") against a plain reference on every backend:
//! keys of every type with NaN, -0 and nulls, two keys, every aggregate over values of every
//! type with nulls, uneven and empty chunks, a filter's rows, no rows, wide values, and the
//! bad arguments.

use std::cmp::Ordering;

use super::filter::{nan_last, nullable, rows_here, same_rows};
use super::reduce::{column_of, sample};
use super::*;
use gputable::ir::{Aggregate, GroupOp};
use gputable::DType;

/// A key as argsort orders it: numbers (-0 as +0), then NaN, then null.
fn key_order(a: &Option<f64>, b: &Option<f64>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => nan_last(a, b),
    }
}

/// Rows of `values` (of `dtype`) as the device holds them, None where `valid` says null.
pub(super) fn held(dtype: DType, values: &[f64], valid: &[u8]) -> Vec<Option<f64>> {
    let exact = column_of(dtype, values);
    (0..values.len())
        .map(|r| (valid[r] == 1).then(|| exact.get_f64(r)))
        .collect()
}

/// The reference of one aggregate over a group's rows (in input order) of `value`.
pub(super) fn aggregate_reference(
    op: GroupOp,
    rows: &[usize],
    value: &[Option<f64>],
    dtype: DType,
) -> Option<f64> {
    let present: Vec<(usize, f64)> = rows
        .iter()
        .filter_map(|&r| value[r].map(|v| (r, v)))
        .collect();
    let numbers: Vec<(usize, f64)> = present
        .iter()
        .copied()
        .filter(|(_, v)| !v.is_nan())
        .collect();
    let extreme = |better: fn(f64, f64) -> bool| -> Option<(i64, f64)> {
        if present.is_empty() {
            return None;
        }
        let mut best: Option<(usize, f64)> = None;
        for &(r, v) in &numbers {
            if best.is_none_or(|(_, b)| better(v, b)) {
                best = Some((r, v));
            }
        }
        Some(best.map_or((-1, f64::NAN), |(r, v)| (r as i64, v)))
    };
    let sum: f64 = present.iter().map(|(_, v)| v).sum();
    match op {
        GroupOp::Count => Some(present.len() as f64),
        GroupOp::Sum => Some(match dtype {
            DType::F32 => sum as f32 as f64,
            _ => sum,
        }),
        GroupOp::Mean => (!present.is_empty()).then(|| (sum as f32 / present.len() as f32) as f64),
        GroupOp::Min => extreme(|v, b| v < b).map(|(_, v)| v),
        GroupOp::Max => extreme(|v, b| v > b).map(|(_, v)| v),
        GroupOp::ArgMin => extreme(|v, b| v < b).map(|(r, _)| r as f64),
        GroupOp::ArgMax => extreme(|v, b| v > b).map(|(r, _)| r as f64),
        GroupOp::First => present.first().map(|&(r, _)| r as f64),
        GroupOp::Last => present.last().map(|&(r, _)| r as f64),
    }
}

/// The groups of `keys` (rows per key), in ascending key order: each group's rows in input
/// order.
pub(super) fn reference_groups(keys: &[Vec<Option<f64>>], rows: usize) -> Vec<Vec<usize>> {
    let normal = |v: Option<f64>| v.map(|v| if v == 0.0 { 0.0 } else { v });
    let compare = |a: usize, b: usize| {
        keys.iter()
            .map(|k| key_order(&normal(k[a]), &normal(k[b])))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    };
    let mut order: Vec<usize> = (0..rows).collect();
    order.sort_by(|&a, &b| compare(a, b));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for r in order {
        match groups.last_mut() {
            Some(group) if compare(group[0], r) == Ordering::Equal => group.push(r),
            _ => groups.push(vec![r]),
        }
    }
    groups
}

/// Means are float32 divisions, which GPUs may round a few ulps off (api.md's float
/// tolerance); everything else exactly.
pub(super) fn same_aggregate(
    what: &str,
    op: GroupOp,
    actual: &[Option<f64>],
    expected: &[Option<f64>],
) {
    if op != GroupOp::Mean {
        return same_rows(what, actual, expected);
    }
    assert_eq!(actual.len(), expected.len(), "{what}: rows");
    for (r, (a, e)) in actual.iter().zip(expected).enumerate() {
        let close = match (a, e) {
            (Some(a), Some(e)) => {
                a == e || (a.is_nan() && e.is_nan()) || (a - e).abs() <= 1e-6 * e.abs()
            }
            (a, e) => a.is_none() && e.is_none(),
        };
        assert!(close, "{what}: row {r}: device {a:?} vs reference {e:?}");
    }
}

/// Every aggregate of values of every type, grouped by two keys (one of every type with
/// NaN, -0 and nulls; one small with nulls), over uneven and empty chunks.
pub async fn group_by_matches_a_reference_for_every_type<T: Target>() {
    let mut rng = Rng(71);
    let n = 90;
    let chunks = [30, 0, 45, 15];
    for (i, dtype) in DType::ALL.into_iter().enumerate() {
        let mut key_values = sample(dtype, n, &mut rng);
        if dtype == DType::F32 {
            key_values[5] = -0.0;
            key_values[6] = 0.0;
        }
        let key_valid: Vec<u8> = (0..n).map(|r| u8::from(r % 11 != 4)).collect();
        let small: Vec<f64> = (0..n).map(|_| rng.below(3) as f64).collect();
        let small_valid: Vec<u8> = (0..n).map(|r| u8::from(r % 13 != 2)).collect();
        let value_type = DType::ALL[(i + 3) % DType::ALL.len()];
        let mut values = sample(value_type, n, &mut rng);
        if value_type == DType::F32 {
            values[8] = -0.0;
        }
        let value_valid: Vec<u8> = (0..n).map(|r| u8::from(r % 7 != 5)).collect();
        let key = nullable(column_of(dtype, &key_values), Some(&key_valid), &chunks);
        let second = nullable(column_of(DType::U8, &small), Some(&small_valid), &chunks);
        let value = nullable(column_of(value_type, &values), Some(&value_valid), &chunks);
        let mut aggregates = vec![Aggregate {
            op: GroupOp::Count,
            value: None,
        }];
        aggregates.extend(GroupOp::ALL.into_iter().map(|op| Aggregate {
            op,
            value: Some(value.clone()),
        }));
        let (keys, results) = ir::group_by(&[key, second], &aggregates).unwrap();
        let mut roots = keys.clone();
        roots.extend(results.iter().cloned());
        evaluate_here::<T>(&roots).await;

        let reference_keys = [
            held(dtype, &key_values, &key_valid),
            held(DType::U8, &small, &small_valid),
        ];
        let groups = reference_groups(&reference_keys, n);
        for (k, key) in keys.iter().enumerate() {
            let expected: Vec<Option<f64>> = groups
                .iter()
                .map(|g| reference_keys[k][g[0]].map(|v| if v == 0.0 { 0.0 } else { v }))
                .collect();
            same_rows(
                &format!("{dtype:?} key {k}"),
                &rows_here::<T>(key).await,
                &expected,
            );
        }
        let counts: Vec<Option<f64>> = groups.iter().map(|g| Some(g.len() as f64)).collect();
        same_rows(
            &format!("{dtype:?} count"),
            &rows_here::<T>(&results[0]).await,
            &counts,
        );
        let value_rows = held(value_type, &values, &value_valid);
        for (aggregate, result) in aggregates[1..].iter().zip(&results[1..]) {
            let expected: Vec<Option<f64>> = groups
                .iter()
                .map(|g| aggregate_reference(aggregate.op, g, &value_rows, value_type))
                .collect();
            let what = format!("{dtype:?} keys, {} of {value_type:?}", aggregate.op.name());
            same_aggregate(
                &what,
                aggregate.op,
                &rows_here::<T>(result).await,
                &expected,
            );
        }
        assert_eq!(results[1].meta.dtype, DType::U32);
        assert_eq!(results[5].meta.dtype, DType::F32, "mean");
        assert_eq!(results[9].meta.dtype, DType::I32, "last");
    }
}

/// Counts, sums and means grouped by one 8- or 16-bit key with a row per value of its type,
/// or a 32-bit key in host memory with a row per value of its range: a bin count and bin
/// sums without a sort where the device adds them (the CPU, WebGPU), composed elsewhere; keys and values with nulls, NaN values, a filtered (counted) input, every sum
/// type, against a reference of the same groups.
pub async fn group_by_of_small_keys_counts_and_sums_without_a_sort<T: Target>() {
    let mut rng = Rng(29);
    for (dtype, n, low, spread) in [
        (DType::U8, 300, 0.0, 7),
        (DType::I8, 400, -128.0, 250),
        (DType::U16, 70_000, 0.0, 600),
        (DType::I16, 66_000, -32768.0, 65_000),
        // 32-bit keys in host memory whose values span few (a bin per value of the range).
        (DType::U32, 3_000, 4_000_000_000.0, 900),
        (DType::I32, 2_000, -1_000.0, 1_500),
    ] {
        // A 16-bit key takes 65,536 rows: on the GPUs (software drivers, the suite's time)
        // the unsigned one alone; int8 keys cover the signed offset there.
        if T::TRANSFERS && dtype == DType::I16 {
            continue;
        }
        let key_values: Vec<f64> = (0..n).map(|_| low + rng.below(spread) as f64).collect();
        let key_valid: Vec<u8> = (0..n).map(|r| u8::from(r % 17 != 3)).collect();
        let chunks = [n as u32 / 3, 0, n as u32 - n as u32 / 3];
        let key = nullable(column_of(dtype, &key_values), Some(&key_valid), &chunks);
        // Every sum type over the 8-bit keys; float32 alone over the 16-bit ones (the suite's
        // time in the browser).
        let value_types = match n < 1000 {
            true => &[DType::F32, DType::I16, DType::U32][..],
            false => &[DType::F32][..],
        };
        for &value_type in value_types {
            // Quarters: every order of adding them is exact.
            let values: Vec<f64> = (0..n)
                .map(|r| match value_type {
                    DType::F32 if r % 97 == 5 => f64::NAN,
                    DType::F32 => (rng.below(41) as f64 - 20.0) / 4.0,
                    DType::U32 => rng.below(1000) as f64,
                    _ => rng.below(200) as f64 - 100.0,
                })
                .collect();
            let value_valid: Vec<u8> = (0..n).map(|r| u8::from(r % 11 != 7)).collect();
            let value = nullable(column_of(value_type, &values), Some(&value_valid), &chunks);
            let keep: Vec<f64> = (0..n).map(|r| (r % 5 != 1) as u8 as f64).collect();
            let mask = chunked(column_of(DType::U8, &keep), 1, &chunks);
            for filtered in [false, true] {
                let (key, value) = match filtered {
                    true => (
                        ir::filter(&key, &mask).unwrap(),
                        ir::filter(&value, &mask).unwrap(),
                    ),
                    false => (key.clone(), value.clone()),
                };
                let kept: Vec<usize> = (0..n).filter(|&r| !filtered || keep[r] == 1.0).collect();
                let aggregates: Vec<Aggregate> = [None, Some(GroupOp::Count), Some(GroupOp::Sum)]
                    .into_iter()
                    .chain([Some(GroupOp::Mean)])
                    .map(|op| Aggregate {
                        op: op.unwrap_or(GroupOp::Count),
                        value: op.map(|_| value.clone()),
                    })
                    .collect();
                let (keys, results) = ir::group_by(&[key], &aggregates).unwrap();
                // Counted by bins, not sorted (a filter's rows have no range known: they sort).
                let text = gputable::engine::explain(&T::device(), &results[0]).unwrap();
                let binned = text.contains("binCount(");
                assert_eq!(
                    binned,
                    !filtered || dtype.bits() < 32,
                    "{dtype:?} keys: {text}"
                );
                let pick = |all: Vec<Option<f64>>| kept.iter().map(|&r| all[r]).collect::<Vec<_>>();
                let reference_keys = [pick(held(dtype, &key_values, &key_valid))];
                let value_rows = pick(held(value_type, &values, &value_valid));
                let groups = reference_groups(&reference_keys, kept.len());
                let what = format!("{dtype:?} keys of {value_type:?} (filtered {filtered})");
                let expected: Vec<Option<f64>> =
                    groups.iter().map(|g| reference_keys[0][g[0]]).collect();
                same_rows(&what, &rows_here::<T>(&keys[0]).await, &expected);
                let rows: Vec<Option<f64>> = groups.iter().map(|g| Some(g.len() as f64)).collect();
                same_rows(&what, &rows_here::<T>(&results[0]).await, &rows);
                for (aggregate, result) in aggregates[1..].iter().zip(&results[1..]) {
                    let expected: Vec<Option<f64>> = groups
                        .iter()
                        .map(|g| aggregate_reference(aggregate.op, g, &value_rows, value_type))
                        .collect();
                    let what = format!("{what}: {}", aggregate.op.name());
                    same_aggregate(
                        &what,
                        aggregate.op,
                        &rows_here::<T>(result).await,
                        &expected,
                    );
                }
            }
        }
        // Summed in a pass of its own where the device has one (the CPU, WebGPU), else by
        // other ops' kernels (WebGL2).
        let value = chunked(ColumnData::F32(vec![1.0; n]), 1, &chunks);
        let sum = Aggregate {
            op: GroupOp::Sum,
            value: Some(value),
        };
        let (_, sums) = ir::group_by(&[key], &[sum]).unwrap();
        let text = gputable::engine::explain(&T::device(), &sums[0]).unwrap();
        let pass = text.split("\npass ").find(|p| p.contains("= binSum("));
        let pass = pass.unwrap_or_else(|| panic!("no bin sum pass: {text}"));
        let own = super::histogram::bins_in_own_pass::<T>(&sums[0], true);
        assert_eq!(!own, pass.contains("of other ops"), "{text}");
    }
}

/// Integer sums per small key wrap as 32-bit sums do, whether the device adds rows into its
/// bins itself (the CPU; WebGPU by atomics, in a workgroup table for an 8-bit key's 257 bins
/// and straight into the output for a 16-bit key's) or composes the sum of other ops.
pub async fn small_key_integer_sums_wrap_on_every_device<T: Target>() {
    let mut rng = Rng(31);
    // A 16-bit key groups by bins from 65,536 rows on.
    for (key_type, spread, n) in [(DType::U8, 200, 5_000), (DType::U16, 3_000, 70_000)] {
        let chunks = [
            n as u32 / 5,
            0,
            n as u32 / 2,
            n as u32 - n as u32 / 5 - n as u32 / 2,
        ];
        let key_values: Vec<f64> = (0..n).map(|_| rng.below(spread) as f64).collect();
        let key = chunked(column_of(key_type, &key_values), 1, &chunks);
        for value_type in [DType::I32, DType::U32] {
            let values: Vec<f64> = (0..n)
                .map(|_| match value_type {
                    DType::I32 => rng.below(4_000) as f64 * 1e6 - 2e9,
                    _ => 4e9 + rng.below(1_000) as f64,
                })
                .collect();
            let value = chunked(column_of(value_type, &values), 1, &chunks);
            let sum = Aggregate {
                op: GroupOp::Sum,
                value: Some(value),
            };
            let (keys, sums) = ir::group_by(std::slice::from_ref(&key), &[sum]).unwrap();
            let mut expected = std::collections::BTreeMap::<u32, u32>::new();
            for (k, v) in key_values.iter().zip(&values) {
                let word = match value_type {
                    DType::I32 => *v as i32 as u32,
                    _ => *v as u32,
                };
                let total = expected.entry(*k as u32).or_default();
                *total = total.wrapping_add(word);
            }
            let what = format!("{key_type:?} keys, {value_type:?} sums");
            let keys_expected: Vec<Option<f64>> =
                expected.keys().map(|&k| Some(k as f64)).collect();
            same_rows(&what, &rows_here::<T>(&keys[0]).await, &keys_expected);
            let sums_expected: Vec<Option<f64>> = (expected.values())
                .map(|&w| match value_type {
                    DType::I32 => Some(w as i32 as f64),
                    _ => Some(w as f64),
                })
                .collect();
            same_rows(&what, &rows_here::<T>(&sums[0]).await, &sums_expected);
            let text = gputable::engine::explain(&T::device(), &sums[0]).unwrap();
            let own = super::histogram::bins_in_own_pass::<T>(&sums[0], true);
            // The bin sum's pass: whether other ops' kernels run it.
            let pass = text.split("\npass ").find(|p| p.contains("= binSum("));
            let pass = pass.unwrap_or_else(|| panic!("{what}: no bin sum pass: {text}"));
            assert_eq!(!own, pass.contains("of other ops"), "{what}: {text}");
            let webgpu =
                DeviceModel::kernel_words(&T::device()) == Some(("dispatch", "dispatches"));
            assert!(own || !webgpu, "{what}: WebGPU adds into the bins: {text}");
        }
    }
}

/// A filter's rows (counted on the device), no rows, a group per row, one group, and values
/// of several lanes.
pub async fn group_by_counted_empty_and_wide_inputs<T: Target>() {
    let key = chunked(
        column_of(DType::I16, &[3.0, -1.0, 3.0, 7.0, -1.0, 3.0]),
        1,
        &[4, 2],
    );
    let value = chunked(
        column_of(DType::F32, &[1.5, 2.0, -4.0, 8.0, 0.25, 6.0]),
        1,
        &[4, 2],
    );
    let keep = chunked(ColumnData::U8(vec![1, 1, 1, 0, 1, 0]), 1, &[4, 2]);
    let (kept_key, kept_value) = (
        ir::filter(&key, &keep).unwrap(),
        ir::filter(&value, &keep).unwrap(),
    );
    let aggregate = |op, value: &NodeRef| Aggregate {
        op,
        value: Some(value.clone()),
    };
    let (keys, results) = ir::group_by(
        std::slice::from_ref(&kept_key),
        &[
            aggregate(GroupOp::Sum, &kept_value),
            aggregate(GroupOp::ArgMax, &kept_value),
        ],
    )
    .unwrap();
    let mut roots = keys.clone();
    roots.extend(results.iter().cloned());
    evaluate_here::<T>(&roots).await;
    same_rows(
        "kept keys",
        &rows_here::<T>(&keys[0]).await,
        &[Some(-1.0), Some(3.0)],
    );
    same_rows(
        "kept sums",
        &rows_here::<T>(&results[0]).await,
        &[Some(2.25), Some(-2.5)],
    );
    // Rows of the filter's result: -1 at rows 1 and 3, 3 at rows 0 and 2.
    same_rows(
        "kept argmax",
        &rows_here::<T>(&results[1]).await,
        &[Some(1.0), Some(0.0)],
    );

    // A filter's keys with full values: values past the count are not read.
    let (keys, results) = ir::group_by(
        std::slice::from_ref(&kept_key),
        &[Aggregate {
            op: GroupOp::Count,
            value: None,
        }],
    )
    .unwrap();
    evaluate_here::<T>(&[keys[0].clone(), results[0].clone()]).await;
    same_rows(
        "kept counts",
        &rows_here::<T>(&results[0]).await,
        &[Some(2.0), Some(2.0)],
    );

    // No rows.
    let empty = chunked(ColumnData::U32(vec![]), 1, &[0]);
    let empty_value = chunked(ColumnData::F32(vec![]), 1, &[0]);
    let (keys, results) = ir::group_by(
        std::slice::from_ref(&empty),
        &[aggregate(GroupOp::Mean, &empty_value)],
    )
    .unwrap();
    evaluate_here::<T>(&[keys[0].clone(), results[0].clone()]).await;
    same_rows("empty keys", &rows_here::<T>(&keys[0]).await, &[]);
    same_rows("empty means", &rows_here::<T>(&results[0]).await, &[]);

    // A group per row, then one group, of 3,000 rows (long runs are summed in blocks).
    let rows = 3000;
    let distinct = chunked(ColumnData::U32((0..rows).rev().collect()), 1, &[1000, 2000]);
    let ones = chunked(ColumnData::I32(vec![1; rows as usize]), 1, &[1000, 2000]);
    let (keys, results) = ir::group_by(
        std::slice::from_ref(&distinct),
        &[
            aggregate(GroupOp::Sum, &ones),
            aggregate(GroupOp::First, &ones),
        ],
    )
    .unwrap();
    evaluate_here::<T>(&[keys[0].clone(), results[0].clone(), results[1].clone()]).await;
    let expected: Vec<Option<f64>> = (0..rows).map(|k| Some(k as f64)).collect();
    same_rows("distinct keys", &rows_here::<T>(&keys[0]).await, &expected);
    let firsts: Vec<Option<f64>> = (0..rows).map(|k| Some((rows - 1 - k) as f64)).collect();
    same_rows(
        "distinct firsts",
        &rows_here::<T>(&results[1]).await,
        &firsts,
    );
    assert!(rows_here::<T>(&results[0])
        .await
        .iter()
        .all(|s| *s == Some(1.0)));
    let same_key = chunked(ColumnData::U8(vec![4; 20_000]), 1, &[5000, 15000]);
    let steps = chunked(
        ColumnData::F32((0..20_000).map(|r| (r % 8) as f32).collect()),
        1,
        &[5000, 15000],
    );
    let (_, results) = ir::group_by(
        std::slice::from_ref(&same_key),
        &[
            aggregate(GroupOp::Sum, &steps),
            aggregate(GroupOp::Last, &steps),
        ],
    )
    .unwrap();
    evaluate_here::<T>(&results).await;
    same_rows(
        "one group's sum",
        &rows_here::<T>(&results[0]).await,
        &[Some(70_000.0)],
    );
    same_rows(
        "one group's last",
        &rows_here::<T>(&results[1]).await,
        &[Some(19_999.0)],
    );

    // Values of two lanes: each lane its own sum and minimum.
    let key = chunked(ColumnData::U8(vec![2, 1, 2]), 1, &[3]);
    let wide = chunked(
        ColumnData::F32(vec![1.0, 10.0, 2.0, 20.0, 3.0, 5.0]),
        2,
        &[3],
    );
    let (_, results) = ir::group_by(
        std::slice::from_ref(&key),
        &[
            aggregate(GroupOp::Sum, &wide),
            aggregate(GroupOp::Min, &wide),
        ],
    )
    .unwrap();
    evaluate_here::<T>(&results).await;
    assert_eq!(results[0].meta.size, 2);
    let sums = rows_here::<T>(&results[0]).await;
    same_rows(
        "wide sums",
        &sums,
        &[Some(2.0), Some(20.0), Some(4.0), Some(15.0)],
    );
    let minimums = rows_here::<T>(&results[1]).await;
    same_rows(
        "wide minimums",
        &minimums,
        &[Some(2.0), Some(20.0), Some(1.0), Some(5.0)],
    );
}

/// Keys of size 2, values of another length, aggregates with no
/// value, unknown names: `INVALID_ARGUMENT` when the graph is built.
pub async fn group_by_refuses_bad_arguments<T: Target>() {
    let key = chunked(ColumnData::U32(vec![1, 2, 3]), 1, &[3]);
    let value = chunked(ColumnData::F32(vec![1.0, 2.0, 3.0]), 1, &[3]);
    let count = Aggregate {
        op: GroupOp::Count,
        value: None,
    };
    let bad = |keys: &[NodeRef], aggregates: &[Aggregate]| {
        code(ir::group_by(keys, aggregates).map(|_| ()))
    };
    let wide = chunked(ColumnData::U32(vec![1, 2, 3, 4, 5, 6]), 2, &[3]);
    let short = chunked(ColumnData::F32(vec![1.0, 2.0]), 1, &[2]);
    for (what, result) in [
        ("no keys", bad(&[], std::slice::from_ref(&count))),
        ("a wide key", bad(&[wide], std::slice::from_ref(&count))),
        (
            "a short value",
            bad(
                std::slice::from_ref(&key),
                &[Aggregate {
                    op: GroupOp::Sum,
                    value: Some(short),
                }],
            ),
        ),
        (
            "a sum of nothing",
            bad(
                std::slice::from_ref(&key),
                &[Aggregate {
                    op: GroupOp::Sum,
                    value: None,
                }],
            ),
        ),
    ] {
        assert_eq!(result, ErrorCode::InvalidArgument, "{what}");
    }
    assert_eq!(code(GroupOp::parse("median")), ErrorCode::InvalidArgument);
    // The good graph builds and runs.
    let (_, results) = ir::group_by(
        std::slice::from_ref(&key),
        &[
            count,
            Aggregate {
                op: GroupOp::Max,
                value: Some(value),
            },
        ],
    )
    .unwrap();
    evaluate_here::<T>(&results).await;
    same_rows(
        "maxima",
        &rows_here::<T>(&results[1]).await,
        &[Some(1.0), Some(2.0), Some(3.0)],
    );
}

/// Float sums per small key where the device adds rows into its bins (the CPU in f64,
/// WebGPU exactly in integer words) are the exact sums rounded once: cancellation, sums past
/// 2^24, a tie rounded to even, subnormals, overflow, -0, NaN and infinities, and the same in
/// every chunking; where WebGL2 sums them (float32 blends of a few rows, added pairwise, or
/// other ops' kernels), within a float's error of the values' magnitudes (subnormals there
/// may flush to 0).
pub async fn float_sums_per_small_key_round_the_exact_sums_once<T: Target>() {
    let big = 3.0e38f32 as f64;
    let tiny = f32::from_bits(1) as f64;
    let cases: Vec<(Vec<f64>, f64)> = vec![
        (vec![1e8, 1.0, -1e8], 1.0),
        (vec![16_777_216.0, 1.0, 1.0], 16_777_218.0),
        (vec![16_777_216.0, 1.0], 16_777_216.0),
        (vec![tiny, tiny, tiny], 3.0 * tiny),
        (vec![big, big], f64::INFINITY),
        (vec![-big, -big, 1.0], f64::NEG_INFINITY),
        (vec![-0.0, -0.0], 0.0),
        (vec![f64::NAN, 1.0], f64::NAN),
        (vec![f64::INFINITY, f64::NEG_INFINITY], f64::NAN),
        (vec![f64::INFINITY, 5.0], f64::INFINITY),
        (vec![-2.5, 0.75, -1e-30], -1.75),
    ];
    // Bin k holds case k's values; the rows past them (to cover 256 bins) are key 200's.
    let (mut keys, mut values) = (Vec::new(), Vec::new());
    for (k, (case, _)) in cases.iter().enumerate() {
        keys.extend(std::iter::repeat_n(k as f64, case.len()));
        values.extend(case);
    }
    let mut rng = Rng(5);
    let mut filler = 0f64;
    while keys.len() < 600 {
        let v = (rng.below(2_000) as f64 - 1_000.0) / 8.0;
        keys.push(200.0);
        values.push(v);
        filler += v;
    }
    let exact = {
        let (key, value) = (
            chunked(column_of(DType::U8, &keys), 1, &[keys.len() as u32]),
            chunked(column_of(DType::F32, &values), 1, &[keys.len() as u32]),
        );
        let sum = Aggregate {
            op: GroupOp::Sum,
            value: Some(value),
        };
        let (_, sums) = ir::group_by(&[key], &[sum]).unwrap();
        super::histogram::adds_rows_to_bins::<T>(&sums[0], true)
    };
    let n = keys.len() as u32;
    for chunks in [vec![n], vec![3, 0, 250, n - 253]] {
        let key = chunked(column_of(DType::U8, &keys), 1, &chunks);
        let value = chunked(column_of(DType::F32, &values), 1, &chunks);
        let sum = Aggregate {
            op: GroupOp::Sum,
            value: Some(value),
        };
        let (groups, sums) = ir::group_by(&[key], &[sum]).unwrap();
        let got = rows_here::<T>(&sums[0]).await;
        let got_keys = rows_here::<T>(&groups[0]).await;
        let what = format!("chunks {chunks:?}");
        assert_eq!(got_keys.len(), cases.len() + 1, "{what}: {got_keys:?}");
        let expected = cases.iter().map(|(_, s)| *s).chain([filler]);
        for (k, (g, e)) in got.iter().zip(expected).enumerate() {
            let g = g.unwrap_or_else(|| panic!("{what}: group {k} null"));
            let same = g == e || (g.is_nan() && e.is_nan());
            let magnitude: f64 = match cases.get(k) {
                Some((case, _)) => case.iter().map(|v| v.abs()).sum(),
                None => 1_000.0 * 600.0,
            };
            let close = (g - e).abs() <= magnitude * 1e-6;
            // GPUs may flush subnormal floats to 0 where they add floats.
            let gpu = DeviceModel::kernel_words(&T::device()).is_some();
            let flushed = gpu && g == 0.0 && e.abs() < f32::MIN_POSITIVE as f64;
            match exact {
                true => assert!(same, "{what}: group {k}: {g} vs {e}"),
                false => assert!(same || close || flushed, "{what}: group {k}: {g} vs {e}"),
            }
        }
    }
}
