//! Arrow IPC across the boundary: a read gives sources per column and batch; a write takes
//! evaluated columns wherever they live (GPU outputs are read back first).

use std::rc::Rc;

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::table::{fields_to_js, BatchModel, TableModel};
use super::{set, to_js, EvaluatorList, JsResult};
use crate::column::Column;
use crate::dtype::DType;
use crate::error::GpuTableError;
use crate::ipc::{
    self, Dictionary, FieldInfo, Float64As, Int64As, IpcColumn, ReadOptions, SourceKind,
};
use crate::ir::NodeRef;
use crate::table::{metadata_of, Batch, Metadata, Table};
use crate::value::Value;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct IpcOptions {
    columns: Option<Vec<String>>,
    /// 'float32' (default) or 'words'.
    float64: Option<String>,
    /// 'float32' or 'int32'; absent: Int64 columns are TYPE_MISMATCH.
    int64: Option<String>,
}

/// The read options of `fromArrowIPC` (`columns`, `float64`, `int64`).
fn read_options(options: JsValue) -> JsResult<ReadOptions> {
    let options: IpcOptions = if options.is_undefined() || options.is_null() {
        IpcOptions::default()
    } else {
        serde_wasm_bindgen::from_value(options)
            .map_err(|e| to_js(GpuTableError::invalid(format!("bad IPC options: {e}"))))?
    };
    let float64 = match options.float64.as_deref() {
        Some("words") => Float64As::Words,
        None | Some("float32") => Float64As::Float32,
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
    Ok(ReadOptions {
        columns: options.columns,
        float64,
        int64,
    })
}

/// `{fields: [{name, type, size, nullable, metadata: {arrowType, kind}}], batches:
/// [BatchModel]}`: the batches of an IPC read, their storage counted on `device`.
fn read_result(
    fields: &[FieldInfo],
    batches: Vec<Vec<IpcColumn>>,
    metadata: &Metadata,
    device: Option<u32>,
) -> JsResult<JsValue> {
    let (fields, made) = Batch::all_of_ipc(fields, batches, metadata, device).map_err(to_js)?;
    let batches_js = js_sys::Array::new();
    for batch in made {
        batches_js.push(&BatchModel::of(batch).into());
    }
    let out = js_sys::Object::new();
    set(&out, "fields", fields_to_js(&fields));
    set(&out, "metadata", super::table::metadata_to_js(metadata));
    set(&out, "batches", batches_js);
    Ok(out.into())
}

/// Reads an Arrow IPC stream or file into a table on device `deviceId` (none: no device),
/// one record batch per source batch.
#[wasm_bindgen(js_name = readIpc)]
pub fn read_ipc(
    bytes: &js_sys::Uint8Array,
    options: JsValue,
    device_id: Option<u32>,
) -> JsResult<TableModel> {
    // Copied in fallibly (a `&[u8]` argument's copy aborts the instance where memory is short).
    let crate::column::ColumnData::U8(bytes) =
        super::copy_typed(crate::dtype::DType::U8, bytes.as_ref()).map_err(to_js)?
    else {
        return Err(to_js(crate::engine::internal(
            "IPC bytes copied as another type",
        )));
    };
    let read = ipc::read_ipc(&bytes, &read_options(options)?).map_err(to_js)?;
    drop(bytes);
    let mut table = Table::new(Vec::new(), device_id);
    let metadata = metadata_of(read.metadata);
    if let Err(error) = table.add_ipc(&read.fields, read.batches, &metadata) {
        table.destroy();
        return Err(to_js(error));
    }
    Ok(TableModel::of(table))
}

/// Arrow IPC a piece at a time: `push(bytes)` gives the batches those bytes complete (with
/// the fields once known), `finish()` checks the input ended whole and gives the fields (and
/// the batches of a file that had to be held whole); see `read_result`.
#[wasm_bindgen]
pub struct IpcStreamReader {
    reader: ipc::StreamReader,
    device: Option<u32>,
}

#[wasm_bindgen]
impl IpcStreamReader {
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, device_id: Option<u32>) -> JsResult<IpcStreamReader> {
        Ok(IpcStreamReader {
            reader: ipc::StreamReader::new(read_options(options)?),
            device: device_id,
        })
    }

    pub fn push(&mut self, bytes: &[u8]) -> JsResult<JsValue> {
        let batches = self.reader.push(bytes).map_err(to_js)?;
        let fields = self.reader.fields().unwrap_or_default();
        let metadata = metadata_of(self.reader.metadata().into_iter().flatten().cloned());
        read_result(&fields, batches, &metadata, self.device)
    }

    pub fn finish(&mut self) -> JsResult<JsValue> {
        let read = self.reader.finish().map_err(to_js)?;
        let metadata = metadata_of(read.metadata);
        read_result(&read.fields, read.batches, &metadata, self.device)
    }
}

