//! Sparse arithmetic (union, intersection, scaling, unary ops), sums along an axis, `min`
//! and `max` with implicit zeros, `kron`, and a random matrix of a million entries, each on
//! the device against a dense reference worked out here.

use super::sparse::{coo_of, dense, evaluated, random_entries};
use super::*;
use gputable::ir::{ReduceKind, UnaryOp, DEFAULT_SPLIT_EVERY};
use gputable::sparse::{Format, SparseMatrix};
use gputable::DType;

/// The dense values of `m` (evaluated on the device), as f64.
async fn dense_of<T: Target>(m: &SparseMatrix) -> Vec<f64> {
    let d = m.to_dense().unwrap();
    evaluated::<T>(&[&d]).await;
    let data = read(&d).await;
    (0..data.len()).map(|i| data.get_f64(i)).collect()
}

fn f64s(values: Vec<f32>) -> Vec<f64> {
    values.into_iter().map(f64::from).collect()
}

fn number(value: f32) -> NodeRef {
    konst(ColumnData::F32(vec![value]))
}

pub async fn sparse_arithmetic_keeps_or_merges_structure<T: Target>() {
    let device = T::device();
    let shape = (3, 4);
    // A: duplicates at (0, 1), a stored zero at (1, 0); B shares (0, 1) and (2, 0).
    let (ar, ac, av) = (
        [0u32, 2, 0, 1, 2],
        [1u32, 3, 1, 0, 0],
        [2.0f32, -1.0, 1.0, 0.0, 4.0],
    );
    let (br, bc, bv) = ([0u32, 1, 2], [1u32, 2, 0], [5.0f32, 3.0, -4.0]);
    let a = coo_of(&device, &ar, &ac, &av, shape).await;
    let b = coo_of(&device, &br, &bc, &bv, shape)
        .await
        .to_csr(&device)
        .await
        .unwrap();
    let (da, db) = (dense(shape, &ar, &ac, &av), dense(shape, &br, &bc, &bv));
    let each = |f: fn(f64, f64) -> f64| -> Vec<f64> {
        da.iter().zip(&db).map(|(&x, &y)| f(x, y)).collect()
    };
    for (op, expected, nnz) in [
        (Add, each(|x, y| x + y), 5),
        (Subtract, each(|x, y| x - y), 5),
        (Multiply, each(|x, y| x * y), 2),
    ] {
        let c = a.combine(&device, op, &b).await.unwrap();
        assert_eq!(c.format, Format::Coo, "{op:?}: the left operand's format");
        assert_eq!(
            c.nnz(),
            nnz,
            "{op:?}: union or intersection, stored zeros kept"
        );
        assert_eq!(dense_of::<T>(&c).await, expected, "{op:?}");
        // CSC operands give CSC, canonical: rows sorted within each column.
        let csc = a.transpose().to_csr(&device).await.unwrap().transpose();
        let c = csc.combine(&device, op, &b).await.unwrap();
        assert_eq!((c.format, c.nnz()), (Format::Csc, nnz), "{op:?}");
        evaluated::<T>(&[&c.minor]).await;
        let (ptr, rows) = (read_u32(&c.major).await, read_u32(&c.minor).await);
        for j in 0..4 {
            let run = &rows[ptr[j] as usize..ptr[j + 1] as usize];
            assert!(run.windows(2).all(|w| w[0] < w[1]), "{op:?} column {j}");
        }
        assert_eq!(dense_of::<T>(&c).await, expected, "{op:?} in CSC");
    }
    // The values' types join: uint8 + float32 is float32; int32 differences wrap back.
    let ints = async |values: &[i32]| {
        SparseMatrix::coo(
            &device,
            &u32s(&[0, 1], 1),
            &u32s(&[0, 1], 1),
            &i32s(values, 1),
            (2, 2),
        )
        .await
        .unwrap()
    };
    let d = ints(&[i32::MIN, 7])
        .await
        .combine(&device, Subtract, &ints(&[1, 9]).await)
        .await
        .unwrap();
    assert_eq!(d.values.meta.dtype, DType::I32);
    assert_eq!(
        dense_of::<T>(&d).await,
        vec![i32::MAX as f64, 0.0, 0.0, -2.0]
    );
    // Unary ops with f(0) = 0 see each cell's sum: |-1 + 3| is 2, not 4.
    let dup = coo_of(&device, &[0, 0, 1], &[0, 0, 1], &[-1.0, 3.0, -9.0], (2, 2)).await;
    let abs = dup.unary(&device, UnaryOp::Abs).await.unwrap();
    assert_eq!((abs.format, abs.nnz()), (Format::Coo, 2));
    assert_eq!(dense_of::<T>(&abs).await, vec![2.0, 0.0, 0.0, 9.0]);
    let root = dup.unary(&device, UnaryOp::Sqrt).await.unwrap();
    let got = dense_of::<T>(&root).await;
    assert_eq!(got[0], 2f64.sqrt() as f32 as f64);
    assert!(
        got[3].is_nan() && got[1] == 0.0,
        "sqrt(-9) is NaN, implicit cells stay 0"
    );
    // Scaling keeps the structure (duplicates and all); an integer division sums them first.
    let twice = dup
        .scaled_now(Multiply, &number(2.0), true)
        .unwrap()
        .unwrap();
    assert_eq!(twice.nnz(), 3);
    assert_eq!(dense_of::<T>(&twice).await, vec![4.0, 0.0, 0.0, -18.0]);
    let half = dup
        .scaled_now(Divide, &number(2.0), false)
        .unwrap()
        .unwrap();
    assert_eq!(dense_of::<T>(&half).await, vec![1.0, 0.0, 0.0, -4.5]);
    let threes = ints(&[3, 3]).await;
    let dup_ints = SparseMatrix {
        major: ir::concat(&[threes.major.clone(), threes.major.clone()]).unwrap(),
        minor: ir::concat(&[threes.minor.clone(), threes.minor.clone()]).unwrap(),
        values: ir::concat(&[threes.values.clone(), threes.values.clone()]).unwrap(),
        ..threes
    };
    let four = konst(ColumnData::I32(vec![4]));
    assert!(dup_ints.scaled_now(Divide, &four, false).unwrap().is_none());
    let quarter = dup_ints
        .scaled(&device, Divide, &four, false)
        .await
        .unwrap();
    assert_eq!(
        dense_of::<T>(&quarter).await,
        vec![1.0, 0.0, 0.0, 1.0],
        "(3 + 3) / 4, not 3/4 + 3/4"
    );
    // What does not keep zeros is refused here (the JS API gives the dense result).
    for refused in [
        code(dup.unary(&device, UnaryOp::Cos).await),
        code(dup.scaled_now(Divide, &number(2.0), true)),
        code(dup.scaled_now(Add, &number(2.0), false)),
        code(a.combine(&device, Divide, &b).await),
        code(a.combine(&device, Add, &dup).await),
    ] {
        assert_eq!(refused, ErrorCode::InvalidArgument);
    }
}

