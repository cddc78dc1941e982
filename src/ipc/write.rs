//! Columns written as an Arrow IPC stream straight from their values: the schema and record
//! batch messages are built with arrow-ipc's flatbuffer types and the bodies from the
//! columns' bytes, with no arrow arrays in between (their builders and arrow-ipc's writer,
//! with its dictionary tracking, were 31 kB gzipped of the default wasm module).

use arrow_ipc::{
    Buffer, DictionaryBatchBuilder, FieldNode, MessageBuilder, MessageHeader, MetadataVersion,
    RecordBatchBuilder, TimeUnit,
};
use flatbuffers::FlatBufferBuilder;

use super::arrow_type::{schema_table, ArrowType, ColumnType, SchemaColumn};
use super::{invalid_ipc, Dictionary, SourceKind};
use crate::column::{try_append as append, try_collect, try_vec, Column, ColumnData};
use crate::dtype::DType;
use crate::error::{GpuTableError, Result};

/// A column to write: its name, what it was in the source (`Plain` for computed columns),
/// and per batch its values and optional validity (uint8, 0 null).
pub struct WriteColumn<'a> {
    pub name: &'a str,
    pub kind: SourceKind,
    pub batches: Vec<(&'a Column, Option<&'a Column>)>,
    /// The values of the column's codes: it is written as a dictionary column.
    pub dictionary: Option<&'a Dictionary>,
    /// Its type and values per row, where known: the type of a column of no batches.
    pub shape: Option<(DType, u32)>,
    /// The Arrow type it was loaded from (a field's `arrowType`): a temporal or 64-bit
    /// integer column, loaded as int32 or float32 values, is written back as that type.
    pub loaded_as: Option<&'a str>,
    /// The field's custom metadata.
    pub metadata: &'a [(String, String)],
    /// Whether the field says it may hold nulls (it is written so where it holds none too).
    pub nullable: bool,
}

/// Buffers start at multiples of this (the format's minimum) in a message body.
const ALIGNMENT: usize = 8;

/// Writes columns of equal batch structure as an IPC stream, one record batch per batch.
/// A column of rows of n > 1 values is a `FixedSizeList<n>`; its validity is one flag per
/// row, or one per item (a row whose items are all null is then a null row).
pub fn write_ipc(columns: &[WriteColumn], metadata: &[(String, String)]) -> Result<Vec<u8>> {
    let batch_count = columns.first().map_or(0, |c| c.batches.len());
    if columns.iter().any(|c| c.batches.len() != batch_count) {
        return Err(GpuTableError::invalid(
            "every column needs the same number of batches",
        ));
    }
    let loaded: Vec<_> = columns
        .iter()
        .map(|c| c.loaded_as.and_then(loaded_type))
        .collect();
    let indices: Vec<_> = (columns.iter())
        .map(|c| {
            c.dictionary
                .and_then(|d| loaded_index(c.loaded_as, d.len()))
        })
        .collect();
    let types = (columns.iter().zip(&loaded).zip(&indices))
        .map(|((column, loaded), index)| -> Result<SchemaColumn> {
            let empty = match (column.batches.first(), column.shape) {
                (None, Some((dtype, size))) => Some(Column::empty(dtype, size)?),
                _ => None,
            };
            let first = column.batches.first().map(|(v, f)| (*v, *f));
            let loaded = loaded.as_ref();
            let column_type = match (
                first.or(empty.as_ref().map(|e| (e, None))),
                column.dictionary,
            ) {
                (Some((values, _)), Some(dictionary)) => {
                    dictionary_type(column.name, values, dictionary, *index)?
                }
                (Some((values, validity)), None) => {
                    Layout::of(values, column.kind, validity, loaded)?.column_type()
                }
                (None, _) => ColumnType {
                    item: ArrowType::Null,
                    list: None,
                    index: None,
                },
            };
            let nullable = column.nullable
                || column.batches.iter().any(|&(values, validity)| {
                    validity.is_some()
                        || Layout::of(values, column.kind, None, loaded)
                            .is_ok_and(|l| l.adds_nulls())
                });
            Ok((column.name, column_type, nullable, column.metadata))
        })
        .collect::<Result<Vec<_>>>()?;

    let mut out = Vec::new();
    let mut fbb = FlatBufferBuilder::new();
    let header = schema_table(&mut fbb, &types, metadata);
    let mut message = MessageBuilder::new(&mut fbb);
    message.add_version(MetadataVersion::V5);
    message.add_header_type(MessageHeader::Schema);
    message.add_header(header);
    message.add_bodyLength(0);
    let message = message.finish();
    fbb.finish(message, None);
    write_message(&mut out, fbb.finished_data(), &[])?;
    let dictionaries = columns.iter().filter_map(|c| c.dictionary.map(|d| (c, d)));
    for (id, (column, dictionary)) in dictionaries.enumerate() {
        for (values, validity) in &column.batches {
            check_codes(column.name, values, *validity, dictionary.len())?;
        }
        write_dictionary(&mut out, id as i64, dictionary)?;
    }

    for b in 0..batch_count {
        let rows = columns[0].batches[b].0.rows;
        let mut body = Body::default();
        for ((column, loaded), index) in columns.iter().zip(&loaded).zip(&indices) {
            let (values, validity) = column.batches[b];
            if values.rows != rows {
                return Err(invalid_ipc(format!(
                    "column '{}' has {} rows in batch {b}, the first column {rows}",
                    column.name, values.rows
                )));
            }
            let mut layout = Layout::of(values, column.kind, validity, loaded.as_ref())?;
            layout.index_bytes = index.map(|(bits, _)| bits as usize / 8);
            layout.encode(&mut body)?;
        }
        write_batch(&mut out, &body, rows as usize, None)?;
    }
    // The end-of-stream marker.
    append(&mut out, &[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0])?;
    Ok(out)
}

