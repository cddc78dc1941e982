//! Per-row code of a region's nodes: each node a local array of its lanes, computed from
//! its inputs' lanes with the lane rule of `api.md`.

use std::fmt::Write;

use super::{convert, internal, segment, wgsl_type, zero, Gen};
use crate::dtype::{Class, DType};
use crate::error::Result;
use crate::ir::{BinaryOp, NodeRef, Op, Predicate, ScanFold, UnaryOp, SCAN_FAN_IN};

/// Lane `at` (a WGSL u32 expression) of a node computing each lane from the same lane of
/// its inputs (binary, unary, select); `None` for other ops.
pub(crate) fn lanewise_expr(g: &Gen, node: &NodeRef, at: &str) -> Option<String> {
    let class = node.meta.dtype.class();
    let inputs = &node.inputs;
    Some(match &node.op {
        Op::Binary(op) => {
            let (a, b) = (g.lane(&inputs[0], at, class), g.lane(&inputs[1], at, class));
            match (op, class) {
                (BinaryOp::Add, _) => format!("{a} + {b}"),
                (BinaryOp::Subtract, Class::F) => format!("{a} - {b} * gt_one()"),
                (BinaryOp::Subtract, _) => format!("{a} - {b}"),
                (BinaryOp::Multiply, _) => format!("{a} * {b}"),
                (BinaryOp::Divide, Class::F) => format!("{a} / ({b} * gt_one())"),
                (BinaryOp::Divide, Class::I) => format!("gt_div_i({a}, {b})"),
                (BinaryOp::Divide, Class::U) => format!("gt_div_u({a}, {b})"),
                (BinaryOp::Pow, _) => format!("gt_pow({a}, {b})"),
                (BinaryOp::Minimum, Class::F) => format!("gt_min_f({a}, {b})"),
                (BinaryOp::Minimum, _) => format!("min({a}, {b})"),
                (BinaryOp::Maximum, Class::F) => format!("gt_max_f({a}, {b})"),
                (BinaryOp::Maximum, _) => format!("max({a}, {b})"),
                (BinaryOp::Mod, _) => format!("gt_mod_{}({a}, {b})", class_letter(class)),
            }
        }
        Op::Unary(op) => {
            let a = g.lane(&inputs[0], at, class);
            match (op, class) {
                // Unsigned abs is the value; GLSL has no abs(uint) and naga's GLSL output
                // would take it as signed.
                (UnaryOp::Abs, Class::U) => a,
                (UnaryOp::Sqrt, _) => format!("gt_sqrt({a})"),
                (UnaryOp::Abs, _) => format!("abs({a})"),
                (UnaryOp::Sin, _) => format!("gt_sin({a})"),
                (UnaryOp::Cos, _) => format!("gt_cos({a})"),
                (UnaryOp::Tan, _) => format!("gt_tan({a})"),
                (UnaryOp::Exp, _) => format!("gt_exp({a})"),
                (UnaryOp::Log, _) => format!("gt_log({a})"),
                // Integers are their own floor.
                (
                    UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round,
                    Class::I | Class::U,
                ) => a,
                (UnaryOp::Floor, _) => format!("gt_floor_f({a})"),
                (UnaryOp::Ceil, _) => format!("gt_ceil_f({a})"),
                (UnaryOp::Trunc, _) => format!("trunc({a})"),
                // WGSL's round halves to even (GLSL's roundEven).
                (UnaryOp::Round, _) => format!("round({a})"),
                (UnaryOp::Sign, Class::F) => format!("gt_sign_f({a})"),
                (UnaryOp::Sign, Class::I) => format!("sign({a})"),
                (UnaryOp::Sign, Class::U) => format!("min({a}, 1u)"),
            }
        }
        Op::Cast(to) => {
            let from = inputs[0].meta.dtype.class();
            let a = g.lane(&inputs[0], at, from);
            match (from, class) {
                (Class::F, Class::I | Class::U) => {
                    let (lo, end) = to.int_bounds();
                    let ty = wgsl_type(class);
                    // NaN (by its bits: compilers may assume none) and values outside the
                    // type give 0; the rest truncate.
                    // Whole numbers, written as float literals (no float formatting linked).
                    format!("gt_cast_{ty}({a}, {}.0, {}.0)", lo as i64, end as i64)
                }
                (Class::I | Class::U, Class::F) => convert(&a, from, class),
                (Class::I, Class::U) => format!("bitcast<u32>({a})"),
                (Class::U, Class::I) => format!("bitcast<i32>({a})"),
                _ => a,
            }
        }
        Op::Predicate(predicate) => {
            let read = |k: usize| {
                let input = &inputs[k];
                let class = input.meta.dtype.class();
                (g.lane(input, at, class), class)
            };
            let test = predicate_test(*predicate, read(0), (inputs.len() > 1).then(|| read(1)));
            // `| param(2u)` (0 at run time): a predicate of one value with itself is known
            // to the compiler, which would then fold NaN * 0 to 0 under WGSL's no-NaN rule.
            format!("(select(0u, 1u, {test}) | param(2u))")
        }
        Op::SortKey { descending } => {
            let from = inputs[0].meta.dtype;
            let a = g.lane(&inputs[0], at, from.class());
            let mask = crate::ir::key_mask(from.byte_width() as u32 * 8);
            let flip = if *descending { mask } else { 0 };
            match from.class() {
                Class::F => format!("gt_sort_key_f({a}, {descending})"),
                // Signed values in order as unsigned ones: the sign bit of the width flipped.
                Class::I => {
                    let half = 1u32 << (from.byte_width() * 8 - 1);
                    format!("(((bitcast<u32>({a}) + {half}u) & {mask}u) ^ {flip}u)")
                }
                Class::U => format!("(({a} & {mask}u) ^ {flip}u)"),
            }
        }
        Op::Select => {
            let cond_class = inputs[0].meta.dtype.class();
            let c = g.lane(&inputs[0], at, cond_class);
            let (a, b) = (g.lane(&inputs[1], at, class), g.lane(&inputs[2], at, class));
            format!("select({b}, {a}, {})", truth(&c, cond_class))
        }
        _ => return None,
    })
}

