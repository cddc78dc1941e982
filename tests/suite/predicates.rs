//! Predicates and the elementwise ops api.md's table verbs add, against plain references (f64
//! comparisons, NumPy's rules written out per value) on every backend: every pair of the
//! seven types, NaN, -0, infinities, type extremes and integers float32 cannot hold.

use super::*;
use gputable::ir::Predicate;
use gputable::DType;

/// Edge values a `dtype` holds: NaN, ±0, ±Inf, halves, the type's extremes and integers
/// next to 2^24, 2^31 and 2^32 (float32 rounds them).
fn edge_values(dtype: DType) -> Vec<f64> {
    let candidates = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.5,
        7.0,
        -7.0,
        127.0,
        -128.0,
        255.0,
        -32768.0,
        65535.0,
        16777216.0,
        16777217.0,
        -16777217.0,
        2147483520.0,
        2147483647.0,
        -2147483648.0,
        2147483648.0,
        4294967295.0,
        1e-45,
        3.4e38,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let mut values: Vec<f64> = match dtype {
        DType::F32 => candidates.iter().map(|&v| v as f32 as f64).collect(),
        _ => {
            let (lo, end) = dtype.int_bounds();
            (candidates.iter())
                .filter(|v| v.fract() == 0.0 && **v >= lo && **v < end)
                .map(|v| v + 0.0)
                .collect()
        }
    };
    values.dedup_by(|a, b| a.to_bits() == b.to_bits());
    values
}

/// Every pair of `a_values` and `b_values` as two columns of `dtype`s.
fn pairs(a: DType, b: DType) -> (NodeRef, NodeRef, Vec<(f64, f64)>) {
    let (av, bv) = (edge_values(a), edge_values(b));
    let pairs: Vec<(f64, f64)> = (av.iter())
        .flat_map(|&x| bv.iter().map(move |&y| (x, y)))
        .collect();
    let column = |dtype, values: Vec<f64>| {
        ir::source(ColumnData::from_f64(dtype, &values).unwrap(), 1, false).unwrap()
    };
    (
        column(a, pairs.iter().map(|p| p.0).collect()),
        column(b, pairs.iter().map(|p| p.1).collect()),
        pairs,
    )
}

fn mask(values: impl Iterator<Item = bool>) -> ColumnData {
    ColumnData::U8(values.map(u8::from).collect())
}

pub async fn comparisons_are_exact_for_every_pair_of_types<T: Target>() {
    for a in DType::ALL {
        for b in DType::ALL {
            let (x, y, pairs) = pairs(a, b);
            let mut roots = Vec::new();
            let mut expected = Vec::new();
            for p in Predicate::COMPARISONS {
                roots.push(ir::predicate(p, &[x.clone(), y.clone()]).unwrap());
                // JavaScript's comparisons of the same numbers.
                let test: fn(f64, f64) -> bool = match p {
                    Predicate::Equal => |a, b| a == b,
                    Predicate::NotEqual => |a, b| a != b,
                    Predicate::Less => |a, b| a < b,
                    Predicate::LessEqual => |a, b| a <= b,
                    Predicate::Greater => |a, b| a > b,
                    _ => |a, b| a >= b,
                };
                expected.push(mask(pairs.iter().map(|&(a, b)| test(a, b))));
            }
            compare_roots::<T>(&roots, &expected, Tolerance::Exact)
                .await
                .unwrap_or_else(|e| panic!("{a:?} against {b:?}: {e}"));
        }
    }
}

