//! The wasm boundary: thin wrappers that turn JS values into IR calls and every
//! `GpuTableError` into a JS `Error` named `GpuTableError` with a `code`. The variadic,
//! typed API lives in `js/`.

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use std::rc::Rc;

use crate::column::ColumnData;
use crate::dtype::DType;
use crate::error::GpuTableError;
use crate::evaluator;
use crate::gl::GlDevice;
use crate::gpu::GpuDevice;
use crate::ipc::{self, Float64As, Int64As, ReadOptions, SourceKind};
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

#[wasm_bindgen]
pub struct Evaluator {
    node: NodeRef,
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

#[wasm_bindgen]
impl Evaluator {
    /// Copies little-endian `bytes` into a new source; `options` is `{type, size, constant?}`.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: &[u8], options: JsValue) -> JsResult<Evaluator> {
        let options: SourceOptions = serde_wasm_bindgen::from_value(options)
            .map_err(|e| to_js(GpuTableError::invalid(format!("bad source options: {e}"))))?;
        let dtype = DType::parse(&options.dtype).map_err(to_js)?;
        let data = ColumnData::from_le_bytes(dtype, bytes).map_err(to_js)?;
        wrap(ir::source(data, options.size, options.constant))
    }

    #[wasm_bindgen(getter, js_name = "type")]
    pub fn dtype(&self) -> String {
        self.node.meta.dtype.name().to_string()
    }
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        self.node.meta.size
    }
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> u32 {
        self.node.meta.length
    }
    #[wasm_bindgen(getter, js_name = isConstant)]
    pub fn is_constant(&self) -> bool {
        self.node.meta.constant
    }
    #[wasm_bindgen(getter)]
    pub fn evaluated(&self) -> bool {
        self.node.is_evaluated()
    }
    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.node.is_destroyed()
    }
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> f64 {
        self.node.id as f64
    }

    pub fn evaluate(&self) -> JsResult<()> {
        evaluator::evaluate(&self.node).map(|_| ()).map_err(to_js)
    }

    /// Rows `start..end` as a typed array of the evaluator's type.
    #[wasm_bindgen(js_name = readValue)]
    pub fn read_value(&self, start: Option<f64>, end: Option<f64>) -> JsResult<JsValue> {
        let data = evaluator::read_value(&self.node, start, end).map_err(to_js)?;
        Ok(match data {
            ColumnData::U8(v) => js_sys::Uint8Array::from(&v[..]).into(),
            ColumnData::I8(v) => js_sys::Int8Array::from(&v[..]).into(),
            ColumnData::U16(v) => js_sys::Uint16Array::from(&v[..]).into(),
            ColumnData::I16(v) => js_sys::Int16Array::from(&v[..]).into(),
            ColumnData::U32(v) => js_sys::Uint32Array::from(&v[..]).into(),
            ColumnData::I32(v) => js_sys::Int32Array::from(&v[..]).into(),
            ColumnData::F32(v) => js_sys::Float32Array::from(&v[..]).into(),
        })
    }

    pub fn explain(&self) -> JsResult<String> {
        evaluator::explain(&self.node).map_err(to_js)
    }

    pub fn destroy(&self) {
        self.node.destroy();
    }

    /// Evaluates on a WebGPU device; resolves when the output is read back.
    #[wasm_bindgen(js_name = evaluateWebGpu)]
    pub fn evaluate_webgpu(&self, device: &WebGpuDevice) -> js_sys::Promise {
        let (node, device) = (self.node.clone(), device.inner.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            node.check_alive().map_err(to_js)?;
            if node.output().is_none() {
                crate::gpu::evaluate_async(&device, std::slice::from_ref(&node))
                    .await
                    .map_err(to_js)?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Evaluates on a WebGL2 device; resolves when the output is read back.
    #[wasm_bindgen(js_name = evaluateWebGl)]
    pub fn evaluate_webgl(&self, device: &WebGlDevice) -> js_sys::Promise {
        let (node, device) = (self.node.clone(), device.inner.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            node.check_alive().map_err(to_js)?;
            if node.output().is_none() {
                crate::gl::evaluate_async(&device, std::slice::from_ref(&node))
                    .await
                    .map_err(to_js)?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The passes and draws this graph runs on a WebGL2 device.
    #[wasm_bindgen(js_name = explainWebGl)]
    pub fn explain_webgl(&self, device: &WebGlDevice) -> JsResult<String> {
        self.node.check_alive().map_err(to_js)?;
        crate::gl::explain(&device.inner, &self.node).map_err(to_js)
    }

    /// The passes and dispatches this graph runs on a WebGPU device.
    #[wasm_bindgen(js_name = explainWebGpu)]
    pub fn explain_webgpu(&self, device: &WebGpuDevice) -> JsResult<String> {
        self.node.check_alive().map_err(to_js)?;
        crate::gpu::explain(&device.inner, &self.node).map_err(to_js)
    }
}

/// A WebGPU device (wgpu on the browser's `navigator.gpu`).
#[wasm_bindgen]
pub struct WebGpuDevice {
    inner: Rc<GpuDevice>,
}

#[wasm_bindgen]
impl WebGpuDevice {
    #[wasm_bindgen(getter, js_name = adapterName)]
    pub fn adapter_name(&self) -> String {
        self.inner.adapter_name.clone()
    }
    #[wasm_bindgen(getter, js_name = maxStorageBufferBindingSize)]
    pub fn max_storage_buffer_binding_size(&self) -> f64 {
        self.inner.limits.max_storage_buffer_binding_size as f64
    }
    #[wasm_bindgen(getter, js_name = maxBufferSize)]
    pub fn max_buffer_size(&self) -> f64 {
        self.inner.limits.max_buffer_size as f64
    }
    /// Releases the device's buffers and pipelines; later use is `DEVICE_LOST`.
    pub fn destroy(&self) {
        self.inner.destroy();
    }

    /// Puts an evaluated column on the device now (a table's storage, at load).
    pub fn upload(&self, evaluator: &Evaluator) -> JsResult<()> {
        evaluator.node.check_alive().map_err(to_js)?;
        crate::gpu::make_resident(&self.inner, &evaluator.node)
            .map(|_| ())
            .map_err(to_js)
    }

    /// Columns resident on the device, after freeing those of destroyed or dropped nodes.
    #[wasm_bindgen(js_name = residentColumns)]
    pub fn resident_columns(&self) -> u32 {
        self.inner.prune_uploads();
        self.inner.resident_uploads() as u32
    }

    /// The browser's `GPUDevice` under this device, for renderers that bind our buffers.
    #[wasm_bindgen(getter, js_name = gpuDevice)]
    pub fn gpu_device(&self) -> JsValue {
        self.inner
            .device
            .as_webgpu()
            .map_or(JsValue::UNDEFINED, |d| d.clone().into())
    }

    /// The resident `GPUBuffer` of a column (32-bit values, rows packed), if it is uploaded.
    #[wasm_bindgen(js_name = gpuBufferOf)]
    pub fn gpu_buffer_of(&self, evaluator: &Evaluator) -> JsValue {
        self.inner
            .uploaded(&evaluator.node)
            .and_then(|b| b.as_webgpu().cloned())
            .map_or(JsValue::UNDEFINED, Into::into)
    }

    #[wasm_bindgen(getter, js_name = maxComputeWorkgroupsPerDimension)]
    pub fn max_compute_workgroups_per_dimension(&self) -> u32 {
        self.inner.limits.max_compute_workgroups_per_dimension
    }
}

/// Resolves to a `WebGpuDevice`, or rejects with `BACKEND_UNAVAILABLE`.
#[wasm_bindgen(js_name = createWebGpuDevice)]
pub fn create_webgpu_device() -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let device = GpuDevice::new().await.map_err(to_js)?;
        Ok(WebGpuDevice {
            inner: Rc::new(device),
        }
        .into())
    })
}

/// A WebGL2 device (wgpu's GL backend on an OffscreenCanvas's WebGL2 context).
#[wasm_bindgen]
pub struct WebGlDevice {
    inner: Rc<GlDevice>,
}

#[wasm_bindgen]
impl WebGlDevice {
    #[wasm_bindgen(getter, js_name = adapterName)]
    pub fn adapter_name(&self) -> String {
        self.inner.adapter_name.clone()
    }
    #[wasm_bindgen(getter, js_name = maxTextureDimension2D)]
    pub fn max_texture_dimension_2d(&self) -> u32 {
        self.inner.limits.max_texture_dimension_2d
    }
    #[wasm_bindgen(getter, js_name = maxColorAttachments)]
    pub fn max_color_attachments(&self) -> u32 {
        self.inner.limits.max_color_attachments
    }
    #[wasm_bindgen(getter, js_name = maxSampledTexturesPerShaderStage)]
    pub fn max_sampled_textures_per_shader_stage(&self) -> u32 {
        self.inner.limits.max_sampled_textures_per_shader_stage
    }
    /// Rows one texture tile holds (larger columns span several tiles).
    #[wasm_bindgen(getter, js_name = tileRows)]
    pub fn tile_rows(&self) -> u32 {
        self.inner.layout.tile_rows()
    }
    /// Releases the device's textures and pipelines; later use is `DEVICE_LOST`.
    pub fn destroy(&self) {
        self.inner.destroy();
    }

    /// Puts an evaluated column on the device now (a table's storage, at load).
    pub fn upload(&self, evaluator: &Evaluator) -> JsResult<()> {
        evaluator.node.check_alive().map_err(to_js)?;
        crate::gl::make_resident(&self.inner, &evaluator.node)
            .map(|_| ())
            .map_err(to_js)
    }

    /// Columns resident on the device, after freeing those of destroyed or dropped nodes.
    #[wasm_bindgen(js_name = residentColumns)]
    pub fn resident_columns(&self) -> u32 {
        self.inner.prune_uploads();
        self.inner.resident_uploads() as u32
    }
}

/// Resolves to a `WebGlDevice`, or rejects with `BACKEND_UNAVAILABLE` naming what is missing.
#[wasm_bindgen(js_name = createWebGlDevice)]
pub fn create_webgl_device() -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let device = GlDevice::new().await.map_err(to_js)?;
        Ok(WebGlDevice {
            inner: Rc::new(device),
        }
        .into())
    })
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct IpcOptions {
    columns: Option<Vec<String>>,
    /// 'words' (default) or 'float32'.
    float64: Option<String>,
    /// 'float32' or 'int32'; absent: Int64 columns are TYPE_MISMATCH.
    int64: Option<String>,
}

