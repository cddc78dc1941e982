//! A group-by larger than `allowedMem` (api.md "Memory": `groupBy` and `valueCounts` combine
//! per-chunk partial groups): its rows are grouped a range at a time, the ranges' groups
//! combined, and the results are the whole group-by's, within the budget; `explain` shows
//! the parts. A budget no range fits is refused before any kernel runs; groups too many to
//! combine at once are made a key range at a time.

use super::filter::same_rows;
use super::group::{aggregate_reference, held, reference_groups, same_aggregate};
use super::reduce::{as_f64, column_of};
use super::*;
use gputable::engine;
use gputable::error::ErrorCode;
use gputable::evaluator::read_value_async;
use gputable::ir::{Aggregate, GroupOp};
use gputable::table;
use gputable::DType;

/// Rows of an evaluated result (None: null).
async fn rows_of(root: &NodeRef) -> Vec<Option<f64>> {
    let rows = root.known_length().expect("evaluated");
    let values = as_f64(&read(root).await);
    let flags = match root.validity() {
        Some(v) => Some(as_f64(
            &read_value_async(v, None, Some(rows as f64)).await.unwrap(),
        )),
        None => None,
    };
    (0..rows as usize)
        .map(|r| match &flags {
            Some(f) if f[r] == 0.0 => None,
            _ => Some(values[r]),
        })
        .collect()
}

