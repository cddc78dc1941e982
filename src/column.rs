//! Host-side typed column storage: rows packed, `size` lanes per row.

use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};

#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
}

/// Dispatches `$body` with `$v` bound to the typed vector of a `ColumnData`.
macro_rules! with_column_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            $crate::column::ColumnData::U8($v) => $body,
            $crate::column::ColumnData::I8($v) => $body,
            $crate::column::ColumnData::U16($v) => $body,
            $crate::column::ColumnData::I16($v) => $body,
            $crate::column::ColumnData::U32($v) => $body,
            $crate::column::ColumnData::I32($v) => $body,
            $crate::column::ColumnData::F32($v) => $body,
        }
    };
}
pub(crate) use with_column_data;

/// A stored element type and its conversions into the three 32-bit compute domains.
pub trait Elem: Copy + Default + PartialEq + Send + Sync + 'static {
    const DTYPE: DType;
    fn to_f32(self) -> f32;
    fn to_i32(self) -> i32;
    fn to_u32(self) -> u32;
    fn to_f64(self) -> f64;
    fn from_le(bytes: &[u8]) -> Self;
    fn wrap_data(v: Vec<Self>) -> ColumnData;
    /// The values of `data` if they are of this type.
    fn slice_of(data: &ColumnData) -> Option<&[Self]>;
}

macro_rules! impl_int_elem {
    ($t:ty, $variant:ident, $dtype:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $dtype;
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn to_u32(self) -> u32 {
                self as u32
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_le(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_le_bytes(raw)
            }
            fn wrap_data(v: Vec<Self>) -> ColumnData {
                ColumnData::$variant(v)
            }
            fn slice_of(data: &ColumnData) -> Option<&[Self]> {
                match data {
                    ColumnData::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
impl_int_elem!(u8, U8, DType::U8);
impl_int_elem!(i8, I8, DType::I8);
impl_int_elem!(u16, U16, DType::U16);
impl_int_elem!(i16, I16, DType::I16);
impl_int_elem!(u32, U32, DType::U32);
impl_int_elem!(i32, I32, DType::I32);

impl Elem for f32 {
    const DTYPE: DType = DType::F32;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_le(bytes: &[u8]) -> Self {
        f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }
    fn wrap_data(v: Vec<Self>) -> ColumnData {
        ColumnData::F32(v)
    }
    fn slice_of(data: &ColumnData) -> Option<&[Self]> {
        match data {
            ColumnData::F32(v) => Some(v),
            _ => None,
        }
    }
}

/// Conversion back from an f64 that holds a value of the type.
trait FromF64 {
    fn from_f64(v: f64) -> Self;
}

macro_rules! impl_from_f64 {
    ($($t:ty),*) => {$(
        impl FromF64 for $t {
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    )*};
}
impl_from_f64!(u8, i8, u16, i16, u32, i32, f32);

/// Runs `$body` with `$t` bound to the element type of a `DType`.
macro_rules! with_elem_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::U8 => {
                type $t = u8;
                $body
            }
            $crate::dtype::DType::I8 => {
                type $t = i8;
                $body
            }
            $crate::dtype::DType::U16 => {
                type $t = u16;
                $body
            }
            $crate::dtype::DType::I16 => {
                type $t = i16;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $t = u32;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $t = f32;
                $body
            }
        }
    };
}

pub(crate) use with_elem_type;

/// An empty vector with room for `len` elements, or `OUT_OF_MEMORY` naming `what` where
/// the allocation fails (an abort would kill the wasm instance).
pub fn try_vec<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        GpuTableError::new(
            ErrorCode::OutOfMemory,
            format!("could not allocate {len} values for {what}"),
        )
    })?;
    Ok(v)
}

/// `try_vec` for `len` column values of `T`.
fn reserve<T: Elem>(len: usize) -> Result<Vec<T>> {
    try_vec(len, T::DTYPE.name())
}

