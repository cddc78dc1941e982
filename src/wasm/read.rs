//! Reads into JS typed arrays a piece at a time: the wasm heap holds at most one piece, so a
//! read larger than the heap works, and a typed array the JS engine cannot allocate is
//! `OUT_OF_MEMORY`.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::{to_js, JsResult};
use crate::column::ColumnData;
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError};
use std::rc::Rc;

use crate::value::{Output, Value};

fn constructor_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "Uint8Array",
        DType::I8 => "Int8Array",
        DType::U16 => "Uint16Array",
        DType::I16 => "Int16Array",
        DType::U32 => "Uint32Array",
        DType::I32 => "Int32Array",
        DType::F32 => "Float32Array",
    }
}

/// A new typed array of `len` zeros of `dtype`.
pub fn new_typed_array(dtype: DType, len: u64) -> JsResult<JsValue> {
    let name = constructor_name(dtype);
    let constructor = js_sys::Reflect::get(&js_sys::global(), &name.into())?;
    let constructor = constructor.dyn_into::<js_sys::Function>().map_err(|_| {
        to_js(GpuTableError::new(
            ErrorCode::Internal,
            format!("no {name}"),
        ))
    })?;
    let args = js_sys::Array::of1(&JsValue::from_f64(len as f64));
    js_sys::Reflect::construct(&constructor, &args).map_err(|e| {
        to_js(GpuTableError::new(
            ErrorCode::OutOfMemory,
            format!(
                "could not allocate a {name} of {len} values: {}",
                e.as_string().unwrap_or_else(|| format!("{e:?}"))
            ),
        ))
    })
}

/// Copies `data` into `target` (a typed array of the same type) at element `at`.
fn set_piece(target: &JsValue, data: &ColumnData, at: u64) -> crate::Result<()> {
    macro_rules! set {
        ($js:ty, $values:expr) => {{
            let typed = target.unchecked_ref::<$js>();
            // SAFETY: the view is used at once, before anything can grow the wasm memory.
            let view = unsafe { <$js>::view($values) };
            typed.set(&view, at as u32);
        }};
    }
    match data {
        ColumnData::U8(v) => set!(js_sys::Uint8Array, v),
        ColumnData::I8(v) => set!(js_sys::Int8Array, v),
        ColumnData::U16(v) => set!(js_sys::Uint16Array, v),
        ColumnData::I16(v) => set!(js_sys::Int16Array, v),
        ColumnData::U32(v) => set!(js_sys::Uint32Array, v),
        ColumnData::I32(v) => set!(js_sys::Int32Array, v),
        ColumnData::F32(v) => set!(js_sys::Float32Array, v),
    }
    Ok(())
}

/// Rows `start..end` of `output` (over its chunks) as a new typed array of `dtype`.
pub async fn into_typed_array(
    output: &Output,
    dtype: DType,
    size: u32,
    start: u32,
    end: u32,
) -> JsResult<JsValue> {
    let pieces = output.pieces(start as u64, end as u64);
    pieces_into_typed_array(pieces, dtype, size).await
}

/// The rows `lo..hi` of each stored value in `pieces`, in order, as one new typed array.
pub async fn pieces_into_typed_array(
    pieces: Vec<(Rc<Value>, u32, u32)>,
    dtype: DType,
    size: u32,
) -> JsResult<JsValue> {
    let size = size as u64;
    let rows: u64 = pieces.iter().map(|(_, lo, hi)| (hi - lo) as u64).sum();
    let array = new_typed_array(dtype, rows * size)?;
    // Where each piece's rows go in the array: its first row's place, less the row offset
    // within the value the read reports.
    let mut at = 0u64;
    for (value, lo, hi) in pieces {
        let base = lo as u64 * size;
        crate::engine::read_value(&value, lo, hi, &mut |first, data| {
            set_piece(&array, &data, at + first - base)
        })
        .await
        .map_err(to_js)?;
        at += (hi - lo) as u64 * size;
    }
    Ok(array)
}
