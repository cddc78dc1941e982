//! A plan's passes: each region, the nodes it computes at its row and where read, the
//! leaves it reads, the rows and chunk tasks it runs as.

use std::collections::HashSet;

use crate::ir::{NodeRef, Op};

pub struct Region {
    /// The node whose output this region materializes.
    pub root: NodeRef,
    /// Nodes computed in this pass at the row it computes, inputs before consumers, ending
    /// with `root`.
    pub nodes: Vec<NodeRef>,
    /// Nodes consumers in `nodes` compute at the rows they read rather than at the pass's
    /// row (a segmented sum's values, computed inside its loop). A node may also be in
    /// `nodes`: it is then computed in both places.
    pub where_read: Vec<WhereRead>,
    /// Materialized inputs the pass reads.
    pub leaves: Vec<NodeRef>,
    /// A sort's keys in its order (gathers of a key through the sort's permutation), which
    /// its pass writes too where the device's sort can (`PlanLimits::sort_writes_keys`).
    pub sorted_keys: Vec<SortedKey>,
    /// Rows the pass iterates over: a reduction or a scatter walks its input's rows; one chunk task of a
    /// chunked region, that chunk's rows.
    pub rows: u32,
    /// The first of those rows in the whole pass (kernels number rows within their task;
    /// ops that compute from the row index, such as `sequence`, add this).
    pub first_row: u64,
    /// A bin count's or sum's pass that adds the rows it computes into the bins, a task per
    /// input chunk (`PlanLimits::adds_rows_to_bins`), rather than walking its stored input.
    pub adds_to_bins: bool,
}

/// A node a consumer computes at the rows it reads, and the nodes computing it there.
#[derive(Clone)]
pub struct WhereRead {
    pub producer: NodeRef,
    /// Inputs before consumers, ending with `producer`.
    pub nodes: Vec<NodeRef>,
}

/// A gather of key `key` of a sort through the sort's own permutation.
#[derive(Clone)]
pub struct SortedKey {
    pub key: usize,
    pub node: NodeRef,
}

impl Region {
    pub fn new(root: NodeRef, nodes: Vec<NodeRef>, leaves: Vec<NodeRef>) -> Region {
        let rows = match root.op {
            // A bin count walks every input row into its bins' rows.
            Op::Reduce(_) | Op::Scatter | Op::BinCount { .. } | Op::BinSum { .. } => {
                root.inputs[0].meta.length
            }
            _ => root.meta.length,
        };
        Region {
            root,
            nodes,
            where_read: Vec::new(),
            leaves,
            sorted_keys: Vec::new(),
            rows,
            first_row: 0,
            adds_to_bins: false,
        }
    }

    /// Which of a sort's keys (indices into its inputs) its pass writes in sorted order.
    pub fn sorted_key_indices(&self) -> Vec<usize> {
        self.sorted_keys.iter().map(|k| k.key).collect()
    }

    /// The nodes whose outputs the pass writes: its root, then any sorted keys.
    pub fn outputs(&self) -> impl Iterator<Item = &NodeRef> {
        std::iter::once(&self.root).chain(self.sorted_keys.iter().map(|k| &k.node))
    }

    /// Every node the pass computes, at its row or where read (a node in both, or read
    /// by two consumers where they read, more than once).
    pub fn computed(&self) -> impl Iterator<Item = &NodeRef> {
        (self.where_read.iter())
            .flat_map(|w| &w.nodes)
            .chain(&self.nodes)
    }

    pub fn is_reduction(&self) -> bool {
        matches!(self.root.op, Op::Reduce(_))
    }

    /// A scatter's pass: over its input rows, writing wherever they say.
    pub fn is_scatter(&self) -> bool {
        self.root.op == Op::Scatter
    }

    /// A sort's pass: its keys read whole, its permutation written whole.
    pub fn is_sort(&self) -> bool {
        matches!(self.root.op, Op::SortPermutation { .. })
    }

    /// A walk's pass (a compaction's or a scan's): its input read whole, in order, its
    /// output written whole.
    pub fn is_walk(&self) -> bool {
        self.root.op.is_walk() && !self.adds_to_bins
    }

    /// A pass of one task over all its input rows (a sort's or a walk's): a device runs it
    /// with its own kernels or as a schedule of other passes.
    pub fn is_whole(&self) -> bool {
        self.is_sort() || self.is_walk()
    }

