//! Arrow IPC in and out: record batches (read by `read`, our reader) become columns of the table
//! model, one batch per source batch, and columns are written back as an IPC stream (`write`).
//!
//! Column types: Int8/16/32, Uint8/16/32, Float32 and `FixedSizeList<T, 1..4>` of those;
//! Float64 as uint32 word pairs (for `fround`) or converted to float32; Int64/Uint64 only
//! with an explicit conversion; Date32 and Time32 as Int32, and Timestamp, Date64, Time64 and
//! Duration as Int64 (their stored integers); dictionary columns as their indices, with their
//! values kept (`Dictionary`) where they are strings or 8- to 32-bit numbers; Utf8 and
//! LargeUtf8 as uint32 codes into their distinct strings; Bool as uint8. A column
//! with nulls gets a separate uint8 validity column (1 valid, 0 null; null slots read 0): one
//! flag per row, or one per item for a fixed-size list whose items have nulls.

mod arrow_type;
mod dictionary;
mod framing;
mod read;
mod schema;
mod stream;
mod write;
pub use arrow_type::ArrowType;
pub use dictionary::{as_kept, Dictionary};
pub use read::read_ipc;
pub use schema::Scalar;
pub use stream::StreamReader;
pub use write::{write_ipc, WriteColumn};

use crate::column::Column;
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError};

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
    /// Dictionary indices, or a text column's codes (its `FieldInfo::dictionary` holds the
    /// values where they are kept).
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
    /// The values of a dictionary or text column, by code.
    pub dictionary: Option<std::rc::Rc<Dictionary>>,
    /// The field's custom metadata, in order.
    pub metadata: KeyValues,
}

/// Custom metadata of a schema or field: key-value pairs in their order.
pub type KeyValues = Vec<(String, String)>;

/// The pairs of an IPC schema's or field's `custom_metadata` (a pair without a key is
/// skipped, one without a value has an empty one).
pub(crate) fn key_values<'a>(
    list: Option<impl IntoIterator<Item = arrow_ipc::KeyValue<'a>>>,
) -> KeyValues {
    let mut pairs = Vec::new();
    for pair in list.into_iter().flatten() {
        if let Some(key) = pair.key() {
            pairs.push((key.to_string(), pair.value().unwrap_or("").to_string()));
        }
    }
    pairs
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
    /// The schema's custom metadata.
    pub metadata: KeyValues,
    /// Per source batch, one column per field.
    pub batches: Vec<Vec<IpcColumn>>,
}

fn invalid_ipc(error: impl std::fmt::Display) -> GpuTableError {
    GpuTableError::new(ErrorCode::InvalidIpc, format!("invalid Arrow IPC: {error}"))
}

const FILE_MAGIC: &[u8] = b"ARROW1";
