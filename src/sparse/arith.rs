//! Arithmetic with sparse operands whose result stays sparse (api.md): unary ops with
//! f(0) = 0, scaling by a number, the union of two matrices (`add`, `subtract`), their
//! intersection (`multiply`), and `kron`. Results come out in the left operand's format;
//! ops that are not linear in each stored value sum duplicates first.

use super::{
    as_type, copied, csr_of_parts, line_starts, place_of, sort_row_major, Entries, Format,
    SparseMatrix,
};
use crate::dtype::{Class, DType};
use crate::engine::Backend;
use crate::error::{GpuTableError, Result};
use crate::ir::{self, u32_constant, u32_rows, BinaryOp, NodeRef, UnaryOp};

impl SparseMatrix {
    /// The same structure (copied: the result owns its components) with `map` applied to
    /// the stored values.
    fn with_values(&self, map: impl FnOnce(&NodeRef) -> Result<NodeRef>) -> Result<SparseMatrix> {
        Ok(SparseMatrix {
            major: copied(&self.major)?,
            minor: copied(&self.minor)?,
            values: map(&self.values)?,
            ..self.clone()
        })
    }

    /// `op` of every entry, for the unary ops with f(0) = 0 (`abs sqrt sin tan`): duplicates
    /// are summed first, as `op` of a dense cell sees their sum.
    pub async fn unary(&self, device: &dyn Backend, op: UnaryOp) -> Result<SparseMatrix> {
        if !matches!(
            op,
            UnaryOp::Abs | UnaryOp::Sqrt | UnaryOp::Sin | UnaryOp::Tan
        ) {
            return Err(GpuTableError::invalid(format!(
                "{op:?} does not keep zeros: apply it to toDense()"
            )));
        }
        // Computed now: an awaited result holds its own data, not a graph over this matrix.
        self.summed(device)
            .await?
            .with_values(|values| ir::unary(op, values))?
            .computed(device)
            .await
    }

    /// `A * number`, `number * A` or `A / number` (`number`: one constant row), with
    /// this structure, or `None` when duplicates must be summed first (an integer
    /// division is not linear in its dividend).
    pub fn scaled_now(
        &self,
        op: BinaryOp,
        number: &NodeRef,
        number_first: bool,
    ) -> Result<Option<SparseMatrix>> {
        number.check_alive()?;
        if !number.meta.constant || number.meta.size != 1 {
            return Err(GpuTableError::invalid(
                "a sparse matrix is scaled by one number",
            ));
        }
        let dtype = DType::join([self.values.meta.dtype, number.meta.dtype]);
        match (op, number_first) {
            (BinaryOp::Multiply, _) => {}
            (BinaryOp::Divide, false) if dtype.class() == Class::F => {}
            (BinaryOp::Divide, false) => return Ok(None),
            _ => {
                return Err(GpuTableError::invalid(format!(
                    "{op:?} with a number does not keep zeros: apply it to toDense()"
                )))
            }
        }
        let scaled = self.with_values(|values| match number_first {
            true => ir::binary(op, number, values),
            false => ir::binary(op, values, number),
        })?;
        Ok(Some(scaled))
    }

    /// `scaled_now`, summing duplicates on `device` first where it must (only `A / number`).
    pub async fn scaled(
        &self,
        device: &dyn Backend,
        op: BinaryOp,
        number: &NodeRef,
        number_first: bool,
    ) -> Result<SparseMatrix> {
        match self.scaled_now(op, number, number_first)? {
            Some(scaled) => Ok(scaled),
            None => {
                let summed = self.summed(device).await?;
                let scaled = summed.with_values(|values| ir::binary(op, values, number))?;
                scaled.computed(device).await
            }
        }
    }

    /// `A + B`, `A - B` (the union of the stored entries) or `A * B` (their intersection)
    /// of two matrices of one shape, canonical, in this matrix's format.
    pub async fn combine(
        &self,
        device: &dyn Backend,
        op: BinaryOp,
        other: &SparseMatrix,
    ) -> Result<SparseMatrix> {
        if self.shape != other.shape {
            return Err(GpuTableError::invalid(format!(
                "sparse operands need one shape, got {} x {} and {} x {}",
                self.shape.0, self.shape.1, other.shape.0, other.shape.1
            )));
        }
        // CSC works on the transposes: their CSR is its CSC.
        let transposed = self.format == Format::Csc;
        let (a, b) = match transposed {
            true => (self.transpose(), other.transpose()),
            false => (self.clone(), other.clone()),
        };
        let csr = match op {
            BinaryOp::Add | BinaryOp::Subtract => union(device, op, &a, &b).await?,
            BinaryOp::Multiply => intersection(device, &a, &b).await?,
            _ => {
                return Err(GpuTableError::invalid(format!(
                    "{op:?} of two sparse matrices does not keep zeros: apply it to toDense()"
                )))
            }
        };
        match self.format {
            Format::Csr => Ok(csr),
            Format::Csc => Ok(csr.transpose()),
            Format::Coo => csr.as_coo(),
        }
    }