/// A constant of one class compared with a column of another (the CPU compares in the
/// column's class where the constant is exactly one of its values, widens otherwise).
pub async fn comparisons_with_constants_of_other_types_are_exact<T: Target>() {
    use DType::*;
    let crossings = [
        (F32, I32),
        (F32, U32),
        (U32, I32),
        (I32, U32),
        (U8, I8),
        (I16, F32),
        (U32, F32),
        (I32, F32),
    ];
    for (a, b) in crossings {
        let column_values = edge_values(a);
        let x = ir::source(ColumnData::from_f64(a, &column_values).unwrap(), 1, false).unwrap();
        let mut roots = Vec::new();
        let mut expected = Vec::new();
        for c in edge_values(b) {
            let constant = ir::source(ColumnData::from_f64(b, &[c]).unwrap(), 1, true).unwrap();
            for p in [Predicate::Less, Predicate::Equal] {
                let test = |v: f64, w: f64| match p {
                    Predicate::Less => v < w,
                    _ => v == w,
                };
                roots.push(ir::predicate(p, &[x.clone(), constant.clone()]).unwrap());
                expected.push(mask(column_values.iter().map(|&v| test(v, c))));
                roots.push(ir::predicate(p, &[constant.clone(), x.clone()]).unwrap());
                expected.push(mask(column_values.iter().map(|&v| test(c, v))));
            }
        }
        compare_roots::<T>(&roots, &expected, Tolerance::Exact)
            .await
            .unwrap_or_else(|e| panic!("{a:?} column against {b:?} constants: {e}"));
    }
}

pub async fn logic_and_float_tests_follow_truth_and_nan<T: Target>() {
    for a in [DType::F32, DType::I8, DType::U32] {
        for b in [DType::F32, DType::U16] {
            let (x, y, pairs) = pairs(a, b);
            let truth = |v: f64| v != 0.0;
            let roots = [
                ir::fold_logic(Predicate::And, &[x.clone(), y.clone()]).unwrap(),
                ir::fold_logic(Predicate::Or, &[x.clone(), y.clone()]).unwrap(),
                ir::fold_logic(Predicate::Xor, &[x.clone(), y.clone()]).unwrap(),
                ir::predicate(Predicate::Not, std::slice::from_ref(&x)).unwrap(),
                ir::predicate(Predicate::IsNaN, std::slice::from_ref(&x)).unwrap(),
                ir::predicate(Predicate::IsFinite, std::slice::from_ref(&x)).unwrap(),
                ir::fold_logic(Predicate::And, std::slice::from_ref(&x)).unwrap(),
            ];
            let expected = [
                mask(pairs.iter().map(|&(a, b)| truth(a) && truth(b))),
                mask(pairs.iter().map(|&(a, b)| truth(a) || truth(b))),
                mask(pairs.iter().map(|&(a, b)| truth(a) != truth(b))),
                mask(pairs.iter().map(|&(a, _)| !truth(a))),
                mask(pairs.iter().map(|&(a, _)| a.is_nan())),
                mask(pairs.iter().map(|&(a, _)| a.is_finite())),
                mask(pairs.iter().map(|&(a, _)| truth(a))),
            ];
            compare_roots::<T>(&roots, &expected, Tolerance::Exact)
                .await
                .unwrap();
        }
    }
}

