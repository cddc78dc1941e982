//! Columns written as an Arrow IPC stream straight from their values: the schema and record
//! batch messages are built with arrow-ipc's flatbuffer types and the bodies from the
//! columns' bytes, with no arrow arrays in between (their builders and arrow-ipc's writer,
//! with its dictionary tracking, were 31 kB gzipped of the default wasm module).

use std::sync::Arc;

use arrow_ipc::{
    Buffer, FieldNode, MessageBuilder, MessageHeader, MetadataVersion, RecordBatchBuilder,
};
use arrow_schema::{DataType, Field, Schema};
use flatbuffers::FlatBufferBuilder;

use super::{invalid_ipc, SourceKind};
use crate::column::{try_append as append, try_collect, try_extend, Column, ColumnData};
use crate::error::{GpuTableError, Result};

/// A column to write: its name, what it was in the source (`Plain` for computed columns),
/// and per batch its values and optional validity (uint8, 0 null).
pub struct WriteColumn<'a> {
    pub name: &'a str,
    pub kind: SourceKind,
    pub batches: Vec<(&'a Column, Option<&'a Column>)>,
}

/// Buffers start at multiples of this (the format's minimum) in a message body.
const ALIGNMENT: usize = 8;

/// Writes columns of equal batch structure as an IPC stream, one record batch per batch.
/// A column of rows of n > 1 values is a `FixedSizeList<n>`; its validity is one flag per
/// row, or one per item (a row whose items are all null is then a null row).
pub fn write_ipc(columns: &[WriteColumn]) -> Result<Vec<u8>> {
    let batch_count = columns.first().map_or(0, |c| c.batches.len());
    if columns.iter().any(|c| c.batches.len() != batch_count) {
        return Err(GpuTableError::invalid(
            "every column needs the same number of batches",
        ));
    }
    let fields: Vec<Field> = columns
        .iter()
        .map(|column| -> Result<Field> {
            let data_type = match column.batches.first() {
                Some((values, validity)) => Layout::of(values, column.kind, *validity)?.data_type(),
                None => DataType::Null,
            };
            let nullable = column
                .batches
                .iter()
                .any(|(_, validity)| validity.is_some());
            Ok(Field::new(column.name, data_type, nullable))
        })
        .collect::<Result<_>>()?;
    let schema = Schema::new(fields);

    let mut out = Vec::new();
    let mut fbb = FlatBufferBuilder::new();
    let header = arrow_ipc::convert::schema_to_fb_offset(&mut fbb, &schema);
    let mut message = MessageBuilder::new(&mut fbb);
    message.add_version(MetadataVersion::V5);
    message.add_header_type(MessageHeader::Schema);
    message.add_header(header.as_union_value());
    message.add_bodyLength(0);
    let message = message.finish();
    fbb.finish(message, None);
    write_message(&mut out, fbb.finished_data(), &[])?;

    for b in 0..batch_count {
        let rows = columns[0].batches[b].0.rows;
        let mut body = Body::default();
        for (column, field) in columns.iter().zip(schema.fields()) {
            let (values, validity) = column.batches[b];
            if values.rows != rows {
                return Err(invalid_ipc(format!(
                    "column '{}' has {} rows in batch {b}, the first column {rows}",
                    field.name(),
                    values.rows
                )));
            }
            Layout::of(values, column.kind, validity)?.encode(&mut body)?;
        }
        let mut fbb = FlatBufferBuilder::new();
        let nodes = fbb.create_vector(&body.nodes);
        let buffers = fbb.create_vector(&body.buffers);
        let mut batch = RecordBatchBuilder::new(&mut fbb);
        batch.add_length(rows as i64);
        batch.add_nodes(nodes);
        batch.add_buffers(buffers);
        let batch = batch.finish();
        let mut message = MessageBuilder::new(&mut fbb);
        message.add_version(MetadataVersion::V5);
        message.add_header_type(MessageHeader::RecordBatch);
        message.add_header(batch.as_union_value());
        message.add_bodyLength(body.bytes.len() as i64);
        let message = message.finish();
        fbb.finish(message, None);
        write_message(&mut out, fbb.finished_data(), &body.bytes)?;
    }
    // The end-of-stream marker.
    append(&mut out, &[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0])?;
    Ok(out)
}

/// One column of one batch, as the Arrow layout it is written in.
struct Layout<'a> {
    values: &'a Column,
    /// The values are float64 (from uint32 word pairs), or booleans.
    float64: bool,
    boolean: bool,
    /// Values per row: a fixed-size list when over 1.
    per_row: usize,
    validity: Option<&'a Column>,
}