pub async fn sparse_sums_and_extremes_count_implicit_zeros<T: Target>() {
    let device = T::device();
    let shape = (3, 4);
    let (rows, cols, values) = ([2u32, 0, 2, 0], [1u32, 3, 1, 0], [2.0f32, 5.0, 1.5, 7.0]);
    let a = coo_of(&device, &rows, &cols, &values, shape).await;
    let full = dense(shape, &rows, &cols, &values);
    let sum_all = a.sum(None, DEFAULT_SPLIT_EVERY).unwrap();
    let (by_col, by_row) = (
        a.sum(Some(0), DEFAULT_SPLIT_EVERY).unwrap(),
        a.sum(Some(1), DEFAULT_SPLIT_EVERY).unwrap(),
    );
    let (low, high) = (
        a.extreme(ReduceKind::Min, DEFAULT_SPLIT_EVERY).unwrap(),
        a.extreme(ReduceKind::Max, DEFAULT_SPLIT_EVERY).unwrap(),
    );
    evaluated::<T>(&[&sum_all, &by_col, &by_row, &low, &high]).await;
    assert_eq!(read_f32(&sum_all).await, vec![15.5]);
    let col_sums: Vec<f32> = (0..4)
        .map(|j| (0..3).map(|i| full[i * 4 + j]).sum::<f64>() as f32)
        .collect();
    assert_eq!(read_f32(&by_col).await, col_sums);
    assert_eq!(read_f32(&by_row).await, vec![12.0, 0.0, 3.5]);
    assert_eq!(
        (read_f32(&low).await, read_f32(&high).await),
        (vec![0.0], vec![7.0]),
        "implicit zeros count"
    );
    assert_eq!(
        code(a.sum(Some(2), DEFAULT_SPLIT_EVERY)),
        ErrorCode::InvalidArgument
    );
    // Every cell stored (with duplicates): the least cell sum, no implicit zero.
    let every = coo_of(
        &device,
        &[0, 0, 1, 1, 0],
        &[0, 1, 0, 1, 1],
        &[3.0, 4.0, 2.0, 6.0, -1.5],
        (2, 2),
    )
    .await;
    let (low, high) = (
        every.extreme(ReduceKind::Min, DEFAULT_SPLIT_EVERY).unwrap(),
        every.extreme(ReduceKind::Max, DEFAULT_SPLIT_EVERY).unwrap(),
    );
    evaluated::<T>(&[&low, &high]).await;
    assert_eq!(
        (read_f32(&low).await, read_f32(&high).await),
        (vec![2.0], vec![6.0])
    );
    // ... unless duplicates leave a cell empty: four entries, three cells.
    let gap = coo_of(
        &device,
        &[0, 0, 1, 1],
        &[0, 0, 0, 1],
        &[3.0, 4.0, 2.0, 6.0],
        (2, 2),
    )
    .await;
    let low = gap.extreme(ReduceKind::Min, DEFAULT_SPLIT_EVERY).unwrap();
    evaluated::<T>(&[&low]).await;
    assert_eq!(read_f32(&low).await, vec![0.0]);
    // The same where no entry is at (0, 0): the first entry's run counted as two cells,
    // so one cell stored twice in 1 x 2 looked like every cell stored (min 10).
    for (rows, cols, values, shape) in [
        (&[0u32, 0][..], &[1u32, 1][..], &[5.0f32, 5.0][..], (1, 2)),
        (&[1, 0, 1, 1], &[1, 1, 0, 1], &[2.0, 3.0, 4.0, 6.0], (2, 2)),
    ] {
        let gap = coo_of(&device, rows, cols, values, shape).await;
        let (low, high) = (
            gap.extreme(ReduceKind::Min, DEFAULT_SPLIT_EVERY).unwrap(),
            gap.extreme(ReduceKind::Max, DEFAULT_SPLIT_EVERY).unwrap(),
        );
        evaluated::<T>(&[&low, &high]).await;
        let most = dense(shape, rows, cols, values)
            .into_iter()
            .fold(0f64, f64::max);
        assert_eq!(
            (read_f32(&low).await, read_f32(&high).await),
            (vec![0.0], vec![most as f32]),
            "{shape:?}"
        );
    }
    // Negative cells, integer values, and no stored entry at all.
    let ints = SparseMatrix::coo(
        &device,
        &u32s(&[1, 1], 1),
        &u32s(&[2, 2], 1),
        &i32s(&[-5, -4], 1),
        (2, 3),
    )
    .await
    .unwrap();
    let (low, high, total) = (
        ints.extreme(ReduceKind::Min, DEFAULT_SPLIT_EVERY).unwrap(),
        ints.extreme(ReduceKind::Max, DEFAULT_SPLIT_EVERY).unwrap(),
        ints.sum(Some(1), DEFAULT_SPLIT_EVERY).unwrap(),
    );
    evaluated::<T>(&[&low, &high, &total]).await;
    assert_eq!(
        (
            read_i32(&low).await,
            read_i32(&high).await,
            read_i32(&total).await
        ),
        (vec![-9], vec![0], vec![0, -9])
    );
    let none = coo_of(&device, &[], &[], &[], (2, 2)).await;
    let (low, total) = (
        none.extreme(ReduceKind::Max, DEFAULT_SPLIT_EVERY).unwrap(),
        none.sum(None, DEFAULT_SPLIT_EVERY).unwrap(),
    );
    evaluated::<T>(&[&low, &total]).await;
    assert_eq!(
        (read_f32(&low).await, read_f32(&total).await),
        (vec![0.0], vec![0.0])
    );
}