/// Collects columns, batch by batch, into an Arrow IPC stream.
#[wasm_bindgen]
#[derive(Default)]
pub struct IpcWriter {
    columns: Vec<ColumnSpec>,
    /// The schema's custom metadata.
    pub(super) metadata: ipc::KeyValues,
}

#[wasm_bindgen]
impl IpcWriter {
    #[wasm_bindgen(constructor)]
    pub fn new() -> IpcWriter {
        IpcWriter::default()
    }

    /// A column: its name, source kind ('plain', 'float64', 'bool', 'dictionary'), its
    /// evaluated data per batch, its validity per batch (or none at all), and the values of
    /// its codes (an array of strings or numbers, or undefined).
    #[wasm_bindgen(js_name = addColumn)]
    pub fn add_column(
        &mut self,
        name: &str,
        kind: &str,
        data: &EvaluatorList,
        validity: &EvaluatorList,
        dictionary: JsValue,
    ) -> JsResult<()> {
        let dictionary = super::dictionary::dictionary_from_js(&dictionary)?;
        let described = Described {
            dictionary,
            ..Default::default()
        };
        self.add_nodes(
            name,
            kind,
            data.nodes.clone(),
            validity.nodes.clone(),
            described,
        )
    }

    /// Whether every column is in host memory or still to be made (on the CPU): the bytes
    /// can be had now, with `finishSync`.
    #[wasm_bindgen(getter, js_name = inHostMemory)]
    pub fn in_host_memory(&self) -> bool {
        self.columns.iter().all(|(_, _, data, validity, ..)| {
            data.iter()
                .chain(validity)
                .all(|n| n.host_output().is_some() || !n.has_output())
        })
    }
    /// The IPC stream bytes; every column must be evaluated. Columns on a GPU device are read
    /// back first.
    pub fn finish(&self) -> js_sys::Promise {
        let columns = self.columns.clone();
        let metadata = self.metadata.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut held = Vec::new();
            for (_, _, data, validity, ..) in &columns {
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
            let bytes = write(&columns, &held, &metadata).map_err(to_js)?;
            Ok(js_sys::Uint8Array::from(&bytes[..]).into())
        })
    }

    /// `finish` for columns in host memory, without waiting.
    #[wasm_bindgen(js_name = finishSync)]
    pub fn finish_sync(&self) -> JsResult<Vec<u8>> {
        let mut held = Vec::new();
        for (_, _, data, validity, ..) in &self.columns {
            let read = |nodes: &Vec<NodeRef>| {
                nodes
                    .iter()
                    .map(|node| {
                        crate::engine::now(host_copy(node))
                            .map_err(|_| {
                                GpuTableError::invalid(
                                "a column lives on a GPU device: write it with await toArrowIPC()",
                            )
                            })
                            .and_then(|r| r)
                    })
                    .collect::<crate::Result<Vec<_>>>()
                    .map(|chunks| chunks.into_iter().flatten().collect::<Vec<_>>())
            };
            held.push((read(data).map_err(to_js)?, read(validity).map_err(to_js)?));
        }
        write(&self.columns, &held, &self.metadata).map_err(to_js)
    }
}

