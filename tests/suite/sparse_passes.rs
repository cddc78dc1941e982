//! What sparse work costs on each device: the sorts a conversion, a filter or a product
//! runs (none again for a canonical matrix), and the passes after a conversion's count,
//! pinned, each result checked against a reference worked out here.

use super::sparse::{coo_of, dense, random_entries};
use super::*;
use gputable::sparse::{Format, SparseMatrix};

/// `toCSR` sorted the entries twice: once up to the count of distinct entries it reads back,
/// then again for the columns and values (only evaluated roots keep their output). It is
/// one evaluation now, with one sort, and its components are computed when it resolves.
pub async fn to_csr_sorts_the_entries_once<T: Target>() {
    let device = T::fresh().await;
    let (rows, cols, values) = random_entries((300, 200), 5000, 9, 11);
    let a = coo_of(&device, &rows, &cols, &values, (300, 200)).await;
    let sorts = device.core().counters.sorts.get();
    let csr = a.to_csr(&device).await.unwrap();
    assert_eq!(device.core().counters.sorts.get() - sorts, 1, "one sort");
    let roots = [csr.major.clone(), csr.minor.clone(), csr.values.clone()];
    let left = gputable::plan::plan(&roots, gputable::plan::Fusion::On).unwrap();
    assert!(
        left.regions.is_empty(),
        "the conversion left passes to run:\n{}",
        left.describe("test")
    );
    let expected = dense((300, 200), &rows, &cols, &values);
    let got = read_f32(&csr.to_dense().unwrap()).await;
    for (g, e) in got.iter().zip(&expected) {
        assert!(
            (*g as f64 - e).abs() <= 1e-4 * (1.0 + e.abs()),
            "{g} vs {e}"
        );
    }
}

/// `triu`, `tril`, `droptol` and the elementwise product read back a count between their
/// sort and the entries they gather from it, and sorted again after it (`triu` of CSC three
/// times). Each sort they need now runs once: one for a filter, three for a product (both
/// operands' CSR, then their merge). A canonical matrix (what the conversions make) is not
/// sorted at all for a filter, nor made CSR again for a product; a CSR given with its
/// columns out of order within rows is.
pub async fn filters_and_products_sort_their_entries_once<T: Target>() {
    let device = T::fresh().await;
    let shape = (60, 50);
    let (rows, cols, values) = random_entries(shape, 600, 5, 3);
    let (rows_b, cols_b, values_b) = random_entries(shape, 400, 5, 4);
    let coo = coo_of(&device, &rows, &cols, &values, shape).await;
    let other = coo_of(&device, &rows_b, &cols_b, &values_b, shape).await;
    let (a, b) = (
        dense(shape, &rows, &cols, &values),
        dense(shape, &rows_b, &cols_b, &values_b),
    );
    let upper: Vec<f64> = (a.iter().enumerate())
        .map(
            |(cell, v)| match cell as u32 % shape.1 >= cell as u32 / shape.1 {
                true => *v,
                false => 0.0,
            },
        )
        .collect();
    let product: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    let sorts = || device.core().counters.sorts.get();
    let canonical = coo.to_csr(&device).await.unwrap();
    let reversed = reversed_within_rows(&device, &canonical).await;
    let mut matrices = vec![("given", reversed)];
    for format in [Format::Coo, Format::Csr, Format::Csc] {
        let m = coo.clone().into_format(&device, format).await.unwrap();
        matrices.push((if m.canonical { "canonical" } else { "given" }, m));
    }
    for (kind, m) in matrices {
        let format = m.format;
        let n = other.clone().into_format(&device, format).await.unwrap();
        gputable::engine::evaluate(
            &device,
            &[m.major.clone(), m.minor.clone(), m.values.clone()],
        )
        .await
        .unwrap();
        // A canonical matrix is not sorted for a filter, nor is a canonical CSR or CSC
        // operand made CSR again (the other operand is canonical where it is CSR or CSC).
        let filter_sorts = (!m.canonical) as u64;
        let product_sorts = 1 + filter_sorts + (!n.canonical) as u64;
        let cases: [(&str, u64, Vec<f64>); 2] = [
            ("triu", filter_sorts, upper.clone()),
            ("product", product_sorts, product.clone()),
        ];
        for (name, expected_sorts, expected) in cases {
            let before = sorts();
            let got = match name {
                "triu" => m.triangle(&device, 0, true).await.unwrap(),
                _ => m.combine(&device, Multiply, &n).await.unwrap(),
            };
            assert_eq!(got.format, format);
            assert!(
                got.canonical || format == Format::Coo,
                "{name} of {kind} {format:?}"
            );
            let roots = [got.major.clone(), got.minor.clone(), got.values.clone()];
            gputable::engine::evaluate(&device, &roots).await.unwrap();
            assert_eq!(
                sorts() - before,
                expected_sorts,
                "{name} of {kind} {format:?} sorts again"
            );
            let cells = read_f32(&got.to_dense().unwrap()).await;
            let cells: Vec<f64> = cells.iter().map(|&v| v as f64).collect();
            assert_eq!(cells, expected, "{name} of {kind} {format:?}");
        }
        let before = sorts();
        let kept = m.droptol(&device, 2.5).await.unwrap();
        gputable::engine::evaluate(&device, &[kept.major.clone(), kept.values.clone()])
            .await
            .unwrap();
        assert_eq!(
            sorts() - before,
            filter_sorts,
            "droptol of {kind} {format:?} sorts again"
        );
        let magnitudes = read_f32(&kept.values).await;
        assert!(
            magnitudes.iter().all(|v| v.abs() > 2.5),
            "{kind} {format:?}"
        );
    }
}

