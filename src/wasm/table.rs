//! The table model's handles: `TableModel`, `BatchModel`, `VectorModel`, `DataModel` and
//! `BufferModel` share the Rust objects of `crate::table`; the JS classes are typed views
//! of them that keep one view per object `id`.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::dictionary::{dictionary_from_js, dictionary_to_js};
use super::{
    copy_typed, invalid, number_arg, optional_number_arg, read, set, to_js, Evaluator, JsResult,
};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError};
use crate::evaluator;
use crate::ir::NodeRef;
use crate::table::{
    self, Batch, BatchRef, BufferRef, DataRef, Field, Metadata, Table, TableRef, Vector, VectorRef,
};
use crate::value::Value;

#[derive(Deserialize)]
struct FieldSpec {
    name: String,
    #[serde(rename = "type")]
    dtype: String,
    size: u32,
    #[serde(default)]
    nullable: bool,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    dictionary: JsValue,
}

/// A schema from `[{name, type, size, nullable?, metadata?}]`.
pub(super) fn fields_from_js(fields: JsValue) -> JsResult<Vec<Field>> {
    let specs: Vec<FieldSpec> = serde_wasm_bindgen::from_value(fields)
        .map_err(|e| invalid(format!("a schema needs fields of {{name, type, size, nullable?, metadata?}} with string metadata: {e}")))?;
    specs
        .into_iter()
        .map(|f| {
            let dtype = DType::parse(&f.dtype).map_err(to_js)?;
            let dictionary = dictionary_from_js(&f.dictionary)?;
            if dictionary.is_some() && (dtype == DType::F32 || f.size != 1) {
                return Err(invalid(format!(
                    "field '{}' has a dictionary: it needs integer codes, one per row",
                    f.name
                )));
            }
            Ok(Field {
                name: f.name,
                dtype,
                size: f.size,
                nullable: f.nullable,
                metadata: f.metadata,
                dictionary,
            })
        })
        .collect()
}

pub(super) fn fields_to_js(fields: &[Field]) -> js_sys::Array {
    let out = js_sys::Array::new();
    for field in fields {
        let f = js_sys::Object::new();
        set(&f, "name", field.name.as_str());
        set(&f, "type", field.dtype.name());
        set(&f, "size", field.size);
        set(&f, "nullable", field.nullable);
        let metadata = js_sys::Object::new();
        for (key, value) in &field.metadata {
            set(&metadata, key, value.as_str());
        }
        set(&f, "metadata", metadata);
        if let Some(dictionary) = &field.dictionary {
            set(&f, "dictionary", dictionary_to_js(dictionary));
        }
        out.push(&f);
    }
    out
}

/// A schema's metadata from a JS object of strings (null or undefined: none).
fn metadata_from_js(metadata: JsValue) -> JsResult<Metadata> {
    let mut out = Metadata::new();
    if metadata.is_null() || metadata.is_undefined() {
        return Ok(out);
    }
    let refused = || invalid("schema metadata must be an object of strings");
    let object = metadata.dyn_ref::<js_sys::Object>().ok_or_else(refused)?;
    for entry in js_sys::Object::entries(object).iter() {
        let pair = js_sys::Array::from(&entry);
        let (Some(key), Some(value)) = (pair.get(0).as_string(), pair.get(1).as_string()) else {
            return Err(refused());
        };
        out.insert(key, value);
    }
    Ok(out)
}

pub(super) fn metadata_to_js(metadata: &Metadata) -> js_sys::Object {
    let out = js_sys::Object::new();
    for (key, value) in metadata {
        set(&out, key, value.as_str());
    }
    out
}

fn batches_to_js(batches: impl IntoIterator<Item = BatchRef>) -> js_sys::Array {
    batches
        .into_iter()
        .map(|batch| JsValue::from(BatchModel { batch }))
        .collect()
}

#[wasm_bindgen]
pub struct TableModel {
    table: TableRef,
}

impl TableModel {
    pub(super) fn of(table: Table) -> TableModel {
        TableModel {
            table: table.shared(),
        }
    }
    pub(super) fn shared(&self) -> TableRef {
        self.table.clone()
    }
}

