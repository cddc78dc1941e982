//! Our Arrow IPC reader: columns straight from the message bodies through arrow-ipc's
//! flatbuffer types, with no arrow-rs arrays in between (arrow-rs's reader made the default
//! wasm module 138 kB gzipped larger than this one). The selected columns are read; the
//! others are only walked past.

use std::borrow::Cow;
use std::rc::Rc;

use arrow_ipc::{Endianness, Field, FieldNode, MetadataVersion, RecordBatch, Schema, Type};

use super::dictionary::{dictionary_validity, kept_codes, Dictionaries, Strings};
use super::framing::{self, Framed};
use super::schema::{index_type, item, select_fields, span, unsupported, Scalar, Walk};
use super::{
    invalid_ipc, FieldInfo, Float64As, Int64As, IpcColumn, IpcTable, ReadOptions, FILE_MAGIC,
};
use crate::column::{try_collect, try_vec, with_elem_type, Column, ColumnData, Elem};
use crate::error::{ErrorCode, GpuTableError, Result};

/// Reads an IPC stream or file (told apart by the file magic).
pub fn read_ipc(bytes: &[u8], options: &ReadOptions) -> Result<IpcTable> {
    let (schema, messages) = match bytes.starts_with(FILE_MAGIC) {
        true => framing::file(bytes)?,
        false => framing::stream(bytes)?,
    };
    let mut decoder = Decoder::new(schema, options.clone())?;
    let mut batches = Vec::new();
    for framed in messages {
        batches.extend(decoder.message(schema, framed)?);
    }
    Ok(IpcTable {
        fields: decoder.fields(),
        batches,
        metadata: decoder.metadata.clone(),
    })
}

/// What reading keeps from one message to the next: the columns selected, and the
/// dictionaries so far. It owns no input bytes, so a stream read in pieces keeps it between
/// them.
pub struct Decoder {
    /// Each selected column's index in the schema; `fields` says what it is read as.
    columns: Vec<usize>,
    fields: Vec<FieldInfo>,
    dictionaries: Dictionaries,
    options: ReadOptions,
    /// The schema's custom metadata.
    pub metadata: super::KeyValues,
}

impl Decoder {
    /// The schema first: unsupported selected columns fail before any batch is read.
    pub fn new(schema: Schema, options: ReadOptions) -> Result<Decoder> {
        if schema.endianness() == Endianness::Big {
            return Err(invalid_ipc("big-endian Arrow IPC is not supported"));
        }
        let metadata = super::key_values(schema.custom_metadata());
        let all = all_fields(schema);
        let selected = select_fields(&all, &options)?;
        let dictionaries = Dictionaries::new(&all, &selected);
        let (columns, fields) = selected.into_iter().unzip();
        Ok(Decoder {
            columns,
            fields,
            dictionaries,
            options,
            metadata,
        })
    }

    /// Takes a dictionary batch in, or reads a record batch's selected columns.
    pub fn message(
        &mut self,
        schema: Schema,
        Framed { message, body, .. }: Framed,
    ) -> Result<Option<Vec<IpcColumn>>> {
        if let Some(dictionary) = message.header_as_dictionary_batch() {
            self.dictionaries.add(dictionary, body)?;
            return Ok(None);
        }
        let Some(batch) = message.header_as_record_batch() else {
            return Err(invalid_ipc(
                "an IPC message that is not a schema, dictionary or batch",
            ));
        };
        let all = all_fields(schema);
        let reader = BatchReader::new(batch, body, &all, message.version())?;
        let mut columns = Vec::with_capacity(self.columns.len());
        for (&index, info) in self.columns.iter().zip(&self.fields) {
            let dictionaries = &mut self.dictionaries;
            columns.push(reader.column(index, &all[index], info, dictionaries, &self.options)?);
        }
        Ok(Some(columns))
    }

    /// The columns read, each with its dictionary as read so far.
    pub fn fields(&self) -> Vec<FieldInfo> {
        (self.columns.iter().zip(&self.fields))
            .map(|(index, info)| FieldInfo {
                dictionary: self.dictionaries.of_column(*index).map(Rc::new),
                ..info.clone()
            })
            .collect()
    }
}

