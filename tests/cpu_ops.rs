//! Every operation of api.md on the CPU backend: values, deduction, validation, edge cases.

mod common;
use common::*;

use gputable::column::ColumnData;
use gputable::cpu::CpuDevice;
use gputable::evaluator::{clean_evaluate, evaluate, explain, read_value};
use gputable::ir::{self, BinaryOp::*, UnaryOp::*};
use gputable::{DType, ErrorCode};

#[test]
fn add_with_row_literal_and_scalar_matches_the_api_example() {
    let xyz = f32s(&[1., 2., 3., 4., 5., 6.], 3);
    let r = ir::fold_binary(Add, &[xyz, lit(&[10., 20., 30.]), lit(&[1.])]).unwrap();
    assert_eq!(meta(&r), (DType::F32, 3, 2, false));
    assert_eq!(read_f32(&r), vec![12., 23., 34., 15., 26., 37.]);
}

#[test]
fn arithmetic_folds_left_to_right() {
    let x = f32s(&[100., 50.], 1);
    let r = ir::fold_binary(Subtract, &[x.clone(), lit(&[10.]), lit(&[5.])]).unwrap();
    assert_eq!(read_f32(&r), vec![85., 35.]);
    let r = ir::fold_binary(Divide, &[x.clone(), lit(&[2.]), lit(&[5.])]).unwrap();
    assert_eq!(read_f32(&r), vec![10., 5.]);
    assert!(std::rc::Rc::ptr_eq(
        &ir::fold_binary(Multiply, std::slice::from_ref(&x)).unwrap(),
        &x
    ));
    assert_eq!(code(ir::fold_binary(Add, &[])), ErrorCode::InvalidArgument);
}

#[test]
fn output_type_follows_the_deduction_rules() {
    let t = |a: &ir::NodeRef, b: &ir::NodeRef| ir::binary(Add, a, b).unwrap().meta.dtype;
    let (u8v, i8v, u32v, i32v) = (u8s(&[1], 1), i8s(&[1], 1), u32s(&[1], 1), i32s(&[1], 1));
    assert_eq!(t(&u8v, &u8v), DType::U8);
    assert_eq!(t(&u8v, &u32v), DType::U32);
    assert_eq!(t(&i8v, &u8v), DType::I16);
    assert_eq!(t(&i32v, &u8v), DType::I32);
    assert_eq!(t(&i8v, &u32v), DType::F32);
    // Number literals are float32 inputs.
    assert_eq!(t(&u32v, &lit(&[1.])), DType::F32);
    assert_eq!(t(&u32v, &konst(ColumnData::U32(vec![1]))), DType::U32);
    for op in [Sqrt, Sin, Cos, Tan, Exp, Log] {
        assert_eq!(ir::unary(op, &i32v).unwrap().meta.dtype, DType::F32);
    }
    assert_eq!(ir::unary(Abs, &i8v).unwrap().meta.dtype, DType::I8);
    assert_eq!(ir::binary(Pow, &u8v, &u8v).unwrap().meta.dtype, DType::F32);
}

#[test]
fn integers_wrap_as_32_bit_and_narrow_to_their_type() {
    let r = ir::binary(Add, &i32s(&[i32::MAX, -5], 1), &i32s(&[1, 3], 1)).unwrap();
    assert_eq!(read_i32(&r), vec![i32::MIN, -2]);
    let r = ir::binary(Subtract, &u32s(&[0, 5], 1), &u32s(&[1, 3], 1)).unwrap();
    assert_eq!(read_u32(&r), vec![u32::MAX, 2]);
    let r = ir::binary(Multiply, &i32s(&[65536], 1), &i32s(&[65536], 1)).unwrap();
    assert_eq!(read_i32(&r), vec![0]);
    let r = ir::binary(Add, &u8s(&[200, 255], 1), &u8s(&[100, 1], 1)).unwrap();
    assert_eq!(read(&r), ColumnData::U8(vec![44, 0]));
    let r = ir::binary(Add, &i8s(&[-128, 100], 1), &u8s(&[255, 100], 1)).unwrap();
    assert_eq!(read(&r), ColumnData::I16(vec![127, 200]));
    let r = ir::unary(Abs, &i8s(&[-128, -5, 7], 1)).unwrap();
    assert_eq!(read(&r), ColumnData::I8(vec![-128, 5, 7]));
    let r = ir::unary(Abs, &i32s(&[i32::MIN], 1)).unwrap();
    assert_eq!(read_i32(&r), vec![i32::MIN]);
}