#[wasm_bindgen]
impl TableModel {
    /// An empty table with `fields` (null: none yet) and the schema's `metadata` on device
    /// `deviceId` (none: no device).
    #[wasm_bindgen(constructor)]
    pub fn new(fields: JsValue, device_id: Option<u32>, metadata: JsValue) -> JsResult<TableModel> {
        let fields = match fields.is_null() || fields.is_undefined() {
            true => Vec::new(),
            false => fields_from_js(fields)?,
        };
        let mut table = Table::new(fields, device_id);
        table.metadata = metadata_from_js(metadata)?;
        Ok(TableModel::of(table))
    }
    /// The schema's custom metadata.
    pub fn metadata(&self) -> js_sys::Object {
        let metadata = self.table.borrow().metadata.clone();
        metadata_to_js(&metadata)
    }

    #[wasm_bindgen(getter)]
    pub fn version(&self) -> u32 {
        self.table.borrow().version
    }
    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.table.borrow().check().is_err()
    }
    pub fn check(&self) -> JsResult<()> {
        self.table.borrow().check().map_err(to_js)
    }
    pub fn fields(&self) -> js_sys::Array {
        // Copied first: building JS objects can run user code that uses the table.
        let fields = self.table.borrow().fields.clone();
        fields_to_js(&fields)
    }
    /// Sets the schema of a table that has no columns yet (a streamed file's footer).
    #[wasm_bindgen(js_name = adoptFields)]
    pub fn adopt_fields(&self, fields: JsValue, metadata: JsValue) -> JsResult<()> {
        let fields = fields_from_js(fields)?;
        let metadata = metadata_from_js(metadata)?;
        let mut table = self.table.borrow_mut();
        if table.fields.is_empty() && table.batches.is_empty() {
            table.fields = fields;
            table.metadata = metadata;
            table.version += 1;
        }
        Ok(())
    }
    #[wasm_bindgen(js_name = numRows)]
    pub fn num_rows(&self) -> JsResult<f64> {
        self.table
            .borrow()
            .num_rows()
            .map(|n| n as f64)
            .map_err(to_js)
    }
    pub fn batches(&self) -> JsResult<js_sys::Array> {
        let table = self.table.borrow();
        table.check().map_err(to_js)?;
        Ok(batches_to_js(table.batches.iter().cloned()))
    }
    pub fn column(&self, name: &str) -> JsResult<VectorModel> {
        let vector = self.table.borrow().column(name).map_err(to_js)?;
        Ok(VectorModel::of(vector.shared()))
    }
    #[wasm_bindgen(js_name = addBatch)]
    pub fn add_batch(&self, batch: &BatchModel) -> JsResult<()> {
        self.table
            .borrow_mut()
            .add_batch(batch.batch.clone())
            .map_err(to_js)
    }
    #[wasm_bindgen(js_name = detachVector)]
    pub fn detach_vector(&self, name: &str) -> JsResult<VectorModel> {
        let vector = self.table.borrow_mut().detach_vector(name).map_err(to_js)?;
        Ok(VectorModel::of(vector.shared()))
    }
    #[wasm_bindgen(js_name = detachBatches)]
    pub fn detach_batches(&self, first: JsValue, last: JsValue) -> JsResult<js_sys::Array> {
        let first = number_arg(&first, "detachBatches first", Some(0.0))?;
        let last = number_arg(&last, "detachBatches last", Some(f64::INFINITY))?;
        let batches = self
            .table
            .borrow_mut()
            .detach_batches(first, last)
            .map_err(to_js)?;
        Ok(batches_to_js(batches))
    }
    pub fn select(&self, names: Vec<String>) -> JsResult<TableModel> {
        let selection = self.table.borrow().select(&names).map_err(to_js)?;
        Ok(TableModel::of(selection))
    }
    #[wasm_bindgen(js_name = resetLastBatch)]
    pub fn reset_last_batch(&self) -> JsResult<()> {
        self.table.borrow().reset_last_batch().map_err(to_js)
    }
    #[wasm_bindgen(js_name = lastBatch)]
    pub fn last_batch(&self) -> JsResult<BatchModel> {
        let batch = self.table.borrow().last_batch().map_err(to_js)?;
        Ok(BatchModel { batch })
    }
    /// The writer of this table's Arrow IPC stream, one record batch per batch.
    #[wasm_bindgen(js_name = ipcWriter)]
    pub fn ipc_writer(&self) -> JsResult<super::ipc::IpcWriter> {
        let columns = self.table.borrow().ipc_columns().map_err(to_js)?;
        let mut writer = super::ipc::IpcWriter::new();
        writer.metadata = self.table.borrow().metadata.clone().into_iter().collect();
        for (name, kind, data, validity, dictionary, shape, metadata, nullable) in columns {
            let described = super::ipc::Described::of_field(dictionary, shape, &metadata, nullable);
            writer.add_nodes(&name, &kind, data, validity, described)?;
        }
        Ok(writer)
    }
    pub fn destroy(&self) {
        self.table.borrow_mut().destroy();
    }
}

