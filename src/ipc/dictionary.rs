//! Dictionaries kept on the host beside their columns' codes (api.md "Tables"): a dictionary
//! column's values and a Utf8 column's distinct strings, deduplicated as they arrive so that
//! equal codes are equal values, whatever batch or dictionary message they came in; and what
//! the reader tracks of every dictionary message.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use arrow_ipc::{DictionaryBatch, Field, Type};

use super::arrow_type::ArrowType;
use super::read::{compressed, slice, validity};
use super::schema::{kept_values, KeptValues, Scalar};
use super::{invalid_ipc, FieldInfo};
use crate::column::{try_collect, try_vec};
use crate::error::{ErrorCode, GpuTableError, Result};

/// A column's values by code.
#[derive(Clone, Debug, PartialEq)]
pub enum Dictionary {
    Text(Vec<Rc<str>>),
    /// Numbers, written back as the Arrow type `Scalar` names.
    Numbers(Vec<f64>, Scalar),
    /// The integers Arrow stores for values of this type (64-bit integers, booleans as 0 and
    /// 1, dates, times, timestamps, durations), written back as it.
    Integers(Vec<i64>, ArrowType),
}

impl Dictionary {
    pub fn len(&self) -> usize {
        match self {
            Dictionary::Text(values) => values.len(),
            Dictionary::Numbers(values, _) => values.len(),
            Dictionary::Integers(values, _) => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `prefix`'s values are this one's first (the same kind of values): a stream's
    /// dictionary grows so, and codes read before keep their values.
    pub fn starts_with(&self, prefix: &Dictionary) -> bool {
        match (self, prefix) {
            (Dictionary::Text(a), Dictionary::Text(b)) => a.starts_with(b),
            (Dictionary::Numbers(a, _), Dictionary::Numbers(b, _)) => {
                a.len() >= b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Dictionary::Integers(a, x), Dictionary::Integers(b, y)) => a.starts_with(b) && x == y,
            _ => false,
        }
    }

    /// The same values, whatever Arrow type numbers are written as.
    pub fn same_values(&self, other: &Dictionary) -> bool {
        self.len() == other.len() && self.starts_with(other)
    }
}

/// Distinct values as they arrive, each given the next code.
#[derive(Default)]
pub struct Distinct {
    text: HashMap<Box<[u8]>, u32>,
    strings: Vec<Rc<str>>,
    /// The code of each number's or integer's bits (one kind per dictionary).
    numbers: HashMap<u64, u32>,
    values: Vec<f64>,
    integers: Vec<i64>,
}

impl Distinct {
    pub fn text_code(&mut self, bytes: &[u8]) -> Result<u32> {
        if let Some(&code) = self.text.get(bytes) {
            return Ok(code);
        }
        let text = std::str::from_utf8(bytes).map_err(|_| invalid_ipc("a string not in UTF-8"))?;
        let code = next_code(self.strings.len())?;
        grow(&mut self.strings)?;
        self.text.try_reserve(1).map_err(|_| too_many())?;
        self.strings.push(Rc::from(text));
        self.text.insert(bytes.into(), code);
        Ok(code)
    }

    /// Numbers are told apart by their bits (as a dictionary message holds them), but -0 is
    /// +0 and every NaN one NaN: values that group and join as one (api.md's `unique`).
    pub fn number_code(&mut self, value: f64) -> Result<u32> {
        let value = as_kept(value);
        code_by_bits(&mut self.numbers, &mut self.values, value.to_bits(), value)
    }

    fn integer_code(&mut self, value: i64) -> Result<u32> {
        code_by_bits(&mut self.numbers, &mut self.integers, value as u64, value)
    }

    /// The values so far, kept as `kind` says.
    pub fn dictionary(&self, kind: &KeptValues) -> Dictionary {
        match kind {
            KeptValues::Text => Dictionary::Text(self.strings.clone()),
            KeptValues::Numbers(scalar) => Dictionary::Numbers(self.values.clone(), *scalar),
            KeptValues::Integers(arrow) => {
                Dictionary::Integers(self.integers.clone(), arrow.clone())
            }
        }
    }
}

/// A dictionary's number as it keeps it: +0 for -0, one NaN for every NaN.
pub fn as_kept(value: f64) -> f64 {
    if value == 0.0 {
        0.0
    } else if value.is_nan() {
        f64::NAN
    } else {
        value
    }
}

/// The code of `value` (told apart by `bits`), the next one where it is new.
fn code_by_bits<T>(
    codes: &mut HashMap<u64, u32>,
    values: &mut Vec<T>,
    bits: u64,
    value: T,
) -> Result<u32> {
    if let Some(&code) = codes.get(&bits) {
        return Ok(code);
    }
    let code = next_code(values.len())?;
    grow(values)?;
    codes.try_reserve(1).map_err(|_| too_many())?;
    values.push(value);
    codes.insert(bits, code);
    Ok(code)
}

fn next_code(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| too_many())
}

fn grow<T>(values: &mut Vec<T>) -> Result<()> {
    values.try_reserve(1).map_err(|_| too_many())
}

fn too_many() -> GpuTableError {
    GpuTableError::new(
        ErrorCode::OutOfMemory,
        "could not grow a column's dictionary",
    )
}

/// The strings of a Utf8 (`wide` false) or LargeUtf8 array: its offsets and its bytes.
pub struct Strings<'a> {
    pub offsets: &'a [u8],
    pub data: &'a [u8],
    pub wide: bool,
}