pub async fn a_group_by_larger_than_the_budget_groups_in_parts<T: Target>() {
    // WebGL2's textures of 16-byte texels hold a range in whole rows of them: a device
    // with narrow textures keeps those rows short.
    let device = match T::WIDE_ROWS {
        true => T::fresh().await,
        false => T::capped().await,
    };
    // A group-by's rows hold tens of times its key column's bytes, and a range runs tens of
    // kernels. On the CPU the key column is over twice the budget (a hundred ranges of a few
    // hundred rows); on the GPUs, whose software drivers take tens of milliseconds a kernel,
    // the budget is four times the column (a few tens of ranges), and one of each kind of part is
    // computed, by one key (every kind is checked on the CPU: the parts are the same graphs).
    let light = T::TRANSFERS;
    let n = 100_000usize;
    let column_bytes = device.value_bytes(DType::F32, 1, n as u32);
    let allowed = device.task_overhead_bytes()
        + match light {
            false => column_bytes / 3,
            true => 4 * column_bytes,
        };
    let mut rng = Rng(97);
    // Keys with ties, NaN, ±0 and nulls; integer-valued float values (their sums are exact
    // in any order) with NaN, -0 and nulls; uneven and empty chunks.
    let key_values: Vec<f64> = (0..n)
        .map(|_| match rng.below(40) {
            0 => f64::NAN,
            1 => -0.0,
            k => k as f64 - 20.0,
        })
        .collect();
    let key_valid: Vec<u8> = (0..n).map(|_| u8::from(rng.below(10) != 0)).collect();
    let vendors: Vec<f64> = (0..n).map(|_| rng.below(3) as f64).collect();
    let values: Vec<f64> = (0..n)
        .map(|_| match rng.below(60) {
            0 => f64::NAN,
            1 => -0.0,
            v => v as f64 - 30.0,
        })
        .collect();
    let value_valid: Vec<u8> = (0..n).map(|_| u8::from(rng.below(7) != 0)).collect();
    let counts: Vec<f64> = (0..n).map(|_| rng.below(1000) as f64).collect();
    let part = n as u32 / 20;
    let chunks = [9 * part, 0, 4 * part, n as u32 - 13 * part];
    let nullable = super::filter::nullable;
    let key = nullable(
        column_of(DType::F32, &key_values),
        Some(&key_valid),
        &chunks,
    );
    let vendor = nullable(column_of(DType::U8, &vendors), None, &chunks);
    let value = nullable(column_of(DType::F32, &values), Some(&value_valid), &chunks);
    let whole = nullable(column_of(DType::I32, &counts), None, &chunks);
    let mut aggregates = vec![Aggregate {
        op: GroupOp::Count,
        value: None,
    }];
    // Each way of combining parts: counts and sums add, a mean is both, extremes and their
    // rows, first and last rows.
    let (of_value, of_whole): (&[GroupOp], &[GroupOp]) = match light {
        false => (
            &[
                GroupOp::Count,
                GroupOp::Sum,
                GroupOp::Mean,
                GroupOp::Min,
                GroupOp::ArgMax,
                GroupOp::Last,
            ],
            &[GroupOp::Sum, GroupOp::Max, GroupOp::ArgMin, GroupOp::First],
        ),
        true => (&[GroupOp::Mean, GroupOp::ArgMax], &[GroupOp::First]),
    };
    for (ops, column) in [(of_value, &value), (of_whole, &whole)] {
        aggregates.extend(ops.iter().map(|&op| Aggregate {
            op,
            value: Some(column.clone()),
        }));
    }
    let key_columns = match light {
        true => vec![key.clone()],
        false => vec![key.clone(), vendor.clone()],
    };
    let (keys, results) = ir::group_by(&key_columns, &aggregates).unwrap();
    let (values_of_key, counts_of_key) = ir::value_counts(&key).unwrap();
    let unique_vendors = ir::unique(&vendor).unwrap();

    device.core().allowed_mem.set(Some(allowed));
    let text = engine::explain(&device, &results[1]).unwrap();
    for shown in ["group-by in parts", "row ranges of up to", "fits"] {
        assert!(text.contains(shown), "{shown}: {text}");
    }
    device.core().counters.reset_peak();
    let mut roots = keys.clone();
    roots.extend(results.iter().cloned());
    engine::evaluate(&device, &roots).await.unwrap();
    for root in [&values_of_key, &counts_of_key, &unique_vendors] {
        engine::evaluate(&device, std::slice::from_ref(root))
            .await
            .unwrap();
    }
    let peak = device.core().counters.memory().peak_bytes;
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    assert!(
        light || column_bytes > 2 * allowed,
        "the key column is over twice the budget"
    );
    for root in roots.iter().chain([&values_of_key, &counts_of_key]) {
        assert_eq!(root.materialized_on(), Some(device.core().id));
    }
    device.core().allowed_mem.set(None);

    let reference_keys = [
        held(DType::F32, &key_values, &key_valid),
        held(DType::U8, &vendors, &vec![1; n]),
    ];
    let groups = reference_groups(&reference_keys[..key_columns.len()], n);
    for (k, key) in keys.iter().enumerate() {
        let expected: Vec<Option<f64>> = groups
            .iter()
            .map(|g| reference_keys[k][g[0]].map(|v| if v == 0.0 { 0.0 } else { v }))
            .collect();
        same_rows(&format!("key {k}"), &rows_of(key).await, &expected);
    }
    let value_rows = held(DType::F32, &values, &value_valid);
    let whole_rows = held(DType::I32, &counts, &vec![1; n]);
    for (aggregate, result) in aggregates.iter().zip(&results) {
        let (rows, dtype) = match &aggregate.value {
            Some(v) if v.id == whole.id => (&whole_rows, DType::I32),
            _ => (&value_rows, DType::F32),
        };
        let expected: Vec<Option<f64>> = match aggregate.value {
            None => groups.iter().map(|g| Some(g.len() as f64)).collect(),
            Some(_) => groups
                .iter()
                .map(|g| aggregate_reference(aggregate.op, g, rows, dtype))
                .collect(),
        };
        let what = format!("{} of {dtype:?}", aggregate.op.name());
        same_aggregate(&what, aggregate.op, &rows_of(result).await, &expected);
    }
    // valueCounts and unique in parts too.
    let by_key = reference_groups(&reference_keys[..1], n);
    let expected_values: Vec<Option<f64>> = by_key
        .iter()
        .map(|g| reference_keys[0][g[0]].map(|v| if v == 0.0 { 0.0 } else { v }))
        .collect();
    same_rows(
        "valueCounts' values",
        &rows_of(&values_of_key).await,
        &expected_values,
    );
    let expected_counts: Vec<Option<f64>> = by_key.iter().map(|g| Some(g.len() as f64)).collect();
    same_rows(
        "valueCounts' counts",
        &rows_of(&counts_of_key).await,
        &expected_counts,
    );
    same_rows(
        "unique vendors",
        &rows_of(&unique_vendors).await,
        &[Some(0.0), Some(1.0), Some(2.0)],
    );

    // A budget no range of one row fits: refused before any kernel runs.
    let too_small = device.task_overhead_bytes() + 64;
    device.core().allowed_mem.set(Some(too_small));
    let (_, refused) = ir::group_by(std::slice::from_ref(&key), &aggregates[1..3]).unwrap();
    let kernels = device.core().counters.stats().kernels;
    let error = engine::evaluate(&device, &refused).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
    assert_eq!(device.core().counters.stats().kernels, kernels, "{error}");

    device.core().allowed_mem.set(None);
}

