//! The three 32-bit compute domains and their arithmetic, as the GPU backends define it.

use crate::column::{try_collect, ColumnData, Elem};
use crate::dtype::{Class, DType};
use crate::error::{ErrorCode, GpuTableError, Result};

/// Block buffers, one compute domain each.
pub enum Buf {
    F(Vec<f32>),
    I(Vec<i32>),
    U(Vec<u32>),
}

impl Buf {
    pub fn new(class: Class, len: usize) -> Buf {
        match class {
            Class::F => Buf::F(vec![0.0; len]),
            Class::I => Buf::I(vec![0; len]),
            Class::U => Buf::U(vec![0; len]),
        }
    }
    /// `Buf::new` that reports an allocation failure instead of aborting the instance.
    pub fn try_new(class: Class, len: usize) -> Result<Buf> {
        fn filled<T: Clone + Default>(len: usize) -> Result<Vec<T>> {
            try_collect(len, std::iter::repeat_n(T::default(), len))
        }
        Ok(match class {
            Class::F => Buf::F(filled(len)?),
            Class::I => Buf::I(filled(len)?),
            Class::U => Buf::U(filled(len)?),
        })
    }

    /// A buffer of `values` (few: a reduction's lanes).
    pub fn collect<T: Lane>(values: impl IntoIterator<Item = T>) -> Result<Buf> {
        let mut buf = Buf::try_new(T::CLASS, 0)?;
        T::of_mut(&mut buf).extend(values);
        Ok(buf)
    }

    pub fn class(&self) -> Class {
        match self {
            Buf::F(_) => Class::F,
            Buf::I(_) => Class::I,
            Buf::U(_) => Class::U,
        }
    }
}

/// A stored element type and the lane type of its compute class: kernels whose output has
/// their input's class are instantiated per stored type, not per stored type and class.
pub trait Stored: Elem {
    type Lane: Lane;
}

macro_rules! stored {
    ($($t:ty => $lane:ty),*) => {
        $(impl Stored for $t {
            type Lane = $lane;
        })*
    };
}
stored!(u8 => u32, u16 => u32, u32 => u32, i8 => i32, i16 => i32, i32 => i32, f32 => f32);

/// `dst` as lanes of `U`, which the IR guarantees is `T`'s class (one type per class).
pub fn same_class<U: Lane, T: Lane>(dst: &mut [T]) -> Result<&mut [U]> {
    if std::any::TypeId::of::<U>() != std::any::TypeId::of::<T>() {
        return Err(GpuTableError::new(
            ErrorCode::Internal,
            format!("a {:?} block written as {:?}", T::CLASS, U::CLASS),
        ));
    }
    // U and T are the same type.
    Ok(unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut U, dst.len()) })
}

pub trait Lane: Elem + PartialOrd {
    const CLASS: Class;
    fn from_elem<E: Elem>(e: E) -> Self;
    fn of(buf: &Buf) -> &[Self];
    fn of_mut(buf: &mut Buf) -> &mut Vec<Self>;
    /// The output vector of a 32-bit column of this class.
    fn of_column(data: &mut ColumnData) -> Option<&mut Vec<Self>>;
    /// The values of a 32-bit column of this class.
    fn of_data(data: &ColumnData) -> Option<&[Self]>;
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    fn div(self, b: Self) -> Self;
    fn abs(self) -> Self;
    /// The smaller value; NaN if either is (as `Math.min`, -0 below +0).
    fn minimum(self, b: Self) -> Self;
    fn maximum(self, b: Self) -> Self;
    /// The remainder with `b`'s sign (Python's `%`): integers by 0 give 0, floats NaN.
    fn modulo(self, b: Self) -> Self;
    /// -1, 0 or 1 (NaN stays NaN; -0 gives +0, as NumPy's `sign`).
    fn sign(self) -> Self;
    fn is_nonzero(self) -> bool;
    /// `v` if it is below the running minimum; a NaN `v` never is, so NaN is ignored.
    #[inline(always)]
    fn fold_min(self, v: Self) -> Self {
        if v < self {
            v
        } else {
            self
        }
    }
    #[inline(always)]
    fn fold_max(self, v: Self) -> Self {
        if v > self {
            v
        } else {
            self
        }
    }
    /// This value as a row index below `rows`, if it is one (an integral, in-range value).
    fn as_row(self, rows: usize) -> Option<usize>;
    /// Starting values of a min/max fold: every value replaces them.
    const MIN_IDENTITY: Self;
    const MAX_IDENTITY: Self;
    /// Wraps a 32-bit result to a narrower integer type of the same signedness.
    fn narrow(self, dtype: DType) -> Self;
}

