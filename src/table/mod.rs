//! The table model (gpu-table-structure.txt): a `Table` owns record batches, a `Batch` owns
//! its batch-local vectors, a `Vector` owns or borrows `Data` chunks, and only a `Buffer`
//! owns storage. Handles are shared (`Rc<RefCell<_>>`) because a table, a batch detached
//! from it and a caller's vector can name one object; ownership decides who frees
//! storage, not who holds a handle. The JS classes are typed views of these.

mod buffer;
mod pack;
mod vector;
mod verbs;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

pub use buffer::{live_buffers, live_buffers_on, Buffer, BufferRef};
pub use pack::{chunk_nodes, pack_batches, pack_column, pack_groups, packed, PackedColumns};
pub use vector::{Data, DataRef, Vector, VectorRef};
pub use verbs::table_of_columns;

use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ipc::{Dictionary, FieldInfo, IpcColumn, SourceKind};
use crate::ir::{self, NodeRef};
use crate::value::DeviceId;

thread_local! {
    static NEXT_ID: Cell<u32> = const { Cell::new(1) };
}

/// A process-unique id, so the JS side keeps one view per model object.
fn next_id() -> u32 {
    NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id.wrapping_add(1).max(1));
        id
    })
}

/// A column of a schema; `metadata` carries the IPC source's custom metadata, its
/// `arrowType` and `kind` (ours, written back as the type and layout, not as metadata), and
/// `dictionary` the values of a dictionary column's codes (api.md "Tables").
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub dtype: DType,
    pub size: u32,
    pub nullable: bool,
    pub metadata: BTreeMap<String, String>,
    pub dictionary: Option<Rc<Dictionary>>,
}

impl Field {
    pub fn of_vector(vector: &Vector) -> Field {
        Field {
            name: vector.name.clone(),
            dtype: vector.dtype,
            size: vector.size,
            nullable: vector.validity.is_some(),
            metadata: BTreeMap::new(),
            dictionary: None,
        }
    }

    pub fn of_ipc(info: &FieldInfo) -> Field {
        let kind = match info.kind {
            SourceKind::Plain => "plain",
            SourceKind::Float64Words => "float64",
            SourceKind::Bool => "bool",
            SourceKind::DictionaryIndices => "dictionary",
        };
        Field {
            name: info.name.clone(),
            dtype: info.dtype,
            size: info.size,
            nullable: info.nullable,
            metadata: metadata_of(info.metadata.iter().cloned().chain([
                ("arrowType".to_string(), info.arrow_type.clone()),
                ("kind".to_string(), kind.to_string()),
            ])),
            dictionary: info.dictionary.clone(),
        }
    }

    /// The IPC kind to write the column as.
    pub fn kind(&self) -> &str {
        self.metadata.get("kind").map_or("plain", String::as_str)
    }

    fn same_column(&self, other: &Field) -> bool {
        self.name == other.name && self.dtype == other.dtype && self.size == other.size
    }
}

fn destroyed(what: &str) -> GpuTableError {
    GpuTableError::new(ErrorCode::Destroyed, format!("this {what} was destroyed"))
}

fn no_column(name: &str) -> GpuTableError {
    GpuTableError::invalid(format!("no column '{name}' in this table"))
}

pub type BatchRef = Rc<RefCell<Batch>>;

/// One preserved batch: a row range of every column, one chunk per vector.
#[derive(Debug)]
pub struct Batch {
    pub id: u32,
    pub fields: Vec<Field>,
    pub vectors: Vec<VectorRef>,
    pub destroyed: bool,
    /// Whether a table holds it (one table at a time: detach it to move it).
    in_table: bool,
    /// Counts schema changes, so views know when to describe it again.
    pub version: u32,
    /// The schema's custom metadata.
    pub metadata: Metadata,
}

/// A schema's custom metadata (Arrow's, kept through IPC in and out).
pub type Metadata = BTreeMap<String, String>;