pub async fn kron_places_every_pair_of_entries<T: Target>() {
    let device = T::device();
    let (a_shape, b_shape) = ((2, 3), (2, 2));
    let (ar, ac, av) = ([1u32, 0, 1], [2u32, 0, 2], [2.0f32, 3.0, 1.0]);
    let (br, bc, bv) = ([0u32, 1], [1u32, 0], [5.0f32, -1.0]);
    let a = coo_of(&device, &ar, &ac, &av, a_shape).await;
    let b = coo_of(&device, &br, &bc, &bv, b_shape).await;
    let (da, db) = (dense(a_shape, &ar, &ac, &av), dense(b_shape, &br, &bc, &bv));
    let mut expected = vec![0f64; 4 * 6];
    for (i, j, p, q) in (0..2).flat_map(|i| {
        (0..3).flat_map(move |j| (0..2).flat_map(move |p| (0..2).map(move |q| (i, j, p, q))))
    }) {
        expected[(i * 2 + p) * 6 + j * 2 + q] = da[i * 3 + j] * db[p * 2 + q];
    }
    let coo = a.kron(&device, &b).await.unwrap();
    assert_eq!((coo.format, coo.shape, coo.nnz()), (Format::Coo, (4, 6), 6));
    assert_eq!(dense_of::<T>(&coo).await, expected);
    let csr = a
        .to_csr(&device)
        .await
        .unwrap()
        .kron(&device, &b)
        .await
        .unwrap();
    assert_eq!(
        (csr.format, csr.nnz()),
        (Format::Csr, 4),
        "canonical: duplicates summed"
    );
    assert_eq!(dense_of::<T>(&csr).await, expected);
    let huge = coo_of(&device, &[0], &[0], &[1.0], (70_000, 1)).await;
    assert_eq!(code(huge.kron_entries(&huge)), ErrorCode::LimitExceeded);
}