    /// `kron(A, B)` as COO (lazy): A(i, j) B(p, q) at row i * mB + p, column j * nB + q,
    /// one entry per pair of stored entries (A's entries outermost).
    pub fn kron_entries(&self, other: &SparseMatrix) -> Result<SparseMatrix> {
        let ((ma, na), (mb, nb)) = (self.shape, other.shape);
        let (rows, cols) = (ma as u64 * mb as u64, na as u64 * nb as u64);
        let entries = self.nnz() as u64 * other.nnz() as u64;
        if rows >= u32::MAX as u64 || cols >= u32::MAX as u64 || entries >= 1 << 31 {
            return Err(GpuTableError::new(
                crate::ErrorCode::LimitExceeded,
                format!(
                    "kron would be {rows} x {cols} with {entries} entries: dimensions must stay below 2^32 - 1 and entries below 2^31"
                ),
            ));
        }
        // Pair k joins A's entry k / nnz(B) with B's entry k % nnz(B).
        let (a, b) = ir::split_place(&u32_rows(entries as u32)?, other.nnz())?;
        let (ra, ca, va) = self.entries()?;
        let (rb, cb, vb) = other.entries()?;
        let place = |outer: &NodeRef, inner: &NodeRef, block: u32| -> Result<NodeRef> {
            place_of(&ir::gather(&a, outer)?, block, &ir::gather(&b, inner)?)
        };
        Ok(SparseMatrix::of_entries(
            (rows as u32, cols as u32),
            (
                place(&ra, &rb, mb)?,
                place(&ca, &cb, nb)?,
                ir::binary(
                    BinaryOp::Multiply,
                    &ir::gather(&a, &va)?,
                    &ir::gather(&b, &vb)?,
                )?,
            ),
            false,
        ))
    }

    /// `kron(A, B)` in A's format (CSR and CSC canonical), built on `device`.
    pub async fn kron(&self, device: &dyn Backend, other: &SparseMatrix) -> Result<SparseMatrix> {
        let entries = self.kron_entries(other)?;
        match self.format {
            // Computed now: the pairs are gathered from both operands' own components.
            Format::Coo => entries.computed(device).await,
            format => entries.into_format(device, format).await,
        }
    }
}

/// Both operands' entries with their values in the result's type (`b`'s negated for a
/// difference).
fn both_entries(op: BinaryOp, a: &SparseMatrix, b: &SparseMatrix) -> Result<Entries> {
    let dtype = DType::join([a.values.meta.dtype, b.values.meta.dtype]);
    let (ra, ca, va) = a.entries()?;
    let (rb, cb, vb) = b.entries()?;
    let vb = as_type(&vb, dtype)?;
    let vb = match op {
        // 0 - b in the result's type: integers wrap back when the sums add it.
        BinaryOp::Subtract => ir::binary(
            BinaryOp::Subtract,
            &ir::cast(&u32_constant(0)?, dtype)?,
            &vb,
        )?,
        _ => vb,
    };
    Ok((
        ir::concat(&[ra, rb])?,
        ir::concat(&[ca, cb])?,
        ir::concat(&[as_type(&va, dtype)?, vb])?,
    ))
}

/// Canonical CSR of `a ± b`: both operands' entries together, duplicates summed.
async fn union(
    device: &dyn Backend,
    op: BinaryOp,
    a: &SparseMatrix,
    b: &SparseMatrix,
) -> Result<SparseMatrix> {
    SparseMatrix::of_entries(a.shape, both_entries(op, a, b)?, false)
        .to_csr(device)
        .await
}

/// Canonical CSR of `a .* b`: with both canonical, a cell stored in both is two adjacent
/// entries of their row-major merge (a's first: the sort is stable), kept on the device.
async fn intersection(
    device: &dyn Backend,
    a: &SparseMatrix,
    b: &SparseMatrix,
) -> Result<SparseMatrix> {
    let (a, b) = (a.shared_csr(device).await?, b.shared_csr(device).await?);
    let (rows, cols, values) = sort_row_major(both_entries(BinaryOp::Multiply, &a, &b)?, a.shape)?;
    let total = values.meta.length;
    let pairs = total.saturating_sub(1);
    let cells = ir::interleave(&[rows.clone(), cols.clone()])?;
    let matched = ir::equal_all(
        &ir::slice(&cells, 0.0, pairs as f64)?,
        &ir::slice(&cells, 1.0, total.max(1) as f64)?,
    )?;
    let pairs_kept = crate::dynamic::Kept::new(&matched)?;
    let first = pairs_kept.kept_rows();
    let second = ir::binary(BinaryOp::Add, &first, &u32_constant(1)?)?;
    let products = ir::binary(
        BinaryOp::Multiply,
        &ir::gather(&first, &values)?,
        &ir::gather(&second, &values)?,
    )?;
    // A row's pointer is the number of matched pairs before its first merged entry (such a
    // pair ends before that entry, in an earlier row), and all of them past the last pair:
    // the search's end (`total`) counts as the last pair's place (`pairs`).
    let firsts = line_starts(&rows, a.shape.0)?;
    let past_end = ir::binary(BinaryOp::Divide, &firsts, &u32_constant(total)?)?;
    let pair_places = ir::binary(BinaryOp::Subtract, &firsts, &past_end)?;
    // One evaluation: the merge's sort, the pairs kept and counted, the matrix.
    csr_of_parts(
        a.shape,
        pairs_kept.kept_before(&pair_places)?,
        ir::gather(&first, &cols)?,
        products,
    )
    .computed(device)
    .await
}
