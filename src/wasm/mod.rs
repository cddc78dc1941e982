//! The wasm boundary: thin wrappers that turn JS values into IR, engine and device calls and
//! every `GpuTableError` into a JS `Error` named `GpuTableError` with a `code`. The
//! variadic, typed API lives in `js/`.

mod device;
mod dictionary;
mod ipc;
mod read;
mod sparse;
mod table;
mod verbs;

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use crate::column::{element_count, ColumnData};
use crate::dtype::DType;
use crate::error::{GpuTableError, Shown};
use crate::evaluator;
use crate::ir::{self, BinaryOp, NodeRef, UnaryOp};

#[wasm_bindgen(start)]
fn start() {
    #[cfg(feature = "debug-panics")]
    console_error_panic_hook::set_once();
}

fn to_js(error: GpuTableError) -> JsValue {
    let js = js_sys::Error::new(&error.message);
    js.set_name("GpuTableError");
    // Reflect.set on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&js, &"code".into(), &error.code.as_str().into());
    js.into()
}

type JsResult<T> = std::result::Result<T, JsValue>;

/// Sets `key` on a fresh plain object (Reflect.set on one cannot fail).
fn set(target: &JsValue, key: &str, value: impl Into<JsValue>) {
    let _ = js_sys::Reflect::set(target, &key.into(), &value.into());
}

fn invalid(message: impl Into<String>) -> JsValue {
    to_js(GpuTableError::invalid(message))
}

/// A number argument of `what`, `default` where it was left out. Taken as a `JsValue`: a
/// parameter typed as a number would turn '3' into 3 and null into 0 on the way in.
pub(super) fn number_arg(value: &JsValue, what: &str, default: Option<f64>) -> JsResult<f64> {
    match (value.as_f64(), default) {
        (Some(number), _) => Ok(number),
        (None, Some(default)) if value.is_undefined() => Ok(default),
        _ => Err(invalid(format!(
            "{what} must be a number, got {}",
            value
                .js_typeof()
                .as_string()
                .unwrap_or_else(|| "something else".to_string())
        ))),
    }
}

/// The numbers of a JS array, each a number, allocated fallibly (`what` names it in errors).
pub(super) fn numbers_of(array: &js_sys::Array, what: &str) -> JsResult<Vec<f64>> {
    let mut out = crate::column::try_vec(array.length() as usize, what).map_err(to_js)?;
    for value in array.iter() {
        let number = value
            .as_f64()
            .ok_or_else(|| invalid(format!("{what} must be an array of numbers")))?;
        out.push(number);
    }
    Ok(out)
}

/// `number_arg` where leaving the argument out means none.
pub(super) fn optional_number_arg(value: &JsValue, what: &str) -> JsResult<Option<f64>> {
    match value.is_undefined() {
        true => Ok(None),
        false => number_arg(value, what, None).map(Some),
    }
}

#[wasm_bindgen]
pub struct Evaluator {
    node: NodeRef,
}

impl Evaluator {
    pub(crate) fn of(node: NodeRef) -> Evaluator {
        Evaluator { node }
    }
}

