//! `histogram` (api.md "Grouping and histograms") against a plain reference on every
//! backend: every type with NaN and nulls over uneven and empty chunks, equal bins over a
//! range and over the extent found on the device, edges as numbers (inside, across and
//! outside a type's values) and as a column of another type, `where` masks, a filter's
//! rows, no rows, and the bad arguments.

use super::filter::{nullable, rows_here, rows_read, same_rows};
use super::reduce::{column_of, sample};
use super::*;
use gputable::error::ErrorCode;
use gputable::ir::Bins;
use gputable::DType;

/// Whether `T`'s device runs the bin count (`sum`: the bin sum) in `root`'s graph as a pass
/// of its own (adding rows into bins, or walking its stored input) rather than of other
/// ops' kernels.
pub fn bins_in_own_pass<T: Target>(root: &NodeRef, sum: bool) -> bool {
    let bins = bin_node(root, sum);
    adds_rows_to_bins::<T>(root, sum) || gputable::engine::RegionModel::walks(&T::device(), &bins)
}

/// Whether `T`'s device adds rows into the bins of the bin count (`sum`: the bin sum) in
/// `root`'s graph in the pass computing them (`PlanLimits::adds_rows_to_bins`).
pub fn adds_rows_to_bins<T: Target>(root: &NodeRef, sum: bool) -> bool {
    (DeviceModel::plan_limits(&T::device()).adds_rows_to_bins)(&bin_node(root, sum))
}

/// The bin count (`sum`: the bin sum) in `root`'s graph.
fn bin_node(root: &NodeRef, sum: bool) -> NodeRef {
    let nodes = ir::all_nodes(std::slice::from_ref(root));
    (nodes.into_iter())
        .find(|n| match sum {
            true => matches!(n.op, ir::Op::BinSum { .. }),
            false => matches!(n.op, ir::Op::BinCount { .. }),
        })
        .unwrap_or_else(|| panic!("no bin count or sum under t{}", root.id))
}

/// Counts of the present numbers of `values` (None: null or masked) per bin of ascending
/// `edges`: bin i is [e_i, e_i+1), the last holding its upper edge.
fn reference(values: &[Option<f64>], edges: &[f64]) -> Vec<Option<f64>> {
    let bins = edges.len() - 1;
    let mut counts = vec![0.0; bins];
    for v in values.iter().flatten() {
        if v.is_nan() || *v < edges[0] || *v > edges[bins] {
            continue;
        }
        let reached = edges.iter().filter(|&&e| e <= *v).count();
        counts[reached.min(bins) - 1] += 1.0;
    }
    counts.into_iter().map(Some).collect()
}

/// The reference of `bins` equal bins over the extent of the present numbers: for
/// integers exact (bin floor((v - lo) bins / (hi - lo)), the last holding hi; one value in
/// the middle bin), for floats as the device computes them, in float32: inner edge i is
/// lo (1 - i/bins) + hi i/bins.
fn reference_auto(values: &[Option<f64>], bins: usize, dtype: DType) -> Vec<Option<f64>> {
    if dtype != DType::F32 {
        let numbers: Vec<i128> = values.iter().flatten().map(|&v| v as i128).collect();
        let mut counts = vec![0.0; bins];
        if let (Some(lo), Some(hi)) = (numbers.iter().min(), numbers.iter().max()) {
            for v in &numbers {
                let bin = match hi - lo {
                    0 => bins / 2,
                    range => (((v - lo) * bins as i128 / range) as usize).min(bins - 1),
                };
                counts[bin] += 1.0;
            }
        }
        return counts.into_iter().map(Some).collect();
    }
    let numbers: Vec<f64> = values
        .iter()
        .flatten()
        .copied()
        .filter(|v| !v.is_nan())
        .collect();
    let mut counts = vec![0.0; bins];
    if numbers.is_empty() {
        return counts.into_iter().map(Some).collect();
    }
    let mut lo = numbers.iter().copied().fold(f64::INFINITY, f64::min) as f32;
    let mut hi = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max) as f32;
    if lo == hi {
        (lo, hi) = (lo - 0.5, hi + 0.5);
    }
    // The edges as real numbers (float64 holds these exactly enough).
    let (lo, hi) = (lo as f64, hi as f64);
    let inner: Vec<f64> = (1..bins)
        .map(|i| (lo * (bins - i) as f64 + hi * i as f64) / bins as f64)
        .collect();
    for v in numbers {
        counts[inner.iter().filter(|&&e| e <= v).count()] += 1.0;
    }
    counts.into_iter().map(Some).collect()
}