/// More groups than a combination of parts holds within `allowedMem` (a user's trial:
/// 20,000 distinct keys in chunks of 5,000 under 256 kB were `LIMIT_EXCEEDED`): the ranges'
/// groups are cut by key into key ranges of as many as fit, each combined and made on the
/// device, and the results wait on the host, within the budget, in key order across the key
/// ranges. Two keys (float32 nearly all distinct, a permutation of the rows so that every
/// key range meets every range of rows, with NaN, ±0 and nulls; uint8), counts, sums and
/// first rows, over uneven and empty chunks.
pub async fn many_groups_are_made_a_key_range_at_a_time<T: Target>() {
    let device = match T::WIDE_ROWS {
        true => T::fresh().await,
        false => T::capped().await,
    };
    let n = if T::TRANSFERS { 6_000usize } else { 40_000 };
    let mut rng = Rng(5);
    let key_values: Vec<f64> = (0..n)
        .map(|i| match rng.below(50) {
            0 => f64::NAN,
            1 => -0.0,
            2 => 0.0,
            _ => ((i * 7919) % n) as f64 / 2.0,
        })
        .collect();
    let key_valid: Vec<u8> = (0..n).map(|_| u8::from(rng.below(25) != 0)).collect();
    let vendors: Vec<f64> = (0..n).map(|_| rng.below(2) as f64).collect();
    let weights: Vec<f64> = (0..n).map(|_| rng.below(100) as f64).collect();
    let quarter = n as u32 / 4;
    let chunks = [quarter + 1, 0, 2 * quarter, n as u32 - 3 * quarter - 1];
    let nullable = super::filter::nullable;
    let key = nullable(
        column_of(DType::F32, &key_values),
        Some(&key_valid),
        &chunks,
    );
    let vendor = nullable(column_of(DType::U8, &vendors), None, &chunks);
    let weight = nullable(column_of(DType::I32, &weights), None, &chunks);
    let aggregates: Vec<Aggregate> = [(GroupOp::Count, None), (GroupOp::Sum, Some(&weight))]
        .into_iter()
        .chain([(GroupOp::First, Some(&weight))])
        .map(|(op, value)| Aggregate {
            op,
            value: value.cloned(),
        })
        .collect();
    let (keys, results) = ir::group_by(&[key.clone(), vendor.clone()], &aggregates).unwrap();
    let allowed = device.task_overhead_bytes() + device.value_bytes(DType::F32, 1, n as u32);
    device.core().allowed_mem.set(Some(allowed));
    let text = engine::explain(&device, &results[0]).unwrap();
    assert!(text.contains("cut by key"), "{text}");
    device.core().counters.reset_peak();
    let mut roots = keys.clone();
    roots.extend(results.iter().cloned());
    engine::evaluate(&device, &roots).await.unwrap();
    let peak = device.core().counters.memory().peak_bytes;
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    for root in &roots {
        assert_eq!(root.materialized_on(), Some(device.core().id));
        // Made a key range at a time: the results wait on the host.
        assert!(root.host_output().is_some(), "t{} is on the host", root.id);
    }
    // Later work reads them on the device.
    let total = ir::reduce(ir::ReduceKind::Sum, &results[0], None, 4).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&total))
        .await
        .unwrap();
    device.core().allowed_mem.set(None);
    assert_eq!(as_f64(&read(&total).await), vec![n as f64]);

    let reference_keys = [
        held(DType::F32, &key_values, &key_valid),
        held(DType::U8, &vendors, &vec![1; n]),
    ];
    let groups = reference_groups(&reference_keys, n);
    assert!(groups.len() > n / 2, "{} groups", groups.len());
    for (k, key) in keys.iter().enumerate() {
        let expected: Vec<Option<f64>> = groups
            .iter()
            .map(|g| reference_keys[k][g[0]].map(|v| if v == 0.0 { 0.0 } else { v }))
            .collect();
        same_rows(&format!("key {k}"), &rows_of(key).await, &expected);
    }
    let weight_rows = held(DType::I32, &weights, &vec![1; n]);
    for (aggregate, result) in aggregates.iter().zip(&results) {
        let expected: Vec<Option<f64>> = match aggregate.value {
            None => groups.iter().map(|g| Some(g.len() as f64)).collect(),
            Some(_) => (groups.iter())
                .map(|g| aggregate_reference(aggregate.op, g, &weight_rows, DType::I32))
                .collect(),
        };
        same_rows(aggregate.op.name(), &rows_of(result).await, &expected);
    }
}

