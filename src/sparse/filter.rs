//! Sparse matrices made by keeping some entries: from a dense matrix (its nonzeros), and
//! `triu`, `tril`, `droptol`. The kept entries are kept and counted on the device (`Kept`:
//! one evaluation, its count read back at the end); the keep flags are arithmetic that is positive exactly where the
//! condition holds (`d + |d|` is positive iff `d` is), so no comparison op is needed.

use super::{as_type, csr_of_parts, csr_of_sorted, magnitude, Format, SparseMatrix};
use crate::column::ColumnData;
use crate::dtype::{Class, DType};
use crate::dynamic::Kept;
use crate::engine::Backend;
use crate::error::{GpuTableError, Result};
use crate::ir::{self, u32_constant, u32_rows, BinaryOp, NodeRef, UnaryOp};

/// `d + |d|`: positive where `d` is, 0 elsewhere (NaN stays NaN: kept, being nonzero).
fn positive_part_twice(d: &NodeRef) -> Result<NodeRef> {
    ir::binary(BinaryOp::Add, d, &ir::unary(UnaryOp::Abs, d)?)
}

/// Nonzero where integer `values` have a magnitude above `tol`, exactly (float32 would round
/// magnitudes past 2^24): the magnitude as uint32 (|-2^31| is 2^31) over `floor(tol) + 1`.
fn integer_magnitude_above(values: &NodeRef, tol: f64) -> Result<NodeRef> {
    let magnitude = match values.meta.dtype.class() {
        Class::U => as_type(values, DType::U32)?,
        _ => ir::cast(
            &ir::unary(UnaryOp::Abs, &as_type(values, DType::I32)?)?,
            DType::U32,
        )?,
    };
    // Past uint32 nothing is above; below 0 everything is (0 * m + 1).
    let threshold = tol.floor();
    let none = || ir::binary(BinaryOp::Multiply, &magnitude, &u32_constant(0)?);
    match threshold {
        t if t < 0.0 => ir::binary(BinaryOp::Add, &none()?, &u32_constant(1)?),
        t if t >= u32::MAX as f64 => none(),
        t => ir::binary(BinaryOp::Divide, &magnitude, &u32_constant(t as u32 + 1)?),
    }
}

fn i32_constant(value: i32) -> Result<NodeRef> {
    ir::source(ColumnData::I32(vec![value]), 1, true)
}

impl SparseMatrix {
    /// The nonzeros of `dense` (`m` rows of size `n`; NaN counts as nonzero) in `format`,
    /// found on `device` in one evaluation (its count read back at the end).
    pub async fn from_dense(
        device: &dyn Backend,
        dense: &NodeRef,
        format: Format,
    ) -> Result<SparseMatrix> {
        dense.check_alive()?;
        if dense.meta.constant {
            return Err(GpuTableError::invalid(
                "fromDense needs a column of rows, not a constant",
            ));
        }
        let (m, n) = (dense.meta.length, dense.meta.size);
        let cells = ir::reshape(dense, 1)?;
        let nonzero = ir::select(&cells, &u32_constant(1)?, &u32_constant(0)?)?;
        // Counted on the device: one evaluation computes the matrix and reads its count.
        let nonzeros = Kept::new(&nonzero)?;
        let places = nonzeros.kept_rows();
        let (rows, cols) = ir::split_place(&places, n)?;
        let values = ir::gather(&places, &cells)?;
        // CSR and COO are computed now: with rows of one lane, the cells are `dense` itself,
        // which the caller may destroy next.
        match format {
            // Row-major places: already canonical, and a row's pointer is the number of
            // nonzeros before its first cell (no search, no column of the rows).
            Format::Csr => {
                let first_cells =
                    ir::binary(BinaryOp::Multiply, &u32_rows(m + 1)?, &u32_constant(n)?)?;
                let pointers = nonzeros.kept_before(&first_cells)?;
                csr_of_parts((m, n), pointers, cols, values)
                    .computed(device)
                    .await
            }
            // Row-major places, one per cell: a canonical COO.
            format => {
                let coo = SparseMatrix::of_entries((m, n), (rows, cols, values), true)
                    .computed(device)
                    .await?;
                match format {
                    Format::Coo => Ok(coo),
                    format => coo.into_format(device, format).await,
                }
            }
        }
    }

