//! Arrow IPC in and out: record batches (read by arrow-rs) become columns of the table model, one
//! batch per source batch, and columns are written back as an IPC stream (`write`).
//!
//! Column types: Int8/16/32, Uint8/16/32, Float32 and `FixedSizeList<T, 1..4>` of those;
//! Float64 as uint32 word pairs (for `fround`) or converted to float32; Int64/Uint64 only
//! with an explicit conversion; dictionary columns as their indices; Bool as uint8. A column
//! with nulls gets a separate uint8 validity column (1 valid, 0 null; null slots read 0): one
//! flag per row, or one per item for a fixed-size list whose items have nulls.

use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Schema};

mod stream;
mod write;
pub use stream::StreamReader;
pub use write::{write_ipc, WriteColumn};

use crate::column::{try_collect, Column, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};

/// How Float64 columns arrive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Float64As {
    /// uint32 word pairs (low, high), size doubled: exact, ready for `fround`.
    Words,
    /// Converted to float32 (api.md's default: plain JS numbers arrive as Float64).
    #[default]
    Float32,
}

/// How Int64/Uint64 columns arrive; without a choice they are refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Int64As {
    #[default]
    Refuse,
    Float32,
    /// sint32/uint32; a value out of range is `TYPE_MISMATCH`.
    Int32,
}

#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Columns to keep, by name, in this order (all when `None`).
    pub columns: Option<Vec<String>>,
    pub float64: Float64As,
    pub int64: Int64As,
}

/// What a column was in the source, so it can be written back as the same Arrow type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    Plain,
    Float64Words,
    Bool,
    /// Dictionary indices (the dictionary values are not kept).
    DictionaryIndices,
}

#[derive(Clone, Debug)]
pub struct FieldInfo {
    pub name: String,
    pub dtype: DType,
    /// Values per row.
    pub size: u32,
    pub kind: SourceKind,
    /// The source Arrow type, for messages and metadata.
    pub arrow_type: String,
    pub nullable: bool,
}

#[derive(Debug)]
pub struct IpcColumn {
    pub data: Column,
    /// uint8, 1 valid and 0 null: one flag per row, or per item (list items with nulls, a
    /// null row having every item null); `None` without nulls.
    pub validity: Option<Column>,
}

#[derive(Debug)]
pub struct IpcTable {
    pub fields: Vec<FieldInfo>,
    /// Per source batch, one column per field.
    pub batches: Vec<Vec<IpcColumn>>,
}

fn invalid_ipc(error: impl std::fmt::Display) -> GpuTableError {
    GpuTableError::new(ErrorCode::InvalidIpc, format!("invalid Arrow IPC: {error}"))
}

fn from_arrow(error: ArrowError) -> GpuTableError {
    match error {
        ArrowError::MemoryError(m) => GpuTableError::new(ErrorCode::OutOfMemory, m),
        other => invalid_ipc(other),
    }
}

const FILE_MAGIC: &[u8] = b"ARROW1";

/// Reads an IPC stream or file (told apart by the file magic).
pub fn read_ipc(bytes: &[u8], options: &ReadOptions) -> Result<IpcTable> {
    use arrow_ipc::reader::{FileReader, StreamReader};
    let file = bytes.starts_with(FILE_MAGIC);
    if file {
        framing::check_file(bytes)?;
    } else {
        framing::check_stream(bytes)?;
    }
    // The schema first: unsupported selected columns fail before any batch is decoded, and
    // the others are never decoded at all.
    let schema = if file {
        FileReader::try_new(Cursor::new(bytes), None)
            .map_err(from_arrow)?
            .schema()
    } else {
        StreamReader::try_new(Cursor::new(bytes), None)
            .map_err(from_arrow)?
            .schema()
    };
    let (indices, fields) = select_fields(&schema, options)?;
    let projection = Some(indices);
    let batches: Vec<RecordBatch> = if file {
        FileReader::try_new(Cursor::new(bytes), projection)
            .map_err(from_arrow)?
            .collect::<std::result::Result<_, _>>()
            .map_err(from_arrow)?
    } else {
        StreamReader::try_new(Cursor::new(bytes), projection)
            .map_err(from_arrow)?
            .collect::<std::result::Result<_, _>>()
            .map_err(from_arrow)?
    };
    let mut out = Vec::new();
    for batch in &batches {
        let columns = fields
            .iter()
            .enumerate()
            .map(|(i, field)| convert(field, batch.column(i).as_ref(), options))
            .collect::<Result<Vec<_>>>()?;
        out.push(columns);
    }
    Ok(IpcTable {
        fields,
        batches: out,
    })
}