/// Lane `lane` of a `Reshape` row: the input's element of the same row-major place.
pub(crate) fn reshape_lane(g: &Gen, node: &NodeRef, lane: &str) -> Result<String> {
    let (x, _) = g.bound_leaf(&node.inputs[0], "a reshaped input is not bound whole")?;
    let (size, width) = (node.meta.size, node.inputs[0].meta.size);
    let e = format!("({} * {size}u + {lane})", g.pass_row());
    Ok(format!("fetch_{x}({e} / {width}u, {e} % {width}u)"))
}

/// A scan's fold with no row in it, in `class`: NaN (a run-time one) for a float minimum
/// or maximum, which folds skip.
fn scan_identity(fold: ScanFold, class: Class) -> &'static str {
    match (fold, class) {
        (ScanFold::Sum, class) => zero(class),
        (ScanFold::Prod, Class::F) => "1.0",
        (ScanFold::Prod, Class::I) => "1i",
        (ScanFold::Prod, Class::U) => "1u",
        (ScanFold::Min | ScanFold::Max, Class::F) => "gt_quiet_nan()",
        (ScanFold::Min, Class::I) => "2147483647i",
        (ScanFold::Min, Class::U) => "4294967295u",
        (ScanFold::Max, Class::I) => "(-2147483647i - 1i)",
        (ScanFold::Max, Class::U) => "0u",
    }
}

/// `v` folded into `acc`, in `class`.
fn scan_combine(fold: ScanFold, class: Class, acc: &str, v: &str) -> String {
    match (fold, class) {
        (ScanFold::Sum, _) => format!("{acc} + {v}"),
        (ScanFold::Prod, _) => format!("{acc} * {v}"),
        (ScanFold::Min, Class::F) => format!("gt_scan_min_f({acc}, {v})"),
        (ScanFold::Max, Class::F) => format!("gt_scan_max_f({acc}, {v})"),
        (ScanFold::Min, _) => format!("min({acc}, {v})"),
        (ScanFold::Max, _) => format!("max({acc}, {v})"),
    }
}

