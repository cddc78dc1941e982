//! Sparse matrices (src/sparse/) on each device against a dense reference worked out here:
//! validation, COO with duplicates and stored zeros to canonical CSR, row-major COO, the
//! free transpose, SpMV and SpMM, and a random matrix of 100,000 entries.

use super::*;
use gputable::sparse::{Format, SparseMatrix};
use gputable::DType;

/// Dense m x n of COO entries (duplicates summed).
pub(super) fn dense(shape: (u32, u32), rows: &[u32], cols: &[u32], values: &[f32]) -> Vec<f64> {
    let mut out = vec![0f64; (shape.0 * shape.1) as usize];
    for ((&r, &c), &v) in rows.iter().zip(cols).zip(values) {
        out[(r * shape.1 + c) as usize] += v as f64;
    }
    out
}

/// A COO matrix of these entries on `device`.
pub(super) async fn coo_of<D: Backend>(
    device: &D,
    rows: &[u32],
    cols: &[u32],
    values: &[f32],
    shape: (u32, u32),
) -> SparseMatrix {
    SparseMatrix::coo(
        device,
        &u32s(rows, 1),
        &u32s(cols, 1),
        &f32s(values, 1),
        shape,
    )
    .await
    .unwrap()
}

/// `entries` random COO entries of `shape` (duplicates likely), with whole values in
/// `-spread..=spread`: exact sums in any order.
pub(super) fn random_entries(
    shape: (u32, u32),
    entries: usize,
    spread: u64,
    seed: u64,
) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let mut draw = |bound: u64| -> Vec<u64> { (0..entries).map(|_| rng.below(bound)).collect() };
    let rows = draw(shape.0 as u64).into_iter().map(|r| r as u32).collect();
    let cols = draw(shape.1 as u64).into_iter().map(|c| c as u32).collect();
    let values = draw(2 * spread + 1)
        .into_iter()
        .map(|v| v as f32 - spread as f32)
        .collect();
    (rows, cols, values)
}

pub(super) async fn evaluated<T: Target>(nodes: &[&NodeRef]) {
    let roots: Vec<NodeRef> = nodes.iter().map(|n| (*n).clone()).collect();
    evaluate::<T>(&roots).await.unwrap();
    for root in &roots {
        if root.meta.length > 0 {
            assert_eq!(
                root.home().unwrap().device,
                T::device().core().id,
                "{root:?}"
            );
        }
    }
}

pub async fn coo_with_duplicates_becomes_canonical_csr<T: Target>() {
    let device = T::device();
    // 4 x 5: unsorted, a duplicate (1, 3) twice, a stored zero at (3, 0), empty row 2 and
    // empty columns 2 and 4.
    let rows = [3u32, 1, 0, 1, 3, 1, 0];
    let cols = [0u32, 3, 1, 0, 3, 3, 0];
    let values = [0.0f32, 2.0, 1.5, -1.0, 4.0, 0.5, 7.0];
    let a = coo_of(&device, &rows, &cols, &values, (4, 5)).await;
    let before = device.core().counters.stats();
    let csr = a.to_csr(&device).await.unwrap();
    evaluated::<T>(&[&csr.major, &csr.minor, &csr.values]).await;
    assert!(
        device.core().counters.stats().readback_bytes - before.readback_bytes <= 65_536,
        "only the count comes back"
    );
    assert_eq!(csr.format, Format::Csr);
    assert_eq!(read_u32(&csr.major).await, vec![0, 2, 4, 4, 6]);
    assert_eq!(read_u32(&csr.minor).await, vec![0, 1, 0, 3, 0, 3]);
    assert_eq!(
        read_f32(&csr.values).await,
        vec![7.0, 1.5, -1.0, 2.5, 0.0, 4.0],
        "duplicates summed, the stored zero kept"
    );
    // Row-major COO keeps duplicates; the transpose is CSC of the same arrays.
    let coo = a.to_coo().unwrap();
    evaluated::<T>(&[&coo.major, &coo.minor, &coo.values]).await;
    assert_eq!(read_u32(&coo.major).await, vec![0, 0, 1, 1, 1, 3, 3]);
    assert_eq!(read_u32(&coo.minor).await, vec![0, 1, 0, 3, 3, 0, 3]);
    assert_eq!(
        read_f32(&coo.values).await,
        vec![7.0, 1.5, -1.0, 2.0, 0.5, 0.0, 4.0],
        "ties keep their order"
    );
    let t = csr.transpose();
    assert_eq!((t.format, t.shape), (Format::Csc, (5, 4)));
    assert!(std::rc::Rc::ptr_eq(&t.values, &csr.values), "no data moved");
    let back = t.transpose().to_csr(&device).await.unwrap();
    evaluated::<T>(&[&back.values]).await;
    assert_eq!(read_f32(&back.values).await, read_f32(&csr.values).await);
    // A CSC matrix to CSR: the transpose's entries re-sorted by row.
    let tt = t.to_csr(&device).await.unwrap();
    evaluated::<T>(&[&tt.major, &tt.minor]).await;
    assert_eq!(read_u32(&tt.major).await, vec![0, 3, 4, 4, 6, 6]);
    assert_eq!(read_u32(&tt.minor).await, vec![0, 1, 3, 0, 1, 3]);
}

