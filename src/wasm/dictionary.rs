//! Dictionaries between Rust and JS (api.md "Tables"), as their source: an array of strings,
//! or `{type, unit, timezone, values}` for numbers (a `Float64Array`) and for the integers
//! Arrow stores of 64-bit integers, booleans and temporal types (a `BigInt64Array`), with the
//! Arrow type they are written back as. js/dictionaries.js shows them as apache-arrow
//! decodes them, and hands a verb's result the same source back.

use std::collections::HashSet;
use std::rc::Rc;

use arrow_ipc::TimeUnit;
use wasm_bindgen::prelude::*;

use super::{invalid, set, to_js, JsResult};
use crate::column::try_vec;
use crate::error::{ErrorCode, GpuTableError};
use crate::ipc::{as_kept, ArrowType, Dictionary, Scalar};

/// The number types by `type` code, after `INTEGER_TYPES` codes of `integer_type`.
const NUMBERS: [Scalar; 8] = [
    Scalar::I8,
    Scalar::I16,
    Scalar::I32,
    Scalar::U8,
    Scalar::U16,
    Scalar::U32,
    Scalar::F32,
    Scalar::F64,
];
const INTEGER_TYPES: usize = 9;

fn integer_type(code: usize, unit: TimeUnit, timezone: Option<Rc<str>>) -> Option<ArrowType> {
    Some(match code {
        0 | 1 => ArrowType::Int {
            bits: 64,
            signed: code == 0,
        },
        2 => ArrowType::Bool,
        3 | 4 => ArrowType::Date { millis: code == 4 },
        // Time32 in seconds or milliseconds, Time64 in micro- or nanoseconds.
        5 | 6 if (code == 5) == (unit.0 <= TimeUnit::MILLISECOND.0) => ArrowType::Time {
            unit,
            bits: if code == 5 { 32 } else { 64 },
        },
        7 => ArrowType::Timestamp { unit, timezone },
        8 => ArrowType::Duration { unit },
        _ => return None,
    })
}

fn integer_code(arrow: &ArrowType) -> (usize, TimeUnit, Option<&str>) {
    let none = TimeUnit::SECOND;
    match *arrow {
        ArrowType::Int { signed: false, .. } => (1, none, None),
        ArrowType::Bool => (2, none, None),
        ArrowType::Date { millis } => (3 + usize::from(millis), none, None),
        ArrowType::Time { unit, bits } => (5 + usize::from(bits == 64), unit, None),
        ArrowType::Timestamp { unit, ref timezone } => (7, unit, timezone.as_deref()),
        ArrowType::Duration { unit } => (8, unit, None),
        _ => (0, none, None),
    }
}

/// A dictionary's source, for js/dictionaries.js to show.
pub(super) fn dictionary_to_js(dictionary: &Dictionary) -> JsValue {
    let source = js_sys::Object::new();
    match dictionary {
        Dictionary::Text(values) => {
            let strings: js_sys::Array = values.iter().map(|v| JsValue::from_str(v)).collect();
            return strings.into();
        }
        Dictionary::Numbers(values, scalar) => {
            let code = NUMBERS.iter().position(|s| s == scalar).unwrap_or(7);
            set(&source, "type", (INTEGER_TYPES + code) as u32);
            set(&source, "values", js_sys::Float64Array::from(&values[..]));
        }
        Dictionary::Integers(values, arrow) => {
            let (code, unit, timezone) = integer_code(arrow);
            set(&source, "type", code as u32);
            set(&source, "unit", unit.0);
            set(
                &source,
                "timezone",
                timezone.map_or(JsValue::NULL, JsValue::from_str),
            );
            set(
                &source,
                "values",
                js_sys::BigInt64Array::new_from_slice(values),
            );
        }
    }
    source.into()
}

/// A dictionary from its source (`undefined` or `null` for none): its values distinct.
/// Allocated fallibly: a dictionary comes back in from JS with every table verb's columns.
pub(super) fn dictionary_from_js(source: &JsValue) -> JsResult<Option<Rc<Dictionary>>> {
    if source.is_undefined() || source.is_null() {
        return Ok(None);
    }
    match from_source(source).map_err(to_js)? {
        Some(dictionary) => Ok(Some(Rc::new(dictionary))),
        None => Err(invalid(
            "a dictionary is an array of distinct strings, numbers, bigints or booleans",
        )),
    }
}