/// `pairs` as metadata, a later pair of a key replacing an earlier one (inserted one at a
/// time: collecting would sort them first, a larger module).
pub fn metadata_of(pairs: impl IntoIterator<Item = (String, String)>) -> Metadata {
    let mut metadata = Metadata::new();
    for (key, value) in pairs {
        metadata.insert(key, value);
    }
    metadata
}

impl Batch {
    /// Takes `vectors` (one chunk each, equal lengths); `fields` default to theirs.
    pub fn new(vectors: Vec<VectorRef>, fields: Option<Vec<Field>>) -> Result<Batch> {
        let mut rows = None;
        for vector in &vectors {
            let v = vector.borrow();
            v.check()?;
            if v.data.len() != 1 {
                return Err(GpuTableError::invalid(format!(
                    "a record batch needs single-chunk vectors; '{}' has {} chunks",
                    v.name,
                    v.data.len()
                )));
            }
            match rows {
                Some(r) if r != v.length() => {
                    return Err(GpuTableError::invalid(format!(
                        "the vectors of a batch need equal lengths, got {r} and {}",
                        v.length()
                    )))
                }
                _ => rows = Some(v.length()),
            }
        }
        let fields = match fields {
            Some(fields) if fields.len() != vectors.len() => {
                return Err(GpuTableError::invalid(format!(
                    "a schema of {} fields for {} vectors",
                    fields.len(),
                    vectors.len()
                )))
            }
            Some(fields) => {
                for (field, vector) in fields.iter().zip(&vectors) {
                    let v = vector.borrow();
                    if field.dtype != v.dtype || field.size != v.size {
                        return Err(GpuTableError::type_mismatch(format!(
                            "field '{}' is {} x{}, its vector {} x{}",
                            field.name,
                            field.dtype.name(),
                            field.size,
                            v.dtype.name(),
                            v.size
                        )));
                    }
                }
                fields
            }
            None => vectors
                .iter()
                .map(|v| Field::of_vector(&v.borrow()))
                .collect(),
        };
        Ok(Batch {
            id: next_id(),
            fields,
            vectors,
            destroyed: false,
            in_table: false,
            version: 0,
            metadata: Metadata::new(),
        })
    }

    pub fn shared(self) -> BatchRef {
        Rc::new(RefCell::new(self))
    }

    pub fn check(&self) -> Result<()> {
        match self.destroyed {
            true => Err(GpuTableError::new(
                ErrorCode::Destroyed,
                "this record batch was destroyed or detached",
            )),
            false => Ok(()),
        }
    }

    pub fn num_rows(&self) -> u64 {
        self.vectors.first().map_or(0, |v| v.borrow().length())
    }

    pub fn vector(&self, name: &str) -> Result<VectorRef> {
        self.check()?;
        let index = self.fields.iter().position(|f| f.name == name);
        index
            .map(|i| self.vectors[i].clone())
            .ok_or_else(|| GpuTableError::invalid(format!("no column '{name}'")))
    }

    /// Column `index` of a table's schema (a live batch of that table has every column).
    fn column_at(&self, index: usize) -> Result<VectorRef> {
        self.check()?;
        self.vectors
            .get(index)
            .cloned()
            .ok_or_else(|| crate::engine::internal("a batch lacks a column of its table"))
    }

    /// Every node holding this batch's storage (data and validity).
    pub fn nodes(&self) -> Result<Vec<NodeRef>> {
        let mut nodes = Vec::new();
        for vector in &self.vectors {
            let v = vector.borrow();
            nodes.push(v.node()?);
            if let Some(validity) = &v.validity {
                nodes.push(validity.borrow().node()?);
            }
        }
        Ok(nodes)
    }

    /// Destroys the batch-local vectors (and the storage they own).
    pub fn destroy(&mut self) {
        if self.destroyed {
            return;
        }
        for vector in &self.vectors {
            vector.borrow_mut().destroy();
        }
        self.destroyed = true;
    }