#[test]
fn integer_division_truncates_and_division_by_zero_is_zero() {
    let r = ir::binary(
        Divide,
        &i32s(&[-7, 7, 7, i32::MIN, 0], 1),
        &i32s(&[2, -2, 0, -1, 0], 1),
    )
    .unwrap();
    assert_eq!(read_i32(&r), vec![-3, -3, 0, i32::MIN, 0]);
    let r = ir::binary(Divide, &u32s(&[7, u32::MAX], 1), &u32s(&[0, 2], 1)).unwrap();
    assert_eq!(read_u32(&r), vec![0, u32::MAX / 2]);
    let r = ir::binary(Divide, &u8s(&[9], 1), &u8s(&[0], 1)).unwrap();
    assert_eq!(read(&r), ColumnData::U8(vec![0]));
}

/// Unsigned division by a constant power of two (the split sort's bit extraction) gives what
/// integer division gives, for every power and for other divisors.
#[test]
fn unsigned_division_by_constant_powers_of_two() {
    let values: Vec<u32> = vec![0, 1, 2, 3, 255, 256, 65535, 1 << 31, u32::MAX, 123_456_789];
    let x = u32s(&values, 1);
    for divisor in (0..32).map(|k| 1u32 << k).chain([0, 3, 6, 1000]) {
        let r = ir::binary(Divide, &x, &konst(ColumnData::U32(vec![divisor]))).unwrap();
        let want: Vec<u32> = values
            .iter()
            .map(|v| v.checked_div(divisor).unwrap_or(0))
            .collect();
        assert_eq!(read_u32(&r), want, "x / {divisor}");
    }
    let small = ir::binary(Divide, &u8s(&[255, 17], 1), &konst(ColumnData::U8(vec![4]))).unwrap();
    assert_eq!(read(&small), ColumnData::U8(vec![63, 4]));
    let signed = ir::binary(Divide, &i32s(&[-7, 7], 1), &konst(ColumnData::I32(vec![2]))).unwrap();
    assert_eq!(
        read_i32(&signed),
        vec![-3, 3],
        "signed division truncates toward zero"
    );
}

#[test]
fn float_division_and_math_follow_ieee() {
    let r = ir::binary(Divide, &f32s(&[1., -1., 0.], 1), &f32s(&[0., 0., 0.], 1)).unwrap();
    let v = read_f32(&r);
    assert_eq!((v[0], v[1]), (f32::INFINITY, f32::NEG_INFINITY));
    assert!(v[2].is_nan());
    let v = read_f32(&ir::unary(Sqrt, &f32s(&[-1., 4., f32::INFINITY], 1)).unwrap());
    assert!(v[0].is_nan());
    assert_eq!(&v[1..], &[2., f32::INFINITY]);
    let v = read_f32(&ir::unary(Log, &f32s(&[0., -1.], 1)).unwrap());
    assert_eq!(v[0], f32::NEG_INFINITY);
    assert!(v[1].is_nan());
    let v = read_f32(&ir::binary(Add, &f32s(&[f32::NAN, f32::INFINITY], 1), &lit(&[1.])).unwrap());
    assert!(v[0].is_nan() && v[1] == f32::INFINITY);
}

#[test]
fn math_functions_match_f64_references() {
    let xs: Vec<f32> = (0..2000).map(|i| (i as f32 - 1000.0) * 0.0137).collect();
    let src = f32s(&xs, 1);
    type Case = (gputable::ir::UnaryOp, fn(f64) -> f64);
    let cases: [Case; 6] = [
        (Sin, f64::sin),
        (Cos, f64::cos),
        (Tan, f64::tan),
        (Exp, f64::exp),
        (Sqrt, f64::sqrt),
        (Log, f64::ln),
    ];
    for (op, reference) in cases {
        let expected: Vec<f64> = xs.iter().map(|&x| reference(x as f64)).collect();
        let actual = read_f32(&ir::unary(op, &src).unwrap());
        match op {
            // Tolerances of the cross-backend contract; tan near its poles is ill-conditioned,
            // so it is compared through sin/cos at the same argument.
            Tan => {
                for (i, &x) in xs.iter().enumerate() {
                    let t = (x as f64).tan();
                    if t.abs() < 1e3 {
                        assert!(
                            ((actual[i] as f64) - t).abs() <= 1e-5 * t.abs().max(1.0),
                            "tan({x})"
                        );
                    }
                }
            }
            Sqrt | Log => assert_close(&actual, &expected, 1e-6),
            _ => {
                for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
                    assert!(
                        ((*a as f64) - e).abs() <= 1e-5 * e.abs().max(1e-2),
                        "{op:?}({}) = {a} vs {e}",
                        xs[i]
                    );
                }
            }
        }
    }
    let p = read_f32(
        &ir::binary(
            Pow,
            &f32s(&[2., 9., -8., 0.], 1),
            &f32s(&[10., 0.5, 1. / 3., 0.], 1),
        )
        .unwrap(),
    );
    assert_eq!(p[0], 1024.);
    assert_eq!(p[1], 3.);
    assert!(p[2].is_nan());
    assert_eq!(p[3], 1.);
}

