//! Host columns as device words and back: both wgpu backends store every value as a 32-bit
//! little-endian word (WGSL has no 8/16-bit storage, WebGL2 textures 32-bit channels), so
//! 8- and 16-bit types are widened on upload and narrowed on readback.

use std::borrow::Cow;

use crate::column::{try_vec, Column, ColumnData, Elem};
use crate::dtype::DType;
use crate::error::Result;

/// A column as device words (little-endian 32-bit values, 8/16-bit types widened).
pub fn device_words(column: &Column) -> Result<Cow<'_, [u8]>> {
    fn widen<T: Elem>(values: &[T], to_word: impl Fn(T) -> u32) -> Result<Cow<'_, [u8]>> {
        let mut bytes = try_vec(values.len() * 4, "widening an upload")?;
        bytes.extend(values.iter().flat_map(|v| to_word(*v).to_le_bytes()));
        Ok(Cow::Owned(bytes))
    }
    match &column.data {
        ColumnData::U8(v) => widen(v, |x| x as u32),
        ColumnData::U16(v) => widen(v, |x| x as u32),
        ColumnData::I8(v) => widen(v, |x| x as i32 as u32),
        ColumnData::I16(v) => widen(v, |x| x as i32 as u32),
        // 32-bit columns already have the device layout: borrowed, not copied.
        ColumnData::U32(_) | ColumnData::I32(_) | ColumnData::F32(_) => {
            Ok(Cow::Borrowed(column.data.le_bytes()))
        }
    }
}

/// Device words (little-endian u32) as host values of `dtype`, narrowing 8/16-bit types.
pub fn decode(bytes: &[u8], dtype: DType) -> Result<ColumnData> {
    fn each<T>(bytes: &[u8], f: impl Fn(u32) -> T) -> Result<Vec<T>> {
        let mut out = try_vec(bytes.len() / 4, "a readback")?;
        out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        );
        Ok(out)
    }
    Ok(match dtype {
        DType::U8 => ColumnData::U8(each(bytes, |w| w as u8)?),
        DType::U16 => ColumnData::U16(each(bytes, |w| w as u16)?),
        DType::I8 => ColumnData::I8(each(bytes, |w| w as i8)?),
        DType::I16 => ColumnData::I16(each(bytes, |w| w as i16)?),
        DType::U32 => ColumnData::U32(each(bytes, |w| w)?),
        DType::I32 => ColumnData::I32(each(bytes, |w| w as i32)?),
        DType::F32 => ColumnData::F32(each(bytes, f32::from_bits)?),
    })
}
