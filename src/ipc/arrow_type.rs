//! The Arrow types the writer writes, and its schema message built straight from them with
//! arrow-ipc's flatbuffer builders (arrow-ipc's schema encoder takes arrow-schema's
//! `DataType`, every variant of it, and a dictionary tracker: 14 kB gzipped of the module).

use std::rc::Rc;

use arrow_ipc::{
    BoolBuilder, DateBuilder, DateUnit, DictionaryEncodingBuilder, DurationBuilder, Endianness,
    FieldBuilder, FixedSizeListBuilder, FloatingPointBuilder, IntBuilder, KeyValue,
    KeyValueBuilder, LargeUtf8Builder, NullBuilder, Precision, SchemaBuilder, TimeBuilder,
    TimeUnit, TimestampBuilder, Type, Utf8Builder,
};
use flatbuffers::{FlatBufferBuilder, ForwardsUOffset, UnionWIPOffset, WIPOffset};

use super::Scalar;
use crate::column::ColumnData;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrowType {
    Int {
        bits: u8,
        signed: bool,
    },
    Float {
        double: bool,
    },
    Bool,
    Utf8 {
        large: bool,
    },
    Null,
    /// Date32 (days) or Date64 (`millis`).
    Date {
        millis: bool,
    },
    /// Time32 or Time64 (`bits`).
    Time {
        unit: TimeUnit,
        bits: u8,
    },
    Timestamp {
        unit: TimeUnit,
        timezone: Option<Rc<str>>,
    },
    Duration {
        unit: TimeUnit,
    },
}

impl ArrowType {
    pub fn of_data(data: &ColumnData) -> ArrowType {
        let int = |bits, signed| ArrowType::Int { bits, signed };
        match data {
            ColumnData::U8(_) => int(8, false),
            ColumnData::I8(_) => int(8, true),
            ColumnData::U16(_) => int(16, false),
            ColumnData::I16(_) => int(16, true),
            ColumnData::U32(_) => int(32, false),
            ColumnData::I32(_) => int(32, true),
            ColumnData::F32(_) => ArrowType::Float { double: false },
        }
    }

    /// A dictionary's numbers as written back: their own type, Float64 for the rest.
    pub fn of_numbers(scalar: Scalar) -> ArrowType {
        let int = |bits, signed| ArrowType::Int { bits, signed };
        match scalar {
            Scalar::I8 => int(8, true),
            Scalar::I16 => int(16, true),
            Scalar::I32 => int(32, true),
            Scalar::U8 => int(8, false),
            Scalar::U16 => int(16, false),
            Scalar::U32 => int(32, false),
            Scalar::F32 => ArrowType::Float { double: false },
            Scalar::I64 | Scalar::U64 | Scalar::F64 | Scalar::Bool => {
                ArrowType::Float { double: true }
            }
        }
    }

    /// Its type table in a flatbuffer.
    fn encode(&self, fbb: &mut FlatBufferBuilder) -> (Type, WIPOffset<UnionWIPOffset>) {
        match *self {
            ArrowType::Int { bits, signed } => {
                (Type::Int, int_table(fbb, bits, signed).as_union_value())
            }
            ArrowType::Float { double } => {
                let mut float = FloatingPointBuilder::new(fbb);
                float.add_precision(match double {
                    true => Precision::DOUBLE,
                    false => Precision::SINGLE,
                });
                (Type::FloatingPoint, float.finish().as_union_value())
            }
            ArrowType::Bool => (Type::Bool, BoolBuilder::new(fbb).finish().as_union_value()),
            ArrowType::Utf8 { large: false } => {
                (Type::Utf8, Utf8Builder::new(fbb).finish().as_union_value())
            }
            ArrowType::Utf8 { large: true } => (
                Type::LargeUtf8,
                LargeUtf8Builder::new(fbb).finish().as_union_value(),
            ),
            ArrowType::Null => (Type::Null, NullBuilder::new(fbb).finish().as_union_value()),
            ArrowType::Date { millis } => {
                let mut date = DateBuilder::new(fbb);
                date.add_unit(match millis {
                    true => DateUnit::MILLISECOND,
                    false => DateUnit::DAY,
                });
                (Type::Date, date.finish().as_union_value())
            }
            ArrowType::Time { unit, bits } => {
                let mut time = TimeBuilder::new(fbb);
                time.add_unit(unit);
                time.add_bitWidth(i32::from(bits));
                (Type::Time, time.finish().as_union_value())
            }
            ArrowType::Timestamp { unit, ref timezone } => {
                let timezone = timezone.as_deref().map(|tz| fbb.create_string(tz));
                let mut timestamp = TimestampBuilder::new(fbb);
                timestamp.add_unit(unit);
                if let Some(timezone) = timezone {
                    timestamp.add_timezone(timezone);
                }
                (Type::Timestamp, timestamp.finish().as_union_value())
            }
            ArrowType::Duration { unit } => {
                let mut duration = DurationBuilder::new(fbb);
                duration.add_unit(unit);
                (Type::Duration, duration.finish().as_union_value())
            }
        }
    }

