//! What the reader makes of a schema: which Arrow types become which columns, their names
//! as arrow-rs prints them, and how many field nodes and buffers each field takes in a batch.

use std::rc::Rc;

use arrow_ipc::{DateUnit, Field, MetadataVersion, Precision, TimeUnit, Type, UnionMode};

use super::arrow_type::ArrowType;

use super::{invalid_ipc, FieldInfo, Float64As, Int64As, ReadOptions, SourceKind};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};

/// The schema indices of the columns to read, in order, and what each becomes.
pub fn select_fields(all: &[Field], options: &ReadOptions) -> Result<Vec<(usize, FieldInfo)>> {
    let indices: Vec<usize> = match &options.columns {
        None => (0..all.len()).collect(),
        Some(names) => (names.iter())
            .map(|wanted| {
                all.iter()
                    .position(|f| f.name() == Some(wanted))
                    .ok_or_else(|| {
                        GpuTableError::invalid(format!(
                            "no column named '{wanted}' in the IPC schema"
                        ))
                    })
            })
            .collect::<Result<_>>()?,
    };
    let mut selected = Vec::new();
    for index in indices {
        let field = &all[index];
        let (dtype, size, kind) = column_type(field, options)?;
        selected.push((
            index,
            FieldInfo {
                name: field.name().unwrap_or_default().to_string(),
                dtype,
                size,
                kind,
                arrow_type: describe(field),
                nullable: field.nullable(),
                dictionary: None,
                metadata: super::key_values(field.custom_metadata()),
            },
        ));
    }
    Ok(selected)
}

/// The Arrow types read as values: integers, floats and booleans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    Bool,
}

impl Scalar {
    pub fn of(field: &Field) -> Option<Scalar> {
        match field.type_type() {
            Type::Int => {
                let int = field.type_as_int()?;
                integer(int.bitWidth(), int.is_signed())
            }
            Type::FloatingPoint => match field.type_as_floating_point()?.precision() {
                Precision::SINGLE => Some(Scalar::F32),
                Precision::DOUBLE => Some(Scalar::F64),
                _ => None,
            },
            Type::Bool => Some(Scalar::Bool),
            _ => None,
        }
    }

    /// The scalar a column's values are read as: its own, or for a temporal type the
    /// integers it stores (api.md "Tables": Date32 and Time32 as Int32; Timestamp, Date64,
    /// Time64 and Duration as Int64, under the `int64` option).
    pub fn read_as(field: &Field) -> Option<Scalar> {
        Scalar::of(field).or_else(|| match kept_values(field)? {
            KeptValues::Integers(arrow) if arrow.integer_width() == 4 => Some(Scalar::I32),
            KeptValues::Integers(_) => Some(Scalar::I64),
            _ => None,
        })
    }

    /// The element type this scalar is stored as unchanged, if any (not 64-bit, not Bool).
    pub fn stored(self) -> Option<DType> {
        Some(match self {
            Scalar::I8 => DType::I8,
            Scalar::I16 => DType::I16,
            Scalar::I32 => DType::I32,
            Scalar::U8 => DType::U8,
            Scalar::U16 => DType::U16,
            Scalar::U32 => DType::U32,
            Scalar::F32 => DType::F32,
            Scalar::I64 | Scalar::U64 | Scalar::F64 | Scalar::Bool => return None,
        })
    }

    /// Bytes per value (booleans are bits: 0).
    pub fn width(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
            Scalar::Bool => 0,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Scalar::I8 => "Int8",
            Scalar::I16 => "Int16",
            Scalar::I32 => "Int32",
            Scalar::I64 => "Int64",
            Scalar::U8 => "UInt8",
            Scalar::U16 => "UInt16",
            Scalar::U32 => "UInt32",
            Scalar::U64 => "UInt64",
            Scalar::F32 => "Float32",
            Scalar::F64 => "Float64",
            Scalar::Bool => "Boolean",
        }
    }
}