/// The `len` items of `iter` in a vector allocated fallibly: `OUT_OF_MEMORY`, never an abort.
pub fn try_collect<T>(len: usize, iter: impl Iterator<Item = T>) -> Result<Vec<T>> {
    let mut out = try_vec(len, "a list")?;
    out.extend(iter);
    Ok(out)
}

/// Appends the `len` items of `iter`, growing `out` fallibly like `try_collect`.
pub fn try_extend<T>(out: &mut Vec<T>, len: usize, iter: impl Iterator<Item = T>) -> Result<()> {
    try_grow(out, len)?;
    out.extend(iter);
    Ok(())
}

/// Appends `items` in one memory copy, growing `out` fallibly.
pub fn try_append<T: Copy>(out: &mut Vec<T>, items: &[T]) -> Result<()> {
    try_grow(out, items.len())?;
    out.extend_from_slice(items);
    Ok(())
}

fn try_grow<T>(out: &mut Vec<T>, more: usize) -> Result<()> {
    out.try_reserve(more).map_err(|_| {
        GpuTableError::new(
            ErrorCode::OutOfMemory,
            format!("could not allocate {more} more values"),
        )
    })
}

/// Number of elements for `rows` rows of `size` lanes, or `LIMIT_EXCEEDED` past the largest
/// allocation this build can make (`isize::MAX` bytes: 2 GiB in wasm32).
pub fn element_count(rows: u64, size: u32, dtype: DType) -> Result<usize> {
    let elements = rows.checked_mul(size as u64);
    let limit = isize::MAX as u64;
    match elements {
        Some(n) if n.saturating_mul(dtype.byte_width() as u64) <= limit => Ok(n as usize),
        _ => Err(GpuTableError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{rows} rows of {size} x {} exceed the addressable memory of this build",
                dtype.name()
            ),
        )),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub size: u32,
    /// Rows stored; a constant column stores one row that broadcasts to every row.
    pub rows: u32,
    pub data: ColumnData,
}

