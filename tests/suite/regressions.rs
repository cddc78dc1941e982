//! Defects found by trying the package as a new user would; each must stay fixed on every
//! backend.

use super::*;
use gputable::plan::{plan, Fusion, MAX_REGION_NODES};

/// Every literal and leaf was its own storage binding: ordinary formulas exceeded WebGPU's
/// ten. Literals are parameters now, and regions split at the binding limit.
pub async fn literals_take_no_bindings<T: Target>() {
    let x = f32s(&floats(3000), 1);
    let mut args = vec![x.clone()];
    args.extend((1..=9).map(|k| lit(&[k as f32])));
    check::<T>(ir::fold_binary(Add, &args).unwrap(), Tolerance::Exact).await;
    let mut y = x.clone();
    for _ in 0..5 {
        y = ir::binary(
            Add,
            &ir::binary(Multiply, &y, &lit(&[2.])).unwrap(),
            &lit(&[1.]),
        )
        .unwrap();
    }
    check::<T>(y, Tolerance::Exact).await;
    let columns: Vec<NodeRef> = (0..10).map(|k| f32s(&floats(200 + k), 1)).collect();
    check::<T>(ir::interleave(&columns).unwrap(), Tolerance::Exact).await;
    let mixed: Vec<NodeRef> = (0..20)
        .map(|k| match k % 3 {
            0 => u8s(&(0..150).map(|i| (i * k) as u8).collect::<Vec<_>>(), 1),
            1 => i16s(
                &(0..150).map(|i| (i * k) as i16 - 700).collect::<Vec<_>>(),
                1,
            ),
            _ => u16s(&(0..150).map(|i| (i * k) as u16).collect::<Vec<_>>(), 1),
        })
        .collect();
    check::<T>(ir::interleave(&mixed).unwrap(), Tolerance::Exact).await;
    check::<T>(
        ir::fold_binary(Add, &columns).unwrap(),
        Tolerance::Relative(1e-6),
    )
    .await;
}

/// A 1,000-step chain was one huge kernel (seconds to compile), 5,000 steps never settled,
/// dropping 15,000 nodes overflowed the stack and `explain()` grew cubically.
pub async fn long_chains_are_split_into_bounded_kernels<T: Target>() {
    let x = f32s(&floats(10_000), 1);
    let mut chain = x.clone();
    for _ in 0..1000 {
        chain = ir::unary(Abs, &ir::unary(Sqrt, &chain).unwrap()).unwrap();
    }
    let regions = plan(std::slice::from_ref(&chain), Fusion::On)
        .unwrap()
        .regions;
    assert!(regions.len() >= 2000 / MAX_REGION_NODES);
    assert!(regions.iter().all(|r| r.nodes.len() <= MAX_REGION_NODES));
    check::<T>(chain, Tolerance::Relative(1e-6)).await;
    // 16,000 ops explain in one readable text; 20,000 drop without deep recursion.
    let mut long = x.clone();
    for k in 0..16_000 {
        long = ir::binary(Add, &long, &lit(&[k as f32])).unwrap();
    }
    let text = gputable::engine::explain(&T::device(), &long).unwrap();
    assert!(text.lines().count() > 16_000 / MAX_REGION_NODES);
    let drop_a_deep_chain = || {
        let mut deep = f32s(&[1.], 1);
        for _ in 0..20_000 {
            deep = ir::unary(Abs, &deep).unwrap();
        }
        drop(deep);
    };
    // Natively in a thread with a small stack; in a browser on the wasm stack (1 MB).
    #[cfg(not(target_arch = "wasm32"))]
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(drop_a_deep_chain)
        .unwrap()
        .join()
        .expect("dropping a long chain needs no deep stack");
    #[cfg(target_arch = "wasm32")]
    drop_a_deep_chain();
}

const SPECIAL: [f32; 34] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    -2.0,
    3.0,
    -3.0,
    2.5,
    -2.5,
    1.5,
    -1.5,
    0.1,
    -0.1,
    10.0,
    -10.0,
    1e-30,
    -1e-30,
    1e30,
    -1e30,
    f32::MIN_POSITIVE,
    1e-45,
    f32::MAX,
    -f32::MAX,
    16777216.0,
    16777217.0,
    -16777215.0,
    0.999_999_9,
    1.000_000_1,
];