macro_rules! int_lane {
    ($t:ty, $class:ident, $variant:ident, $col:ident) => {
        impl Lane for $t {
            const CLASS: Class = Class::$class;
            const MIN_IDENTITY: Self = <$t>::MAX;
            const MAX_IDENTITY: Self = <$t>::MIN;
            #[inline(always)]
            fn from_elem<E: Elem>(e: E) -> Self {
                int_lane!(@conv $class, e)
            }
            fn of(buf: &Buf) -> &[Self] {
                match buf {
                    Buf::$variant(v) => v,
                    _ => unreachable!("buffer class is checked by the caller"),
                }
            }
            fn of_mut(buf: &mut Buf) -> &mut Vec<Self> {
                match buf {
                    Buf::$variant(v) => v,
                    _ => unreachable!("buffer class is checked by the caller"),
                }
            }
            fn of_column(data: &mut ColumnData) -> Option<&mut Vec<Self>> {
                match data {
                    ColumnData::$col(v) => Some(v),
                    _ => None,
                }
            }
            fn of_data(data: &ColumnData) -> Option<&[Self]> {
                match data {
                    ColumnData::$col(v) => Some(v),
                    _ => None,
                }
            }
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self.wrapping_sub(b)
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self.wrapping_mul(b)
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                // Integer division by zero is 0 on every backend (WGSL would return `a`).
                if b == 0 {
                    0
                } else {
                    self.wrapping_div(b)
                }
            }
            #[inline(always)]
            fn abs(self) -> Self {
                int_lane!(@abs $class, self)
            }
            #[inline(always)]
            fn minimum(self, b: Self) -> Self {
                Ord::min(self, b)
            }
            #[inline(always)]
            fn maximum(self, b: Self) -> Self {
                Ord::max(self, b)
            }
            #[inline(always)]
            fn modulo(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                int_lane!(@mod $class, self, b)
            }
            #[inline(always)]
            fn sign(self) -> Self {
                int_lane!(@sign $class, self)
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self != 0
            }
            #[inline(always)]
            fn as_row(self, rows: usize) -> Option<usize> {
                // Negative i32 ids wrap to huge values and fail the bound, as intended.
                let r = self as u32 as usize;
                (self >= 0 as $t && r < rows).then_some(r)
            }
            #[inline(always)]
            fn narrow(self, dtype: DType) -> Self {
                match dtype {
                    DType::U8 | DType::I8 => self as i8 as i32 as Self & int_lane!(@mask8 $class),
                    DType::U16 | DType::I16 => self as i16 as i32 as Self & int_lane!(@mask16 $class),
                    _ => self,
                }
            }
        }
    };
    (@conv I, $e:expr) => { $e.to_i32() };
    (@conv U, $e:expr) => { $e.to_u32() };
    (@abs I, $v:expr) => { $v.wrapping_abs() };
    (@abs U, $v:expr) => { $v };
    (@sign I, $v:expr) => { $v.signum() };
    // A remainder whose sign differs from the divisor's moves by one divisor.
    (@mod I, $a:expr, $b:expr) => {{
        let r = $a.wrapping_rem($b);
        if r != 0 && ((r < 0) != ($b < 0)) { r.wrapping_add($b) } else { r }
    }};
    (@mod U, $a:expr, $b:expr) => { $a % $b };
    (@sign U, $v:expr) => { $v.min(1) };
    (@mask8 I) => { -1 };
    (@mask8 U) => { 0xFF };
    (@mask16 I) => { -1 };
    (@mask16 U) => { 0xFFFF };
}
int_lane!(i32, I, I, I32);
int_lane!(u32, U, U, U32);

impl Lane for f32 {
    const CLASS: Class = Class::F;
    const MIN_IDENTITY: Self = f32::INFINITY;
    const MAX_IDENTITY: Self = f32::NEG_INFINITY;
    #[inline(always)]
    fn from_elem<E: Elem>(e: E) -> Self {
        e.to_f32()
    }
    fn of(buf: &Buf) -> &[Self] {
        match buf {
            Buf::F(v) => v,
            _ => unreachable!("buffer class is checked by the caller"),
        }
    }
    fn of_mut(buf: &mut Buf) -> &mut Vec<Self> {
        match buf {
            Buf::F(v) => v,
            _ => unreachable!("buffer class is checked by the caller"),
        }
    }
    fn of_column(data: &mut ColumnData) -> Option<&mut Vec<Self>> {
        match data {
            ColumnData::F32(v) => Some(v),
            _ => None,
        }
    }
    fn of_data(data: &ColumnData) -> Option<&[Self]> {
        match data {
            ColumnData::F32(v) => Some(v),
            _ => None,
        }
    }
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        self + b
    }
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        self - b
    }
    #[inline(always)]
    fn mul(self, b: Self) -> Self {
        self * b
    }
    #[inline(always)]
    fn div(self, b: Self) -> Self {
        self / b
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.abs()
    }
    #[inline(always)]
    fn minimum(self, b: Self) -> Self {
        match (self.is_nan() || b.is_nan(), self.partial_cmp(&b)) {
            (true, _) => f32::NAN,
            (_, Some(std::cmp::Ordering::Less)) => self,
            (_, Some(std::cmp::Ordering::Greater)) => b,
            // Equal: -0 and +0 give -0.
            _ => f32::from_bits(self.to_bits() | b.to_bits()),
        }
    }
    #[inline(always)]
    fn maximum(self, b: Self) -> Self {
        match (self.is_nan() || b.is_nan(), self.partial_cmp(&b)) {
            (true, _) => f32::NAN,
            (_, Some(std::cmp::Ordering::Less)) => b,
            (_, Some(std::cmp::Ordering::Greater)) => self,
            _ => f32::from_bits(self.to_bits() & b.to_bits()),
        }
    }
    #[inline(always)]
    fn modulo(self, b: Self) -> Self {
        // NumPy's npy_divmod: fmod (exact), moved by one divisor to take b's sign; a zero
        // remainder takes b's sign too.
        let r = self % b;
        if r == 0.0 {
            0.0f32.copysign(b)
        } else if (r < 0.0) != (b < 0.0) {
            r + b
        } else {
            r
        }
    }
    #[inline(always)]
    fn sign(self) -> Self {
        if self > 0.0 {
            1.0
        } else if self < 0.0 {
            -1.0
        } else if self == 0.0 {
            0.0
        } else {
            self
        }
    }
    #[inline(always)]
    fn is_nonzero(self) -> bool {
        self != 0.0
    }
    #[inline(always)]
    fn as_row(self, rows: usize) -> Option<usize> {
        (self >= 0.0 && (self as f64) < rows as f64 && self.fract() == 0.0).then_some(self as usize)
    }
    #[inline(always)]
    fn narrow(self, _: DType) -> Self {
        self
    }
}