/// The type a field's `arrowType` (as `schema::describe` writes it) names where a column
/// may have been loaded narrowed from it: 64-bit integers and temporal types.
fn loaded_type(described: &str) -> Option<ArrowType> {
    let unit = |name: &str| match name {
        "Second" => Some(TimeUnit::SECOND),
        "Millisecond" => Some(TimeUnit::MILLISECOND),
        "Microsecond" => Some(TimeUnit::MICROSECOND),
        "Nanosecond" => Some(TimeUnit::NANOSECOND),
        _ => None,
    };
    let (name, args) = match described.find("(") {
        Some(at) => (
            &described[..at],
            Some(described[at + 1..].strip_suffix(")")?),
        ),
        None => (described, None),
    };
    Some(match (name, args) {
        ("Int64", None) => ArrowType::Int {
            bits: 64,
            signed: true,
        },
        ("UInt64", None) => ArrowType::Int {
            bits: 64,
            signed: false,
        },
        ("Date32", None) => ArrowType::Date { millis: false },
        ("Date64", None) => ArrowType::Date { millis: true },
        ("Time32", Some(u)) => ArrowType::Time {
            unit: unit(u)?,
            bits: 32,
        },
        ("Time64", Some(u)) => ArrowType::Time {
            unit: unit(u)?,
            bits: 64,
        },
        ("Duration", Some(u)) => ArrowType::Duration { unit: unit(u)? },
        ("Timestamp", Some(args)) => {
            let (u, zone) = match args.split_once(", ") {
                Some((u, zone)) => (u, Some(zone.strip_prefix("\"")?.strip_suffix("\"")?)),
                None => (args, None),
            };
            ArrowType::Timestamp {
                unit: unit(u)?,
                timezone: zone.map(std::rc::Rc::from),
            }
        }
        _ => return None,
    })
}

/// How a column's stored values are written as the type they were loaded from.
#[derive(Clone, Copy, PartialEq)]
enum Widening {
    /// Date32 and Time32: their int32 values as stored.
    Stored,
    /// int32 values of a signed 64-bit type, uint32 of UInt64 (the `int64: 'int32'` option).
    Signed,
    Unsigned,
    /// float32 values of a 64-bit temporal type (`int64: 'float32'`), rounded; a value no
    /// int64 holds (NaN, an infinity) is written null.
    Rounded,
}