#[test]
fn lanes_broadcast_size_one_and_zero_fill_the_rest() {
    let x = f32s(&[1., 2., 3.], 3);
    let y = f32s(&[0., 0.], 2);
    // Lane 2 adds 0, not cos(0): fusion never changes a result.
    let r = ir::binary(Add, &x, &ir::unary(Cos, &y).unwrap()).unwrap();
    assert_eq!(read_f32(&r), vec![2., 3., 3.]);
    let r = ir::binary(Multiply, &x, &f32s(&[10.], 1)).unwrap();
    assert_eq!(read_f32(&r), vec![10., 20., 30.]);
    let r = ir::binary(Add, &x, &lit(&[1., 2.])).unwrap();
    assert_eq!(read_f32(&r), vec![2., 4., 3.]);
}

#[test]
fn lengths_take_the_largest_and_shorter_inputs_read_zero() {
    let long = f32s(&[1., 2., 3., 4.], 1);
    let short = f32s(&[10., 20.], 1);
    let r = ir::binary(Add, &long, &short).unwrap();
    assert_eq!(meta(&r), (DType::F32, 1, 4, false));
    assert_eq!(read_f32(&r), vec![11., 22., 3., 4.]);
    // A fused shorter node is zero past its length too (cos(0) would be 1).
    let r = ir::binary(Add, &long, &ir::unary(Cos, &short).unwrap()).unwrap();
    let v = read_f32(&r);
    assert_eq!(&v[2..], &[3., 4.]);
}

#[test]
fn constants_broadcast_over_rows_and_stay_constant() {
    let c = ir::binary(Add, &lit(&[1., 2.]), &lit(&[3.])).unwrap();
    assert_eq!(meta(&c), (DType::F32, 2, 1, true));
    assert_eq!(read_f32(&c), vec![4., 5.]);
    let r = ir::binary(Multiply, &f32s(&[1., 2., 3.], 1), &c).unwrap();
    assert_eq!(meta(&r), (DType::F32, 2, 3, false));
    assert_eq!(read_f32(&r), vec![4., 5., 8., 10., 12., 15.]);
}

#[test]
fn empty_and_single_row_inputs() {
    let empty = f32s(&[], 3);
    let r = ir::binary(Add, &empty, &lit(&[1.])).unwrap();
    assert_eq!(meta(&r), (DType::F32, 3, 0, false));
    assert!(read_f32(&r).is_empty());
    let one = f32s(&[1., 2.], 2);
    assert!(!one.meta.constant);
    assert_eq!(
        read_f32(&ir::unary(Sqrt, &one).unwrap()),
        vec![1., 2f32.sqrt()]
    );
}

#[test]
fn interleave_concatenates_rows() {
    let xyz = f32s(&[0., 0., 0., 1., 0., 0.], 3);
    let id = f32s(&[5., 6.], 1);
    let r = ir::interleave(&[xyz.clone(), id]).unwrap();
    assert_eq!(meta(&r), (DType::F32, 4, 2, false));
    assert_eq!(read_f32(&r), vec![0., 0., 0., 5., 1., 0., 0., 6.]);
    let mixed = ir::interleave(&[u8s(&[1, 2], 1), i8s(&[-1, -2], 1), lit(&[9.])]).unwrap();
    assert_eq!(mixed.meta.dtype, DType::F32);
    assert_eq!(read_f32(&mixed), vec![1., -1., 9., 2., -2., 9.]);
    let ints = ir::interleave(&[u8s(&[1, 2], 1), i8s(&[-1, -2], 1)]).unwrap();
    assert_eq!(read(&ints), ColumnData::I16(vec![1, -1, 2, -2]));
    assert!(std::rc::Rc::ptr_eq(
        &ir::interleave(std::slice::from_ref(&xyz)).unwrap(),
        &xyz
    ));
    assert_eq!(code(ir::interleave(&[])), ErrorCode::InvalidArgument);
}