fn integer(bits: i32, signed: bool) -> Option<Scalar> {
    Some(match (bits, signed) {
        (8, true) => Scalar::I8,
        (16, true) => Scalar::I16,
        (32, true) => Scalar::I32,
        (64, true) => Scalar::I64,
        (8, false) => Scalar::U8,
        (16, false) => Scalar::U16,
        (32, false) => Scalar::U32,
        (64, false) => Scalar::U64,
        _ => return None,
    })
}

/// How a dictionary's values are kept on the host.
#[derive(Clone, Debug, PartialEq)]
pub enum KeptValues {
    Text,
    /// 8- to 32-bit integers, floats and Float64, as numbers.
    Numbers(Scalar),
    /// 64-bit integers, booleans and temporal values, as the integers Arrow stores, written
    /// back as this type.
    Integers(ArrowType),
}

/// How a dictionary field's values are kept; `None` where they are not (its column is then
/// its indices alone).
pub fn kept_values(field: &Field) -> Option<KeptValues> {
    let unit = |unit: TimeUnit| {
        (TimeUnit::SECOND.0..=TimeUnit::NANOSECOND.0)
            .contains(&unit.0)
            .then_some(unit)
    };
    Some(match field.type_type() {
        Type::Utf8 | Type::LargeUtf8 => KeptValues::Text,
        Type::Date => KeptValues::Integers(ArrowType::Date {
            millis: match field.type_as_date()?.unit() {
                DateUnit::DAY => false,
                DateUnit::MILLISECOND => true,
                _ => return None,
            },
        }),
        Type::Time => {
            let time = field.type_as_time()?;
            // Time32 in seconds or milliseconds, Time64 in micro- or nanoseconds.
            let unit = unit(time.unit())?;
            let bits = match unit.0 <= TimeUnit::MILLISECOND.0 {
                true => 32,
                false => 64,
            };
            if time.bitWidth() != i32::from(bits) {
                return None;
            }
            KeptValues::Integers(ArrowType::Time { unit, bits })
        }
        Type::Timestamp => {
            let timestamp = field.type_as_timestamp()?;
            KeptValues::Integers(ArrowType::Timestamp {
                unit: unit(timestamp.unit())?,
                timezone: timestamp.timezone().map(Rc::from),
            })
        }
        Type::Duration => KeptValues::Integers(ArrowType::Duration {
            unit: unit(field.type_as_duration()?.unit())?,
        }),
        _ => match Scalar::of(field)? {
            Scalar::I64 => KeptValues::Integers(ArrowType::Int {
                bits: 64,
                signed: true,
            }),
            Scalar::U64 => KeptValues::Integers(ArrowType::Int {
                bits: 64,
                signed: false,
            }),
            Scalar::Bool => KeptValues::Integers(ArrowType::Bool),
            scalar => KeptValues::Numbers(scalar),
        },
    })
}

/// A dictionary field's index type (signed 32-bit when the schema leaves it out).
pub fn index_type(field: &Field) -> Option<Scalar> {
    match field.dictionary()?.indexType() {
        Some(int) => integer(int.bitWidth(), int.is_signed()),
        None => Some(Scalar::I32),
    }
}

/// The field's Arrow type much as arrow-rs prints it, for messages and the `arrowType`
/// metadata.
pub fn describe(field: &Field) -> String {
    if let Some(index) = index_type(field) {
        return format!("Dictionary({}, {})", index.name(), describe_values(field));
    }
    describe_values(field)
}

