//! Splits a graph into fused regions: each region is one pass over rows that computes a
//! connected set of row-local nodes and materializes only its root. Every backend runs the
//! same plan; a backend's limits (bindings per kernel) only add split points.
//!
//! Planning is linear in the graph: one pass finds the nodes that must be materialized
//! (roots, reductions, random-access and constant inputs, nodes two regions would share),
//! one bounds each region's size and bindings by materializing inputs, and the two repeat
//! only while the second adds split points.

mod describe;
mod region;

pub use region::{Plan, Region, SortedKey, WhereRead};

use std::collections::{HashMap, HashSet};

use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{topological_order_with, Node, NodeRef, Op};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Fuse every row-local chain into one pass (the normal mode).
    On,
    /// Materialize every node: the reference for "fusion never changes a result" tests.
    Off,
}

/// Nodes one region computes at most: bounds the size of a generated kernel (and its
/// compile time) on every backend, so plans are the same everywhere.
pub const MAX_REGION_NODES: usize = 64;

/// Reductions over rows wider than this read a materialized input: their kernels keep a
/// running state per lane, which must stay small.
pub const NARROW_REDUCTION_LANES: u32 = 4;

/// Rows wider than this are computed a lane per invocation on WebGPU (per-row arrays of
/// thousands of lanes exhaust a GPU's private memory): inputs of such rows that are read
/// across lanes are materialized, so each lane is computed on its own.
pub const WIDE_ROW_LANES: u32 = 16;

/// `explain()`'s line, on a GPU device, for the pass of a view op (`concat slice rechunk`).
pub const ASSEMBLY_PASS: &str =
    "no kernel for whole stored chunks; one copy kernel per chunk made of parts of others";

/// How a region reads one of its leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// At the row it computes.
    Row,
    /// At any row (a gather source, segment starts).
    Random,
    /// A reduction over the leaf alone, which may read it a part (of its lanes) at a time.
    Reduced,
}

/// Bindings a leaf needs in a region.
pub type BindingCost = Box<dyn Fn(&Node, Access) -> usize>;

/// What one region may hold on a backend.
pub struct PlanLimits {
    pub max_region_nodes: usize,
    /// Bindings (storage buffers, sampled textures) one region may read.
    pub max_bindings: usize,
    /// The device limit `max_bindings` comes from, for messages.
    pub binding_limit_name: &'static str,
    pub binding_cost: BindingCost,
    /// Which keys the device's sort writes in sorted order as it sorts: gathers of those
    /// keys through its permutation are then written by its pass, not gathered after. A
    /// sort the device runs as split passes instead gathers them after those passes.
    pub sort_writes_keys: SortWrites,
    /// Whether the device adds the rows a pass computes into the bins of this bin count or
    /// sum (`Regions::add_to_bins`): its input is then computed in its pass, a task per input
    /// chunk, not stored first.
    pub adds_rows_to_bins: Box<dyn Fn(&Node) -> bool>,
}

/// Which of a sort's keys its pass writes in sorted order (`PlanLimits::sort_writes_keys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortWrites {
    NoKeys,
    /// The first key (an LSD radix sort's last passes carry it).
    MostSignificantKey,
    EveryKey,
}

impl SortWrites {
    /// Whether the sort writes key `key` (0: the most significant).
    pub fn writes(self, key: usize) -> bool {
        match self {
            SortWrites::NoKeys => false,
            SortWrites::MostSignificantKey => key == 0,
            SortWrites::EveryKey => true,
        }
    }
}

impl PlanLimits {
    /// No binding limit (the CPU backend).
    pub fn unbounded() -> PlanLimits {
        PlanLimits {
            max_region_nodes: MAX_REGION_NODES,
            max_bindings: usize::MAX,
            binding_limit_name: "",
            binding_cost: Box::new(|_, _| 0),
            sort_writes_keys: SortWrites::NoKeys,
            adds_rows_to_bins: Box::new(|_| false),
        }
    }
}

pub struct PlanOptions<'a> {
    pub fusion: Fusion,
    /// Plan roots that have an output as if they had none (`explain` of an evaluated graph).
    pub replan_roots: bool,
    pub limits: &'a PlanLimits,
}

