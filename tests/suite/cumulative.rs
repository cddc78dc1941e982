//! `cumsum cumprod cummin cummax` (api.md "Order") against a plain running fold on every
//! backend: the seven types, NaN, nulls, `exclusive` and `reverse`, uneven and empty chunks,
//! rows of several lanes, and a million rows.

use super::reduce::{as_f64, column_of, sample};
use super::*;
use gputable::dtype::Class;
use gputable::engine;
use gputable::ir::{ReduceKind, ScanFold};
use gputable::DType;

const FOLDS: [ScanFold; 4] = [ScanFold::Sum, ScanFold::Prod, ScanFold::Min, ScanFold::Max];

/// The running fold of one lane (`values` in order), as api.md words it, in f64 holding the
/// output type's values: sums and products in sum's type (floats as float32, integers
/// wrapping), minimum and maximum skipping NaN (none yet: NaN, or the type's far end).
fn reference(fold: ScanFold, dtype: DType, values: &[Option<f64>], exclusive: bool) -> Vec<f64> {
    let class = dtype.class();
    let wrap = |v: f64| match class {
        Class::F => v as f32 as f64,
        Class::I => (v as i64) as i32 as f64,
        Class::U => (v as i64) as u32 as f64,
    };
    let (lo, end) = match class {
        Class::F => (f64::NAN, f64::NAN),
        _ => dtype.int_bounds(),
    };
    let none = match fold {
        ScanFold::Sum => 0.0,
        ScanFold::Prod => 1.0,
        ScanFold::Min if class == Class::F => f64::NAN,
        ScanFold::Min => end - 1.0,
        ScanFold::Max if class == Class::F => f64::NAN,
        ScanFold::Max => lo,
    };
    let combine = |acc: f64, v: f64| -> f64 {
        match fold {
            ScanFold::Sum => match class {
                Class::F => (acc as f32 + v as f32) as f64,
                _ => wrap(acc + v),
            },
            ScanFold::Prod => match class {
                Class::F => (acc as f32 * v as f32) as f64,
                // Exact modulo 2^32 through i128.
                _ => wrap(((acc as i128 * v as i128) % (1i128 << 32)) as f64),
            },
            _ if v.is_nan() => acc,
            _ if acc.is_nan() => v,
            ScanFold::Min => acc.min(v),
            ScanFold::Max => acc.max(v),
        }
    };
    let mut acc = none;
    values
        .iter()
        .map(|v| {
            let before = acc;
            if let Some(v) = v {
                acc = combine(acc, *v);
            }
            if exclusive {
                before
            } else {
                acc
            }
        })
        .collect()
}

/// Checks `root` (evaluated on the target) row by row: values of valid rows, and flags.
async fn check<T: Target>(root: &NodeRef, expected: &[f64], valid: Option<&[u8]>, what: &str) {
    evaluate_here::<T>(std::slice::from_ref(root)).await;
    same_rows(root, expected, valid, what).await;
}

/// Checks evaluated `root` row by row: values of valid rows, and flags.
async fn same_rows(root: &NodeRef, expected: &[f64], valid: Option<&[u8]>, what: &str) {
    let actual = as_f64(&read(root).await);
    assert_eq!(actual.len(), expected.len(), "{what}");
    let flags = match (root.validity(), valid) {
        (Some(v), Some(valid)) => {
            let flags = read(v).await;
            assert_eq!(flags, ColumnData::U8(valid.to_vec()), "{what}: null flags");
            valid.to_vec()
        }
        (None, None) => vec![1; expected.len()],
        (got, want) => panic!(
            "{what}: null flags {:?}, expected {:?}",
            got.is_some(),
            want.is_some()
        ),
    };
    for (r, (a, e)) in actual.iter().zip(expected).enumerate() {
        let same = a == e || (a.is_nan() && e.is_nan());
        assert!(
            flags[r] == 0 || same,
            "{what}: row {r}: device {a} vs reference {e}"
        );
    }
}

/// Products of these stay exact in any order (powers of two, signs).
fn product_sample(dtype: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    (0..n)
        .map(|i| match dtype {
            DType::F32 if i % 11 == 5 => f64::NAN,
            DType::F32 => [1.0, -1.0, 2.0, 0.5, -0.5, 1.0][rng.below(6) as usize],
            _ => sample(dtype, 1, rng)[0],
        })
        .collect()
}