fn describe_values(field: &Field) -> String {
    if let Some(scalar) = Scalar::of(field) {
        return scalar.name().to_string();
    }
    let unit = |unit: TimeUnit| unit.variant_name().map_or("?".to_string(), title_case);
    match (
        field.type_type(),
        field.type_as_fixed_size_list(),
        item(field),
    ) {
        (Type::FloatingPoint, ..)
            if field.type_as_floating_point().map(|f| f.precision()) == Some(Precision::HALF) =>
        {
            "Float16".to_string()
        }
        (Type::Date, ..) => match field.type_as_date().map(|d| d.unit()) {
            Some(DateUnit::MILLISECOND) => "Date64".to_string(),
            _ => "Date32".to_string(),
        },
        (Type::Time, ..) => field.type_as_time().map_or_else(String::new, |t| {
            format!("Time{}({})", t.bitWidth(), unit(t.unit()))
        }),
        (Type::Timestamp, ..) => {
            field
                .type_as_timestamp()
                .map_or_else(String::new, |t| match t.timezone() {
                    Some(zone) => format!("Timestamp({}, \"{zone}\")", unit(t.unit())),
                    None => format!("Timestamp({})", unit(t.unit())),
                })
        }
        (Type::Duration, ..) => field
            .type_as_duration()
            .map_or_else(String::new, |d| format!("Duration({})", unit(d.unit()))),
        (Type::Decimal, ..) => field.type_as_decimal().map_or_else(String::new, |d| {
            format!("Decimal{}({}, {})", d.bitWidth(), d.precision(), d.scale())
        }),
        (Type::FixedSizeBinary, ..) => field
            .type_as_fixed_size_binary()
            .map_or_else(String::new, |b| {
                format!("FixedSizeBinary({})", b.byteWidth())
            }),
        (Type::List | Type::LargeList, _, Some(item)) => {
            format!(
                "{}({})",
                field.type_type().variant_name().unwrap_or_default(),
                describe(&item)
            )
        }
        (Type::FixedSizeList, Some(list), Some(item)) => {
            let nullable = if item.nullable() { "" } else { "non-null " };
            let named = match item.name().unwrap_or_default() {
                "item" => String::new(),
                name => format!(", field: '{name}'"),
            };
            format!(
                "FixedSizeList({} x {nullable}{}{named})",
                list.listSize(),
                describe(&item)
            )
        }
        (Type::Struct_, ..) => "Struct".to_string(),
        (other, ..) => other
            .variant_name()
            .unwrap_or("an unknown type")
            .to_string(),
    }
}

/// "MILLISECOND" as "Millisecond".
fn title_case(name: &str) -> String {
    // ASCII only: Unicode case tables would cost the wasm module 11 kB.
    let mut title = name.to_ascii_lowercase();
    if let Some(first) = title.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    title
}

/// A list field's item field.
pub fn item<'a>(field: &Field<'a>) -> Option<Field<'a>> {
    field.children().filter(|c| c.len() == 1).map(|c| c.get(0))
}

pub fn unsupported(field: &Field, why: &str) -> GpuTableError {
    GpuTableError::new(
        ErrorCode::TypeMismatch,
        format!(
            "column '{}' has Arrow type {}, {why}",
            field.name().unwrap_or_default(),
            describe(field)
        ),
    )
}

/// The element type, values per row and source kind of a column.
fn column_type(field: &Field, options: &ReadOptions) -> Result<(DType, u32, SourceKind)> {
    let scalar = |scalar: Option<Scalar>| -> Result<(DType, u32, SourceKind)> {
        let Some(scalar) = scalar else {
            return Err(unsupported(field, "which gputable does not support"));
        };
        if let Some(dtype) = scalar.stored() {
            return Ok((dtype, 1, SourceKind::Plain));
        }
        Ok(match scalar {
            Scalar::F64 => match options.float64 {
                Float64As::Words => (DType::U32, 2, SourceKind::Float64Words),
                Float64As::Float32 => (DType::F32, 1, SourceKind::Plain),
            },
            Scalar::I64 | Scalar::U64 => match options.int64 {
                Int64As::Refuse => {
                    return Err(unsupported(
                        field,
                        "which needs an explicit conversion: pass int64: 'float32' or 'int32'",
                    ))
                }
                Int64As::Float32 => (DType::F32, 1, SourceKind::Plain),
                Int64As::Int32 if scalar == Scalar::I64 => (DType::I32, 1, SourceKind::Plain),
                Int64As::Int32 => (DType::U32, 1, SourceKind::Plain),
            },
            Scalar::Bool => (DType::U8, 1, SourceKind::Bool),
            _ => return Err(GpuTableError::new(ErrorCode::Internal, "a stored scalar")),
        })
    };
    if field.dictionary().is_some() {
        if field.type_type() == Type::NONE {
            return Err(invalid_ipc("a dictionary field without a value type"));
        }
        // Values whose validity is not their first buffer (`Dictionaries::add` reads it).
        if matches!(field.type_type(), Type::Union | Type::RunEndEncoded) {
            return Err(unsupported(
                field,
                "whose dictionary values are not supported",
            ));
        }
        // Kept values take uint32 codes, as text does.
        index_type(field).ok_or_else(|| unsupported(field, "with unsupported indices"))?;
        if kept_values(field).is_some() {
            return Ok((DType::U32, 1, SourceKind::DictionaryIndices));
        }
        // Null values: every row null, in a column of the indices' type.
        if field.type_type() == Type::Null {
            let (dtype, size, _) = scalar(index_type(field))?;
            return Ok((dtype, size, SourceKind::DictionaryIndices));
        }
        return Err(unsupported(
            field,
            "whose dictionary values are not supported",
        ));
    }
    match (field.type_as_fixed_size_list(), item(field)) {
        (Some(list), Some(item)) if (1..=4).contains(&list.listSize()) => {
            if item.dictionary().is_some() {
                return Err(unsupported(field, "which gputable does not support"));
            }
            let (dtype, size, kind) = scalar(Scalar::read_as(&item))?;
            if kind == SourceKind::Bool {
                return Err(unsupported(field, "a list of booleans is not supported"));
            }
            Ok((dtype, size * list.listSize() as u32, kind))
        }
        (Some(_), _) => Err(unsupported(
            field,
            "fixed-size lists are supported with 1 to 4 values",
        )),
        // Text as codes into its distinct strings (`read::Dictionaries`).
        _ if matches!(field.type_type(), Type::Utf8 | Type::LargeUtf8) => {
            Ok((DType::U32, 1, SourceKind::DictionaryIndices))
        }
        _ => scalar(Scalar::read_as(field)),
    }
}