/// Statements declaring `s{id}`, lane `lane` of a scan's `GroupFold` row (the fold of its
/// `SCAN_FAN_IN` input rows) or `ScanApply` row (at each level, the rows of its group
/// before it, then its own where inclusive), or of a segmented sum computed a lane per
/// invocation (wide.rs); every input is a leaf read whole.
pub(crate) fn scan_sum(g: &Gen, node: &NodeRef, lane: &str) -> Result<String> {
    let id = g.local[&node.id];
    let class = node.meta.dtype.class();
    let fan_in = SCAN_FAN_IN;
    let leaf = |input: &NodeRef| g.bound_leaf(input, "a scan input is not bound whole");
    let row = g.pass_row();
    let (fold, inclusive) = match node.op {
        Op::GroupFold(fold) => (fold, false),
        Op::ScanApply { fold, inclusive } => (fold, inclusive),
        _ => (ScanFold::Sum, false),
    };
    let identity = scan_identity(fold, class);
    let mut code = format!("        var s{id} = {identity};\n");
    if matches!(node.op, Op::SegmentSum | Op::SegmentBlocks) {
        let (values, rows) = leaf(&node.inputs[0])?;
        let add_row = format!("s{id} = s{id} + fetch_{values}(r, {lane});");
        let add_block = |blocks: usize| format!("s{id} = s{id} + fetch_{blocks}(k, {lane});");
        let rows = format!("param({rows}u)");
        code.push_str(&segment::sum_loops(g, node, &rows, &add_row, &add_block)?);
        return Ok(code);
    }
    let fold_in = |v: &str| {
        format!(
            "s{id} = {};",
            scan_combine(fold, class, &format!("s{id}"), v)
        )
    };
    if let Op::GroupFold(_) = node.op {
        let (x, rows) = leaf(&node.inputs[0])?;
        let add = fold_in(&format!("fetch_{x}(r, {lane})"));
        let _ = writeln!(
            code,
            "        for (var t = 0u; t < {fan_in}u; t++) {{ let r = {row} * {fan_in}u + t; \
             if (r < param({rows}u)) {{ {add} }} }}"
        );
        return Ok(code);
    }
    let _ = writeln!(code, "        var at{id} = {row};");
    for input in &node.inputs {
        let (level, _) = leaf(input)?;
        let add = fold_in(&format!("fetch_{level}(first + t, {lane})"));
        let _ = writeln!(
            code,
            "        {{ let d = at{id} % {fan_in}u; let first = at{id} - d; \
             for (var t = 0u; t < d; t++) {{ {add} }} \
             at{id} = at{id} / {fan_in}u; }}"
        );
    }
    if inclusive {
        let (x, _) = leaf(&node.inputs[0])?;
        let _ = writeln!(
            code,
            "        {}",
            fold_in(&format!("fetch_{x}({row}, {lane})"))
        );
    }
    Ok(code)
}

/// Declares `ok{id}`, whether a gather node's id is a row of its source, and `r{id}`, the
/// row to fetch (0 when not); returns the source's leaf index.
pub(crate) fn gather_setup(g: &Gen, node: &NodeRef, body: &mut String) -> Result<usize> {
    let id = g.local[&node.id];
    let (ids, values) = (&node.inputs[0], &node.inputs[1]);
    let ids_class = ids.meta.dtype.class();
    let id_value = g.lane(ids, "0u", ids_class);
    let (source, len_slot) = g.bound_leaf(values, "gather source is not bound")?;
    let valid = match ids_class {
        Class::U => format!("i{id} < param({len_slot}u)"),
        Class::I => format!("i{id} >= 0i && u32(i{id}) < param({len_slot}u)"),
        Class::F => {
            format!("i{id} >= 0.0 && i{id} < f32(param({len_slot}u)) && fract(i{id}) == 0.0")
        }
    };
    let src_rows = if values.meta.constant {
        "1u".to_string()
    } else {
        format!("param({len_slot}u)")
    };
    let _ = writeln!(
        body,
        "    let i{id} = {id_value};\n    let ok{id} = {valid};\n    let r{id} = select(0u, u32(i{id}), ok{id} && {src_rows} > 0u);"
    );
    Ok(source)
}

/// A row copy's pieces for `row`: `(leaf, condition, source row)`, the first whose
/// condition holds being the piece holding `row`. Bounds are parameters, so copies of any
/// shape with as many pieces share one pipeline.
pub(crate) fn row_pieces(g: &mut Gen, node: &NodeRef) -> Result<Vec<(usize, String, String)>> {
    let Op::Rows(ranges) = &node.op else {
        return Err(internal("not a row copy"));
    };
    let mut pieces = Vec::new();
    let mut base = 0u32;
    for (input, &(start, end)) in node.inputs.iter().zip(ranges) {
        let (leaf, _) = g.bound_leaf(input, "a copied piece is not bound")?;
        base += end - start;
        let bound = g.param(base);
        // Wrapping u32 arithmetic: the source row is `row - piece base + start`.
        let shift = g.param(start.wrapping_sub(base - (end - start)));
        pieces.push((
            leaf,
            format!("row < param({bound}u)"),
            format!("row + param({shift}u)"),
        ));
    }
    Ok(pieces)
}