/// `csr` given again from components, each row's entries in reverse order: a valid CSR
/// that is not canonical.
async fn reversed_within_rows<D: Backend>(device: &D, csr: &SparseMatrix) -> SparseMatrix {
    let roots = [csr.major.clone(), csr.minor.clone(), csr.values.clone()];
    gputable::engine::evaluate(device, &roots).await.unwrap();
    let pointers = read_u32(&csr.major).await;
    let (mut cols, mut values) = (read_u32(&csr.minor).await, read_f32(&csr.values).await);
    for row in pointers.windows(2) {
        let (start, end) = (row[0] as usize, row[1] as usize);
        cols[start..end].reverse();
        values[start..end].reverse();
    }
    let given = SparseMatrix::compressed(
        device,
        Format::Csr,
        &u32s(&pointers, 1),
        &u32s(&cols, 1),
        &f32s(&values, 1),
        csr.shape,
    )
    .await
    .unwrap();
    assert!(!given.canonical);
    given
}

/// toCSR is one evaluation, counted on the device (no count read mid-graph), its passes
/// after the sort pinned: the cell starts, four levels of their scan and its last pass
/// (6); the row pointers (searched among the sorted entries, each row's first entry
/// starting a cell: the cells up to the entry before it read from the scan); the cells'
/// places and their first entries scattered (2); their columns gathered; the count (one
/// row); the segment offsets padded past the count and assembled, and the duplicates
/// summed (two passes); then the columns and sums copied out of their capacity (2). Only
/// the count is read back. The last three rows are empty.
pub async fn to_csr_is_one_evaluation_counted_on_the_device<T: Target>() {
    let device = T::fresh().await;
    let (drawn, shape) = ((1000, 1000), (1003, 1000));
    let (rows, cols, values) = random_entries(drawn, 100_000, 9, 11);
    let kernels = || device.core().counters.stats().kernels;
    let sorted = coo_of(&device, &rows, &cols, &values, shape)
        .await
        .to_coo()
        .unwrap();
    let before_sort = kernels();
    let entries = [sorted.major, sorted.minor, sorted.values];
    gputable::engine::evaluate(&device, &entries).await.unwrap();
    let sort = kernels() - before_sort;
    let a = coo_of(&device, &rows, &cols, &values, shape).await;
    let (before, read_before) = (kernels(), device.core().counters.stats().readback_bytes);
    let csr = a.to_csr(&device).await.unwrap();
    let used = kernels() - before;
    // The GPUs run two more (measured): a scatter clears its output in a kernel of its
    // own, and the offsets' parts are copied together by one.
    let more = match device.kernel_words() {
        Some(_) => 2,
        None => 0,
    };
    assert!(
        used <= sort + 16 + more,
        "toCSR took {used} kernels, the sort {sort}"
    );
    let read = device.core().counters.stats().readback_bytes - read_before;
    assert!(read <= 65_536, "read back {read} bytes");
    for root in [&csr.major, &csr.minor, &csr.values] {
        assert_eq!(super::stored_on(root), Some(device.core().id));
    }
    let mut cells = std::collections::BTreeMap::new();
    for ((&r, &c), &v) in rows.iter().zip(&cols).zip(&values) {
        *cells.entry((r, c)).or_insert(0f32) += v;
    }
    let mut pointers = vec![0u32; shape.0 as usize + 1];
    for &(r, _) in cells.keys() {
        pointers[r as usize + 1] += 1;
    }
    for r in 0..shape.0 as usize {
        pointers[r + 1] += pointers[r];
    }
    assert_eq!(read_u32(&csr.major).await, pointers);
    let expected_cols: Vec<u32> = cells.keys().map(|&(_, c)| c).collect();
    assert_eq!(read_u32(&csr.minor).await, expected_cols);
    let expected_values: Vec<f32> = cells.values().copied().collect();
    assert_eq!(read_f32(&csr.values).await, expected_values);
}