pub async fn a_million_random_entries_convert_and_multiply<T: Target>() {
    let device = T::device();
    let (shape, entries) = ((4_000u32, 3_000u32), 1_000_000usize);
    let (rows, cols, values) = random_entries(shape, entries, 3, 1_000_003);
    let a = coo_of(&device, &rows, &cols, &values, shape).await;
    let csr = a.to_csr(&device).await.unwrap();
    let x: Vec<f32> = (0..shape.1 * 2).map(|j| (j % 5) as f32 - 2.0).collect();
    let spmm = csr.multiply(&f32s(&x, 2)).unwrap();
    let by_coo = a.multiply(&f32s(&x, 2)).unwrap();
    evaluated::<T>(&[&csr.major, &csr.minor, &csr.values, &spmm, &by_coo]).await;
    // The reference: cells summed in a map, rows walked in order.
    let mut cells = std::collections::BTreeMap::new();
    for ((&r, &c), &v) in rows.iter().zip(&cols).zip(&values) {
        *cells.entry((r, c)).or_insert(0f64) += v as f64;
    }
    let (ptr, idx, val) = (
        read_u32(&csr.major).await,
        read_u32(&csr.minor).await,
        read_f32(&csr.values).await,
    );
    assert_eq!(idx.len(), cells.len());
    let mut expected_ptr = vec![0u32; shape.0 as usize + 1];
    for &(r, _) in cells.keys() {
        expected_ptr[r as usize + 1] += 1;
    }
    for r in 0..shape.0 as usize {
        expected_ptr[r + 1] += expected_ptr[r];
    }
    assert_eq!(ptr, expected_ptr);
    assert!(cells
        .iter()
        .zip(idx.iter().zip(&val))
        .all(|((&(_, c), &v), (&i, &w))| c == i && v == w as f64));
    let mut expected = vec![0f64; shape.0 as usize * 2];
    for (&(r, c), &v) in &cells {
        for lane in 0..2 {
            expected[r as usize * 2 + lane] += v * x[c as usize * 2 + lane] as f64;
        }
    }
    assert_eq!(
        f64s(read_f32(&spmm).await),
        expected,
        "small integers: exact in any order"
    );
    assert_eq!(f64s(read_f32(&by_coo).await), expected);
}