pub async fn spmv_and_spmm_match_the_dense_product<T: Target>() {
    let device = T::device();
    let a = SparseMatrix::compressed(
        &device,
        Format::Csr,
        &u32s(&[0, 2, 2, 5], 1),
        &i32s(&[0, 2, 1, 0, 2], 1),
        &f32s(&[1.0, 2.0, 3.0, 4.0, 5.0], 1),
        (3, 3),
    )
    .await
    .unwrap();
    let y = a.multiply(&f32s(&[1.0, 10.0, 100.0], 1)).unwrap();
    let z = a
        .multiply(&f32s(&[1.0, -1.0, 10.0, -10.0, 100.0, -100.0], 2))
        .unwrap();
    evaluated::<T>(&[&y, &z]).await;
    assert_eq!(read_f32(&y).await, vec![201.0, 0.0, 534.0]);
    assert_eq!(
        read_f32(&z).await,
        vec![201.0, -201.0, 0.0, 0.0, 534.0, -534.0]
    );
    assert_eq!(
        code(a.multiply(&f32s(&[1.0, 2.0], 1))),
        ErrorCode::InvalidArgument
    );
    // Every format gives the same product, duplicates adding up; alpha, beta and y.
    let coo = SparseMatrix::coo(
        &device,
        &u32s(&[2, 0, 2, 0, 2], 1),
        &u32s(&[2, 0, 1, 2, 0], 1),
        &f32s(&[5.0, 1.0, 3.0, 2.0, 4.0], 1),
        (3, 3),
    )
    .await
    .unwrap();
    let x = f32s(&[1.0, 10.0, 100.0], 1);
    let by_coo = coo.multiply(&x).unwrap();
    let csc = coo.transpose().to_csr(&device).await.unwrap().transpose();
    assert_eq!(csc.format, Format::Csc);
    let by_csc = csc.multiply(&x).unwrap();
    let scaled = a
        .multiply_add(&x, 2.0, -1.0, Some(&f32s(&[1.0, 2.0, 3.0], 1)))
        .unwrap();
    evaluated::<T>(&[&by_coo, &by_csc, &scaled]).await;
    assert_eq!(read_f32(&by_coo).await, vec![201.0, 0.0, 534.0]);
    assert_eq!(read_f32(&by_csc).await, vec![201.0, 0.0, 534.0]);
    assert_eq!(read_f32(&scaled).await, vec![401.0, -2.0, 1065.0]);
    // A longer operand fused with a product: rows past the product read 0, never past its
    // inputs (the CPU indexed them out of range).
    let longer = ir::binary(Add, &by_coo, &f32s(&[1.0, 1.0, 1.0, 1.0, 1.0], 1)).unwrap();
    let dense_longer = ir::binary(Add, &coo.to_dense().unwrap(), &f32s(&[0.5; 12], 3)).unwrap();
    evaluated::<T>(&[&longer, &dense_longer]).await;
    assert_eq!(read_f32(&longer).await, vec![202.0, 1.0, 535.0, 1.0, 1.0]);
    assert_eq!(&read_f32(&dense_longer).await[9..], &[0.5, 0.5, 0.5]);
    let wrong_y = a.multiply_add(&x, 1.0, 1.0, Some(&f32s(&[1.0; 4], 1)));
    assert_eq!(code(wrong_y), ErrorCode::InvalidArgument);
    let huge = SparseMatrix::coo(
        &device,
        &u32s(&[0], 1),
        &u32s(&[0], 1),
        &f32s(&[1.0], 1),
        (u32::MAX, 1),
    )
    .await;
    assert_eq!(code(huge), ErrorCode::LimitExceeded);
}

