//! WGSL of segmented sums (ir/segment.rs): a segment's head rows, its blocks, its tail
//! rows, in the order the CPU sums them; and a long segment's block sums.

use std::fmt::Write;

use super::Gen;
use crate::error::Result;
use crate::ir::{NodeRef, Op, LONG_SEGMENT_ROWS, SEGMENT_BLOCK_ROWS};

/// Statements running `add_row` (reading `r`) over the rows a `SegmentSum` or
/// `SegmentBlocks` row sums, and for a `SegmentSum`'s long segment `add_block` (reading
/// `k`, given the blocks' leaf) over its blocks. `rows`: the values' row count, a WGSL expression.
pub(crate) fn sum_loops(
    g: &Gen,
    node: &NodeRef,
    rows: &str,
    add_row: &str,
    add_block: &dyn Fn(usize) -> String,
) -> Result<String> {
    let id = g.local[&node.id];
    let (offsets, offset_rows) =
        g.bound_leaf(&node.inputs[1], "segment offsets are not bound whole")?;
    let row = g.pass_row();
    let (b, long) = (SEGMENT_BLOCK_ROWS, LONG_SEGMENT_ROWS);
    let offset = |at: &str| format!("u32(fetch_{offsets}({at}, 0u))");
    let mut code = String::new();
    if node.op == Op::SegmentBlocks {
        // The segment holding the block's first row: the last whose offset is at most it.
        let _ = writeln!(
            code,
            "    let first{id} = {row} * {b}u;\n    \
             var lo{id} = 0u;\n    var hi{id} = param({offset_rows}u);\n    \
             while (lo{id} < hi{id}) {{\n        let mid = lo{id} + (hi{id} - lo{id}) / 2u;\n        \
             if ({} <= first{id}) {{ lo{id} = mid + 1u; }} else {{ hi{id} = mid; }}\n    }}\n    \
             var end{id} = first{id};\n    \
             if (lo{id} > 0u && lo{id} < param({offset_rows}u)) {{\n        \
             let e{id} = min({}, {rows});\n        let f{id} = min({}, e{id});\n        \
             if (e{id} - f{id} >= {long}u && first{id} + {b}u <= e{id}) {{ end{id} = first{id} + {b}u; }}\n    }}\n    \
             for (var r = first{id}; r < end{id}; r++) {{ {add_row} }}",
            offset("mid"),
            offset(&format!("lo{id}")),
            offset(&format!("lo{id} - 1u")),
        );
        return Ok(code);
    }
    let _ = writeln!(
        code,
        "    let hi{id} = min({}, {rows});\n    let lo{id} = min({}, hi{id});",
        offset(&format!("{row} + 1u")),
        offset(&row),
    );
    if node.inputs.len() < 3 {
        // No segment can be long: one loop.
        let _ = writeln!(
            code,
            "    for (var r = lo{id}; r < hi{id}; r++) {{ {add_row} }}"
        );
        return Ok(code);
    }
    let (blocks, _) = g.bound_leaf(&node.inputs[2], "block sums are not bound whole")?;
    let add_block = add_block(blocks);
    // A short segment runs the row loop once and leaves; a long one runs it over its head,
    // adds its blocks and runs it again over its tail (the loop written once).
    let _ = writeln!(
        code,
        "    var r{id} = lo{id};\n    var to{id} = hi{id};\n    \
         if (hi{id} - lo{id} >= {long}u) {{ to{id} = (lo{id} + {}u) / {b}u * {b}u; }}\n    \
         loop {{\n        \
         for (var r = r{id}; r < to{id}; r++) {{ {add_row} }}\n        \
         if (to{id} == hi{id}) {{ break; }}\n        \
         for (var k = to{id} / {b}u; k < hi{id} / {b}u; k++) {{ {add_block} }}\n        \
         r{id} = hi{id} / {b}u * {b}u;\n        to{id} = hi{id};\n    }}",
        b - 1
    );
    Ok(code)
}