impl Widening {
    fn of(data: &ColumnData, loaded: &ArrowType) -> Option<Widening> {
        let temporal = !matches!(loaded, ArrowType::Int { .. });
        let wide = loaded.integer_width() == 8;
        Some(match (data, loaded) {
            (ColumnData::I32(_), _) if !wide => Widening::Stored,
            (ColumnData::I32(_), ArrowType::Int { signed: false, .. }) => return None,
            (ColumnData::I32(_), _) => Widening::Signed,
            (ColumnData::U32(_), ArrowType::Int { signed: false, .. }) => Widening::Unsigned,
            (ColumnData::F32(_), _) if temporal && wide => Widening::Rounded,
            _ => return None,
        })
    }
}

/// `v` rounded to the int64 it is nearest, where one holds it.
fn rounded(v: f32) -> Option<i64> {
    // 2^63 is a float32; every float32 below it in magnitude converts exactly once rounded.
    const LIMIT: f32 = 9_223_372_036_854_775_808.0;
    (v.abs() < LIMIT).then(|| v.round() as i64)
}

/// The 8- or 16-bit index type a dictionary column of `len` values was loaded with (its
/// `arrowType`, `Dictionary(Int8, Utf8)`), where it still holds every code.
fn loaded_index(described: Option<&str>, len: usize) -> Option<(u8, bool)> {
    let index = described?.strip_prefix("Dictionary(")?;
    let narrow = [
        ("Int8,", 8, true),
        ("UInt8,", 8, false),
        ("Int16,", 16, true),
        ("UInt16,", 16, false),
    ];
    let &(_, bits, signed) = narrow.iter().find(|(name, ..)| index.starts_with(name))?;
    (len <= 1 << (bits - u8::from(signed))).then_some((bits, signed))
}

/// A dictionary column's type: its codes' integer type (uint32 codes as Int32, the index
/// type Arrow readers expect, or the narrower one it was loaded with) and its values' type.
fn dictionary_type(
    name: &str,
    codes: &Column,
    dictionary: &Dictionary,
    loaded: Option<(u8, bool)>,
) -> Result<ColumnType> {
    let index = match (&codes.data, loaded) {
        (ColumnData::F32(_), _) => {
            return Err(GpuTableError::invalid(format!(
                "column '{name}' has a dictionary but float32 values, not integer codes"
            )))
        }
        (_, Some((bits, signed))) => ArrowType::Int { bits, signed },
        (ColumnData::U32(_) | ColumnData::I32(_), None) => ArrowType::Int {
            bits: 32,
            signed: true,
        },
        (other, None) => ArrowType::of_data(other),
    };
    if codes.size != 1 {
        return Err(GpuTableError::invalid(format!(
            "column '{name}' has a dictionary but {} values per row",
            codes.size
        )));
    }
    if i32::try_from(dictionary.len()).is_err() {
        return Err(invalid_ipc(format!(
            "column '{name}' has a dictionary over 2^31 values"
        )));
    }
    Ok(ColumnType {
        item: values_type(dictionary),
        list: None,
        index: Some(index),
    })
}

fn values_type(dictionary: &Dictionary) -> ArrowType {
    match dictionary {
        Dictionary::Text(values) => ArrowType::Utf8 {
            large: text_bytes(values) > i32::MAX as usize,
        },
        Dictionary::Numbers(_, scalar) => ArrowType::of_numbers(*scalar),
        Dictionary::Integers(_, arrow) => arrow.clone(),
    }
}

fn text_bytes(values: &[std::rc::Rc<str>]) -> usize {
    values.iter().map(|v| v.len()).sum()
}

/// Every valid row's code names a value of the dictionary.
fn check_codes(name: &str, codes: &Column, validity: Option<&Column>, len: usize) -> Result<()> {
    for i in 0..codes.data.len() {
        let valid = validity.is_none_or(|v| v.data.get_f64(i) != 0.0);
        let code = codes.data.get_f64(i);
        if valid && !(code >= 0.0 && code < len as f64) {
            return Err(GpuTableError::invalid(format!(
                "column '{name}' has code {code} outside its dictionary of {len} values"
            )));
        }
    }
    Ok(())
}

