//! Nulls through expressions (api.md "Nulls"), against plain references on every backend:
//! elementwise ops and comparisons are null where a row they read is, `select` where its
//! condition or the branch taken is; views and gathers move the flags with the rows;
//! reductions, `count` and `where` skip null rows; `isNull`, `isValid` and `fillNull`.

use super::reduce::{as_f64, column_of, sample};
use super::*;
use gputable::error::ErrorCode;
use gputable::ir::{Predicate, ReduceKind};
use gputable::DType;

/// A chunked column of `values` whose rows are null where `valid` is 0.
fn nullable(values: ColumnData, valid: &[u8], chunks: &[u32]) -> NodeRef {
    let x = chunked(values, 1, chunks);
    let flags = chunked(ColumnData::U8(valid.to_vec()), 1, chunks);
    ir::with_validity(&x, Some(&flags)).unwrap()
}

/// Evaluates `root` on the target; its values and null flags (1 valid), both on its device.
async fn values_and_flags<T: Target>(root: &NodeRef) -> (Vec<f64>, Option<Vec<u8>>) {
    let device = T::device();
    gputable::evaluator::evaluate_on(&device, std::slice::from_ref(root))
        .await
        .unwrap();
    // On the device (the CPU reads host memory in place).
    let id = device.core().id;
    let here =
        |n: &NodeRef| n.output_on(id).is_some() || (!T::TRANSFERS && n.host_output().is_some());
    assert!(here(root), "{root:?} was computed elsewhere");
    let flags = match root.validity() {
        Some(v) => {
            assert!(here(v), "{root:?}'s null flags were computed elsewhere");
            match read(v).await {
                ColumnData::U8(flags) => Some(flags),
                other => panic!("null flags of {:?}", other.dtype()),
            }
        }
        None => None,
    };
    (as_f64(&read(root).await), flags)
}

/// Checks the values of valid rows (NaN equal to NaN) and the flags against references.
fn assert_rows(what: &str, actual: &(Vec<f64>, Option<Vec<u8>>), values: &[f64], valid: &[u8]) {
    let flags = actual
        .1
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no null flags"));
    assert_eq!(flags, valid, "{what}: null flags");
    assert_eq!(actual.0.len(), values.len(), "{what}: rows");
    for (r, (a, e)) in actual.0.iter().zip(values).enumerate() {
        let same = a == e || (a.is_nan() && e.is_nan());
        assert!(
            valid[r] == 0 || same,
            "{what}: row {r}: device {a} vs reference {e}"
        );
    }
}

fn pattern(n: usize, every: usize, at: usize) -> Vec<u8> {
    (0..n).map(|i| u8::from(i % every != at)).collect()
}