/// 77 of 1,156 special pairs differed on the GPU (`pow(NaN, 0)`, `pow(1, NaN)`,
/// `pow(-Inf, 0.5)`...): every pair follows C's `powf` now.
pub async fn pow_special_values_match_the_cpu<T: Target>() {
    let (mut bases, mut exponents) = (Vec::new(), Vec::new());
    for b in SPECIAL {
        for e in SPECIAL {
            bases.push(b);
            exponents.push(e);
        }
    }
    let root = ir::binary(Pow, &f32s(&bases, 1), &f32s(&exponents, 1)).unwrap();
    let expected = oracle_f32(&root).await;
    evaluate::<T>(std::slice::from_ref(&root)).await.unwrap();
    let actual = read_f32(&root).await;
    for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
        let ok = if e.is_finite() && *e != 0.0 {
            ((a - e) / e).abs() <= 1e-4
        } else {
            a == e || (a.is_nan() && e.is_nan())
        };
        assert!(
            ok,
            "pow({}, {}): device {a} vs CPU {e}",
            bases[i], exponents[i]
        );
    }
}

/// `sin(2^31)` was -142846448: the argument reduction only covered |x| < 8192.
pub async fn sin_cos_tan_of_large_arguments_match_the_cpu<T: Target>() {
    let mut xs: Vec<f32> = vec![
        2147483648.0,
        -2147483648.0,
        16777217.0,
        1e7,
        123456789.0,
        3.0e9,
        1e10,
        -1e20,
        1e30,
        3.0e38,
        f32::MAX,
        -f32::MAX,
        8192.0,
        8193.5,
        65536.0,
        1e6 + 0.5,
    ];
    let mut rng = Rng(31);
    for _ in 0..3000 {
        // Magnitudes from 1 to 2^127, both signs.
        let exponent = 127 + rng.below(127) as u32;
        let bits = ((rng.next() as u32) & 0x807F_FFFF) | (exponent << 23);
        xs.push(f32::from_bits(bits));
    }
    let ints: Vec<i32> = (0..2000).map(|_| rng.next() as i32).collect();
    for (name, x) in [("floats", f32s(&xs, 1)), ("sint32", i32s(&ints, 1))] {
        for op in [Sin, Cos, Tan] {
            let root = ir::unary(op, &x).unwrap();
            let expected = oracle_f32(&root).await;
            evaluate::<T>(std::slice::from_ref(&root)).await.unwrap();
            let actual = read_f32(&root).await;
            for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
                assert!(
                    op == Tan || (-1.0..=1.0).contains(a),
                    "{op:?}({name} {i}) = {a} leaves [-1, 1]"
                );
                let close = (a - e).abs() <= 2e-5 * e.abs().max(1.0);
                assert!(close, "{op:?} of {name} element {i}: device {a} vs CPU {e}");
            }
        }
    }
}

/// An extent of 12,000-lane rows lost the WebGPU device for good (each invocation kept every
/// lane's state), and WebGL2 refused rows wider than 64 lanes; wide rows now reduce lane by
/// lane, and a stored wide column reads back whole.
pub async fn extent_of_wide_rows<T: Target>() {
    for (lanes, rows) in [(12_000u32, 10usize), (40_000, 3), (5, 70_000)] {
        let values: Vec<f32> = (0..lanes as usize * rows)
            .map(|i| ((i * 7919) % 100_003) as f32 - 50_000.0)
            .collect();
        let wide = f32s(&values, lanes);
        check::<T>(ir::extent(&wide).unwrap(), Tolerance::Exact).await;
        let only = f32s(&values, lanes);
        gputable::engine::put_on(&T::device(), &only, true)
            .await
            .unwrap();
        let back = gputable::evaluator::read_value_async(&only, None, None)
            .await
            .unwrap();
        assert_eq!(
            back,
            ColumnData::F32(values.clone()),
            "{lanes} lanes read back"
        );
        let absolute = ir::unary(Abs, &wide).unwrap();
        if T::WIDE_ROWS || lanes <= 64 {
            check::<T>(ir::extent(&absolute).unwrap(), Tolerance::Exact).await;
        } else {
            // WebGL2 keeps 4 lanes per texture, and one draw samples at most 16 textures: a
            // row is computed whole, so elementwise work on it cannot be split.
            let error = evaluate::<T>(&[ir::extent(&absolute).unwrap()])
                .await
                .unwrap_err();
            assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
            assert!(
                error.message.contains("maxSampledTexturesPerShaderStage"),
                "{error}"
            );
        }
    }
}