impl IpcWriter {
    /// `addColumn` of nodes.
    pub(super) fn add_nodes(
        &mut self,
        name: &str,
        kind: &str,
        data: Vec<NodeRef>,
        validity: Vec<NodeRef>,
        mut described: Described,
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
        // A result counted on the device as the rows its count gave each chunk.
        let data = (data.iter())
            .map(|d| crate::ir::known_rows(d, "toArrowIPC"))
            .collect::<crate::Result<Vec<_>>>()
            .map_err(to_js)?;
        // An evaluator's nulls go with it.
        let validity = match validity.is_empty() {
            true => (data.iter())
                .map(|d| d.validity().cloned())
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
            false => validity,
        };
        if !validity.is_empty() && validity.len() != data.len() {
            return Err(to_js(GpuTableError::invalid(
                "validity needs one vector per batch",
            )));
        }
        let shape = described.shape;
        described.shape = shape.or_else(|| data.first().map(|d| (d.meta.dtype, d.meta.size)));
        (self.columns).push((name.to_string(), kind, data, validity, described));
        Ok(())
    }
}

/// What a column's field tells the writer beyond its values: its dictionary, its type and
/// values per row (a column of no batches has no values to tell them), the Arrow type it
/// was loaded from and its custom metadata.
#[derive(Clone, Default)]
pub(super) struct Described {
    pub dictionary: Option<Rc<Dictionary>>,
    pub shape: Option<(DType, u32)>,
    pub loaded_as: Option<String>,
    pub metadata: ipc::KeyValues,
    pub nullable: bool,
}

impl Described {
    /// A field's: `arrowType` and `kind` are ours (the type and layout written), the rest
    /// its custom metadata.
    pub fn of_field(
        dictionary: Option<Rc<Dictionary>>,
        shape: (DType, u32),
        metadata: &Metadata,
        nullable: bool,
    ) -> Described {
        let mut described = Described {
            dictionary,
            shape: Some(shape),
            nullable,
            ..Default::default()
        };
        for (key, value) in metadata {
            match key.as_str() {
                "arrowType" => described.loaded_as = Some(value.clone()),
                "kind" => {}
                _ => described.metadata.push((key.clone(), value.clone())),
            }
        }
        described
    }
}

type ColumnSpec = (String, SourceKind, Vec<NodeRef>, Vec<NodeRef>, Described);
type HeldColumns = Vec<(Vec<Rc<Value>>, Vec<Rc<Value>>)>;

/// A node's output chunks in host memory: the host copy where there is one, else read back
/// (one record batch each); a node never evaluated (a table's all-valid flags) is made on
/// the CPU.
async fn host_copy(node: &NodeRef) -> crate::Result<Vec<Rc<Value>>> {
    node.check_alive()?;
    if let Some(output) = node.host_output() {
        return Ok(output.chunks.to_vec());
    }
    let output = crate::evaluator::output(node).await?;
    if output.in_host_memory() {
        return Ok(output.chunks.to_vec());
    }
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

fn write(
    columns: &[ColumnSpec],
    held: &HeldColumns,
    metadata: &[(String, String)],
) -> crate::Result<Vec<u8>> {
    let mut specs = Vec::new();
    for ((name, kind, _, _, described), (data, validity)) in columns.iter().zip(held) {
        let mut batches = Vec::new();
        for (b, d) in data.iter().enumerate() {
            let v = validity.get(b).map(|v| host(v)).transpose()?;
            batches.push((host(d)?, v));
        }
        specs.push(ipc::WriteColumn {
            name,
            kind: *kind,
            batches,
            dictionary: described.dictionary.as_deref(),
            shape: described.shape,
            loaded_as: described.loaded_as.as_deref(),
            metadata: &described.metadata,
            nullable: described.nullable,
        });
    }
    ipc::write_ipc(&specs, metadata)
}