    /// The entries for which `keep` (from each entry's row, column and value) is nonzero, in
    /// this matrix's format (CSR and CSC canonical), kept on `device` in one pass of keeping,
    /// which keeps their order: after one sort, or none for a canonical matrix.
    async fn keep(
        &self,
        device: &dyn Backend,
        keep: impl Fn(&NodeRef, &NodeRef, &NodeRef) -> Result<NodeRef>,
    ) -> Result<SparseMatrix> {
        // CSC of A is CSR of its transpose: sorted column-major there, so the CSC needs no
        // second sort. Other formats are row-major: a COO result stays row-major, as
        // `toCOO()` is, and a CSR one comes straight from the kept entries.
        let transposed = self.format == Format::Csc;
        let lines = match transposed {
            true => self.transpose(),
            false => self.clone(),
        };
        let (major, minor, values) = lines.row_major_entries()?;
        let flags = match transposed {
            true => keep(&minor, &major, &values)?,
            false => keep(&major, &minor, &values)?,
        };
        // A canonical CSR's kept entries are canonical: its pointers count them, read from
        // the kept places, so its rows are not kept.
        let compressed = lines.is_canonical_csr();
        let kept = Kept::new(&flags)?;
        let rows = kept.kept_rows();
        let (kept_minor, kept_values) = (ir::gather(&rows, &minor)?, ir::gather(&rows, &values)?);
        if compressed {
            let pointers = kept.kept_before(&lines.major)?;
            // Computed now: the gathers read this matrix's own components.
            let csr = csr_of_parts(lines.shape, pointers, kept_minor, kept_values)
                .computed(device)
                .await?;
            return Ok(match transposed {
                true => csr.transpose(),
                false => csr,
            });
        }
        let entries = (ir::gather(&rows, &major)?, kept_minor, kept_values);
        // Computed now, with their count: a matrix's entry count is known.
        let entries = SparseMatrix::settled_entries(device, entries).await?;
        Ok(match self.format {
            Format::Csr => csr_of_sorted(device, entries, self.shape).await?,
            Format::Csc => csr_of_sorted(device, entries, lines.shape)
                .await?
                .transpose(),
            // Row-major still, and one per cell where the matrix was.
            Format::Coo => SparseMatrix::of_entries(self.shape, entries, lines.canonical),
        })
    }

    /// This matrix's canonical CSR without its entries equal to 0 (NaN is kept, as
    /// `fromDense` keeps it): the kept entries of the canonical CSR, in its order.
    pub(super) async fn nonzero_csr(&self, device: &dyn Backend) -> Result<SparseMatrix> {
        let csr = self.shared_csr(device).await?;
        csr.keep(device, |_, _, values| {
            ir::select(values, &u32_constant(1)?, &u32_constant(0)?)
        })
        .await
    }

    /// Entries with `col - row >= k` (`upper`) or `col - row <= k` (`tril`).
    pub async fn triangle(
        &self,
        device: &dyn Backend,
        k: i64,
        upper: bool,
    ) -> Result<SparseMatrix> {
        // int32 arithmetic: |col - row| and the clamped |k| below 2^30 keep d in range.
        const LIMIT: i64 = 1 << 30;
        if self.shape.0 as i64 >= LIMIT || self.shape.1 as i64 >= LIMIT {
            return Err(GpuTableError::new(
                crate::ErrorCode::LimitExceeded,
                "triu and tril take matrices of fewer than 2^30 rows and columns",
            ));
        }
        let k = k.clamp(-LIMIT, LIMIT) as i32;
        self.keep(device, |rows, cols, _| {
            let (rows, cols) = (ir::cast(rows, DType::I32)?, ir::cast(cols, DType::I32)?);
            // upper: col - row - k + 1 > 0; lower: k - (col - row) + 1 > 0.
            let diagonal = ir::binary(BinaryOp::Subtract, &cols, &rows)?;
            let d = match upper {
                true => ir::binary(BinaryOp::Subtract, &diagonal, &i32_constant(k - 1)?)?,
                false => ir::binary(BinaryOp::Subtract, &i32_constant(k + 1)?, &diagonal)?,
            };
            positive_part_twice(&d)
        })
        .await
    }

    /// Cells with `|value| > tol` (NaN values are kept). A cell's value is the sum of its
    /// entries, so a matrix that may hold duplicates sums them first: 2 and -1.9 in one cell
    /// are 0.1, dropped by `droptol(1)` (one sort, which `keep` would run anyway).
    pub async fn droptol(&self, device: &dyn Backend, tol: f64) -> Result<SparseMatrix> {
        if tol.is_nan() {
            return Err(GpuTableError::invalid("droptol needs a number"));
        }
        let summed = self.summed(device).await?;
        summed
            .keep(device, |_, _, values| {
                if values.meta.dtype.class() != Class::F {
                    return integer_magnitude_above(values, tol);
                }
                // In float32, as NumPy 2 compares a float32 array with a Python float.
                if tol as f32 == f32::INFINITY {
                    // No value is above it (|inf| - inf would be NaN, kept): NaN alone stays.
                    let equal = ir::equal_all(values, values)?;
                    return ir::binary(BinaryOp::Subtract, &u32_constant(1)?, &equal);
                }
                let tol = ir::source(ColumnData::F32(vec![tol as f32]), 1, true)?;
                positive_part_twice(&ir::binary(BinaryOp::Subtract, &magnitude(values)?, &tol)?)
            })
            .await
    }
}