    /// The fields of an IPC read and one batch per source batch, storage on `device`; a
    /// failure destroys the batches made before it (their storage is counted live).
    pub fn all_of_ipc(
        fields: &[FieldInfo],
        batches: Vec<Vec<IpcColumn>>,
        metadata: &Metadata,
        device: Option<DeviceId>,
    ) -> Result<(Vec<Field>, Vec<Batch>)> {
        let fields: Vec<Field> = fields.iter().map(Field::of_ipc).collect();
        let mut made = Vec::with_capacity(batches.len());
        for columns in batches {
            match Batch::of_ipc(&fields, columns, device) {
                Ok(batch) => made.push(Batch {
                    metadata: metadata.clone(),
                    ..batch
                }),
                Err(error) => {
                    made.iter_mut().for_each(Batch::destroy);
                    return Err(error);
                }
            }
        }
        Ok((fields, made))
    }

    /// The batch of IPC columns `columns` described by `fields`, its storage on `device`.
    pub fn of_ipc(
        fields: &[Field],
        columns: Vec<IpcColumn>,
        device: Option<DeviceId>,
    ) -> Result<Batch> {
        let mut vectors: Vec<VectorRef> = Vec::with_capacity(columns.len());
        let mut add = |field: &Field, column: IpcColumn| -> Result<()> {
            let validity = match column.validity {
                Some(flags) => Some(ir::source(flags.data, flags.size, false)?),
                None => None,
            };
            let data = ir::source(column.data.data, column.data.size, false)?;
            let validity = validity
                .map(|node| Vector::owning(&format!("{}.validity", field.name), node, device));
            let vector = Vector::owning(&field.name, data, device).with_validity(validity);
            vectors.push(vector.shared());
            Ok(())
        };
        let added = fields
            .iter()
            .zip(columns)
            .try_for_each(|(field, column)| add(field, column));
        let batch = added.and_then(|()| Batch::new(vectors.clone(), Some(fields.to_vec())));
        if batch.is_err() {
            // Storage made before the failure is counted live until destroyed.
            for vector in &vectors {
                vector.borrow_mut().destroy();
            }
        }
        batch
    }
}

pub type TableRef = Rc<RefCell<Table>>;

/// A column to write as IPC: name, kind, each batch's data and validity nodes, dictionary,
/// its type and values per row (a table of no batches has no node to tell them), and its
/// field's metadata and nullability.
pub type IpcColumnNodes = (
    String,
    String,
    Vec<NodeRef>,
    Vec<NodeRef>,
    Option<Rc<Dictionary>>,
    (DType, u32),
    BTreeMap<String, String>,
    bool,
);

/// A table on a device: a schema and the record batches it owns until they are detached.
#[derive(Debug)]
pub struct Table {
    pub fields: Vec<Field>,
    pub batches: Vec<BatchRef>,
    pub device: Option<DeviceId>,
    destroyed: bool,
    /// Counts schema changes, so views know when to describe it again.
    pub version: u32,
    /// The schema's custom metadata.
    pub metadata: Metadata,
}

impl Table {
    pub fn new(fields: Vec<Field>, device: Option<DeviceId>) -> Table {
        Table {
            fields,
            batches: Vec::new(),
            device,
            destroyed: false,
            version: 0,
            metadata: Metadata::new(),
        }
    }

    pub fn shared(self) -> TableRef {
        Rc::new(RefCell::new(self))
    }

    /// The batches of an IPC read, each column one chunk, appended in order.
    pub fn add_ipc(
        &mut self,
        fields: &[FieldInfo],
        batches: Vec<Vec<IpcColumn>>,
        metadata: &Metadata,
    ) -> Result<Vec<BatchRef>> {
        let (fields, made) = Batch::all_of_ipc(fields, batches, metadata, self.device)?;
        if self.batches.is_empty() && self.fields.is_empty() {
            self.fields = fields;
            self.metadata = metadata.clone();
            self.version += 1;
        }
        let mut added = Vec::with_capacity(made.len());
        let mut made = made.into_iter();
        while let Some(batch) = made.next() {
            let batch = batch.shared();
            if let Err(error) = self.add_batch(batch.clone()) {
                batch.borrow_mut().destroy();
                made.for_each(|mut rest| rest.destroy());
                return Err(error);
            }
            added.push(batch);
        }
        Ok(added)
    }