impl<'a> Strings<'a> {
    /// String `i`'s bytes; offsets outside the data are `INVALID_IPC`.
    pub fn get(&self, i: usize) -> Result<&'a [u8]> {
        let width = if self.wide { 8 } else { 4 };
        let offset = |k: usize| -> Option<usize> {
            let bytes = self.offsets.get(k * width..(k + 1) * width)?;
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(bytes);
            // A negative offset reads as a huge one (rejected below).
            usize::try_from(match self.wide {
                true => u64::from_le_bytes(word),
                false => u64::from(u32::from_le_bytes([word[0], word[1], word[2], word[3]])),
            })
            .ok()
        };
        match (offset(i), offset(i + 1)) {
            (Some(start), Some(end)) if start <= end && end <= self.data.len() => {
                Ok(&self.data[start..end])
            }
            _ => Err(invalid_ipc("a string's offsets outside its data")),
        }
    }
}

/// Value `i` of a numbers buffer of `scalar`'s type (`None` past its end).
pub fn number_at(scalar: Scalar, bytes: &[u8], i: usize) -> Option<f64> {
    let width = scalar.width();
    let b = bytes.get(i * width..(i + 1) * width)?;
    Some(match scalar {
        Scalar::I8 => f64::from(b[0] as i8),
        Scalar::U8 => f64::from(b[0]),
        Scalar::I16 => f64::from(i16::from_le_bytes([b[0], b[1]])),
        Scalar::U16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
        Scalar::I32 => f64::from(i32::from_le_bytes(b.try_into().ok()?)),
        Scalar::U32 => f64::from(u32::from_le_bytes(b.try_into().ok()?)),
        Scalar::F32 => f64::from(f32::from_le_bytes(b.try_into().ok()?)),
        Scalar::F64 => f64::from_le_bytes(b.try_into().ok()?),
        Scalar::I64 | Scalar::U64 | Scalar::Bool => return None,
    })
}

/// Value `i` of a buffer of integers of `width` bytes (4: signed; 0: bits), as an i64's bits
/// (`None` past its end).
fn integer_at(width: usize, bytes: &[u8], i: usize) -> Option<i64> {
    Some(match width {
        0 => i64::from((bytes.get(i / 8)? >> (i % 8)) & 1),
        4 => i64::from(i32::from_le_bytes(
            bytes.get(i * 4..i * 4 + 4)?.try_into().ok()?,
        )),
        _ => i64::from_le_bytes(bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?),
    })
}

/// The validity of each dictionary's values, by id, for the dictionary columns read: a row
/// whose index points at a null value is null. Values are kept (`Kept`); other dictionaries
/// are only checked for.
pub(super) struct Dictionaries {
    /// The value type of each dictionary read, and its values so far.
    pub(super) selected: HashMap<i64, (Type, DictionaryValues)>,
    /// Every dictionary id in the schema.
    known: HashSet<i64>,
    /// The dictionary id of each dictionary column read, and the distinct strings of each
    /// Utf8 column read, by schema index.
    column_ids: HashMap<usize, i64>,
    pub(super) text: HashMap<usize, Distinct>,
}

/// A dictionary's values: none until a dictionary batch arrives (until then a column may
/// hold only null indices, as arrow-rs reads it).
#[derive(Default)]
pub(super) struct DictionaryValues {
    len: usize,
    /// The flags of the dictionary batches that have nulls, each with its first value:
    /// batches without nulls keep none, so the flags are bounded by the bitmaps read.
    nulls: Vec<(usize, Vec<bool>)>,
    /// The values themselves, where their type is kept (all but Null).
    pub(super) kept: Option<Kept>,
}

/// A dictionary kept: its distinct values across every message, and the code of each value
/// of the dictionary as it stands now (`None` for a null value).
pub(super) struct Kept {
    distinct: Distinct,
    kind: KeptValues,
    codes: Vec<Option<u32>>,
}

impl Kept {
    fn of(field: &Field) -> Option<Kept> {
        Some(Kept {
            distinct: Distinct::default(),
            kind: kept_values(field)?,
            codes: Vec::new(),
        })
    }