/// A key of few values (most bins of its range empty) with nulls, in two chunks, grouped in
/// parts: its groups by bins (a chunk of bins and one of the null row) were made whole in
/// other chunks than the group-by's, which was `INTERNAL` (a user's trial: `unique` of an
/// Int32 column of two batches under allowedMem).
pub async fn a_small_key_with_nulls_groups_in_parts<T: Target>() {
    let device = match T::WIDE_ROWS {
        true => T::fresh().await,
        false => T::capped().await,
    };
    let n = 100_000usize;
    // Every third value: most of the range's bins hold no row.
    let keys: Vec<f64> = (0..n).map(|i| (i % 20 * 3) as f64).collect();
    let valid: Vec<u8> = (0..n).map(|i| u8::from(i % 13 != 0)).collect();
    let chunks = [n as u32 / 2, n as u32 / 2];
    let stored = super::filter::nullable(column_of(DType::I32, &keys), Some(&valid), &chunks);
    // Computed, the key's range is not known before it runs (its groups are sorted), where
    // the ranges' groups, read back, are grouped by bins.
    let zero = ir::source(ColumnData::I32(vec![0]), 1, true).unwrap();
    let key = ir::binary(Add, &stored, &zero).unwrap();
    assert_eq!(key.meta.dtype, DType::I32);
    let unique = ir::unique(&key).unwrap();
    let (values, counts) = ir::value_counts(&key).unwrap();
    let weights: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
    let weight = super::filter::nullable(column_of(DType::F32, &weights), None, &chunks);
    let (sum_keys, sums) = ir::group_by(
        std::slice::from_ref(&key),
        &[Aggregate {
            op: GroupOp::Sum,
            value: Some(weight),
        }],
    )
    .unwrap();
    let column_bytes = device.value_bytes(DType::I32, 1, n as u32);
    device.core().allowed_mem.set(Some(
        device.task_overhead_bytes() + column_bytes * (1 + T::TRANSFERS as u64),
    ));
    let text = engine::explain(&device, &unique).unwrap();
    assert!(text.contains("group-by in parts"), "{text}");
    for roots in [
        vec![unique.clone()],
        vec![values.clone(), counts.clone()],
        vec![sum_keys[0].clone(), sums[0].clone()],
    ] {
        engine::evaluate(&device, &roots).await.unwrap();
    }
    device.core().allowed_mem.set(None);
    let mut expected: Vec<Option<f64>> = (0..20).map(|k| Some(k as f64 * 3.0)).collect();
    expected.push(None);
    same_rows("unique", &rows_of(&unique).await, &expected);
    same_rows("valueCounts' values", &rows_of(&values).await, &expected);
    let (mut expected_counts, mut expected_sums) = (vec![0.0; 21], vec![0.0; 21]);
    for i in 0..n {
        let group = if valid[i] == 1 { i % 20 } else { 20 };
        expected_counts[group] += 1.0;
        expected_sums[group] += weights[i];
    }
    let expected_sums: Vec<Option<f64>> = expected_sums.into_iter().map(Some).collect();
    same_rows("groupBy's sums", &rows_of(&sums[0]).await, &expected_sums);
    let expected_counts: Vec<Option<f64>> = expected_counts.into_iter().map(Some).collect();
    same_rows(
        "valueCounts' counts",
        &rows_of(&counts).await,
        &expected_counts,
    );
}

