//! Sparse matrices on the device (sparse-arrays-interface.txt, api.md "Sparse arrays"): CSR,
//! CSC and COO components are device values, and every conversion and product is a graph
//! of the IR's primitives (radix sort, scan, scatter, searchSorted, kept rows, segmented
//! sums), so it runs on every backend with no host round trip of the entries. Operations whose entry count
//! depends on the data read back that one count; validation reads back a few scalars.

use crate::column::ColumnData;
use crate::dtype::{Class, DType};
use crate::dynamic::{read_scalars, Kept};
use crate::engine::{self, Backend};
use crate::error::{GpuTableError, Result};
use crate::ir::{self, BinaryOp, NodeRef, ReduceKind, UnaryOp, DEFAULT_SPLIT_EVERY};
use crate::ir::{u32_constant, u32_row, u32_rows};

mod arith;
mod filter;
mod measure;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csr,
    Csc,
    Coo,
}

/// A sparse matrix of `shape` (rows, columns). `major` holds the pointers of CSR (rows) or
/// CSC (columns), or COO's row indices; `minor` the column (CSR, COO) or row (CSC)
/// indices; `values` one value per stored entry. Indices are uint32.
#[derive(Clone, Debug)]
pub struct SparseMatrix {
    pub format: Format,
    pub shape: (u32, u32),
    pub major: NodeRef,
    pub minor: NodeRef,
    pub values: NodeRef,
    /// Whether the entries are in order along the major axis (CSR and COO: row-major, CSC:
    /// column-major) with at most one per cell: scipy's canonical format, which every
    /// conversion leaves. Components given by a caller are not checked, so not assumed to
    /// be (past one entry); where order matters they are sorted.
    pub canonical: bool,
}

/// `node` as uint32 indices: integers of size 1 (negative ones wrap past every bound).
fn as_indices(node: &NodeRef, what: &str) -> Result<NodeRef> {
    node.check_alive()?;
    if node.meta.size != 1 || node.meta.dtype.class() == Class::F || node.meta.constant {
        return Err(GpuTableError::invalid(format!(
            "{what} must be a column of integers of size 1, got {} x{}",
            node.meta.dtype.name(),
            node.meta.size
        )));
    }
    as_type(node, DType::U32)
}

/// `read_scalars` of uint32 checks (exact in f64).
async fn read_u32s(device: &dyn Backend, nodes: &[NodeRef]) -> Result<Vec<u32>> {
    Ok(read_scalars(device, nodes)
        .await?
        .into_iter()
        .map(|v| v as u32)
        .collect())
}

fn invalid(message: String) -> GpuTableError {
    GpuTableError::invalid(message)
}

/// The entry count of `values` (a live column of size 1), within the limits: dimensions
/// below 2^32 - 1 (pointer arrays have one row more) and fewer than 2^31 entries (pointer
/// checks rely on a decrease wrapping past every valid pointer).
fn check_limits(shape: (u32, u32), values: &NodeRef) -> Result<u32> {
    values.check_alive()?;
    if values.meta.size != 1 || values.meta.constant {
        return Err(invalid(format!(
            "nzVal must be a column of size 1, got size {}",
            values.meta.size
        )));
    }
    if shape.0 == u32::MAX || shape.1 == u32::MAX || values.meta.length >= 1 << 31 {
        return Err(GpuTableError::new(
            crate::ErrorCode::LimitExceeded,
            format!(
                "a sparse matrix has dimensions below 2^32 - 1 and fewer than 2^31 entries, got {} x {} with {}",
                shape.0, shape.1, values.meta.length
            ),
        ));
    }
    Ok(values.meta.length)
}

/// Each stored entry's row, column and value.
type Entries = (NodeRef, NodeRef, NodeRef);

/// A copy of `node` (lazy, elementwise): a result that keeps an operand's component holds a
/// node of its own, so destroying either leaves the other.
fn copied(node: &NodeRef) -> Result<NodeRef> {
    ir::cast(node, node.meta.dtype)
}

/// `kind` over every row of `x`.
fn reduce(kind: ReduceKind, x: &NodeRef) -> Result<NodeRef> {
    ir::reduce(kind, x, None, DEFAULT_SPLIT_EVERY)
}

/// `node` as `dtype`, cast only where its type differs.
fn as_type(node: &NodeRef, dtype: DType) -> Result<NodeRef> {
    match node.meta.dtype == dtype {
        true => Ok(node.clone()),
        false => ir::cast(node, dtype),
    }
}