/// Elementwise work on 12,000-lane rows kept every lane of every node in each invocation and
/// never finished on WebGPU; rows wider than `WIDE_ROW_LANES` compute a lane per invocation.
/// 24 lanes (6 texture planes) keep every case within one WebGL2 draw's 16 textures.
pub async fn wide_rows_compute_lane_by_lane<T: Target>() {
    let lanes = 24u32;
    let rows = 300usize;
    let n = rows * lanes as usize;
    let a = f32s(&floats(n), lanes);
    let b = f32s(&floats(n + 1)[1..], lanes);
    let scale = f32s(&floats(rows), 1);
    let short = f32s(&floats(100 * lanes as usize), lanes);
    let narrow = f32s(&floats(rows * 3), 3);
    let sum = ir::binary(Add, &a, &b).unwrap();
    // Lane-wise ops, a broadcast lane, a shorter input and a narrower (zero-extended) one.
    let chain = ir::unary(
        Sqrt,
        &ir::unary(
            Abs,
            &ir::binary(
                Subtract,
                &ir::binary(Multiply, &sum, &scale).unwrap(),
                &ir::binary(Add, &short, &narrow).unwrap(),
            )
            .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    check::<T>(chain, Tolerance::Relative(1e-6)).await;
    check::<T>(ir::select(&scale, &sum, &a).unwrap(), Tolerance::Exact).await;
    // Read across lanes: wide inputs are materialized, narrow ones index their arrays.
    let halves = [
        ir::unary(Abs, &f32s(&floats(rows * 12), 12)).unwrap(),
        ir::binary(Multiply, &f32s(&floats(rows * 12), 12), &lit(&[2.])).unwrap(),
    ];
    check::<T>(ir::interleave(&halves).unwrap(), Tolerance::Exact).await;
    check::<T>(
        ir::interleave(&[narrow.clone(), sum.clone()]).unwrap(),
        Tolerance::Exact,
    )
    .await;
    let reversed: Vec<f64> = (0..lanes)
        .rev()
        .map(f64::from)
        .chain([3., 3., 3.])
        .collect();
    check::<T>(ir::swizzle(&sum, &reversed).unwrap(), Tolerance::Exact).await;
    check::<T>(ir::dot(&sum, &a).unwrap(), Tolerance::Relative(1e-5)).await;
    check::<T>(ir::length(&sum).unwrap(), Tolerance::Relative(1e-6)).await;
    let words: Vec<f64> = (0..rows * 12).map(|i| (i as f64 - 1000.5) * 1e30).collect();
    check::<T>(
        ir::fround(&f64_words(&words, 12)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    let ids = i32s(&(0..400).map(|i| (i * 7) % 310 - 5).collect::<Vec<_>>(), 1);
    check::<T>(
        ir::binary(Add, &ir::gather(&ids, &a).unwrap(), &lit(&[1.])).unwrap(),
        Tolerance::Exact,
    )
    .await;
    // 8-bit lanes wrap one by one.
    let bytes: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
    check::<T>(
        ir::binary(Multiply, &u8s(&bytes, lanes), &u8s(&bytes, lanes)).unwrap(),
        Tolerance::Exact,
    )
    .await;
}

/// A source destroyed before its graph ran was `INTERNAL`.
pub async fn a_destroyed_input_is_destroyed_not_internal<T: Target>() {
    let x = f32s(&floats(100), 1);
    let y = ir::binary(Add, &x, &lit(&[1.])).unwrap();
    let z = ir::unary(Sqrt, &y).unwrap();
    x.destroy();
    assert_eq!(code(evaluate::<T>(&[z]).await), ErrorCode::Destroyed);
    let w = f32s(&floats(100), 1);
    let out = ir::binary(Add, &w, &lit(&[1.])).unwrap();
    evaluate::<T>(std::slice::from_ref(&out)).await.unwrap();
    out.destroy();
    assert_eq!(
        code(gputable::evaluator::read_value_async(&out, None, None).await),
        ErrorCode::Destroyed
    );
}

/// An H100's square root was an ulp off (WGSL allows it): `length(43522)` came out
/// 43521.996, and a gather by it read the row before. Roots of positive floats of every
/// magnitude, and lengths of integers, are the CPU's correctly rounded ones, bit for bit.
pub async fn square_roots_are_correctly_rounded<T: Target>() {
    let mut rng = Rng(0x005a_1d0f_c0de);
    let mut xs: Vec<f32> = (0..20000)
        .map(|_| f32::from_bits(0x0080_0000 + rng.below(0x7f00_0000) as u32))
        .collect();
    xs.extend([
        f32::MIN_POSITIVE,
        f32::MAX,
        1.0,
        2.0,
        4.0,
        0.25,
        1e-30,
        1e30,
        43522.0 * 43522.0,
    ]);
    let root = ir::unary(Sqrt, &f32s(&xs, 1)).unwrap();
    let whole: Vec<u16> = (0..5000).map(|_| rng.below(65536) as u16).collect();
    let lengths = ir::length(&ir::length(&u16s(&whole, 1)).unwrap()).unwrap();
    evaluate::<T>(&[root.clone(), lengths.clone()])
        .await
        .unwrap();
    for (x, got) in xs.iter().zip(read_f32(&root).await) {
        assert_eq!(got.to_bits(), x.sqrt().to_bits(), "sqrt({x:e}) = {got:e}");
    }
    for (x, got) in whole.iter().zip(read_f32(&lengths).await) {
        assert_eq!(got, *x as f32, "length(length({x}))");
    }
}

/// A GL driver (llvmpipe) took the square root of a negative number as -sqrt(|x|): squared
/// inside `length`, the NaN became a number.
pub async fn square_roots_of_negative_numbers_are_nan<T: Target>() {
    let x = i32s(&[-654994453, 4, -1, 0], 1);
    check::<T>(
        ir::length(&ir::unary(Sqrt, &x).unwrap()).unwrap(),
        Tolerance::Relative(1e-6),
    )
    .await;
    check::<T>(
        ir::unary(Sqrt, &f32s(&[-2.5, -1e-30, 9.0], 1)).unwrap(),
        Tolerance::Relative(1e-6),
    )
    .await;
}

/// A pooled host array came back with the row size of its last use: on the CPU, a radix
/// sort's permutation (rows of 1) written into an array that had held rows of 2 read past
/// its end. Natively each test had a device of its own; the browser suite (one device for
/// the page, tests in reverse order) ran the random graphs before the sorts, which left
/// such an array in the pool. The same two on one device here.
pub async fn a_pooled_array_forgets_its_row_size<T: Target>() {
    random_graphs_match_the_cpu::<T>().await;
    radix_sorts_use_every_bit_of_the_keys::<T>().await;
}

/// Verbs refused a constant (`cumsum`, `unique`, `groupBy`, `histogram`, `filter`, `join`,
/// `lookup`, `searchSorted`) where `argsort` and `count` took it: a constant is one row, as
/// NumPy takes a scalar, and is repeated on the rows of a column beside it.
pub async fn verbs_take_a_constant_as_one_row_or_repeated<T: Target>() {
    use gputable::ir::{Aggregate, Bins, GroupOp, JoinHow, Predicate, ReduceKind, ScanFold};
    let five = ir::u32_constant(5).unwrap();
    let key = chunked(ColumnData::U32(vec![2, 1, 2, 2]), 1, &[3, 1]);
    let three = ir::u32_constant(3).unwrap();
    let mask = ir::predicate(
        Predicate::Greater,
        &[key.clone(), ir::u32_constant(1).unwrap()],
    )
    .unwrap();
    let cumsum = ir::cumulative(ScanFold::Sum, &five, false, false).unwrap();
    let unique = ir::unique(&five).unwrap();
    let (values, counts) = ir::value_counts(&five).unwrap();
    let equal = Bins::Equal {
        bins: 2.0,
        range: Some((0.0, 10.0)),
    };
    let alone = ir::histogram(&five, &equal, None).unwrap();
    let masked = ir::histogram(&five, &equal, Some(&mask)).unwrap();
    let kept = ir::filter(&five, &mask).unwrap();
    let sum_of = |value: &NodeRef| Aggregate {
        op: GroupOp::Sum,
        value: Some(value.clone()),
    };
    let (keys, sums) = ir::group_by(std::slice::from_ref(&key), &[sum_of(&three)]).unwrap();
    let (one_key, total) = ir::group_by(std::slice::from_ref(&five), &[sum_of(&key)]).unwrap();
    let joined = ir::join(
        &key,
        &ir::u32_constant(2).unwrap(),
        JoinHow::Inner,
        None,
        false,
    );
    let joined = joined.unwrap();
    let looked = ir::lookup(&key, &ir::u32_constant(1).unwrap()).unwrap();
    let searched = ir::search_sorted(&five, &key, false).unwrap();
    let where_sum = ir::reduce_where(ReduceKind::Sum, &five, None, &mask, None, 4).unwrap();
    let roots = [
        where_sum.clone(),
        cumsum.clone(),
        unique.clone(),
        values.clone(),
        counts.clone(),
        alone.clone(),
        masked.clone(),
        kept.clone(),
        keys[0].clone(),
        sums[0].clone(),
        one_key[0].clone(),
        total[0].clone(),
        joined.left.clone(),
        joined.right.clone(),
        looked.clone(),
        searched.clone(),
    ];
    evaluate_here::<T>(&roots).await;
    assert_eq!(read_u32(&cumsum).await, [5]);
    assert_eq!(read_u32(&unique).await, [5]);
    assert_eq!(read_u32(&values).await, [5]);
    assert_eq!(read_u32(&counts).await, [1]);
    assert_eq!(read_u32(&alone).await, [0, 1]);
    assert_eq!(read_u32(&masked).await, [0, 3]);
    assert_eq!(read_u32(&kept).await, [5, 5, 5]);
    assert_eq!(read_u32(&keys[0]).await, [1, 2]);
    assert_eq!(read_u32(&sums[0]).await, [3, 9]);
    assert_eq!(read_u32(&one_key[0]).await, [5]);
    assert_eq!(read_u32(&total[0]).await, [7]);
    assert_eq!(read_i32(&joined.left).await, [0, 2, 3]);
    assert_eq!(read_i32(&joined.right).await, [0, 0, 0]);
    assert_eq!(read_i32(&looked).await, [-1, 0, -1, -1]);
    assert_eq!(read_u32(&searched).await, [0, 0, 0, 0]);
    assert_eq!(read_u32(&where_sum).await, [15]);
}

/// `searchSorted` into a counted column with nulls (a filter's or `unique`'s result) built
/// its search again from a filter that kept the null flags: it recursed until the stack
/// overflowed, which left the wasm instance unusable.
pub async fn search_sorted_into_a_counted_column_with_nulls<T: Target>() {
    use super::filter::nullable;
    let x = nullable(
        ColumnData::F32(vec![3.0, 0.0, 1.0, 5.0, 1.0, 9.0]),
        Some(&[1, 0, 1, 1, 1, 1]),
        &[4, 2],
    );
    let mask = chunked(ColumnData::U8(vec![1, 1, 1, 1, 1, 0]), 1, &[4, 2]);
    let queries = f32s(&[0.5, 1.0, 4.0, 10.0], 1);
    // unique: [1, 3, 5, 9, null]; the filter's sorted: [1, 1, 3, 5, null].
    let distinct = ir::unique(&x).unwrap();
    let kept = ir::sort(&ir::filter(&x, &mask).unwrap(), false, ir::Nulls::Last).unwrap();
    let left = ir::search_sorted(&distinct, &queries, false).unwrap();
    let right = ir::search_sorted(&kept, &queries, true).unwrap();
    evaluate_here::<T>(&[left.clone(), right.clone()]).await;
    assert_eq!(read_u32(&left).await, [0, 0, 2, 4]);
    assert_eq!(read_u32(&right).await, [0, 2, 3, 4]);
}

/// api.md's lane rule holds for `select`, `dot` and `equalAll` as for arithmetic: the widest
/// input's lanes, a size-1 input broadcast, lanes past a row 0. They refused rows of other
/// sizes (`INVALID_ARGUMENT`), and `select` ignored its condition's size.
pub async fn select_dot_and_equal_all_follow_the_lane_rule<T: Target>() {
    let two = f32s(&[1., 2., 3., 4.], 2);
    let three = f32s(&[9., 8., 7., 6., 5., 4.], 3);
    let flat = |root: NodeRef| async move {
        evaluate_here::<T>(std::slice::from_ref(&root)).await;
        let values = reduce::as_f64(&read(&root).await);
        (root.meta.size, values)
    };
    let picked = ir::select(&f32s(&[1., 0.], 1), &two, &three).unwrap();
    let expected = vec![1., 2., 0., 6., 5., 4.];
    assert_eq!(flat(picked).await, (3, expected));
    let wide_condition = f32s(&[1., 0., 1., 0., 0., 1.], 3);
    let picked = ir::select(&wide_condition, &f32s(&[10., 20.], 1), &lit(&[-1.])).unwrap();
    let expected = vec![10., -1., 10., -1., -1., 20.];
    assert_eq!(flat(picked).await, (3, expected));
    assert_eq!(
        flat(ir::dot(&two, &three).unwrap()).await,
        (1, vec![25., 38.])
    );
    let scaled = ir::dot(&three, &f32s(&[2., 3.], 1)).unwrap();
    assert_eq!(flat(scaled).await, (1, vec![48., 45.]));
    let fives = ir::equal_all(&f32s(&[5., 5., 5., 1., 2., 1.], 3), &u32s(&[5, 1], 1)).unwrap();
    assert_eq!(flat(fives).await, (1, vec![1., 0.]));
    let padded = ir::equal_all(&two, &f32s(&[1., 2., 0., 3., 4., 1.], 3)).unwrap();
    assert_eq!(flat(padded).await, (1, vec![1., 0.]));
}