fn wrap(node: crate::Result<NodeRef>) -> JsResult<Evaluator> {
    node.map(|node| Evaluator { node }).map_err(to_js)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SourceOptions {
    #[serde(rename = "type")]
    dtype: String,
    size: u32,
    #[serde(default)]
    constant: bool,
}

/// `chunks`: rows per chunk (the last shorter), or each chunk's row count.
enum ChunkSpec {
    Every(f64),
    Counts(Vec<f64>),
}

impl ChunkSpec {
    fn chunks(&self, length: u32) -> crate::Result<ir::Chunks> {
        match self {
            ChunkSpec::Every(rows) => ir::regular_chunks(*rows, length),
            ChunkSpec::Counts(counts) => ir::explicit_chunks(counts, length),
        }
    }
}

/// Read without serde, which would buffer an array of any length (twice) before its count is
/// checked.
fn chunk_spec(value: JsValue) -> JsResult<ChunkSpec> {
    if let Some(rows) = value.as_f64() {
        return Ok(ChunkSpec::Every(rows));
    }
    let Some(array) = value.dyn_ref::<js_sys::Array>() else {
        return Err(invalid(
            "chunks must be a row count or an array of row counts",
        ));
    };
    ir::check_chunk_count(array.length() as usize).map_err(to_js)?;
    numbers_of(array, "chunks").map(ChunkSpec::Counts)
}

/// Copies a JS typed array of `dtype` into host storage, allocating fallibly: a failed
/// allocation is `OUT_OF_MEMORY`, never a trap of the instance.
pub(super) fn copy_typed(dtype: DType, array: &JsValue) -> crate::Result<ColumnData> {
    macro_rules! copy {
        ($js:ty, $variant:ident) => {{
            let typed = array.dyn_ref::<$js>().ok_or_else(|| {
                GpuTableError::invalid(format!("expected a typed array of {}", dtype.name()))
            })?;
            let len = typed.length() as usize;
            element_count(len as u64, 1, dtype)?;
            let mut values = crate::column::try_vec(len, dtype.name())?;
            // A view of the rows counted: a view tracking a growable buffer's length may
            // grow (another worker) before the copy, which then checks the lengths match.
            let typed = typed.subarray(0, len as u32);
            typed.copy_to_uninit(&mut values.spare_capacity_mut()[..len]);
            // SAFETY: copy_to_uninit initialized the first `len` elements.
            unsafe { values.set_len(len) };
            ColumnData::$variant(values)
        }};
    }
    Ok(match dtype {
        DType::U8 => copy!(js_sys::Uint8Array, U8),
        DType::I8 => copy!(js_sys::Int8Array, I8),
        DType::U16 => copy!(js_sys::Uint16Array, U16),
        DType::I16 => copy!(js_sys::Int16Array, I16),
        DType::U32 => copy!(js_sys::Uint32Array, U32),
        DType::I32 => copy!(js_sys::Int32Array, I32),
        DType::F32 => copy!(js_sys::Float32Array, F32),
    })
}

#[wasm_bindgen]
impl Evaluator {
    /// A new source from a typed array of the given type; `options` is
    /// `{type, size, constant?}`.
    #[wasm_bindgen(js_name = fromTyped)]
    pub fn from_typed(array: JsValue, options: JsValue) -> JsResult<Evaluator> {
        let chunks = js_sys::Reflect::get(&options, &JsValue::from_str("chunks"))
            .ok()
            .filter(|c| !c.is_undefined() && !c.is_null())
            .map(chunk_spec)
            .transpose()?;
        let options: SourceOptions = serde_wasm_bindgen::from_value(options)
            .map_err(|e| invalid(format!("bad source options: {e}")))?;
        let dtype = DType::parse(&options.dtype).map_err(to_js)?;
        let data = copy_typed(dtype, &array).map_err(to_js)?;
        match chunks {
            Some(spec) if !options.constant => {
                let rows = (data.len() as u64 / options.size.max(1) as u64) as u32;
                let chunks = spec.chunks(rows).map_err(to_js)?;
                wrap(ir::source_chunked(data, options.size, chunks))
            }
            _ => wrap(ir::source(data, options.size, options.constant)),
        }
    }

    /// Row counts of the chunks, in order (unknown for a result counted on the device
    /// until it is evaluated).
    #[wasm_bindgen(getter)]
    pub fn chunks(&self) -> Option<Vec<u32>> {
        self.node.known_chunks().map(|c| c.to_vec())
    }

    #[wasm_bindgen(getter, js_name = "type")]
    pub fn dtype(&self) -> String {
        self.node.meta.dtype.name().to_string()
    }
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        self.node.meta.size
    }
    /// The rows (unknown for a result counted on the device until it is evaluated).
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> Option<u32> {
        self.node.known_length()
    }
    #[wasm_bindgen(getter, js_name = isConstant)]
    pub fn is_constant(&self) -> bool {
        self.node.meta.constant
    }
    /// Whether a device holds the materialized output (user data in host memory is not one).
    #[wasm_bindgen(getter)]
    pub fn evaluated(&self) -> bool {
        self.node.materialized_on().is_some()
    }
    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.node.is_destroyed()
    }
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> f64 {
        self.node.id as f64
    }
    /// The device holding the materialized output: where it was last evaluated.
    #[wasm_bindgen(getter, js_name = deviceId)]
    pub fn device_id(&self) -> Option<u32> {
        self.node.materialized_on()
    }

    /// Whether the output is in host memory (which every CPU device reads in place).
    #[wasm_bindgen(getter, js_name = inHostMemory)]
    pub fn in_host_memory(&self) -> bool {
        self.node.host_output().is_some()
    }

    /// Whether the output is on device `id` (computed there or copied there).
    #[wasm_bindgen(js_name = isOn)]
    pub fn is_on(&self, id: u32) -> bool {
        self.node.output_on(id).is_some()
    }

    /// Rows `start..end` as a typed array of the evaluator's type, read from wherever the
    /// output lives (evaluated on the shared CPU device first if it never was).
    #[wasm_bindgen(js_name = readValue)]
    pub fn read_value(&self, start: JsValue, end: JsValue) -> js_sys::Promise {
        let node = self.node.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let start = optional_number_arg(&start, "readValue startRow")?;
            let end = optional_number_arg(&end, "readValue endRow")?;
            let output = evaluator::output(&node).await.map_err(to_js)?;
            let rows = evaluator::rows_of(&node, &output);
            let (start, end) = evaluator::row_range(rows, start, end).map_err(to_js)?;
            read::into_typed_array(&output, node.meta.dtype, node.meta.size, start, end).await
        })
    }

    /// `readValue` for outputs in host memory (CPU devices, user data), without waiting.
    #[wasm_bindgen(js_name = readValueSync)]
    pub fn read_value_sync(&self, start: JsValue, end: JsValue) -> JsResult<JsValue> {
        let start = optional_number_arg(&start, "readValue startRow")?;
        let end = optional_number_arg(&end, "readValue endRow")?;
        let node = self.node.clone();
        let output = crate::engine::now(evaluator::output(&node))
            .and_then(|r| r)
            .map_err(to_js)?;
        if !output.in_host_memory() {
            return Err(invalid(
                "this output lives on a GPU device: read it with await readValue()",
            ));
        }
        let rows = evaluator::rows_of(&node, &output);
        let (start, end) = evaluator::row_range(rows, start, end).map_err(to_js)?;
        let (dtype, size) = (node.meta.dtype, node.meta.size);
        crate::engine::now(read::into_typed_array(&output, dtype, size, start, end)).and_then_js()
    }

    /// Lets go of the output and its null flags (recomputed if read again): a table that
    /// took them as a column frees them when it is destroyed, not when this is collected.
    #[wasm_bindgen(js_name = releaseOutput)]
    pub fn release_output(&self) {
        self.node.release_output();
        if let Some(valid) = self.node.validity() {
            valid.release_output();
        }
    }

    /// The passes this graph runs on the shared CPU device.
    pub fn explain(&self) -> JsResult<String> {
        evaluator::explain(&self.node).map_err(to_js)
    }

    /// Frees the output now, and lets go of the node: its null flags and count go with
    /// their last other holder rather than with this handle, whenever it is collected.
    pub fn destroy(&mut self) {
        self.node.destroy();
        self.node = self.node.tombstone();
    }
}

