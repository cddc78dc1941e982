//! Reductions over chunked columns (api.md: `sum min max mean argmin argmax extent` with
//! `splitEvery`), against a plain reference written here: every type, uneven and empty
//! chunks, NaN, ties, null slots, empty input, wide rows and long float sums.

use super::*;
use gputable::ir::{ReduceKind, DEFAULT_SPLIT_EVERY};
use gputable::DType;

/// The plain reference: `kind` of `values` (`size` lanes per row, in f64) with `valid(row,
/// lane)` deciding which slots count, as api.md words it.
fn reference(
    kind: ReduceKind,
    dtype: DType,
    values: &[f64],
    size: usize,
    valid: &dyn Fn(usize, usize) -> bool,
) -> Vec<f64> {
    let rows = values.len() / size;
    let mut out = Vec::new();
    for lane in 0..size {
        let slots: Vec<(usize, f64)> = (0..rows)
            .filter(|&r| valid(r, lane))
            .map(|r| (r, values[r * size + lane]))
            .collect();
        let numbers: Vec<(usize, f64)> =
            slots.iter().copied().filter(|(_, v)| !v.is_nan()).collect();
        let wrap = |v: f64| match dtype.class() {
            gputable::dtype::Class::F => v as f32 as f64,
            gputable::dtype::Class::I => (v as i64 as i32) as f64,
            gputable::dtype::Class::U => (v as i64 as u32) as f64,
        };
        let least = numbers.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let most = numbers
            .iter()
            .map(|p| p.1)
            .fold(f64::NEG_INFINITY, f64::max);
        // A lane with no number: NaN (0 once stored in an integer type).
        let none = if dtype == DType::F32 { f64::NAN } else { 0.0 };
        let first = |target: f64| {
            numbers
                .iter()
                .find(|p| p.1 == target)
                .map_or(-1.0, |p| p.0 as f64)
        };
        match kind {
            ReduceKind::Sum => out.push(wrap(slots.iter().map(|p| p.1).sum())),
            ReduceKind::Mean => {
                out.push(slots.iter().map(|p| p.1).sum::<f64>() / slots.len() as f64)
            }
            ReduceKind::Min => out.push(if numbers.is_empty() { none } else { least }),
            ReduceKind::Max => out.push(if numbers.is_empty() { none } else { most }),
            ReduceKind::Extent => match numbers.is_empty() {
                true => out.extend([none, none]),
                false => out.extend([least, most]),
            },
            ReduceKind::ArgMin => out.push(first(least)),
            ReduceKind::ArgMax => out.push(first(most)),
        }
    }
    out
}

pub(super) fn as_f64(data: &ColumnData) -> Vec<f64> {
    (0..data.len()).map(|i| data.get_f64(i)).collect()
}

/// Values of `dtype` in f64 (small, so every sum is exact in float32), with NaN for floats
/// and repeated values (ties).
pub(super) fn sample(dtype: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    (0..n)
        .map(|i| match dtype {
            DType::F32 if i % 7 == 3 => f64::NAN,
            DType::F32 => rng.f32() as f64,
            DType::U8 | DType::U16 | DType::U32 => rng.below(9) as f64,
            _ => rng.below(9) as f64 - 4.0,
        })
        .collect()
}

pub(super) fn column_of(dtype: DType, values: &[f64]) -> ColumnData {
    match dtype {
        DType::U8 => ColumnData::U8(values.iter().map(|&v| v as u8).collect()),
        DType::I8 => ColumnData::I8(values.iter().map(|&v| v as i8).collect()),
        DType::U16 => ColumnData::U16(values.iter().map(|&v| v as u16).collect()),
        DType::I16 => ColumnData::I16(values.iter().map(|&v| v as i16).collect()),
        DType::U32 => ColumnData::U32(values.iter().map(|&v| v as u32).collect()),
        DType::I32 => ColumnData::I32(values.iter().map(|&v| v as i32).collect()),
        DType::F32 => ColumnData::F32(values.iter().map(|&v| v as f32).collect()),
    }
}

/// Exact, except that a mean (a float32 division, which GPUs may round a few ulps off: an
/// H100's did) is held to api.md's float tolerance, 1e-6 relative.
async fn assert_matches(root: &NodeRef, expected: &[f64], what: &str) {
    let actual = as_f64(&read(root).await);
    assert_eq!(actual.len(), expected.len(), "{what}");
    let tolerance = if what.starts_with("mean") { 1e-6 } else { 0.0 };
    for (k, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            a == e || (a.is_nan() && e.is_nan()) || (a - e).abs() <= tolerance * e.abs(),
            "{what}: value {k}: device {a} vs reference {e}"
        );
    }
}

