//! Numbers about a sparse matrix: sums, `min` and `max` as lazy reductions; norms, operator
//! norms, `isZero`, `isSymmetric` and one entry resolved on the device with a scalar or two
//! read back. Dense semantics: duplicates count as their sum, implicit zeros as zeros.

use super::{as_type, cell_starts, magnitude, reduce, zero_row, Format, SparseMatrix};
use crate::dtype::DType;
use crate::dynamic::read_scalars;
use crate::engine::Backend;
use crate::error::{GpuTableError, Result, Shown};
use crate::ir::{self, u32_constant, u32_row, u32_rows, BinaryOp, NodeRef, ReduceKind};
use crate::ErrorCode;

/// Row 0 of `node` (one lane), evaluated on `device` and read back.
async fn read_number(device: &dyn Backend, node: &NodeRef) -> Result<f64> {
    Ok(read_scalars(device, std::slice::from_ref(node)).await?[0])
}

/// The largest of `x` (float32, size 1), or 0 for no rows.
async fn largest(device: &dyn Backend, x: &NodeRef) -> Result<f64> {
    match x.meta.length {
        0 => Ok(0.0),
        _ => read_number(device, &reduce(ReduceKind::Max, x)?).await,
    }
}

impl SparseMatrix {
    /// `sum(A, {axis})` (lazy): every entry (`None`), one row per column (`Some(0)`) or one
    /// row per row (`Some(1)`), in `sum`'s type. The sum of every entry combines at most
    /// `split_every` partials at a time, as the dense reductions do; the sums along an axis
    /// are segmented sums, which have no partials.
    pub fn sum(&self, axis: Option<u32>, split_every: u32) -> Result<NodeRef> {
        let cells = self.shape.0 as u64 * self.shape.1 as u64;
        let total = |x: &NodeRef| ir::reduce(ReduceKind::Sum, x, None, split_every);
        match axis {
            // No stored entry in a nonempty matrix sums to 0, as the dense one does.
            None if self.nnz() == 0 && cells > 0 => total(&zero_row(self.values.meta.dtype)?),
            None => total(&self.values),
            Some(1) => self.row_sums(),
            Some(0) => self.transpose().row_sums(),
            Some(other) => Err(GpuTableError::invalid(format!(
                "axis must be 0 (one row per column) or 1 (one row per row), got {other}"
            ))),
        }
    }

    /// `min(A)` or `max(A)` (lazy, one row of the values' type): over the stored cells
    /// (duplicates summed) and, unless every cell is stored, an implicit 0; combining at
    /// most `split_every` partials at a time.
    pub fn extreme(&self, kind: ReduceKind, split_every: u32) -> Result<NodeRef> {
        if !matches!(kind, ReduceKind::Min | ReduceKind::Max) {
            return Err(GpuTableError::new(
                ErrorCode::Internal,
                "extreme of min or max",
            ));
        }
        let cells = self.shape.0 as u64 * self.shape.1 as u64;
        let (nnz, dtype) = (self.nnz(), self.values.meta.dtype);
        let candidates = match nnz {
            // An empty matrix reduces nothing (EMPTY_INPUT, as a dense one).
            0 if cells == 0 => self.values.clone(),
            0 => zero_row(dtype)?,
            _ => {
                let (sums, distinct) = self.cell_sums()?;
                let implicit = match cells > nnz as u64 {
                    true => zero_row(dtype)?,
                    // cells <= nnz < 2^31: with every cell stored, repeat a stored one.
                    false => {
                        let full = ir::equal_all(&distinct, &u32_row(cells as u32)?)?;
                        ir::select(&full, &ir::slice(&sums, 0.0, 1.0)?, &zero_row(dtype)?)?
                    }
                };
                ir::concat(&[sums, implicit])?
            }
        };
        ir::reduce(kind, &candidates, None, split_every)
    }

    /// Each stored entry (sorted row-major) with the sum of every entry in its cell, in the
    /// values' type, and the number of distinct cells (one row), lazily. Cells are numbered
    /// by a scan of where they start; a cell's first entry takes the segmented sum of the
    /// cell (the others an empty segment), and every entry gathers it from there.
    fn cell_sums(&self) -> Result<(NodeRef, NodeRef)> {
        let (rows, cols, values) = self.row_major_entries()?;
        let starts = cell_starts(&rows, &cols)?;
        let cell = ir::binary(BinaryOp::Add, &ir::exclusive_scan(&starts)?, &starts)?;
        // Entry k's segment is [end of entry k-1's cell, end of entry k's cell).
        let ends = ir::search_sorted(&cell, &cell, true)?;
        let offsets = ir::concat(&[u32_row(0)?, ends])?;
        let at_first = ir::segment_sum(&values, &offsets)?;
        let firsts = ir::search_sorted(&cell, &cell, false)?;
        let sums = as_type(&ir::gather(&firsts, &at_first)?, values.meta.dtype)?;
        let n = values.meta.length as f64;
        Ok((sums, ir::slice(&cell, n - 1.0, n)?))
    }