pub async fn sparse_constructors_validate_their_components<T: Target>() {
    let device = T::device();
    let values = f32s(&[1.0, 2.0, 3.0], 1);
    let csr = async |ptr: &[u32], idx: &[u32]| {
        code(
            SparseMatrix::compressed(
                &device,
                Format::Csr,
                &u32s(ptr, 1),
                &u32s(idx, 1),
                &values,
                (2, 3),
            )
            .await,
        )
    };
    assert_eq!(
        csr(&[1, 2, 3], &[0, 1, 2]).await,
        ErrorCode::InvalidArgument,
        "starts at 1"
    );
    assert_eq!(
        csr(&[0, 2, 2], &[0, 1, 2]).await,
        ErrorCode::InvalidArgument,
        "ends before nnz"
    );
    assert_eq!(
        csr(&[0, 3, 1, 3], &[0, 1, 2]).await,
        ErrorCode::InvalidArgument,
        "too many pointers"
    );
    assert_eq!(
        csr(&[0, 3], &[0, 1, 2]).await,
        ErrorCode::InvalidArgument,
        "too few pointers"
    );
    assert_eq!(
        csr(&[0, 2, 3], &[0, 1, 3]).await,
        ErrorCode::InvalidArgument,
        "a column past the shape"
    );
    let decreasing = code(
        SparseMatrix::compressed(
            &device,
            Format::Csr,
            &u32s(&[0, 3, 2, 3], 1),
            &u32s(&[0, 1, 2], 1),
            &values,
            (3, 3),
        )
        .await,
    );
    assert_eq!(decreasing, ErrorCode::InvalidArgument, "pointers decrease");
    let negative = code(
        SparseMatrix::coo(
            &device,
            &i32s(&[0, -1, 1], 1),
            &u32s(&[0, 1, 2], 1),
            &values,
            (2, 3),
        )
        .await,
    );
    assert_eq!(negative, ErrorCode::InvalidArgument, "a negative row");
    let short = code(
        SparseMatrix::coo(
            &device,
            &u32s(&[0, 1], 1),
            &u32s(&[0, 1, 2], 1),
            &values,
            (2, 3),
        )
        .await,
    );
    assert_eq!(short, ErrorCode::InvalidArgument, "lengths differ");
    let float_ids = code(
        SparseMatrix::coo(
            &device,
            &f32s(&[0., 1., 1.], 1),
            &u32s(&[0, 1, 2], 1),
            &values,
            (2, 3),
        )
        .await,
    );
    assert_eq!(float_ids, ErrorCode::InvalidArgument, "float indices");
    SparseMatrix::compressed(
        &device,
        Format::Csr,
        &u32s(&[0, 2, 3], 1),
        &u32s(&[0, 1, 2], 1),
        &values,
        (2, 3),
    )
    .await
    .unwrap();
    // No entries, no rows.
    let empty = SparseMatrix::coo(&device, &u32s(&[], 1), &u32s(&[], 1), &f32s(&[], 1), (0, 4))
        .await
        .unwrap();
    let csr = empty.to_csr(&device).await.unwrap();
    evaluate::<T>(&[csr.major.clone(), csr.values.clone()])
        .await
        .unwrap();
    assert_eq!(read_u32(&csr.major).await, vec![0]);
    assert_eq!(read_f32(&csr.values).await, Vec::<f32>::new());
}