/// A dictionary message: dictionary `id`'s values as a one-column record batch.
fn write_dictionary(out: &mut Vec<u8>, id: i64, dictionary: &Dictionary) -> Result<()> {
    let mut body = Body::default();
    let len = dictionary.len();
    body.validity(len, None)?;
    match dictionary {
        Dictionary::Text(values) => {
            let wide = values_type(dictionary) == ArrowType::Utf8 { large: true };
            let width = if wide { 8 } else { 4 };
            let mut offsets = try_vec((len + 1) * width, "a dictionary's offsets")?;
            let mut at = 0usize;
            for value in std::iter::once(0).chain(values.iter().map(|v| v.len())) {
                at += value;
                match wide {
                    true => offsets.extend_from_slice(&(at as u64).to_le_bytes()),
                    false => offsets.extend_from_slice(&(at as u32).to_le_bytes()),
                }
            }
            body.buffer(&offsets)?;
            let mut bytes = try_vec(text_bytes(values), "a dictionary's text")?;
            for value in values {
                bytes.extend_from_slice(value.as_bytes());
            }
            body.buffer(&bytes)?;
        }
        Dictionary::Numbers(values, _) => {
            let value_type = values_type(dictionary);
            let mut bytes = try_vec(len * 8, "a dictionary's values")?;
            for &v in values {
                match value_type {
                    ArrowType::Int { bits: 8, signed } => {
                        bytes.push(if signed { v as i8 as u8 } else { v as u8 })
                    }
                    ArrowType::Int { bits: 16, signed } => bytes.extend_from_slice(&match signed {
                        true => (v as i16).to_le_bytes(),
                        false => (v as u16).to_le_bytes(),
                    }),
                    ArrowType::Int { signed, .. } => bytes.extend_from_slice(&match signed {
                        true => (v as i32).to_le_bytes(),
                        false => (v as u32).to_le_bytes(),
                    }),
                    ArrowType::Float { double: false } => {
                        bytes.extend_from_slice(&(v as f32).to_le_bytes())
                    }
                    _ => bytes.extend_from_slice(&v.to_le_bytes()),
                }
            }
            body.buffer(&bytes)?;
        }
        Dictionary::Integers(values, arrow) => match arrow.integer_width() {
            0 => body.bits(len, &|i| values[i] != 0)?,
            width => {
                let mut bytes = try_vec(len * width, "a dictionary's values")?;
                for v in values {
                    // Little-endian: a 32-bit value's bytes are its i64's first four.
                    bytes.extend_from_slice(&v.to_le_bytes()[..width]);
                }
                body.buffer(&bytes)?
            }
        },
    }
    write_batch(out, &body, len, Some(id))
}

/// A record batch message of `rows` rows from `body`, or the dictionary message of
/// dictionary `id` holding it.
fn write_batch(out: &mut Vec<u8>, body: &Body, rows: usize, id: Option<i64>) -> Result<()> {
    let mut fbb = FlatBufferBuilder::new();
    let nodes = fbb.create_vector(&body.nodes);
    let buffers = fbb.create_vector(&body.buffers);
    let mut batch = RecordBatchBuilder::new(&mut fbb);
    batch.add_length(rows as i64);
    batch.add_nodes(nodes);
    batch.add_buffers(buffers);
    let batch = batch.finish();
    let (header_type, header) = match id {
        None => (MessageHeader::RecordBatch, batch.as_union_value()),
        Some(id) => {
            let mut dictionary = DictionaryBatchBuilder::new(&mut fbb);
            dictionary.add_id(id);
            dictionary.add_data(batch);
            let header = dictionary.finish();
            (MessageHeader::DictionaryBatch, header.as_union_value())
        }
    };
    let mut message = MessageBuilder::new(&mut fbb);
    message.add_version(MetadataVersion::V5);
    message.add_header_type(header_type);
    message.add_header(header);
    message.add_bodyLength(body.bytes.len() as i64);
    let message = message.finish();
    fbb.finish(message, None);
    write_message(out, fbb.finished_data(), &body.bytes)
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
    /// The type written in place of the stored one, and how the values become it.
    loaded: Option<(ArrowType, Widening)>,
    /// Codes written as integers of this many bytes (`loaded_index`: every valid code fits;
    /// a null row's wraps).
    index_bytes: Option<usize>,
}