fn all_fields(schema: Schema) -> Vec<Field> {
    schema.fields().into_iter().flatten().collect()
}

/// One flag per value, from a validity bitmap: `None` when every value is valid.
pub(super) fn validity(node: &FieldNode, bitmap: &[u8], len: usize) -> Result<Option<Vec<bool>>> {
    if node.null_count() == 0 {
        return Ok(None);
    }
    if bitmap.len() < len.div_ceil(8) {
        return Err(invalid_ipc("a validity bitmap shorter than its column"));
    }
    if (0..len).all(|i| bit(bitmap, i)) {
        return Ok(None);
    }
    Ok(Some(try_collect(len, (0..len).map(|i| bit(bitmap, i)))?))
}

/// Bit `i` of a bitmap in Arrow's order (bit i % 8 of byte i / 8).
fn bit(bitmap: &[u8], i: usize) -> bool {
    bitmap[i / 8] & (1 << (i % 8)) != 0
}

pub(super) fn compressed() -> GpuTableError {
    invalid_ipc("compressed IPC bodies (LZ4, ZSTD) are not supported")
}

/// `len` bytes at `offset` of a body (framing checked every buffer lies inside its body;
/// the clamps only keep a slip from panicking).
pub(super) fn slice(body: &[u8], offset: i64, len: i64) -> &[u8] {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(body.len());
    let end = start
        .saturating_add(usize::try_from(len).unwrap_or(0))
        .min(body.len());
    &body[start..end]
}

/// A record batch's field nodes and buffers, and where each top-level field begins.
struct BatchReader<'a> {
    rows: usize,
    nodes: Vec<FieldNode>,
    buffers: Vec<&'a [u8]>,
    starts: Vec<(usize, usize)>,
}

