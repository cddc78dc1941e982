//! Sparse matrices across the boundary: a `SparseModel` holds a `crate::sparse` matrix;
//! constructors and `toCSR` validate or count on a device and resolve, or run at once on
//! the CPU for components in host memory (or, for a matrix on a CPU device, lazy over such).

use wasm_bindgen::prelude::*;

use super::device::{AnyDevice, Device};
use super::{invalid, split_every_of, to_js, Evaluator, EvaluatorList, JsResult};
use crate::engine;
use crate::error::{ErrorCode, GpuTableError, Shown};
use crate::ir::{self, BinaryOp, NodeRef, ReduceKind, UnaryOp};
use crate::sparse::{Format, SparseMatrix};

/// A Promise of what `$body` resolves to with the device `$d` and `$matrix` (cloned into
/// the future as `$m`), as JS: a `SparseModel` for a matrix, else the value itself.
macro_rules! value_promise {
    ($device:expr, $matrix:expr, |$d:ident, $m:ident| $body:expr) => {{
        let (device, $m) = ($device.any(), $matrix.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            let $d = device.backend();
            let value = $body.map_err(to_js)?;
            Ok(value.into())
        })
    }};
}

/// `value_promise!` of a matrix.
macro_rules! matrix_promise {
    ($device:expr, $matrix:expr, |$d:ident, $m:ident| $body:expr) => {
        value_promise!($device, $matrix, |$d, $m| $body
            .map(|matrix| SparseModel { matrix }))
    };
}

#[wasm_bindgen]
pub struct SparseModel {
    matrix: SparseMatrix,
}

fn format_of(name: &str) -> JsResult<Format> {
    match name {
        "csr" => Ok(Format::Csr),
        "csc" => Ok(Format::Csc),
        "coo" => Ok(Format::Coo),
        other => Err(invalid(format!(
            "format must be 'csr', 'csc' or 'coo', got '{other}'"
        ))),
    }
}

fn dim(value: f64, what: &str) -> JsResult<u32> {
    match value {
        v if v.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&v) => Ok(v as u32),
        v => Err(invalid(format!(
            "shape {what} must be a whole number of at most 2^32-1, got {}",
            Shown(v)
        ))),
    }
}

/// The three components of `list` (pointers or row indices, indices, values).
fn components(list: &EvaluatorList) -> JsResult<(NodeRef, NodeRef, NodeRef)> {
    let known = |n: &NodeRef| ir::known_rows(n, "a sparse matrix").map_err(to_js);
    match &list.nodes[..] {
        [a, b, c] => Ok((known(a)?, known(b)?, known(c)?)),
        _ => Err(invalid("a sparse matrix takes three components")),
    }
}

async fn construct(
    device: AnyDevice,
    format: Format,
    parts: (NodeRef, NodeRef, NodeRef),
    shape: (u32, u32),
) -> crate::Result<SparseMatrix> {
    let (a, b, c) = parts;
    let d = device.backend();
    match format {
        Format::Coo => SparseMatrix::coo(d, &a, &b, &c, shape).await,
        _ => SparseMatrix::compressed(d, format, &a, &b, &c, shape).await,
    }
}

/// Whether the components can be validated at once on the CPU: each is in host memory, or
/// with `lazy_too` (a matrix on a CPU device) computed from inputs that all are, which the
/// CPU computes without waiting. Components on a GPU device are validated there, and a
/// destroyed one rejects the constructor's Promise.
fn validates_now(list: &EvaluatorList, lazy_too: bool) -> bool {
    if !lazy_too {
        return list.nodes.iter().all(|n| n.host_output().is_some());
    }
    // A worklist, not recursion: a long chain of lazy ops would overflow wasm's stack.
    let mut seen = std::collections::HashSet::new();
    let mut pending: Vec<NodeRef> = list.nodes.clone();
    while let Some(node) = pending.pop() {
        if node.host_output().is_some() || !seen.insert(node.id) {
            continue;
        }
        if node.is_destroyed() || node.home().is_some() {
            return false;
        }
        pending.extend(node.inputs.iter().cloned());
    }
    true
}

#[wasm_bindgen]
impl SparseModel {
    /// A matrix of `format` from `components` ([pointers or rows, indices, values]),
    /// validated now on `device` if it is a CPU device (else the shared CPU one): components in
    /// host memory, or lazy ones over such data (`validatesNow`).
    #[wasm_bindgen(js_name = fromComponentsSync)]
    pub fn from_components_sync(
        device: &Device,
        format: &str,
        components_list: &EvaluatorList,
        m: f64,
        n: f64,
    ) -> JsResult<SparseModel> {
        let (format, shape) = (format_of(format)?, (dim(m, "rows")?, dim(n, "columns")?));
        if !validates_now(components_list, true) {
            return Err(invalid(
                "components on a GPU device are validated there: await the constructor",
            ));
        }
        let device = match device.any() {
            cpu @ AnyDevice::Cpu(_) => cpu,
            _ => AnyDevice::Cpu(crate::cpu::CpuDevice::shared()),
        };
        let matrix = engine::now(construct(
            device,
            format,
            components(components_list)?,
            shape,
        ))
        .and_then(|r| r)
        .map_err(to_js)?;
        Ok(SparseModel { matrix })
    }