/// `|v|` as float32 (converted first: the absolute value of a signed integer's least value
/// wraps in its own type).
fn magnitude(values: &NodeRef) -> Result<NodeRef> {
    ir::unary(UnaryOp::Abs, &ir::cast(values, DType::F32)?)
}

/// One row of `0` in `dtype` (not a constant: it joins other rows by `concat`).
fn zero_row(dtype: DType) -> Result<NodeRef> {
    as_type(&u32_row(0)?, dtype)
}

/// The row-major place `outer * block + inner` (uint32).
fn place_of(outer: &NodeRef, block: u32, inner: &NodeRef) -> Result<NodeRef> {
    ir::binary(
        BinaryOp::Add,
        &ir::binary(BinaryOp::Multiply, outer, &u32_constant(block)?)?,
        inner,
    )
}

/// Where each of the `lines` lines' entries begin among entries sorted by line (`major`),
/// and the entry count at the end: compressed pointers, searched.
fn line_starts(major: &NodeRef, lines: u32) -> Result<NodeRef> {
    ir::search_sorted(major, &u32_rows(lines + 1)?, false)
}

impl SparseMatrix {
    pub fn nnz(&self) -> u32 {
        self.values.meta.length
    }

    /// COO of `entries` (lazy, in their order; no validation), `canonical` where they are
    /// row-major, one per cell.
    fn of_entries(shape: (u32, u32), entries: Entries, canonical: bool) -> SparseMatrix {
        let (major, minor, values) = entries;
        SparseMatrix {
            format: Format::Coo,
            shape,
            major,
            minor,
            values,
            canonical,
        }
    }

    /// Whether this is a canonical CSR (kept as it is where one is needed).
    fn is_canonical_csr(&self) -> bool {
        self.canonical && self.format == Format::Csr
    }

    /// Whether the entries in storage order are row-major, one per cell (a canonical CSC
    /// of one column, a sparse vector, is).
    fn row_major(&self) -> bool {
        self.canonical && (self.format != Format::Csc || self.shape.1 <= 1)
    }

    /// This matrix with copies of its components (see `copied`).
    fn copy(&self) -> Result<SparseMatrix> {
        Ok(SparseMatrix {
            major: copied(&self.major)?,
            minor: copied(&self.minor)?,
            values: copied(&self.values)?,
            ..self.clone()
        })
    }

    /// This matrix with duplicates summed (its count read back at the end), or itself where it is
    /// canonical: for ops that see each cell's value (`with_values` results, `droptol`).
    async fn summed(&self, device: &dyn Backend) -> Result<SparseMatrix> {
        match self.canonical {
            true => Ok(self.clone()),
            false => self.canonical(device).await,
        }
    }

    /// This matrix with its components computed on `device`: a result that resolves holds
    /// its own data, not a graph over its source's components, which may be destroyed next.
    async fn computed(self, device: &dyn Backend) -> Result<SparseMatrix> {
        let components = [self.major.clone(), self.minor.clone(), self.values.clone()];
        crate::engine::evaluate(device, &components).await?;
        if components.iter().all(|c| c.counted().is_none()) {
            return Ok(self);
        }
        // Components counted on the device (kept entries) are settled to their rows (the
        // evaluation read their counts at its end) and stored as they are: a stored chunk
        // whole is shared, a part of one copied on the device.
        let settled = |x: &NodeRef| ir::known_rows(x, "a sparse component");
        let matrix = SparseMatrix {
            major: settled(&self.major)?,
            minor: settled(&self.minor)?,
            values: settled(&self.values)?,
            ..self
        };
        check_limits(matrix.shape, &matrix.values)?;
        let components = [
            matrix.major.clone(),
            matrix.minor.clone(),
            matrix.values.clone(),
        ];
        crate::engine::evaluate(device, &components).await?;
        Ok(matrix)
    }

    /// Entries counted on the device, evaluated together and settled to their rows.
    async fn settled_entries(device: &dyn Backend, entries: Entries) -> Result<Entries> {
        let (major, minor, values) = entries;
        let matrix = SparseMatrix::of_entries((0, 0), (major, minor, values), false);
        let SparseMatrix {
            major,
            minor,
            values,
            ..
        } = matrix.computed(device).await?;
        Ok((major, minor, values))
    }