/// The schema indices of the columns to read, in order, and what each becomes.
fn select_fields(schema: &Schema, options: &ReadOptions) -> Result<(Vec<usize>, Vec<FieldInfo>)> {
    let indices: Vec<usize> = match &options.columns {
        None => (0..schema.fields().len()).collect(),
        Some(names) => names
            .iter()
            .map(|name| {
                schema.index_of(name).map_err(|_| {
                    GpuTableError::invalid(format!("no column named '{name}' in the IPC schema"))
                })
            })
            .collect::<Result<_>>()?,
    };
    let mut fields = Vec::new();
    for &i in &indices {
        let field = schema.field(i);
        let (dtype, size, kind) = column_type(field.name(), field.data_type(), options)?;
        fields.push(FieldInfo {
            name: field.name().clone(),
            dtype,
            size,
            kind,
            arrow_type: field.data_type().to_string(),
            nullable: field.is_nullable(),
        });
    }
    Ok((indices, fields))
}

fn unsupported(name: &str, data_type: &DataType, why: &str) -> GpuTableError {
    GpuTableError::new(
        ErrorCode::TypeMismatch,
        format!("column '{name}' has Arrow type {data_type}, {why}"),
    )
}

/// The element type, values per row and source kind of a column of `data_type`.
fn column_type(
    name: &str,
    data_type: &DataType,
    options: &ReadOptions,
) -> Result<(DType, u32, SourceKind)> {
    let scalar = |t: &DataType| -> Result<(DType, u32, SourceKind)> {
        Ok(match t {
            DataType::Int8 => (DType::I8, 1, SourceKind::Plain),
            DataType::Int16 => (DType::I16, 1, SourceKind::Plain),
            DataType::Int32 => (DType::I32, 1, SourceKind::Plain),
            DataType::UInt8 => (DType::U8, 1, SourceKind::Plain),
            DataType::UInt16 => (DType::U16, 1, SourceKind::Plain),
            DataType::UInt32 => (DType::U32, 1, SourceKind::Plain),
            DataType::Float32 => (DType::F32, 1, SourceKind::Plain),
            DataType::Float64 => match options.float64 {
                Float64As::Words => (DType::U32, 2, SourceKind::Float64Words),
                Float64As::Float32 => (DType::F32, 1, SourceKind::Plain),
            },
            DataType::Int64 | DataType::UInt64 => match options.int64 {
                Int64As::Refuse => {
                    return Err(unsupported(
                        name,
                        data_type,
                        "which needs an explicit conversion: pass int64: 'float32' or 'int32'",
                    ))
                }
                Int64As::Float32 => (DType::F32, 1, SourceKind::Plain),
                Int64As::Int32 if *t == DataType::Int64 => (DType::I32, 1, SourceKind::Plain),
                Int64As::Int32 => (DType::U32, 1, SourceKind::Plain),
            },
            DataType::Boolean => (DType::U8, 1, SourceKind::Bool),
            _ => {
                return Err(unsupported(
                    name,
                    data_type,
                    "which gputable does not support",
                ))
            }
        })
    };
    match data_type {
        DataType::FixedSizeList(item, n) if (1..=4).contains(n) => {
            let (dtype, size, kind) = scalar(item.data_type())?;
            if kind == SourceKind::Bool {
                return Err(unsupported(
                    name,
                    data_type,
                    "a list of booleans is not supported",
                ));
            }
            Ok((dtype, size * *n as u32, kind))
        }
        DataType::FixedSizeList(..) => Err(unsupported(
            name,
            data_type,
            "fixed-size lists are supported with 1 to 4 values",
        )),
        DataType::Dictionary(key, _) => {
            let (dtype, size, _) = scalar(key)?;
            Ok((dtype, size, SourceKind::DictionaryIndices))
        }
        other => scalar(other),
    }
}

