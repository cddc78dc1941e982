//! `argsort`, `sort` and `topK` (api.md "Order") against a plain stable sort on every
//! backend: the seven types with ties, NaN, ±0 and infinities, nulls first and last, both
//! directions, several keys, uneven and empty chunks, a million rows, and the bad arguments.

use std::cmp::Ordering;

use super::reduce::{column_of, sample};
use super::*;
use gputable::ir::Nulls;
use gputable::DType;

/// One key of the reference: values (None: null) and direction.
pub(super) struct Key {
    pub values: Vec<Option<f64>>,
    pub descending: bool,
}

/// api.md's order of two values of a key: numbers ascending (-0 = +0) or descending, NaN
/// after every number either way, nulls last (or first).
fn compare(a: Option<f64>, b: Option<f64>, descending: bool, nulls: Nulls) -> Ordering {
    let nulls_after = |o: Ordering| if nulls == Nulls::Last { o } else { o.reverse() };
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => nulls_after(Ordering::Greater),
        (Some(_), None) => nulls_after(Ordering::Less),
        (Some(a), Some(b)) => match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ if descending => b.partial_cmp(&a).unwrap(),
            _ => a.partial_cmp(&b).unwrap(),
        },
    }
}

/// The stable order of the rows by `keys` (the first first).
pub(super) fn reference(keys: &[Key], nulls: Nulls) -> Vec<u32> {
    let rows = keys[0].values.len();
    let mut order: Vec<u32> = (0..rows as u32).collect();
    order.sort_by(|&i, &j| {
        keys.iter()
            .map(|k| {
                compare(
                    k.values[i as usize],
                    k.values[j as usize],
                    k.descending,
                    nulls,
                )
            })
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    });
    order
}

/// A chunked key column of `values` (f64 in `dtype`), null where `valid` is 0.
pub(super) fn key_column(
    dtype: DType,
    values: &[f64],
    valid: Option<&[u8]>,
    chunks: &[u32],
) -> NodeRef {
    let x = chunked(column_of(dtype, values), 1, chunks);
    match valid {
        Some(v) => {
            let flags = chunked(ColumnData::U8(v.to_vec()), 1, chunks);
            ir::with_validity(&x, Some(&flags)).unwrap()
        }
        None => x,
    }
}

pub(super) fn present(values: &[f64], valid: Option<&[u8]>) -> Vec<Option<f64>> {
    (0..values.len())
        .map(|r| match valid {
            Some(v) if v[r] == 0 => None,
            _ => Some(values[r]),
        })
        .collect()
}

/// Evaluates `root` on the target (checking it is there) and reads it as uint32.
async fn rows_of<T: Target>(root: &NodeRef) -> Vec<u32> {
    evaluate_here::<T>(std::slice::from_ref(root)).await;
    read_u32(root).await
}

/// Float keys with the edges: ties, ±0, ±Inf and NaN.
pub(super) fn float_keys(n: usize, rng: &mut Rng) -> Vec<f64> {
    (0..n)
        .map(|_| match rng.below(12) {
            0 => f64::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f64::INFINITY,
            4 => f64::NEG_INFINITY,
            _ => (rng.below(9) as f64 - 4.0) * 0.5,
        })
        .collect()
}

pub async fn argsort_orders_every_type_stably_with_nan_and_nulls<T: Target>() {
    let mut rng = Rng(61);
    let n = 1000;
    let chunks = [300, 0, 450, 250];
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        let values = match dtype {
            DType::F32 => float_keys(n, &mut rng),
            _ => sample(dtype, n, &mut rng),
        };
        let valid: Option<Vec<u8>> =
            (k % 2 == 1).then(|| (0..n).map(|_| u8::from(rng.below(6) != 0)).collect());
        let x = key_column(dtype, &values, valid.as_deref(), &chunks);
        for descending in [false, true] {
            for nulls in [Nulls::Last, Nulls::First] {
                let root = ir::argsort(std::slice::from_ref(&x), &[descending], nulls).unwrap();
                assert_eq!((root.meta.dtype, root.chunks.len()), (DType::U32, 1));
                let key = Key {
                    values: present(&values, valid.as_deref()),
                    descending,
                };
                let expected = reference(&[key], nulls);
                assert_eq!(
                    rows_of::<T>(&root).await,
                    expected,
                    "{dtype:?} descending {descending} {nulls:?}"
                );
            }
        }
        // sort: the values in that order, nulls with them.
        let sorted = ir::sort(&x, true, Nulls::Last).unwrap();
        let order = reference(
            &[Key {
                values: present(&values, valid.as_deref()),
                descending: true,
            }],
            Nulls::Last,
        );
        evaluate_here::<T>(std::slice::from_ref(&sorted)).await;
        let got = super::reduce::as_f64(&read(&sorted).await);
        for (r, &i) in order.iter().enumerate() {
            let (a, e) = (got[r], values[i as usize]);
            let null = valid.as_ref().is_some_and(|v| v[i as usize] == 0);
            assert!(
                null || a == e || (a.is_nan() && e.is_nan()),
                "{dtype:?} sort row {r}: {a} vs {e}"
            );
        }
        if let Some(valid) = &valid {
            let flags: Vec<u8> = order.iter().map(|&i| valid[i as usize]).collect();
            assert_eq!(
                read(sorted.validity().unwrap()).await,
                ColumnData::U8(flags),
                "{dtype:?} sorted nulls"
            );
        }
    }
}