pub async fn nulls_follow_elementwise_ops_and_reductions_skip_them<T: Target>() {
    let mut rng = Rng(41);
    let n = 1000;
    for dtype in DType::ALL {
        let (xv, yv) = (sample(dtype, n, &mut rng), sample(dtype, n, &mut rng));
        let (x_valid, y_valid) = (pattern(n, 5, 2), pattern(n, 7, 0));
        let x = nullable(column_of(dtype, &xv), &x_valid, &[300, 0, 450, 250]);
        let y = nullable(column_of(dtype, &yv), &y_valid, &[500, 500]);
        let both: Vec<u8> = (0..n).map(|r| x_valid[r] & y_valid[r]).collect();

        // One nullable input: its flags are the output's (no work of their own).
        let shifted = ir::binary(Add, &x, &lit(&[1.0])).unwrap();
        assert_eq!(shifted.validity().unwrap().id, x.validity().unwrap().id);
        let expected: Vec<f64> = xv.iter().map(|v| (*v as f32 + 1.0) as f64).collect();
        let got = values_and_flags::<T>(&shifted).await;
        assert_rows(&format!("{dtype:?} + 1"), &got, &expected, &x_valid);

        // Two: null where either is.
        let diff = ir::binary(
            Subtract,
            &ir::cast(&x, DType::F32).unwrap(),
            &ir::cast(&y, DType::F32).unwrap(),
        )
        .unwrap();
        let expected: Vec<f64> = (0..n)
            .map(|r| (xv[r] as f32 - yv[r] as f32) as f64)
            .collect();
        let got = values_and_flags::<T>(&diff).await;
        assert_rows(&format!("{dtype:?} x - y"), &got, &expected, &both);

        // Comparisons and logic with a null are null.
        let greater = ir::predicate(Predicate::Greater, &[x.clone(), y.clone()]).unwrap();
        let expected: Vec<f64> = (0..n).map(|r| f64::from(u8::from(xv[r] > yv[r]))).collect();
        let got = values_and_flags::<T>(&greater).await;
        assert_rows(&format!("{dtype:?} x > y"), &got, &expected, &both);
        let either = ir::fold_logic(Predicate::Or, &[greater.clone(), x.clone()]).unwrap();
        assert!(either.validity().is_some(), "or of a null is null");

        // count and reductions skip null rows; `where` drops rows whose mask is null.
        let counted = ir::count(&greater, None).unwrap();
        gputable::engine::evaluate(&T::device(), std::slice::from_ref(&counted))
            .await
            .unwrap();
        let kept = (0..n).filter(|&r| both[r] == 1 && xv[r] > yv[r]).count() as u32;
        assert_eq!(read_u32(&counted).await, vec![kept], "{dtype:?} count");
        let sum = ir::reduce_where(ReduceKind::Sum, &diff, None, &greater, None, 4).unwrap();
        gputable::engine::evaluate(&T::device(), std::slice::from_ref(&sum))
            .await
            .unwrap();
        let expected: f64 = (0..n)
            .filter(|&r| both[r] == 1 && xv[r] > yv[r])
            .map(|r| (xv[r] as f32 - yv[r] as f32) as f64)
            .sum();
        let got = as_f64(&read(&sum).await)[0];
        assert!(
            (got - expected).abs() <= 1e-3 * expected.abs().max(1.0),
            "{dtype:?} sum where: {got} vs {expected}"
        );
    }
    // The example: mean of [1, null, 3] times 1 is 2, as the mean of the column.
    let x = nullable(ColumnData::F32(vec![1.0, 0.0, 3.0]), &[1, 0, 1], &[3]);
    for column in [x.clone(), ir::binary(Multiply, &x, &lit(&[1.0])).unwrap()] {
        let mean = ir::reduce(ReduceKind::Mean, &column, None, 4).unwrap();
        gputable::engine::evaluate(&T::device(), std::slice::from_ref(&mean))
            .await
            .unwrap();
        assert_eq!(read_f32(&mean).await, vec![2.0]);
    }
}

pub async fn null_masks_and_fill_null<T: Target>() {
    let n = 700;
    let valid = pattern(n, 3, 1);
    let values: Vec<i32> = (0..n as i32).map(|i| i - 300).collect();
    let x = nullable(ColumnData::I32(values.clone()), &valid, &[100, 0, 600]);
    let null_rows: Vec<f64> = valid.iter().map(|&v| f64::from(1 - v)).collect();
    let valid_rows: Vec<f64> = valid.iter().map(|&v| f64::from(v)).collect();
    for (what, mask, expected) in [
        ("isNull", ir::is_null(&x).unwrap(), &null_rows),
        ("isValid", ir::is_valid(&x).unwrap(), &valid_rows),
    ] {
        assert_eq!(mask.meta.dtype, DType::U8);
        let (got, flags) = values_and_flags::<T>(&mask).await;
        assert_eq!(&got, expected, "{what}");
        assert!(flags.is_none(), "{what} is never null");
    }
    // fillNull: x's type (a float literal converted), no nulls.
    let filled = ir::fill_null(&x, &lit(&[-7.0])).unwrap();
    assert_eq!(filled.meta.dtype, DType::I32);
    let (got, flags) = values_and_flags::<T>(&filled).await;
    assert!(flags.is_none(), "fillNull gives no nulls");
    let expected: Vec<f64> = (0..n)
        .map(|r| {
            if valid[r] == 1 {
                values[r] as f64
            } else {
                -7.0
            }
        })
        .collect();
    assert_eq!(got, expected);
    // A column without nulls: none null, fillNull is the column itself.
    let plain = chunked(ColumnData::F32(vec![1.0, f32::NAN, 2.0]), 1, &[2, 1]);
    let (got, _) = values_and_flags::<T>(&ir::is_null(&plain).unwrap()).await;
    assert_eq!(got, vec![0.0; 3]);
    let (got, _) = values_and_flags::<T>(&ir::is_valid(&plain).unwrap()).await;
    assert_eq!(got, vec![1.0; 3]);
    assert_eq!(ir::fill_null(&plain, &lit(&[0.0])).unwrap().id, plain.id);
    // A constant is never null.
    let constant = ir::is_null(&lit(&[3.0])).unwrap();
    assert!(constant.meta.constant);
    // fillNull's value has size 1 or x's.
    let wide = f32s(&[1.0, 2.0], 2);
    assert_eq!(code(ir::fill_null(&x, &wide)), ErrorCode::InvalidArgument);
}