/// Evaluates `roots` on the target and checks each lives on its device.
async fn evaluate_on<T: Target>(roots: &[NodeRef]) {
    let device = T::device();
    gputable::engine::evaluate(&device, roots).await.unwrap();
    for root in roots {
        assert_eq!(
            root.home().expect("evaluated").device,
            device.core().id,
            "{root:?}"
        );
    }
}

pub async fn every_reduction_of_every_type_matches_the_reference<T: Target>() {
    let mut rng = Rng(11);
    for dtype in DType::ALL {
        for (size, chunks) in [(1, vec![5, 0, 17, 1, 9]), (3, vec![4, 4, 0, 3])] {
            let rows: u32 = chunks.iter().sum();
            let values = sample(dtype, rows as usize * size, &mut rng);
            let x = chunked(column_of(dtype, &values), size as u32, &chunks);
            let mut roots = Vec::new();
            let mut expected = Vec::new();
            for kind in ReduceKind::ALL {
                let want = reference(kind, dtype, &values, size, &|_, _| true);
                for every in [2, 3, 4] {
                    let root = ir::reduce(kind, &x, None, every).unwrap();
                    assert_eq!(root.meta.dtype, kind.output_type(dtype));
                    roots.push(root);
                    expected.push((kind, every, want.clone()));
                }
            }
            evaluate_on::<T>(&roots).await;
            for (root, (kind, every, want)) in roots.iter().zip(&expected) {
                let what = format!(
                    "{} of {} x{size} ({chunks:?}), splitEvery {every}",
                    kind.name(),
                    dtype.name()
                );
                let want: Vec<f64> = match (kind, dtype) {
                    // The reference's exact mean, to float32.
                    (ReduceKind::Mean, _) => want.iter().map(|&v| v as f32 as f64).collect(),
                    _ => want.clone(),
                };
                assert_matches(root, &want, &what).await;
            }
        }
    }
}

pub async fn reductions_keep_their_rules_at_the_edges<T: Target>() {
    // Ties go to the lowest row, across chunks and combine rounds.
    let ties = chunked(
        ColumnData::F32(vec![1., 5., 0., 5., 5., 0., 0.]),
        1,
        &[2, 1, 1, 3],
    );
    let argmax = ir::reduce(ReduceKind::ArgMax, &ties, None, 2).unwrap();
    let argmin = ir::reduce(ReduceKind::ArgMin, &ties, None, 3).unwrap();
    // A lane with only NaN: NaN for min/max/extent, -1 for the arg-reductions; NaN in a sum
    // or mean is NaN.
    let nan = chunked(
        ColumnData::F32(vec![f32::NAN, 1., f32::NAN, 2., f32::NAN, f32::NAN]),
        2,
        &[1, 2],
    );
    let kinds = [
        ReduceKind::Min,
        ReduceKind::Max,
        ReduceKind::ArgMin,
        ReduceKind::ArgMax,
        ReduceKind::Sum,
        ReduceKind::Mean,
        ReduceKind::Extent,
    ];
    let nans: Vec<NodeRef> = kinds
        .iter()
        .map(|&k| ir::reduce(k, &nan, None, DEFAULT_SPLIT_EVERY).unwrap())
        .collect();
    // Integer sums wrap; min of an unsigned column.
    let wraps = chunked(ColumnData::I32(vec![i32::MAX, 1, 5]), 1, &[1, 2]);
    let wrapped = ir::reduce(ReduceKind::Sum, &wraps, None, 2).unwrap();
    let unsigned = u32s(&[u32::MAX, 7, u32::MAX - 1], 1);
    let umin = ir::reduce(ReduceKind::Min, &unsigned, None, 4).unwrap();
    let umax = ir::reduce(ReduceKind::Max, &unsigned, None, 4).unwrap();
    // The one constant row broadcasts where other columns use it: x - mean(x).
    let x = chunked(ColumnData::F32(vec![1., 2., 3., 6.]), 1, &[3, 1]);
    let centered = ir::binary(
        Subtract,
        &x,
        &ir::reduce(ReduceKind::Mean, &x, None, 2).unwrap(),
    )
    .unwrap();
    let mut roots = vec![
        argmax.clone(),
        argmin.clone(),
        wrapped.clone(),
        umin.clone(),
    ];
    roots.extend([umax.clone(), centered.clone()]);
    roots.extend(nans.iter().cloned());
    evaluate_on::<T>(&roots).await;
    assert_eq!(read_i32(&argmax).await, vec![1]);
    assert_eq!(read_i32(&argmin).await, vec![2]);
    let mut got: Vec<Vec<f64>> = Vec::new();
    for n in &nans {
        got.push(as_f64(&read(n).await));
    }
    let nan_or = |v: &[f64], want: &[f64]| {
        v.len() == want.len()
            && v.iter()
                .zip(want)
                .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
    };
    let n = f64::NAN;
    let wants: [&[f64]; 7] = [
        &[n, 1.],
        &[n, 2.],
        &[-1., 0.],
        &[-1., 1.],
        &[n, n],
        &[n, n],
        &[n, n, 1., 2.],
    ];
    for ((kind, v), want) in kinds.iter().zip(&got).zip(wants) {
        assert!(
            nan_or(v, want),
            "{} over NaN: {v:?}, want {want:?}",
            kind.name()
        );
    }
    assert_eq!(read_i32(&wrapped).await, vec![i32::MIN + 5]);
    assert_eq!(read_u32(&umin).await, vec![7]);
    assert_eq!(read_u32(&umax).await, vec![u32::MAX]);
    assert_eq!(read_f32(&centered).await, vec![-2., -1., 0., 3.]);
    assert_eq!(meta(&centered), (DType::F32, 1, 4, false));

    // No rows: a sum is 0, everything else EMPTY_INPUT.
    let empty = chunked(ColumnData::I16(vec![]), 2, &[0, 0]);
    let zero = ir::reduce(ReduceKind::Sum, &empty, None, 2).unwrap();
    evaluate_on::<T>(std::slice::from_ref(&zero)).await;
    assert_eq!(read_i32(&zero).await, vec![0, 0]);
    for kind in ReduceKind::ALL
        .into_iter()
        .filter(|&k| k != ReduceKind::Sum)
    {
        let root = ir::reduce(kind, &empty, None, 2).unwrap();
        assert_eq!(
            code(evaluate::<T>(&[root]).await),
            ErrorCode::EmptyInput,
            "{}",
            kind.name()
        );
    }
    assert_eq!(
        code(ir::reduce(ReduceKind::Sum, &x, None, 1)),
        ErrorCode::InvalidArgument
    );
}

