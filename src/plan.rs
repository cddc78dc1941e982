//! Splits a graph into fused regions: each region is one pass over rows that computes a
//! connected set of row-local nodes and materializes only its root. Backends compile or
//! interpret one region at a time; the same plan drives every backend and every chunk.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use crate::error::Result;
use crate::ir::{topological_order_with, NodeRef, Op};

pub struct Region {
    /// The node whose output this region materializes.
    pub root: NodeRef,
    /// Nodes computed in this pass, inputs before consumers, ending with `root`.
    pub nodes: Vec<NodeRef>,
    /// Materialized inputs the pass reads.
    pub leaves: Vec<NodeRef>,
}

impl Region {
    /// Rows the pass iterates over: an `extent` walks its input's rows.
    pub fn rows(&self) -> u32 {
        match self.root.op {
            Op::Extent => self.root.inputs[0].meta.length,
            _ => self.root.meta.length,
        }
    }
}

pub struct Plan {
    /// In dependency order.
    pub regions: Vec<Region>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Fuse every row-local chain into one pass (the normal mode).
    On,
    /// Materialize every node: the reference for "fusion never changes a result" tests.
    Off,
}

pub fn plan(roots: &[NodeRef], fusion: Fusion) -> Result<Plan> {
    plan_with(roots, fusion, false)
}

/// `plan`, optionally planning roots that are already evaluated as if they were not (so
/// `explain()` shows what an evaluated graph ran).
pub fn plan_with(roots: &[NodeRef], fusion: Fusion, replan_roots: bool) -> Result<Plan> {
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    let cached = |n: &NodeRef| {
        n.output().is_some() && !(replan_roots && root_ids.contains(&n.id) && !n.is_source())
    };
    let order = topological_order_with(roots, &cached);
    for node in &order {
        node.check_alive()?;
    }
    let mut materialized = root_ids.clone();
    for node in &order {
        if cached(node) {
            continue;
        }
        let must_split = fusion == Fusion::Off || node.op == Op::Extent;
        if must_split {
            materialized.insert(node.id);
        }
        for (i, input) in node.inputs.iter().enumerate() {
            // Random-access inputs, and constants feeding rows, are computed once on their own.
            if !node.op.reads_input_at_row(i) || (input.meta.constant && !node.meta.constant) {
                materialized.insert(input.id);
            }
        }
    }
    // A node fused into two regions would be computed twice: materialize it instead.
    loop {
        let mut owner: HashMap<u64, u64> = HashMap::new();
        let mut shared = None;
        'regions: for node in order
            .iter()
            .filter(|n| materialized.contains(&n.id) && !cached(n))
        {
            for member in region_members(node, &materialized, &cached) {
                if member.id == node.id {
                    continue;
                }
                match owner.insert(member.id, node.id) {
                    Some(other) if other != node.id => {
                        shared = Some(member.id);
                        break 'regions;
                    }
                    _ => {}
                }
            }
        }
        match shared {
            Some(id) => {
                materialized.insert(id);
            }
            None => break,
        }
    }
    let regions = order
        .iter()
        .filter(|n| materialized.contains(&n.id) && !cached(n))
        .map(|root| {
            let nodes = region_members(root, &materialized, &cached);
            let member_ids: HashSet<u64> = nodes.iter().map(|n| n.id).collect();
            let mut leaf_ids = HashSet::new();
            let leaves = nodes
                .iter()
                .flat_map(|n| n.inputs.iter())
                .filter(|i| !member_ids.contains(&i.id) && leaf_ids.insert(i.id))
                .cloned()
                .collect();
            Region {
                root: root.clone(),
                nodes,
                leaves,
            }
        })
        .collect();
    Ok(Plan { regions })
}

/// The nodes computed in the pass that materializes `root`, in dependency order.
fn region_members(
    root: &NodeRef,
    materialized: &HashSet<u64>,
    cached: &dyn Fn(&NodeRef) -> bool,
) -> Vec<NodeRef> {
    let is_leaf = |n: &NodeRef| n.id != root.id && (materialized.contains(&n.id) || cached(n));
    let mut fused_roots = vec![root.clone()];
    let mut seen = HashSet::from([root.id]);
    let mut i = 0;
    while i < fused_roots.len() {
        let node = fused_roots[i].clone();
        for (k, input) in node.inputs.iter().enumerate() {
            if node.op.reads_input_at_row(k) && !is_leaf(input) && seen.insert(input.id) {
                fused_roots.push(input.clone());
            }
        }
        i += 1;
    }
    topological_order_with(std::slice::from_ref(root), &|n: &NodeRef| is_leaf(n))
        .into_iter()
        .filter(|n| seen.contains(&n.id))
        .collect()
}

impl Plan {
    /// A readable description of the passes, shared by every backend's `explain()`: each
    /// pass names its output, its inputs, and the fused expression (nodes used twice in a
    /// pass get their own line).
    pub fn describe(&self, backend: &str) -> String {
        let mut out = String::new();
        let count = self.regions.len();
        let _ = writeln!(
            out,
            "plan on {backend}: {count} pass{}",
            if count == 1 { "" } else { "es" }
        );
        for (index, region) in self.regions.iter().enumerate() {
            let root = &region.root;
            let kind = match (&root.op, region.nodes.len()) {
                (Op::Extent, 1) => "reduction".to_string(),
                (Op::Extent, n) => format!("reduction with a fused prologue of {} ops", n - 1),
                (_, 1) => "single op".to_string(),
                (_, n) => format!("fused elementwise, {n} ops"),
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
            for node in &region.nodes {
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
    for node in &region.nodes {
        for input in &node.inputs {
            *uses.entry(input.id).or_insert(0) += 1;
        }
    }
    uses
}

fn shape(node: &NodeRef) -> String {
    let m = node.meta;
    let rows = if m.constant {
        "constant".to_string()
    } else {
        format!("{} rows", m.length)
    };
    format!("<{} x{}, {rows}>", m.dtype.name(), m.size)
}

/// Small constant sources are shown by value.
fn is_literal(node: &NodeRef) -> bool {
    node.meta.constant && node.is_source() && node.meta.size <= 8
}

fn leaf_name(node: &NodeRef) -> String {
    match node.output() {
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