/// `bins + 1` edges from `lo` to `hi` as `histogram` makes them (the last `hi` itself).
fn equal_edges(lo: f64, hi: f64, bins: usize) -> Vec<f64> {
    (0..=bins)
        .map(|i| (lo * (bins - i) as f64 + hi * i as f64) / bins as f64)
        .collect()
}

/// Every type with NaN and nulls, through equal bins over a range and over the extent, and
/// edges within, across and outside the type's values, with and without a `where` mask.
pub async fn histogram_counts_every_type_against_a_reference<T: Target>() {
    let mut rng = Rng(83);
    let n = 120;
    let chunks = [50, 0, 70];
    for dtype in DType::ALL {
        let values = sample(dtype, n, &mut rng);
        let valid: Vec<u8> = (0..n).map(|r| u8::from(r % 10 != 3)).collect();
        let keep: Vec<u8> = (0..n).map(|r| u8::from(r % 4 != 1)).collect();
        let x = nullable(column_of(dtype, &values), Some(&valid), &chunks);
        let mask = chunked(ColumnData::U8(keep.clone()), 1, &chunks);
        let exact = column_of(dtype, &values);
        let present: Vec<Option<f64>> = (0..n)
            .map(|r| (valid[r] == 1).then(|| exact.get_f64(r)))
            .collect();
        let masked: Vec<Option<f64>> = (0..n)
            .map(|r| present[r].filter(|_| keep[r] == 1))
            .collect();
        let cases: Vec<(&str, Bins, Vec<Option<f64>>)> = vec![
            (
                "equal bins over [-3, 5]",
                Bins::Equal {
                    bins: 6.0,
                    range: Some((-3.0, 5.0)),
                },
                reference(&present, &equal_edges(-3.0, 5.0, 6)),
            ),
            (
                "edges across the type's values",
                Bins::Edges(vec![-1e10, -2.5, 0.0, 0.5, 3.0, 300.0, 5e9]),
                reference(&present, &[-1e10, -2.5, 0.0, 0.5, 3.0, 300.0, 5e9]),
            ),
            (
                "repeated edges",
                Bins::Edges(vec![-2.0, 1.0, 1.0, 4.0]),
                reference(&present, &[-2.0, 1.0, 1.0, 4.0]),
            ),
            (
                "edges above every value",
                Bins::Edges(vec![5e9, 6e9]),
                reference(&present, &[5e9, 6e9]),
            ),
            (
                "24 bins over the extent",
                Bins::Equal {
                    bins: 24.0,
                    range: None,
                },
                reference_auto(&present, 24, dtype),
            ),
            (
                "one bin over the extent",
                Bins::Equal {
                    bins: 1.0,
                    range: None,
                },
                reference_auto(&present, 1, dtype),
            ),
        ];
        for (what, bins, expected) in cases {
            let counts = ir::histogram(&x, &bins, None).unwrap();
            assert_eq!(counts.meta.dtype, DType::U32);
            let what = format!("{dtype:?}: {what}");
            same_rows(&what, &rows_here::<T>(&counts).await, &expected);
        }
        let bins = Bins::Equal {
            bins: 7.0,
            range: None,
        };
        let counts = ir::histogram(&x, &bins, Some(&mask)).unwrap();
        same_rows(
            &format!("{dtype:?}: where"),
            &rows_here::<T>(&counts).await,
            &reference_auto(&masked, 7, dtype),
        );
        let bins = Bins::Edges(vec![-4.0, 0.0, 4.0]);
        let counts = ir::histogram(&x, &bins, Some(&mask)).unwrap();
        same_rows(
            &format!("{dtype:?}: where, edges"),
            &rows_here::<T>(&counts).await,
            &reference(&masked, &[-4.0, 0.0, 4.0]),
        );
    }
}