    /// CSR (`Csr`) or CSC (`Csc`) from components, validated on `device`: `pointers` has
    /// one row per major line plus one, starts at 0, never decreases and ends at the entry
    /// count; every index is below the minor dimension; the components' lengths agree.
    pub async fn compressed(
        device: &dyn Backend,
        format: Format,
        pointers: &NodeRef,
        indices: &NodeRef,
        values: &NodeRef,
        shape: (u32, u32),
    ) -> Result<SparseMatrix> {
        let (major_dim, minor_dim, names) = match format {
            Format::Csr => (shape.0, shape.1, ("rowPtr", "colVal")),
            Format::Csc => (shape.1, shape.0, ("colPtr", "rowVal")),
            Format::Coo => return Err(engine::internal("compressed() of COO")),
        };
        let pointers = as_indices(pointers, names.0)?;
        let indices = as_indices(indices, names.1)?;
        let nnz = check_limits(shape, values)?;
        if indices.meta.length != nnz {
            return Err(invalid(format!(
                "{} has {} entries, nzVal {nnz}",
                names.1, indices.meta.length
            )));
        }
        if pointers.meta.length as u64 != major_dim as u64 + 1 {
            return Err(invalid(format!(
                "{} needs {} rows (one per line plus one), got {}",
                names.0,
                major_dim as u64 + 1,
                pointers.meta.length
            )));
        }
        let mut checks = vec![
            ir::slice(&pointers, 0.0, 1.0)?,
            ir::slice(&pointers, major_dim as f64, major_dim as f64 + 1.0)?,
            reduce(ReduceKind::Max, &pointers)?,
        ];
        if major_dim > 0 {
            let later = ir::slice(&pointers, 1.0, major_dim as f64 + 1.0)?;
            let earlier = ir::slice(&pointers, 0.0, major_dim as f64)?;
            // A decrease wraps past every value the pointers may hold (at most nnz < 2^31).
            checks.push(reduce(
                ReduceKind::Max,
                &ir::binary(BinaryOp::Subtract, &later, &earlier)?,
            )?);
        }
        if nnz > 0 {
            checks.push(reduce(ReduceKind::Max, &indices)?);
        }
        let got = read_u32s(device, &checks).await?;
        let (first, last, largest) = (got[0], got[1], got[2]);
        if first != 0 || last != nnz || largest > nnz || (major_dim > 0 && got[3] > nnz) {
            return Err(invalid(format!(
                "{} must start at 0, never decrease and end at nnz = {nnz} (starts at {first}, ends at {last})",
                names.0
            )));
        }
        if nnz > 0 && got[got.len() - 1] >= minor_dim {
            return Err(invalid(format!(
                "{} holds index {} outside the {minor_dim} {}",
                names.1,
                got[got.len() - 1],
                if format == Format::Csr {
                    "columns"
                } else {
                    "rows"
                }
            )));
        }
        Ok(SparseMatrix {
            format,
            shape,
            major: pointers,
            minor: indices,
            values: values.clone(),
            canonical: nnz <= 1,
        })
    }

    /// COO from components (duplicates allowed, in any order), validated on `device`.
    pub async fn coo(
        device: &dyn Backend,
        rows: &NodeRef,
        cols: &NodeRef,
        values: &NodeRef,
        shape: (u32, u32),
    ) -> Result<SparseMatrix> {
        let rows = as_indices(rows, "rowInd")?;
        let cols = as_indices(cols, "colInd")?;
        let nnz = check_limits(shape, values)?;
        if rows.meta.length != nnz || cols.meta.length != nnz {
            return Err(invalid(format!(
                "rowInd, colInd and nzVal need equal lengths, got {}, {} and {nnz}",
                rows.meta.length, cols.meta.length
            )));
        }
        if nnz > 0 {
            let got = read_u32s(
                device,
                &[
                    reduce(ReduceKind::Max, &rows)?,
                    reduce(ReduceKind::Max, &cols)?,
                ],
            )
            .await?;
            if got[0] >= shape.0 || got[1] >= shape.1 {
                return Err(invalid(format!(
                    "an entry at ({}, {}) lies outside the shape {} x {}",
                    got[0], got[1], shape.0, shape.1
                )));
            }
        }
        Ok(SparseMatrix {
            format: Format::Coo,
            shape,
            major: rows,
            minor: cols,
            values: values.clone(),
            canonical: nnz <= 1,
        })
    }