pub async fn measures_see_the_least_integer_and_nan<T: Target>() {
    let device = T::device();
    // |-128| wraps in sint8: the norms, droptol and isZero convert before taking it.
    let int8 = SparseMatrix::coo(
        &device,
        &u32s(&[0, 1], 1),
        &u32s(&[0, 1], 1),
        &ir::cast(&i32s(&[-128, 1], 1), DType::I8).unwrap(),
        (2, 2),
    )
    .await
    .unwrap();
    assert_eq!(int8.norm(&device, 1.0).await.unwrap(), 129.0);
    assert_eq!(int8.norm(&device, f64::INFINITY).await.unwrap(), 128.0);
    assert_eq!(int8.opnorm(&device, 1.0).await.unwrap(), 128.0);
    assert_eq!(int8.droptol(&device, 0.0).await.unwrap().nnz(), 2);
    assert!(!int8.is_zero(&device).await.unwrap());
    // A stored NaN is nonzero, as fromDense counts it.
    let nan = coo_of(&device, &[0, 1], &[0, 1], &[f32::NAN, 0.0], (2, 2)).await;
    assert!(!nan.is_zero(&device).await.unwrap());
    let zeros = coo_of(&device, &[0, 1], &[0, 1], &[0.0, -0.0], (2, 2)).await;
    assert!(zeros.is_zero(&device).await.unwrap());
}

/// `droptol` compares each cell's value, the sum of its entries: a COO and a CSR given with
/// duplicates sum them before the comparison (a regression: each entry was compared alone,
/// so 2 and -1.9 in one cell came out as 2).
pub async fn droptol_compares_the_sums_of_duplicates<T: Target>() {
    let device = T::device();
    let shape = (2, 3);
    // (0, 0): 2 - 1.9 = 0.1, dropped; (1, 1): 0.5 + 0.75 = 1.25, kept though each entry is
    // not; (0, 2): 3 alone; (1, 0): -4 and 4 cancel.
    let (rows, cols, values) = (
        [0u32, 1, 0, 0, 1, 1, 1],
        [0u32, 1, 2, 0, 1, 0, 0],
        [2.0f32, 0.5, 3.0, -1.9, 0.75, -4.0, 4.0],
    );
    let expected = [0.0, 0.0, 3.0, 0.0, 1.25, 0.0];
    let coo = coo_of(&device, &rows, &cols, &values, shape).await;
    // The same entries as a CSR and a CSC holding duplicates, as given.
    let csr = SparseMatrix::compressed(
        &device,
        Format::Csr,
        &u32s(&[0, 3, 7], 1),
        &u32s(&[0, 2, 0, 1, 1, 0, 0], 1),
        &f32s(&[2.0, 3.0, -1.9, 0.5, 0.75, -4.0, 4.0], 1),
        shape,
    )
    .await
    .unwrap();
    let csc = SparseMatrix::compressed(
        &device,
        Format::Csc,
        &u32s(&[0, 4, 6, 7], 1),
        &u32s(&[0, 0, 1, 1, 1, 1, 0], 1),
        &f32s(&[2.0, -1.9, -4.0, 4.0, 0.5, 0.75, 3.0], 1),
        shape,
    )
    .await
    .unwrap();
    for m in [coo.clone(), csr, csc] {
        let format = m.format;
        let kept = m.droptol(&device, 1.0).await.unwrap();
        assert_eq!(kept.format, format);
        assert!(kept.canonical, "{format:?}");
        assert_eq!(kept.nnz(), 2, "{format:?}");
        assert_eq!(dense_of::<T>(&kept).await, expected, "{format:?}");
    }
    // Stored zeros of cancelling duplicates go with droptol(0) too.
    let nonzero = coo.droptol(&device, 0.0).await.unwrap();
    assert_eq!(nonzero.nnz(), 3);
    // No value is above an infinite tolerance, infinities included; NaN is kept, as always.
    let special = coo_of(
        &device,
        &[0, 0, 1],
        &[0, 1, 2],
        &[f32::INFINITY, f32::NAN, -5.0],
        shape,
    )
    .await;
    let kept = special.droptol(&device, f64::INFINITY).await.unwrap();
    assert_eq!(kept.nnz(), 1);
    assert!(read_f32(&kept.values).await[0].is_nan());
    assert_eq!(special.droptol(&device, 1e30).await.unwrap().nnz(), 2);
}