/// Equal bins over the extent of 32-bit integers far past float32's 2^24 are exact (a
/// user's trial: ten uint32 values from 1.7e9 counted [0, 0, 10] in three bins, where the
/// range given as numbers counted [3, 3, 4]): as the range given, and the reference.
pub async fn histogram_over_the_extent_of_large_integers_is_exact<T: Target>() {
    let cases: [(DType, Vec<f64>); 4] = [
        (
            DType::U32,
            (0..10).map(|i| 1_700_000_000.0 + i as f64).collect(),
        ),
        (
            DType::I32,
            (0..10).map(|i| -100_000_000.0 + 3.0 * i as f64).collect(),
        ),
        (
            DType::U32,
            (0..5).map(|i| 16_777_216.0 + i as f64).collect(),
        ),
        (
            DType::I32,
            vec![
                i32::MIN as f64,
                -1.0,
                0.0,
                1.0,
                i32::MAX as f64,
                7.0,
                i32::MAX as f64 - 1.0,
            ],
        ),
    ];
    for (dtype, values) in cases {
        let x = chunked(
            column_of(dtype, &values),
            1,
            &[values.len() as u32 / 2, values.len().div_ceil(2) as u32],
        );
        let present: Vec<Option<f64>> = values.iter().map(|&v| Some(v)).collect();
        for bins in [2, 3, 4, 7] {
            let auto = ir::histogram(
                &x,
                &Bins::Equal {
                    bins: bins as f64,
                    range: None,
                },
                None,
            )
            .unwrap();
            let (lo, hi) = (
                values.iter().copied().fold(f64::INFINITY, f64::min),
                values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            let given = Bins::Equal {
                bins: bins as f64,
                range: Some((lo, hi)),
            };
            let ranged = ir::histogram(&x, &given, None).unwrap();
            let what = format!("{dtype:?} {lo}..{hi}, {bins} bins");
            let expected = reference_auto(&present, bins, dtype);
            same_rows(&what, &rows_here::<T>(&auto).await, &expected);
            same_rows(
                &format!("{what}, range given"),
                &rows_here::<T>(&ranged).await,
                &expected,
            );
        }
    }
}

/// Equal bins over the extent of float32 values that lie on the edges (a user's check:
/// [1, 7, 10] in three bins counted [1, 1, 1], the edge 7 computed as 7.0000005): as the
/// range given, with a mask, and the reference's edges as real numbers.
pub async fn histogram_over_a_float_extent_counts_values_on_its_edges<T: Target>() {
    let cases: [(Vec<f64>, usize); 5] = [
        (vec![1.0, 7.0, 10.0], 3),
        (vec![-23.0, -1.4, 13.0, 2.2, 5.8, -5.0], 10),
        (vec![-30.0, -1.0, 28.0, 0.0, 27.0], 14),
        (vec![0.0, 25.0, 50.0, 75.0, 100.0, 99.5, 0.5], 4),
        (vec![-22.0, -2.4, 6.0, 3.2, -8.0], 10),
    ];
    for (values, bins) in cases {
        let x = chunked(
            column_of(DType::F32, &values),
            1,
            &[1, values.len() as u32 - 1],
        );
        let present: Vec<Option<f64>> = values.iter().map(|&v| Some(v as f32 as f64)).collect();
        let expected = reference_auto(&present, bins, DType::F32);
        let auto = Bins::Equal {
            bins: bins as f64,
            range: None,
        };
        let what = format!("{values:?}, {bins} bins");
        let counts = ir::histogram(&x, &auto, None).unwrap();
        same_rows(&what, &rows_here::<T>(&counts).await, &expected);
        let (lo, hi) = (
            present
                .iter()
                .flatten()
                .copied()
                .fold(f64::INFINITY, f64::min),
            present
                .iter()
                .flatten()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max),
        );
        let ranged = Bins::Equal {
            bins: bins as f64,
            range: Some((lo, hi)),
        };
        let counts = ir::histogram(&x, &ranged, None).unwrap();
        same_rows(
            &format!("{what}, range given"),
            &rows_here::<T>(&counts).await,
            &expected,
        );
        // A mask keeping every row but the first: the extent of the rest.
        let keep: Vec<u8> = (0..values.len()).map(|i| (i > 0) as u8).collect();
        let mask = chunked(ColumnData::U8(keep), 1, &[1, values.len() as u32 - 1]);
        let counts = ir::histogram(&x, &auto, Some(&mask)).unwrap();
        let rest: Vec<Option<f64>> = present[1..].to_vec();
        same_rows(
            &format!("{what}, where"),
            &rows_here::<T>(&counts).await,
            &reference_auto(&rest, bins, DType::F32),
        );
    }
}

