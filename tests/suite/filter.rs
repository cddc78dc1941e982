//! `filter`, `unique` and the ops over their results (api.md "Selecting rows" and "Results
//! whose length depends on the data") against plain references on every backend: the seven
//! types with NaN and nulls, uneven and empty chunks, masks keeping none, all, and one row
//! per chunk; counts that stay on the device until the roots' are read.

use super::order::present;
use super::reduce::{as_f64, column_of, sample};
use super::*;
use gputable::ir::{Aggregate, GroupOp, Predicate, ReduceKind};
use gputable::DType;

pub(super) fn nullable(values: ColumnData, valid: Option<&[u8]>, chunks: &[u32]) -> NodeRef {
    let x = chunked(values, 1, chunks);
    match valid {
        Some(v) => {
            let flags = chunked(ColumnData::U8(v.to_vec()), 1, chunks);
            ir::with_validity(&x, Some(&flags)).unwrap()
        }
        None => x,
    }
}

/// Rows of a result (None: null), read from its device after evaluating it there.
pub(super) async fn rows_here<T: Target>(root: &NodeRef) -> Vec<Option<f64>> {
    evaluate_here::<T>(std::slice::from_ref(root)).await;
    rows_read(root).await
}

/// Rows of an evaluated result (None: null), read from the device holding it.
pub(super) async fn rows_read(root: &NodeRef) -> Vec<Option<f64>> {
    let values = as_f64(&read(root).await);
    let flags = match root.validity() {
        Some(v) => {
            // The flags' rows are the result's too.
            let rows = root.known_length().unwrap();
            let flags = read_value_async(v, None, Some(rows as f64)).await.unwrap();
            Some(as_f64(&flags))
        }
        None => None,
    };
    values
        .iter()
        .enumerate()
        .map(|(r, &v)| match &flags {
            Some(f) if f[r] == 0.0 => None,
            _ => Some(v),
        })
        .collect()
}

pub(super) fn same_rows(what: &str, actual: &[Option<f64>], expected: &[Option<f64>]) {
    assert_eq!(actual.len(), expected.len(), "{what}: rows");
    for (r, (a, e)) in actual.iter().zip(expected).enumerate() {
        let same = match (a, e) {
            (None, None) => true,
            (Some(a), Some(e)) => a == e || (a.is_nan() && e.is_nan()),
            _ => false,
        };
        assert!(same, "{what}: row {r}: device {a:?} vs reference {e:?}");
    }
}

/// Rows kept per chunk of `chunks`, where `keep` says.
fn kept_per_chunk(keep: &[bool], chunks: &[u32]) -> Vec<u32> {
    let mut at = 0usize;
    chunks
        .iter()
        .map(|&rows| {
            let kept = keep[at..at + rows as usize].iter().filter(|&&k| k).count();
            at += rows as usize;
            kept as u32
        })
        .collect()
}

pub async fn filter_keeps_the_rows_and_chunks_of_every_type<T: Target>() {
    let mut rng = Rng(41);
    let chunks = [5u32, 0, 9, 1, 12];
    let n = 27usize;
    for dtype in DType::ALL {
        let values = sample(dtype, n, &mut rng);
        let valid: Vec<u8> = (0..n).map(|i| u8::from(i % 5 != 2)).collect();
        let mask_values: Vec<f64> = (0..n).map(|_| rng.below(3) as f64).collect();
        let mask_valid: Vec<u8> = (0..n).map(|i| u8::from(i % 6 != 4)).collect();
        let x = nullable(column_of(dtype, &values), Some(&valid), &chunks);
        let mask = nullable(
            column_of(DType::U8, &mask_values),
            Some(&mask_valid),
            &[n as u32],
        );
        let kept = ir::filter(&x, &mask).unwrap();
        assert_eq!(kept.known_length(), None, "unknown before evaluation");
        let keep: Vec<bool> = (0..n)
            .map(|r| mask_values[r] != 0.0 && mask_valid[r] == 1)
            .collect();
        let expected: Vec<Option<f64>> = present(&values, Some(&valid))
            .into_iter()
            .zip(&keep)
            .filter(|(_, &k)| k)
            .map(|(v, _)| v)
            .collect();
        let actual = rows_here::<T>(&kept).await;
        same_rows(&format!("filter {dtype:?}"), &actual, &expected);
        assert_eq!(
            kept.settled().unwrap().to_vec(),
            kept_per_chunk(&keep, &chunks),
            "{dtype:?}: chunk k holds the kept rows of chunk k"
        );
    }
}