/// `droptol` of integer values compares their magnitudes exactly (through float32 it rounded
/// those past 2^24, so |16,777,217| was not above 16,777,216): sint32 with its least value,
/// uint32 past 2^31, sint8's -128, and thresholds below 0, between integers and past 2^32.
pub async fn integer_droptol_compares_exactly<T: Target>() {
    let device = T::device();
    let kept_values = |m: SparseMatrix| async move {
        evaluated::<T>(&[&m.values]).await;
        let data = read(&m.values).await;
        (0..data.len())
            .map(|i| data.get_f64(i) as i64)
            .collect::<Vec<_>>()
    };
    let column = |values: NodeRef| {
        let rows: Vec<u32> = (0..values.meta.length).collect();
        let shape = (values.meta.length, 1);
        let device = device.clone();
        async move {
            let zeros = vec![0; rows.len()];
            SparseMatrix::coo(&device, &u32s(&rows, 1), &u32s(&zeros, 1), &values, shape)
                .await
                .unwrap()
        }
    };
    let least = i32::MIN as i64;
    let sint32 = column(i32s(&[16_777_217, -16_777_217, 5, i32::MIN, 0], 1)).await;
    for (tol, expected) in [
        (16_777_216.0, vec![16_777_217, -16_777_217, least]),
        (2_147_483_647.0, vec![least]),
        (4.5, vec![16_777_217, -16_777_217, 5, least]),
        (5.0, vec![16_777_217, -16_777_217, least]),
        (-1.0, vec![16_777_217, -16_777_217, 5, least, 0]),
        (f64::INFINITY, vec![]),
    ] {
        let kept = sint32.droptol(&device, tol).await.unwrap();
        assert_eq!(kept_values(kept).await, expected, "sint32, tol {tol}");
    }
    let uint32 = column(u32s(&[u32::MAX, 3, 1 << 31], 1)).await;
    for (tol, expected) in [
        (4_294_967_294.0, vec![u32::MAX as i64]),
        (4_294_967_295.0, vec![]),
        (2_147_483_647.0, vec![u32::MAX as i64, 1 << 31]),
    ] {
        let kept = uint32.droptol(&device, tol).await.unwrap();
        assert_eq!(kept_values(kept).await, expected, "uint32, tol {tol}");
    }
    let sint8 = column(ir::cast(&i32s(&[-128, 127], 1), DType::I8).unwrap()).await;
    let kept = sint8.droptol(&device, 127.0).await.unwrap();
    assert_eq!(kept_values(kept).await, vec![-128]);
}