/// Edges in a column of another type, a filter's rows, a value repeated (its range widened
/// by a half each side), no rows, and the last edge holding its value.
pub async fn histogram_of_device_edges_counted_and_empty_inputs<T: Target>() {
    let x = chunked(
        column_of(DType::F32, &[0.5, 2.0, 2.5, 7.0, f64::NAN, -1.0, 3.0]),
        1,
        &[3, 4],
    );
    let edges = chunked(ColumnData::I32(vec![0, 2, 3, 7]), 1, &[4]);
    let counts = ir::histogram(&x, &Bins::EdgesOf(edges), None).unwrap();
    same_rows(
        "device edges",
        &rows_here::<T>(&counts).await,
        &[Some(1.0), Some(2.0), Some(2.0)],
    );

    let keep = chunked(ColumnData::U8(vec![1, 0, 1, 1, 1, 0, 0]), 1, &[3, 4]);
    let kept = ir::filter(&x, &keep).unwrap();
    let counts = ir::histogram(&kept, &Bins::Edges(vec![0.0, 1.0, 7.0]), None).unwrap();
    same_rows(
        "a filter's rows",
        &rows_here::<T>(&counts).await,
        &[Some(1.0), Some(2.0)],
    );

    let same = chunked(ColumnData::U16(vec![9; 5]), 1, &[5]);
    let counts = ir::histogram(
        &same,
        &Bins::Equal {
            bins: 4.0,
            range: None,
        },
        None,
    )
    .unwrap();
    same_rows(
        "one value",
        &rows_here::<T>(&counts).await,
        &[Some(0.0), Some(0.0), Some(5.0), Some(0.0)],
    );

    let empty = chunked(ColumnData::I8(vec![]), 1, &[0]);
    for bins in [
        Bins::Equal {
            bins: 3.0,
            range: None,
        },
        Bins::Equal {
            bins: 3.0,
            range: Some((0.0, 1.0)),
        },
    ] {
        let counts = ir::histogram(&empty, &bins, None).unwrap();
        same_rows("no rows", &rows_here::<T>(&counts).await, &[Some(0.0); 3]);
    }

    // A million rows of uint32, 1,000 irregular edges: every row in one bin.
    let rows = 1 << 20;
    let big = chunked(
        ColumnData::U32((0..rows).map(|r| r * 7 % 100_000).collect()),
        1,
        &[rows / 2, rows / 2],
    );
    let edges: Vec<f64> = (0..=1000).map(|i| (i * i) as f64 / 10.0).collect();
    let counts = ir::histogram(&big, &Bins::Edges(edges.clone()), None).unwrap();
    let got = rows_here::<T>(&counts).await;
    let total: f64 = got.iter().flatten().sum();
    assert_eq!(total, rows as f64, "every row counted once");
    // Every bin, with 1,000 and 3,000 edges.
    for edges in [
        edges.clone(),
        (0..=3000).map(|i| (i * i) as f64 / 90.0).collect(),
    ] {
        let bins = edges.len() - 1;
        let mut expected = vec![0.0; bins];
        for r in 0..rows {
            let v = (r * 7 % 100_000) as f64;
            if v >= edges[0] && v <= edges[bins] {
                expected[edges.partition_point(|&e| e <= v).clamp(1, bins) - 1] += 1.0;
            }
        }
        let counts = ir::histogram(&big, &Bins::Edges(edges), None).unwrap();
        let got = rows_here::<T>(&counts).await;
        let expected: Vec<_> = expected.into_iter().map(Some).collect();
        assert!(got == expected, "{bins} irregular bins of a million rows");
    }

    // The counts are a bin count: the device's own pass where it has one (the CPU, WebGPU),
    // else other ops' kernels.
    let counts = ir::histogram(&big, &Bins::Edges(edges), None).unwrap();
    let text = gputable::engine::explain(&T::device(), &counts).unwrap();
    assert!(text.contains("binCount("), "{text}");
    let own = bins_in_own_pass::<T>(&counts, false);
    assert_eq!(!own, text.contains("of other ops"), "{text}");
}