/// The row pointers of fromDense's CSR, of the elementwise product and of the nonzeros
/// `isSymmetric` compares count the kept entries before each row's first candidate, read
/// from the places the compaction stored: no search over the kept rows, no column of them.
/// Empty first, middle and last rows; the product keeps cells in rows 1 and 3 only.
pub async fn row_pointers_count_the_kept_entries_before_each_row<T: Target>() {
    let device = T::fresh().await;
    #[rustfmt::skip]
    let cells = [
        0.0f32, 0.0, 0.0,
        1.0, 0.0, f32::NAN,
        0.0, 0.0, 0.0,
        0.0, -2.0, 3.0,
        4.0, 0.0, 0.0,
        0.0, 0.0, 0.0,
    ];
    let dense = f32s(&cells, 3);
    let kernels = || device.core().counters.stats().kernels;
    // The count alone (the cells reshaped, flagged and scanned), and a scatter of the kept
    // cells (WebGPU clears its output in a kernel of its own).
    let before = kernels();
    let reshaped = ir::reshape(&dense, 1).unwrap();
    let (one, zero) = (ir::u32_constant(1).unwrap(), ir::u32_constant(0).unwrap());
    let flags = ir::select(&reshaped, &one, &zero).unwrap();
    let kept = gputable::dynamic::Kept::new(&flags).unwrap().kept_rows();
    gputable::engine::evaluate(&device, &[kept]).await.unwrap();
    // The kept cells alone: flagged, scanned, placed, scattered and counted.
    let counting = kernels() - before;
    let (before, read_before) = (kernels(), device.core().counters.stats().readback_bytes);
    let csr = SparseMatrix::from_dense(&device, &dense, Format::Csr)
        .await
        .unwrap();
    // One evaluation: the kept cells counted and scattered, then their columns, their
    // values and the pointers (one read per row), and the cells reshaped in a pass of their
    // own (the values are gathered from them; alone, the flags read them fused), and the
    // kept columns and values copied out of their capacity (2). The cells' rows are
    // neither stored nor searched, and only the count is read back (WebGL2 reads a texel
    // row: 64 KiB).
    assert_eq!(kernels() - before, counting + 6);
    let read = device.core().counters.stats().readback_bytes - read_before;
    assert!(read <= 65_536, "read back {read} bytes");
    // Computed by then, on the device.
    for component in [&csr.major, &csr.minor, &csr.values] {
        assert_eq!(super::stored_on(component), Some(device.core().id));
    }
    assert_eq!(read_u32(&csr.major).await, vec![0, 0, 2, 2, 4, 5, 5]);
    assert_eq!(read_u32(&csr.minor).await, vec![0, 2, 1, 2, 0]);
    let values = read_f32(&csr.values).await;
    assert!(values[1].is_nan());
    assert_eq!(
        (values[0], values[2], values[3], values[4]),
        (1.0, -2.0, 3.0, 4.0)
    );
    // a .* b over 5 x 4: both store (1, 2) and (3, 0), (3, 3); each stores more elsewhere.
    let shape = (5, 4);
    let (ar, ac, av) = (
        [1u32, 3, 0, 3, 4, 1],
        [2u32, 0, 1, 3, 3, 0],
        [2.0f32, 3.0, 7.0, 5.0, 1.0, 9.0],
    );
    let (br, bc, bv) = (
        [3u32, 1, 2, 3, 4],
        [3u32, 2, 2, 0, 2],
        [-1.0f32, 4.0, 6.0, 2.0, 8.0],
    );
    let a = coo_of(&device, &ar, &ac, &av, shape).await;
    let b = coo_of(&device, &br, &bc, &bv, shape).await;
    let product = a.to_csr(&device).await.unwrap();
    let product = product.combine(&device, Multiply, &b).await.unwrap();
    let roots = [
        product.major.clone(),
        product.minor.clone(),
        product.values.clone(),
    ];
    gputable::engine::evaluate(&device, &roots).await.unwrap();
    assert_eq!(super::stored_on(&product.major), Some(device.core().id));
    assert_eq!(read_u32(&product.major).await, vec![0, 0, 1, 1, 3, 3]);
    assert_eq!(read_u32(&product.minor).await, vec![2, 0, 3]);
    assert_eq!(read_f32(&product.values).await, vec![8.0, 6.0, -5.0]);
    // Stored zeros in the first and last rows leave the pointers of the rows between.
    let (rows, cols) = ([0u32, 1, 2, 2], [0u32, 2, 1, 2]);
    let symmetric = coo_of(&device, &rows, &cols, &[0.0, 3.0, 3.0, 0.0], (3, 3)).await;
    assert!(symmetric.is_symmetric(&device).await.unwrap());
    let skewed = coo_of(&device, &rows, &cols, &[0.0, 3.0, 4.0, 0.0], (3, 3)).await;
    assert!(!skewed.is_symmetric(&device).await.unwrap());
}