pub async fn select_is_null_where_its_condition_or_the_branch_taken_is<T: Target>() {
    let n = 600;
    let (x_valid, c_valid) = (pattern(n, 4, 3), pattern(n, 9, 5));
    let xv: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let cv: Vec<f32> = (0..n).map(|i| (i % 3) as f32).collect();
    let x = nullable(ColumnData::F32(xv.clone()), &x_valid, &[250, 350]);
    let cond = nullable(ColumnData::F32(cv.clone()), &c_valid, &[600]);
    // select(isValid(x), x, 0): every row valid.
    let guarded = ir::select(&ir::is_valid(&x).unwrap(), &x, &lit(&[0.0])).unwrap();
    let expected: Vec<f64> = (0..n)
        .map(|r| if x_valid[r] == 1 { xv[r] as f64 } else { 0.0 })
        .collect();
    let got = values_and_flags::<T>(&guarded).await;
    assert_rows("select(isValid(x), x, 0)", &got, &expected, &vec![1; n]);
    // A nullable condition: null where it is; else where the branch taken is.
    let chosen = ir::select(&cond, &lit(&[-1.0]), &x).unwrap();
    let valid: Vec<u8> = (0..n)
        .map(|r| c_valid[r] & if cv[r] != 0.0 { 1 } else { x_valid[r] })
        .collect();
    let expected: Vec<f64> = (0..n)
        .map(|r| if cv[r] != 0.0 { -1.0 } else { xv[r] as f64 })
        .collect();
    let got = values_and_flags::<T>(&chosen).await;
    assert_rows("select(cond, -1, x)", &got, &expected, &valid);
}