/// Bins that are not integers from 1, bad ranges, edges that are not ascending numbers,
/// wide inputs: `INVALID_ARGUMENT` when the graph is built.
pub async fn histogram_refuses_bad_arguments<T: Target>() {
    let x = chunked(ColumnData::F32(vec![1.0, 2.0, 3.0]), 1, &[3]);
    let bad = |x: &NodeRef, bins: Bins| code(ir::histogram(x, &bins, None).map(|_| ()));
    let wide = chunked(ColumnData::F32(vec![1.0; 4]), 2, &[2]);
    for (what, result) in [
        (
            "no bins",
            bad(
                &x,
                Bins::Equal {
                    bins: 0.0,
                    range: None,
                },
            ),
        ),
        (
            "half a bin",
            bad(
                &x,
                Bins::Equal {
                    bins: 2.5,
                    range: None,
                },
            ),
        ),
        (
            "negative bins",
            bad(
                &x,
                Bins::Equal {
                    bins: -1.0,
                    range: None,
                },
            ),
        ),
        (
            "an empty range",
            bad(
                &x,
                Bins::Equal {
                    bins: 2.0,
                    range: Some((1.0, 1.0)),
                },
            ),
        ),
        (
            "an infinite range",
            bad(
                &x,
                Bins::Equal {
                    bins: 2.0,
                    range: Some((0.0, f64::INFINITY)),
                },
            ),
        ),
        ("one edge", bad(&x, Bins::Edges(vec![1.0]))),
        ("descending edges", bad(&x, Bins::Edges(vec![2.0, 1.0]))),
        ("NaN edges", bad(&x, Bins::Edges(vec![0.0, f64::NAN]))),
        (
            "one device edge",
            bad(
                &x,
                Bins::EdgesOf(chunked(ColumnData::F32(vec![1.0]), 1, &[1])),
            ),
        ),
        ("a wide x", bad(&wide, Bins::Edges(vec![0.0, 1.0]))),
    ] {
        assert_eq!(result, ErrorCode::InvalidArgument, "{what}");
    }
    let short_mask = chunked(ColumnData::U8(vec![1, 0]), 1, &[2]);
    assert_eq!(
        code(ir::histogram(&x, &Bins::Edges(vec![0.0, 4.0]), Some(&short_mask)).map(|_| ())),
        ErrorCode::InvalidArgument
    );
    let counts = ir::histogram(&x, &Bins::Edges(vec![0.0, 2.0, 3.0]), None).unwrap();
    same_rows(
        "the good graph",
        &rows_here::<T>(&counts).await,
        &[Some(1.0), Some(2.0)],
    );
}