impl<'a> Layout<'a> {
    fn of(
        values: &'a Column,
        kind: SourceKind,
        validity: Option<&'a Column>,
    ) -> Result<Layout<'a>> {
        let size = values.size as usize;
        // Word pairs only: an odd size is written as the uint32 words it holds.
        let float64 = kind == SourceKind::Float64Words
            && size % 2 == 0
            && matches!(values.data, ColumnData::U32(_));
        let boolean =
            kind == SourceKind::Bool && size == 1 && matches!(values.data, ColumnData::U8(_));
        let per_row = if float64 { size / 2 } else { size };
        if per_row == 0 || i32::try_from(per_row).is_err() {
            return Err(GpuTableError::invalid(format!(
                "a column of {per_row} values per row has no Arrow layout"
            )));
        }
        Ok(Layout {
            values,
            float64,
            boolean,
            per_row,
            validity,
        })
    }

    fn item_type(&self) -> DataType {
        match (&self.values.data, self.float64, self.boolean) {
            (_, true, _) => DataType::Float64,
            (_, _, true) => DataType::Boolean,
            (ColumnData::U8(_), ..) => DataType::UInt8,
            (ColumnData::I8(_), ..) => DataType::Int8,
            (ColumnData::U16(_), ..) => DataType::UInt16,
            (ColumnData::I16(_), ..) => DataType::Int16,
            (ColumnData::U32(_), ..) => DataType::UInt32,
            (ColumnData::I32(_), ..) => DataType::Int32,
            (ColumnData::F32(_), ..) => DataType::Float32,
        }
    }

    fn per_item(&self) -> bool {
        self.validity.is_some_and(|v| v.size > 1)
    }

    fn data_type(&self) -> DataType {
        match self.per_row {
            1 => self.item_type(),
            n => DataType::FixedSizeList(
                Arc::new(Field::new_list_field(self.item_type(), self.per_item())),
                n as i32,
            ),
        }
    }

    fn encode(&self, body: &mut Body) -> Result<()> {
        let rows = self.values.rows as usize;
        let items = rows * self.per_row;
        let flags = match self.validity {
            Some(validity) => {
                let expected = if self.per_item() { items } else { rows };
                let count = validity.data.len();
                let flags =
                    try_collect(count, (0..count).map(|i| validity.data.get_f64(i) != 0.0))?;
                if flags.len() != expected {
                    return Err(GpuTableError::invalid(format!(
                        "{} validity flags for {expected} values",
                        flags.len()
                    )));
                }
                Some(flags)
            }
            None => None,
        };
        let (row_flags, item_flags) = match (flags, self.per_item()) {
            (Some(items), true) => {
                let rows = items.chunks(self.per_row).map(|item| item.contains(&true));
                (
                    Some(try_collect(items.len() / self.per_row, rows)?),
                    Some(items),
                )
            }
            (flags, _) => (flags, None),
        };
        if self.per_row > 1 {
            body.validity(rows, row_flags.as_deref())?;
        }
        let item_validity = if self.per_row > 1 {
            item_flags
        } else {
            row_flags
        };
        body.validity(items, item_validity.as_deref())?;
        if self.boolean {
            return match &self.values.data {
                ColumnData::U8(v) => body.bits(v.len(), |i| v[i] != 0),
                _ => Err(invalid_ipc("a boolean column that is not uint8")),
            };
        }
        // Little-endian values as stored; float64 word pairs are the doubles' bytes.
        let data = &self.values.data;
        let bytes = data.len() * data.dtype().byte_width();
        match data {
            ColumnData::U8(v) => body.buffer(bytes, v.iter().copied()),
            ColumnData::I8(v) => body.buffer(bytes, v.iter().map(|&x| x as u8)),
            ColumnData::U16(v) => body.buffer(bytes, v.iter().flat_map(|x| x.to_le_bytes())),
            ColumnData::I16(v) => body.buffer(bytes, v.iter().flat_map(|x| x.to_le_bytes())),
            ColumnData::U32(v) => body.buffer(bytes, v.iter().flat_map(|x| x.to_le_bytes())),
            ColumnData::I32(v) => body.buffer(bytes, v.iter().flat_map(|x| x.to_le_bytes())),
            ColumnData::F32(v) => body.buffer(bytes, v.iter().flat_map(|x| x.to_le_bytes())),
        }
    }
}

/// A record batch's body as it is built: its bytes, buffers and field nodes.
#[derive(Default)]
struct Body {
    bytes: Vec<u8>,
    buffers: Vec<Buffer>,
    nodes: Vec<FieldNode>,
}

impl Body {
    /// The field node of `length` values and its validity bitmap, or an empty buffer where
    /// every value is valid.
    fn validity(&mut self, length: usize, flags: Option<&[bool]>) -> Result<()> {
        let nulls = flags.map_or(0, |f| f.iter().filter(|&&valid| !valid).count());
        self.nodes.push(FieldNode::new(length as i64, nulls as i64));
        match flags {
            Some(flags) if nulls > 0 => self.bits(flags.len(), |i| flags[i]),
            _ => self.buffer(0, std::iter::empty()),
        }
    }

    /// `count` bits in Arrow's order: value i is bit i % 8 of byte i / 8.
    fn bits(&mut self, count: usize, bit: impl Fn(usize) -> bool) -> Result<()> {
        let byte = |at: usize| {
            let bits = (at..count.min(at + 8)).map(|i| u8::from(bit(i)) << (i - at));
            bits.fold(0, |byte, bit| byte | bit)
        };
        self.buffer(count.div_ceil(8), (0..count).step_by(8).map(byte))
    }

    /// A buffer of the `len` bytes of `bytes`, padded to the alignment.
    fn buffer(&mut self, len: usize, bytes: impl Iterator<Item = u8>) -> Result<()> {
        let offset = self.bytes.len();
        let padding = len.next_multiple_of(ALIGNMENT) - len;
        let padded = bytes.chain(std::iter::repeat_n(0, padding));
        try_extend(&mut self.bytes, len + padding, padded)?;
        self.buffers.push(Buffer::new(offset as i64, len as i64));
        Ok(())
    }
}

/// A framed message: the continuation marker, the metadata length (padded so the body
/// starts aligned), the metadata and the body.
fn write_message(out: &mut Vec<u8>, metadata: &[u8], body: &[u8]) -> Result<()> {
    let padded = (metadata.len() + 8).next_multiple_of(ALIGNMENT) - 8;
    let length = i32::try_from(padded).map_err(|_| invalid_ipc("a message over 2 GB"))?;
    append(out, &0xFFFF_FFFFu32.to_le_bytes())?;
    append(out, &length.to_le_bytes())?;
    append(out, metadata)?;
    append(out, &[0; ALIGNMENT][..padded - metadata.len()])?;
    append(out, body)
}