fn kind_name(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Plain => "plain",
        SourceKind::Float64Words => "float64",
        SourceKind::Bool => "bool",
        SourceKind::DictionaryIndices => "dictionary",
    }
}

fn set(target: &JsValue, key: &str, value: impl Into<JsValue>) {
    // Reflect.set on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(target, &key.into(), &value.into());
}

/// Reads an Arrow IPC stream or file: `{fields: [{name, type, size, kind, arrowType,
/// nullable}], batches: [[{data: Evaluator, validity?: Evaluator}, ...], ...]}`.
#[wasm_bindgen(js_name = readIpc)]
pub fn read_ipc(bytes: &[u8], options: JsValue) -> JsResult<JsValue> {
    let options: IpcOptions = if options.is_undefined() || options.is_null() {
        IpcOptions::default()
    } else {
        serde_wasm_bindgen::from_value(options)
            .map_err(|e| to_js(GpuTableError::invalid(format!("bad IPC options: {e}"))))?
    };
    let float64 = match options.float64.as_deref() {
        None | Some("words") => Float64As::Words,
        Some("float32") => Float64As::Float32,
        Some(other) => {
            return Err(to_js(GpuTableError::invalid(format!(
                "float64 must be 'words' or 'float32', got '{other}'"
            ))))
        }
    };
    let int64 = match options.int64.as_deref() {
        None => Int64As::Refuse,
        Some("float32") => Int64As::Float32,
        Some("int32") => Int64As::Int32,
        Some(other) => {
            return Err(to_js(GpuTableError::invalid(format!(
                "int64 must be 'float32' or 'int32', got '{other}'"
            ))))
        }
    };
    let table = ipc::read_ipc(
        bytes,
        &ReadOptions {
            columns: options.columns,
            float64,
            int64,
        },
    )
    .map_err(to_js)?;
    let fields = js_sys::Array::new();
    for field in &table.fields {
        let f = js_sys::Object::new();
        set(&f, "name", field.name.as_str());
        set(&f, "type", field.dtype.name());
        set(&f, "size", field.size);
        set(&f, "kind", kind_name(field.kind));
        set(&f, "arrowType", field.arrow_type.as_str());
        set(&f, "nullable", field.nullable);
        fields.push(&f);
    }
    let batches = js_sys::Array::new();
    for batch in table.batches {
        let columns = js_sys::Array::new();
        for column in batch {
            let c = js_sys::Object::new();
            let size = column.data.size;
            set(&c, "data", wrap(ir::source(column.data.data, size, false))?);
            if let Some(validity) = column.validity {
                set(&c, "validity", wrap(ir::source(validity.data, 1, false))?);
            }
            columns.push(&c);
        }
        batches.push(&columns);
    }
    let out = js_sys::Object::new();
    set(&out, "fields", fields);
    set(&out, "batches", batches);
    Ok(out.into())
}

