//! The one reduction path of the GPU backends: a reduction is a per-lane `State` with an
//! identity, a step that adds one value of a row, a combine of two states (partials of
//! different rows, in any tree order) and the output values it finalizes to. Kernels fold
//! rows into partial states, combine partials, and finalize; only these functions differ
//! per reduction.

use crate::dtype::Class;
use crate::ir::ReduceKind;
use crate::wgsl::wgsl_type;

/// The WGSL field names of a state's words, in order.
pub const STATE_FIELDS: [&str; 2] = ["a", "b"];

/// `struct State`, `state_identity()`, `state_add(s, v, row)`, `state_combine(a, b)` and
/// `state_output(s, k)` for inputs of `class`. Infinities and NaN come from run-time bits
/// (parameter 2 is 0) so a compiler assuming no Inf/NaN cannot fold the comparisons.
/// `state_add` takes rows in increasing order; `state_combine(x, y)` takes `x` from rows
/// before `y`'s (ties of the arg-reductions go to the lower row either way).
pub fn state_functions(kind: ReduceKind, class: Class) -> String {
    let ty = wgsl_type(class);
    let fnan = "bitcast<f32>(param(2u) | 0x7fc00000u)";
    let (lo, hi, is_nan, nan) = match class {
        Class::F => (
            "bitcast<f32>(param(2u) | 0x7f800000u)",
            "bitcast<f32>(param(2u) | 0xff800000u)",
            "(bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u",
            fnan,
        ),
        Class::I => ("2147483647i", "(-2147483647i - 1i)", "false", "0i"),
        Class::U => ("4294967295u", "0u", "false", "0u"),
    };
    let fields: Vec<String> = kind
        .state_words(class)
        .iter()
        .zip(STATE_FIELDS)
        .map(|(&word, name)| format!("{name}: {}", wgsl_type(word)))
        .collect();
    let header = format!("struct State {{ {} }}\n", fields.join(", "));
    let body = match kind {
        ReduceKind::Sum => format!(
            "fn state_identity() -> State {{ return State({ty}(0)); }}\n\
             fn state_add(s: State, v: {ty}, row: i32) -> State {{ return State(s.a + v); }}\n\
             fn state_combine(x: State, y: State) -> State {{ return State(x.a + y.a); }}\n\
             fn state_output(s: State, k: u32) -> {ty} {{ return s.a; }}\n"
        ),
        ReduceKind::Min | ReduceKind::Max | ReduceKind::Extent => {
            let output = match kind {
                ReduceKind::Min => "s.a",
                ReduceKind::Max => "s.b",
                _ => "select(s.a, s.b, k == 1u)",
            };
            format!(
                "fn state_identity() -> State {{ return State({lo}, {hi}); }}\n\
                 fn state_add(s: State, v: {ty}, row: i32) -> State {{\n    var r = s;\n    \
                 if (!({is_nan})) {{ if (v < r.a) {{ r.a = v; }} if (v > r.b) {{ r.b = v; }} }}\n    return r;\n}}\n\
                 fn state_combine(x: State, y: State) -> State {{\n    var r = x;\n    \
                 if (y.a < r.a) {{ r.a = y.a; }}\n    if (y.b > r.b) {{ r.b = y.b; }}\n    return r;\n}}\n\
                 // A lane with no value but NaN (or null) was never updated: NaN, 0 for integers.\n\
                 fn state_output(s: State, k: u32) -> {ty} {{\n    \
                 return select({output}, {nan}, s.a > s.b);\n}}\n"
            )
        }
        ReduceKind::Mean => {
            let value = super::convert("v", class, Class::F);
            format!(
                "fn state_identity() -> State {{ return State(0.0, 0u); }}\n\
                 fn state_add(s: State, v: {ty}, row: i32) -> State {{ return State(s.a + {value}, s.b + 1u); }}\n\
                 fn state_combine(x: State, y: State) -> State {{ return State(x.a + y.a, x.b + y.b); }}\n\
                 fn state_output(s: State, k: u32) -> f32 {{\n    \
                 if (s.b == 0u) {{ return {fnan}; }}\n    return s.a / f32(s.b);\n}}\n"
            )
        }
        ReduceKind::ArgMin | ReduceKind::ArgMax => {
            let better = match kind {
                ReduceKind::ArgMin => "<",
                _ => ">",
            };
            format!(
                "fn state_identity() -> State {{ return State({lo}, -1i); }}\n\
                 fn state_add(s: State, v: {ty}, row: i32) -> State {{\n    \
                 if (!({is_nan}) && (s.b < 0i || v {better} s.a)) {{ return State(v, row); }}\n    return s;\n}}\n\
                 fn state_combine(x: State, y: State) -> State {{\n    \
                 if (y.b < 0i) {{ return x; }}\n    if (x.b < 0i) {{ return y; }}\n    \
                 if (y.a {better} x.a || (y.a == x.a && y.b < x.b)) {{ return y; }}\n    return x;\n}}\n\
                 fn state_output(s: State, k: u32) -> i32 {{ return s.b; }}\n"
            )
        }
    };
    format!("{header}{body}")
}