pub async fn filter_keeps_none_all_one_per_chunk_and_constant_masks<T: Target>() {
    let chunks = [4u32, 3, 0, 6];
    let n = 13;
    let values: Vec<f64> = (0..n).map(|i| i as f64 * 1.5).collect();
    let masks: Vec<(&str, Vec<u8>)> = vec![
        ("none", vec![0; n]),
        ("all", vec![1; n]),
        ("one per chunk", {
            let mut m = vec![0u8; n];
            for at in [1usize, 4, 12] {
                m[at] = 1;
            }
            m
        }),
    ];
    for (what, mask) in masks {
        let x = chunked(column_of(DType::F32, &values), 1, &chunks);
        let m = chunked(ColumnData::U8(mask.clone()), 1, &[7, 6]);
        let kept = ir::filter(&x, &m).unwrap();
        let keep: Vec<bool> = mask.iter().map(|&k| k == 1).collect();
        let expected: Vec<Option<f64>> = (0..n)
            .filter(|&r| keep[r])
            .map(|r| Some(values[r]))
            .collect();
        same_rows(what, &rows_here::<T>(&kept).await, &expected);
        assert_eq!(
            kept.settled().unwrap().to_vec(),
            kept_per_chunk(&keep, &chunks)
        );
    }
    for (keep, rows) in [(1u8, n), (0, 0)] {
        let x = chunked(column_of(DType::F32, &values), 1, &chunks);
        let m = ir::source(ColumnData::U8(vec![keep]), 1, true).unwrap();
        let kept = ir::filter(&x, &m).unwrap();
        assert_eq!(rows_here::<T>(&kept).await.len(), rows);
    }
    // No rows at all.
    let empty = ir::source(ColumnData::F32(vec![]), 1, false).unwrap();
    let mask = ir::source(ColumnData::U8(vec![]), 1, false).unwrap();
    let kept = ir::filter(&empty, &mask).unwrap();
    assert_eq!(rows_here::<T>(&kept).await.len(), 0);
    assert_eq!(kept.settled().unwrap().to_vec(), vec![0]);
    // A mask of another length, and of two lanes.
    let x = chunked(column_of(DType::F32, &values), 1, &chunks);
    let short = ir::source(ColumnData::U8(vec![1; 3]), 1, false).unwrap();
    let err = ir::filter(&x, &short).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    let wide = ir::source(ColumnData::U8(vec![1; 2 * n]), 2, false).unwrap();
    assert_eq!(
        ir::filter(&x, &wide).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

/// `x > 0.5` over random float32 with NaN and nulls, filtered, then everything built on
/// the filtered rows: elementwise work, reductions and masked ones, order, scans, unique
/// and searchSorted, all in one evaluation that reads back only the roots' counts.
pub async fn ops_over_a_filter_read_only_the_roots_counts<T: Target>() {
    let mut rng = Rng(43);
    let n = 3000usize;
    let chunks = [1000u32, 0, 1500, 500];
    let values: Vec<f64> = (0..n)
        .map(|i| match i % 11 {
            3 => f64::NAN,
            _ => ((rng.below(1000) as f64) / 100.0) as f32 as f64,
        })
        .collect();
    let valid: Vec<u8> = (0..n).map(|i| u8::from(i % 13 != 5)).collect();
    let x = nullable(column_of(DType::F32, &values), Some(&valid), &chunks);
    let half = ir::source(ColumnData::F32(vec![5.0]), 1, true).unwrap();
    let mask = ir::predicate(Predicate::Greater, &[x.clone(), half]).unwrap();
    let kept = ir::filter(&x, &mask).unwrap();
    let keep: Vec<bool> = (0..n).map(|r| valid[r] == 1 && values[r] > 5.0).collect();
    let kept_values: Vec<f64> = (0..n).filter(|&r| keep[r]).map(|r| values[r]).collect();

    let ten = ir::source(ColumnData::F32(vec![10.0]), 1, true).unwrap();
    let scaled = ir::binary(Multiply, &kept, &ten).unwrap();
    let sum = ir::reduce(ReduceKind::Sum, &kept, None, 4).unwrap();
    let max = ir::reduce(ReduceKind::Max, &scaled, None, 4).unwrap();
    let argmin = ir::reduce(ReduceKind::ArgMin, &kept, None, 4).unwrap();
    let count = ir::count(
        &ir::predicate(
            Predicate::Greater,
            &[
                kept.clone(),
                ir::source(ColumnData::F32(vec![8.0]), 1, true).unwrap(),
            ],
        )
        .unwrap(),
        None,
    )
    .unwrap();
    let sorted = ir::sort(&kept, true, ir::Nulls::Last).unwrap();
    let running = ir::cumulative(ir::ScanFold::Sum, &kept, false, false).unwrap();
    let distinct = ir::unique(&kept).unwrap();
    let roots = [
        scaled.clone(),
        sum.clone(),
        max.clone(),
        argmin.clone(),
        count.clone(),
        sorted.clone(),
        running.clone(),
        distinct.clone(),
    ];
    let device = T::device();
    let before = device.core().counters.stats();
    gputable::engine::evaluate(&device, &roots).await.unwrap();
    let after = device.core().counters.stats();
    // The counted roots' counts (4 bytes a chunk): scaled and running (4 chunks, shared),
    // sorted and distinct (one each); and the kept-row counts of max and argmin (the
    // EMPTY_INPUT rule). The rest stays on the device.
    assert_eq!(
        after.readback_bytes - before.readback_bytes,
        if T::TRANSFERS {
            4 * (4 + 1 + 1) + 4 * 2
        } else {
            0
        },
        "only the roots' counts are read back"
    );
    for root in &roots {
        assert_eq!(root.home().unwrap().device, device.core().id);
    }
    let expected_scaled: Vec<Option<f64>> = kept_values
        .iter()
        .map(|v| Some((*v as f32 * 10.0) as f64))
        .collect();
    same_rows(
        "kept * 10",
        &rows_here::<T>(&scaled).await,
        &expected_scaled,
    );
    assert_eq!(
        scaled.settled().unwrap().to_vec(),
        kept_per_chunk(&keep, &chunks)
    );
    let total: f32 = kept_values.iter().map(|&v| v as f32).sum();
    let got = read_f32(&sum).await[0];
    assert!(
        (got - total).abs() <= 1e-3 * total.abs(),
        "sum {got} vs {total}"
    );
    let top = kept_values.iter().fold(f64::MIN, |m, &v| m.max(v));
    assert_eq!(read_f32(&max).await[0], (top as f32) * 10.0);
    let low = kept_values.iter().fold(f64::MAX, |m, &v| m.min(v));
    let first_low = kept_values.iter().position(|&v| v == low).unwrap();
    assert_eq!(
        read_i32(&argmin).await[0],
        first_low as i32,
        "argmin in the kept rows"
    );
    let above = kept_values.iter().filter(|&&v| v > 8.0).count();
    assert_eq!(read_u32(&count).await[0], above as u32);
    let mut descending = kept_values.clone();
    descending.sort_by(|a, b| b.partial_cmp(a).unwrap());
    let descending: Vec<Option<f64>> = descending.into_iter().map(Some).collect();
    same_rows("sort", &rows_here::<T>(&sorted).await, &descending);
    let running_rows = rows_here::<T>(&running).await;
    assert_eq!(running_rows.len(), kept_values.len());
    let mut acc = 0.0f64;
    for (r, v) in kept_values.iter().enumerate() {
        acc += v;
        let got = running_rows[r].unwrap();
        assert!(
            (got - acc).abs() <= 1e-3 * acc,
            "cumsum row {r}: {got} vs {acc}"
        );
    }
    let mut distinct_values: Vec<f64> = kept_values.clone();
    distinct_values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    distinct_values.dedup();
    let distinct_values: Vec<Option<f64>> = distinct_values.into_iter().map(Some).collect();
    same_rows("unique", &rows_here::<T>(&distinct).await, &distinct_values);
}

/// A filtered and a full column together have the full column's rows (the filtered one's
/// past its count are null); a reduction over no kept row follows the no-rows rules.
pub async fn filtered_and_full_columns_and_empty_results<T: Target>() {
    let values = [3.0, -1.0, 4.0, 1.0, -5.0, 9.0];
    let x = chunked(column_of(DType::F32, &values), 1, &[2, 4]);
    let zero = ir::source(ColumnData::F32(vec![0.0]), 1, true).unwrap();
    let positive = ir::filter(
        &x,
        &ir::predicate(Predicate::Greater, &[x.clone(), zero.clone()]).unwrap(),
    )
    .unwrap();
    let both = ir::binary(Add, &positive, &x).unwrap();
    assert_eq!(both.known_length(), Some(6));
    let expected = [Some(6.0), Some(3.0), Some(5.0), Some(10.0), None, None];
    same_rows("filtered + full", &rows_here::<T>(&both).await, &expected);

    let none = ir::filter(
        &x,
        &ir::predicate(
            Predicate::Greater,
            &[
                x.clone(),
                ir::source(ColumnData::F32(vec![100.0]), 1, true).unwrap(),
            ],
        )
        .unwrap(),
    )
    .unwrap();
    let sum = ir::reduce(ReduceKind::Sum, &none, None, 4).unwrap();
    evaluate_here::<T>(std::slice::from_ref(&sum)).await;
    assert_eq!(read_f32(&sum).await, vec![0.0]);
    let min = ir::reduce(ReduceKind::Min, &none, None, 4).unwrap();
    let err = evaluate::<T>(std::slice::from_ref(&min)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::EmptyInput);
    let order = ir::argsort(std::slice::from_ref(&none), &[false], ir::Nulls::Last).unwrap();
    assert_eq!(rows_here::<T>(&order).await.len(), 0);

    // Views: a slice of the kept rows, and the kept rows of two filters concatenated.
    let firsts = ir::slice_counted(&positive, 1.0, 3.0).unwrap();
    same_rows(
        "slice",
        &rows_here::<T>(&firsts).await,
        &[Some(4.0), Some(1.0)],
    );
    let negative = ir::filter(
        &x,
        &ir::predicate(Predicate::Less, &[x.clone(), zero]).unwrap(),
    )
    .unwrap();
    let joined = ir::concat_counted(&[positive.clone(), negative.clone()]).unwrap();
    let expected: Vec<Option<f64>> = [3.0, 4.0, 1.0, 9.0, -1.0, -5.0]
        .iter()
        .map(|&v| Some(v))
        .collect();
    same_rows("concat", &rows_here::<T>(&joined).await, &expected);
    assert_eq!(joined.settled().unwrap().to_vec(), vec![1, 3, 1, 1]);
    // Gathers by ids past the count read no row.
    let ids = ir::source(ColumnData::U32(vec![3, 0, 4, 9]), 1, false).unwrap();
    let read_back = ir::gather(&ids, &positive).unwrap();
    let rows = rows_here::<T>(&read_back).await;
    assert_eq!(&rows[..2], &[Some(9.0), Some(3.0)]);
    assert!(rows[2..].iter().all(|r| r.is_none() || *r == Some(0.0)));
    // rechunk needs the length: only once evaluated.
    let fresh = ir::filter(&x, &ir::source(ColumnData::U8(vec![1]), 1, true).unwrap()).unwrap();
    assert_eq!(
        ir::rechunk_counted(&fresh, vec![6u32].into())
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
}

/// Ascending numbers, then NaN (as `unique` and `valueCounts` order values).
pub(super) fn nan_last(a: &f64, b: &f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => a.partial_cmp(b).unwrap(),
    }
}

/// `unique` of every type: ascending, NaN once and last, -0 and +0 one value, +0; null rows
/// one value after every other.
pub async fn unique_orders_distinct_values_of_every_type<T: Target>() {
    let mut rng = Rng(47);
    for dtype in DType::ALL {
        let n = 40;
        let mut values = sample(dtype, n, &mut rng);
        if dtype == DType::F32 {
            values[5] = -0.0;
            values[6] = 0.0;
        }
        let valid: Vec<u8> = (0..n).map(|i| u8::from(i % 9 != 1)).collect();
        let x = nullable(column_of(dtype, &values), Some(&valid), &[15, 0, 25]);
        let distinct = ir::unique(&x).unwrap();
        let mut expected: Vec<f64> = (0..n)
            .filter(|&r| valid[r] == 1)
            .map(|r| column_of(dtype, &values[r..r + 1]).get_f64(0))
            .collect();
        expected.sort_by(nan_last);
        expected.dedup_by(|a, b| a == b || (a.is_nan() && b.is_nan()));
        let mut expected: Vec<Option<f64>> = expected.into_iter().map(Some).collect();
        expected.push(None);
        let actual = rows_here::<T>(&distinct).await;
        same_rows(&format!("unique {dtype:?}"), &actual, &expected);
        if dtype == DType::F32 && !T::TRANSFERS {
            let zero = actual.iter().flatten().find(|v| **v == 0.0).unwrap();
            assert!(zero.is_sign_positive(), "-0 and +0 are +0");
        }
    }
}

/// On a device that draws indirect (WebGPU), a counted root's evaluation leaves its draw
/// arguments `[rows, 1, 0, 0]` there for the output vector; elsewhere there are none.
pub async fn a_counted_result_keeps_its_draw_arguments_on_the_device<T: Target>() {
    let device = T::device();
    let x = chunked(
        column_of(DType::F32, &[3.0, -1.0, 4.0, 1.0, -5.0]),
        1,
        &[2, 3],
    );
    let zero = ir::source(ColumnData::F32(vec![0.0]), 1, true).unwrap();
    let kept = ir::filter(
        &x,
        &ir::predicate(Predicate::Greater, &[x.clone(), zero]).unwrap(),
    )
    .unwrap();
    gputable::evaluator::evaluate_on(&device, std::slice::from_ref(&kept))
        .await
        .unwrap();
    let vector = gputable::table::Vector::of_output(&kept, device.core().id);
    assert_eq!(vector.length(), 3);
    match (device.draws_indirect(), &vector.draw_args) {
        (true, Some(args)) => {
            assert_eq!(args.home().unwrap().device, device.core().id);
            assert_eq!(read_u32(args).await, vec![3, 1, 0, 0]);
        }
        (false, None) => {}
        (draws, args) => panic!("draws indirect: {draws}, arguments: {args:?}"),
    }
}

/// Columns filtered by one mask share its kept rows: evaluated together they run the
/// mask's compaction once (a table's filter), each column keeps its own chunks and
/// nulls, and a mask with nulls keeps no null row.
pub async fn columns_filtered_by_one_mask_share_its_compaction<T: Target>() {
    let device = T::fresh().await;
    let n = 3000usize;
    let mut rng = Rng(97);
    let values: Vec<f64> = (0..n).map(|_| rng.below(100) as f64 - 50.0).collect();
    let valid: Vec<u8> = (0..n).map(|_| (rng.below(7) != 0) as u8).collect();
    let other: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let mask_valid: Vec<u8> = (0..n).map(|_| (rng.below(9) != 0) as u8).collect();
    let x = nullable(
        column_of(DType::F32, &values),
        Some(&valid),
        &[1000, 0, 2000],
    );
    let y = nullable(
        column_of(DType::U16, &other),
        None,
        &[700; 4].iter().copied().chain([200]).collect::<Vec<_>>(),
    );
    let base = nullable(column_of(DType::F32, &values), Some(&mask_valid), &[3000]);
    let mask = ir::predicate(Predicate::Greater, &[base, lit(&[0.])]).unwrap();
    let one = ir::filter(&x, &mask).unwrap();
    let alone = engine_schedule_regions(&device, std::slice::from_ref(&one));
    let both = [one.clone(), ir::filter(&y, &mask).unwrap()];
    let together = engine_schedule_regions(&device, &both);
    // The second column adds its gather and its chunk counts, not a second compaction.
    assert!(
        together <= alone + 3,
        "{alone} passes alone, {together} for two columns"
    );
    evaluate_here::<T>(&both).await;
    let keep: Vec<bool> = (0..n)
        .map(|r| mask_valid[r] != 0 && values[r] > 0.0)
        .collect();
    let kept = |column: &[f64], nulls: Option<&[u8]>| -> Vec<Option<f64>> {
        (0..n)
            .filter(|&r| keep[r])
            .map(|r| match nulls {
                Some(v) if v[r] == 0 => None,
                _ => Some(column[r]),
            })
            .collect()
    };
    same_rows(
        "x",
        &rows_here::<T>(&both[0]).await,
        &kept(&values, Some(&valid)),
    );
    same_rows("y", &rows_here::<T>(&both[1]).await, &kept(&other, None));
    assert_eq!(
        both[0].known_chunks().unwrap().to_vec(),
        kept_per_chunk(&keep, &[1000, 0, 2000])
    );
    assert_eq!(
        both[1].known_chunks().unwrap().to_vec(),
        kept_per_chunk(&keep, &[700, 700, 700, 700, 200])
    );
}

fn engine_schedule_regions<D: gputable::engine::CostModel>(device: &D, roots: &[NodeRef]) -> usize {
    let roots = ir::with_companions(roots);
    gputable::engine::schedule_of(device, &roots)
        .unwrap()
        .plan
        .regions
        .len()
}

/// A filter of row numbers is the mask's compaction itself (no gather): its count goes on a
/// view, so a later filter by the mask chunked otherwise keeps its own chunk counts, and
/// destroying the first result leaves the second whole.
pub async fn a_filter_of_row_numbers_leaves_the_shared_compaction_alone<T: Target>() {
    let n = 10u32;
    let mask = chunked(ColumnData::U8(vec![1, 0, 1, 1, 0, 0, 1, 0, 1, 1]), 1, &[n]);
    let rows = ir::cast(&ir::sequence(n as f64, 0.0, 1.0).unwrap(), DType::U32).unwrap();
    let numbers = ir::filter(&rows, &mask).unwrap();
    let y = chunked(
        column_of(
            DType::F32,
            &(0..n).map(|i| i as f64 * 10.0).collect::<Vec<_>>(),
        ),
        1,
        &[5, 5],
    );
    let kept = ir::filter(&y, &mask).unwrap();
    let expected_rows = [0.0, 2.0, 3.0, 6.0, 8.0, 9.0];
    let expected: Vec<Option<f64>> = expected_rows.iter().map(|&r| Some(r)).collect();
    same_rows("row numbers", &rows_here::<T>(&numbers).await, &expected);
    numbers.destroy();
    let tens: Vec<Option<f64>> = expected_rows.iter().map(|&r| Some(r * 10.0)).collect();
    same_rows("y", &rows_here::<T>(&kept).await, &tens);
    assert_eq!(
        kept.settled().unwrap().to_vec(),
        vec![3, 3],
        "y's own chunks"
    );
}

/// `valueCounts`: `unique`'s values and each one's rows, for every type (NaN one value,
/// -0 and +0 one, nulls one, last), chunked, counted and empty inputs.
pub async fn value_counts_count_each_distinct_value<T: Target>() {
    let mut rng = Rng(61);
    for dtype in DType::ALL {
        let n = 60;
        let mut values = sample(dtype, n, &mut rng);
        if dtype == DType::F32 {
            values[5] = -0.0;
            values[6] = 0.0;
            values[7] = f64::NAN;
        }
        let valid: Vec<u8> = (0..n).map(|i| u8::from(i % 9 != 1)).collect();
        let x = nullable(column_of(dtype, &values), Some(&valid), &[20, 0, 40]);
        let (distinct, counts) = ir::value_counts(&x).unwrap();
        let present: Vec<f64> = (0..n)
            .filter(|&r| valid[r] == 1)
            .map(|r| column_of(dtype, &values[r..r + 1]).get_f64(0))
            .map(|v| if v == 0.0 { 0.0 } else { v })
            .collect();
        let mut expected: Vec<(f64, u32)> = Vec::new();
        let mut sorted = present.clone();
        sorted.sort_by(nan_last);
        for v in sorted {
            match expected.last_mut() {
                Some((last, count)) if *last == v || (last.is_nan() && v.is_nan()) => *count += 1,
                _ => expected.push((v, 1)),
            }
        }
        let nulls = valid.iter().filter(|&&v| v == 0).count() as u32;
        let mut expected_values: Vec<Option<f64>> =
            expected.iter().map(|&(v, _)| Some(v)).collect();
        expected_values.push(None);
        let mut expected_counts: Vec<Option<f64>> =
            expected.iter().map(|&(_, c)| Some(c as f64)).collect();
        expected_counts.push(Some(nulls as f64));
        evaluate_here::<T>(&[distinct.clone(), counts.clone()]).await;
        same_rows(
            &format!("valueCounts {dtype:?} values"),
            &rows_here::<T>(&distinct).await,
            &expected_values,
        );
        assert_eq!(counts.meta.dtype, DType::U32);
        same_rows(
            &format!("valueCounts {dtype:?} counts"),
            &rows_here::<T>(&counts).await,
            &expected_counts,
        );
    }
    // Of a filter's rows (counted on the device), and of no rows.
    let x = chunked(
        column_of(DType::U16, &[5.0, 1.0, 5.0, 9.0, 1.0, 5.0]),
        1,
        &[4, 2],
    );
    let keep = chunked(ColumnData::U8(vec![1, 1, 1, 0, 0, 1]), 1, &[4, 2]);
    let (values, counts) = ir::value_counts(&ir::filter(&x, &keep).unwrap()).unwrap();
    evaluate_here::<T>(&[values.clone(), counts.clone()]).await;
    same_rows(
        "kept values",
        &rows_here::<T>(&values).await,
        &[Some(1.0), Some(5.0)],
    );
    same_rows(
        "kept counts",
        &rows_here::<T>(&counts).await,
        &[Some(1.0), Some(3.0)],
    );
    // 8- and 16-bit integers with a row per value of their type or more are counted per
    // value: a filter's rows with nulls (only those within its count), and no nulls.
    let n = 300;
    let small: Vec<i8> = (0..n).map(|r| ((r * 37) % 256) as u8 as i8).collect();
    let valid: Vec<u8> = (0..n).map(|r| u8::from(r % 7 != 3)).collect();
    let keep: Vec<u8> = (0..n).map(|r| u8::from(r % 5 != 1)).collect();
    let x = nullable(ColumnData::I8(small.clone()), Some(&valid), &[120, 0, 180]);
    let mask = chunked(ColumnData::U8(keep.clone()), 1, &[120, 0, 180]);
    let (values, counts) = ir::value_counts(&ir::filter(&x, &mask).unwrap()).unwrap();
    let mut expected = std::collections::BTreeMap::<i8, u32>::new();
    let mut nulls = 0;
    for r in (0..n).filter(|&r| keep[r] == 1) {
        match valid[r] {
            1 => *expected.entry(small[r]).or_default() += 1,
            _ => nulls += 1,
        }
    }
    let mut expected_values: Vec<_> = expected.keys().map(|&v| Some(v as f64)).collect();
    expected_values.push(None);
    let mut expected_counts: Vec<_> = expected.values().map(|&c| Some(c as f64)).collect();
    expected_counts.push(Some(nulls as f64));
    evaluate_here::<T>(&[values.clone(), counts.clone()]).await;
    same_rows(
        "kept int8 values",
        &rows_here::<T>(&values).await,
        &expected_values,
    );
    same_rows(
        "kept int8 counts",
        &rows_here::<T>(&counts).await,
        &expected_counts,
    );
    let n = 70_000u32;
    let x = chunked(
        ColumnData::U16((0..n).map(|r| (r * 7 % 65_000) as u16).collect()),
        1,
        &[n],
    );
    let (values, counts) = ir::value_counts(&x).unwrap();
    evaluate_here::<T>(&[values.clone(), counts.clone()]).await;
    let (values, counts) = (rows_here::<T>(&values).await, rows_here::<T>(&counts).await);
    let mut expected = vec![0u32; 65_000];
    (0..n).for_each(|r| expected[(r * 7 % 65_000) as usize] += 1);
    assert_eq!(values.len(), 65_000, "every value of 0..65,000");
    for (v, (value, count)) in values.iter().zip(&counts).enumerate() {
        assert_eq!((*value, *count), (Some(v as f64), Some(expected[v] as f64)));
    }
    for empty in [
        chunked(ColumnData::F32(vec![]), 1, &[0]),
        chunked(ColumnData::I16(vec![]), 1, &[0]),
    ] {
        let (values, counts) = ir::value_counts(&empty).unwrap();
        evaluate_here::<T>(&[values.clone(), counts.clone()]).await;
        same_rows("empty values", &rows_here::<T>(&values).await, &[]);
        same_rows("empty counts", &rows_here::<T>(&counts).await, &[]);
    }
    let wide = chunked(ColumnData::F32(vec![0.0; 4]), 2, &[2]);
    assert_eq!(
        code(ir::value_counts(&wide).map(|_| ())),
        ErrorCode::InvalidArgument
    );
}

/// A filter evaluated already has its kept rows' length: a mask, a `where`, sort keys, a
/// group-by's keys and an elementwise op made for those rows take it (they were refused,
/// measured against the filter's capacity).
pub async fn an_evaluated_filter_meets_columns_of_its_kept_rows<T: Target>() {
    a_filter_meets_columns_of_its_kept_rows::<T>(true).await;
}

/// The same before the filter is evaluated: its count is decided on the device, so columns
/// of the rows it will keep are taken (api.md: the length rules hold with the counts the
/// device decides), and the ops read them as a column of that many rows.
pub async fn an_unevaluated_filter_meets_columns_of_its_kept_rows<T: Target>() {
    a_filter_meets_columns_of_its_kept_rows::<T>(false).await;
}

async fn a_filter_meets_columns_of_its_kept_rows<T: Target>(evaluated: bool) {
    let values = [5.0, f64::NAN, -0.0, 2.0, 7.0, 2.0, -3.0];
    let x = nullable(
        column_of(DType::F32, &values),
        Some(&[1, 1, 1, 0, 1, 1, 1]),
        &[3, 4],
    );
    let keep = chunked(ColumnData::U8(vec![1, 1, 0, 1, 1, 1, 0]), 1, &[3, 4]);
    let kept = ir::filter(&x, &keep).unwrap();
    if evaluated {
        evaluate_here::<T>(std::slice::from_ref(&kept)).await;
        // Kept: 5, NaN, null, 7, 2.
        assert_eq!(kept.known_length(), Some(5));
    }
    let column = |data| ir::source(data, 1, false).unwrap();
    let mask = column(ColumnData::U8(vec![1, 0, 1, 1, 0]));

    let again = ir::filter(&kept, &mask).unwrap();
    let expected = [Some(5.0), None, Some(7.0)];
    same_rows("filter", &rows_here::<T>(&again).await, &expected);
    let sum = ir::reduce_where(ReduceKind::Sum, &kept, None, &mask, None, 4).unwrap();
    same_rows("sum where", &rows_here::<T>(&sum).await, &[Some(12.0)]);
    let halves = ir::Bins::Equal {
        bins: 2.0,
        range: Some((0.0, 10.0)),
    };
    let counts = ir::histogram(&kept, &halves, Some(&mask)).unwrap();
    same_rows(
        "histogram",
        &rows_here::<T>(&counts).await,
        &[Some(0.0), Some(2.0)],
    );

    let other = column(ColumnData::U32(vec![2, 1, 2, 1, 1]));
    let keys = [other.clone(), kept.clone()];
    let order = ir::argsort(&keys, &[false, false], ir::Nulls::Last).unwrap();
    let expected = [4.0, 3.0, 1.0, 0.0, 2.0].map(Some);
    same_rows("argsort", &rows_here::<T>(&order).await, &expected);

    let sum_of_kept = Aggregate {
        op: GroupOp::Sum,
        value: Some(kept.clone()),
    };
    let (keys, sums) = ir::group_by(std::slice::from_ref(&other), &[sum_of_kept]).unwrap();
    let (keys, sums) = (
        rows_here::<T>(&keys[0]).await,
        rows_here::<T>(&sums[0]).await,
    );
    same_rows("group keys", &keys, &[Some(1.0), Some(2.0)]);
    same_rows("group sums", &sums, &[Some(f64::NAN), Some(5.0)]);

    let ones = column(ColumnData::F32(vec![1.0; 5]));
    let plus = ir::binary(Add, &kept, &ones).unwrap();
    let expected = [Some(6.0), Some(f64::NAN), None, Some(8.0), Some(3.0)];
    same_rows("add", &rows_here::<T>(&plus).await, &expected);
}