/// A filter whose column is larger than `allowedMem` (api.md "Memory": row-local verbs
/// stream chunk by chunk): its kept rows are packed into one capacity of the column's rows
/// and its gathers read the column whole, so it is taken a range of rows at a time, within
/// the budget: two columns by one mask with nulls, over uneven and empty chunks, their rows,
/// null flags and counts per chunk as a whole filter's (a user's trial: a filter of 20,000
/// float32 rows under 256 kB was `LIMIT_EXCEEDED` where the sum of the same rows streamed).
pub async fn a_filter_larger_than_the_budget_filters_in_parts<T: Target>() {
    let device = match T::WIDE_ROWS {
        true => T::fresh().await,
        false => T::capped().await,
    };
    let n = 60_000usize;
    let mut rng = Rng(31);
    let values: Vec<f64> = (0..n).map(|_| rng.below(200) as f64 - 100.0).collect();
    let valid: Vec<u8> = (0..n).map(|_| u8::from(rng.below(9) != 0)).collect();
    let ids: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let chunks = [21_000, 0, 15_000, n as u32 - 36_000];
    let x = super::filter::nullable(column_of(DType::F32, &values), Some(&valid), &chunks);
    let id = super::filter::nullable(column_of(DType::U32, &ids), None, &chunks);
    let mask = ir::predicate(
        ir::Predicate::Greater,
        &[
            x.clone(),
            ir::source(ColumnData::F32(vec![-20.0]), 1, true).unwrap(),
        ],
    )
    .unwrap();
    let kept_x = ir::filter(&x, &mask).unwrap();
    let kept_id = ir::filter(&id, &mask).unwrap();
    let column_bytes = device.value_bytes(DType::F32, 1, n as u32);
    let allowed = device.task_overhead_bytes() + column_bytes * (1 + T::TRANSFERS as u64);
    device.core().allowed_mem.set(Some(allowed));
    let text = engine::explain(&device, &kept_x).unwrap();
    assert!(text.contains("filter in parts"), "{text}");
    // Beside work that cannot fit (a filter by a mask comparing with a mean is not taken in
    // parts), nothing runs: the parts are projected with the rest before any of them runs.
    let mean = ir::reduce(ir::ReduceKind::Mean, &x, None, 4).unwrap();
    let above = ir::predicate(ir::Predicate::Greater, &[x.clone(), mean]).unwrap();
    let refused = ir::filter(&id, &above).unwrap();
    let kernels = device.core().counters.stats().kernels;
    let error = engine::evaluate(&device, &[kept_x.clone(), kept_id.clone(), refused])
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitExceeded, "{error:?}");
    assert_eq!(device.core().counters.stats().kernels, kernels, "{error:?}");
    assert!(!kept_x.has_output() && !kept_id.has_output());
    device.core().counters.reset_peak();
    engine::evaluate(&device, &[kept_x.clone(), kept_id.clone()])
        .await
        .unwrap();
    let peak = device.core().counters.memory().peak_bytes;
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    device.core().allowed_mem.set(None);

    let kept: Vec<usize> = (0..n)
        .filter(|&i| valid[i] == 1 && values[i] > -20.0)
        .collect();
    let expected_x: Vec<Option<f64>> = kept.iter().map(|&i| Some(values[i])).collect();
    let expected_id: Vec<Option<f64>> = kept.iter().map(|&i| Some(i as f64)).collect();
    same_rows("filtered column", &rows_of(&kept_x).await, &expected_x);
    same_rows("filtered ids", &rows_of(&kept_id).await, &expected_id);
    let mut per_chunk = Vec::new();
    let mut start = 0usize;
    for &rows in &chunks {
        let end = start + rows as usize;
        per_chunk.push(kept.iter().filter(|&&i| i >= start && i < end).count() as u32);
        start = end;
    }
    assert_eq!(kept_x.settled().unwrap().to_vec(), per_chunk);
    assert_eq!(kept_id.settled().unwrap().to_vec(), per_chunk);
    // Later work reads the filtered rows as any evaluated result's.
    let total = ir::reduce(ir::ReduceKind::Sum, &kept_id, None, 4).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&total))
        .await
        .unwrap();
    let expected: f64 = kept.iter().map(|&i| i as f64).sum();
    assert_eq!(as_f64(&read(&total).await), vec![expected as u32 as f64]);
}