pub fn plan(roots: &[NodeRef], fusion: Fusion) -> Result<Plan> {
    let limits = PlanLimits::unbounded();
    plan_with(
        roots,
        &PlanOptions {
            fusion,
            replan_roots: false,
            limits: &limits,
        },
    )
}

pub fn plan_with(roots: &[NodeRef], options: &PlanOptions) -> Result<Plan> {
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    let replan = options.replan_roots;
    let cached =
        |n: &NodeRef| n.has_output() && !(replan && root_ids.contains(&n.id) && !n.is_source());
    let order = topological_order_with(roots, &cached);
    for node in &order {
        node.check_alive()?;
    }
    let mut graph = Graph::new(&order, &cached, &*options.limits.adds_rows_to_bins);
    graph.materialized.extend(root_ids.iter().copied());
    for (index, node) in order.iter().enumerate() {
        if graph.leaf[index] {
            continue;
        }
        if options.fusion == Fusion::On {
            // One gather per key: a second gather of the same key is computed as any other.
            let written = graph.sorted_key(node).filter(|w| {
                options.limits.sort_writes_keys.writes(w.1)
                    && !graph.written_by_sort.values().any(|x| x == w)
            });
            if let Some(written) = written {
                graph.materialized.insert(node.id);
                graph.written_by_sort.insert(index, written);
                continue;
            }
        }
        let reduction = matches!(node.op, Op::Reduce(_));
        let bins = graph.adds_to_bins(node);
        // A scatter's kernel is a fixed copy (a point draw on WebGL2), a sort's and a
        // compaction's library passes, a bin count's a walk of its own unless the device
        // adds rows to bins as it computes them: no fused inputs.
        let fixed = match node.op {
            Op::BinCount { .. } | Op::BinSum { .. } => !bins,
            _ => matches!(
                node.op,
                Op::Scatter
                    | Op::SortPermutation { .. }
                    | Op::Compact
                    | Op::Scan { .. }
                    | Op::Lookup
            ),
        };
        if options.fusion == Fusion::Off || reduction || bins || fixed || node.op.is_assembly() {
            graph.materialized.insert(node.id);
        }
        for (k, input) in node.inputs.iter().enumerate() {
            if node.op.computes_input_where_read(k) {
                // Computed where read: a narrow column of one chunk (a chunk is read whole).
                let narrow = input.meta.size <= NARROW_REDUCTION_LANES;
                if options.fusion == Fusion::Off
                    || !narrow
                    || input.chunks.len() != 1
                    || input.meta.constant
                {
                    graph.materialized.insert(input.id);
                }
                continue;
            }
            // Random-access inputs, constants feeding rows, the inputs of wide reductions,
            // wide rows read across lanes and inputs chunked otherwise than their consumer
            // are computed once, on their own.
            // A narrow reduction computes its validity flags (a `where` mask) in its own
            // pass, as it does its values.
            let wide_reduction = reduction
                && (node.inputs[0].meta.size > NARROW_REDUCTION_LANES
                    || input.meta.size > NARROW_REDUCTION_LANES);
            let wide_across = node.op.reads_across_lanes() && input.meta.size > WIDE_ROW_LANES;
            // A reduction's and a bin pass's tasks follow their input's chunks.
            let other_chunks = !reduction && !bins && !same_chunks(input, node);
            if fixed
                || !node.op.reads_input_at_row(k)
                || (input.meta.constant && !node.meta.constant)
                || wide_reduction
                || wide_across
                || other_chunks
            {
                graph.materialized.insert(input.id);
            }
        }
    }
    graph.materialize_unfit_where_read();
    loop {
        graph.materialize_shared();
        if !graph.bound_regions(options.limits)? {
            break;
        }
    }
    Ok(graph.regions())
}

/// Whether input `k` of `op` may be computed in the consumer's region: at the row, or where
/// read.
fn fuses_input(op: &Op, k: usize) -> bool {
    op.reads_input_at_row(k) || op.computes_input_where_read(k)
}

/// Whether `input` can be computed in the chunk tasks of `consumer`: both in one chunk, or
/// with the same chunk boundaries.
fn same_chunks(input: &Node, consumer: &Node) -> bool {
    (input.chunks.len() == 1 && consumer.chunks.len() == 1) || input.chunks == consumer.chunks
}