pub async fn random_coo_to_csr_and_spmv_match_the_reference<T: Target>() {
    let device = T::device();
    let (shape, entries) = ((700u32, 900u32), 100_000usize);
    let (rows, cols, values) = random_entries(shape, entries, 4, 21);
    let a = coo_of(&device, &rows, &cols, &values, shape).await;
    let csr = a.to_csr(&device).await.unwrap();
    let x: Vec<f32> = (0..shape.1).map(|j| (j % 7) as f32).collect();
    let y = csr.multiply(&f32s(&x, 1)).unwrap();
    evaluated::<T>(&[&csr.major, &csr.minor, &csr.values, &y]).await;
    let reference = dense(shape, &rows, &cols, &values);
    let (ptr, idx, val) = (
        read_u32(&csr.major).await,
        read_u32(&csr.minor).await,
        read_f32(&csr.values).await,
    );
    let mut rebuilt = vec![0f64; reference.len()];
    for r in 0..shape.0 as usize {
        let run = &idx[ptr[r] as usize..ptr[r + 1] as usize];
        assert!(
            run.windows(2).all(|w| w[0] < w[1]),
            "row {r}: columns sorted and distinct"
        );
        for k in ptr[r] as usize..ptr[r + 1] as usize {
            rebuilt[r * shape.1 as usize + idx[k] as usize] = val[k] as f64;
        }
    }
    assert_eq!(rebuilt, reference);
    let expected: Vec<f32> = (0..shape.0 as usize)
        .map(|r| {
            (0..shape.1 as usize)
                .map(|c| reference[r * shape.1 as usize + c] * x[c] as f64)
                .sum::<f64>() as f32
        })
        .collect();
    assert_eq!(
        read_f32(&y).await,
        expected,
        "small integers: exact in any order"
    );
}