/// NumPy's `mod` of two float32s, from the exact f64 remainder.
fn float_mod(a: f32, b: f32) -> f32 {
    let r = ((a as f64) % (b as f64)) as f32;
    if r.is_nan() {
        r
    } else if r == 0.0 {
        0.0f32.copysign(b)
    } else if (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

/// Python's `%` of two integers (by 0: 0).
fn int_mod(a: i64, b: i64) -> i64 {
    match b {
        0 => 0,
        _ => a.rem_euclid(b) + if b < 0 && a.rem_euclid(b) != 0 { b } else { 0 },
    }
}

pub async fn minimum_maximum_mod_follow_their_rules_for_every_type<T: Target>() {
    for a in DType::ALL {
        for b in DType::ALL {
            let (x, y, pairs) = pairs(a, b);
            let out = DType::join([a, b]);
            // Each pair in the output type, as arithmetic converts it.
            let convert = |v: f64| {
                ColumnData::from_f64(out, &[if out.is_float() { v as f32 as f64 } else { v }])
                    .unwrap()
                    .get_f64(0)
            };
            let reference = |f: &dyn Fn(f64, f64) -> f64| {
                let values: Vec<f64> = (pairs.iter())
                    .map(|&(a, b)| f(convert(a), convert(b)))
                    .collect();
                ColumnData::from_f64(out, &values).unwrap()
            };
            let least = |a: f64, b: f64| match (a.is_nan() || b.is_nan(), a < b, b < a) {
                (true, ..) => f64::NAN,
                (_, true, _) => a,
                (_, _, true) => b,
                _ => f64::from_bits(a.to_bits() | b.to_bits()),
            };
            let most = |a: f64, b: f64| match (a.is_nan() || b.is_nan(), a > b, b > a) {
                (true, ..) => f64::NAN,
                (_, true, _) => a,
                (_, _, true) => b,
                _ => f64::from_bits(a.to_bits() & b.to_bits()),
            };
            let modulo = |a: f64, b: f64| match out {
                DType::F32 => float_mod(a as f32, b as f32) as f64,
                _ => int_mod(a as i64, b as i64) as f64,
            };
            let roots = [
                ir::binary(Minimum, &x, &y).unwrap(),
                ir::binary(Maximum, &x, &y).unwrap(),
                ir::binary(Mod, &x, &y).unwrap(),
            ];
            let expected = [reference(&least), reference(&most), reference(&modulo)];
            compare_roots::<T>(&roots, &expected, Tolerance::Exact)
                .await
                .unwrap_or_else(|e| panic!("{a:?} with {b:?}: {e}"));
        }
    }
}

pub async fn float_mod_is_exact_for_large_quotients<T: Target>() {
    let mut rng = Rng(41);
    let a: Vec<f32> = (0..4000)
        .map(|i: usize| (rng.f32() - 0.5) * 10f32.powi((i % 39) as i32 - 8))
        .chain([3.4e38, -3.4e38, 1e-45, -1e-45, 7.0, -7.0])
        .collect();
    let b: Vec<f32> = (0..a.len())
        .map(|i| (rng.f32() - 0.5) * 10f32.powi((i % 17) as i32 - 8))
        .collect();
    let expected: Vec<f32> = a.iter().zip(&b).map(|(&x, &y)| float_mod(x, y)).collect();
    let root = ir::binary(Mod, &f32s(&a, 1), &f32s(&b, 1)).unwrap();
    compare_roots::<T>(&[root], &[ColumnData::F32(expected)], Tolerance::Exact)
        .await
        .unwrap();
}

pub async fn rounding_and_sign_keep_integers_and_halve_to_even<T: Target>() {
    for dtype in DType::ALL {
        let values = edge_values(dtype);
        let x = ir::source(ColumnData::from_f64(dtype, &values).unwrap(), 1, false).unwrap();
        let map = |f: fn(f64) -> f64| {
            ColumnData::from_f64(dtype, &values.iter().map(|&v| f(v)).collect::<Vec<_>>()).unwrap()
        };
        let sign = |v: f64| {
            if v.is_nan() {
                v
            } else if v == 0.0 {
                0.0
            } else {
                v.signum()
            }
        };
        let roots = [
            ir::unary(Floor, &x).unwrap(),
            ir::unary(Ceil, &x).unwrap(),
            ir::unary(Trunc, &x).unwrap(),
            ir::unary(Round, &x).unwrap(),
            ir::unary(Sign, &x).unwrap(),
        ];
        let expected = [
            map(f64::floor),
            map(f64::ceil),
            map(f64::trunc),
            map(f64::round_ties_even),
            map(sign),
        ];
        for root in &roots {
            assert_eq!(root.meta.dtype, dtype, "rounding keeps the type");
        }
        compare_roots::<T>(&roots, &expected, Tolerance::Exact)
            .await
            .unwrap();
    }
    // Halves to even, and large floats are integers already.
    let halves = f32s(&[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 8388609.0, 1e30], 1);
    let root = ir::unary(Round, &halves).unwrap();
    let expected = [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 8388609.0, 1e30];
    compare_roots::<T>(
        &[root],
        &[ColumnData::F32(expected.to_vec())],
        Tolerance::Exact,
    )
    .await
    .unwrap();
}

pub async fn predicates_fuse_broadcast_and_clamp<T: Target>() {
    let xyz = f32s(&floats(3000), 3);
    let limits = lit(&[0.25, 0.5]);
    let inside = ir::fold_logic(
        Predicate::And,
        &[
            ir::predicate(Predicate::Greater, &[xyz.clone(), lit(&[0.1])]).unwrap(),
            ir::predicate(Predicate::Less, &[xyz.clone(), limits.clone()]).unwrap(),
        ],
    )
    .unwrap();
    let clamped = ir::clamp(&xyz, &lit(&[0.2]), &lit(&[0.8])).unwrap();
    let values = floats(3000);
    let expected_inside: Vec<u8> = (0..3000)
        .map(|i| {
            let limit = [0.25f32, 0.5, 0.0][i % 3];
            u8::from(values[i] > 0.1 && values[i] < limit)
        })
        .collect();
    let expected_clamped: Vec<f32> = values.iter().map(|v| v.clamp(0.2, 0.8)).collect();
    compare_roots::<T>(
        &[inside.clone(), clamped],
        &[
            ColumnData::U8(expected_inside),
            ColumnData::F32(expected_clamped),
        ],
        Tolerance::Exact,
    )
    .await
    .unwrap();
    assert_eq!(inside.meta.dtype, DType::U8);
    assert_eq!(inside.meta.size, 3);
    // Wrong arity is refused when the node is built.
    let refused = ir::predicate(Predicate::Less, std::slice::from_ref(&xyz));
    assert_eq!(code(refused), ErrorCode::InvalidArgument);
    assert_eq!(
        code(ir::fold_logic(Predicate::Or, &[])),
        ErrorCode::InvalidArgument
    );
}

/// Whether `searchSorted`'s answer for `q` lies past key `k` (NaN after every number).
fn past(k: f64, q: f64, right: bool) -> bool {
    match (k.is_nan(), q.is_nan()) {
        (false, false) if right => k <= q,
        (false, false) => k < q,
        (false, true) => true,
        (true, q_nan) => right && q_nan,
    }
}

pub async fn search_sorted_compares_exactly_with_nan_last<T: Target>() {
    for sorted_type in [DType::F32, DType::I32, DType::U8, DType::U32] {
        // Every edge value twice (ties), ascending with NaN last, in two chunks.
        let mut keys = edge_values(sorted_type);
        keys.extend(edge_values(sorted_type));
        keys.sort_by(|a, b| a.total_cmp(b));
        keys.retain(|v| !v.is_nan());
        if sorted_type == DType::F32 {
            keys.extend([f64::NAN, f64::NAN]);
        }
        let half = keys.len() as u32 / 2;
        let sorted = chunked(
            ColumnData::from_f64(sorted_type, &keys).unwrap(),
            1,
            &[half, keys.len() as u32 - half],
        );
        for query_type in DType::ALL {
            let queries = edge_values(query_type);
            let q = ir::source(
                ColumnData::from_f64(query_type, &queries).unwrap(),
                1,
                false,
            )
            .unwrap();
            let mut roots = Vec::new();
            let mut expected = Vec::new();
            for right in [false, true] {
                roots.push(ir::search_sorted(&sorted, &q, right).unwrap());
                expected.push(ColumnData::U32(
                    (queries.iter())
                        .map(|&v| keys.iter().filter(|&&k| past(k, v, right)).count() as u32)
                        .collect(),
                ));
            }
            compare_roots::<T>(&roots, &expected, Tolerance::Exact)
                .await
                .unwrap_or_else(|e| panic!("{query_type:?} in {sorted_type:?}: {e}"));
        }
    }
    let refused = ir::search_sorted(&f32s(&[1.0, 2.0], 2), &lit(&[1.0]), false);
    assert_eq!(code(refused), ErrorCode::InvalidArgument);
}