#[test]
fn gather_reads_rows_and_zero_fills_bad_ids() {
    let values = f32s(&[10., 11., 20., 21., 30., 31.], 2);
    let r = ir::gather(&u32s(&[2, 0, 1], 1), &values).unwrap();
    assert_eq!(meta(&r), (DType::F32, 2, 3, false));
    assert_eq!(read_f32(&r), vec![30., 31., 10., 11., 20., 21.]);
    let r = ir::gather(&i32s(&[-1, 3, 1, i32::MAX], 1), &values).unwrap();
    assert_eq!(read_f32(&r), vec![0., 0., 0., 0., 20., 21., 0., 0.]);
    let r = ir::gather(&f32s(&[1.5, 2., f32::NAN], 1), &values).unwrap();
    assert_eq!(read_f32(&r), vec![0., 0., 30., 31., 0., 0.]);
    let r = ir::gather(&konst(ColumnData::U32(vec![1])), &values).unwrap();
    assert_eq!(meta(&r), (DType::F32, 2, 1, true));
    assert_eq!(read_f32(&r), vec![20., 21.]);
    let r = ir::gather(&u32s(&[1, 0], 1), &u8s(&[7, 8, 9, 10], 2)).unwrap();
    assert_eq!(read(&r), ColumnData::U8(vec![9, 10, 7, 8]));
    assert_eq!(
        code(ir::gather(&u32s(&[0, 1], 2), &values)),
        ErrorCode::InvalidArgument
    );
    // The gathered source is a computed node: it is materialized once, then read randomly.
    let doubled = ir::binary(Multiply, &values, &lit(&[2.])).unwrap();
    let r = ir::gather(&u32s(&[2, 2], 1), &doubled).unwrap();
    assert_eq!(read_f32(&r), vec![60., 62., 60., 62.]);
}

#[test]
fn extent_gives_min_and_max_per_channel() {
    let points = f32s(&[4., 9., -1., 8., 7., 3., 2., 12.], 2);
    let r = ir::extent(&points).unwrap();
    assert_eq!(meta(&r), (DType::F32, 2, 2, false));
    assert_eq!(read_f32(&r), vec![-1., 7., 3., 12.]);
    let with_nan = f32s(&[f32::NAN, 1., 5., f32::NAN, -2., f32::NAN], 2);
    assert_eq!(
        read_f32(&ir::extent(&with_nan).unwrap()),
        vec![-2., 5., 1., 1.]
    );
    let all_nan = read_f32(&ir::extent(&f32s(&[f32::NAN, f32::NAN], 1)).unwrap());
    assert!(all_nan.iter().all(|v| v.is_nan()));
    let inf = read_f32(&ir::extent(&f32s(&[f32::INFINITY, f32::NEG_INFINITY], 1)).unwrap());
    assert_eq!(inf, vec![f32::NEG_INFINITY, f32::INFINITY]);
    assert_eq!(
        read(&ir::extent(&i8s(&[-5, 7, 100, -128], 1)).unwrap()),
        ColumnData::I8(vec![-128, 100])
    );
    assert_eq!(
        read_u32(&ir::extent(&u32s(&[u32::MAX, 3, 0], 1)).unwrap()),
        vec![0, u32::MAX]
    );
    let e = ir::extent(&f32s(&[], 2)).unwrap();
    assert_eq!(code(evaluate(&e)), ErrorCode::EmptyInput);
    assert_eq!(
        read_f32(&ir::extent(&lit(&[3., 4.])).unwrap()),
        vec![3., 3., 4., 4.]
    );
}