/// Where a batch's walk over its fields stands: the field nodes and buffers taken so far,
/// and how many the batch has (a walk past them stops at once: a crafted schema may repeat a
/// child table many times over).
pub struct Walk {
    pub nodes: usize,
    pub buffers: usize,
    pub node_count: usize,
    pub buffer_count: usize,
}

/// Counts the field nodes and buffers `field` takes in a batch (children included), walking
/// past columns that are not read. `variadic` gives the view types' extra buffer counts.
pub fn span(
    field: &Field,
    version: MetadataVersion,
    variadic: &mut dyn Iterator<Item = i64>,
    walk: &mut Walk,
) -> Result<()> {
    let own = if field.dictionary().is_some() {
        // Only the indices: validity and values.
        2
    } else {
        match field.type_type() {
            Type::Null | Type::RunEndEncoded => 0,
            Type::Int
            | Type::FloatingPoint
            | Type::Bool
            | Type::Decimal
            | Type::Date
            | Type::Time
            | Type::Timestamp
            | Type::Interval
            | Type::Duration
            | Type::FixedSizeBinary
            | Type::List
            | Type::LargeList
            | Type::Map => 2,
            Type::Binary | Type::Utf8 | Type::LargeBinary | Type::LargeUtf8 => 3,
            Type::ListView | Type::LargeListView => 3,
            Type::BinaryView | Type::Utf8View => {
                let extra = variadic
                    .next()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        invalid_ipc("a view column without its variadic buffer count")
                    })?;
                2usize.saturating_add(extra)
            }
            Type::FixedSizeList | Type::Struct_ => 1,
            Type::Union => {
                let dense = field
                    .type_as_union()
                    .is_some_and(|u| u.mode() == UnionMode::Dense);
                // Before V5, unions had a validity buffer too.
                usize::from(version < MetadataVersion::V5) + 1 + usize::from(dense)
            }
            _ => return Err(invalid_ipc("a field of an unknown Arrow type")),
        }
    };
    walk.nodes += 1;
    walk.buffers = walk.buffers.saturating_add(own);
    if walk.nodes > walk.node_count || walk.buffers > walk.buffer_count {
        return Err(invalid_ipc(
            "a batch has fewer field nodes or buffers than its schema needs",
        ));
    }
    if field.dictionary().is_none() {
        for child in field.children().into_iter().flatten() {
            span(&child, version, variadic, walk)?;
        }
    }
    Ok(())
}