    /// The transpose: CSR becomes CSC of the transpose (and back) without moving data.
    pub fn transpose(&self) -> SparseMatrix {
        let format = match self.format {
            Format::Csr => Format::Csc,
            Format::Csc => Format::Csr,
            Format::Coo => Format::Coo,
        };
        let (major, minor) = match self.format {
            Format::Coo => (self.minor.clone(), self.major.clone()),
            _ => (self.major.clone(), self.minor.clone()),
        };
        SparseMatrix {
            format,
            shape: (self.shape.1, self.shape.0),
            major,
            minor,
            values: self.values.clone(),
            // COO's row-major order becomes column-major.
            canonical: self.canonical && self.format != Format::Coo,
        }
    }

    /// Each stored entry's (row, column, value), in storage order (lazy).
    fn entries(&self) -> Result<Entries> {
        let expand = |pointers: &NodeRef| -> Result<NodeRef> {
            let after = ir::search_sorted(pointers, &u32_rows(self.nnz())?, true)?;
            ir::binary(BinaryOp::Subtract, &after, &u32_constant(1)?)
        };
        Ok(match self.format {
            Format::Coo => (self.major.clone(), self.minor.clone(), self.values.clone()),
            Format::Csr => (
                expand(&self.major)?,
                self.minor.clone(),
                self.values.clone(),
            ),
            Format::Csc => (
                self.minor.clone(),
                expand(&self.major)?,
                self.values.clone(),
            ),
        })
    }

    /// Each stored entry's (row, column, value) in row-major order (lazy): a canonical CSR's,
    /// COO's or sparse vector's own order, else sorted (stably; duplicates and stored zeros
    /// kept).
    fn row_major_entries(&self) -> Result<Entries> {
        match self.row_major() {
            true => self.entries(),
            false => sort_row_major(self.entries()?, self.shape),
        }
    }

    /// Row-major COO (row, then column; duplicates and stored zeros kept), as a lazy graph:
    /// a canonical matrix's entries are not sorted again.
    pub fn to_coo(&self) -> Result<SparseMatrix> {
        let (rows, cols, values) = self.row_major_entries()?;
        let entries = (self.owned(rows)?, self.owned(cols)?, self.owned(values)?);
        // Sorted, a canonical CSC is row-major with one entry per cell too.
        Ok(Self::of_entries(self.shape, entries, self.canonical))
    }

    /// `node`, copied where it is one of this matrix's components (see `copied`).
    fn owned(&self, node: NodeRef) -> Result<NodeRef> {
        let components = [&self.major, &self.minor, &self.values];
        match components.iter().any(|c| c.id == node.id) {
            true => copied(&node),
            false => Ok(node),
        }
    }

    /// Canonical CSR (columns sorted within each row, duplicates summed, stored zeros kept),
    /// built on `device` in one evaluation: the one count read back (at its end) is the number of distinct entries. A
    /// canonical CSR is copied, and the row pointers of other row-major entries (a
    /// canonical COO, a sparse vector) are searched among their rows: none is sorted.
    pub async fn to_csr(&self, device: &dyn Backend) -> Result<SparseMatrix> {
        if self.is_canonical_csr() {
            return self.copy()?.computed(device).await;
        }
        if self.row_major() {
            let (rows, cols, values) = self.entries()?;
            let pointers = line_starts(&rows, self.shape.0)?;
            let csr = csr_of_parts(self.shape, pointers, self.owned(cols)?, self.owned(values)?);
            return csr.computed(device).await;
        }
        csr_of_sorted(device, self.row_major_entries()?, self.shape).await
    }

    /// Canonical CSR sharing this matrix's components where it is one (for results that
    /// hold none of them: copies carry their structure over).
    async fn shared_csr(&self, device: &dyn Backend) -> Result<SparseMatrix> {
        match self.is_canonical_csr() {
            true => Ok(self.clone()),
            false => self.to_csr(device).await,
        }
    }

    /// COO of the entries in storage order (row-major for a canonical CSR).
    fn as_coo(&self) -> Result<SparseMatrix> {
        Ok(Self::of_entries(
            self.shape,
            self.entries()?,
            self.row_major(),
        ))
    }

    /// These entries in `format`: COO as they are, CSR and CSC canonical (built on `device`).
    pub async fn into_format(self, device: &dyn Backend, format: Format) -> Result<SparseMatrix> {
        match format {
            Format::Coo => Ok(self),
            Format::Csr => self.to_csr(device).await,
            Format::Csc => Ok(self.transpose().to_csr(device).await?.transpose()),
        }
    }