/// Where the device adds computed rows into bins (the CPU; WebGPU for counts and integer
/// sums), a histogram of equal bins over a range and a small key's sums are each one pass
/// over their uneven chunks, the bin numbers and the `[id, value]` pairs computed in it
/// (never stored); elsewhere the ids are stored first. Either way they match a loop.
pub async fn bin_passes_compute_their_ids_where_the_device_adds_them<T: Target>() {
    let chunks = [700u32, 0, 1_300, 1];
    let n = chunks.iter().sum::<u32>() as usize;
    let values: Vec<f64> = (0..n)
        .map(|r| ((r * 37) % 101) as f64 / 4.0 - 3.0)
        .collect();
    let x = chunked(column_of(DType::F32, &values), 1, &chunks);
    let range = Bins::Equal {
        bins: 8.0,
        range: Some((0.0, 20.0)),
    };
    let counts = ir::histogram(&x, &range, None).unwrap();
    let edges: Vec<f64> = (0..=8).map(|i| i as f64 * 2.5).collect();
    let present: Vec<Option<f64>> = values.iter().map(|&v| Some(v)).collect();
    same_rows(
        "counts",
        &rows_here::<T>(&counts).await,
        &reference(&present, &edges),
    );
    let adds = adds_rows_to_bins::<T>(&counts, false);
    let text = gputable::engine::explain(&T::device(), &counts).unwrap();
    let passes = text.matches("\npass ").count() + usize::from(text.starts_with("pass "));
    let bin_pass = text.split("\npass ").find(|p| p.contains("= binCount("));
    let bin_pass = bin_pass.unwrap_or_else(|| panic!("no bin count pass: {text}"));
    assert_eq!(adds, passes == 1, "{text}");
    assert_eq!(adds, bin_pass.contains("4 chunk tasks"), "{text}");

    // A uint8 key's sums of floats and of integers: the pairs (the key's bin and the value)
    // made in the sum's pass.
    let keys: Vec<f64> = (0..n).map(|r| ((r * 13) % 7) as f64).collect();
    let key = chunked(column_of(DType::U8, &keys), 1, &chunks);
    for value_type in [DType::F32, DType::I32] {
        let value = match value_type {
            DType::I32 => chunked(
                column_of(
                    DType::I32,
                    &values.iter().map(|v| (v * 4.0).round()).collect::<Vec<_>>(),
                ),
                1,
                &chunks,
            ),
            _ => x.clone(),
        };
        let sum = ir::Aggregate {
            op: ir::GroupOp::Sum,
            value: Some(value),
        };
        let (_, sums) = ir::group_by(std::slice::from_ref(&key), &[sum]).unwrap();
        let mut expected = [0f64; 7];
        for (k, v) in keys.iter().zip(&values) {
            expected[*k as usize] += match value_type {
                DType::I32 => (v * 4.0).round(),
                _ => *v,
            };
        }
        let expected: Vec<Option<f64>> = expected.iter().map(|&s| Some(s)).collect();
        let what = format!("{value_type:?} sums");
        same_rows(&what, &rows_here::<T>(&sums[0]).await, &expected);
        let text = gputable::engine::explain(&T::device(), &sums[0]).unwrap();
        let sum_pass = text.split("\npass ").find(|p| p.contains("= binSum("));
        let sum_pass = sum_pass.unwrap_or_else(|| panic!("{what}: no bin sum pass: {text}"));
        let adds = adds_rows_to_bins::<T>(&sums[0], true);
        assert_eq!(adds, sum_pass.contains("interleave("), "{what}: {text}");
    }
}