/// Appends the code computing `node` for `row`: `var v{id}: array<ty, size>`.
pub(crate) fn node_code(g: &mut Gen, node: &NodeRef, body: &mut String) -> Result<()> {
    let class = node.meta.dtype.class();
    let ty = wgsl_type(class);
    let size = node.meta.size;
    let id = g.local[&node.id];
    let _ = writeln!(body, "    var v{id}: array<{ty}, {size}>;");
    let each = |body: &mut String, expr: String| {
        let _ = writeln!(
            body,
            "    for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = {expr}; }}"
        );
    };
    let inputs = &node.inputs;
    if inputs.iter().any(|input| g.wide.contains(&input.id)) {
        return Err(internal("a per-row node reads a node computed per lane"));
    }
    match &node.op {
        Op::Binary(_)
        | Op::Unary(_)
        | Op::Predicate(_)
        | Op::Select
        | Op::Cast(_)
        | Op::SortKey { .. } => {
            let expr = lanewise_expr(g, node, "l")
                .ok_or_else(|| internal("a lane-wise op has no lane expression"))?;
            each(body, expr);
        }
        Op::Interleave => {
            let mut offset = 0;
            for input in inputs {
                let width = input.meta.size;
                let value = g.lane(input, "l", class);
                let _ = writeln!(
                    body,
                    "    for (var l = 0u; l < {width}u; l++) {{ v{id}[{offset}u + l] = {value}; }}"
                );
                offset += width;
            }
        }
        Op::Swizzle(channels) => {
            for (j, c) in channels.iter().enumerate() {
                let value = g.lane(&inputs[0], &format!("{c}u"), class);
                let _ = writeln!(body, "    v{id}[{j}] = {value};");
            }
        }
        Op::Dot | Op::Length => {
            let width = widest(inputs);
            let a = g.lane(&inputs[0], "l", Class::F);
            let b = g.lane(inputs.last().unwrap_or(&inputs[0]), "l", Class::F);
            let finish = if node.op == Op::Length {
                format!("gt_sqrt(s{id})")
            } else {
                format!("s{id}")
            };
            // Summed from 0.0 read at run time: a compiler folding a literal 0.0 + p to p
            // gives -0 where p is -0 (and x / dot then the other infinity).
            let _ = writeln!(
                body,
                "    var s{id} = gt_zero();\n    for (var l = 0u; l < {width}u; l++) {{ s{id} = s{id} + {a} * {b}; }}\n    v{id}[0] = {finish};"
            );
        }
        Op::EqualAll => {
            let width = widest(inputs);
            let (ca, cb) = (inputs[0].meta.dtype.class(), inputs[1].meta.dtype.class());
            let (a, b) = (g.lane(&inputs[0], "l", ca), g.lane(&inputs[1], "l", cb));
            let test = equal_exact(&a, ca, &b, cb);
            let _ = writeln!(
                body,
                "    var e{id} = true;\n    for (var l = 0u; l < {width}u; l++) {{ e{id} = e{id} && ({test}); }}\n    v{id}[0] = select(0u, 1u, e{id});"
            );
        }
        Op::Sequence { start, step } => {
            // Two's complement wrap: the i32 result is exact modulo 2^32.
            let (s, t) = (g.param(*start as i32 as u32), g.param(*step as i32 as u32));
            let row = g.pass_row();
            let _ = writeln!(body, "    v{id}[0] = bitcast<i32>(param({s}u)) + bitcast<i32>({row}) * bitcast<i32>(param({t}u));");
        }
        Op::Gather => {
            let source = gather_setup(g, node, body)?;
            let _ = writeln!(
                body,
                "    for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = select({z}, fetch_{source}(r{id}, l), ok{id}); }}",
                z = zero(class)
            );
        }
        Op::SegmentedMap => {
            let (segments, len_slot) = g.bound_leaf(&inputs[0], "segments are not bound")?;
            // Starts were validated on the host: non-negative, non-decreasing, starts[0] = 0.
            // The last start at or before the row lies in [lo, lo + n) and starts[lo] <= row
            // throughout; halved branch-free, as `SearchSorted`.
            let _ = writeln!(
                body,
                "    var lo{id} = 0u;\n    var n{id} = param({len_slot}u);\n    while (n{id} > 1u) {{\n        \
                 let half = n{id} / 2u;\n        let mid = lo{id} + half;\n        \
                 lo{id} = select(lo{id}, mid, u32(fetch_{segments}(mid, 0u)) <= row);\n        n{id} -= half;\n    }}\n    \
                 v{id}[0] = lo{id};\n    v{id}[1] = row - u32(fetch_{segments}(lo{id}, 0u));"
            );
        }
        Op::SearchSorted { upper } => {
            let (sorted, rows) = g.bound_leaf(&inputs[0], "a sorted column is not bound whole")?;
            let (k_class, q_class) = (inputs[0].meta.dtype.class(), inputs[1].meta.dtype.class());
            let q = g.lane(&inputs[1], "0u", q_class);
            let below = if *upper { "<=" } else { "<" };
            // Past a key (exactly, across types), NaN ordered after every number: keys of
            // one class compare directly, floats by their search keys (a NaN query's key is
            // past every key, number or NaN, for `upper`; past the numbers alone otherwise).
            let (query, key, order, past) = match (k_class, q_class) {
                (Class::F, Class::F) => {
                    let query = match upper {
                        true => format!("gt_search_key({q})"),
                        false => format!("min(gt_search_key({q}), 0xfffffffeu)"),
                    };
                    (
                        query,
                        format!("gt_search_key(fetch_{sorted}(mid, 0u))"),
                        String::new(),
                        format!("k {below} q{id}"),
                    )
                }
                (k, q_same) if k == q_same => (
                    q,
                    format!("fetch_{sorted}(mid, 0u)"),
                    String::new(),
                    format!("k {below} q{id}"),
                ),
                _ => {
                    let order = format!(
                        "gt_ord_{}{}(k, q{id})",
                        class_letter(k_class),
                        class_letter(q_class)
                    );
                    let test = match (upper, k_class, q_class) {
                        (false, Class::F, _) => {
                            "o == 0u || (o == 3u && !gt_nan_bits(k))".to_string()
                        }
                        (false, ..) => "o == 0u || o == 3u".to_string(),
                        (true, _, Class::F) => {
                            format!("o <= 1u || (o == 3u && gt_nan_bits(q{id}))")
                        }
                        (true, ..) => "o <= 1u".to_string(),
                    };
                    let order = format!("let o = {order};\n        ");
                    (q, format!("fetch_{sorted}(mid, 0u)"), order, test)
                }
            };
            // Branch-free: the answer lies in [lo, lo + n]; every invocation runs the same
            // halvings (n depends on the keys alone), so none waits on another's branches.
            let _ = writeln!(
                body,
                "    let q{id} = {query};\n    var lo{id} = 0u;\n    var n{id} = param({rows}u);\n    \
                 while (n{id} > 1u) {{\n        let half = n{id} / 2u;\n        let mid = lo{id} + half;\n        \
                 let k = {key};\n        {order}\
                 lo{id} = select(lo{id}, mid, {past});\n        n{id} -= half;\n    }}\n    \
                 if (n{id} == 1u) {{\n        let mid = lo{id};\n        let k = {key};\n        {order}\
                 lo{id} += select(0u, 1u, {past});\n    }}\n    \
                 v{id}[0] = lo{id};"
            );
        }
        Op::Reshape => {
            let value = reshape_lane(g, node, "l")?;
            let _ = writeln!(
                body,
                "    for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = {value}; }}"
            );
        }
        Op::SegmentSum | Op::SegmentBlocks => {
            // Each row's lanes added inside the row loop: a loop over the lanes around it
            // would run the rows once per lane (and llvmpipe counts every iteration).
            let values = &inputs[0];
            let (rows, add_row) = match g.where_read.contains(&values.id) {
                // The values computed at each row (`at_k`), in the sum's type.
                true => {
                    let at = g.local[&values.id];
                    let lane = convert("p[l]", values.meta.dtype.class(), class);
                    (
                        g.param(values.meta.length),
                        format!("let p = at_{at}(r); for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = v{id}[l] + {lane}; }}"),
                    )
                }
                false => {
                    let (leaf, rows) =
                        g.bound_leaf(values, "segmented values are not bound whole")?;
                    let add = format!("for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = v{id}[l] + fetch_{leaf}(r, l); }}");
                    (rows, add)
                }
            };
            let add_block = |blocks: usize| {
                format!("for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = v{id}[l] + fetch_{blocks}(k, l); }}")
            };
            let rows = format!("param({rows}u)");
            // Zeroed here, not by the declaration: in a loop over rows (a reduction's first
            // pass) Chromium's WebGPU kept the last row's sums in it.
            let _ = writeln!(body, "    v{id} = array<{ty}, {size}>();");
            body.push_str(&segment::sum_loops(g, node, &rows, &add_row, &add_block)?);
        }
        Op::GroupFold(_) | Op::ScanApply { .. } => {
            let sum = scan_sum(g, node, "l")?;
            let _ = writeln!(
                body,
                "    for (var l = 0u; l < {size}u; l++) {{\n{sum}        v{id}[l] = s{id};\n    }}"
            );
        }
        Op::Fround => {
            let half = size / 2;
            let lo = g.lane(&inputs[0], "2u * i", Class::U);
            let hi = g.lane(&inputs[0], "2u * i + 1u", Class::U);
            let _ = writeln!(
                body,
                "    for (var i = 0u; i < {half}u; i++) {{ let f = gt_fround({lo}, {hi}); v{id}[i] = f.high; v{id}[{half}u + i] = f.low; }}"
            );
        }
        Op::Rows(_) => {
            let mut branch = "if";
            for (leaf, condition, source) in row_pieces(g, node)? {
                let _ = writeln!(
                    body,
                    "    {branch} ({condition}) {{ for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = fetch_{leaf}({source}, l); }} }}"
                );
                branch = "else if";
            }
        }
        Op::Reduce(_)
        | Op::Scatter
        | Op::SortPermutation { .. }
        | Op::Compact
        | Op::Scan { .. }
        | Op::BinCount { .. }
        | Op::BinSum { .. }
        | Op::Lookup
        | Op::Source
        | Op::Concat
        | Op::Slice { .. }
        | Op::Rechunk => {
            return Err(internal(&format!(
                "{} is not computed per row",
                node.op.name()
            )))
        }
    }
    let lanes = |body: &mut String, statement: String| {
        let _ = writeln!(
            body,
            "    for (var l = 0u; l < {size}u; l++) {{ {statement} }}"
        );
    };
    if let Some(statement) = narrowed(node, &format!("v{id}[l]")) {
        lanes(body, statement);
    }
    if let Some(slot) = shorter_length_slot(g, node) {
        let _ = write!(body, "    if (row >= param({slot}u)) {{");
        lanes(body, format!("v{id}[l] = {};", zero(class)));
        let _ = writeln!(body, "    }}");
    }
    Ok(())
}