pub async fn reductions_skip_null_slots<T: Target>() {
    let values = [1., 9., -4., 7., 2., -8.];
    let x = chunked(column_of(DType::F32, &values), 2, &[2, 1]);
    // Per row: row 1 is null. Per lane: lane 1 of row 0 and lane 0 of row 2 are null.
    let rows = chunked(ColumnData::U8(vec![1, 0, 1]), 1, &[1, 2]);
    let lanes = chunked(ColumnData::U8(vec![1, 0, 1, 1, 0, 1]), 2, &[2, 1]);
    let by_row = |r: usize, _: usize| r != 1;
    let by_lane = |r: usize, l: usize| !(r == 0 && l == 1 || r == 2 && l == 0);
    let mut roots = Vec::new();
    let mut expected = Vec::new();
    for kind in ReduceKind::ALL {
        for (flags, valid) in [
            (&rows, &by_row as &dyn Fn(usize, usize) -> bool),
            (&lanes, &by_lane),
        ] {
            roots.push(ir::reduce(kind, &x, Some(flags), 2).unwrap());
            let want = reference(kind, DType::F32, &values, 2, valid);
            expected.push((
                kind,
                want.iter().map(|&v| v as f32 as f64).collect::<Vec<_>>(),
            ));
        }
    }
    evaluate_on::<T>(&roots).await;
    for (root, (kind, want)) in roots.iter().zip(&expected) {
        assert_matches(root, want, &format!("{} with nulls", kind.name())).await;
    }
    // A lane with every slot null has no value.
    let none = chunked(ColumnData::U8(vec![0, 1, 0, 1, 0, 1]), 2, &[3]);
    let argmin = ir::reduce(ReduceKind::ArgMin, &x, Some(&none), 4).unwrap();
    evaluate_on::<T>(std::slice::from_ref(&argmin)).await;
    assert_eq!(read_i32(&argmin).await, vec![-1, 2]);
    // Wide rows with flags per row: WebGL2 reads every plane and the flags in one draw, so
    // past its 16 textures the plan is refused with the limit's name; elsewhere it reduces.
    let lanes = 80;
    let wide_values: Vec<f64> = (0..lanes * 3).map(|i| (i % 7) as f64).collect();
    let wide = chunked(column_of(DType::F32, &wide_values), lanes as u32, &[2, 1]);
    let flags = chunked(ColumnData::U8(vec![1, 0, 1]), 1, &[3]);
    let sum = ir::reduce(ReduceKind::Sum, &wide, Some(&flags), 2).unwrap();
    match T::WIDE_ROWS {
        true => {
            evaluate_on::<T>(std::slice::from_ref(&sum)).await;
            let want = reference(ReduceKind::Sum, DType::F32, &wide_values, lanes, &|r, _| {
                r != 1
            });
            assert_matches(&sum, &want, "a wide nullable sum").await;
        }
        false => {
            let error = evaluate::<T>(&[sum]).await.unwrap_err();
            assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
            assert!(
                error.message.contains("maxSampledTexturesPerShaderStage"),
                "{error}"
            );
        }
    }
    // Flags must be uint8, one per row or lane, as long as the column.
    for bad in [u8s(&[1, 1], 1), i8s(&[1, 1, 1], 1), u8s(&[1; 9], 3)] {
        assert_eq!(
            code(ir::reduce(ReduceKind::Sum, &x, Some(&bad), 4)),
            ErrorCode::InvalidArgument
        );
    }
}