    /// Rows of the output: a reduction's row per lane, a scatter's or a bin count's length,
    /// else one per row computed.
    pub fn output_rows(&self) -> u32 {
        let bins = matches!(self.root.op, Op::BinCount { .. } | Op::BinSum { .. });
        match self.is_reduction() || self.is_scatter() || bins {
            true => self.root.meta.length,
            false => self.rows,
        }
    }

    /// The chunks the pass runs as separate tasks: the root's, or for a reduction, a scatter
    /// or a bin pass its input's (a partial per chunk; the others' chunks write one output).
    pub fn task_chunks(&self) -> Vec<u32> {
        match () {
            _ if self.is_reduction() || self.is_scatter() || self.adds_to_bins => {
                self.root.inputs[0].chunks.to_vec()
            }
            _ if self.root.meta.constant => vec![self.rows],
            _ => self.root.chunks.to_vec(),
        }
    }

    /// Ids of the nodes the pass reads at rows other than the row it computes (gather
    /// sources, segment starts, the inputs of a row copy).
    pub fn random_access_inputs(&self) -> HashSet<u64> {
        let at_other_rows = self.nodes.iter().flat_map(|n| {
            n.inputs
                .iter()
                .enumerate()
                .filter(|(i, _)| !n.op.reads_input_at_row(*i))
                .map(|(_, input)| input.id)
        });
        // Nodes computed where read read every input at those rows.
        let where_read = (self.where_read.iter())
            .flat_map(|w| &w.nodes)
            .flat_map(|n| n.inputs.iter().map(|i| i.id));
        at_other_rows.chain(where_read).collect()
    }

    /// Whether a leaf is read both whole (a gather source) and at the row (the ids): one
    /// value binds it, so the pass runs as one task and its chunks are copied out after.
    /// `random`: the pass's `random_access_inputs`.
    pub fn reads_a_leaf_both_ways(&self, random: &HashSet<u64>) -> bool {
        random.iter().any(|&id| self.reads_at_row(id))
    }

    /// Whether some node reads input `id` at the row (rather than whole).
    pub fn reads_at_row(&self, id: u64) -> bool {
        self.nodes.iter().any(|n| {
            n.inputs
                .iter()
                .enumerate()
                .any(|(k, input)| input.id == id && n.op.reads_input_at_row(k))
        })
    }

    /// Whether a node computed where read reads input `id` at its rows (it needs the input's
    /// rows in place, as a node of the pass reading at the row does).
    pub fn reads_where_read_at_row(&self, id: u64) -> bool {
        self.where_read.iter().flat_map(|w| &w.nodes).any(|n| {
            (n.inputs.iter().enumerate())
                .any(|(k, input)| input.id == id && n.op.reads_input_at_row(k))
        })
    }

    /// This pass over `rows` rows: one chunk task (whose first row is the pass's first).
    pub fn task(&self, rows: u32) -> Region {
        self.task_at(0, rows)
    }

    /// This pass over rows `first_row..first_row + rows`: one chunk task.
    pub fn task_at(&self, first_row: u64, rows: u32) -> Region {
        Region {
            root: self.root.clone(),
            nodes: self.nodes.clone(),
            where_read: self.where_read.clone(),
            leaves: self.leaves.clone(),
            sorted_keys: self.sorted_keys.clone(),
            rows,
            first_row,
            adds_to_bins: self.adds_to_bins,
        }
    }

    /// Whether a node computes from the row index (its task's first row is a parameter).
    pub fn numbers_rows(&self) -> bool {
        self.nodes.iter().any(|n| n.op.numbers_rows())
    }
}

pub struct Plan {
    /// In dependency order.
    pub regions: Vec<Region>,
}

impl Plan {
    /// Materialized inputs of the whole plan (nodes with an output already), each once.
    pub fn leaves(&self) -> Vec<NodeRef> {
        let computed: HashSet<u64> = self.computed_ids();
        let mut seen = HashSet::new();
        self.regions
            .iter()
            .flat_map(|r| r.leaves.iter())
            .filter(|l| !computed.contains(&l.id) && seen.insert(l.id))
            .cloned()
            .collect()
    }

    /// Ids of every output the plan's passes write.
    pub fn computed_ids(&self) -> HashSet<u64> {
        (self.regions.iter())
            .flat_map(|r| r.outputs())
            .map(|n| n.id)
            .collect()
    }
}