/// Rows past a shorter node's own length are zero, as if it had been materialized: the
/// parameter slot of that length, when the region computes more rows.
pub(crate) fn shorter_length_slot(g: &mut Gen, node: &NodeRef) -> Option<usize> {
    (!node.meta.constant && node.meta.length < g.rows).then(|| g.param(node.meta.length))
}

/// Rewrites `for (var l = 0u; l < Nu; l++) { body }` with N <= 4 as N blocks `{ let l = ku;
/// body }`: with constant indices the per-node lane arrays stay in registers (software
/// GPUs otherwise keep them in memory).
pub(crate) fn unroll_lane_loops(source: &str) -> String {
    const HEAD: &str = "for (var l = 0u; l < ";
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find(HEAD) {
        out.push_str(&rest[..at]);
        let after = &rest[at + HEAD.len()..];
        let count: Option<u32> = after.split("u; l++) {").next().and_then(|n| n.parse().ok());
        let open = after.find('{').map(|i| at + HEAD.len() + i);
        let body = open.and_then(|open| matching_brace(rest, open).map(|close| (open, close)));
        match (count, body) {
            (Some(n), Some((open, close))) if n <= 4 => {
                let inner = &rest[open + 1..close];
                for k in 0..n {
                    let _ = write!(out, "{{ let l = {k}u;{inner}}}");
                }
                rest = &rest[close + 1..];
            }
            _ => {
                out.push_str(HEAD);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Wraps a 32-bit result to an 8- or 16-bit type, as the CPU stores it: `place` (a lane of
/// the node's value) assigned its narrowed self.
pub(crate) fn narrowed(node: &NodeRef, place: &str) -> Option<String> {
    let expr = match node.meta.dtype {
        DType::U8 => format!("{place} & 0xFFu"),
        DType::U16 => format!("{place} & 0xFFFFu"),
        DType::I8 => format!("({place} << 24u) >> 24u"),
        DType::I16 => format!("({place} << 16u) >> 16u"),
        _ => return None,
    };
    Some(format!("{place} = {expr};"))
}

/// The WGSL bool of `x != 0` as the CPU tests it: a float by its bits, so NaN and
/// subnormals are true (WGSL's `!=` is an ordered compare, false for NaN, and a GPU may flush
/// a subnormal to 0).
fn truth(x: &str, class: Class) -> String {
    match class {
        Class::F => format!("((bitcast<u32>({x}) << 1u) != 0u)"),
        _ => format!("({x} != {})", zero(class)),
    }
}

/// The letter naming a class in the helpers of compare.wgsl.
fn class_letter(class: Class) -> char {
    match class {
        Class::F => 'f',
        Class::I => 'i',
        Class::U => 'u',
    }
}

/// The WGSL bool of `predicate` over lanes `a` and `b` (each `(expression, class)`, read in
/// its own class).
fn predicate_test(predicate: Predicate, a: (String, Class), b: Option<(String, Class)>) -> String {
    let (a, ca) = a;
    let Some((b, cb)) = b else {
        return match (predicate, ca) {
            (Predicate::IsNaN, Class::F) => format!("gt_nan_bits({a})"),
            (Predicate::IsFinite, Class::F) => format!("gt_finite_bits({a})"),
            // Integers are never NaN; the input is still read, so its binding stays in the
            // pipeline's layout.
            (Predicate::IsNaN, _) => format!("({a} != {a})"),
            (Predicate::IsFinite, _) => format!("({a} == {a})"),
            _ => format!("!{}", truth(&a, ca)),
        };
    };
    let order = || format!("gt_ord_{}{}({a}, {b})", class_letter(ca), class_letter(cb));
    match predicate {
        Predicate::And => format!("({} && {})", truth(&a, ca), truth(&b, cb)),
        Predicate::Or => format!("({} || {})", truth(&a, ca), truth(&b, cb)),
        Predicate::Xor => format!("({} != {})", truth(&a, ca), truth(&b, cb)),
        Predicate::Equal => format!("({} == 1u)", order()),
        Predicate::NotEqual => format!("({} != 1u)", order()),
        Predicate::Less => format!("({} == 0u)", order()),
        Predicate::LessEqual => format!("({} <= 1u)", order()),
        Predicate::Greater => format!("({} == 2u)", order()),
        Predicate::GreaterEqual => format!("({} - 1u <= 1u)", order()),
        Predicate::Not | Predicate::IsNaN | Predicate::IsFinite => "false".into(),
    }
}

/// Exact equality of two values of any classes (the CPU compares them as f64).
fn equal_exact(a: &str, ca: Class, b: &str, cb: Class) -> String {
    match (ca, cb) {
        _ if ca == cb => format!("{a} == {b}"),
        (Class::I, Class::U) => format!("{a} >= 0i && u32({a}) == {b}"),
        (Class::U, Class::I) => format!("{b} >= 0i && u32({b}) == {a}"),
        (Class::F, int) => float_equals_int(a, b, int),
        (int, Class::F) => float_equals_int(b, a, int),
        _ => unreachable!("all class pairs are covered"),
    }
}

fn float_equals_int(f: &str, i: &str, int: Class) -> String {
    // Equal only if the float is integral, in range, and converts back to the same integer.
    let (lo, hi) = if int == Class::I {
        ("-2147483648.0", "2147483647.0")
    } else {
        ("0.0", "4294967295.0")
    };
    format!(
        "({f} == f32({i}) && {f} >= {lo} && {f} <= {hi} && {ty}({f}) == {i})",
        ty = wgsl_type(int)
    )
}

/// The lanes a row reduction (`dot`, `equalAll`) reads: the widest input's, the others' by
/// the lane rule (a size-1 input broadcasts, lanes past a row read 0).
fn widest(inputs: &[NodeRef]) -> u32 {
    inputs.iter().map(|i| i.meta.size).max().unwrap_or(1)
}