/// `now(...)` of a JS-typed result, flattened.
trait AndThenJs {
    fn and_then_js(self) -> JsResult<JsValue>;
}

impl AndThenJs for crate::Result<JsResult<JsValue>> {
    fn and_then_js(self) -> JsResult<JsValue> {
        self.map_err(to_js)?
    }
}

/// Argument lists for the variadic operations (handles stay owned by their JS objects).
#[wasm_bindgen]
#[derive(Default)]
pub struct EvaluatorList {
    nodes: Vec<NodeRef>,
}

#[wasm_bindgen]
impl EvaluatorList {
    #[wasm_bindgen(constructor)]
    pub fn new() -> EvaluatorList {
        EvaluatorList::default()
    }
    pub fn push(&mut self, evaluator: &Evaluator) {
        self.nodes.push(evaluator.node.clone());
    }
}

#[wasm_bindgen(js_name = foldBinary)]
pub fn fold_binary(op: &str, args: &EvaluatorList) -> JsResult<Evaluator> {
    wrap(BinaryOp::parse(op).and_then(|op| ir::fold_binary(op, &args.nodes)))
}

/// A comparison, `not`, `isNaN` or `isFinite` of its arguments.
#[wasm_bindgen]
pub fn predicate(op: &str, args: &EvaluatorList) -> JsResult<Evaluator> {
    wrap(ir::Predicate::parse(op).and_then(|op| ir::predicate(op, &args.nodes)))
}

