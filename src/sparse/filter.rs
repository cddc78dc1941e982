//! Sparse matrices made by keeping some entries: from a dense matrix (its nonzeros), and
//! `triu`, `tril`, `droptol`. The kept entries are a stream compaction on the device (one
//! count read back); the keep flags are arithmetic that is positive exactly where the
//! condition holds (`d + |d|` is positive iff `d` is), so no comparison op is needed.

use super::{
    check_limits, csr_of_row_major, csr_of_sorted, magnitude, split_place, Entries, Format,
    SparseMatrix,
};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::engine::Backend;
use crate::error::{GpuTableError, Result};
use crate::ir::{self, u32_constant, u32_rows, BinaryOp, NodeRef, UnaryOp};

/// `d + |d|`: positive where `d` is, 0 elsewhere (NaN stays NaN: kept by compaction).
fn positive_part_twice(d: &NodeRef) -> Result<NodeRef> {
    ir::binary(BinaryOp::Add, d, &ir::unary(UnaryOp::Abs, d)?)
}

fn i32_constant(value: i32) -> Result<NodeRef> {
    ir::source(ColumnData::I32(vec![value]), 1, true)
}

/// The `entries` (rows, columns, values) for which `keep` is nonzero, in their order
/// (compaction keeps it), kept on `device`. The entries are stored with the count, so
/// entries the flags and the gathers both read (sorted ones) are computed once.
async fn kept_entries<B: Backend>(
    device: &B,
    (rows, cols, values): Entries,
    keep: impl Fn(&NodeRef, &NodeRef, &NodeRef) -> Result<NodeRef>,
) -> Result<Entries> {
    let flags = keep(&rows, &cols, &values)?;
    let entries = [rows.clone(), cols.clone(), values.clone()];
    let count_rows = u32_rows(values.meta.length)?;
    let kept = crate::dynamic::compact(device, &flags, &count_rows, &entries).await?;
    Ok((
        ir::gather(&kept, &rows)?,
        ir::gather(&kept, &cols)?,
        ir::gather(&kept, &values)?,
    ))
}

impl SparseMatrix {
    /// The nonzeros of `dense` (`m` rows of size `n`; NaN counts as nonzero) in `format`,
    /// found on `device` (one count read back).
    pub async fn from_dense<B: Backend>(
        device: &B,
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
        let numbers = u32_rows(cells.meta.length)?;
        let places = crate::dynamic::compact(device, &nonzero, &numbers, &[]).await?;
        let (rows, cols) = split_place(&places, n)?;
        let values = ir::gather(&places, &cells)?;
        check_limits((m, n), &values)?;
        match format {
            // Row-major places: already canonical, so the pointers come straight from the rows.
            Format::Csr => csr_of_row_major(&rows, cols, values, (m, n)),
            format => {
                SparseMatrix::of_entries((m, n), (rows, cols, values))
                    .into_format(device, format)
                    .await
            }
        }
    }

    /// The entries for which `keep` (from each entry's row, column and value) is nonzero, in
    /// this matrix's format (CSR and CSC canonical), kept on `device` with one sort.
    async fn keep<B: Backend>(
        &self,
        device: &B,
        keep: impl Fn(&NodeRef, &NodeRef, &NodeRef) -> Result<NodeRef>,
    ) -> Result<SparseMatrix> {
        // CSC of A is CSR of its transpose: sorted column-major there, so the CSC needs no
        // second sort. Other formats sort row-major: a COO result stays row-major, as
        // `toCOO()` is, and a CSR one comes straight from the kept entries.
        let transposed = self.format == Format::Csc;
        let lines = match transposed {
            true => self.transpose(),
            false => self.clone(),
        };
        let coo = lines.to_coo()?;
        let sorted = (coo.major, coo.minor, coo.values);
        let kept = kept_entries(device, sorted, |major, minor, values| match transposed {
            true => keep(minor, major, values),
            false => keep(major, minor, values),
        })
        .await?;
        Ok(match self.format {
            Format::Csr => csr_of_sorted(device, kept, self.shape).await?,
            Format::Csc => csr_of_sorted(device, kept, lines.shape).await?.transpose(),
            Format::Coo => SparseMatrix::of_entries(self.shape, kept),
        })
    }

    /// This matrix's canonical CSR without its entries equal to 0 (NaN is kept, as
    /// `fromDense` keeps it): one sort, then a compaction, which keeps the order.
    pub(super) async fn nonzero_csr<B: Backend>(&self, device: &B) -> Result<SparseMatrix> {
        let csr = self.to_csr(device).await?;
        let (rows, cols, values) = kept_entries(device, csr.entries()?, |_, _, values| {
            ir::select(values, &u32_constant(1)?, &u32_constant(0)?)
        })
        .await?;
        csr_of_row_major(&rows, cols, values, self.shape)
    }

    /// Entries with `col - row >= k` (`upper`) or `col - row <= k` (`tril`).
    pub async fn triangle<B: Backend>(
        &self,
        device: &B,
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

    /// Entries with `|value| > tol` (NaN values are kept).
    pub async fn droptol<B: Backend>(&self, device: &B, tol: f64) -> Result<SparseMatrix> {
        if tol.is_nan() {
            return Err(GpuTableError::invalid("droptol needs a number"));
        }
        self.keep(device, |_, _, values| {
            let tol = ir::source(ColumnData::F32(vec![tol as f32]), 1, true)?;
            positive_part_twice(&ir::binary(BinaryOp::Subtract, &magnitude(values)?, &tol)?)
        })
        .await
    }
}
