//! Per-lane code for rows too wide for per-row arrays: in a compute region whose root has
//! more than `WIDE_ROW_LANES` lanes, one invocation computes one lane (`lane`) of one row,
//! and each node that wide is a scalar `v{id}`, its value at `lane`. Narrower nodes stay
//! per-row arrays (computed by every invocation of the row; they are small).

use std::fmt::Write;

use super::nodes::{
    gather_setup, lanewise_expr, narrowed, reshape_lane, row_pieces, scan_sum, shorter_length_slot,
};
use super::{internal, wgsl_type, zero, Gen};
use crate::dtype::Class;
use crate::error::Result;
use crate::ir::{NodeRef, Op};
use crate::plan::WIDE_ROW_LANES;

/// Appends the code computing lane `lane` of `node` for `row`: `var v{id}: ty`.
pub(crate) fn node_code(g: &mut Gen, node: &NodeRef, body: &mut String) -> Result<()> {
    let class = node.meta.dtype.class();
    let size = node.meta.size;
    let id = g.local[&node.id];
    let z = zero(class);
    let inputs = &node.inputs;
    // A node reading its input at other lanes than its own needs that input whole: a leaf or
    // a per-row array (the planner materializes wide inputs of such nodes).
    let whole_inputs = |g: &Gen| match inputs.iter().any(|input| g.wide.contains(&input.id)) {
        true => Err(internal(&format!(
            "{} reads a node computed per lane at other lanes",
            node.op.name()
        ))),
        false => Ok(()),
    };
    let value = match &node.op {
        Op::Binary(_)
        | Op::Unary(_)
        | Op::Predicate(_)
        | Op::Select
        | Op::Cast(_)
        | Op::SortKey { .. } => lanewise_expr(g, node, "lane")
            .ok_or_else(|| internal("a lane-wise op has no lane expression"))?,
        Op::Gather => {
            let source = gather_setup(g, node, body)?;
            format!("select({z}, fetch_{source}(r{id}, lane), ok{id})")
        }
        Op::Reshape => reshape_lane(g, node, "lane")?,
        Op::GroupFold(_) | Op::ScanApply { .. } | Op::SegmentSum | Op::SegmentBlocks => {
            body.push_str(&scan_sum(g, node, "lane")?);
            format!("s{id}")
        }
        Op::Interleave => {
            whole_inputs(g)?;
            // The last input starting at or before `lane` holds it.
            let mut value = z.to_string();
            let mut offset = 0;
            for input in inputs {
                let lane = g.lane(input, &format!("(lane - {offset}u)"), class);
                value = format!("select({value}, {lane}, lane >= {offset}u)");
                offset += input.meta.size;
            }
            value
        }
        Op::Swizzle(channels) => {
            whole_inputs(g)?;
            let _ = writeln!(body, "    var c{id} = 0u;");
            for run in channel_runs(channels) {
                let _ = writeln!(
                    body,
                    "    if (lane >= {}u) {{ c{id} = u32({}i + i32(lane - {}u) * {}i); }}",
                    run.begin, run.first, run.begin, run.step
                );
            }
            g.lane(&inputs[0], &format!("c{id}"), class)
        }
        Op::Fround => {
            whole_inputs(g)?;
            let half = size / 2;
            let pair = format!("select(lane - {half}u, lane, lane < {half}u)");
            let lo = g.lane(&inputs[0], &format!("2u * p{id}"), Class::U);
            let hi = g.lane(&inputs[0], &format!("2u * p{id} + 1u"), Class::U);
            let _ = writeln!(
                body,
                "    let p{id} = {pair};\n    let f{id} = gt_fround({lo}, {hi});"
            );
            format!("select(f{id}.low, f{id}.high, lane < {half}u)")
        }
        Op::Rows(_) => {
            let _ = writeln!(body, "    var c{id}: {} = {z};", wgsl_type(class));
            let mut branch = "if";
            for (leaf, condition, source) in row_pieces(g, node)? {
                let _ = writeln!(
                    body,
                    "    {branch} ({condition}) {{ c{id} = fetch_{leaf}({source}, lane); }}"
                );
                branch = "else if";
            }
            format!("c{id}")
        }
        other => {
            return Err(internal(&format!(
                "{} is never wider than {WIDE_ROW_LANES} lanes",
                other.name()
            )))
        }
    };
    let _ = writeln!(
        body,
        "    var v{id}: {ty} = {value};",
        ty = wgsl_type(class)
    );
    if let Some(statement) = narrowed(node, &format!("v{id}")) {
        let _ = writeln!(body, "    {statement}");
    }
    if let Some(slot) = shorter_length_slot(g, node) {
        let _ = writeln!(body, "    if (row >= param({slot}u)) {{ v{id} = {z}; }}");
    }
    Ok(())
}

/// Lanes `begin ..` of a swizzle read channels `first, first + step, ..` (up to the next
/// run's `begin`).
struct ChannelRun {
    begin: usize,
    first: i64,
    step: i64,
}

/// A swizzle's channels as arithmetic runs, so ranges, reversals and repeats of any width
/// are a few lines of code.
fn channel_runs(channels: &[u32]) -> Vec<ChannelRun> {
    let mut runs: Vec<ChannelRun> = Vec::new();
    let mut begin = 0;
    while begin < channels.len() {
        let first = channels[begin] as i64;
        let step = channels
            .get(begin + 1)
            .map_or(0, |&next| next as i64 - first);
        let mut end = begin + 1;
        while end < channels.len() && channels[end] as i64 == first + (end - begin) as i64 * step {
            end += 1;
        }
        runs.push(ChannelRun { begin, first, step });
        begin = end;
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::channel_runs;

    #[test]
    fn channel_runs_cover_every_lane() {
        for channels in [
            vec![0u32, 1, 2, 3, 7, 6, 5, 5, 5, 9],
            vec![4],
            (0..100).rev().collect(),
            vec![3, 1, 4, 1, 5, 9, 2, 6],
        ] {
            let runs = channel_runs(&channels);
            for (lane, &channel) in channels.iter().enumerate() {
                let run = runs.iter().rev().find(|r| r.begin <= lane).unwrap();
                assert_eq!(
                    run.first + (lane - run.begin) as i64 * run.step,
                    channel as i64
                );
            }
        }
    }
}