pub async fn to_dense_sums_duplicates_in_every_format<T: Target>() {
    let device = T::device();
    let rows = [3u32, 1, 0, 1, 3, 1, 0];
    let cols = [0u32, 3, 1, 0, 3, 3, 0];
    let values = [0.0f32, 2.0, 1.5, -1.0, 4.0, 0.5, 7.0];
    let shape = (4, 5);
    let a = coo_of(&device, &rows, &cols, &values, shape).await;
    let expected: Vec<f32> = dense(shape, &rows, &cols, &values)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let csr = a.to_csr(&device).await.unwrap();
    for (what, matrix) in [
        ("coo", &a),
        ("csr", &csr),
        ("csr transposed twice", &csr.transpose().transpose()),
    ] {
        let d = matrix.to_dense().unwrap();
        evaluated::<T>(&[&d]).await;
        assert_eq!((d.meta.length, d.meta.size), (4, 5), "{what}");
        assert_eq!(read_f32(&d).await, expected, "{what}");
    }
    // The transpose's dense form is the transpose; integer values keep their type.
    let t = csr.transpose().to_dense().unwrap();
    evaluated::<T>(&[&t]).await;
    let transposed: Vec<f32> = (0..5)
        .flat_map(|c| (0..4).map(move |r| (r, c)))
        .map(|(r, c)| expected[r * 5 + c])
        .collect();
    assert_eq!(read_f32(&t).await, transposed);
    let ints = SparseMatrix::coo(
        &device,
        &u32s(&[0, 0], 1),
        &u32s(&[1, 1], 1),
        &u8s(&[200, 100], 1),
        (1, 2),
    )
    .await
    .unwrap();
    let d = ints.to_dense().unwrap();
    evaluated::<T>(&[&d]).await;
    assert_eq!(d.meta.dtype, DType::U8);
    let canonical = ints.to_csr(&device).await.unwrap();
    assert_eq!(
        canonical.values.meta.dtype,
        DType::U8,
        "toCSR keeps the values' type"
    );
    assert_eq!(
        read(&d).await,
        ColumnData::U8(vec![0, 44]),
        "uint8 sums wrap"
    );
    // A reshape alone: row-major order kept, any widths.
    let x = u32s(&(0..12).collect::<Vec<_>>(), 3);
    let r = ir::reshape(&x, 4).unwrap();
    let back = ir::reshape(
        &ir::binary(Add, &r, &konst(ColumnData::U32(vec![1]))).unwrap(),
        2,
    )
    .unwrap();
    evaluated::<T>(&[&r, &back]).await;
    assert_eq!(read_u32(&r).await, (0..12).collect::<Vec<u32>>());
    assert_eq!((back.meta.length, back.meta.size), (6, 2));
    assert_eq!(read_u32(&back).await, (1..13).collect::<Vec<u32>>());
    assert_eq!(code(ir::reshape(&x, 5)), ErrorCode::InvalidArgument);
}

pub async fn dense_nonzeros_triangles_and_droptol<T: Target>() {
    let device = T::device();
    // 3 x 4 with a NaN (kept: it is not 0) and a -0 (dropped: it is 0).
    let cells = [
        0.0f32,
        2.0,
        0.0,
        -1.0,
        5.0,
        0.0,
        f32::NAN,
        0.0,
        -0.0,
        0.0,
        0.0,
        3.0,
    ];
    let dense = f32s(&cells, 4);
    for format in [Format::Coo, Format::Csr, Format::Csc] {
        let a = SparseMatrix::from_dense(&device, &dense, format)
            .await
            .unwrap();
        assert_eq!((a.format, a.shape, a.nnz()), (format, (3, 4), 5));
        let back = a.to_dense().unwrap();
        evaluated::<T>(&[&back]).await;
        assert!(
            same(
                &read(&back).await,
                &ColumnData::F32(
                    cells
                        .iter()
                        .map(|&v| if v == 0.0 { 0.0 } else { v })
                        .collect()
                )
            ),
            "{format:?}"
        );
    }
    let csr = SparseMatrix::from_dense(&device, &dense, Format::Csr)
        .await
        .unwrap();
    evaluated::<T>(&[&csr.major, &csr.minor]).await;
    assert_eq!(read_u32(&csr.major).await, vec![0, 2, 4, 5]);
    assert_eq!(read_u32(&csr.minor).await, vec![1, 3, 0, 2, 3]);
    // Entries (row, col): (0,1) (0,3) (1,0) (1,2) (2,3).
    let upper = csr.triangle(&device, 0, true).await.unwrap();
    let strictly_lower = csr.triangle(&device, -1, false).await.unwrap();
    let band = csr.triangle(&device, 1, false).await.unwrap();
    let big = csr.droptol(&device, 2.5).await.unwrap();
    evaluated::<T>(&[
        &upper.minor,
        &strictly_lower.minor,
        &band.minor,
        &big.values,
    ])
    .await;
    assert_eq!(read_u32(&upper.major).await, vec![0, 2, 3, 4]);
    assert_eq!(read_u32(&upper.minor).await, vec![1, 3, 2, 3]);
    assert_eq!(read_u32(&strictly_lower.major).await, vec![0, 0, 1, 1]);
    assert_eq!(
        read_u32(&band.minor).await,
        vec![1, 0, 2, 3],
        "col - row <= 1"
    );
    let kept = read_f32(&big.values).await;
    assert_eq!(kept.len(), 3, "|v| > 2.5 and the NaN: {kept:?}");
    assert!(kept[0] == 5.0 && kept[1].is_nan() && kept[2] == 3.0);
    let zeros = csr.droptol(&device, 100.0).await.unwrap();
    evaluated::<T>(&[&zeros.major]).await;
    // Rows of 90 lanes: WebGL2 samples at most 64 lanes of a row in one draw (a typed
    // refusal there); the others store them.
    let wide = f32s(&(0..180).map(|i| (i % 3) as f32).collect::<Vec<_>>(), 90);
    match (
        SparseMatrix::from_dense(&device, &wide, Format::Csr).await,
        T::WIDE_ROWS,
    ) {
        (Ok(m), true) => assert_eq!(m.nnz(), 120),
        (Err(e), false) => assert_eq!(e.code, ErrorCode::LimitExceeded),
        (other, wide_rows) => panic!("wide rows {wide_rows}: {:?}", other.map(|m| m.nnz())),
    }
    // A dense form of 90 columns is written lane by lane on every backend.
    let wide = coo_of(&device, &[0, 0], &[89, 3], &[1.0, 2.0], (1, 90))
        .await
        .to_dense()
        .unwrap();
    evaluated::<T>(&[&wide]).await;
    let mut expected = vec![0.0f32; 90];
    (expected[3], expected[89]) = (2.0, 1.0);
    assert_eq!(read_f32(&wide).await, expected);
    assert_eq!(
        (zeros.nnz(), read_u32(&zeros.major).await),
        (1, vec![0, 0, 1, 1]),
        "the NaN stays"
    );
}