/// A table column whose batches mix null flags and none (an IPC stream omits the bitmap of
/// a batch without nulls; the table makes all-valid flags for those) is filtered in parts
/// under `allowedMem` (regression: its made flags were a gather, so every range computed
/// them whole and the filter was `LIMIT_EXCEEDED`), each range's flags made alone.
pub async fn a_table_column_with_made_null_flags_filters_in_parts<T: Target>() {
    let device = match T::WIDE_ROWS {
        true => T::fresh().await,
        false => T::capped().await,
    };
    let id = Some(device.core().id);
    let sizes = [20_000usize, 25_000, 15_000];
    let n: usize = sizes.iter().sum();
    let mut rng = Rng(47);
    let values: Vec<f32> = (0..n).map(|_| rng.below(200) as f32 - 100.0).collect();
    // The middle batch has nulls; the others have no flags.
    let valid: Vec<u8> = (0..n)
        .map(|i| u8::from(!(20_000..45_000).contains(&i) || rng.below(7) != 0))
        .collect();
    let table = table::Table::new(Vec::new(), id).shared();
    let mut first = 0;
    for (k, &rows) in sizes.iter().enumerate() {
        let range = first..first + rows;
        let flags = (k == 1)
            .then(|| table::Vector::owning("y.validity", u8s(&valid[range.clone()], 1), id));
        let y = table::Vector::owning("y", f32s(&values[range], 1), id).with_validity(flags);
        let batch = table::Batch::new(vec![y.shared()], None).unwrap();
        for node in batch.nodes().unwrap() {
            engine::put_on(&device, &node, true).await.unwrap();
        }
        table.borrow_mut().add_batch(batch.shared()).unwrap();
        first += rows;
    }
    let y = table.borrow().column("y").unwrap().node().unwrap();
    let bound = ir::source(ColumnData::F32(vec![-20.0]), 1, true).unwrap();
    let mask = ir::predicate(ir::Predicate::Greater, &[y.clone(), bound]).unwrap();
    let kept = ir::filter(&y, &mask).unwrap();
    let column_bytes = device.value_bytes(DType::F32, 1, n as u32);
    let allowed = device.task_overhead_bytes() + column_bytes * (1 + T::TRANSFERS as u64);
    device.core().allowed_mem.set(Some(allowed));
    let text = engine::explain(&device, &kept).unwrap();
    assert!(text.contains("filter in parts"), "{text}");
    // The table's storage on the device is the caller's, held before and after.
    let before = device.core().counters.memory().live_bytes;
    device.core().counters.reset_peak();
    engine::evaluate(&device, std::slice::from_ref(&kept))
        .await
        .unwrap();
    let held = device.core().counters.memory().peak_bytes - before;
    assert!(held <= allowed, "held {held} over allowedMem {allowed}");
    device.core().allowed_mem.set(None);
    let expected: Vec<Option<f64>> = (0..n)
        .filter(|&i| valid[i] == 1 && values[i] > -20.0)
        .map(|i| Some(values[i] as f64))
        .collect();
    same_rows("filtered column", &rows_of(&kept).await, &expected);
}