    /// The same entries in canonical form and this matrix's format: CSR and CSC sorted
    /// within their lines, COO row-major; duplicates summed (their count read back at the end).
    pub async fn canonical(&self, device: &dyn Backend) -> Result<SparseMatrix> {
        match (self.canonical, self.format) {
            (true, _) => self.copy()?.computed(device).await,
            (false, Format::Coo) => self.to_csr(device).await?.as_coo(),
            (false, format) => self.clone().into_format(device, format).await,
        }
    }

    /// The dense matrix: `m` rows of `n` values (duplicates summed, of the values' type),
    /// as a lazy graph: entries sorted by their row-major place (unless they are in that
    /// order already), each cell the segmented sum of the entries at its place (found by
    /// searchSorted).
    pub fn to_dense(&self) -> Result<NodeRef> {
        let (m, n) = self.shape;
        let cells = m as u64 * n as u64;
        if cells >= u32::MAX as u64 {
            return Err(GpuTableError::new(
                crate::ErrorCode::LimitExceeded,
                format!("a dense {m} x {n} matrix has 2^32 cells or more"),
            ));
        }
        let dtype = self.values.meta.dtype;
        if n == 0 {
            return ir::source(crate::column::Column::empty(dtype, 1)?.data, 1, false);
        }
        let (rows, cols, values) = self.entries()?;
        let places = place_of(&rows, n, &cols)?;
        // Row-major entries are in place order already.
        let (places, values) = match self.row_major() {
            true => (places, values),
            false => {
                let (order, sorted) = ir::sort_permutation_below(&places, cells)?;
                (sorted, ir::gather(&order, &values)?)
            }
        };
        let bounds = line_starts(&places, cells as u32)?;
        let sums = ir::segment_sum(&values, &bounds)?;
        ir::reshape(&as_type(&sums, dtype)?, n)
    }

    /// Each stored entry's column and value grouped by row, with the rows' offsets into
    /// them (lazy): CSR's own components, a canonical COO's; others sort their entries by
    /// row first.
    fn by_rows(&self) -> Result<(NodeRef, NodeRef, NodeRef)> {
        if self.format == Format::Csr {
            return Ok((self.minor.clone(), self.values.clone(), self.major.clone()));
        }
        let (rows, cols, values) = self.entries()?;
        if self.row_major() {
            return Ok((cols, values, line_starts(&rows, self.shape.0)?));
        }
        let (order, sorted_rows) = ir::sort_permutation_below(&rows, self.shape.0 as u64)?;
        Ok((
            ir::gather(&order, &cols)?,
            ir::gather(&order, &values)?,
            line_starts(&sorted_rows, self.shape.0)?,
        ))
    }

    /// The sum of each row's entries (lazy): one row per row, in `sum`'s type.
    pub fn row_sums(&self) -> Result<NodeRef> {
        let (_, values, offsets) = self.by_rows()?;
        ir::segment_sum(&values, &offsets)
    }

    /// `A x` (lazy): `x` has one row per column of `A` (size 1: SpMV; size k: SpMM); the
    /// result one row per row of `A`, of the same size. CSR (and a canonical COO) sums each
    /// row's entries where they are; others first sort their entries by row (duplicates
    /// just add).
    pub fn multiply(&self, x: &NodeRef) -> Result<NodeRef> {
        x.check_alive()?;
        if x.meta.length != self.shape.1 || x.meta.constant {
            return Err(invalid(format!(
                "x needs {} rows (one per column), got {}",
                self.shape.1, x.meta.length
            )));
        }
        let (cols, values, offsets) = self.by_rows()?;
        let products = ir::binary(BinaryOp::Multiply, &values, &ir::gather(&cols, x)?)?;
        let sums = ir::segment_sum(&products, &offsets)?;
        // The arithmetic type of values times x, as an elementwise product would have.
        as_type(&sums, products.meta.dtype)
    }