pub async fn views_and_gathers_move_nulls_with_their_rows<T: Target>() {
    let n = 900;
    let valid = pattern(n, 6, 4);
    let xv: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let x = nullable(
        ColumnData::F32(xv.iter().map(|&v| v as f32).collect()),
        &valid,
        &[400, 0, 500],
    );
    let plain = f32s(&[5.0, 6.0], 1);

    let sliced = ir::slice(&x, 350.0, 720.0).unwrap();
    let got = values_and_flags::<T>(&sliced).await;
    assert_rows("slice", &got, &xv[350..720], &valid[350..720]);

    let joined = ir::concat(&[plain.clone(), x.clone(), lit(&[9.0])]).unwrap();
    let mut values = vec![5.0, 6.0];
    values.extend(&xv);
    values.push(9.0);
    let mut flags = vec![1, 1];
    flags.extend(&valid);
    flags.push(1);
    let got = values_and_flags::<T>(&joined).await;
    assert_rows("concat", &got, &values, &flags);

    let rechunked = ir::rechunk(&x, vec![100, 800].into()).unwrap();
    let got = values_and_flags::<T>(&rechunked).await;
    assert_rows("rechunk", &got, &xv, &valid);

    // A gather is null where its id is, or the row it reads.
    let ids: Vec<u32> = (0..300u32).map(|i| (i * 7919) % n as u32).collect();
    let id_valid = pattern(300, 10, 9);
    let id_node = nullable(ColumnData::U32(ids.clone()), &id_valid, &[150, 150]);
    let gathered = ir::gather(&id_node, &x).unwrap();
    let expected: Vec<f64> = ids.iter().map(|&i| xv[i as usize]).collect();
    let flags: Vec<u8> = (0..300)
        .map(|k| id_valid[k] & valid[ids[k] as usize])
        .collect();
    let got = values_and_flags::<T>(&gathered).await;
    assert_rows("gather", &got, &expected, &flags);

    // searchSorted: a null query has a null answer.
    let sorted = f32s(&[0.0, 100.0, 200.0, 800.0], 1);
    let found = ir::search_sorted(&sorted, &x, false).unwrap();
    let expected: Vec<f64> = xv
        .iter()
        .map(|&v| {
            [0.0, 100.0, 200.0, 800.0]
                .iter()
                .filter(|&&s| s < v)
                .count() as f64
        })
        .collect();
    let got = values_and_flags::<T>(&found).await;
    assert_rows("searchSorted", &got, &expected, &valid);

    // A sorted column's null rows, last or first, hold no value: a search finds among the
    // others (it landed on the zeros a sort leaves in them).
    let query_values = [-1.0, 0.5, 2.0, 7.0, 100.0, f64::NAN];
    let queries = f32s(&query_values.map(|q| q as f32), 1);
    for dtype in [DType::F32, DType::I32] {
        let nan = match dtype {
            DType::F32 => f64::NAN,
            _ => 9.0,
        };
        for (values, flags) in [
            (
                vec![1.0, 2.0, 2.0, 7.0, 0.0, 0.0, 0.0],
                vec![1, 1, 1, 1, 0, 0, 0],
            ),
            (
                vec![0.0, 0.0, 1.0, 2.0, 2.0, 7.0, nan],
                vec![0, 0, 1, 1, 1, 1, 1],
            ),
        ] {
            let sorted = nullable(column_of(dtype, &values), &flags, &[3, 4]);
            let present: Vec<f64> = (values.iter().zip(&flags))
                .filter(|(_, &f)| f == 1)
                .map(|(&v, _)| v)
                .collect();
            for upper in [false, true] {
                let found = ir::search_sorted(&sorted, &queries, upper).unwrap();
                // NaN after every number.
                let below = |v: f64, q: f64| match (v.is_nan(), q.is_nan()) {
                    (false, false) => v < q || (upper && v == q),
                    (false, true) => true,
                    (true, false) => false,
                    (true, true) => upper,
                };
                let expected: Vec<f64> = (query_values.iter())
                    .map(|&q| present.iter().filter(|&&v| below(v, q)).count() as f64)
                    .collect();
                let got = values_and_flags::<T>(&found).await.0;
                assert_eq!(got, expected, "{dtype:?} {flags:?}, upper {upper}");
            }
        }
    }
}

/// A column whose rows are all null has no value to reduce: every reduction but `sum` (0)
/// is `EMPTY_INPUT`, as a `where` mask keeping no row is (a user's trial: `min` of an all-null
/// Int32 column gave 0, a value not in it). One valid row is its own minimum.
pub async fn reductions_of_nulls_alone_are_empty_input<T: Target>() {
    let n = 3000;
    for dtype in [DType::I32, DType::F32, DType::U8] {
        let values: Vec<f64> = (0..n).map(|i| (i % 50) as f64 + 1.0).collect();
        let none = nullable(column_of(dtype, &values), &vec![0; n], &[1000, 0, 2000]);
        for kind in ReduceKind::ALL
            .into_iter()
            .filter(|&k| k != ReduceKind::Sum)
        {
            let reduced = ir::reduce(kind, &none, None, 4).unwrap();
            let error = evaluate::<T>(std::slice::from_ref(&reduced))
                .await
                .unwrap_err();
            assert_eq!(
                error.code,
                ErrorCode::EmptyInput,
                "{kind:?} of {dtype:?}: {error}"
            );
        }
        let sum = ir::reduce(ReduceKind::Sum, &none, None, 4).unwrap();
        assert_eq!(
            values_and_flags::<T>(&sum).await.0,
            vec![0.0],
            "sum of {dtype:?}"
        );
        let mut one = vec![0; n];
        one[2500] = 1;
        let single = nullable(column_of(dtype, &values), &one, &[1000, 0, 2000]);
        let min = ir::reduce(ReduceKind::Min, &single, None, 4).unwrap();
        let argmax = ir::reduce(ReduceKind::ArgMax, &single, None, 4).unwrap();
        assert_eq!(values_and_flags::<T>(&min).await.0, vec![values[2500]]);
        assert_eq!(values_and_flags::<T>(&argmax).await.0, vec![2500.0]);
    }
}