#[test]
fn extent_over_many_blocks_with_a_fused_prologue() {
    let n: usize = 100_003;
    let xs: Vec<f32> = (0..n * 3)
        .map(|i| ((i * 7919) % 100_000) as f32 - 50_000.0)
        .collect();
    let x = f32s(&xs, 3);
    let r = ir::extent(&ir::binary(Multiply, &x, &lit(&[2.])).unwrap()).unwrap();
    let plan = explain(&r).unwrap();
    assert!(plan.contains("1 pass"), "{plan}");
    assert!(plan.contains("fused prologue"), "{plan}");
    let mut expected = vec![];
    for lane in 0..3 {
        let lane_values = xs.iter().skip(lane).step_by(3).map(|v| v * 2.0);
        expected.push(lane_values.clone().fold(f32::INFINITY, f32::min));
        expected.push(lane_values.fold(f32::NEG_INFINITY, f32::max));
    }
    assert_eq!(read_f32(&r), expected);
}

#[test]
fn sequence_generates_integers_and_validates() {
    assert_eq!(
        read_i32(&ir::sequence(5., 0., 1.).unwrap()),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        read_i32(&ir::sequence(4., 10., 2.).unwrap()),
        vec![10, 12, 14, 16]
    );
    assert_eq!(
        read_i32(&ir::sequence(3., 0., -3.).unwrap()),
        vec![0, -3, -6]
    );
    assert_eq!(
        read_i32(&ir::sequence(2., i32::MAX as f64, 1.).unwrap()),
        vec![i32::MAX, i32::MIN]
    );
    let s = ir::sequence(0., 0., 1.).unwrap();
    assert_eq!(meta(&s), (DType::I32, 1, 0, false));
    assert!(read_i32(&s).is_empty());
    for (count, start, step) in [
        (1.5, 0., 1.),
        (-1., 0., 1.),
        (3., 0.5, 1.),
        (3., 0., 0.),
        (3., 0., 1.5),
        (f64::NAN, 0., 1.),
    ] {
        assert_eq!(
            code(ir::sequence(count, start, step)),
            ErrorCode::InvalidArgument,
            "{count} {start} {step}"
        );
    }
    let long = read_i32(&ir::sequence(10_000., 7., 3.).unwrap());
    assert!(long.iter().enumerate().all(|(i, v)| *v == 7 + 3 * i as i32));
}

fn naive_segmented_map(starts: &[u32], vertex_count: u32) -> Vec<u32> {
    let mut out = vec![];
    for v in 0..vertex_count {
        let seg = starts.iter().rposition(|&s| s <= v).unwrap();
        out.extend([seg as u32, v - starts[seg]]);
    }
    out
}

#[test]
fn segmented_map_annotates_vertices() {
    let r = ir::segmented_map(&u32s(&[0, 3, 3, 6], 1), 8.).unwrap();
    assert_eq!(meta(&r), (DType::U32, 2, 8, false));
    assert_eq!(
        read_u32(&r),
        vec![0, 0, 0, 1, 0, 2, 2, 0, 2, 1, 2, 2, 3, 0, 3, 1]
    );
    // Empty segments at the start and the end.
    assert_eq!(
        read_u32(&ir::segmented_map(&u32s(&[0, 0, 2, 2], 1), 2.).unwrap()),
        vec![1, 0, 1, 1]
    );
    assert!(read_u32(&ir::segmented_map(&u32s(&[0], 1), 0.).unwrap()).is_empty());
    let r = ir::segmented_map(&i32s(&[0, 2], 1), 3.).unwrap();
    assert_eq!(read_u32(&r), vec![0, 0, 0, 1, 1, 0]);
}

#[test]
fn segmented_map_over_1600_generated_segments() {
    let starts = generated_segments(&mut Rng(42));
    let vertex_count = starts.last().unwrap() + 17;
    let r = ir::segmented_map(&u32s(&starts, 1), vertex_count as f64).unwrap();
    assert_eq!(read_u32(&r), naive_segmented_map(&starts, vertex_count));
}

#[test]
fn segmented_map_rejects_bad_segments() {
    let bad = [(vec![1u32, 2], 5.), (vec![0, 3, 2], 5.), (vec![0, 6], 5.)];
    for (starts, count) in bad {
        assert_eq!(
            code(ir::segmented_map(&u32s(&starts, 1), count)),
            ErrorCode::InvalidArgument,
            "{starts:?}"
        );
    }
    assert_eq!(
        code(ir::segmented_map(&i32s(&[-1, 0], 1), 3.)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::segmented_map(&f32s(&[0., 1.], 1), 3.)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::segmented_map(&u32s(&[0, 1], 2), 3.)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::segmented_map(&u32s(&[], 1), 3.)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::segmented_map(&u32s(&[0], 1), -1.)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::segmented_map(&u32s(&[0], 1), 2.5)),
        ErrorCode::InvalidArgument
    );
    // Computed segments are checked when they are evaluated.
    let computed = ir::binary(
        Subtract,
        &u32s(&[1, 2], 1),
        &konst(ColumnData::U32(vec![0])),
    )
    .unwrap();
    let r = ir::segmented_map(&computed, 4.).unwrap();
    assert_eq!(code(evaluate(&r)), ErrorCode::InvalidArgument);
}