/// A column's values as `dtype` with `size` values per row, and its validity.
fn convert(field: &FieldInfo, array: &dyn Array, options: &ReadOptions) -> Result<IpcColumn> {
    let nulls = |a: &dyn Array| a.logical_nulls().filter(|n| n.null_count() > 0);
    let row_nulls = nulls(array);
    let (values, items_per_row): (ArrayRef, usize) = match array.data_type() {
        DataType::FixedSizeList(_, n) => {
            let list = array.as_fixed_size_list();
            let n = *n as usize;
            (
                list.values().slice(list.value_offset_at(0), list.len() * n),
                n,
            )
        }
        DataType::Dictionary(..) => (
            array
                .as_any_dictionary_opt()
                .map(|d| d.keys().slice(0, d.keys().len()))
                .ok_or_else(|| invalid_ipc("a dictionary column without keys"))?,
            1,
        ),
        _ => (array.slice(0, array.len()), 1),
    };
    // Nulls inside the items of a list (a null item in a row that is not null).
    let item_nulls = match array.data_type() {
        DataType::FixedSizeList(..) => nulls(values.as_ref()),
        _ => None,
    };
    let valid = |item: usize| {
        row_nulls
            .as_ref()
            .is_none_or(|n| n.is_valid(item / items_per_row))
            && item_nulls.as_ref().is_none_or(|n| n.is_valid(item))
    };
    // Null slots hold whatever the writer left there: they read 0, and are not converted.
    let data = values_of(&field.name, values.as_ref(), options, &valid)?;
    let validity = match (&item_nulls, &row_nulls) {
        (Some(_), _) => {
            let flags = try_collect(values.len(), (0..values.len()).map(|i| u8::from(valid(i))))?;
            Some(Column::new(ColumnData::U8(flags), items_per_row as u32)?)
        }
        (None, Some(rows)) => {
            let flags = try_collect(rows.len(), rows.iter().map(u8::from))?;
            Some(Column::new(ColumnData::U8(flags), 1)?)
        }
        (None, None) => None,
    };
    Ok(IpcColumn {
        data: Column::new(data, field.size)?,
        validity,
    })
}