/// The graph being planned: nodes in topological order with their consumers.
struct Graph<'a> {
    order: &'a [NodeRef],
    index: HashMap<u64, usize>,
    /// Nodes with an output already: read, never computed.
    leaf: Vec<bool>,
    /// Per node, the nodes reading it at the row they compute.
    row_consumers: Vec<Vec<usize>>,
    materialized: HashSet<u64>,
    /// Sorted keys (by node index) that a sort's pass writes: the sort's index and the key.
    written_by_sort: HashMap<usize, (usize, usize)>,
    /// `PlanLimits::adds_rows_to_bins`.
    adds_rows_to_bins: &'a dyn Fn(&Node) -> bool,
}

impl<'a> Graph<'a> {
    fn new(
        order: &'a [NodeRef],
        cached: &dyn Fn(&NodeRef) -> bool,
        adds_rows_to_bins: &'a dyn Fn(&Node) -> bool,
    ) -> Graph<'a> {
        let index: HashMap<u64, usize> = order.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        let leaf: Vec<bool> = order.iter().map(cached).collect();
        let mut row_consumers = vec![Vec::new(); order.len()];
        for (i, node) in order.iter().enumerate() {
            if leaf[i] {
                continue;
            }
            for (k, input) in node.inputs.iter().enumerate() {
                if fuses_input(&node.op, k) {
                    row_consumers[index[&input.id]].push(i);
                }
            }
        }
        Graph {
            order,
            index,
            leaf,
            row_consumers,
            materialized: HashSet::new(),
            written_by_sort: HashMap::new(),
            adds_rows_to_bins,
        }
    }

    /// Whether `node`'s pass adds the rows it computes into bins (`Region::adds_to_bins`).
    fn adds_to_bins(&self, node: &Node) -> bool {
        matches!(node.op, Op::BinCount { .. } | Op::BinSum { .. }) && (self.adds_rows_to_bins)(node)
    }

    /// For a gather of a key of a sort (to be run) through its permutation: the sort's
    /// index and the key's.
    fn sorted_key(&self, node: &Node) -> Option<(usize, usize)> {
        let [permutation, key] = &node.inputs[..] else {
            return None;
        };
        let sort = self.index[&permutation.id];
        let is_sort = matches!(permutation.op, Op::SortPermutation { .. });
        if node.op != Op::Gather || !is_sort || self.leaf[sort] {
            return None;
        }
        let k = permutation.inputs.iter().position(|k| k.id == key.id)?;
        Some((sort, k))
    }

    /// Whether node `i` is computed inside its consumers' region.
    fn fused(&self, i: usize) -> bool {
        !self.leaf[i] && !self.materialized.contains(&self.order[i].id)
    }

    /// Node `start` and the fused nodes it reads at its rows (through fused nodes), in
    /// order.
    fn row_subgraph(&self, start: usize) -> Vec<usize> {
        let mut members = vec![start];
        let mut seen = HashSet::from([start]);
        let mut at = 0;
        while at < members.len() {
            let node = &self.order[members[at]];
            for (k, input) in node.inputs.iter().enumerate() {
                let j = self.index[&input.id];
                if node.op.reads_input_at_row(k) && self.fused(j) && seen.insert(j) {
                    members.push(j);
                }
            }
            at += 1;
        }
        crate::heap_sort::heap_sort(&mut members);
        members
    }

    /// A node computed where read runs at any row of its own: it may not number rows or
    /// walk segments, nor be wide (computed a lane per invocation), and the leaves it reads
    /// at its rows must be one chunk (read whole). Where one is not fit, its producer is
    /// materialized.
    fn materialize_unfit_where_read(&mut self) {
        for i in 0..self.order.len() {
            if self.leaf[i] {
                continue;
            }
            let node = self.order[i].clone();
            for (k, input) in node.inputs.iter().enumerate() {
                let j = self.index[&input.id];
                if !node.op.computes_input_where_read(k) || !self.fused(j) {
                    continue;
                }
                let fit = self.row_subgraph(j).iter().all(|&m| {
                    let member = &self.order[m];
                    let row_leaves_whole = (member.inputs.iter().enumerate())
                        .filter(|(k, input)| {
                            member.op.reads_input_at_row(*k) && !self.fused(self.index[&input.id])
                        })
                        .all(|(_, input)| input.chunks.len() == 1 || input.meta.constant);
                    !member.op.numbers_rows()
                        && member.op != Op::SegmentedMap
                        && member.meta.size <= WIDE_ROW_LANES
                        && row_leaves_whole
                });
                if !fit {
                    self.materialized.insert(input.id);
                }
            }
        }
    }

    /// A node fused into two regions would be computed twice: materialize it. Consumers come
    /// after their inputs, so walking backwards sees every consumer's region first.
    fn materialize_shared(&mut self) {
        let mut owner: Vec<usize> = (0..self.order.len()).collect();
        for i in (0..self.order.len()).rev() {
            if !self.fused(i) {
                continue;
            }
            let mut owners = self.row_consumers[i].iter().map(|&c| owner[c]);
            let first = owners.next();
            match first {
                Some(o) if owners.all(|other| other == o) => owner[i] = o,
                // A segmented sum's values, which its blocks' pass reads too: each computes
                // them at the rows it reads (other rows), so none is stored.
                Some(_) if self.summed_with_its_blocks(i) => {}
                _ => {
                    self.materialized.insert(self.order[i].id);
                }
            }
        }
    }

    /// Whether node `i`'s fusing consumers are one segmented sum and the pass summing its
    /// blocks, both computing it where read: the two read different rows of it.
    fn summed_with_its_blocks(&self, i: usize) -> bool {
        let id = self.order[i].id;
        let consumers: Vec<&NodeRef> = (self.row_consumers[i].iter())
            .map(|&c| &self.order[c])
            .collect();
        let mut sums = consumers.iter().filter(|c| c.op == Op::SegmentSum);
        let (Some(sum), None) = (sums.next(), sums.next()) else {
            return false;
        };
        let blocks = sum.inputs.get(2).map(|b| b.id);
        consumers.iter().all(|c| {
            let reads_values_only = (c.inputs.iter().enumerate())
                .all(|(k, input)| input.id != id || c.op.computes_input_where_read(k));
            reads_values_only && (c.id == sum.id || Some(c.id) == blocks)
        })
    }

    /// Bounds every region's node count and bindings by materializing its largest fused
    /// inputs; returns whether it materialized anything.
    fn bound_regions(&mut self, limits: &PlanLimits) -> Result<bool> {
        let n = self.order.len();
        // Per node: nodes computed with it (an upper bound where fused nodes are shared) and
        // the leaves its fused subgraph reads.
        let mut count = vec![0usize; n];
        let mut leaves: Vec<HashSet<usize>> = vec![HashSet::new(); n];
        let mut random_leaves: Vec<HashSet<usize>> = vec![HashSet::new(); n];
        let mut changed = false;
        let cost = |leaves: &HashSet<usize>, random: &HashSet<usize>, reduced: Option<usize>| {
            leaves
                .iter()
                .map(|&l| {
                    let access = match l {
                        _ if reduced == Some(l) => Access::Reduced,
                        _ if random.contains(&l) => Access::Random,
                        _ => Access::Row,
                    };
                    (limits.binding_cost)(&self.order[l], access)
                })
                .sum::<usize>()
        };
        for i in 0..n {
            if self.leaf[i] {
                continue;
            }
            let node = &self.order[i];
            if node.op.is_assembly() {
                // No kernel: the executor shares or copies its inputs' stored rows.
                continue;
            }
            loop {
                let mut total = 1;
                let (mut reads, mut random) = (HashSet::new(), HashSet::new());
                let mut largest: Option<(usize, usize)> = None;
                for (k, input) in node.inputs.iter().enumerate() {
                    let j = self.index[&input.id];
                    if fuses_input(&node.op, k) && self.fused(j) {
                        total += count[j];
                        reads.extend(leaves[j].iter().copied());
                        random.extend(random_leaves[j].iter().copied());
                        if node.op.computes_input_where_read(k) {
                            // Computed at the rows read: every leaf bound whole.
                            random.extend(leaves[j].iter().copied());
                        }
                        let weight = count[j] + leaves[j].len();
                        if largest.is_none_or(|(_, w)| weight > w) {
                            largest = Some((j, weight));
                        }
                    } else {
                        reads.insert(j);
                        if !node.op.reads_input_at_row(k) {
                            random.insert(j);
                        }
                    }
                }
                let too_many_nodes = total > limits.max_region_nodes;
                // A reduction of a materialized input alone (no validity flags) may read it
                // a part of its lanes at a time.
                let reduced = match node.op {
                    Op::Reduce(_) if node.inputs.len() == 1 => {
                        Some(self.index[&node.inputs[0].id]).filter(|&j| !self.fused(j))
                    }
                    _ => None,
                };
                let bindings = cost(&reads, &random, reduced);
                if !too_many_nodes && bindings <= limits.max_bindings {
                    count[i] = total;
                    leaves[i] = reads;
                    random_leaves[i] = random;
                    break;
                }
                match largest {
                    Some((j, _)) => {
                        self.materialized.insert(self.order[j].id);
                        changed = true;
                    }
                    None => {
                        return Err(GpuTableError::new(
                            ErrorCode::LimitExceeded,
                            format!(
                                "{} of t{} reads {bindings} bindings in one kernel; this device's {} is {}",
                                node.op.name(),
                                node.id,
                                limits.binding_limit_name,
                                limits.max_bindings
                            ),
                        ))
                    }
                }
            }
            if self.materialized.contains(&node.id) {
                // A materialized node starts a region of its own: consumers read it.
                count[i] = 0;
                leaves[i].clear();
                random_leaves[i].clear();
            }
        }
        Ok(changed)
    }

    fn regions(&self) -> Plan {
        let mut regions: Vec<Region> = Vec::new();
        let mut region_of: HashMap<usize, usize> = HashMap::new();
        for i in 0..self.order.len() {
            if self.leaf[i] || !self.materialized.contains(&self.order[i].id) {
                continue;
            }
            if let Some(&(sort, key)) = self.written_by_sort.get(&i) {
                // The sort comes first in the order, so its region exists.
                regions[region_of[&sort]].sorted_keys.push(SortedKey {
                    key,
                    node: self.order[i].clone(),
                });
                continue;
            }
            region_of.insert(i, regions.len());
            regions.push(self.region(i));
        }
        Plan { regions }
    }

    /// The region materializing node `r`: it and every fused node it reads at the row, and
    /// the nodes those compute where read (with what they read at their rows).
    fn region(&self, r: usize) -> Region {
        let members = self.row_subgraph(r);
        let mut where_read: Vec<(usize, Vec<usize>)> = Vec::new();
        for &m in &members {
            let node = &self.order[m];
            for (k, input) in node.inputs.iter().enumerate() {
                let j = self.index[&input.id];
                let fused = node.op.computes_input_where_read(k) && self.fused(j);
                if fused && where_read.iter().all(|(p, _)| *p != j) {
                    where_read.push((j, self.row_subgraph(j)));
                }
            }
        }
        let read_there = where_read.iter().flat_map(|(_, nodes)| nodes);
        let computed: HashSet<usize> = members.iter().chain(read_there).copied().collect();
        let mut leaf_seen = HashSet::new();
        let mut leaves = Vec::new();
        let read_there = where_read.iter().flat_map(|(_, nodes)| nodes);
        for &m in members.iter().chain(read_there) {
            for input in &self.order[m].inputs {
                let j = self.index[&input.id];
                if !computed.contains(&j) && leaf_seen.insert(j) {
                    leaves.push(input.clone());
                }
            }
        }
        let nodes = |list: &[usize]| list.iter().map(|&m| self.order[m].clone()).collect();
        let mut region = Region::new(self.order[r].clone(), nodes(&members), leaves);
        region.adds_to_bins = self.adds_to_bins(&self.order[r]);
        region.where_read = (where_read.iter())
            .map(|(producer, list)| WhereRead {
                producer: self.order[*producer].clone(),
                nodes: nodes(list),
            })
            .collect();
        region
    }
}