#[wasm_bindgen]
pub struct BatchModel {
    batch: BatchRef,
}

impl BatchModel {
    pub(super) fn of(batch: Batch) -> BatchModel {
        BatchModel {
            batch: batch.shared(),
        }
    }
}

/// Vector handles for a batch's constructor.
#[wasm_bindgen]
#[derive(Default)]
pub struct VectorList {
    vectors: Vec<VectorRef>,
}

#[wasm_bindgen]
impl VectorList {
    #[wasm_bindgen(constructor)]
    pub fn new() -> VectorList {
        VectorList::default()
    }
    pub fn push(&mut self, vector: &VectorModel) {
        self.vectors.push(vector.vector.clone());
    }
}

#[wasm_bindgen]
impl BatchModel {
    /// A batch taking `vectors` (one chunk each, equal lengths); `fields` may be null, and
    /// `metadata` (the schema's) too.
    #[wasm_bindgen(constructor)]
    pub fn new(vectors: &VectorList, fields: JsValue, metadata: JsValue) -> JsResult<BatchModel> {
        let fields = match fields.is_null() || fields.is_undefined() {
            true => None,
            false => Some(fields_from_js(fields)?),
        };
        let metadata = metadata_from_js(metadata)?;
        let mut batch = Batch::new(vectors.vectors.clone(), fields).map_err(to_js)?;
        batch.metadata = metadata;
        Ok(BatchModel::of(batch))
    }
    /// The schema's custom metadata.
    pub fn metadata(&self) -> js_sys::Object {
        let metadata = self.batch.borrow().metadata.clone();
        metadata_to_js(&metadata)
    }
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> u32 {
        self.batch.borrow().id
    }
    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.batch.borrow().destroyed
    }
    pub fn check(&self) -> JsResult<()> {
        self.batch.borrow().check().map_err(to_js)
    }
    pub fn fields(&self) -> js_sys::Array {
        let fields = self.batch.borrow().fields.clone();
        fields_to_js(&fields)
    }
    #[wasm_bindgen(getter)]
    pub fn version(&self) -> u32 {
        self.batch.borrow().version
    }
    #[wasm_bindgen(js_name = numRows)]
    pub fn num_rows(&self) -> JsResult<f64> {
        let batch = self.batch.borrow();
        batch.check().map_err(to_js)?;
        Ok(batch.num_rows() as f64)
    }
    pub fn vectors(&self) -> JsResult<js_sys::Array> {
        let batch = self.batch.borrow();
        batch.check().map_err(to_js)?;
        Ok(batch
            .vectors
            .iter()
            .map(|v| JsValue::from(VectorModel::of(v.clone())))
            .collect())
    }
    pub fn vector(&self, name: &str) -> JsResult<VectorModel> {
        self.batch
            .borrow()
            .vector(name)
            .map(VectorModel::of)
            .map_err(to_js)
    }
    /// The batch's stored values (lazy all-valid flags are made where they are used).
    pub(super) fn stored_nodes(&self) -> crate::Result<Vec<NodeRef>> {
        let batch = self.batch.borrow();
        batch.check()?;
        Ok(batch
            .nodes()?
            .into_iter()
            .filter(|n| n.has_output())
            .collect())
    }
    pub fn destroy(&self) {
        self.batch.borrow_mut().destroy();
    }
}

#[wasm_bindgen]
pub struct VectorModel {
    vector: VectorRef,
}

impl VectorModel {
    fn of(vector: VectorRef) -> VectorModel {
        VectorModel { vector }
    }
}

/// Rows `start..end` of `vector` as the stored values holding them (evaluated first where
/// lazy, on the shared CPU device).
async fn vector_pieces(
    vector: &VectorRef,
    start: Option<f64>,
    end: Option<f64>,
) -> crate::Result<Vec<(Rc<Value>, u32, u32)>> {
    let pieces = {
        let v = vector.borrow();
        v.check()?;
        let rows = v.length().min(u32::MAX as u64) as u32;
        let (start, end) = evaluator::row_range(rows, start, end)?;
        v.pieces(start as u64, end as u64)?
    };
    let mut stored = Vec::new();
    for (node, from, to) in pieces {
        let output = evaluator::output(&node).await?;
        stored.extend(output.pieces(from as u64, to as u64));
    }
    Ok(stored)
}