impl<'a> BatchReader<'a> {
    fn new(
        batch: RecordBatch<'a>,
        body: &'a [u8],
        all: &[Field],
        version: MetadataVersion,
    ) -> Result<BatchReader<'a>> {
        if batch.compression().is_some() {
            return Err(compressed());
        }
        let nodes: Vec<FieldNode> = batch.nodes().into_iter().flatten().copied().collect();
        let buffers: Vec<&[u8]> = (batch.buffers().into_iter().flatten())
            .map(|b| slice(body, b.offset(), b.length()))
            .collect();
        let mut variadic = batch.variadicBufferCounts().into_iter().flatten();
        let mut walk = Walk {
            nodes: 0,
            buffers: 0,
            node_count: nodes.len(),
            buffer_count: buffers.len(),
        };
        let mut starts = Vec::new();
        for field in all {
            starts.push((walk.nodes, walk.buffers));
            span(field, version, &mut variadic, &mut walk)?;
        }
        Ok(BatchReader {
            rows: batch.length() as usize,
            nodes,
            buffers,
            starts,
        })
    }

    /// Column `index` (schema order) as `info` says.
    fn column(
        &self,
        index: usize,
        field: &Field,
        info: &FieldInfo,
        dictionaries: &mut Dictionaries,
        options: &ReadOptions,
    ) -> Result<IpcColumn> {
        let (n, b) = self.starts[index];
        let node = &self.nodes[n];
        let rows = node.length() as usize;
        if rows != self.rows {
            return Err(invalid_ipc(format!(
                "column '{}' has {rows} rows in a batch of {}",
                info.name, self.rows
            )));
        }
        let mut row_valid = validity(node, self.buffers[b], rows)?;
        let (scalar, values, items_per_row, item_valid) = if let Some(encoding) = field.dictionary()
        {
            let scalar = index_type(field)
                .ok_or_else(|| unsupported(field, "which gputable does not support"))?;
            // `Dictionaries::new` took every selected dictionary.
            let (value_type, dictionary) =
                (dictionaries.selected.get(&encoding.id())).ok_or_else(|| {
                    GpuTableError::new(ErrorCode::Internal, "a dictionary not tracked")
                })?;
            if let Some(kept) = &dictionary.kept {
                let keys = self.buffers[b + 1];
                let (codes, valid) = kept_codes(kept, scalar, keys, rows, row_valid)?;
                return Ok(IpcColumn {
                    data: Column::new(ColumnData::U32(codes), 1)?,
                    validity: flags_column(valid.as_deref(), 1)?,
                });
            }
            // Only Null values are not kept: every row null, its indices kept.
            let all_null = *value_type == Type::Null;
            row_valid = dictionary_validity(
                scalar,
                self.buffers[b + 1],
                rows,
                row_valid,
                dictionary,
                all_null,
            )?;
            (scalar, Cow::Borrowed(self.buffers[b + 1]), 1, None)
        } else if let Some(distinct) = dictionaries.text.get_mut(&index) {
            let strings = Strings {
                offsets: self.buffers[b + 1],
                data: self.buffers[b + 2],
                wide: field.type_type() == Type::LargeUtf8,
            };
            let mut codes = try_vec(rows, "a column")?;
            for i in 0..rows {
                codes.push(match row_valid.as_ref().is_none_or(|v| v[i]) {
                    true => distinct.text_code(strings.get(i)?)?,
                    false => 0,
                });
            }
            return Ok(IpcColumn {
                data: Column::new(ColumnData::U32(codes), 1)?,
                validity: flags_column(row_valid.as_deref(), 1)?,
            });
        } else if let (Some(list), Some(item)) = (field.type_as_fixed_size_list(), item(field)) {
            let per_row = list.listSize() as usize;
            let child = &self.nodes[n + 1];
            let items = rows * per_row;
            if (child.length() as usize) < items {
                return Err(invalid_ipc(format!(
                    "column '{}' has fewer list items than its rows need",
                    info.name
                )));
            }
            let item_valid = validity(child, self.buffers[b + 1], items)?;
            let scalar = Scalar::read_as(&item)
                .ok_or_else(|| unsupported(field, "which gputable does not support"))?;
            (
                scalar,
                Cow::Borrowed(self.buffers[b + 2]),
                per_row,
                item_valid,
            )
        } else {
            let scalar = Scalar::read_as(field)
                .ok_or_else(|| unsupported(field, "which gputable does not support"))?;
            (scalar, Cow::Borrowed(self.buffers[b + 1]), 1, None)
        };
        let count = rows * items_per_row;
        // Per item: its row's flag and its own (the row's flags themselves for one item per row).
        let item_flags = match (&row_valid, &item_valid) {
            (None, None) => None,
            (Some(_), None) if items_per_row == 1 => None,
            _ => Some(try_collect(
                count,
                (0..count).map(|i| {
                    row_valid.as_ref().is_none_or(|v| v[i / items_per_row])
                        && item_valid.as_ref().is_none_or(|v| v[i])
                }),
            )?),
        };
        let valid = item_flags.as_deref().or(row_valid.as_deref());
        // Null slots hold whatever the writer left there: they read 0, and are not converted.
        let data = values_of(&info.name, scalar, &values, count, options, valid)?;
        // One flag per item where items have nulls of their own, else one per row.
        let (flags, size) = match item_valid {
            Some(_) => (valid, items_per_row as u32),
            None => (row_valid.as_deref(), 1),
        };
        Ok(IpcColumn {
            data: Column::new(data, info.size)?,
            validity: flags_column(flags, size)?,
        })
    }
}

/// A column's validity (1 valid, 0 null; `size` flags a row), where it has nulls.
fn flags_column(valid: Option<&[bool]>, size: u32) -> Result<Option<Column>> {
    let Some(valid) = valid else { return Ok(None) };
    let flags = try_collect(valid.len(), valid.iter().map(|&v| u8::from(v)))?;
    Ok(Some(Column::new(ColumnData::U8(flags), size)?))
}

