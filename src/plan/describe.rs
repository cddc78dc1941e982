//! `explain()`'s text: the passes of a plan, what each fused, and what it reads.

use std::collections::HashMap;
use std::fmt::Write;

use super::{Plan, Region};
use crate::ir::{scattered_row_numbers, NodeRef, Op};

impl Plan {
    /// A readable description of the passes, shared by every backend's `explain()`: each
    /// pass names its output, its inputs, and the fused expression (nodes used twice in a
    /// pass get their own line).
    pub fn describe(&self, backend: &str) -> String {
        let mut out = self.describe_header(backend);
        for index in 0..self.regions.len() {
            out.push_str(&self.describe_pass(index));
        }
        out
    }

    /// `describe`'s first line.
    pub fn describe_header(&self, backend: &str) -> String {
        let count = self.regions.len();
        format!(
            "plan on {backend}: {count} pass{}\n",
            if count == 1 { "" } else { "es" }
        )
    }

    /// `describe`'s lines for pass `index`: its output, what it fused, what it reads.
    pub fn describe_pass(&self, index: usize) -> String {
        let mut out = String::new();
        if let Some(region) = self.regions.get(index) {
            let root = &region.root;
            let kind = match (&root.op, region.nodes.len()) {
                (op, _) if op.is_assembly() => {
                    "assembled: whole stored chunks shared, parts copied".to_string()
                }
                (Op::Reduce(_), 1) => "reduction".to_string(),
                (Op::Reduce(_), n) => format!("reduction with a fused prologue of {} ops", n - 1),
                (Op::Scatter, _) => match scattered_row_numbers(root) {
                    Some(_) => "scatter: each input row's number written where it says".to_string(),
                    None => "scatter: each input row written where it says".to_string(),
                },
                (Op::Compact, _) => "compaction: the flagged rows' numbers, in order".to_string(),
                (Op::Scan { fold, .. }, _) => format!("scan: a running {}", fold.name()),
                (Op::BinCount { bins }, _) => format!("bin count: the rows of each of {bins} ids"),
                (Op::BinSum { bins }, _) => format!("bin sum: the values of each of {bins} ids"),
                (Op::Lookup, _) => "lookup: each key's lowest table row".to_string(),
                (Op::SortPermutation { bits, ordered_rows }, _)
                    if *ordered_rows < root.meta.length =>
                {
                    format!(
                        "the first {ordered_rows} rows of a stable sort by {} bits of keys",
                        bits.iter().sum::<u32>()
                    )
                }
                (Op::SortPermutation { bits, .. }, _) => match &bits[..] {
                    [bits] => format!("stable sort by the keys' low {bits} bits"),
                    _ => format!(
                        "stable sort by {} keys, most significant first, of {} bits",
                        bits.len(),
                        bits.iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(" + ")
                    ),
                },
                (_, 1) => "single op".to_string(),
                (_, n) => format!("fused elementwise, {n} ops"),
            };
            let kind = match &region.sorted_keys[..] {
                [] => kind,
                keys => format!(
                    "{kind}; writes its keys in order too: {}",
                    keys.iter()
                        .map(|k| format!("t{}", k.node.id))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let kind = match region
                .where_read
                .iter()
                .map(|w| w.nodes.len())
                .sum::<usize>()
            {
                0 => kind,
                n => format!("{kind}; {n} more computed at the rows a segmented sum reads"),
            };
            let _ = writeln!(
                out,
                "pass {}: t{} {} ({kind})",
                index + 1,
                root.id,
                shape(root)
            );
            let uses = use_counts(region);
            let mut text: HashMap<u64, String> =
                region.leaves.iter().map(|l| (l.id, leaf_name(l))).collect();
            for node in region.computed() {
                let args: Vec<&str> = node.inputs.iter().map(|i| text[&i.id].as_str()).collect();
                let expr = match &node.op {
                    Op::Swizzle(channels) => format!("swizzle({}, {channels:?})", args[0]),
                    Op::Sequence { start, step } => format!("sequence(start={start}, step={step})"),
                    op => format!("{}({})", op.name(), args.join(", ")),
                };
                if node.id == root.id || uses.get(&node.id).copied().unwrap_or(0) > 1 {
                    let _ = writeln!(out, "    t{} = {expr}", node.id);
                    text.insert(node.id, format!("t{}", node.id));
                } else {
                    text.insert(node.id, expr);
                }
            }
            let inputs: Vec<String> = region
                .leaves
                .iter()
                .filter(|l| !is_literal(l))
                .map(|l| format!("t{} {}", l.id, shape(l)))
                .collect();
            if !inputs.is_empty() {
                let _ = writeln!(out, "    reads {}", inputs.join(", "));
            }
        }
        out
    }
}

/// How often each node of a region is read by other nodes of the same region.
fn use_counts(region: &Region) -> HashMap<u64, usize> {
    let mut uses = HashMap::new();
    for node in region.computed() {
        for input in &node.inputs {
            *uses.entry(input.id).or_insert(0) += 1;
        }
    }
    uses
}

fn shape(node: &NodeRef) -> String {
    let m = node.meta;
    let rows = match (m.constant, node.chunks.len()) {
        (true, _) => "constant".to_string(),
        (false, 1) => format!("{} rows", m.length),
        (false, n) => format!("{} rows in {n} chunks", m.length),
    };
    format!("<{} x{}, {rows}>", m.dtype.name(), m.size)
}

/// Small constant sources are shown by value.
fn is_literal(node: &NodeRef) -> bool {
    node.meta.constant && node.is_source() && node.meta.size <= 8
}

fn leaf_name(node: &NodeRef) -> String {
    let output = node.host_output();
    match output
        .as_ref()
        .and_then(|o| o.chunks.first()?.host_column())
    {
        Some(column) if is_literal(node) => {
            let values: Vec<String> = (0..column.data.len())
                .map(|i| column.data.get_f64(i).to_string())
                .collect();
            if values.len() == 1 {
                values[0].clone()
            } else {
                format!("[{}]", values.join(","))
            }
        }
        _ => format!("t{}", node.id),
    }
}