/// What the conversions make is canonical (scipy's canonical format: row-major, or
/// column-major for CSC, one entry per cell), and is not sorted again: `toCOO`, `toCSR`,
/// `toDense` and the product of such a matrix run no sort, and give what the sorted path
/// gives. Results hold components of their own (copies where nothing else changes), so
/// destroying one leaves its source. Components given by a caller are sorted as before.
pub async fn canonical_matrices_are_not_sorted_again<T: Target>() {
    let device = T::fresh().await;
    let shape = (40, 30);
    let (rows, cols, values) = random_entries(shape, 300, 5, 21);
    let expected = dense(shape, &rows, &cols, &values);
    let given = coo_of(&device, &rows, &cols, &values, shape).await;
    assert!(!given.canonical);
    let csr = given.to_csr(&device).await.unwrap();
    assert!(csr.canonical && csr.transpose().canonical);
    let x: Vec<f32> = (0..shape.1).map(|i| (i % 7) as f32 - 3.0).collect();
    let x = f32s(&x, 1);
    let sorts = || device.core().counters.sorts.get();
    let components = |m: &SparseMatrix| [m.major.clone(), m.minor.clone(), m.values.clone()];
    let distinct = |a: &SparseMatrix, b: &SparseMatrix| {
        let ids = |m: &SparseMatrix| components(m).map(|c| c.id);
        ids(a).iter().all(|id| !ids(b).contains(id))
    };
    gputable::engine::evaluate(&device, &components(&csr))
        .await
        .unwrap();
    let before = sorts();
    let coo = csr.to_coo().unwrap();
    let again = csr.to_csr(&device).await.unwrap();
    let coo_csr = coo.to_csr(&device).await.unwrap();
    let same = csr.canonical(&device).await.unwrap();
    assert!(coo.canonical && again.canonical && coo_csr.canonical && same.canonical);
    for m in [&coo, &again, &coo_csr, &same] {
        assert!(distinct(m, &csr), "a result shares a component");
    }
    let dense_of_csr = csr.to_dense().unwrap();
    let dense_of_coo = coo.to_dense().unwrap();
    let product = coo.multiply(&x).unwrap();
    let reference = csr.multiply(&x).unwrap();
    let mut roots = vec![dense_of_csr.clone(), dense_of_coo.clone(), product.clone()];
    roots.push(reference.clone());
    for m in [&coo, &again, &coo_csr] {
        roots.extend(components(m));
    }
    gputable::engine::evaluate(&device, &roots).await.unwrap();
    assert_eq!(sorts() - before, 0, "a canonical matrix was sorted again");
    for d in [&dense_of_csr, &dense_of_coo] {
        let cells: Vec<f64> = read_f32(d).await.iter().map(|&v| v as f64).collect();
        assert_eq!(cells, expected);
    }
    assert_eq!(read_f32(&product).await, read_f32(&reference).await);
    let pointers = read_u32(&csr.major).await;
    for m in [&again, &coo_csr] {
        assert_eq!(read_u32(&m.major).await, pointers);
        assert_eq!(read_u32(&m.minor).await, read_u32(&csr.minor).await);
    }
    let coo_rows = read_u32(&coo.major).await;
    assert!(coo_rows.windows(2).all(|w| w[0] <= w[1]), "row-major");
    assert_eq!(coo_rows.len(), csr.nnz() as usize);
    // A canonical COO's kept entries are canonical too, with no sort.
    let before = sorts();
    let upper = coo.triangle(&device, 0, true).await.unwrap();
    assert!(upper.canonical && upper.format == Format::Coo);
    let upper_dense = upper.to_dense().unwrap();
    gputable::engine::evaluate(&device, std::slice::from_ref(&upper_dense))
        .await
        .unwrap();
    assert_eq!(sorts() - before, 0);
    let upper_expected: Vec<f64> = (expected.iter().enumerate())
        .map(
            |(cell, &v)| match cell as u32 % shape.1 >= cell as u32 / shape.1 {
                true => v,
                false => 0.0,
            },
        )
        .collect();
    let cells: Vec<f64> = read_f32(&upper_dense)
        .await
        .iter()
        .map(|&v| v as f64)
        .collect();
    assert_eq!(cells, upper_expected);
    // A canonical CSC of one column (a sparse vector) is row-major too.
    let column = f32s(&[0.0, 1.5, 0.0, 0.0, -2.0, 3.0], 1);
    let vector = SparseMatrix::from_dense(&device, &column, Format::Csc)
        .await
        .unwrap();
    assert!(vector.canonical);
    let before = sorts();
    let (vector_dense, vector_coo) = (vector.to_dense().unwrap(), vector.to_coo().unwrap());
    let vector_csr = vector.to_csr(&device).await.unwrap();
    assert!(distinct(&vector_csr, &vector));
    let roots = [vector_dense.clone(), vector_coo.major.clone()];
    gputable::engine::evaluate(&device, &roots).await.unwrap();
    assert_eq!(sorts() - before, 0);
    assert_eq!(
        read_f32(&vector_dense).await,
        [0.0, 1.5, 0.0, 0.0, -2.0, 3.0]
    );
    assert_eq!(read_u32(&vector_coo.major).await, [1, 4, 5]);
    assert_eq!(read_u32(&vector_csr.major).await, [0, 0, 1, 1, 1, 2, 3]);
    assert_eq!(read_f32(&vector_csr.values).await, [1.5, -2.0, 3.0]);
    // fromDense's COO is row-major, one entry per cell: its CSR is not sorted either.
    let from_dense = SparseMatrix::from_dense(&device, &dense_of_csr, Format::Coo)
        .await
        .unwrap();
    assert!(from_dense.canonical);
    let before = sorts();
    let from_dense = from_dense.to_csr(&device).await.unwrap();
    assert_eq!(sorts() - before, 0);
    let nonzeros = (rows.iter().zip(&cols))
        .map(|(&r, &c)| (r, c))
        .filter(|&(r, c)| expected[(r * shape.1 + c) as usize] != 0.0)
        .collect::<std::collections::BTreeSet<_>>();
    let mut from_dense_pointers = vec![0u32; shape.0 as usize + 1];
    for &(r, _) in &nonzeros {
        from_dense_pointers[r as usize + 1] += 1;
    }
    for r in 0..shape.0 as usize {
        from_dense_pointers[r + 1] += from_dense_pointers[r];
    }
    assert_eq!(read_u32(&from_dense.major).await, from_dense_pointers);
    // A scaled matrix owns its structure: destroying it leaves the source whole.
    let scaled = csr
        .scaled_now(Multiply, &konst(ColumnData::F32(vec![2.0])), false)
        .unwrap()
        .unwrap();
    assert!(scaled.canonical && distinct(&scaled, &csr));
    for c in components(&scaled) {
        c.destroy();
    }
    for c in components(&csr) {
        c.check_alive().unwrap();
    }
    // Given components, and a CSC made CSR, are sorted; a COO transposed is column-major.
    let before = sorts();
    let sorted = given.to_coo().unwrap();
    let from_csc = csr.transpose().to_csr(&device).await.unwrap();
    assert!(!sorted.canonical, "duplicates may remain");
    assert!(!coo.transpose().canonical);
    let mut roots = components(&sorted).to_vec();
    roots.extend(components(&from_csc));
    gputable::engine::evaluate(&device, &roots).await.unwrap();
    assert_eq!(sorts() - before, 2);
}