pub async fn long_float_sums_stay_accurate<T: Target>() {
    // 0.1 2^24 times: one running float32 sum stops growing at 2^21; a tree stays within
    // a few float32 roundings.
    let n = 1 << 24;
    let values = vec![0.1f32; n];
    let exact = 0.1f32 as f64 * n as f64;
    let mut roots = Vec::new();
    for chunks in [vec![n as u32], vec![n as u32 / 16; 16]] {
        let x = chunked(ColumnData::F32(values.clone()), 1, &chunks);
        roots.push(ir::reduce(ReduceKind::Sum, &x, None, 4).unwrap());
        roots.push(ir::reduce(ReduceKind::Mean, &x, None, 4).unwrap());
    }
    // Wide rows fold lane by lane on the GPUs, in several combine rounds per chunk.
    let wide_rows = 40_000;
    let wide = f32s(&vec![0.1f32; wide_rows * 20], 20);
    roots.push(ir::reduce(ReduceKind::Sum, &wide, None, 4).unwrap());
    evaluate_on::<T>(&roots).await;
    for pair in roots[..4].chunks(2) {
        let sum = read_f32(&pair[0]).await[0] as f64;
        assert!((sum - exact).abs() <= exact * 1e-6, "sum {sum} vs {exact}");
        let mean = read_f32(&pair[1]).await[0] as f64;
        assert!((mean - 0.1).abs() <= 1e-6, "mean {mean}");
    }
    let wide_exact = 0.1f32 as f64 * wide_rows as f64;
    for sum in read_f32(&roots[4]).await {
        assert!(
            (sum as f64 - wide_exact).abs() <= wide_exact * 1e-5,
            "wide sum {sum}"
        );
    }
}

pub async fn wide_rows_reduce_per_lane_over_chunks<T: Target>() {
    let mut rng = Rng(5);
    let size = 21;
    let rows = 300;
    let values: Vec<f64> = (0..rows * size)
        .map(|i| {
            if i % 11 == 0 {
                f64::NAN
            } else {
                rng.f32() as f64
            }
        })
        .collect();
    let x = chunked(
        column_of(DType::F32, &values),
        size as u32,
        &[100, 0, 150, 50],
    );
    let kinds = ReduceKind::ALL;
    let roots: Vec<NodeRef> = kinds
        .iter()
        .map(|&k| ir::reduce(k, &x, None, 3).unwrap())
        .collect();
    evaluate_on::<T>(&roots).await;
    for (root, kind) in roots.iter().zip(kinds) {
        let want = reference(kind, DType::F32, &values, size, &|_, _| true);
        let want: Vec<f64> = want.iter().map(|&v| v as f32 as f64).collect();
        assert_matches(root, &want, &format!("{} of wide rows", kind.name())).await;
    }
    // A fused prologue and a chunked input read across other boundaries.
    let y = chunked(
        ColumnData::F32((0..12).map(|v| v as f32).collect()),
        1,
        &[5, 7],
    );
    let z = chunked(ColumnData::F32(vec![1.; 12]), 1, &[6, 6]);
    let sum = ir::reduce(ReduceKind::Sum, &ir::binary(Add, &y, &z).unwrap(), None, 2).unwrap();
    evaluate_on::<T>(std::slice::from_ref(&sum)).await;
    assert_eq!(read_f32(&sum).await, vec![78.]);
}