pub async fn cumulative_ops_match_a_running_fold<T: Target>() {
    let mut rng = Rng(53);
    let n = 1000;
    let chunks = [300, 0, 450, 250];
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        let sums = sample(dtype, n, &mut rng);
        let products = product_sample(dtype, n, &mut rng);
        // Every other type has nulls (every seventh row, and a run at the start).
        let valid: Option<Vec<u8>> =
            (k % 2 == 0).then(|| (0..n).map(|i| u8::from(i % 7 != 3 && i > 2)).collect());
        for fold in FOLDS {
            let values = if fold == ScanFold::Prod {
                &products
            } else {
                &sums
            };
            let x = chunked(column_of(dtype, values), 1, &chunks);
            let x = match &valid {
                Some(v) => {
                    let flags = chunked(ColumnData::U8(v.clone()), 1, &chunks);
                    ir::with_validity(&x, Some(&flags)).unwrap()
                }
                None => x,
            };
            let present: Vec<Option<f64>> = (0..n)
                .map(|r| match &valid {
                    Some(v) if v[r] == 0 => None,
                    _ => Some(values[r]),
                })
                .collect();
            for (exclusive, reverse) in [(false, false), (true, false), (false, true), (true, true)]
            {
                let root = ir::cumulative(fold, &x, exclusive, reverse).unwrap();
                let expected_type = match fold {
                    ScanFold::Sum | ScanFold::Prod => ReduceKind::Sum.output_type(dtype),
                    _ => dtype,
                };
                assert_eq!(root.meta.dtype, expected_type);
                assert_eq!(root.chunks, x.chunks, "the output keeps x's chunks");
                let expected = match reverse {
                    false => reference(fold, dtype, &present, exclusive),
                    true => {
                        let backwards: Vec<_> = present.iter().rev().cloned().collect();
                        let mut e = reference(fold, dtype, &backwards, exclusive);
                        e.reverse();
                        e
                    }
                };
                let what = format!(
                    "cum{} of {dtype:?} exclusive {exclusive} reverse {reverse}",
                    fold.name()
                );
                check::<T>(&root, &expected, valid.as_deref(), &what).await;
            }
        }
    }
    // Rows of three lanes scan lane by lane.
    let x = chunked(
        ColumnData::I32((0..300).map(|i| i % 5 - 2).collect()),
        3,
        &[40, 60],
    );
    let root = ir::cumulative(ScanFold::Sum, &x, false, false).unwrap();
    let mut running = [0i32; 3];
    let expected: Vec<f64> = (0..300)
        .map(|i| {
            running[i % 3] += (i % 5) as i32 - 2;
            running[i % 3] as f64
        })
        .collect();
    check::<T>(&root, &expected, None, "cumsum of rows of 3").await;
    // Empty input, and a constant.
    let empty = chunked(ColumnData::F32(vec![]), 1, &[0]);
    for fold in FOLDS {
        let root = ir::cumulative(fold, &empty, false, true).unwrap();
        check::<T>(&root, &[], None, "empty").await;
    }
    // A constant is one row.
    let constant = ir::cumulative(ScanFold::Sum, &lit(&[1.0]), false, false).unwrap();
    evaluate::<T>(std::slice::from_ref(&constant))
        .await
        .unwrap();
    assert_eq!(read_f32(&constant).await, vec![1.0]);
}

pub async fn cumulative_ops_over_a_million_rows<T: Target>() {
    let n = 1_100_000usize;
    let chunks = [500_000, 0, 599_999, 1];
    let ints: Vec<u32> = (0..n as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 29) & 3)
        .collect();
    let floats: Vec<f32> = ints.iter().map(|&v| v as f32 - 1.5).collect();
    let x = chunked(ColumnData::U32(ints.clone()), 1, &chunks);
    let y = chunked(ColumnData::F32(floats.clone()), 1, &chunks);
    let sum = ir::cumulative(ScanFold::Sum, &x, false, false).unwrap();
    let mut running = 0u32;
    let expected: Vec<f64> = ints
        .iter()
        .map(|v| {
            running = running.wrapping_add(*v);
            running as f64
        })
        .collect();
    check::<T>(&sum, &expected, None, "cumsum of 1.1M uint32").await;
    // Halves: every partial sum is exact, whatever the order of additions.
    let sum = ir::cumulative(ScanFold::Sum, &y, true, true).unwrap();
    let mut running = 0f64;
    let mut expected: Vec<f64> = floats
        .iter()
        .rev()
        .map(|v| {
            let before = running;
            running += *v as f64;
            before
        })
        .collect();
    expected.reverse();
    check::<T>(
        &sum,
        &expected,
        None,
        "exclusive reverse cumsum of 1.1M float32",
    )
    .await;
    let max = ir::cumulative(ScanFold::Max, &y, false, false).unwrap();
    let mut running = f64::NAN;
    let expected: Vec<f64> = floats
        .iter()
        .map(|v| {
            running = if running.is_nan() {
                *v as f64
            } else {
                running.max(*v as f64)
            };
            running
        })
        .collect();
    check::<T>(&max, &expected, None, "cummax of 1.1M float32").await;
}

