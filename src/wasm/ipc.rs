//! Arrow IPC across the boundary: a read gives sources per column and batch; a write takes
//! evaluated columns wherever they live (GPU outputs are read back first).

use std::rc::Rc;

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::{to_js, wrap, EvaluatorList, JsResult};
use crate::column::Column;
use crate::error::GpuTableError;
use crate::ipc::{self, Float64As, Int64As, ReadOptions, SourceKind};
use crate::ir::{self, NodeRef};
use crate::value::Value;

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
                let size = validity.size;
                set(
                    &c,
                    "validity",
                    wrap(ir::source(validity.data, size, false))?,
                );
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
    columns: Vec<ColumnSpec>,
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

    /// The IPC stream bytes; every column must be evaluated. Columns on a GPU device are read
    /// back first.
    pub fn finish(&self) -> js_sys::Promise {
        let columns = self.columns.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut held = Vec::new();
            for (_, _, data, validity) in &columns {
                let read = |nodes: &Vec<NodeRef>| {
                    let nodes = nodes.clone();
                    async move {
                        let mut out = Vec::new();
                        for node in &nodes {
                            out.extend(host_copy(node).await?);
                        }
                        Ok::<_, GpuTableError>(out)
                    }
                };
                let data = read(data).await.map_err(to_js)?;
                let validity = read(validity).await.map_err(to_js)?;
                held.push((data, validity));
            }
            let bytes = write(&columns, &held).map_err(to_js)?;
            Ok(js_sys::Uint8Array::from(&bytes[..]).into())
        })
    }

    /// `finish` for columns in host memory, without waiting.
    #[wasm_bindgen(js_name = finishSync)]
    pub fn finish_sync(&self) -> JsResult<Vec<u8>> {
        let mut held = Vec::new();
        for (_, _, data, validity) in &self.columns {
            let read = |nodes: &Vec<NodeRef>| {
                nodes
                    .iter()
                    .map(|node| {
                        crate::engine::now(host_copy(node))
                            .and_then(|r| r)
                            .map_err(|_| {
                                GpuTableError::invalid(
                                "a column lives on a GPU device: write it with await toArrowIPC()",
                            )
                            })
                    })
                    .collect::<crate::Result<Vec<_>>>()
                    .map(|chunks| chunks.into_iter().flatten().collect::<Vec<_>>())
            };
            held.push((read(data).map_err(to_js)?, read(validity).map_err(to_js)?));
        }
        write(&self.columns, &held).map_err(to_js)
    }
}

type ColumnSpec = (String, SourceKind, Vec<NodeRef>, Vec<NodeRef>);
type HeldColumns = Vec<(Vec<Rc<Value>>, Vec<Rc<Value>>)>;

/// A node's output chunks in host memory: the host copy where there is one, else read back
/// (one record batch each).
async fn host_copy(node: &NodeRef) -> crate::Result<Vec<Rc<Value>>> {
    node.check_alive()?;
    if let Some(output) = node.host_output() {
        return Ok(output.chunks.to_vec());
    }
    let output = node.home().ok_or_else(|| {
        GpuTableError::invalid(format!("t{} is not evaluated; evaluate it first", node.id))
    })?;
    let columns = crate::engine::read_whole_output(&output).await?;
    Ok(columns
        .into_iter()
        .map(|c| Rc::new(Value::host(c)))
        .collect())
}

fn host(value: &Value) -> crate::Result<&Column> {
    value
        .host_column()
        .ok_or_else(|| crate::engine::internal("a column to write is not in host memory"))
}

fn write(columns: &[ColumnSpec], held: &HeldColumns) -> crate::Result<Vec<u8>> {
    let mut specs = Vec::new();
    for ((name, kind, _, _), (data, validity)) in columns.iter().zip(held) {
        let mut batches = Vec::new();
        for (b, d) in data.iter().enumerate() {
            let v = validity.get(b).map(|v| host(v)).transpose()?;
            batches.push((host(d)?, v));
        }
        specs.push(ipc::WriteColumn {
            name,
            kind: *kind,
            batches,
        });
    }
    ipc::write_ipc(&specs)
}