impl ColumnData {
    /// The values' bytes as stored, which are little-endian on the targets built for.
    #[allow(clippy::unnecessary_cast)] // the cast is needed for every type but u8
    pub fn le_bytes(&self) -> &[u8] {
        const { assert!(cfg!(target_endian = "little"), "little-endian targets only") };
        // SAFETY: every element type is a plain number, whose initialized bytes are valid u8s.
        with_column_data!(self, v => unsafe {
            std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice()))
        })
    }
    /// A copy of values `a..b`.
    pub fn slice(&self, a: usize, b: usize) -> Result<ColumnData> {
        with_column_data!(self, v => {
            let mut out = reserve(b - a)?;
            out.extend_from_slice(&v[a..b]);
            Ok(Elem::wrap_data(out))
        })
    }
    pub fn dtype(&self) -> DType {
        with_column_data!(self, v => element_dtype(v))
    }
    pub fn len(&self) -> usize {
        with_column_data!(self, v => v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empty storage with room for `len` elements, reporting allocation failure.
    pub fn with_capacity(dtype: DType, len: usize) -> Result<ColumnData> {
        with_elem_type!(dtype, T => Ok(T::wrap_data(reserve::<T>(len)?)))
    }

    /// Reads little-endian bytes (the layout of a JS typed array's buffer).
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Result<ColumnData> {
        let width = dtype.byte_width();
        if bytes.len() % width != 0 {
            return Err(GpuTableError::invalid(format!(
                "{} bytes is not a whole number of {} elements",
                bytes.len(),
                dtype.name()
            )));
        }
        with_elem_type!(dtype, T => {
            let mut values = reserve::<T>(bytes.len() / width)?;
            values.extend(bytes.chunks_exact(width).map(<T as Elem>::from_le));
            Ok(T::wrap_data(values))
        })
    }

    /// Values of `dtype` from f64s that hold values of that type (exact).
    pub fn from_f64(dtype: DType, values: &[f64]) -> Result<ColumnData> {
        with_elem_type!(dtype, T => {
            let mut out = reserve::<T>(values.len())?;
            out.extend(values.iter().map(|&v| <T as FromF64>::from_f64(v)));
            Ok(T::wrap_data(out))
        })
    }

    /// Appends `other`'s values (of the same type; the caller checked it and reserved room).
    pub(crate) fn extend_from(&mut self, other: &ColumnData) {
        match (self, other) {
            (ColumnData::U8(a), ColumnData::U8(b)) => a.extend_from_slice(b),
            (ColumnData::I8(a), ColumnData::I8(b)) => a.extend_from_slice(b),
            (ColumnData::U16(a), ColumnData::U16(b)) => a.extend_from_slice(b),
            (ColumnData::I16(a), ColumnData::I16(b)) => a.extend_from_slice(b),
            (ColumnData::U32(a), ColumnData::U32(b)) => a.extend_from_slice(b),
            (ColumnData::I32(a), ColumnData::I32(b)) => a.extend_from_slice(b),
            (ColumnData::F32(a), ColumnData::F32(b)) => a.extend_from_slice(b),
            _ => unreachable!("callers check the types"),
        }
    }

    /// Element `i` as f64 (exact for every stored type).
    pub fn get_f64(&self, i: usize) -> f64 {
        with_column_data!(self, v => v[i].to_f64())
    }
}

fn element_dtype<T: Elem>(_: &[T]) -> DType {
    T::DTYPE
}

impl Column {
    pub fn new(data: ColumnData, size: u32) -> Result<Column> {
        if size == 0 {
            return Err(GpuTableError::invalid("size must be at least 1"));
        }
        if data.len() % size as usize != 0 {
            return Err(GpuTableError::invalid(format!(
                "{} values is not a whole number of rows of size {size}",
                data.len()
            )));
        }
        let rows = data.len() / size as usize;
        let rows = u32::try_from(rows).map_err(|_| {
            GpuTableError::new(
                ErrorCode::LimitExceeded,
                format!("{rows} rows exceed the 2^32-1 row limit"),
            )
        })?;
        Ok(Column { size, rows, data })
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// No rows yet, `size` lanes per row.
    pub fn empty(dtype: DType, size: u32) -> Result<Column> {
        Ok(Column {
            size: size.max(1),
            rows: 0,
            data: ColumnData::with_capacity(dtype, 0)?,
        })
    }

    /// Room for `rows` more rows, reporting allocation failure.
    pub fn reserve_rows(&mut self, rows: u32) -> Result<()> {
        let extra = element_count(rows as u64, self.size, self.dtype())?;
        with_column_data!(&mut self.data, v => v.try_reserve_exact(extra).map_err(|_| {
            GpuTableError::new(
                ErrorCode::OutOfMemory,
                format!("could not allocate {rows} rows of {} x {}", self.size, self.dtype().name()),
            )
        }))
    }

    /// Appends packed rows of the same type.
    pub fn append(&mut self, data: &ColumnData) -> Result<()> {
        if data.dtype() != self.dtype() || data.len() % self.size as usize != 0 {
            return Err(GpuTableError::new(
                ErrorCode::Internal,
                format!(
                    "cannot append {} {} values to rows of {} x {}",
                    data.len(),
                    data.dtype().name(),
                    self.size,
                    self.dtype().name()
                ),
            ));
        }
        let rows = (data.len() / self.size as usize) as u32;
        self.reserve_rows(rows)?;
        self.data.extend_from(data);
        self.rows += rows;
        Ok(())
    }

    /// Appends `rows` rows of zeros.
    pub fn append_zero_rows(&mut self, rows: u32) -> Result<()> {
        self.reserve_rows(rows)?;
        let len = self.data.len() + rows as usize * self.size as usize;
        with_column_data!(&mut self.data, v => v.resize(len, Default::default()));
        self.rows += rows;
        Ok(())
    }

    /// Packed values of rows `start..end` (clamped to the stored rows).
    pub fn slice_rows(&self, start: u32, end: u32) -> Result<ColumnData> {
        let end = end.min(self.rows);
        let start = start.min(end);
        let (a, b) = (
            start as usize * self.size as usize,
            end as usize * self.size as usize,
        );
        self.data.slice(a, b)
    }
}
