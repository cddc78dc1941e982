//! Predicates (api.md's "Predicates and more elementwise ops"): comparisons, logic and
//! float tests, each a `uint8` 1 or 0 per lane. Unlike arithmetic, a predicate reads every
//! input in its own type, so values compare exactly across types.

use super::ops::{binary, elementwise};
use super::{BinaryOp, NodeRef, Op};
use crate::dtype::DType;
use crate::error::{GpuTableError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Predicate {
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    And,
    Or,
    Xor,
    Not,
    IsNaN,
    IsFinite,
}

impl Predicate {
    pub const COMPARISONS: [Predicate; 6] = [
        Predicate::Equal,
        Predicate::NotEqual,
        Predicate::Less,
        Predicate::LessEqual,
        Predicate::Greater,
        Predicate::GreaterEqual,
    ];

    pub fn parse(name: &str) -> Result<Predicate> {
        Ok(match name {
            "equal" => Predicate::Equal,
            "notEqual" => Predicate::NotEqual,
            "less" => Predicate::Less,
            "lessEqual" => Predicate::LessEqual,
            "greater" => Predicate::Greater,
            "greaterEqual" => Predicate::GreaterEqual,
            "and" => Predicate::And,
            "or" => Predicate::Or,
            "xor" => Predicate::Xor,
            "not" => Predicate::Not,
            "isNaN" => Predicate::IsNaN,
            "isFinite" => Predicate::IsFinite,
            _ => {
                return Err(GpuTableError::invalid(format!(
                    "unknown predicate '{name}'"
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Predicate::Equal => "equal",
            Predicate::NotEqual => "notEqual",
            Predicate::Less => "less",
            Predicate::LessEqual => "lessEqual",
            Predicate::Greater => "greater",
            Predicate::GreaterEqual => "greaterEqual",
            Predicate::And => "and",
            Predicate::Or => "or",
            Predicate::Xor => "xor",
            Predicate::Not => "not",
            Predicate::IsNaN => "isNaN",
            Predicate::IsFinite => "isFinite",
        }
    }

    /// The inputs the predicate reads.
    pub fn arity(self) -> usize {
        match self {
            Predicate::Not | Predicate::IsNaN | Predicate::IsFinite => 1,
            _ => 2,
        }
    }

    /// Whether it combines the truth of two inputs.
    pub fn is_logic(self) -> bool {
        matches!(self, Predicate::And | Predicate::Or | Predicate::Xor)
    }

    /// A two-input predicate's answer (1 or 0) per code: for a comparison, the order of its
    /// inputs (0 less, 1 equal, 2 greater, 3 unordered: a NaN); for logic, 2 x the first
    /// input's truth + the second's.
    pub fn table(self) -> [u32; 4] {
        match self {
            Predicate::Equal => [0, 1, 0, 0],
            Predicate::NotEqual => [1, 0, 1, 1],
            Predicate::Less => [1, 0, 0, 0],
            Predicate::LessEqual => [1, 1, 0, 0],
            Predicate::Greater => [0, 0, 1, 0],
            Predicate::GreaterEqual => [0, 1, 1, 0],
            Predicate::And => [0, 0, 0, 1],
            Predicate::Or => [0, 1, 1, 1],
            Predicate::Xor => [0, 1, 1, 0],
            Predicate::Not | Predicate::IsNaN | Predicate::IsFinite => [0; 4],
        }
    }
}

/// `predicate` of `inputs` (as many as it reads), with arithmetic's size, length and
/// broadcast rules.
pub fn predicate(predicate: Predicate, inputs: &[NodeRef]) -> Result<NodeRef> {
    if inputs.len() != predicate.arity() {
        return Err(GpuTableError::invalid(format!(
            "{} takes {} argument(s), got {}",
            predicate.name(),
            predicate.arity(),
            inputs.len()
        )));
    }
    let size = inputs.iter().map(|n| n.meta.size).max().unwrap_or(1);
    elementwise(Op::Predicate(predicate), inputs.to_vec(), DType::U8, size)
}

/// `and`, `or` or `xor` folded left to right over at least one argument (one argument is
/// its truth, as a mask).
pub fn fold_logic(logic: Predicate, args: &[NodeRef]) -> Result<NodeRef> {
    if !logic.is_logic() {
        return Err(GpuTableError::invalid(format!(
            "{} does not fold",
            logic.name()
        )));
    }
    let (first, rest) = args.split_first().ok_or_else(|| {
        GpuTableError::invalid(format!("{} needs at least one argument", logic.name()))
    })?;
    first.check_alive()?;
    if rest.is_empty() {
        let not = predicate(Predicate::Not, std::slice::from_ref(first))?;
        return predicate(Predicate::Not, &[not]);
    }
    rest.iter().try_fold(first.clone(), |acc, next| {
        predicate(logic, &[acc, next.clone()])
    })
}

/// `minimum(maximum(x, lo), hi)`.
pub fn clamp(x: &NodeRef, lo: &NodeRef, hi: &NodeRef) -> Result<NodeRef> {
    binary(BinaryOp::Minimum, &binary(BinaryOp::Maximum, x, lo)?, hi)
}