/// On WebGL2, where the context adds into float32 targets (EXT_float_blend: every test
/// adapter has it), a bin count is a walk of blended point draws: a draw per tile of ids and
/// one writing the totals. Ids over several tiles (4,096 rows each on the capped device) and
/// uneven chunks, ids past the bins, and 1,000 bins: the reference's counts everywhere.
pub async fn histogram_bins_are_blended_point_draws_on_webgl2<T: Target>() {
    let device = T::capped().await;
    let chunks = [9_000u32, 0, 5_001];
    let n = chunks.iter().sum::<u32>() as usize;
    let values: Vec<f64> = (0..n)
        .map(|r| ((r * 7919 + r / 3) % 1_030) as f64)
        .collect();
    let x = chunked(column_of(DType::U32, &values), 1, &chunks);
    let bins = Bins::Equal {
        bins: 1000.0,
        range: Some((0.0, 1000.0)),
    };
    let counts = ir::histogram(&x, &bins, None).unwrap();
    gputable::engine::evaluate(&device, std::slice::from_ref(&counts))
        .await
        .unwrap();
    let got = rows_read(&counts).await;
    let present: Vec<Option<f64>> = values.iter().map(|&v| Some(v)).collect();
    let edges: Vec<f64> = (0..=1000).map(f64::from).collect();
    same_rows("counts", &got, &reference(&present, &edges));
    let webgl = device.kernel_words() == Some(("draw", "draws"));
    if webgl {
        let walked = gputable::engine::RegionModel::walks(&device, &bin_node(&counts, false));
        assert!(walked, "WebGL2 blends the counts");
    }
    let text = gputable::engine::explain(&device, &counts).unwrap();
    assert_eq!(text.contains("(blended)"), webgl, "{text}");
}

/// Equal bins over an extent with an infinite end have no finite edges: `INVALID_ARGUMENT`
/// when the evaluation finds it, as NumPy refuses it and a range given must be finite (a
/// user's trial: +Inf and -Inf both fell in the first of two bins). NaN and values a mask
/// drops are outside the extent.
pub async fn histogram_over_an_infinite_extent_is_refused<T: Target>() {
    let values = [1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY, 3.0, f64::NAN];
    let x = chunked(column_of(DType::F32, &values), 1, &[4, 2]);
    let auto = Bins::Equal {
        bins: 2.0,
        range: None,
    };
    for bins in [1.0, 2.0] {
        let auto = Bins::Equal { bins, range: None };
        let counts = ir::histogram(&x, &auto, None).unwrap();
        let error = evaluate::<T>(std::slice::from_ref(&counts))
            .await
            .unwrap_err();
        assert_eq!(
            error.code,
            ErrorCode::InvalidArgument,
            "{bins} bins: {error}"
        );
    }
    let finite = chunked(ColumnData::U8(vec![1, 1, 0, 0, 1, 1]), 1, &[4, 2]);
    let counts = ir::histogram(&x, &auto, Some(&finite)).unwrap();
    same_rows(
        "the finite rows",
        &rows_here::<T>(&counts).await,
        &[Some(1.0), Some(2.0)],
    );
}

/// Edges in a column are checked as numbers are, once the device has them: out of order or
/// NaN is `INVALID_ARGUMENT` (a review found `[3, 1, 2]` counted `[0, 0]`); equal edges
/// (an empty bin) are ascending, as NumPy's.
pub async fn device_edges_out_of_order_are_refused<T: Target>() {
    let x = chunked(column_of(DType::F32, &[0.5, 1.5, 2.5, 3.0]), 1, &[3, 1]);
    for (what, edges) in [
        ("descending", vec![3.0, 1.0, 2.0]),
        ("NaN", vec![0.0, f64::NAN, 2.0]),
        ("the last pair", vec![0.0, 2.0, 1.0]),
    ] {
        let edges = chunked(column_of(DType::F32, &edges), 1, &[2, 1]);
        let counts = ir::histogram(&x, &Bins::EdgesOf(edges), None).unwrap();
        let error = evaluate::<T>(std::slice::from_ref(&counts))
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidArgument, "{what}: {error}");
    }
    let edges = chunked(ColumnData::I32(vec![0, 1, 1, 3]), 1, &[1, 3]);
    let counts = ir::histogram(&x, &Bins::EdgesOf(edges), None).unwrap();
    same_rows(
        "equal edges",
        &rows_here::<T>(&counts).await,
        &[Some(1.0), Some(0.0), Some(3.0)],
    );
}