pub async fn norms_symmetry_and_entries<T: Target>() {
    let device = T::device();
    // [[1, 0, -2], [0, 3, 0], [-2, 0, 4]] with (1, 1) stored as 1 + 2 (a duplicate).
    let a = coo_of(
        &device,
        &[0, 0, 1, 2, 2, 1],
        &[0, 2, 1, 0, 2, 1],
        &[1.0, -2.0, 1.0, -2.0, 4.0, 2.0],
        (3, 3),
    )
    .await;
    assert_eq!(
        a.norm(&device, 2.0).await.unwrap(),
        (1.0f64 + 4.0 + 9.0 + 4.0 + 16.0).sqrt()
    );
    assert_eq!(a.norm(&device, 1.0).await.unwrap(), 12.0);
    assert_eq!(a.norm(&device, f64::INFINITY).await.unwrap(), 4.0);
    assert_eq!(
        a.opnorm(&device, 1.0).await.unwrap(),
        6.0,
        "largest column sum"
    );
    assert_eq!(
        a.opnorm(&device, f64::INFINITY).await.unwrap(),
        6.0,
        "largest row sum"
    );
    assert_eq!(
        code(a.opnorm(&device, 2.0).await),
        ErrorCode::InvalidArgument
    );
    assert!(a.is_symmetric(&device).await.unwrap());
    assert!(!a.is_zero(&device).await.unwrap());
    assert_eq!(
        a.get(&device, 1, 1).await.unwrap(),
        3.0,
        "duplicates summed"
    );
    assert_eq!(a.get(&device, 2, 0).await.unwrap(), -2.0);
    assert_eq!(a.get(&device, 1, 0).await.unwrap(), 0.0, "nothing stored");
    assert_eq!(code(a.get(&device, 3, 0).await), ErrorCode::InvalidArgument);
    let with_nan = coo_of(&device, &[0, 0], &[0, 1], &[f32::NAN, 5.0], (1, 2)).await;
    assert_eq!(
        with_nan.get(&device, 0, 1).await.unwrap(),
        5.0,
        "another column's NaN stays out"
    );
    let skew = coo_of(&device, &[0, 1], &[1, 0], &[1.0, -1.0], (2, 2)).await;
    assert!(!skew.is_symmetric(&device).await.unwrap());
    let wide = coo_of(&device, &[0], &[1], &[1.0], (1, 2)).await;
    assert!(!wide.is_symmetric(&device).await.unwrap());
    // Equal as dense arrays: a stored zero matches the implicit one across the diagonal, as
    // do duplicates summing to 0; a NaN equals nothing.
    let stored_zero = coo_of(&device, &[0, 1, 1], &[1, 0, 1], &[0.0, 2.0, 5.0], (2, 2)).await;
    assert!(!stored_zero.is_symmetric(&device).await.unwrap());
    let zero_only = coo_of(&device, &[0, 1], &[1, 1], &[0.0, 5.0], (2, 2)).await;
    assert!(zero_only.is_symmetric(&device).await.unwrap());
    let cancelled = coo_of(&device, &[1, 1, 0], &[0, 0, 0], &[2.0, -2.0, 1.0], (2, 2)).await;
    assert!(cancelled.is_symmetric(&device).await.unwrap());
    let nan = coo_of(&device, &[0], &[0], &[f32::NAN], (1, 1)).await;
    assert!(!nan.is_symmetric(&device).await.unwrap());
    let zeros = coo_of(&device, &[0, 1], &[1, 0], &[0.0, -0.0], (2, 2)).await;
    assert!(zeros.is_zero(&device).await.unwrap());
    let empty = coo_of(&device, &[], &[], &[], (2, 2)).await;
    assert!(empty.is_zero(&device).await.unwrap());
    assert!(empty.is_symmetric(&device).await.unwrap());
    assert_eq!(empty.opnorm(&device, 1.0).await.unwrap(), 0.0);
    // Integers past 2^24 compare and read back exactly (as float32, 2^24 + 1 was 2^24).
    let big = async |values: ColumnData| {
        SparseMatrix::coo(
            &device,
            &u32s(&[0, 1], 1),
            &u32s(&[1, 0], 1),
            &ir::source(values, 1, false).unwrap(),
            (2, 2),
        )
        .await
        .unwrap()
    };
    let near = big(ColumnData::I32(vec![(1 << 24) + 1, 1 << 24])).await;
    assert!(!near.is_symmetric(&device).await.unwrap());
    assert_eq!(near.get(&device, 0, 1).await.unwrap(), 16_777_217.0);
    let same = big(ColumnData::U32(vec![u32::MAX, u32::MAX])).await;
    assert!(same.is_symmetric(&device).await.unwrap());
    assert_eq!(same.get(&device, 1, 0).await.unwrap(), u32::MAX as f64);
}

/// Measures of a matrix with entries enough for segmented sums in blocks (20,000, a COO with
/// duplicates): the device's equal the CPU's. The sums of duplicates run inside the
/// reduction's loop over rows there; in headless Chromium's WebGPU their per-row array,
/// left to its declaration to zero, kept the last row's sums (norms 1.85-2x the CPU's).
pub async fn measures_of_twenty_thousand_entries_match_the_cpu<T: Target>() {
    let device = T::device();
    let cpu = gputable::cpu::CpuDevice::default();
    let (rows, cols, values) = random_entries((300, 400), 20_000, 4, 7);
    let a = coo_of(&device, &rows, &cols, &values, (300, 400)).await;
    let b = coo_of(&cpu, &rows, &cols, &values, (300, 400)).await;
    for p in [1.0, 2.0] {
        assert_eq!(
            a.norm(&device, p).await.unwrap(),
            b.norm(&cpu, p).await.unwrap(),
            "norm {p}"
        );
    }
    for p in [1.0, f64::INFINITY] {
        assert_eq!(
            a.opnorm(&device, p).await.unwrap(),
            b.opnorm(&cpu, p).await.unwrap(),
            "opnorm {p}"
        );
    }
}