impl<'a> Layout<'a> {
    fn of(
        values: &'a Column,
        kind: SourceKind,
        validity: Option<&'a Column>,
        loaded: Option<&ArrowType>,
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
        let loaded = loaded
            .filter(|_| size == 1 && kind == SourceKind::Plain)
            .and_then(|t| Some((t.clone(), Widening::of(&values.data, t)?)));
        Ok(Layout {
            values,
            float64,
            boolean,
            per_row,
            validity,
            loaded,
            index_bytes: None,
        })
    }

    /// Some value is written null though its flag says valid (a rounded value no int64
    /// holds).
    fn adds_nulls(&self) -> bool {
        match (&self.values.data, &self.loaded) {
            (ColumnData::F32(v), Some((_, Widening::Rounded))) => {
                v.iter().any(|&v| rounded(v).is_none())
            }
            _ => false,
        }
    }

    fn item_type(&self) -> ArrowType {
        if let Some((loaded, _)) = &self.loaded {
            return loaded.clone();
        }
        match (self.float64, self.boolean) {
            (true, _) => ArrowType::Float { double: true },
            (_, true) => ArrowType::Bool,
            _ => ArrowType::of_data(&self.values.data),
        }
    }

    fn per_item(&self) -> bool {
        self.validity.is_some_and(|v| v.size > 1)
    }

    fn column_type(&self) -> ColumnType {
        ColumnType {
            item: self.item_type(),
            list: (self.per_row > 1).then_some((self.per_row as i32, self.per_item())),
            index: None,
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
        let flags = match (&self.values.data, &self.loaded) {
            (ColumnData::F32(v), Some((_, Widening::Rounded))) if self.adds_nulls() => {
                let valid =
                    |i: usize| rounded(v[i]).is_some() && flags.as_ref().is_none_or(|f| f[i]);
                Some(try_collect(v.len(), (0..v.len()).map(valid))?)
            }
            _ => flags,
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
                ColumnData::U8(v) => body.bits(v.len(), &|i| v[i] != 0),
                _ => Err(invalid_ipc("a boolean column that is not uint8")),
            };
        }
        let data = &self.values.data;
        let widening = self.loaded.as_ref().map(|(_, w)| *w);
        let width = match (widening, self.index_bytes) {
            (Some(w), _) if w != Widening::Stored => 8,
            (_, Some(width)) => width,
            _ => 0,
        };
        if width > 0 {
            let mut bytes = try_vec(data.len() * width, "a column's widened values")?;
            for i in 0..data.len() {
                let value = match data {
                    ColumnData::U32(v) => u64::from(v[i]),
                    ColumnData::F32(v) => rounded(v[i]).unwrap_or(0) as u64,
                    _ => data.get_f64(i) as i64 as u64,
                };
                bytes.extend_from_slice(&value.to_le_bytes()[..width]);
            }
            return body.buffer(&bytes);
        }
        // Little-endian values as stored; float64 word pairs are the doubles' bytes.
        body.buffer(data.le_bytes())
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
            Some(flags) if nulls > 0 => self.bits(flags.len(), &|i| flags[i]),
            _ => self.buffer(&[]),
        }
    }

    /// `count` bits in Arrow's order: value i is bit i % 8 of byte i / 8.
    fn bits(&mut self, count: usize, bit: &dyn Fn(usize) -> bool) -> Result<()> {
        let mut bytes = try_vec(count.div_ceil(8), "a bitmap")?;
        for at in (0..count).step_by(8) {
            let bits = (at..count.min(at + 8)).map(|i| u8::from(bit(i)) << (i - at));
            bytes.push(bits.fold(0, |byte, bit| byte | bit));
        }
        self.buffer(&bytes)
    }

    /// A buffer of `bytes`, padded to the alignment.
    fn buffer(&mut self, bytes: &[u8]) -> Result<()> {
        let (offset, len) = (self.bytes.len(), bytes.len());
        append(&mut self.bytes, bytes)?;
        append(
            &mut self.bytes,
            &[0; ALIGNMENT][..len.next_multiple_of(ALIGNMENT) - len],
        )?;
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
