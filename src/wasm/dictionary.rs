//! Dictionaries between Rust and JS (api.md "Tables"), as their source: an array of strings,
//! or `{type, unit, timezone, values}` for numbers (a `Float64Array`) and for the integers
//! Arrow stores of 64-bit integers, booleans and temporal types (a `BigInt64Array`), with the
//! Arrow type they are written back as. js/dictionaries.js shows them as apache-arrow
//! decodes them, and hands a verb's result the same source back.

use std::collections::HashSet;
use std::rc::Rc;

use arrow_ipc::TimeUnit;
use wasm_bindgen::prelude::*;

use super::{invalid, set, JsResult};
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
pub(super) fn dictionary_from_js(source: &JsValue) -> JsResult<Option<Rc<Dictionary>>> {
    if source.is_undefined() || source.is_null() {
        return Ok(None);
    }
    match from_source(source) {
        Some(dictionary) => Ok(Some(Rc::new(dictionary))),
        None => Err(invalid(
            "a dictionary is an array of distinct strings, numbers, bigints or booleans",
        )),
    }
}

fn from_source(source: &JsValue) -> Option<Dictionary> {
    let get = |key: &str| js_sys::Reflect::get(source, &key.into()).ok();
    let (dictionary, bits): (Dictionary, Vec<u64>) = match source.dyn_ref::<js_sys::Array>() {
        Some(array) => {
            let strings: Vec<String> =
                array.iter().map(|v| v.as_string()).collect::<Option<_>>()?;
            let distinct = strings.iter().map(|v| &**v).collect::<HashSet<&str>>();
            if distinct.len() != strings.len() {
                return None;
            }
            return Some(Dictionary::Text(
                strings.into_iter().map(Rc::from).collect(),
            ));
        }
        None => {
            let code = get("type")?
                .as_f64()
                .filter(|c| *c >= 0.0 && c.fract() == 0.0)? as usize;
            let values = get("values")?;
            match code.checked_sub(INTEGER_TYPES) {
                Some(number) => {
                    let values = values.dyn_into::<js_sys::Float64Array>().ok()?.to_vec();
                    // -0 and +0, or two NaNs, are one value: not distinct.
                    let bits = values.iter().map(|&v| as_kept(v).to_bits()).collect();
                    (Dictionary::Numbers(values, *NUMBERS.get(number)?), bits)
                }
                None => {
                    let unit = TimeUnit(get("unit")?.as_f64().unwrap_or(0.0) as i16);
                    if unit.0 < TimeUnit::SECOND.0 || unit.0 > TimeUnit::NANOSECOND.0 {
                        return None;
                    }
                    let timezone = get("timezone")?;
                    let timezone = match timezone.is_null() || timezone.is_undefined() {
                        true => None,
                        false => Some(Rc::from(timezone.as_string()?)),
                    };
                    let values = values.dyn_into::<js_sys::BigInt64Array>().ok()?.to_vec();
                    let bits = values.iter().map(|&v| v as u64).collect();
                    let arrow = integer_type(code, unit, timezone)?;
                    // Values the type holds: booleans 0 or 1, 32-bit types' within i32.
                    let holds = |v: i64| match arrow.integer_width() {
                        0 => v == 0 || v == 1,
                        4 => i32::try_from(v).is_ok(),
                        _ => true,
                    };
                    if !values.iter().all(|&v| holds(v)) {
                        return None;
                    }
                    (Dictionary::Integers(values, arrow), bits)
                }
            }
        }
    };
    let distinct = bits.iter().copied().collect::<HashSet<u64>>();
    (distinct.len() == bits.len()).then_some(dictionary)
}