pub async fn explain_shows_the_tree_of_combine_rounds<T: Target>() {
    let x = chunked(ColumnData::F32(vec![1.; 64]), 1, &[4; 16]);
    let root = ir::reduce(ReduceKind::Sum, &x, None, 4).unwrap();
    let text = gputable::engine::explain(&T::device(), &root).unwrap();
    assert!(text.contains("runs as 16 chunk tasks"), "{text}");
    assert!(
        text.contains("tree of 2 combine rounds of at most 4 partials (16 -> 4 -> 1)"),
        "{text}"
    );
    // The kernels it counts are the kernels that run.
    let device = T::fresh().await;
    let text = gputable::engine::explain(&device, &root).unwrap();
    gputable::engine::evaluate(&device, std::slice::from_ref(&root))
        .await
        .unwrap();
    assert_eq!(read_f32(&root).await, vec![64.]);
    let counted = text
        .lines()
        .find(|l| l.ends_with(" in all"))
        .and_then(|l| l.split(' ').next()?.parse::<u64>().ok());
    if let Some(counted) = counted {
        assert_eq!(device.core().counters.stats().kernels, counted, "{text}");
    }
}

/// api.md's `{where}` reductions and `count`: only the rows whose mask is nonzero (NaN is)
/// and not null, in the reduction's own pass; every type, chunked columns and masks, null
/// slots in both, constant masks; a mask keeping no row is `EMPTY_INPUT` (sum: 0).
pub async fn where_reductions_and_count_keep_only_masked_rows<T: Target>() {
    let mut rng = Rng(23);
    let n = 2500;
    let chunks = [700, 0, 1100, 700];
    for dtype in DType::ALL {
        let values = sample(dtype, n, &mut rng);
        let x = chunked(column_of(dtype, &values), 1, &chunks);
        // A float mask in other chunks: 0, NaN (kept) and numbers.
        let mask: Vec<f32> = (0..n)
            .map(|i| [0.0, 1.0, f32::NAN, 0.0, -2.0][(i * 7 + rng.below(3) as usize) % 5])
            .collect();
        let mask_node = chunked(ColumnData::F32(mask.clone()), 1, &[1250, 1250]);
        let nulls: Vec<u8> = (0..n).map(|i| u8::from(i % 11 != 4)).collect();
        let validity = chunked(ColumnData::U8(nulls.clone()), 1, &chunks);
        let kept = |r: usize| mask[r] != 0.0 && nulls[r] == 1;
        for kind in ReduceKind::ALL {
            let root = ir::reduce_where(kind, &x, Some(&validity), &mask_node, None, 3).unwrap();
            evaluate_on::<T>(std::slice::from_ref(&root)).await;
            let expected = reference(kind, dtype, &values, 1, &|r, _| kept(r));
            assert_matches(
                &root,
                &expected,
                &format!("{} of {dtype:?} where", kind.name()),
            )
            .await;
        }
        let counted = ir::count(&mask_node, Some(&validity)).unwrap();
        evaluate_on::<T>(std::slice::from_ref(&counted)).await;
        let expected = (0..n).filter(|&r| kept(r)).count() as u32;
        assert_eq!(read_u32(&counted).await, vec![expected]);
    }
    // A constant mask keeps every row or none.
    let x = f32s(&[3.0, f32::NAN, -1.0, 8.0], 1);
    let all = ir::reduce_where(ReduceKind::Min, &x, None, &lit(&[2.0]), None, 4).unwrap();
    evaluate_on::<T>(std::slice::from_ref(&all)).await;
    assert_eq!(read_f32(&all).await, vec![-1.0]);
    let none = lit(&[0.0]);
    let sum = ir::reduce_where(ReduceKind::Sum, &x, None, &none, None, 4).unwrap();
    evaluate_on::<T>(std::slice::from_ref(&sum)).await;
    assert_eq!(
        read_f32(&sum).await,
        vec![0.0],
        "a sum of no kept rows is 0"
    );
    for kind in [ReduceKind::Max, ReduceKind::ArgMin, ReduceKind::Mean] {
        let root = ir::reduce_where(kind, &x, None, &none, None, 4).unwrap();
        // As part of a larger graph too: the check follows the reduction, not the root.
        let graph = ir::binary(Add, &ir::cast(&root, DType::F32).unwrap(), &lit(&[1.0])).unwrap();
        let error = evaluate::<T>(std::slice::from_ref(&graph))
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::EmptyInput, "{kind:?}: {error}");
        assert!(!graph.has_output(), "a refused result is not kept");
    }
    // Masks of the wrong shape are refused when built.
    let wide = f32s(&[1.0, 0.0], 2);
    let short = f32s(&[1.0], 1);
    for mask in [&wide, &short] {
        let built = ir::reduce_where(ReduceKind::Sum, &x, None, mask, None, 4);
        assert_eq!(code(built), ErrorCode::InvalidArgument);
    }
    assert_eq!(code(ir::count(&wide, None)), ErrorCode::InvalidArgument);
}