#[wasm_bindgen]
impl VectorModel {
    /// An empty vector that grows by `append`.
    pub fn appendable(name: &str, dtype: &str, size: u32, capacity: f64) -> JsResult<VectorModel> {
        let dtype = DType::parse(dtype).map_err(to_js)?;
        if capacity > u32::MAX as f64 {
            return Err(to_js(GpuTableError::new(
                ErrorCode::OutOfMemory,
                format!("could not allocate {capacity} rows: a vector holds at most 2^32-1"),
            )));
        }
        let capacity = capacity as u32;
        let vector = Vector::appendable(name, dtype, size, capacity).map_err(to_js)?;
        Ok(VectorModel::of(vector.shared()))
    }
    /// The output of evaluated `evaluator` on device `deviceId`, a chunk per stored chunk.
    #[wasm_bindgen(js_name = ofOutput)]
    pub fn of_output(evaluator: &Evaluator, device_id: u32) -> VectorModel {
        VectorModel::of(Vector::of_output(&evaluator.node, device_id).shared())
    }
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> u32 {
        self.vector.borrow().id
    }
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.vector.borrow().name.clone()
    }
    #[wasm_bindgen(getter, js_name = "type")]
    pub fn dtype(&self) -> String {
        self.vector.borrow().dtype.name().to_string()
    }
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        self.vector.borrow().size
    }
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.vector.borrow().length() as f64
    }
    #[wasm_bindgen(getter)]
    pub fn chunks(&self) -> Vec<u32> {
        self.vector.borrow().chunks()
    }
    #[wasm_bindgen(getter, js_name = deviceId)]
    pub fn device_id(&self) -> Option<u32> {
        self.vector.borrow().device()
    }
    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.vector.borrow().check().is_err()
    }
    pub fn check(&self) -> JsResult<()> {
        self.vector.borrow().check().map_err(to_js)
    }
    pub fn data(&self) -> js_sys::Array {
        let vector = self.vector.borrow();
        vector
            .data
            .iter()
            .map(|d| JsValue::from(DataModel { data: d.clone() }))
            .collect()
    }
    pub fn validity(&self) -> Option<VectorModel> {
        self.vector.borrow().validity.clone().map(VectorModel::of)
    }
    /// On WebGPU device `id`, for an output whose rows were counted there: the `GPUBuffer`
    /// of its draw arguments `[rows, 1, 0, 0]` (uint32), for `drawIndirect`.
    #[wasm_bindgen(js_name = drawIndirectOn)]
    pub fn draw_indirect_on(&self, id: u32) -> JsValue {
        let vector = self.vector.borrow();
        let output = vector.draw_args.as_ref().and_then(|a| a.output_on(id));
        webgpu_buffer(output, 0).unwrap_or(JsValue::NULL)
    }
    /// The vector as one evaluator over its storage (a view over several chunks).
    pub fn evaluator(&self) -> JsResult<Evaluator> {
        self.vector
            .borrow()
            .node()
            .map(Evaluator::of)
            .map_err(to_js)
    }
    /// Appends a typed array of the vector's type (whole rows).
    pub fn append(&self, rows: JsValue) -> JsResult<()> {
        // Copied before borrowing: reading a typed array can run user code.
        let dtype = self.vector.borrow().dtype;
        let rows = copy_typed(dtype, &rows).map_err(to_js)?;
        self.vector.borrow_mut().append(rows).map_err(to_js)
    }
    #[wasm_bindgen(js_name = resetLastBatch)]
    pub fn reset_last_batch(&self) -> JsResult<()> {
        self.vector.borrow_mut().reset_last().map_err(to_js)
    }
    #[wasm_bindgen(js_name = readValue)]
    pub fn read_value(&self, start: JsValue, end: JsValue) -> js_sys::Promise {
        let vector = self.vector.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let start = optional_number_arg(&start, "readValue startRow")?;
            let end = optional_number_arg(&end, "readValue endRow")?;
            let (dtype, size) = {
                let v = vector.borrow();
                (v.dtype, v.size)
            };
            let pieces = vector_pieces(&vector, start, end).await.map_err(to_js)?;
            read::pieces_into_typed_array(pieces, dtype, size).await
        })
    }
    /// `readValue` for storage in host memory, without waiting.
    #[wasm_bindgen(js_name = readValueSync)]
    pub fn read_value_sync(&self, start: JsValue, end: JsValue) -> JsResult<JsValue> {
        let start = optional_number_arg(&start, "readValue startRow")?;
        let end = optional_number_arg(&end, "readValue endRow")?;
        let pieces = crate::engine::now(vector_pieces(&self.vector, start, end))
            .and_then(|r| r)
            .map_err(to_js)?;
        if pieces
            .iter()
            .any(|(value, _, _)| value.host_column().is_none())
        {
            return Err(invalid(
                "this vector lives on a GPU device: read it with await readValue()",
            ));
        }
        let (dtype, size) = {
            let v = self.vector.borrow();
            (v.dtype, v.size)
        };
        crate::engine::now(read::pieces_into_typed_array(pieces, dtype, size)).map_err(to_js)?
    }
    pub fn destroy(&self) {
        self.vector.borrow_mut().destroy();
    }
    /// Destroys an output's view and drops what it reads (its evaluator was destroyed).
    pub fn release(&self) {
        self.vector.borrow_mut().release();
    }
}