    /// Bytes per value of a type a dictionary keeps as integers (booleans are bits: 0).
    pub fn integer_width(&self) -> usize {
        match self {
            ArrowType::Bool => 0,
            ArrowType::Int { bits, .. } | ArrowType::Time { bits, .. } => usize::from(*bits / 8),
            ArrowType::Date { millis: false } => 4,
            _ => 8,
        }
    }
}

fn int_table<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    bits: u8,
    signed: bool,
) -> WIPOffset<arrow_ipc::Int<'a>> {
    let mut int = IntBuilder::new(fbb);
    int.add_bitWidth(i32::from(bits));
    int.add_is_signed(signed);
    int.finish()
}

/// A column as written: values of `item`, in rows of `list.0` (a `FixedSizeList` whose items
/// are nullable when `list.1`) or one per row, as the codes of a dictionary of `index` type.
#[derive(Clone, Debug)]
pub struct ColumnType {
    pub item: ArrowType,
    pub list: Option<(i32, bool)>,
    pub index: Option<ArrowType>,
}

/// A schema message's header: each column `(name, type, nullable)`, its dictionaries
/// numbered 0, 1, ... in order.
/// A field to write: its name, type, nullability and custom metadata.
pub type SchemaColumn<'a> = (&'a str, ColumnType, bool, &'a [(String, String)]);

pub fn schema_table<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    columns: &[SchemaColumn],
    metadata: &[(String, String)],
) -> WIPOffset<UnionWIPOffset> {
    let mut dictionaries = 0;
    let mut fields = Vec::with_capacity(columns.len());
    for (name, column, nullable, custom) in columns {
        let id = column.index.as_ref().map(|_| {
            dictionaries += 1;
            dictionaries - 1
        });
        let custom = key_value_table(fbb, custom);
        fields.push(field_table(fbb, name, column, *nullable, id, custom));
    }
    let fields = fbb.create_vector(&fields);
    let metadata = key_value_table(fbb, metadata);
    let mut schema = SchemaBuilder::new(fbb);
    schema.add_endianness(Endianness::Little);
    schema.add_fields(fields);
    if let Some(metadata) = metadata {
        schema.add_custom_metadata(metadata);
    }
    schema.finish().as_union_value()
}

type KeyValueTables<'a> = WIPOffset<flatbuffers::Vector<'a, ForwardsUOffset<KeyValue<'a>>>>;

/// A schema's or field's custom metadata (none where it has no pairs).
fn key_value_table<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    pairs: &[(String, String)],
) -> Option<KeyValueTables<'a>> {
    if pairs.is_empty() {
        return None;
    }
    let tables: Vec<_> = (pairs.iter())
        .map(|(key, value)| {
            let (key, value) = (fbb.create_string(key), fbb.create_string(value));
            let mut pair = KeyValueBuilder::new(fbb);
            pair.add_key(key);
            pair.add_value(value);
            pair.finish()
        })
        .collect();
    Some(fbb.create_vector(&tables))
}

fn field_table<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    name: &str,
    column: &ColumnType,
    nullable: bool,
    dictionary: Option<i64>,
    custom: Option<KeyValueTables<'a>>,
) -> WIPOffset<arrow_ipc::Field<'a>> {
    // Readers expect an empty child list rather than none.
    let children = match column.list {
        Some((_, item_nullable)) => {
            let item = ColumnType {
                list: None,
                index: None,
                item: column.item.clone(),
            };
            vec![field_table(fbb, "item", &item, item_nullable, None, None)]
        }
        None => Vec::new(),
    };
    let children = fbb.create_vector(&children);
    let name = fbb.create_string(name);
    let (type_type, type_table) = match column.list {
        Some((n, _)) => {
            let mut list = FixedSizeListBuilder::new(fbb);
            list.add_listSize(n);
            (Type::FixedSizeList, list.finish().as_union_value())
        }
        None => column.item.encode(fbb),
    };
    let encoding = match (&column.index, dictionary) {
        (&Some(ArrowType::Int { bits, signed }), Some(id)) => {
            let index = int_table(fbb, bits, signed);
            let mut encoding = DictionaryEncodingBuilder::new(fbb);
            encoding.add_id(id);
            encoding.add_indexType(index);
            encoding.add_isOrdered(false);
            Some(encoding.finish())
        }
        _ => None,
    };
    let mut field = FieldBuilder::new(fbb);
    field.add_name(name);
    field.add_nullable(nullable);
    field.add_type_type(type_type);
    field.add_type_(type_table);
    field.add_children(children);
    if let Some(encoding) = encoding {
        field.add_dictionary(encoding);
    }
    if let Some(custom) = custom {
        field.add_custom_metadata(custom);
    }
    field.finish()
}