/// `and`, `or` or `xor` folded over its arguments.
#[wasm_bindgen(js_name = foldLogic)]
pub fn fold_logic(op: &str, args: &EvaluatorList) -> JsResult<Evaluator> {
    wrap(ir::Predicate::parse(op).and_then(|op| ir::fold_logic(op, &args.nodes)))
}

/// `searchSorted(sorted, values, {side})`: `side` is 'left' (the default) or 'right'.
#[wasm_bindgen(js_name = searchSorted)]
pub fn search_sorted(sorted: &Evaluator, values: &Evaluator, side: JsValue) -> JsResult<Evaluator> {
    let upper = match side.as_string().as_deref() {
        _ if side.is_undefined() => false,
        Some("left") => false,
        Some("right") => true,
        _ => return Err(invalid("searchSorted's side must be 'left' or 'right'")),
    };
    wrap(ir::search_sorted(&sorted.node, &values.node, upper))
}

#[wasm_bindgen]
pub fn clamp(x: &Evaluator, lo: &Evaluator, hi: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::clamp(&x.node, &lo.node, &hi.node))
}

#[wasm_bindgen(js_name = unaryOp)]
pub fn unary_op(op: &str, x: &Evaluator) -> JsResult<Evaluator> {
    wrap(UnaryOp::parse(op).and_then(|op| ir::unary(op, &x.node)))
}

#[wasm_bindgen]
pub fn interleave(args: &EvaluatorList) -> JsResult<Evaluator> {
    wrap(ir::interleave(&args.nodes))
}

#[wasm_bindgen]
pub fn swizzle(x: &Evaluator, channels: JsValue) -> JsResult<Evaluator> {
    let what = "swizzle channels";
    let numbers = match js_sys::Array::is_array(&channels) {
        true => numbers_of(&js_sys::Array::from(&channels), what)?,
        false => return Err(invalid(format!("{what} must be an array of numbers"))),
    };
    wrap(ir::swizzle(&x.node, &numbers))
}

#[wasm_bindgen]
pub fn select(
    condition: &Evaluator,
    when_true: &Evaluator,
    when_false: &Evaluator,
) -> JsResult<Evaluator> {
    wrap(ir::select(
        &condition.node,
        &when_true.node,
        &when_false.node,
    ))
}

#[wasm_bindgen]
pub fn dot(a: &Evaluator, b: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::dot(&a.node, &b.node))
}

#[wasm_bindgen]
pub fn length(x: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::length(&x.node))
}

#[wasm_bindgen(js_name = equalAll)]
pub fn equal_all(a: &Evaluator, b: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::equal_all(&a.node, &b.node))
}

#[wasm_bindgen]
pub fn fround(x: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::fround(&x.node))
}

#[wasm_bindgen]
pub fn sequence(count: JsValue, start: JsValue, step: JsValue) -> JsResult<Evaluator> {
    wrap(ir::sequence(
        number_arg(&count, "sequence count", None)?,
        number_arg(&start, "sequence start", Some(0.0))?,
        number_arg(&step, "sequence step", Some(1.0))?,
    ))
}