    /// The values of a dictionary message: `buffers` after its validity, `len` values.
    fn add(
        &mut self,
        buffers: &[&[u8]],
        len: usize,
        valid: Option<&[bool]>,
        wide: bool,
    ) -> Result<()> {
        let is_valid = |i: usize| valid.is_none_or(|v| v[i]);
        let buffer = |k: usize| buffers.get(k).copied().unwrap_or(&[]);
        // The values' first buffer holds them before anything is reserved: a length is only
        // a claim.
        let needed = match &self.kind {
            KeptValues::Text if len > 0 => {
                len.saturating_add(1)
                    .saturating_mul(if wide { 8 } else { 4 })
            }
            KeptValues::Text => 0,
            KeptValues::Numbers(scalar) => len.saturating_mul(scalar.width()),
            KeptValues::Integers(arrow) => match arrow.integer_width() {
                0 => len.div_ceil(8),
                width => len.saturating_mul(width),
            },
        };
        if buffer(0).len() < needed {
            return Err(invalid_ipc(
                "a dictionary's values buffer shorter than its values",
            ));
        }
        self.codes
            .try_reserve(len)
            .map_err(|_| invalid_ipc("a dictionary too long"))?;
        let short = || invalid_ipc("a dictionary's values buffer shorter than its values");
        let strings = Strings {
            offsets: buffer(0),
            data: buffer(1),
            wide,
        };
        let width = match &self.kind {
            KeptValues::Integers(arrow) => arrow.integer_width(),
            _ => 0,
        };
        for i in 0..len {
            let code = match is_valid(i) {
                true => Some(match &self.kind {
                    KeptValues::Text => self.distinct.text_code(strings.get(i)?)?,
                    &KeptValues::Numbers(scalar) => {
                        let value = number_at(scalar, buffer(0), i).ok_or_else(short)?;
                        self.distinct.number_code(value)?
                    }
                    KeptValues::Integers(_) => {
                        let value = integer_at(width, buffer(0), i).ok_or_else(short)?;
                        self.distinct.integer_code(value)?
                    }
                }),
                false => None,
            };
            self.codes.push(code);
        }
        Ok(())
    }
}

impl DictionaryValues {
    fn is_valid(&self, value: usize) -> bool {
        let after = self.nulls.partition_point(|(first, _)| *first <= value);
        match after.checked_sub(1).map(|batch| &self.nulls[batch]) {
            Some((first, flags)) => flags.get(value - first).copied().unwrap_or(true),
            None => true,
        }
    }
}

impl Dictionaries {
    pub(super) fn new(all: &[Field], selected: &[(usize, FieldInfo)]) -> Dictionaries {
        // The flatbuffers verifier bounds the nesting (64 levels).
        fn collect(field: &Field, known: &mut HashSet<i64>) {
            known.extend(field.dictionary().map(|d| d.id()));
            for child in field.children().into_iter().flatten() {
                collect(&child, known);
            }
        }
        let mut known = HashSet::new();
        for field in all {
            collect(field, &mut known);
        }
        let mut dictionaries = HashMap::new();
        let mut column_ids = HashMap::new();
        let mut text = HashMap::new();
        for (index, _) in selected {
            let field = &all[*index];
            if let Some(dictionary) = field.dictionary() {
                let values = DictionaryValues {
                    kept: Kept::of(field),
                    ..Default::default()
                };
                dictionaries.insert(dictionary.id(), (field.type_type(), values));
                column_ids.insert(*index, dictionary.id());
            } else if matches!(field.type_type(), Type::Utf8 | Type::LargeUtf8) {
                text.insert(*index, Distinct::default());
            }
        }
        Dictionaries {
            selected: dictionaries,
            known,
            column_ids,
            text,
        }
    }

    /// The dictionary of the column at schema `index` as read so far, where it is kept.
    pub(super) fn of_column(&self, index: usize) -> Option<Dictionary> {
        if let Some(text) = self.text.get(&index) {
            return Some(text.dictionary(&KeptValues::Text));
        }
        let id = self.column_ids.get(&index)?;
        let kept = self.selected.get(id)?.1.kept.as_ref()?;
        Some(kept.distinct.dictionary(&kept.kind))
    }