    pub fn check(&self) -> Result<()> {
        match self.destroyed {
            true => Err(destroyed("table")),
            false => Ok(()),
        }
    }

    pub fn num_rows(&self) -> Result<u64> {
        self.check()?;
        self.batches.iter().try_fold(0, |rows, batch| {
            let b = batch.borrow();
            b.check()?;
            Ok(rows + b.num_rows())
        })
    }

    /// Column `index` of every batch, in order.
    pub(crate) fn parts(&self, index: usize) -> Result<Vec<VectorRef>> {
        self.batches
            .iter()
            .map(|b| b.borrow().column_at(index))
            .collect()
    }

    fn index_of(&self, name: &str) -> Result<usize> {
        self.check()?;
        self.fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| no_column(name))
    }

    /// Per column, one logical vector over every batch's chunk (borrowed).
    pub fn column(&self, name: &str) -> Result<Vector> {
        let index = self.index_of(name)?;
        let field = &self.fields[index];
        let parts = self.parts(index)?;
        let borrow = |v: &VectorRef| {
            let v = v.borrow();
            let chunk = v
                .data
                .first()
                .ok_or_else(|| crate::engine::internal("a batch vector without a chunk"))?;
            let buffer = chunk.borrow().buffer.clone();
            Ok(Data::new(buffer, false))
        };
        let validity = match parts
            .iter()
            .map(|p| p.borrow().validity.clone())
            .collect::<Option<Vec<_>>>()
        {
            Some(flags) if !flags.is_empty() => {
                let size = flags[0].borrow().size;
                let data = flags.iter().map(borrow).collect::<Result<_>>()?;
                Some(Vector::new(
                    &format!("{name}.validity"),
                    DType::U8,
                    size,
                    data,
                ))
            }
            _ => None,
        };
        let data = parts.iter().map(borrow).collect::<Result<_>>()?;
        Ok(Vector::new(name, field.dtype, field.size, data)
            .with_validity(validity)
            .with_device(self.device))
    }

    /// Appends a batch with this table's schema and takes ownership of it. A column with
    /// nulls in some batches gets validity in every batch (all valid where a batch had none).
    pub fn add_batch(&mut self, batch: BatchRef) -> Result<()> {
        self.check()?;
        batch.borrow().check()?;
        if batch.borrow().in_table {
            return Err(GpuTableError::invalid(
                "this batch belongs to a table: detach it (detachBatches) before adding it to another",
            ));
        }
        {
            let b = batch.borrow();
            if self.fields.is_empty() && self.batches.is_empty() {
                self.fields = b.fields.clone();
                if self.metadata.is_empty() {
                    self.metadata = b.metadata.clone();
                }
                self.version += 1;
            }
            let same = self.fields.len() == b.fields.len()
                && self
                    .fields
                    .iter()
                    .zip(&b.fields)
                    .all(|(f, g)| f.same_column(g));
            if !same {
                return Err(GpuTableError::type_mismatch(
                    "the batch schema differs from the table schema",
                ));
            }
            self.adopt_dictionaries(&b.fields)?;
        }
        self.batches.push(batch.clone());
        if let Err(error) = self.align_validity() {
            self.batches.pop();
            return Err(error);
        }
        batch.borrow_mut().in_table = true;
        Ok(())
    }

    /// Takes a batch's dictionaries that extend the table's (a stream's grow as batches
    /// arrive); a batch whose codes would read other values is refused.
    fn adopt_dictionaries(&mut self, batch_fields: &[Field]) -> Result<()> {
        let mut grown = Vec::new();
        for (index, (held, given)) in self.fields.iter().zip(batch_fields).enumerate() {
            match (&held.dictionary, &given.dictionary) {
                (None, None) => {}
                (Some(held), Some(given)) if held.starts_with(given) => {}
                (Some(held), Some(given)) if given.starts_with(held) => {
                    grown.push((index, given.clone()))
                }
                _ => {
                    return Err(GpuTableError::type_mismatch(format!(
                        "column '{}' of the batch has another dictionary than the table's: its codes would read other values",
                        held.name
                    )))
                }
            }
        }
        if !grown.is_empty() {
            self.version += 1;
        }
        for (index, dictionary) in grown {
            self.fields[index].dictionary = Some(dictionary);
        }
        Ok(())
    }

    /// Gives every batch validity for the columns where any batch has it.
    fn align_validity(&mut self) -> Result<()> {
        for index in 0..self.fields.len() {
            let vectors = self.parts(index)?;
            let Some(size) = vectors
                .iter()
                .find_map(|v| v.borrow().validity.as_ref().map(|f| f.borrow().size))
            else {
                continue;
            };
            for vector in &vectors {
                let mut v = vector.borrow_mut();
                if v.validity.is_none() {
                    let rows = u32::try_from(v.length())
                        .map_err(|_| crate::engine::internal("a batch over 2^32 rows"))?;
                    let flags =
                        Vector::all_valid(&format!("{}.validity", v.name), rows, size, v.device())?;
                    v.validity = Some(flags.shared());
                    v.validity_made = true;
                }
            }
            if !self.fields[index].nullable {
                self.fields[index].nullable = true;
                self.version += 1;
            }
            for batch in &self.batches {
                let mut b = batch.borrow_mut();
                if let Some(field) = b.fields.get_mut(index).filter(|f| !f.nullable) {
                    field.nullable = true;
                    b.version += 1;
                }
            }
        }
        Ok(())
    }

    /// Removes column `name` and hands its storage (every batch's chunk) to the caller.
    pub fn detach_vector(&mut self, name: &str) -> Result<Vector> {
        let index = self.index_of(name)?;
        let parts = self.parts(index)?;
        let field = self.fields.remove(index);
        self.version += 1;
        for batch in &self.batches {
            let mut b = batch.borrow_mut();
            b.fields.remove(index);
            b.vectors.remove(index);
            b.version += 1;
        }
        // The returned vector owns the parts' chunks now; the parts are done.
        let chunks = |pick: &dyn Fn(&Vector) -> Option<DataRef>| {
            parts
                .iter()
                .map(|p| pick(&p.borrow()))
                .collect::<Option<Vec<_>>>()
        };
        let data = chunks(&|p| p.data.first().cloned()).unwrap_or_default();
        let validity = chunks(&|p| {
            p.validity
                .as_ref()
                .and_then(|v| v.borrow().data.first().cloned())
        });
        let size = parts
            .first()
            .and_then(|p| p.borrow().validity.as_ref().map(|v| v.borrow().size));
        let validity = match (validity, size) {
            (Some(flags), Some(size)) => Some(Vector::new(
                &format!("{name}.validity"),
                DType::U8,
                size,
                flags,
            )),
            _ => None,
        };
        for part in &parts {
            part.borrow_mut().destroyed = true;
        }
        Ok(Vector::new(name, field.dtype, field.size, data).with_validity(validity))
    }

    /// Removes batches `first..last` and hands them to the caller, with `Array.splice`'s
    /// rules: a negative `first` counts from the end; `last - first` batches at most.
    pub fn detach_batches(&mut self, first: f64, last: f64) -> Result<Vec<BatchRef>> {
        self.check()?;
        if first.is_nan() || last.is_nan() {
            return Err(GpuTableError::invalid("detachBatches takes batch indices"));
        }
        let count = self.batches.len() as f64;
        let start = match first.trunc() {
            f if f < 0.0 => (count + f).max(0.0),
            f => f.min(count),
        };
        let end = (start + (last.trunc() - first.trunc()).max(0.0)).min(count);
        let detached: Vec<BatchRef> = self.batches.drain(start as usize..end as usize).collect();
        for batch in &detached {
            batch.borrow_mut().in_table = false;
        }
        Ok(detached)
    }

    /// A table of some columns borrowing this table's storage.
    pub fn select(&self, names: &[String]) -> Result<Table> {
        self.check()?;
        let indices = names
            .iter()
            .map(|n| self.index_of(n))
            .collect::<Result<Vec<_>>>()?;
        let fields: Vec<Field> = indices.iter().map(|&i| self.fields[i].clone()).collect();
        let mut batches = Vec::with_capacity(self.batches.len());
        for batch in &self.batches {
            let b = batch.borrow();
            let vectors = indices
                .iter()
                .map(|&i| Ok(b.column_at(i)?.borrow().borrowed().shared()))
                .collect::<Result<_>>()?;
            let mut selected = Batch::new(vectors, Some(fields.clone()))?;
            selected.in_table = true;
            selected.metadata = b.metadata.clone();
            batches.push(selected.shared());
        }
        Ok(Table {
            fields,
            batches,
            device: self.device,
            destroyed: false,
            version: 0,
            metadata: self.metadata.clone(),
        })
    }

    pub fn last_batch(&self) -> Result<BatchRef> {
        self.check()?;
        self.batches
            .last()
            .cloned()
            .ok_or_else(|| GpuTableError::new(ErrorCode::EmptyInput, "this table has no batches"))
    }

    /// Clears the last batch's appendable vectors, keeping their capacity.
    pub fn reset_last_batch(&self) -> Result<()> {
        let batch = self.last_batch()?;
        let b = batch.borrow();
        b.check()?;
        b.vectors
            .iter()
            .try_for_each(|v| v.borrow_mut().reset_last())
    }

    /// Swaps the batches to the packed ones (a batch alone in its group stays) and destroys
    /// the superseded batches the table owned.
    fn repack(
        &mut self,
        before: &[BatchRef],
        groups: &[usize],
        packed: PackedColumns,
    ) -> Result<()> {
        self.check()?;
        if !pack::same_batches(before, &self.batches) || packed.len() != self.fields.len() {
            return Err(GpuTableError::invalid(
                "the table changed while its batches were packed",
            ));
        }
        let mut batches = Vec::with_capacity(groups.len());
        let mut first = 0;
        for (k, &size) in groups.iter().enumerate() {
            if size == 1 {
                batches.push(self.batches[first].clone());
            } else {
                let mut vectors = Vec::with_capacity(self.fields.len());
                for (field, (data, validity)) in self.fields.iter().zip(&packed) {
                    let validity = validity.as_ref().map(|flags| {
                        Vector::owning(
                            &format!("{}.validity", field.name),
                            flags[k].clone(),
                            self.device,
                        )
                    });
                    let vector = Vector::owning(&field.name, data[k].clone(), self.device);
                    vectors.push(vector.with_validity(validity).shared());
                }
                let mut joined = Batch::new(vectors, Some(self.fields.clone()))?;
                joined.in_table = true;
                joined.metadata = self.batches[first].borrow().metadata.clone();
                batches.push(joined.shared());
            }
            first += size;
        }
        let old = std::mem::replace(&mut self.batches, batches);
        for batch in old {
            if !self.batches.iter().any(|b| Rc::ptr_eq(b, &batch)) {
                batch.borrow_mut().destroy();
            }
        }
        Ok(())
    }

    /// Per column: its name, IPC kind, each batch's data node and each batch's validity
    /// node (validity is in every batch of a column or in none).
    pub fn ipc_columns(&self) -> Result<Vec<IpcColumnNodes>> {
        self.check()?;
        let mut columns = Vec::with_capacity(self.fields.len());
        for (index, field) in self.fields.iter().enumerate() {
            let (mut data, mut validity) = (Vec::new(), Vec::new());
            for vector in self.parts(index)? {
                let v = vector.borrow();
                data.push(v.node()?);
                if let Some(flags) = &v.validity {
                    validity.push(flags.borrow().node()?);
                }
            }
            columns.push((
                field.name.clone(),
                field.kind().to_string(),
                data,
                validity,
                field.dictionary.clone(),
                (field.dtype, field.size),
                field.metadata.clone(),
                field.nullable,
            ));
        }
        Ok(columns)
    }

    /// Destroys the batches the table holds (a selection's borrow storage and free none);
    /// later use is `DESTROYED`.
    pub fn destroy(&mut self) {
        if self.destroyed {
            return;
        }
        for batch in self.batches.drain(..) {
            batch.borrow_mut().destroy();
        }
        self.destroyed = true;
    }
}