/// A typed array's values, copied fallibly from a view of the length read (a view tracking a
/// growable buffer could grow before the copy).
macro_rules! copied {
    ($values:expr) => {{
        let len = $values.length() as usize;
        let mut copied = try_vec(len, "dictionary values")?;
        ($values.subarray(0, len as u32)).copy_to_uninit(&mut copied.spare_capacity_mut()[..len]);
        // SAFETY: copy_to_uninit initialized the first `len` elements.
        unsafe { copied.set_len(len) };
        copied
    }};
}

/// `None` where `source` is not a dictionary's.
fn from_source(source: &JsValue) -> crate::Result<Option<Dictionary>> {
    let get = |key: &str| js_sys::Reflect::get(source, &key.into()).ok();
    let Some(array) = source.dyn_ref::<js_sys::Array>() else {
        return numbers_or_integers(get);
    };
    let mut strings: Vec<Rc<str>> = try_vec(array.length() as usize, "dictionary values")?;
    for value in array.iter() {
        let Some(text) = value.as_string() else {
            return Ok(None);
        };
        strings.push(Rc::from(text));
    }
    let mut distinct = HashSet::new();
    distinct
        .try_reserve(strings.len())
        .map_err(|_| out_of_memory("a dictionary's distinct values"))?;
    let distinct = strings.iter().all(|text| distinct.insert(&**text));
    Ok(distinct.then_some(Dictionary::Text(strings)))
}

/// A dictionary of numbers or of integers (`{type, values, unit?, timezone?}`).
fn numbers_or_integers(get: impl Fn(&str) -> Option<JsValue>) -> crate::Result<Option<Dictionary>> {
    let Some(code) = get("type")
        .and_then(|c| c.as_f64())
        .filter(|c| *c >= 0.0 && c.fract() == 0.0)
    else {
        return Ok(None);
    };
    let Some(values) = get("values") else {
        return Ok(None);
    };
    let (dictionary, bits): (Dictionary, Vec<u64>) =
        match (code as usize).checked_sub(INTEGER_TYPES) {
            Some(number) => {
                let (Some(values), Some(&kind)) = (
                    values.dyn_ref::<js_sys::Float64Array>(),
                    NUMBERS.get(number),
                ) else {
                    return Ok(None);
                };
                let copied = copied!(values);
                // -0 and +0, or two NaNs, are one value: not distinct.
                let mut bits = try_vec(copied.len(), "dictionary values")?;
                bits.extend(copied.iter().map(|&v: &f64| as_kept(v).to_bits()));
                (Dictionary::Numbers(copied, kind), bits)
            }
            None => {
                let unit = TimeUnit(get("unit").and_then(|u| u.as_f64()).unwrap_or(0.0) as i16);
                if unit.0 < TimeUnit::SECOND.0 || unit.0 > TimeUnit::NANOSECOND.0 {
                    return Ok(None);
                }
                let timezone = get("timezone").unwrap_or(JsValue::NULL);
                let timezone = match timezone.is_null() || timezone.is_undefined() {
                    true => None,
                    false => match timezone.as_string() {
                        Some(zone) => Some(Rc::from(zone)),
                        None => return Ok(None),
                    },
                };
                let (Some(values), Some(arrow)) = (
                    values.dyn_ref::<js_sys::BigInt64Array>(),
                    integer_type(code as usize, unit, timezone),
                ) else {
                    return Ok(None);
                };
                let copied = copied!(values);
                // Values the type holds: booleans 0 or 1, 32-bit types' within i32.
                let holds = |v: i64| match arrow.integer_width() {
                    0 => v == 0 || v == 1,
                    4 => i32::try_from(v).is_ok(),
                    _ => true,
                };
                if !copied.iter().all(|&v| holds(v)) {
                    return Ok(None);
                }
                let mut bits = try_vec(copied.len(), "dictionary values")?;
                bits.extend(copied.iter().map(|&v: &i64| v as u64));
                (Dictionary::Integers(copied, arrow), bits)
            }
        };
    let mut distinct = HashSet::new();
    distinct
        .try_reserve(bits.len())
        .map_err(|_| out_of_memory("a dictionary's distinct values"))?;
    let distinct = bits.iter().all(|&b| distinct.insert(b));
    Ok(distinct.then_some(dictionary))
}

fn out_of_memory(what: &str) -> GpuTableError {
    GpuTableError::new(ErrorCode::OutOfMemory, format!("could not allocate {what}"))
}