/// Collects evaluated columns, batch by batch, into an Arrow IPC stream.
#[wasm_bindgen]
#[derive(Default)]
pub struct IpcWriter {
    columns: Vec<(String, SourceKind, Vec<NodeRef>, Vec<NodeRef>)>,
}

#[wasm_bindgen]
impl IpcWriter {
    #[wasm_bindgen(constructor)]
    pub fn new() -> IpcWriter {
        IpcWriter::default()
    }

    /// A column: its name, source kind ('plain', 'float64', 'bool', 'dictionary'), its
    /// evaluated data per batch, and its validity per batch (or none at all).
    #[wasm_bindgen(js_name = addColumn)]
    pub fn add_column(
        &mut self,
        name: &str,
        kind: &str,
        data: &EvaluatorList,
        validity: &EvaluatorList,
    ) -> JsResult<()> {
        let kind = match kind {
            "plain" | "dictionary" => SourceKind::Plain,
            "float64" => SourceKind::Float64Words,
            "bool" => SourceKind::Bool,
            other => {
                return Err(to_js(GpuTableError::invalid(format!(
                    "unknown column kind '{other}'"
                ))))
            }
        };
        if !validity.nodes.is_empty() && validity.nodes.len() != data.nodes.len() {
            return Err(to_js(GpuTableError::invalid(
                "validity needs one vector per batch",
            )));
        }
        self.columns.push((
            name.to_string(),
            kind,
            data.nodes.clone(),
            validity.nodes.clone(),
        ));
        Ok(())
    }