#[test]
fn fround_splits_float64_into_high_and_low_parts() {
    let pi = std::f64::consts::PI;
    let cases = [
        pi,
        0.0,
        -0.0,
        16777216.0 + 1.0,
        16777216.0 - 1.0,
        16777216.0 + 3.0,
        9007199254740991.0,
        1e-40,
        5e-324,
    ];
    let r = ir::fround(&f64_words(&cases, 1)).unwrap();
    assert_eq!(meta(&r), (DType::F32, 2, cases.len() as u32, false));
    let v = read_f32(&r);
    let rows: Vec<(f32, f32)> = v.chunks(2).map(|c| (c[0], c[1])).collect();
    assert_eq!(
        rows[0],
        (
            std::f32::consts::PI,
            (pi - std::f32::consts::PI as f64) as f32
        )
    );
    assert!(rows[0].1 < 0.0 && rows[0].1.abs() < 1e-7);
    assert_eq!(rows[1].0.to_bits(), 0f32.to_bits());
    assert_eq!(rows[2].0.to_bits(), (-0f32).to_bits(), "-0 keeps its sign");
    assert_eq!(rows[2].1, 0.0);
    assert_eq!(rows[3], (16777216.0, 1.0));
    assert_eq!(rows[4], (16777215.0, 0.0));
    assert_eq!(rows[5], (16777220.0, -1.0));
    assert_eq!(rows[6], (9007199254740992.0, -1.0));
    assert!(
        rows[7].0 > 0.0 && rows[7].0 < f32::MIN_POSITIVE,
        "1e-40 is a float32 subnormal"
    );
    assert_eq!(rows[8], (0.0, 0.0), "float64 subnormal underflows");
    // Overflow, infinities and NaN behave like Math.fround.
    let r = ir::fround(&f64_words(
        &[3.5e38, f64::INFINITY, f64::NEG_INFINITY, f64::NAN],
        1,
    ))
    .unwrap();
    let v = read_f32(&r);
    assert_eq!((v[0], v[1]), (f32::INFINITY, f32::NEG_INFINITY));
    assert_eq!(v[2], f32::INFINITY);
    assert!(v[3].is_nan());
    assert_eq!(v[4], f32::NEG_INFINITY);
    assert!(v[6].is_nan() && v[7].is_nan());
}

