//! Element types and the type deduction rules of `api.md`.

use crate::error::{GpuTableError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
}

/// The 32-bit domain an element is computed in: every integer op wraps as 32-bit two's
/// complement and is narrowed to the node's type afterwards, exactly as a GPU would do it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    F,
    I,
    U,
}

impl DType {
    pub const ALL: [DType; 7] = [
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::F32,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::I8 => "sint8",
            DType::U16 => "uint16",
            DType::I16 => "sint16",
            DType::U32 => "uint32",
            DType::I32 => "sint32",
            DType::F32 => "float32",
        }
    }

    pub fn parse(name: &str) -> Result<DType> {
        DType::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| {
                GpuTableError::invalid(format!(
                    "unknown type '{name}'; expected one of uint8 sint8 uint16 sint16 uint32 sint32 float32"
                ))
            })
    }

    pub fn bits(self) -> u32 {
        match self {
            DType::U8 | DType::I8 => 8,
            DType::U16 | DType::I16 => 16,
            _ => 32,
        }
    }

    pub fn byte_width(self) -> usize {
        (self.bits() / 8) as usize
    }

    pub fn class(self) -> Class {
        match self {
            DType::F32 => Class::F,
            DType::I8 | DType::I16 | DType::I32 => Class::I,
            _ => Class::U,
        }
    }

    /// The integers an integer type holds, as `(lowest, highest + 1)`: both exact in f32.
    pub fn int_bounds(self) -> (f64, f64) {
        match self {
            DType::U8 => (0.0, 256.0),
            DType::I8 => (-128.0, 128.0),
            DType::U16 => (0.0, 65536.0),
            DType::I16 => (-32768.0, 32768.0),
            DType::U32 => (0.0, 4294967296.0),
            DType::I32 | DType::F32 => (-2147483648.0, 2147483648.0),
        }
    }

    pub fn is_float(self) -> bool {
        self == DType::F32
    }

    /// The type that represents every input: float wins; unsigned only gives `uint{max}`;
    /// signed with unsigned narrower than 32 bits gives `sint{max(s, 2u)}`; else float32.
    pub fn join(types: impl IntoIterator<Item = DType>) -> DType {
        let (mut unsigned_bits, mut signed_bits) = (0, 0);
        for t in types {
            match t.class() {
                Class::F => return DType::F32,
                Class::U => unsigned_bits = unsigned_bits.max(t.bits()),
                Class::I => signed_bits = signed_bits.max(t.bits()),
            }
        }
        match (unsigned_bits, signed_bits) {
            (0, 0) => DType::F32,
            (u, 0) => Self::with_bits(Class::U, u),
            (u, s) if u < 32 => Self::with_bits(Class::I, s.max(u * 2)),
            _ => DType::F32,
        }
    }

    fn with_bits(class: Class, bits: u32) -> DType {
        match (class, bits) {
            (Class::U, 8) => DType::U8,
            (Class::U, 16) => DType::U16,
            (Class::U, _) => DType::U32,
            (Class::I, 8) => DType::I8,
            (Class::I, 16) => DType::I16,
            (Class::I, _) => DType::I32,
            (Class::F, _) => DType::F32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DType::*;
    use super::*;

    #[test]
    fn join_follows_the_deduction_rules() {
        assert_eq!(DType::join([U8, U16]), U16);
        assert_eq!(DType::join([U8, U32]), U32);
        assert_eq!(DType::join([I8, U8]), I16);
        assert_eq!(DType::join([I8, U16]), I32);
        assert_eq!(DType::join([I32, U16]), I32);
        assert_eq!(DType::join([I16, I8]), I16);
        assert_eq!(DType::join([I8, U32]), F32);
        assert_eq!(DType::join([U8, F32]), F32);
        assert_eq!(DType::join([I32]), I32);
    }

    #[test]
    fn names_round_trip_and_unknown_names_fail() {
        for t in DType::ALL {
            assert_eq!(DType::parse(t.name()).unwrap(), t);
        }
        assert_eq!(
            DType::parse("float64").unwrap_err().code,
            crate::error::ErrorCode::InvalidArgument
        );
    }
}