    /// `alpha * A x + beta * y` (lazy); `y` (one row per row of `A`) only where `beta` is
    /// not 0.
    pub fn multiply_add(
        &self,
        x: &NodeRef,
        alpha: f64,
        beta: f64,
        y: Option<&NodeRef>,
    ) -> Result<NodeRef> {
        let scale = |node: &NodeRef, by: f64| -> Result<NodeRef> {
            match by == 1.0 {
                true => Ok(node.clone()),
                false => ir::binary(
                    BinaryOp::Multiply,
                    node,
                    &ir::source(ColumnData::F32(vec![by as f32]), 1, true)?,
                ),
            }
        };
        let product = scale(&self.multiply(x)?, alpha)?;
        match (y, beta) {
            (_, 0.0) => Ok(product),
            (Some(y), _) => {
                y.check_alive()?;
                let size = product.meta.size;
                if y.meta.length != self.shape.0
                    || y.meta.constant
                    || (y.meta.size != 1 && y.meta.size != size)
                {
                    return Err(invalid(format!(
                        "y needs {} rows (one per row) of size 1 or {size}, got {} rows of size {}",
                        self.shape.0, y.meta.length, y.meta.size
                    )));
                }
                ir::binary(BinaryOp::Add, &product, &scale(y, beta)?)
            }
            (None, _) => Err(invalid("beta needs y".to_string())),
        }
    }
}

/// Canonical CSR of `entries` sorted row-major (duplicates next to each other), computed
/// on `device` in one evaluation: the cells are counted there, and the one count read back
/// (at the end) is the number of distinct entries.
async fn csr_of_sorted(
    device: &dyn Backend,
    (rows, cols, values): Entries,
    shape: (u32, u32),
) -> Result<SparseMatrix> {
    let nnz = values.meta.length;
    let cells = Kept::new(&cell_starts(&rows, &cols)?)?;
    let starts = cells.kept_rows();
    // Each cell's run of entries; past the count, empty runs at the end (offsets `nnz`),
    // so the offsets never decrease and the sums there are rows past the count too.
    let offsets = ir::concat(&[ir::padded(&starts, nnz)?, u32_row(nnz)?])?;
    // Duplicates add in the values' own type (integers wrap), as toDense's cells do.
    let summed = as_type(&ir::segment_sum(&values, &offsets)?, values.meta.dtype)?;
    let summed = ir::counted_by(summed, &starts)?;
    // A row's pointer is the number of cells before its first sorted entry: searched
    // among the sorted entries, no column of the cells' rows gathered for it.
    let firsts = line_starts(&rows, shape.0)?;
    csr_of_parts(
        shape,
        cells.kept_before(&firsts)?,
        ir::gather(&starts, &cols)?,
        summed,
    )
    .computed(device)
    .await
}

/// Entries sorted by row, then column, stably (one sort by both keys).
fn sort_row_major(entries: Entries, shape: (u32, u32)) -> Result<Entries> {
    let (rows, cols, values) = entries;
    let order = ir::lexsort_permutation(&[(&rows, shape.0 as u64), (&cols, shape.1 as u64)])?;
    Ok((
        ir::gather(&order, &rows)?,
        ir::gather(&order, &cols)?,
        ir::gather(&order, &values)?,
    ))
}

/// 1 where an entry's (row, column) differs from the entry before it (entries sorted
/// row-major), else 0: where each stored cell's run of duplicates starts.
fn cell_starts(rows: &NodeRef, cols: &NodeRef) -> Result<NodeRef> {
    let k = u32_rows(rows.meta.length)?;
    let previous = ir::binary(BinaryOp::Subtract, &k, &u32_constant(1)?)?;
    // Each index compared with the one before it where it is stored: no pairs of them
    // interleaved into a column of their own first.
    let same_as_before = |index: &NodeRef| ir::equal_all(index, &ir::gather(&previous, index)?);
    // Row 0 has no entry before it (its "entry before" reads past the end, 0), so it is
    // never the same cell: k / k is 0 there (integer division by 0 being 0), 1 elsewhere.
    let has_before = ir::binary(BinaryOp::Divide, &k, &k)?;
    let same_cell = ir::binary(
        BinaryOp::Multiply,
        &ir::binary(
            BinaryOp::Multiply,
            &same_as_before(rows)?,
            &same_as_before(cols)?,
        )?,
        &has_before,
    )?;
    ir::binary(BinaryOp::Subtract, &u32_constant(1)?, &same_cell)
}

/// Canonical CSR of its parts (lazy, not validated): `pointers` has a row per row plus
/// one, and the columns are sorted within each row, one entry per cell.
fn csr_of_parts(
    shape: (u32, u32),
    pointers: NodeRef,
    cols: NodeRef,
    values: NodeRef,
) -> SparseMatrix {
    SparseMatrix {
        format: Format::Csr,
        shape,
        major: pointers,
        minor: cols,
        values,
        canonical: true,
    }
}