#[test]
fn fround_keeps_the_row_layout_of_wider_rows() {
    let r = ir::fround(&f64_words(&[1.5, 2.25, 1e10 + 0.5, -3.0], 2)).unwrap();
    assert_eq!(meta(&r), (DType::F32, 4, 2, false));
    assert_eq!(
        read_f32(&r),
        vec![1.5, 2.25, 0.0, 0.0, 1e10, -3.0, 0.5, 0.0]
    );
    assert_eq!(code(ir::fround(&f32s(&[1.], 1))), ErrorCode::TypeMismatch);
    assert_eq!(
        code(ir::fround(&u32s(&[1, 2, 3], 3))),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn swizzle_reorders_and_duplicates_lanes() {
    let x = f32s(&[1., 2., 3., 4., 5., 6.], 3);
    let r = ir::swizzle(&x, &[2., 0., 0., 1.]).unwrap();
    assert_eq!(meta(&r), (DType::F32, 4, 2, false));
    assert_eq!(read_f32(&r), vec![3., 1., 1., 2., 6., 4., 4., 5.]);
    assert_eq!(
        read(&ir::swizzle(&u8s(&[1, 2], 2), &[1.]).unwrap()),
        ColumnData::U8(vec![2])
    );
    for bad in [&[3.][..], &[-1.], &[0.5], &[], &[f64::NAN]] {
        assert_eq!(
            code(ir::swizzle(&x, bad)),
            ErrorCode::InvalidArgument,
            "{bad:?}"
        );
    }
}

#[test]
fn select_picks_lanes_by_condition() {
    let cond = f32s(&[1., 0., f32::NAN], 1);
    let a = f32s(&[1., 2., 3., 4., 5., 6.], 2);
    let b = lit(&[-1.]);
    let r = ir::select(&cond, &a, &b).unwrap();
    assert_eq!(meta(&r), (DType::F32, 2, 3, false));
    assert_eq!(read_f32(&r), vec![1., 2., -1., -1., 5., 6.]);
    let lane_cond = u8s(&[1, 0, 0, 1], 2);
    let r = ir::select(&lane_cond, &i8s(&[1, 2, 3, 4], 2), &u8s(&[9, 9, 9, 9], 2)).unwrap();
    assert_eq!(read(&r), ColumnData::I16(vec![1, 9, 9, 4]));
    // Other row sizes follow the lane rule: the widest, lanes past a row 0.
    let r = ir::select(&f32s(&[1., 0.], 2), &f32s(&[1., 2., 3.], 3), &lit(&[9.])).unwrap();
    assert_eq!((r.meta.size, read_f32(&r)), (3, vec![1., 9., 9.]));
    let a3 = f32s(&[1., 2., 3., 4., 5., 6.], 3);
    let r = ir::select(&f32s(&[1., 0.], 1), &a3, &f32s(&[7., 8., 9., 10.], 2)).unwrap();
    assert_eq!(read_f32(&r), vec![1., 2., 3., 9., 10., 0.]);
}

#[test]
fn dot_length_and_equal_all_reduce_rows() {
    let a = f32s(&[1., 2., 3., 4., 5., 6.], 3);
    let b = f32s(&[1., 0., 1., 2., 2., 2.], 3);
    let d = ir::dot(&a, &b).unwrap();
    assert_eq!(meta(&d), (DType::F32, 1, 2, false));
    assert_eq!(read_f32(&d), vec![4., 30.]);
    let l = ir::length(&f32s(&[3., 4., 0., 0.], 2)).unwrap();
    assert_eq!(read_f32(&l), vec![5., 0.]);
    assert_eq!(read_f32(&ir::length(&i32s(&[-3, 4], 2)).unwrap()), vec![5.]);
    let e = ir::equal_all(&a, &f32s(&[1., 2., 3., 4., 5., 7.], 3)).unwrap();
    assert_eq!(meta(&e), (DType::U32, 1, 2, false));
    assert_eq!(read_u32(&e), vec![1, 0]);
    assert_eq!(
        read_u32(&ir::equal_all(&f32s(&[f32::NAN, -0.0], 2), &f32s(&[f32::NAN, 0.0], 2)).unwrap()),
        vec![0]
    );
    // Compared exactly across types: 16777217 is not 16777216.
    let e = ir::equal_all(&u32s(&[16777217, 5], 1), &i32s(&[16777216, 5], 1)).unwrap();
    assert_eq!(read_u32(&e), vec![0, 1]);
    // Other row sizes follow the lane rule: lanes past the narrower row read 0.
    let pairs = f32s(&[1., 2., 3., 4.], 2);
    assert_eq!(read_f32(&ir::dot(&a, &pairs).unwrap()), vec![5., 32.]);
    let padded = f32s(&[1., 2., 0., 4., 5., 6.], 3);
    let e = ir::equal_all(&padded, &f32s(&[1., 2., 4., 5.], 2)).unwrap();
    assert_eq!(read_u32(&e), vec![1, 0]);
}

#[test]
fn destroyed_nodes_fail_with_destroyed() {
    let x = f32s(&[1., 2.], 1);
    let y = ir::unary(Sqrt, &x).unwrap();
    x.destroy();
    assert_eq!(code(evaluate(&y)), ErrorCode::Destroyed);
    assert_eq!(code(ir::unary(Sin, &x)), ErrorCode::Destroyed);
    assert_eq!(code(read_value(&x, None, None)), ErrorCode::Destroyed);
    let z = f32s(&[4.], 1);
    let w = ir::unary(Sqrt, &z).unwrap();
    evaluate(&w).unwrap();
    w.destroy();
    assert_eq!(code(read_value(&w, None, None)), ErrorCode::Destroyed);
}

#[test]
fn read_value_clamps_row_ranges() {
    let x = f32s(&[1., 2., 3., 4., 5., 6.], 2);
    assert_eq!(
        read_value(&x, Some(1.), Some(2.)).unwrap(),
        ColumnData::F32(vec![3., 4.])
    );
    assert_eq!(
        read_value(&x, Some(-5.), Some(1.)).unwrap(),
        ColumnData::F32(vec![1., 2.])
    );
    assert_eq!(
        read_value(&x, Some(2.), Some(99.)).unwrap(),
        ColumnData::F32(vec![5., 6.])
    );
    assert_eq!(
        read_value(&x, Some(2.), Some(1.)).unwrap(),
        ColumnData::F32(vec![])
    );
    assert_eq!(
        code(read_value(&x, Some(f64::NAN), None)),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn explain_shows_one_pass_per_fused_region() {
    let x = f32s(&[1., 2.], 1);
    let y = f32s(&[3., 4.], 1);
    let r = ir::unary(
        Sqrt,
        &ir::binary(
            Add,
            &ir::binary(Multiply, &x, &x).unwrap(),
            &ir::binary(Multiply, &y, &y).unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    let text = explain(&r).unwrap();
    assert!(text.starts_with("plan on cpu: 1 pass\n"), "{text}");
    assert!(text.contains("fused elementwise, 4 ops"), "{text}");
    assert_eq!(read_f32(&r), vec![10f32.sqrt(), 20f32.sqrt()]);
    // A gather source is a separate pass, read by random access.
    let g = ir::gather(&u32s(&[1], 1), &ir::unary(Sqrt, &x).unwrap()).unwrap();
    assert!(explain(&g).unwrap().starts_with("plan on cpu: 2 passes"));
}

#[test]
fn clean_evaluate_keeps_roots_and_releases_intermediates() {
    let x = f32s(&[1., 4.], 1);
    let s = ir::unary(Sqrt, &x).unwrap();
    let g = ir::gather(&u32s(&[1, 0], 1), &s).unwrap();
    let e = ir::extent(&g).unwrap();
    pollster::block_on(clean_evaluate(
        &CpuDevice::shared(),
        &[g.clone(), e.clone()],
    ))
    .unwrap();
    assert!(g.has_output() && e.has_output());
    assert!(!s.has_output(), "the gathered intermediate is released");
    assert!(x.has_output(), "sources keep their data");
    assert_eq!(read_f32(&e), vec![1., 2.]);
    assert_eq!(
        read_f32(&s),
        vec![1., 2.],
        "a released intermediate re-evaluates on demand"
    );
}

#[test]
fn evaluation_is_cached() {
    let x = f32s(&[1., 2.], 1);
    let r = ir::unary(Exp, &x).unwrap();
    let first = evaluate(&r).unwrap();
    let second = evaluate(&r).unwrap();
    assert!(std::rc::Rc::ptr_eq(&first.chunks, &second.chunks));
}

#[test]
fn rows_wider_than_a_block_work() {
    let size = 5000u32;
    let xs: Vec<f32> = (0..size * 3).map(|i| i as f32).collect();
    let r = ir::binary(Add, &f32s(&xs, size), &lit(&[1.])).unwrap();
    let v = read_f32(&r);
    assert_eq!(v.len(), xs.len());
    assert!(v.iter().zip(&xs).all(|(a, b)| *a == b + 1.0));
}

#[test]
fn sources_validate_their_layout() {
    assert_eq!(
        code(ir::source(ColumnData::F32(vec![1., 2., 3.]), 2, false)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::source(ColumnData::F32(vec![1.]), 0, false)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::source(ColumnData::F32(vec![1., 2.]), 1, true)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ColumnData::from_le_bytes(DType::F32, &[0, 0, 0])),
        ErrorCode::InvalidArgument
    );
    let big = ir::sequence(4294967295., 0., 1.).unwrap();
    assert_eq!(big.meta.length, u32::MAX);
    assert_eq!(
        code(ir::sequence(4294967296., 0., 1.)),
        ErrorCode::LimitExceeded
    );
}

#[test]
fn explain_describes_an_evaluated_graph_too() {
    let x = f32s(&[1., 2.], 1);
    let r = ir::unary(Sin, &ir::binary(Multiply, &x, &lit(&[2.])).unwrap()).unwrap();
    let before = explain(&r).unwrap();
    evaluate(&r).unwrap();
    assert_eq!(explain(&r).unwrap(), before);
    assert!(before.contains("sin(multiply("), "{before}");
}