/// `count` values of `scalar` from `bytes` as the column's element type; values whose flag
/// in `valid` is false read 0.
fn values_of(
    name: &str,
    scalar: Scalar,
    bytes: &[u8],
    count: usize,
    options: &ReadOptions,
    valid: Option<&[bool]>,
) -> Result<ColumnData> {
    let needed = match scalar {
        Scalar::Bool => count.div_ceil(8),
        _ => count.saturating_mul(scalar.width()),
    };
    if bytes.len() < needed {
        return Err(invalid_ipc(format!(
            "column '{name}' has a values buffer shorter than its values"
        )));
    }
    /// Values `width` bytes wide; null slots read the default.
    fn read<T: Default>(
        bytes: &[u8],
        width: usize,
        count: usize,
        valid: Option<&[bool]>,
        from: impl Fn(&[u8]) -> T,
    ) -> Result<Vec<T>> {
        let words = bytes.chunks_exact(width).take(count);
        match valid {
            None => try_collect(count, words.map(from)),
            Some(valid) => try_collect(
                count,
                (words.zip(valid)).map(|(w, &ok)| if ok { from(w) } else { T::default() }),
            ),
        }
    }
    fn word(w: &[u8]) -> [u8; 8] {
        w.try_into().unwrap_or([0; 8])
    }
    let out_of_range = || {
        GpuTableError::new(
            ErrorCode::TypeMismatch,
            format!("column '{name}' has 64-bit values outside the 32-bit range"),
        )
    };
    // Int64/Uint64 values narrowed to 32 bits as they are read, range-checked where they
    // are not null.
    fn narrowed<S, T: TryFrom<S> + Default>(
        bytes: &[u8],
        count: usize,
        valid: Option<&[bool]>,
        from: impl Fn([u8; 8]) -> S,
        out_of_range: impl Fn() -> GpuTableError,
    ) -> Result<Vec<T>> {
        let mut out = try_vec(count, "a column")?;
        for (i, w) in bytes.chunks_exact(8).take(count).enumerate() {
            out.push(match valid.is_none_or(|valid| valid[i]) {
                true => T::try_from(from(word(w))).map_err(|_| out_of_range())?,
                false => T::default(),
            });
        }
        Ok(out)
    }
    Ok(match scalar {
        Scalar::F64 => match options.float64 {
            Float64As::Words => {
                let pair = |w: &[u8]| {
                    let w = u64::from_le_bytes(word(w));
                    [w as u32, (w >> 32) as u32]
                };
                ColumnData::U32(read(bytes, 8, count, valid, pair)?.into_flattened())
            }
            Float64As::Float32 => ColumnData::F32(read(bytes, 8, count, valid, |w| {
                f64::from_le_bytes(word(w)) as f32
            })?),
        },
        Scalar::I64 => match options.int64 {
            Int64As::Float32 => ColumnData::F32(read(bytes, 8, count, valid, |w| {
                i64::from_le_bytes(word(w)) as f32
            })?),
            Int64As::Int32 | Int64As::Refuse => ColumnData::I32(narrowed(
                bytes,
                count,
                valid,
                i64::from_le_bytes,
                out_of_range,
            )?),
        },
        Scalar::U64 => match options.int64 {
            Int64As::Float32 => ColumnData::F32(read(bytes, 8, count, valid, |w| {
                u64::from_le_bytes(word(w)) as f32
            })?),
            Int64As::Int32 | Int64As::Refuse => ColumnData::U32(narrowed(
                bytes,
                count,
                valid,
                u64::from_le_bytes,
                out_of_range,
            )?),
        },
        Scalar::Bool => {
            let valid = |i: usize| valid.is_none_or(|valid| valid[i]);
            ColumnData::U8(try_collect(
                count,
                (0..count).map(|i| u8::from(bit(bytes, i) && valid(i))),
            )?)
        }
        // Every other scalar is stored as it is.
        plain => {
            let dtype = plain.stored().ok_or_else(|| {
                GpuTableError::new(ErrorCode::Internal, "a scalar with no stored type")
            })?;
            with_elem_type!(dtype, T => {
                T::wrap_data(read(bytes, std::mem::size_of::<T>(), count, valid, <T as Elem>::from_le)?)
            })
        }
    })
}