    /// The IPC stream bytes; every column must be evaluated.
    pub fn finish(&self) -> JsResult<Vec<u8>> {
        let output = |node: &NodeRef| -> crate::Result<Rc<crate::Column>> {
            node.check_alive()?;
            node.output().ok_or_else(|| {
                GpuTableError::invalid(format!("t{} is not evaluated; evaluate it first", node.id))
            })
        };
        let mut held = Vec::new();
        for (_, _, data, validity) in &self.columns {
            let data = data.iter().map(output).collect::<crate::Result<Vec<_>>>();
            let validity = validity
                .iter()
                .map(output)
                .collect::<crate::Result<Vec<_>>>();
            held.push((data.map_err(to_js)?, validity.map_err(to_js)?));
        }
        let columns: Vec<ipc::WriteColumn> = self
            .columns
            .iter()
            .zip(&held)
            .map(|((name, kind, _, _), (data, validity))| ipc::WriteColumn {
                name,
                kind: *kind,
                batches: data
                    .iter()
                    .enumerate()
                    .map(|(b, d)| (d.as_ref(), validity.get(b).map(|v| v.as_ref())))
                    .collect(),
            })
            .collect();
        ipc::write_ipc(&columns).map_err(to_js)
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

#[wasm_bindgen(js_name = unaryOp)]
pub fn unary_op(op: &str, x: &Evaluator) -> JsResult<Evaluator> {
    wrap(UnaryOp::parse(op).and_then(|op| ir::unary(op, &x.node)))
}

#[wasm_bindgen]
pub fn interleave(args: &EvaluatorList) -> JsResult<Evaluator> {
    wrap(ir::interleave(&args.nodes))
}

#[wasm_bindgen]
pub fn swizzle(x: &Evaluator, channels: Vec<f64>) -> JsResult<Evaluator> {
    wrap(ir::swizzle(&x.node, &channels))
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
pub fn sequence(count: f64, start: f64, step: f64) -> JsResult<Evaluator> {
    wrap(ir::sequence(count, start, step))
}

#[wasm_bindgen]
pub fn gather(ids: &Evaluator, values: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::gather(&ids.node, &values.node))
}

#[wasm_bindgen(js_name = segmentedMap)]
pub fn segmented_map(segments: &Evaluator, vertex_count: f64) -> JsResult<Evaluator> {
    wrap(ir::segmented_map(&segments.node, vertex_count))
}

#[wasm_bindgen]
pub fn extent(x: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::extent(&x.node))
}

#[wasm_bindgen(js_name = cleanEvaluate)]
pub fn clean_evaluate(roots: &EvaluatorList) -> JsResult<()> {
    evaluator::clean_evaluate(&roots.nodes).map_err(to_js)
}