/// Reversed over a filter's rows (counted on the device), a fold runs back from the last
/// kept row, not from the end of the filter's capacity.
pub async fn reversed_folds_of_a_filter_start_at_its_last_kept_row<T: Target>() {
    let x = chunked(
        column_of(DType::I32, &[2.0, 3.0, 5.0, 7.0, 4.0]),
        1,
        &[2, 3],
    );
    let keep = chunked(ColumnData::U8(vec![1, 1, 0, 1, 0]), 1, &[2, 3]);
    let kept = ir::filter(&x, &keep).unwrap();
    for (fold, exclusive, expected) in [
        (ScanFold::Prod, false, vec![42.0, 21.0, 7.0]),
        (ScanFold::Prod, true, vec![21.0, 7.0, 1.0]),
        (ScanFold::Sum, false, vec![12.0, 10.0, 7.0]),
        (ScanFold::Max, false, vec![7.0, 7.0, 7.0]),
        (ScanFold::Min, true, vec![3.0, 7.0, i32::MAX as f64]),
    ] {
        let root = ir::cumulative(fold, &kept, exclusive, true).unwrap();
        let what = format!(
            "reversed cum{} of kept rows, exclusive {exclusive}",
            fold.name()
        );
        check::<T>(&root, &expected, None, &what).await;
    }
}

/// A cumulative op larger than `allowedMem` (api.md "Memory": a task that cannot fit is
/// `LIMIT_EXCEEDED`; a scan's pass read its column and wrote its result whole): it is taken
/// a range of rows at a time, in order (reversed: from the last), each range folding in the
/// ranges before (after) it, within the budget; its rows and null flags are a whole scan's,
/// over uneven and empty chunks, inclusive and exclusive, floats with NaN, a narrow integer
/// type and wrapping integers.
pub async fn a_cumulative_op_larger_than_the_budget_scans_in_parts<T: Target>() {
    let device = match T::WIDE_ROWS {
        true => T::fresh().await,
        false => T::capped().await,
    };
    let n = 60_000usize;
    let chunks = [21_000, 0, 15_000, n as u32 - 36_000];
    let mut rng = Rng(71);
    // Small integers: a float sum of them is exact in any order.
    let small: Vec<f64> = (0..n).map(|_| rng.below(200) as f64 - 100.0).collect();
    let with_nan: Vec<f64> = (0..n)
        .map(|i| match i {
            0..=9 => f64::NAN,
            _ if i % 13 == 0 => f64::NAN,
            _ => 5000.0 - i as f64,
        })
        .collect();
    let valid: Vec<u8> = (0..n).map(|i| u8::from(i % 7 != 3 && i > 2)).collect();
    let wrapping: Vec<f64> = (0..n).map(|i| (i as f64) * 977.0 + 4e9).collect();
    let cases = [
        (ScanFold::Sum, DType::F32, &small, false, true, false),
        (ScanFold::Sum, DType::I32, &small, true, true, false),
        (ScanFold::Min, DType::F32, &with_nan, false, true, false),
        (ScanFold::Max, DType::F32, &with_nan, true, false, false),
        (ScanFold::Max, DType::I8, &small, false, true, false),
        (ScanFold::Sum, DType::U32, &wrapping, true, false, false),
        // Regression: a reversed scan read its rows through a gather and was made whole
        // (LIMIT_EXCEEDED).
        (ScanFold::Sum, DType::F32, &small, false, true, true),
        (ScanFold::Min, DType::F32, &with_nan, true, false, true),
        (ScanFold::Max, DType::I8, &small, true, true, true),
        (ScanFold::Sum, DType::U32, &wrapping, false, false, true),
    ];
    for (fold, dtype, values, exclusive, nulls, reverse) in cases {
        let what = format!(
            "cum{} of {dtype:?} exclusive {exclusive} reverse {reverse}",
            fold.name()
        );
        let x = chunked(column_of(dtype, values), 1, &chunks);
        let x = match nulls {
            true => {
                let flags = chunked(ColumnData::U8(valid.clone()), 1, &chunks);
                ir::with_validity(&x, Some(&flags)).unwrap()
            }
            false => x,
        };
        let root = ir::cumulative(fold, &x, exclusive, reverse).unwrap();
        let column_bytes = device.value_bytes(DType::F32, 1, n as u32);
        let allowed = device.task_overhead_bytes() + column_bytes * (1 + T::TRANSFERS as u64);
        device.core().allowed_mem.set(Some(allowed));
        let text = engine::explain(&device, &root).unwrap();
        assert!(text.contains("cumulative op in parts"), "{what}: {text}");
        assert_eq!(
            text.contains("backwards from the last"),
            reverse,
            "{what}: {text}"
        );
        device.core().counters.reset_peak();
        engine::evaluate(&device, std::slice::from_ref(&root))
            .await
            .unwrap_or_else(|e| panic!("{what}: {e:?}\n{text}"));
        let peak = device.core().counters.memory().peak_bytes;
        assert!(
            peak <= allowed,
            "{what}: peak {peak} over allowedMem {allowed}"
        );
        device.core().allowed_mem.set(None);
        let column = column_of(dtype, values);
        let stored = as_f64(&column);
        let mut present: Vec<Option<f64>> = (0..n)
            .map(|r| (!nulls || valid[r] == 1).then_some(stored[r]))
            .collect();
        if reverse {
            present.reverse();
        }
        let mut expected = reference(fold, dtype, &present, exclusive);
        if reverse {
            expected.reverse();
        }
        assert_eq!(root.chunks, x.chunks, "{what}: the output keeps x's chunks");
        same_rows(&root, &expected, nulls.then_some(&valid[..]), &what).await;
    }
}