    /// `norm(p)`: 2 (Frobenius), 1 (sum of absolute values), infinity (largest absolute value).
    pub async fn norm(&self, device: &dyn Backend, p: f64) -> Result<f64> {
        if ![1.0, 2.0, f64::INFINITY].contains(&p) {
            return Err(GpuTableError::invalid(format!(
                "norm takes p = 1, 2 or Infinity, got {}",
                Shown(p)
            )));
        }
        let csr = self.shared_csr(device).await?;
        let size = magnitude(&csr.values)?;
        match p {
            2.0 => {
                let squares = ir::binary(BinaryOp::Multiply, &size, &size)?;
                Ok(read_number(device, &reduce(ReduceKind::Sum, &squares)?)
                    .await?
                    .sqrt())
            }
            1.0 => read_number(device, &reduce(ReduceKind::Sum, &size)?).await,
            _ => largest(device, &size).await,
        }
    }

    /// `opnorm(p)`: 1 (largest column sum of absolute values), infinity (largest row sum).
    pub async fn opnorm(&self, device: &dyn Backend, p: f64) -> Result<f64> {
        let rows = match p {
            1.0 => self.transpose(),
            p if p == f64::INFINITY => self.clone(),
            p => {
                return Err(GpuTableError::invalid(format!(
                    "opnorm takes p = 1 or Infinity, got {}",
                    Shown(p)
                )))
            }
        };
        let csr = rows.shared_csr(device).await?;
        let sums = ir::segment_sum(&magnitude(&csr.values)?, &csr.major)?;
        largest(device, &sums).await
    }

    /// Whether no stored entry is nonzero.
    pub async fn is_zero(&self, device: &dyn Backend) -> Result<bool> {
        // A flag per entry, as fromDense counts nonzeros (NaN is one; a max would skip it).
        let nonzero = ir::select(&self.values, &u32_constant(1)?, &u32_constant(0)?)?;
        Ok(largest(device, &ir::cast(&nonzero, DType::F32)?).await? == 0.0)
    }

    /// Whether the matrix is square and equal to its transpose, as dense arrays are:
    /// duplicates summed, and entries equal to 0 (stored zeros, duplicates summing to 0)
    /// left out, so a stored zero equals the implicit one across the diagonal.
    pub async fn is_symmetric(&self, device: &dyn Backend) -> Result<bool> {
        if self.shape.0 != self.shape.1 {
            return Ok(false);
        }
        let a = self.nonzero_csr(device).await?;
        let t = a.transpose().to_csr(device).await?;
        // Both hold the same distinct cells' count: compare them entry by entry.
        if a.nnz() == 0 {
            return Ok(true);
        }
        // Each entry's row, column and value, both ways round, compared in their own types
        // (as float32, indices and integers past 2^24 would round to equal neighbours).
        let row_of = |m: &SparseMatrix| ir::search_sorted(&m.major, &u32_rows(m.nnz())?, true);
        let same = [
            ir::equal_all(&row_of(&a)?, &row_of(&t)?)?,
            ir::equal_all(&a.minor, &t.minor)?,
            ir::equal_all(&a.values, &t.values)?,
        ];
        let all_same = ir::binary(
            BinaryOp::Multiply,
            &ir::binary(BinaryOp::Multiply, &same[0], &same[1])?,
            &same[2],
        )?;
        Ok(read_number(device, &reduce(ReduceKind::Min, &all_same)?).await? == 1.0)
    }

    /// Entry `(i, j)` (0 where nothing is stored; duplicates summed).
    pub async fn get(&self, device: &dyn Backend, i: u32, j: u32) -> Result<f64> {
        if i >= self.shape.0 || j >= self.shape.1 {
            return Err(GpuTableError::invalid(format!(
                "({i}, {j}) lies outside the shape {} x {}",
                self.shape.0, self.shape.1
            )));
        }
        let csr = match self.format {
            Format::Csr => self.clone(),
            _ => self.to_csr(device).await?,
        };
        // The entries of row i with column j: a segmented sum over the row's stored entries.
        let at_j = ir::equal_all(&csr.minor, &u32_constant(j)?)?;
        // A select, not a product: a NaN in another column must not reach the sum. Summed in
        // the values' own class: a float32 would round integers past 2^24.
        let zero = as_type(&u32_constant(0)?, csr.values.meta.dtype)?;
        let values = ir::select(&at_j, &csr.values, &zero)?;
        let bounds = ir::slice(&csr.major, i as f64, i as f64 + 2.0)?;
        read_number(device, &ir::segment_sum(&values, &bounds)?).await
    }
}