pub async fn argsort_by_several_keys_and_top_k<T: Target>() {
    let mut rng = Rng(67);
    let n = 2000;
    let a: Vec<f64> = (0..n).map(|_| rng.below(4) as f64).collect();
    let b = float_keys(n, &mut rng);
    let c: Vec<f64> = (0..n).map(|_| rng.below(7) as f64 - 3.0).collect();
    let b_valid: Vec<u8> = (0..n).map(|i| u8::from(i % 9 != 2)).collect();
    let keys = [
        key_column(DType::U8, &a, None, &[1000, 1000]),
        key_column(DType::F32, &b, Some(&b_valid), &[2000]),
        key_column(DType::I16, &c, None, &[500, 1500]),
    ];
    for directions in [
        vec![false],
        vec![true, false, true],
        vec![false, true, false],
    ] {
        let down = |k: usize| directions[k.min(directions.len() - 1)];
        let root = ir::argsort(&keys, &directions, Nulls::Last).unwrap();
        let expected = reference(
            &[
                Key {
                    values: present(&a, None),
                    descending: down(0),
                },
                Key {
                    values: present(&b, Some(&b_valid)),
                    descending: down(1),
                },
                Key {
                    values: present(&c, None),
                    descending: down(2),
                },
            ],
            Nulls::Last,
        );
        assert_eq!(
            rows_of::<T>(&root).await,
            expected,
            "three keys {directions:?}"
        );
    }
    // topK: the first k rows of the descending sort and their rows, k = 0, 1, 10, > rows.
    let x = key_column(DType::F32, &b, None, &[700, 0, 1300]);
    let order = reference(
        &[Key {
            values: present(&b, None),
            descending: true,
        }],
        Nulls::Last,
    );
    for k in [0usize, 1, 10, n + 5] {
        let (values, indices) = ir::top_k(&x, k as f64, true).unwrap();
        let want = &order[..k.min(n)];
        assert_eq!(rows_of::<T>(&indices).await, want, "topK({k}) rows");
        let got = super::reduce::as_f64(&read(&values).await);
        let expected: Vec<f64> = want.iter().map(|&i| b[i as usize]).collect();
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(&expected) {
            assert!(
                g == e || (g.is_nan() && e.is_nan()),
                "topK({k}): {g} vs {e}"
            );
        }
    }
    // With nulls (last): the CPU orders the first rows alone, the others sort them all.
    let nullable = key_column(DType::F32, &b, Some(&b_valid), &[1999, 1]);
    let nulls_last = reference(
        &[Key {
            values: present(&b, Some(&b_valid)),
            descending: false,
        }],
        Nulls::Last,
    );
    for k in [5usize, 100] {
        let (_, indices) = ir::top_k(&nullable, k as f64, false).unwrap();
        assert_eq!(
            rows_of::<T>(&indices).await,
            &nulls_last[..k],
            "topK({k}) with nulls"
        );
    }
    let (ascending, _) = ir::top_k(&x, 3.0, false).unwrap();
    let smallest: Vec<f64> = reference(
        &[Key {
            values: present(&b, None),
            descending: false,
        }],
        Nulls::Last,
    )[..3]
        .iter()
        .map(|&i| b[i as usize])
        .collect();
    rows_of_f32::<T>(&ascending, &smallest).await;
    // Bad arguments.
    let wide = f32s(&[1.0, 2.0], 2);
    assert_eq!(
        code(ir::argsort(
            std::slice::from_ref(&wide),
            &[false],
            Nulls::Last
        )),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::sort(&wide, false, Nulls::Last)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(ir::top_k(&x, -1.0, true)), ErrorCode::InvalidArgument);
    assert_eq!(code(ir::top_k(&x, 1.5, true)), ErrorCode::InvalidArgument);
    // JavaScript's number in the message, not Rust's `inf`.
    let infinite = ir::top_k(&x, f64::INFINITY, true).err().map(|e| e.message);
    assert!(infinite.is_some_and(|m| m.ends_with("got Infinity")));
    assert_eq!(
        code(ir::top_k(&x, f64::NAN, true)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::argsort(&[], &[false], Nulls::Last)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::argsort(&keys, &[false, true], Nulls::Last)),
        ErrorCode::InvalidArgument
    );
    let short = f32s(&[1.0], 1);
    assert_eq!(
        code(ir::argsort(&[x.clone(), short], &[false], Nulls::Last)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(Nulls::parse("middle")), ErrorCode::InvalidArgument);
    // Empty input, and one row.
    let empty = f32s(&[], 1);
    assert_eq!(
        rows_of::<T>(&ir::argsort(&[empty], &[false], Nulls::Last).unwrap()).await,
        Vec::<u32>::new()
    );
    let one = f32s(&[f32::NAN], 1);
    assert_eq!(
        rows_of::<T>(&ir::argsort(&[one], &[true], Nulls::Last).unwrap()).await,
        vec![0]
    );
}

/// `topK` of many rows with few distinct keys (ties across every run and chunk), NaN, ±0,
/// nulls and a partial last run, by every type of key, both directions, k from 1 past the
/// most a GPU's runs keep: the first k rows of the stable sort, ties in row order.
pub async fn top_k_of_many_rows_keeps_ties_in_row_order<T: Target>() {
    let mut rng = Rng(71);
    let n = 70_001;
    let values = float_keys(n, &mut rng);
    let valid: Vec<u8> = (0..n).map(|_| u8::from(rng.below(13) != 0)).collect();
    for dtype in [DType::F32, DType::I32, DType::U8] {
        let values: Vec<f64> = match dtype {
            DType::F32 => values.clone(),
            _ => values
                .iter()
                .map(|v| if v.is_finite() { (v * 2.0).abs() } else { 3.0 })
                .collect(),
        };
        for with_nulls in [false, true] {
            let flags = with_nulls.then_some(&valid[..]);
            let x = key_column(dtype, &values, flags, &[30_000, 0, 40_001]);
            for descending in [true, false] {
                let order = reference(
                    &[Key {
                        values: present(&values, flags),
                        descending,
                    }],
                    Nulls::Last,
                );
                for k in [1usize, 7, 16, 17, 128] {
                    let (_, indices) = ir::top_k(&x, k as f64, descending).unwrap();
                    assert_eq!(
                        rows_of::<T>(&indices).await,
                        &order[..k],
                        "topK({k}) of {dtype:?}, descending {descending}, nulls {with_nulls}"
                    );
                }
            }
        }
    }
}

/// `topK` of a few thousand rows of few distinct values (ties in every run the GPUs' first
/// pass keeps its first rows of), k up to the most a run keeps: the stable sort's first k
/// rows. WebGL2 dropped tied rows here (a row of a run lost to a tie).
pub async fn top_k_keeps_every_tied_row_of_each_run<T: Target>() {
    for seed in 0..24 {
        let mut rng = Rng(seed + 100);
        let n = 1024 + rng.below(5000) as usize;
        let k = 1 + rng.below(16) as usize;
        let distinct = 2 + rng.below(500);
        let values: Vec<f64> = (0..n).map(|_| rng.below(distinct) as f64).collect();
        let x = key_column(DType::F32, &values, None, &[n as u32]);
        let order = reference(
            &[Key {
                values: present(&values, None),
                descending: true,
            }],
            Nulls::Last,
        );
        let (_, indices) = ir::top_k(&x, k as f64, true).unwrap();
        assert_eq!(
            rows_of::<T>(&indices).await,
            &order[..k],
            "topK({k}) of {n} rows of {distinct} values (seed {seed})"
        );
    }
}

async fn rows_of_f32<T: Target>(root: &NodeRef, expected: &[f64]) {
    evaluate_here::<T>(std::slice::from_ref(root)).await;
    let got = super::reduce::as_f64(&read(root).await);
    assert_eq!(got, expected);
}

pub async fn argsort_of_a_million_float_keys<T: Target>() {
    let mut rng = Rng(71);
    let n = 1_200_000;
    let values = float_keys(n, &mut rng);
    let x = key_column(DType::F32, &values, None, &[600_000, 0, 600_000]);
    let root = ir::argsort(&[x], &[true], Nulls::Last).unwrap();
    let expected = reference(
        &[Key {
            values: present(&values, None),
            descending: true,
        }],
        Nulls::Last,
    );
    assert!(
        rows_of::<T>(&root).await == expected,
        "1.2M float keys, descending"
    );
}

/// A stable sort by a 32-bit key, then another: the CPU's choice of a bucket sort counted
/// the first key's 2^32 buckets in a usize, which overflowed in wasm32 (a panic in the
/// debug build; a wrong choice past it).
pub async fn a_sort_by_a_32_bit_key_then_another_counts_its_buckets_in_64_bits<T: Target>() {
    let first = ir::source(ColumnData::U32(vec![7, u32::MAX, 7, 0]), 1, false).unwrap();
    let second = ir::source(ColumnData::U8(vec![2, 1, 1, 9]), 1, false).unwrap();
    let order = ir::argsort(&[first, second], &[false], ir::Nulls::Last).unwrap();
    evaluate_here::<T>(std::slice::from_ref(&order)).await;
    assert_eq!(read_u32(&order).await, vec![3, 2, 0, 1]);
}