/// A histogram over the extent found on the device streams under `allowedMem` as one over a
/// range given does (a user's trial: `LIMIT_EXCEEDED`, its kept values held whole for the
/// extent), on floats and on integers.
pub async fn an_auto_histogram_streams_under_the_budget<T: Target>() {
    let device = T::fresh().await;
    let (n, chunk) = (400_000usize, 20_000u32);
    let chunks = vec![chunk; n / chunk as usize];
    for dtype in [DType::F32, DType::I32] {
        let values: Vec<f64> = (0..n).map(|i| (i % 10) as f64).collect();
        let x = chunked(column_of(dtype, &values), 1, &chunks);
        let allowed = device.task_overhead_bytes()
            + 2 * device.value_bytes(DType::U8, 1, n as u32)
            + 8 * device.value_bytes(dtype, 1, chunk);
        let bins = ir::Bins::Equal {
            bins: 10.0,
            range: None,
        };
        let counts = ir::histogram(&x, &bins, None).unwrap();
        device.core().allowed_mem.set(Some(allowed));
        device.core().counters.reset_peak();
        let evaluated = engine::evaluate(&device, std::slice::from_ref(&counts)).await;
        let peak = device.core().counters.memory().peak_bytes;
        device.core().allowed_mem.set(None);
        evaluated.unwrap_or_else(|e| panic!("{dtype:?} under {allowed}: {e:?}"));
        assert!(
            peak <= allowed,
            "{dtype:?}: peak {peak} over allowedMem {allowed}"
        );
        // Values 0..=9 over [0, 9] in 10 bins: one value a bin.
        assert_eq!(
            as_f64(&read(&counts).await),
            vec![40_000.0; 10],
            "{dtype:?}"
        );
    }
}