#[wasm_bindgen]
pub struct DataModel {
    data: DataRef,
}

#[wasm_bindgen]
impl DataModel {
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> u32 {
        self.data.borrow().id
    }
    pub fn buffer(&self) -> BufferModel {
        BufferModel {
            buffer: self.data.borrow().buffer.clone(),
        }
    }
    #[wasm_bindgen(getter, js_name = ownsBuffer)]
    pub fn owns_buffer(&self) -> bool {
        self.data.borrow().owns_buffer
    }
    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.data.borrow().gone()
    }
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> u32 {
        self.data.borrow().length()
    }
    pub fn destroy(&self) {
        self.data.borrow_mut().destroy();
    }
}

#[wasm_bindgen]
pub struct BufferModel {
    buffer: BufferRef,
}

#[wasm_bindgen]
impl BufferModel {
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> u32 {
        self.buffer.borrow().id
    }
    #[wasm_bindgen(getter, js_name = "type")]
    pub fn dtype(&self) -> String {
        self.buffer.borrow().dtype.name().to_string()
    }
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        self.buffer.borrow().size
    }
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> u32 {
        self.buffer.borrow().length
    }
    #[wasm_bindgen(getter)]
    pub fn generation(&self) -> u32 {
        self.buffer.borrow().generation
    }
    #[wasm_bindgen(getter)]
    pub fn capacity(&self) -> u32 {
        self.buffer.borrow().capacity()
    }
    #[wasm_bindgen(getter, js_name = byteLength)]
    pub fn byte_length(&self) -> f64 {
        self.buffer.borrow().byte_length()
    }
    #[wasm_bindgen(getter, js_name = deviceId)]
    pub fn device_id(&self) -> Option<u32> {
        self.buffer.borrow().device
    }
    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.buffer.borrow().destroyed()
    }
    /// The `GPUBuffer` holding these rows on WebGPU device `id`, if they are there.
    #[wasm_bindgen(js_name = gpuBufferOn)]
    pub fn gpu_buffer_on(&self, id: u32) -> JsValue {
        let Ok((node, _, chunk)) = self.buffer.borrow_mut().stored() else {
            return JsValue::UNDEFINED;
        };
        webgpu_buffer(node.output_on(id), chunk as usize).unwrap_or(JsValue::UNDEFINED)
    }
    pub fn destroy(&self) {
        self.buffer.borrow_mut().destroy();
    }
}

/// The `GPUBuffer` holding stored chunk `chunk` of `output`, where it is a WebGPU value.
fn webgpu_buffer(output: Option<crate::value::Output>, chunk: usize) -> Option<JsValue> {
    let output = output?;
    let value = output.chunks.get(chunk)?;
    let stored = value.storage_of::<crate::gpu::GpuValue>()?;
    stored.buffer().as_webgpu().map(|b| b.clone().into())
}

/// Tracked table storage alive on device `id` (with `unplaced`, also storage of no device);
/// every device's with no `id`.
#[wasm_bindgen(js_name = liveBuffers)]
pub fn live_buffers(id: Option<u32>, unplaced: bool) -> u32 {
    match id {
        Some(id) => table::live_buffers_on(id, unplaced) as u32,
        None => table::live_buffers() as u32,
    }
}