    /// Whether `fromComponentsSync` takes these components for a matrix on a CPU device
    /// (`on_cpu`) or on a GPU device, whose lazy components are computed there.
    #[wasm_bindgen(js_name = validatesNow)]
    pub fn components_validate_now(components_list: &EvaluatorList, on_cpu: bool) -> bool {
        validates_now(components_list, on_cpu)
    }

    /// `fromComponentsSync`, validated on `device` (resolves to the matrix).
    #[wasm_bindgen(js_name = fromComponents)]
    pub fn from_components(
        device: &Device,
        format: &str,
        components_list: &EvaluatorList,
        m: f64,
        n: f64,
    ) -> js_sys::Promise {
        let device = device.any();
        let input = (|| {
            Ok::<_, JsValue>((
                format_of(format)?,
                components(components_list)?,
                (dim(m, "rows")?, dim(n, "columns")?),
            ))
        })();
        wasm_bindgen_futures::future_to_promise(async move {
            let (format, parts, shape) = input?;
            let matrix = construct(device, format, parts, shape)
                .await
                .map_err(to_js)?;
            Ok(SparseModel { matrix }.into())
        })
    }

    #[wasm_bindgen(getter)]
    pub fn format(&self) -> String {
        match self.matrix.format {
            Format::Csr => "csr",
            Format::Csc => "csc",
            Format::Coo => "coo",
        }
        .to_string()
    }
    #[wasm_bindgen(getter)]
    pub fn rows(&self) -> u32 {
        self.matrix.shape.0
    }
    #[wasm_bindgen(getter)]
    pub fn columns(&self) -> u32 {
        self.matrix.shape.1
    }
    #[wasm_bindgen(getter)]
    pub fn nnz(&self) -> u32 {
        self.matrix.nnz()
    }
    pub fn major(&self) -> Evaluator {
        Evaluator::of(self.matrix.major.clone())
    }
    pub fn minor(&self) -> Evaluator {
        Evaluator::of(self.matrix.minor.clone())
    }
    pub fn values(&self) -> Evaluator {
        Evaluator::of(self.matrix.values.clone())
    }
    pub fn transpose(&self) -> SparseModel {
        SparseModel {
            matrix: self.matrix.transpose(),
        }
    }
    #[wasm_bindgen(js_name = toCOO)]
    pub fn to_coo(&self) -> JsResult<SparseModel> {
        let matrix = self.matrix.to_coo().map_err(to_js)?;
        Ok(SparseModel { matrix })
    }
    #[wasm_bindgen(js_name = toDense)]
    pub fn to_dense(&self) -> JsResult<Evaluator> {
        self.matrix.to_dense().map(Evaluator::of).map_err(to_js)
    }
    /// Canonical CSR, built on `device` (one count read back).
    #[wasm_bindgen(js_name = toCSR)]
    pub fn to_csr(&self, device: &Device) -> js_sys::Promise {
        matrix_promise!(device, self.matrix, |d, m| m.to_csr(d).await)
    }
    /// The nonzeros of `dense` (rows of size n) in `format`, found on `device`.
    #[wasm_bindgen(js_name = fromDense)]
    pub fn from_dense(device: &Device, dense: &Evaluator, format: &str) -> js_sys::Promise {
        let dense = ir::known_rows(&dense.node, "fromDense");
        let (device, format) = (device.any(), format_of(format));
        wasm_bindgen_futures::future_to_promise(async move {
            let (format, dense) = (format?, dense.map_err(to_js)?);
            let matrix = SparseMatrix::from_dense(device.backend(), &dense, format)
                .await
                .map_err(to_js)?;
            Ok(SparseModel { matrix }.into())
        })
    }
    /// `triu(k)` (`upper`) or `tril(k)`, on `device`.
    pub fn triangle(&self, device: &Device, k: f64, upper: bool) -> JsResult<js_sys::Promise> {
        if k.fract() != 0.0 || k.is_nan() {
            return Err(invalid(format!(
                "k must be a whole number, got {}",
                Shown(k)
            )));
        }
        Ok(matrix_promise!(device, self.matrix, |d, m| m
            .triangle(d, k as i64, upper)
            .await))
    }
    /// The entries with `|value| > tol`, on `device`.
    pub fn droptol(&self, device: &Device, tol: f64) -> js_sys::Promise {
        matrix_promise!(device, self.matrix, |d, m| m.droptol(d, tol).await)
    }
    /// `norm(p)` (`operator`: `opnorm(p)`), resolved on `device`.
    pub fn norm(&self, device: &Device, p: f64, operator: bool) -> js_sys::Promise {
        value_promise!(device, self.matrix, |d, m| match operator {
            true => m.opnorm(d, p).await,
            false => m.norm(d, p).await,
        })
    }
    /// `isZero()` (`symmetric`: `isSymmetric()`), resolved on `device`.
    pub fn test(&self, device: &Device, symmetric: bool) -> js_sys::Promise {
        value_promise!(device, self.matrix, |d, m| match symmetric {
            true => m.is_symmetric(d).await,
            false => m.is_zero(d).await,
        })
    }
    /// Entry `(i, j)`, resolved on `device` (bad indices reject).
    pub fn get(&self, device: &Device, i: f64, j: f64) -> js_sys::Promise {
        let index = |v: f64| match v.fract() == 0.0 && (0.0..u32::MAX as f64).contains(&v) {
            true => Ok(v as u32),
            false => Err(crate::GpuTableError::invalid(format!(
                "get takes whole row and column numbers, got {}",
                Shown(v)
            ))),
        };
        let at = index(i).and_then(|i| Ok((i, index(j)?)));
        value_promise!(device, self.matrix, |d, m| match at {
            Ok((i, j)) => m.get(d, i, j).await,
            Err(error) => Err(error),
        })
    }
    /// `op` (`abs sqrt sin tan`) of every entry, duplicates summed first on `device`.
    pub fn unary(&self, device: &Device, op: &str) -> JsResult<js_sys::Promise> {
        let op = UnaryOp::parse(op).map_err(to_js)?;
        Ok(matrix_promise!(device, self.matrix, |d, m| m
            .unary(d, op)
            .await))
    }
    /// `A * number`, `number * A` or `A / number` with this structure, at once. JS's
    /// number is a float32 constant, so a quotient is a float, linear in each stored value:
    /// no duplicates to sum first (only an integer quotient would need that).
    pub fn scaled(
        &self,
        op: &str,
        number: &Evaluator,
        number_first: bool,
    ) -> JsResult<SparseModel> {
        let op = BinaryOp::parse(op).map_err(to_js)?;
        match self
            .matrix
            .scaled_now(op, &number.node, number_first)
            .map_err(to_js)?
        {
            Some(matrix) => Ok(SparseModel { matrix }),
            None => Err(to_js(GpuTableError::new(
                ErrorCode::Internal,
                "an integer quotient of a sparse matrix (JS divides by float32 numbers)",
            ))),
        }
    }
    /// `A + B`, `A - B` (union) or `A * B` (intersection), canonical, on `device`.
    pub fn combine(
        &self,
        device: &Device,
        op: &str,
        other: &SparseModel,
    ) -> JsResult<js_sys::Promise> {
        let (op, other) = (BinaryOp::parse(op).map_err(to_js)?, other.matrix.clone());
        Ok(matrix_promise!(device, self.matrix, |d, m| m
            .combine(d, op, &other)
            .await))
    }
    /// `kron(A, B)` in A's format, on `device`.
    pub fn kron(&self, device: &Device, other: &SparseModel) -> js_sys::Promise {
        let other = other.matrix.clone();
        matrix_promise!(device, self.matrix, |d, m| m.kron(d, &other).await)
    }
    /// `sum(A, {axis, splitEvery})` (lazy): `axis` undefined, 0 or 1.
    pub fn sum(&self, axis: Option<f64>, split_every: JsValue) -> JsResult<Evaluator> {
        let split_every = split_every_of(&split_every)?;
        let axis = match axis {
            None => None,
            Some(a) if a == 0.0 || a == 1.0 => Some(a as u32),
            Some(a) => {
                return Err(invalid(format!(
                    "axis must be 0 (one row per column) or 1 (one row per row), got {}",
                    Shown(a)
                )))
            }
        };
        self.matrix
            .sum(axis, split_every)
            .map(Evaluator::of)
            .map_err(to_js)
    }
    /// `min(A)` or (`greatest`) `max(A)` (lazy), implicit zeros counted.
    pub fn extreme(&self, greatest: bool, split_every: JsValue) -> JsResult<Evaluator> {
        let split_every = split_every_of(&split_every)?;
        let kind = match greatest {
            true => ReduceKind::Max,
            false => ReduceKind::Min,
        };
        self.matrix
            .extreme(kind, split_every)
            .map(Evaluator::of)
            .map_err(to_js)
    }
    /// `alpha * A x + beta * y` (lazy); `y`: an empty list, or one evaluator.
    pub fn multiply(
        &self,
        x: &Evaluator,
        alpha: f64,
        beta: f64,
        y: &EvaluatorList,
    ) -> JsResult<Evaluator> {
        let known = |n: &NodeRef| ir::known_rows(n, "a sparse product");
        let x = known(&x.node).map_err(to_js)?;
        let y = y.nodes.first().map(known).transpose().map_err(to_js)?;
        self.matrix
            .multiply_add(&x, alpha, beta, y.as_ref())
            .map(Evaluator::of)
            .map_err(to_js)
    }
}