#[wasm_bindgen]
pub fn gather(ids: &Evaluator, values: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::gather(&ids.node, &values.node))
}

#[wasm_bindgen(js_name = segmentedMap)]
pub fn segmented_map(segments: &Evaluator, vertex_count: JsValue) -> JsResult<Evaluator> {
    let vertex_count = number_arg(&vertex_count, "segmentedMap vertexCount", None)?;
    let segments = ir::known_rows(&segments.node, "segmentedMap").map_err(to_js)?;
    wrap(ir::segmented_map(&segments, vertex_count))
}

/// A reduction's `splitEvery`: an integer of at least 2 (partials combined at a time),
/// api.md's 4 where it was left out.
fn split_every_of(split_every: &JsValue) -> JsResult<u32> {
    let default = Some(ir::DEFAULT_SPLIT_EVERY as f64);
    match number_arg(split_every, "splitEvery", default)? {
        n if n.fract() == 0.0 && (2.0..=u32::MAX as f64).contains(&n) => Ok(n as u32),
        n => Err(invalid(format!(
            "splitEvery must be an integer of at least 2, got {}",
            Shown(n)
        ))),
    }
}

/// `sum min max mean argmin argmax extent` of `x` (`kind`), skipping its null rows and, with
/// a `mask` (an empty list, or one evaluator), the rows where the mask is 0 or null.
#[wasm_bindgen]
pub fn reduce(
    kind: &str,
    x: &Evaluator,
    split_every: JsValue,
    mask: &EvaluatorList,
) -> JsResult<Evaluator> {
    let split_every = split_every_of(&split_every)?;
    wrap(
        ir::ReduceKind::parse(kind).and_then(|kind| match mask.nodes.first() {
            None => ir::reduce(kind, &x.node, None, split_every),
            Some(mask) => ir::reduce_where(kind, &x.node, None, mask, None, split_every),
        }),
    )
}

/// `count(mask)`: its rows that are nonzero and not null.
#[wasm_bindgen]
pub fn count(mask: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::count(&mask.node, None))
}

/// `cumsum cumprod cummin cummax` (`op`) of `x`, with the `exclusive` and `reverse` options.
#[wasm_bindgen]
pub fn cumulative(
    op: &str,
    x: &Evaluator,
    exclusive: JsValue,
    reverse: JsValue,
) -> JsResult<Evaluator> {
    let fold = match op {
        "cumsum" => ir::ScanFold::Sum,
        "cumprod" => ir::ScanFold::Prod,
        "cummin" => ir::ScanFold::Min,
        "cummax" => ir::ScanFold::Max,
        other => return Err(invalid(format!("unknown cumulative operation '{other}'"))),
    };
    let exclusive = optional_bool(&exclusive, false, &format!("{op} exclusive"))?;
    let reverse = optional_bool(&reverse, false, &format!("{op} reverse"))?;
    wrap(ir::cumulative(fold, &x.node, exclusive, reverse))
}

/// An optional boolean option: `default` where undefined.
fn optional_bool(value: &JsValue, default: bool, what: &str) -> JsResult<bool> {
    match value.is_undefined() {
        true => Ok(default),
        false => value
            .as_bool()
            .ok_or_else(|| invalid(format!("{what} must be a boolean"))),
    }
}

/// `descending`: undefined (ascending), one boolean, or an array of one per key of `keys`.
fn directions(descending: &JsValue, default: bool, keys: usize) -> JsResult<Vec<bool>> {
    if !js_sys::Array::is_array(descending) {
        return optional_bool(descending, default, "descending").map(|flag| vec![flag]);
    }
    let flags: Option<Vec<bool>> = js_sys::Array::from(descending)
        .iter()
        .map(|v| v.as_bool())
        .collect();
    match flags {
        Some(flags) if flags.len() == keys => Ok(flags),
        Some(flags) => Err(invalid(format!(
            "descending is one boolean or an array of one per key: {} for {keys} keys",
            flags.len()
        ))),
        None => Err(invalid(
            "descending must be a boolean or an array of booleans",
        )),
    }
}