/// SpMV and SpMM compute each product inside the segmented sum that adds it (one kernel,
/// no column of products stored), as `explain` shows: empty rows, a row longer than a CPU
/// block, two lanes, integer values, `alpha` fused after the sum. Values stored in chunks
/// make the products a pass of their own, with the same sums.
pub async fn products_are_computed_where_the_row_sums_read_them<T: Target>() {
    let device = T::fresh().await;
    let lengths = [0usize, 3000, 0, 1, 5, 2];
    let columns = 4000u32;
    let (mut ptr, mut idx, mut val) = (vec![0u32], Vec::new(), Vec::new());
    for (r, &len) in lengths.iter().enumerate() {
        for k in 0..len {
            idx.push((k * (r + 1)) as u32 % columns);
            val.push((k % 5) as i32 - 2);
        }
        ptr.push(idx.len() as u32);
    }
    let x: Vec<i32> = (0..columns as i32 * 2).map(|j| j % 11 - 5).collect();
    let expected = |lanes: usize, alpha: i32| -> Vec<f64> {
        let mut y = vec![0f64; lengths.len() * lanes];
        for r in 0..lengths.len() {
            for k in ptr[r] as usize..ptr[r + 1] as usize {
                for l in 0..lanes {
                    let product = val[k] * x[idx[k] as usize * lanes + l];
                    y[r * lanes + l] += (alpha * product) as f64;
                }
            }
        }
        y
    };
    let floats = |v: &[i32]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let matrix = async |values: &NodeRef| {
        let (ptr, idx) = (u32s(&ptr, 1), u32s(&idx, 1));
        SparseMatrix::compressed(&device, Format::Csr, &ptr, &idx, values, (6, columns))
            .await
            .unwrap()
    };
    let a = matrix(&f32s(&floats(&val), 1)).await;
    let spmv = a
        .multiply_add(&f32s(&floats(&x[..4000]), 1), 3.0, 0.0, None)
        .unwrap();
    let spmm = a.multiply(&f32s(&floats(&x), 2)).unwrap();
    let integers = matrix(&i32s(&val, 1))
        .await
        .multiply(&i32s(&x[..4000], 1))
        .unwrap();
    for (node, computed_where_read) in [(&spmv, 2), (&spmm, 2), (&integers, 2)] {
        let text = gputable::engine::explain(&device, node).unwrap();
        let line =
            format!("; {computed_where_read} more computed at the rows a segmented sum reads");
        assert!(
            text.starts_with(&format!("plan on {}: 1 pass\n", device.name())),
            "{text}"
        );
        assert!(text.contains(&line), "{text}");
    }
    let before = device.core().counters.stats().kernels;
    gputable::engine::evaluate(&device, std::slice::from_ref(&spmv))
        .await
        .unwrap();
    assert_eq!(
        device.core().counters.stats().kernels - before,
        1,
        "one kernel"
    );
    gputable::engine::evaluate(&device, &[spmm.clone(), integers.clone()])
        .await
        .unwrap();
    for node in [&spmv, &spmm, &integers] {
        assert_eq!(
            node.home().unwrap().device,
            device.core().id,
            "on the device"
        );
    }
    assert_eq!(f64s(read_f32(&spmv).await), expected(1, 3));
    assert_eq!(f64s(read_f32(&spmm).await), expected(2, 1));
    let integer_sums: Vec<f64> = read_i32(&integers)
        .await
        .into_iter()
        .map(f64::from)
        .collect();
    assert_eq!(integer_sums, expected(1, 1));
    // Values in two chunks: the products are stored first (two passes), same sums.
    let halves = [
        val.len() as u32 / 2,
        val.len() as u32 - val.len() as u32 / 2,
    ];
    let chunked_values = chunked(ColumnData::F32(floats(&val)), 1, &halves);
    let stored = matrix(&chunked_values)
        .await
        .multiply(&f32s(&floats(&x[..4000]), 1))
        .unwrap();
    let text = gputable::engine::explain(&device, &stored).unwrap();
    assert!(!text.contains("computed at the rows"), "{text}");
    gputable::engine::evaluate(&device, std::slice::from_ref(&stored))
        .await
        .unwrap();
    assert_eq!(f64s(read_f32(&stored).await), expected(1, 1));
    // Offsets that go down (outside the contract; no matrix makes them) sum as the stored
    // values do on every backend: the CPU once computed only the rows between the block's
    // first and last offsets, cutting the first segment short.
    let one_to_ten: Vec<f32> = (1..=10).map(|v| v as f32).collect();
    let computed = ir::binary(Multiply, &f32s(&one_to_ten, 1), &number(1.0)).unwrap();
    let down = ir::segment_sum(&computed, &u32s(&[0, 10, 3], 1)).unwrap();
    evaluated::<T>(&[&down]).await;
    assert_eq!(read_f32(&down).await, vec![55.0, 0.0]);
}