/// The flat values of a primitive (or boolean) array; values where `valid` is false read 0.
fn values_of(
    name: &str,
    array: &dyn Array,
    options: &ReadOptions,
    valid: &dyn Fn(usize) -> bool,
) -> Result<ColumnData> {
    fn prim<T: arrow_array::ArrowPrimitiveType>(
        array: &dyn Array,
        valid: &dyn Fn(usize) -> bool,
    ) -> Result<Vec<T::Native>> {
        let values = array.as_primitive::<T>().values();
        let kept = values.iter().enumerate();
        try_collect(
            values.len(),
            kept.map(|(i, &v)| if valid(i) { v } else { T::Native::default() }),
        )
    }
    let out_of_range = || {
        GpuTableError::new(
            ErrorCode::TypeMismatch,
            format!("column '{name}' has 64-bit values outside the 32-bit range"),
        )
    };
    // Int64/Uint64 values narrowed to 32 bits, range-checked where they are not null.
    fn narrowed<S: Copy, T: TryFrom<S> + Default>(
        values: &[S],
        valid: &dyn Fn(usize) -> bool,
        out_of_range: impl Fn() -> GpuTableError,
    ) -> Result<Vec<T>> {
        let mut out = try_collect(values.len(), std::iter::empty())?;
        for (i, &v) in values.iter().enumerate() {
            out.push(match valid(i) {
                true => T::try_from(v).map_err(|_| out_of_range())?,
                false => T::default(),
            });
        }
        Ok(out)
    }
    let f32s = |values: &[f32]| -> Result<ColumnData> {
        let kept = values.iter().enumerate();
        Ok(ColumnData::F32(try_collect(
            values.len(),
            kept.map(|(i, &v)| if valid(i) { v } else { 0.0 }),
        )?))
    };
    Ok(match array.data_type() {
        DataType::Int8 => ColumnData::I8(prim::<Int8Type>(array, valid)?),
        DataType::Int16 => ColumnData::I16(prim::<Int16Type>(array, valid)?),
        DataType::Int32 => ColumnData::I32(prim::<Int32Type>(array, valid)?),
        DataType::UInt8 => ColumnData::U8(prim::<UInt8Type>(array, valid)?),
        DataType::UInt16 => ColumnData::U16(prim::<UInt16Type>(array, valid)?),
        DataType::UInt32 => ColumnData::U32(prim::<UInt32Type>(array, valid)?),
        DataType::Float32 => ColumnData::F32(prim::<Float32Type>(array, valid)?),
        DataType::Float64 => {
            let values = prim::<Float64Type>(array, valid)?;
            match options.float64 {
                Float64As::Words => {
                    let words = values.iter().flat_map(|v| {
                        let bits = v.to_bits();
                        [bits as u32, (bits >> 32) as u32]
                    });
                    ColumnData::U32(try_collect(values.len() * 2, words)?)
                }
                Float64As::Float32 => {
                    ColumnData::F32(try_collect(values.len(), values.iter().map(|&v| v as f32))?)
                }
            }
        }
        DataType::Int64 => {
            let values = array.as_primitive::<Int64Type>().values();
            match options.int64 {
                Int64As::Float32 => f32s(&try_collect(
                    values.len(),
                    values.iter().map(|&v| v as f32),
                )?)?,
                _ => ColumnData::I32(narrowed(values, valid, out_of_range)?),
            }
        }
        DataType::UInt64 => {
            let values = array.as_primitive::<UInt64Type>().values();
            match options.int64 {
                Int64As::Float32 => f32s(&try_collect(
                    values.len(),
                    values.iter().map(|&v| v as f32),
                )?)?,
                _ => ColumnData::U32(narrowed(values, valid, out_of_range)?),
            }
        }
        DataType::Boolean => {
            let bits = array.as_boolean().values();
            let kept = bits
                .iter()
                .enumerate()
                .map(|(i, b)| u8::from(b && valid(i)));
            ColumnData::U8(try_collect(bits.len(), kept)?)
        }
        other => {
            return Err(unsupported(name, other, "which gputable does not support"));
        }
    })
}

/// Checks that every message and buffer an IPC reader would allocate or slice lies inside
/// the input, before arrow-rs reads it: its reader trusts declared lengths and offsets
/// (allocating them, or panicking on an out-of-range buffer), and a panic would end the
/// wasm instance.
mod framing {
    use super::invalid_ipc;
    use crate::error::Result;

    const CONTINUATION: u32 = 0xFFFF_FFFF;

    fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
        let b = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Checks the message whose length prefix starts at `at`; returns where the next begins,
    /// or `None` at the end-of-stream marker.
    fn check_message(bytes: &[u8], at: usize) -> Result<Option<usize>> {
        let mut at = at;
        let mut length = read_u32(bytes, at).ok_or_else(|| invalid_ipc("truncated message"))?;
        at += 4;
        if length == CONTINUATION {
            length = read_u32(bytes, at).ok_or_else(|| invalid_ipc("truncated message"))?;
            at += 4;
        }
        if length == 0 {
            return Ok(None);
        }
        let length =
            i32::try_from(length).map_err(|_| invalid_ipc("negative metadata length"))? as usize;
        let end = at
            .checked_add(length)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| {
                invalid_ipc(format!(
                    "a message declares {length} bytes of metadata beyond the input"
                ))
            })?;
        let message = arrow_ipc::root_as_message(&bytes[at..end])
            .map_err(|e| invalid_ipc(format!("corrupt message metadata: {e}")))?;
        let body = usize::try_from(message.bodyLength())
            .map_err(|_| invalid_ipc("negative body length"))?;
        let body_end = end
            .checked_add(body)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| {
                invalid_ipc(format!(
                    "a message declares a body of {body} bytes beyond the input"
                ))
            })?;
        let batch = message
            .header_as_record_batch()
            .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
        if let Some(batch) = batch {
            // Lengths the decoder multiplies by list sizes (at most 4 for the types read)
            // must not overflow a 32-bit usize; each value needs at least a bit of body.
            let limit = (body as u64 * 8).min(i32::MAX as u64 / 4);
            let nodes = batch.nodes();
            let lengths =
                std::iter::once(batch.length()).chain(nodes.iter().flatten().map(|n| n.length()));
            for length in lengths {
                if !(0..=limit as i64).contains(&length) {
                    return Err(invalid_ipc(format!(
                        "a batch declares {length} values for a {body}-byte body"
                    )));
                }
            }
            for buffer in batch.buffers().iter().flatten() {
                let (offset, len) = (buffer.offset(), buffer.length());
                let inside = offset >= 0
                    && len >= 0
                    && (offset as u64)
                        .checked_add(len as u64)
                        .is_some_and(|e| e <= body as u64);
                if !inside {
                    return Err(invalid_ipc(format!(
                        "a buffer at {offset} of {len} bytes lies outside its {body}-byte body"
                    )));
                }
            }
        }
        Ok(Some(body_end))
    }

    pub fn check_stream(bytes: &[u8]) -> Result<()> {
        let mut at = 0;
        while at < bytes.len() {
            match check_message(bytes, at)? {
                Some(next) => at = next,
                None => break,
            }
        }
        Ok(())
    }

    pub fn check_file(bytes: &[u8]) -> Result<()> {
        // Magic (padded to 8), stream, footer, footer length (4), magic (6).
        let n = bytes.len();
        if n < 8 + 10 || !bytes.ends_with(super::FILE_MAGIC) {
            return Err(invalid_ipc("an Arrow file must end with the ARROW1 magic"));
        }
        let footer_len = read_u32(bytes, n - 10).ok_or_else(|| invalid_ipc("truncated file"))?;
        let footer_start = (n - 10)
            .checked_sub(footer_len as usize)
            .filter(|&s| s >= 8)
            .ok_or_else(|| invalid_ipc("the footer length exceeds the file"))?;
        let footer = arrow_ipc::root_as_footer(&bytes[footer_start..n - 10])
            .map_err(|e| invalid_ipc(format!("corrupt footer: {e}")))?;
        let blocks = footer
            .recordBatches()
            .into_iter()
            .flatten()
            .chain(footer.dictionaries().into_iter().flatten());
        for block in blocks {
            let offset = usize::try_from(block.offset())
                .map_err(|_| invalid_ipc("negative block offset"))?;
            let meta = usize::try_from(block.metaDataLength())
                .map_err(|_| invalid_ipc("negative block metadata length"))?;
            let body = usize::try_from(block.bodyLength())
                .map_err(|_| invalid_ipc("negative block body length"))?;
            let end = offset
                .checked_add(meta)
                .and_then(|e| e.checked_add(body))
                .filter(|&e| e <= footer_start)
                .ok_or_else(|| invalid_ipc("a block lies beyond the file"))?;
            let next = check_message(&bytes[..end], offset)?;
            if next.is_none_or(|next| next > end) {
                return Err(invalid_ipc("a block's message does not fit its block"));
            }
        }
        Ok(())
    }
}
