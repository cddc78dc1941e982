//! Helpers shared by the native test suites.
#![allow(dead_code)]

use gputable::column::ColumnData;
use gputable::evaluator::read_value;
use gputable::ir::{self, NodeRef};
use gputable::{DType, ErrorCode, Result};

pub fn f32s(values: &[f32], size: u32) -> NodeRef {
    ir::source(ColumnData::F32(values.to_vec()), size, false).unwrap()
}
pub fn u32s(values: &[u32], size: u32) -> NodeRef {
    ir::source(ColumnData::U32(values.to_vec()), size, false).unwrap()
}
pub fn i32s(values: &[i32], size: u32) -> NodeRef {
    ir::source(ColumnData::I32(values.to_vec()), size, false).unwrap()
}
pub fn u8s(values: &[u8], size: u32) -> NodeRef {
    ir::source(ColumnData::U8(values.to_vec()), size, false).unwrap()
}
pub fn i8s(values: &[i8], size: u32) -> NodeRef {
    ir::source(ColumnData::I8(values.to_vec()), size, false).unwrap()
}
/// A float32 literal row, as JavaScript number literals become.
pub fn lit(values: &[f32]) -> NodeRef {
    ir::source(ColumnData::F32(values.to_vec()), values.len() as u32, true).unwrap()
}
pub fn konst(data: ColumnData) -> NodeRef {
    let size = data.len() as u32;
    ir::source(data, size, true).unwrap()
}
pub fn f64_words(values: &[f64], size: u32) -> NodeRef {
    let words: Vec<u32> = values
        .iter()
        .flat_map(|v| {
            let bits = v.to_bits();
            [bits as u32, (bits >> 32) as u32]
        })
        .collect();
    ir::source(ColumnData::U32(words), size * 2, false).unwrap()
}

pub fn read(node: &NodeRef) -> ColumnData {
    read_value(node, None, None).unwrap()
}
pub fn read_f32(node: &NodeRef) -> Vec<f32> {
    match read(node) {
        ColumnData::F32(v) => v,
        other => panic!("expected float32, got {:?}", other.dtype()),
    }
}
pub fn read_u32(node: &NodeRef) -> Vec<u32> {
    match read(node) {
        ColumnData::U32(v) => v,
        other => panic!("expected uint32, got {:?}", other.dtype()),
    }
}
pub fn read_i32(node: &NodeRef) -> Vec<i32> {
    match read(node) {
        ColumnData::I32(v) => v,
        other => panic!("expected sint32, got {:?}", other.dtype()),
    }
}
pub fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code
}
pub fn meta(node: &NodeRef) -> (DType, u32, u32, bool) {
    (
        node.meta.dtype,
        node.meta.size,
        node.meta.length,
        node.meta.constant,
    )
}

/// Bitwise equality that treats every NaN as equal.
pub fn same_f32(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

pub fn assert_close(actual: &[f32], expected: &[f64], rel: f64) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "lengths differ: {actual:?} vs {expected:?}"
    );
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let (a, e) = (*a as f64, *e);
        if e.is_nan() {
            assert!(a.is_nan(), "element {i}: expected NaN, got {a}");
        } else if e.is_infinite() {
            assert_eq!(a, e, "element {i}");
        } else {
            let tolerance = rel * e.abs().max(f32::MIN_POSITIVE as f64);
            assert!(
                (a - e).abs() <= tolerance,
                "element {i}: {a} vs {e} (rel {rel})"
            );
        }
    }
}

/// Small deterministic PRNG (xorshift64*), so tests need no extra crates.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn f32(&mut self) -> f32 {
        (self.below(2001) as f32 - 1000.0) / 8.0
    }
}