/// A row longer than the rows the CPU computes where read at once (65,536) is summed a
/// piece at a time into one sum, in row order; the CPU's buffer for those values counts in
/// the memory projection. On WebGPU and WebGL2 the row is summed in blocks: llvmpipe and
/// lavapipe, our test drivers, end an invocation's loops after 65,535 iterations in all,
/// and summed 65,535 of its rows when one loop ran over them (ir/segment.rs).
pub async fn a_long_row_is_summed_where_read_a_piece_at_a_time<T: Target>() {
    let device = T::fresh().await;
    let on_cpu = device.kernel_words().is_none();
    let long = 150_000u32;
    let columns = 1000u32;
    let lengths = [0, long, 3];
    let mut ptr = vec![0u32];
    for len in lengths {
        ptr.push(ptr.last().unwrap() + len);
    }
    let nnz = *ptr.last().unwrap() as usize;
    let idx: Vec<u32> = (0..nnz as u32).map(|k| k * 7 % columns).collect();
    let val: Vec<f32> = (0..nnz).map(|k| (k % 5) as f32 - 2.0).collect();
    let x: Vec<f32> = (0..columns).map(|j| (j % 11) as f32 - 5.0).collect();
    // Small integers: every partial sum is exact in float32, in any order.
    let mut expected = vec![0f32; lengths.len()];
    for r in 0..lengths.len() {
        for k in ptr[r] as usize..ptr[r + 1] as usize {
            expected[r] += val[k] * x[idx[k] as usize];
        }
    }
    let a = SparseMatrix::compressed(
        &device,
        Format::Csr,
        &u32s(&ptr, 1),
        &u32s(&idx, 1),
        &f32s(&val, 1),
        (lengths.len() as u32, columns),
    )
    .await
    .unwrap();
    let y = a.multiply(&f32s(&x, 1)).unwrap();
    let text = gputable::engine::explain(&device, &y).unwrap();
    assert!(
        text.contains("computed at the rows a segmented sum reads"),
        "{text}"
    );
    if on_cpu {
        // The products' buffer: 65,536 float32 rows beside the 12-byte output.
        let projected = text
            .lines()
            .find_map(|l| l.split_once("projected device memory: at most "))
            .and_then(|(_, l)| l.split(' ').next()?.parse::<u64>().ok());
        assert!(projected.is_some_and(|bytes| bytes >= 1 << 18), "{text}");
    }
    // Stored first (no fusion): the sum of a long segment alone, and of ones.
    let unfused = a.multiply(&f32s(&x, 1)).unwrap();
    let ones = ir::segment_sum(&f32s(&vec![1.0; nnz], 1), &u32s(&ptr, 1)).unwrap();
    let roots = [unfused.clone(), ones.clone()];
    gputable::engine::evaluate_with(&device, &roots, gputable::plan::Fusion::Off)
        .await
        .unwrap();
    assert_eq!(read_f32(&unfused).await, expected);
    assert_eq!(read_f32(&ones).await, vec![0.0, long as f32, 3.0]);
    gputable::engine::evaluate(&device, std::slice::from_ref(&y))
        .await
        .unwrap();
    assert_eq!(y.home().unwrap().device, device.core().id);
    assert_eq!(read_f32(&y).await, expected);
}
