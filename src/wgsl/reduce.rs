//! The one reduction path of the GPU backends: a reduction is a per-lane `State` with an
//! identity, a step that adds one value, a combine of two states (partials of different
//! rows, in any tree order) and the output values it finalizes to. Kernels fold rows into
//! partial states, combine partials, and finalize; only these functions differ per op.

use crate::dtype::Class;
use crate::ir::{Node, Op};
use crate::wgsl::wgsl_type;

/// What a reduction computes per lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `[min, max]`, NaN ignored; a lane with only NaN gives NaN.
    Extent,
}

impl ReduceOp {
    pub fn of(node: &Node) -> Option<ReduceOp> {
        match node.op {
            Op::Extent => Some(ReduceOp::Extent),
            _ => None,
        }
    }

    /// Output values per input lane.
    pub fn outputs(self) -> u32 {
        match self {
            ReduceOp::Extent => 2,
        }
    }

    /// Words of one `State` in a partials buffer.
    pub fn state_words(self) -> u32 {
        match self {
            ReduceOp::Extent => 2,
        }
    }
}

/// `struct State`, `state_identity()`, `state_add(s, v)`, `state_combine(a, b)` and
/// `state_output(s, k)` for values of `class`. Infinities and NaN come from run-time bits
/// (parameter 2 is 0) so a compiler assuming no Inf/NaN cannot fold the comparisons.
pub fn state_functions(op: ReduceOp, class: Class) -> String {
    let ty = wgsl_type(class);
    let (lo, hi, is_nan, nan) = match class {
        Class::F => (
            "bitcast<f32>(param(2u) | 0x7f800000u)",
            "bitcast<f32>(param(2u) | 0xff800000u)",
            "(bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u",
            "bitcast<f32>(param(2u) | 0x7fc00000u)",
        ),
        Class::I => ("2147483647i", "(-2147483647i - 1i)", "false", "0i"),
        Class::U => ("4294967295u", "0u", "false", "0u"),
    };
    match op {
        ReduceOp::Extent => format!(
            "struct State {{ a: {ty}, b: {ty} }}\n\
             fn state_identity() -> State {{ return State({lo}, {hi}); }}\n\
             fn state_add(s: State, v: {ty}) -> State {{\n    var r = s;\n    \
             if (!({is_nan})) {{ if (v < r.a) {{ r.a = v; }} if (v > r.b) {{ r.b = v; }} }}\n    return r;\n}}\n\
             fn state_combine(x: State, y: State) -> State {{\n    var r = x;\n    \
             if (y.a < r.a) {{ r.a = y.a; }}\n    if (y.b > r.b) {{ r.b = y.b; }}\n    return r;\n}}\n\
             // A lane with only NaN was never updated: its output is NaN, as on the CPU.\n\
             fn state_output(s: State, k: u32) -> {ty} {{\n    \
             return select(select(s.a, s.b, k == 1u), {nan}, s.a > s.b);\n}}\n"
        ),
    }
}