    pub(super) fn add(&mut self, batch: DictionaryBatch, body: &[u8]) -> Result<()> {
        let id = batch.id();
        let Some((value_type, values)) = self.selected.get_mut(&id) else {
            return match self.known.contains(&id) {
                true => Ok(()),
                false => Err(invalid_ipc(format!(
                    "a dictionary batch for unknown id {id}"
                ))),
            };
        };
        let data = batch
            .data()
            .ok_or_else(|| invalid_ipc("a dictionary batch without data"))?;
        if data.compression().is_some() {
            return Err(compressed());
        }
        let node = (data.nodes().into_iter().flatten().next())
            .ok_or_else(|| invalid_ipc("a dictionary batch without values"))?;
        let len = node.length() as usize;
        let valid = match *value_type {
            // No buffers: every value is null (`dictionary_validity`).
            Type::Null => None,
            // Other value types start with their validity bitmap (the schema refused the rest).
            _ => {
                let bitmap = (data.buffers().into_iter().flatten().next())
                    .map_or(&[][..], |b| slice(body, b.offset(), b.length()));
                validity(node, bitmap, len)?
            }
        };
        // A delta extends the dictionary; any other dictionary batch replaces it (a kept one's
        // distinct values stay, so codes read before keep their values).
        if !batch.isDelta() {
            values.len = 0;
            values.nulls.clear();
            if let Some(kept) = values.kept.as_mut() {
                kept.codes.clear();
            }
        }
        let buffers: Vec<&[u8]> = (data.buffers().into_iter().flatten().skip(1))
            .map(|b| slice(body, b.offset(), b.length()))
            .collect();
        if let Some(kept) = values.kept.as_mut() {
            let wide = *value_type == Type::LargeUtf8;
            kept.add(&buffers, len, valid.as_deref(), wide)?;
        }
        let first = values.len;
        values.len = first
            .checked_add(len)
            .ok_or_else(|| invalid_ipc("a dictionary too long"))?;
        if let Some(valid) = valid {
            values.nulls.push((first, valid));
        }
        Ok(())
    }
}

/// Index `i` of a dictionary column's indices of `scalar`'s type (`None` when negative or
/// past `usize`).
fn index_at(scalar: Scalar, keys: &[u8], i: usize) -> Option<usize> {
    let width = scalar.width();
    let b = keys.get(i * width..(i + 1) * width)?;
    let mut word = [0u8; 8];
    word[..width].copy_from_slice(b);
    let signed = matches!(scalar, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64);
    let negative = signed && b[width - 1] & 0x80 != 0;
    (!negative)
        .then(|| usize::try_from(u64::from_le_bytes(word)).ok())
        .flatten()
}

/// The codes of a kept dictionary's column (0 on null rows) and its rows' validity: a row is
/// null when its index is or the value it points at is. An index outside the dictionary is
/// `INVALID_IPC`.
pub(super) fn kept_codes(
    kept: &Kept,
    scalar: Scalar,
    keys: &[u8],
    rows: usize,
    row_valid: Option<Vec<bool>>,
) -> Result<(Vec<u32>, Option<Vec<bool>>)> {
    if scalar.width() == 0 || keys.len() < rows.saturating_mul(scalar.width()) {
        return Err(invalid_ipc(
            "a dictionary column's indices are shorter than its rows",
        ));
    }
    let mut codes = try_vec(rows, "a column")?;
    let mut valid = row_valid;
    for i in 0..rows {
        if valid.as_ref().is_some_and(|v| !v[i]) {
            codes.push(0);
            continue;
        }
        let code = (index_at(scalar, keys, i).and_then(|k| kept.codes.get(k)))
            .ok_or_else(|| invalid_ipc("a dictionary index outside its dictionary"))?;
        codes.push(code.unwrap_or(0));
        if code.is_none() {
            let flags = match valid.as_mut() {
                Some(flags) => flags,
                None => valid.insert(try_collect(rows, std::iter::repeat_n(true, rows))?),
            };
            flags[i] = false;
        }
    }
    Ok((codes, valid))
}

/// The rows of a dictionary column that are valid: a valid index pointing at a valid value.
/// An index outside the dictionary is `INVALID_IPC`.
pub(super) fn dictionary_validity(
    scalar: Scalar,
    keys: &[u8],
    rows: usize,
    row_valid: Option<Vec<bool>>,
    dictionary: &DictionaryValues,
    all_null: bool,
) -> Result<Option<Vec<bool>>> {
    let width = scalar.width();
    if width == 0 || keys.len() < rows.saturating_mul(width) {
        return Err(invalid_ipc(
            "a dictionary column's indices are shorter than its rows",
        ));
    }
    let key = |i: usize| index_at(scalar, keys, i);
    let mut valid = row_valid;
    for i in 0..rows {
        if valid.as_ref().is_some_and(|v| !v[i]) {
            continue;
        }
        let value = key(i)
            .filter(|&k| k < dictionary.len)
            .ok_or_else(|| invalid_ipc("a dictionary index outside its dictionary"))?;
        if all_null || !dictionary.is_valid(value) {
            let flags = match valid.as_mut() {
                Some(flags) => flags,
                None => valid.insert(try_collect(rows, std::iter::repeat_n(true, rows))?),
            };
            flags[i] = false;
        }
    }
    Ok(valid)
}