/// `nulls`: undefined ('last'), 'first' or 'last'.
fn nulls_of(nulls: &JsValue) -> JsResult<ir::Nulls> {
    match nulls.as_string() {
        Some(name) => ir::Nulls::parse(&name).map_err(to_js),
        None if nulls.is_undefined() => Ok(ir::Nulls::Last),
        None => Err(invalid("nulls must be 'first' or 'last'")),
    }
}

/// `argsort(keys, {descending, nulls})`.
#[wasm_bindgen]
pub fn argsort(keys: &EvaluatorList, descending: JsValue, nulls: JsValue) -> JsResult<Evaluator> {
    let descending = directions(&descending, false, keys.nodes.len())?;
    let nulls = nulls_of(&nulls)?;
    wrap(ir::argsort(&keys.nodes, &descending, nulls))
}

/// `sort(x, {descending, nulls})`.
#[wasm_bindgen]
pub fn sort(x: &Evaluator, descending: JsValue, nulls: JsValue) -> JsResult<Evaluator> {
    // As argsort's of one key: a boolean, or an array of one.
    let descending = directions(&descending, false, 1)?[0];
    wrap(ir::sort(&x.node, descending, nulls_of(&nulls)?))
}

/// `topK(x, k, {descending})`: `[values, indices]`.
#[wasm_bindgen(js_name = topK)]
pub fn top_k(x: &Evaluator, k: JsValue, descending: JsValue) -> JsResult<js_sys::Array> {
    let k = k
        .as_f64()
        .ok_or_else(|| invalid("topK's k must be a non-negative integer"))?;
    let descending = optional_bool(&descending, true, "topK's descending")?;
    let (values, indices) = ir::top_k(&x.node, k, descending).map_err(to_js)?;
    Ok([Evaluator { node: values }, Evaluator { node: indices }]
        .into_iter()
        .map(JsValue::from)
        .collect())
}

/// `isNull(x)`.
#[wasm_bindgen(js_name = isNull)]
pub fn is_null(x: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::is_null(&x.node))
}

/// `isValid(x)`.
#[wasm_bindgen(js_name = isValid)]
pub fn is_valid(x: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::is_valid(&x.node))
}

/// `fillNull(x, value)`.
#[wasm_bindgen(js_name = fillNull)]
pub fn fill_null(x: &Evaluator, value: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::fill_null(&x.node, &value.node))
}

#[wasm_bindgen]
pub fn cast(x: &Evaluator, dtype: &str) -> JsResult<Evaluator> {
    wrap(DType::parse(dtype).and_then(|dtype| ir::cast(&x.node, dtype)))
}

#[wasm_bindgen]
pub fn concat(inputs: &EvaluatorList) -> JsResult<Evaluator> {
    wrap(ir::concat_counted(&inputs.nodes))
}

#[wasm_bindgen]
pub fn slice(x: &Evaluator, start: JsValue, end: JsValue) -> JsResult<Evaluator> {
    let start = number_arg(&start, "slice start", Some(0.0))?;
    let end = number_arg(&end, "slice end", Some(f64::INFINITY))?;
    wrap(ir::slice_counted(&x.node, start, end))
}

#[wasm_bindgen]
pub fn rechunk(x: &Evaluator, chunks: JsValue) -> JsResult<Evaluator> {
    let rows = x
        .node
        .known_length()
        .ok_or_else(|| to_js(ir::unknown_length("rechunk")))?;
    let chunks = chunk_spec(chunks)?.chunks(rows).map_err(to_js)?;
    wrap(ir::rechunk_counted(&x.node, chunks))
}

#[wasm_bindgen]
pub fn filter(x: &Evaluator, mask: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::filter(&x.node, &mask.node))
}