/// Under `allowedMem`, a filter or a cumulative op run in parts reads each range's columns,
/// null flags and carry back together (`engine::read_outputs`): on a GPU, a filter waits on
/// the device twice a range (its count, then its rows), where each column and each
/// column's flags took a wait. Values of several tiles and chunks read together take one.
pub async fn a_range_in_parts_reads_its_columns_back_together<T: Target>() {
    let device = match T::WIDE_ROWS {
        true => T::fresh().await,
        false => T::capped().await,
    };
    let n = 30_000u32;
    let chunks = [12_000, 0, 9_000, n - 21_000];
    let mut rng = Rng(5);
    let values: Vec<f64> = (0..n).map(|_| rng.below(100) as f64 - 50.0).collect();
    let valid: Vec<u8> = (0..n).map(|_| u8::from(rng.below(5) != 0)).collect();
    let ids: Vec<f64> = (0..n).map(f64::from).collect();
    let nullable = super::filter::nullable;
    let x = nullable(column_of(DType::F32, &values), Some(&valid), &chunks);
    let id = nullable(column_of(DType::U32, &ids), None, &chunks);
    let zero = ir::source(ColumnData::F32(vec![0.0]), 1, true).unwrap();
    let mask = ir::predicate(ir::Predicate::Greater, &[x.clone(), zero]).unwrap();
    let kept_x = ir::filter(&x, &mask).unwrap();
    let kept_id = ir::filter(&id, &mask).unwrap();
    let sums = ir::cumulative(ir::ScanFold::Sum, &x, false, false).unwrap();
    let column_bytes = device.value_bytes(DType::F32, 1, n);
    let allowed = device.task_overhead_bytes() + column_bytes * (1 + T::TRANSFERS as u64);
    device.core().allowed_mem.set(Some(allowed));
    let text = engine::explain(&device, &kept_x).unwrap();
    assert!(text.contains("filter in parts"), "{text}");
    // Ranges from `explain`'s "N row ranges".
    let before = text.split(" row ranges").next().unwrap();
    let ranges: u64 = before.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(ranges >= 2, "{text}");
    let text = engine::explain(&device, &sums).unwrap();
    assert!(text.contains("cumulative op in parts"), "{text}");
    let readbacks = || device.core().counters.readbacks.get();
    let before = readbacks();
    let roots = [kept_x.clone(), kept_id.clone(), sums.clone()];
    engine::evaluate(&device, &roots[..2]).await.unwrap();
    let waits = readbacks() - before;
    assert_eq!(
        waits,
        2 * ranges * T::TRANSFERS as u64,
        "a count and the rows"
    );
    engine::evaluate(&device, &roots[2..]).await.unwrap();
    device.core().allowed_mem.set(None);
    // The rows read together are each column's own.
    let kept: Vec<usize> = (0..n as usize)
        .filter(|&r| valid[r] == 1 && values[r] > 0.0)
        .collect();
    let expected_x: Vec<Option<f64>> = kept.iter().map(|&r| Some(values[r])).collect();
    let expected_id: Vec<Option<f64>> = kept.iter().map(|&r| Some(r as f64)).collect();
    same_rows("filtered column", &rows_of(&kept_x).await, &expected_x);
    same_rows("filtered ids", &rows_of(&kept_id).await, &expected_id);
    let mut total = 0.0;
    let expected_sums: Vec<Option<f64>> = (0..n as usize)
        .map(|r| {
            total += if valid[r] == 1 { values[r] } else { 0.0 };
            (valid[r] == 1).then_some(total)
        })
        .collect();
    same_rows("cumulative sums", &rows_of(&sums).await, &expected_sums);

    // Values of several chunks (and, on the capped WebGL2 device, tiles) on the device, a
    // part of each read: one wait in all.
    let doubled = ir::binary(
        gputable::ir::BinaryOp::Multiply,
        &x,
        &ir::source(ColumnData::F32(vec![2.0]), 1, true).unwrap(),
    )
    .unwrap();
    let next = ir::binary(
        gputable::ir::BinaryOp::Add,
        &id,
        &ir::source(ColumnData::U32(vec![1]), 1, true).unwrap(),
    )
    .unwrap();
    let flags = doubled.validity().unwrap().clone();
    engine::evaluate(&device, &[doubled.clone(), next.clone(), flags.clone()])
        .await
        .unwrap();
    let rows = 25_000;
    let outputs = [
        doubled.home().unwrap(),
        flags.home().unwrap(),
        next.home().unwrap(),
    ];
    let reads: Vec<_> = outputs.iter().map(|output| (output, rows)).collect();
    let before = readbacks();
    let read = engine::read_outputs(&device, &reads).await.unwrap();
    assert_eq!(
        readbacks() - before,
        T::TRANSFERS as u64,
        "rows read together"
    );
    let rows = rows as usize;
    let expected_doubled: Vec<f64> = (0..rows)
        .map(|r| if valid[r] == 1 { 2.0 * values[r] } else { 0.0 })
        .collect();
    let got_doubled: Vec<f64> = as_f64(&read[0])
        .iter()
        .zip(&valid)
        .map(|(&v, &ok)| if ok == 1 { v } else { 0.0 })
        .collect();
    assert_eq!(got_doubled, expected_doubled);
    assert_eq!(read[1], ColumnData::U8(valid[..rows].to_vec()));
    assert_eq!(
        as_f64(&read[2]),
        (1..=rows).map(|r| r as f64).collect::<Vec<_>>()
    );
}
