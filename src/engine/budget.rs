//! The memory budget (`createDevice({allowedMem})`): the device bytes each chunk task of a
//! schedule holds (its input parts, the copies that assemble them, its output, and what
//! earlier passes still hold), projected before any kernel runs. A task over the budget is
//! refused (`Schedule::check`), except row-local work, which the schedule cuts into row
//! ranges that fit. Within the budget, inputs from the host stream through the device a task
//! at a time, and a root output larger than half the budget is read back as it is computed
//! and stays on the host.

use std::collections::{HashMap, HashSet};

use super::{rows_past_a_binding, schedule::sorts_natively, split_sort_scratch_bytes, CostModel};
use crate::ir::{assembly_ranges, Node, NodeRef, Op};
use crate::plan::{Plan, Region};

/// Parameter blocks a GPU task may add to its values.
pub const TASK_OVERHEAD_BYTES: u64 = 64 << 10;

/// What the projection of one schedule knows about its plan: which outputs are computed
/// where, read when and streamed, and which inputs come from the host.
pub(super) struct Ledger<'a> {
    device: &'a dyn CostModel,
    plan: &'a Plan,
    roots: &'a HashSet<u64>,
    pub streamed: HashSet<u64>,
    pub copied_whole: HashSet<u64>,
    /// The pass computing each output.
    computed: HashMap<u64, usize>,
    /// The last pass reading each computed output.
    last_read: HashMap<u64, usize>,
    /// Plan inputs on the device already (asked once per leaf, not once per task).
    on_device: HashMap<u64, bool>,
    /// Bytes of the inputs copied whole, held by every pass.
    copies_held: u64,
    /// The row ranges of outputs whose pass was cut within a chunk: each range is stored
    /// on its own, so a later task reading other rows of them reads a copy joining them.
    parts: std::cell::RefCell<HashMap<u64, Vec<(u64, u64)>>>,
    /// Device bytes each view (assembly output) holds once made (`assembly_chunks`).
    view_bytes: HashMap<u64, u64>,
}

impl<'a> Ledger<'a> {
    pub fn new(
        device: &'a dyn CostModel,
        plan: &'a Plan,
        roots: &'a HashSet<u64>,
        resident: &dyn Fn(&NodeRef) -> bool,
        budget: Option<u64>,
        read_back: &HashSet<u64>,
    ) -> Ledger<'a> {
        let streamed: HashSet<u64> = match budget {
            Some(budget) => (plan.regions.iter())
                .flat_map(|r| r.outputs())
                .filter(|output| roots.contains(&output.id))
                .filter(|output| {
                    read_back.contains(&output.id)
                        || output_bytes(device, output).saturating_mul(2) > budget
                })
                .map(|output| output.id)
                .collect(),
            None => HashSet::new(),
        };
        let computed: HashMap<u64, usize> = (plan.regions.iter().enumerate())
            .flat_map(|(i, r)| r.outputs().map(move |output| (output.id, i)))
            .collect();
        let mut last_read = HashMap::new();
        for (index, region) in plan.regions.iter().enumerate() {
            for leaf in &region.leaves {
                if computed.contains_key(&leaf.id) {
                    last_read.insert(leaf.id, index);
                }
            }
        }
        let on_device: HashMap<u64, bool> = (plan.regions.iter())
            .flat_map(|r| r.leaves.iter())
            .map(|leaf| (leaf.id, resident(leaf)))
            .collect();
        // Without a budget, inputs not on the device are copied whole before the first
        // pass. A chunk past one binding is still copied a task's part at a time.
        let copied: Vec<NodeRef> = match budget {
            Some(_) => Vec::new(),
            None => (plan.leaves().into_iter())
                .filter(|leaf| !on_device[&leaf.id] && !past_a_binding(device, leaf))
                .collect(),
        };
        let mut ledger = Ledger {
            device,
            plan,
            roots,
            streamed,
            copies_held: copied.iter().map(|leaf| output_bytes(device, leaf)).sum(),
            copied_whole: copied.iter().map(|leaf| leaf.id).collect(),
            computed,
            last_read,
            on_device,
            parts: Default::default(),
            view_bytes: HashMap::new(),
        };
        ledger.view_bytes = (plan.regions.iter())
            .filter(|region| region.root.op.is_assembly())
            .map(|region| {
                let chunks = ledger.assembly_chunks(region);
                (region.root.id, chunks.iter().map(|(_, held, _)| held).sum())
            })
            .collect();
        ledger
    }

    /// Records the tasks a pass runs: where they cut its chunks, its outputs are stored a
    /// task's rows at a time.
    pub fn record_tasks(&self, region: &Region, tasks: &[(u64, u32)]) {
        let ranges: Vec<(u64, u64)> = (tasks.iter())
            .map(|&(first, rows)| (first, first + rows as u64))
            .collect();
        let root = &region.root;
        if ranges.iter().all(|&(lo, hi)| whole_chunk(root, lo, hi)) {
            return;
        }
        let mut parts = self.parts.borrow_mut();
        for output in region.outputs() {
            parts.insert(output.id, ranges.clone());
        }
    }

    /// Records how a walk's output is stored: as its chunks, but for a scan the device walks,
    /// which writes a part per stored part of its input.
    pub fn record_walk(&self, region: &Region, native: bool) {
        let (root, input) = (&region.root, &region.root.inputs[0]);
        let input_parts = self.parts.borrow().get(&input.id).cloned();
        if let (Some(ranges), true, Op::Scan { .. }) = (input_parts, native, &root.op) {
            self.parts.borrow_mut().insert(root.id, ranges);
        }
    }

    /// Whether rows `start..end` of `leaf` are one stored value (no copy joins them).
    fn stored_whole(&self, leaf: &Node, start: u64, end: u64) -> bool {
        match self.parts.borrow().get(&leaf.id) {
            Some(ranges) => start == end || ranges.contains(&(start, end)),
            None => whole_chunk(leaf, start, end),
        }
    }

    /// Whether `leaf` is brought to the device a task's rows at a time: an input not on it
    /// and not copied whole, or an output of an earlier pass that was streamed to the host.
    pub fn copied_per_task(&self, leaf: &NodeRef) -> bool {
        let input = !self.computed.contains_key(&leaf.id)
            && !self.on_device.get(&leaf.id).copied().unwrap_or(false)
            && !self.copied_whole.contains(&leaf.id);
        input || self.streamed.contains(&leaf.id)
    }

    /// Bytes held while pass `index` runs by what came before it: outputs of earlier passes
    /// a root or a later pass still needs, and the inputs copied whole.
    pub fn held_before(&self, index: usize) -> u64 {
        let outputs: u64 = (self.plan.regions[..index].iter())
            .flat_map(|r| r.outputs())
            .filter(|output| {
                !self.streamed.contains(&output.id)
                    && (self.roots.contains(&output.id)
                        || self.last_read.get(&output.id) >= Some(&index))
            })
            .map(|output| self.held_bytes(output))
            .sum();
        outputs.saturating_add(self.copies_held)
    }

    /// Device bytes a computed output holds: a view's, what it copied or brought and the
    /// chunks it shares with outputs of this plan (the chunks of plan inputs it shares are
    /// the caller's).
    fn held_bytes(&self, output: &NodeRef) -> u64 {
        match self.view_bytes.get(&output.id) {
            Some(&bytes) => bytes,
            None => output_bytes(self.device, output),
        }
    }

    /// The projected bytes of each of `tasks` (`(first row, rows)`) of `region`'s pass,
    /// besides `extra` (`held_before` and working arrays a device keeps from earlier passes).
    pub fn pass_bytes(
        &self,
        region: &Region,
        tasks: &[(u64, u32)],
        cut_after: bool,
        extra: u64,
    ) -> Vec<u64> {
        if region.root.op.is_assembly() {
            return self.assembly_bytes(region, extra);
        }
        // A sort writing its keys in order holds them too (twice where read back).
        let sorted_keys: u64 = (region.sorted_keys.iter())
            .map(|k| self.output_bytes_read_back(&k.node))
            .sum();
        let extra = extra.saturating_add(sorted_keys);
        let parts = tasks.len() as u32;
        let random = region.random_access_inputs();
        let mut done = 0u64;
        let mut bytes = Vec::with_capacity(tasks.len());
        for &(first, rows) in tasks {
            let own = self.task_bytes(region, &random, (first, rows), parts, cut_after);
            bytes.push(own.saturating_add(done).saturating_add(extra));
            done = done.saturating_add(self.left_by_task(region, rows));
        }
        bytes
    }

    /// Tasks covering `tasks`' rows in order, each cut into row ranges (within its chunk)
    /// that hold at most `budget`; `None` where one row of some task does not fit (the
    /// whole task is refused then, naming what it needs).
    pub fn fit(
        &self,
        region: &Region,
        tasks: &[(u64, u32)],
        extra: u64,
        budget: u64,
    ) -> Option<Vec<(u64, u32)>> {
        // A reduction's partial states grow with the tasks: cut again until the count holds.
        let mut parts = tasks.len() as u32;
        loop {
            let fitted = self.fit_with_parts(region, tasks, extra, budget, parts)?;
            if fitted.len() as u32 <= parts {
                return Some(fitted);
            }
            parts = fitted.len() as u32;
        }
    }

    fn fit_with_parts(
        &self,
        region: &Region,
        tasks: &[(u64, u32)],
        extra: u64,
        budget: u64,
        parts: u32,
    ) -> Option<Vec<(u64, u32)>> {
        let random = region.random_access_inputs();
        let mut fitted = Vec::with_capacity(tasks.len());
        let mut done = 0u64;
        for &(start, rows) in tasks {
            let end = start + rows as u64;
            let mut first = start;
            loop {
                let left = (end - first) as u32;
                let bytes = |rows: u32| {
                    (self.task_bytes(region, &random, (first, rows), parts, false))
                        .saturating_add(done)
                        .saturating_add(extra)
                };
                // The most rows from `first` that fit (bytes grow with the rows).
                let take = match bytes(left) <= budget {
                    true => left,
                    false => {
                        let (mut lo, mut hi) = (0u32, left);
                        while hi - lo > 1 {
                            let mid = lo + (hi - lo) / 2;
                            match bytes(mid) <= budget {
                                true => lo = mid,
                                false => hi = mid,
                            }
                        }
                        lo
                    }
                };
                if take == 0 && left > 0 {
                    return None;
                }
                fitted.push((first, take));
                done = done.saturating_add(self.left_by_task(region, take));
                first += take as u64;
                if first >= end {
                    break;
                }
            }
        }
        Some(fitted)
    }

    /// Bytes a finished task of `region`'s pass leaves held while the pass makes its next
    /// ones: an elementwise chunk kept on the device.
    fn left_by_task(&self, region: &Region, rows: u32) -> u64 {
        let kept = !region.is_reduction()
            && !region.is_scatter()
            && !region.adds_to_bins
            && !region.is_whole()
            && !self.streamed.contains(&region.root.id);
        match kept {
            true => bytes_of(self.device, &region.root, rows as u64),
            false => 0,
        }
    }

    /// Bytes of `node`'s whole output, twice where it is read back to the host.
    fn output_bytes_read_back(&self, node: &Node) -> u64 {
        let times = if self.streamed.contains(&node.id) {
            2
        } else {
            1
        };
        output_bytes(self.device, node) * times
    }

    /// Bytes one task over rows `first..first + rows` of `region`'s pass (whose
    /// random-access inputs are `random`) adds: input parts brought from the host, the copies
    /// assembling parts of several chunks, the output (twice when it is read back), and a
    /// sort's or a reduction's working arrays.
    fn task_bytes(
        &self,
        region: &Region,
        random: &HashSet<u64>,
        (first, rows): (u64, u32),
        parts: u32,
        cut_after: bool,
    ) -> u64 {
        let device = self.device;
        let root = &region.root;
        let rows = rows as u64;
        let native = (region.is_sort() && sorts_natively(device, region))
            || (region.is_walk() && device.walks(root));
        let mut bytes =
            device.task_overhead_bytes() + self.input_bytes(region, random, (first, rows), native);
        let output = |rows: u64| {
            let times = if self.streamed.contains(&root.id) {
                2
            } else {
                1
            };
            bytes_of(device, root, rows) * times
        };
        if region.is_scatter() {
            // Every task writes into the one output, held from the first task on.
            return bytes + output(stored(root));
        }
        if region.adds_to_bins {
            // The totals every task adds into, and the output made of them at the end.
            let bins = device.bins_bytes(root);
            return bytes + device.where_read_scratch_bytes(region) + bins + output(stored(root));
        }
        if region.is_sort() {
            // The permutation and the sort's working arrays, beside its keys.
            let scratch = device.sort_scratch_bytes(root.meta.length, root.inputs.len());
            return bytes + scratch + self.joined_key_bytes(region) + output(stored(root));
        }
        if region.is_walk() {
            // Composed, at most: a compaction's flags as uint32, their scan, the
            // destinations and the scatter; a scan's levels (of its lanes); a bin count's
            // sort of its input; a lookup's sort of its table.
            let inputs = root.inputs.iter().map(|input| input.meta.length);
            let walked = inputs.fold(root.meta.length, u32::max);
            let scratch = match native {
                // The inputs it reads whole (a lookup's table) joined into one value each.
                true => {
                    let whole = (root.inputs.iter().enumerate())
                        .filter(|(k, _)| device.walk_joins_input(root, *k))
                        .map(|(_, input)| input);
                    device.walk_scratch_bytes(root) + self.joined_bytes(whole)
                }
                false => split_sort_scratch_bytes(device, walked) * root.meta.size as u64,
            };
            return bytes + scratch + output(stored(root));
        }
        if region.is_reduction() {
            // Every task's partial states (twice: a combine round reads one set, writes the
            // next), this task's scratch states, and the final row.
            let states = device.reduction_state_bytes(root, parts);
            let scratch = device.reduction_scratch_bytes(root, rows as u32);
            return bytes + 2 * states + scratch + output(stored(root));
        }
        bytes += device.where_read_scratch_bytes(region);
        bytes += output(rows);
        if cut_after {
            // The chunks copied out of the whole output.
            bytes += bytes_of(device, root, rows);
        }
        bytes
    }

    /// The bytes a task brings its inputs' rows in: the parts of host inputs copied a task
    /// at a time, and copies joining parts stored apart (a native sort or walk reads its
    /// inputs' chunks where they are).
    fn input_bytes(
        &self,
        region: &Region,
        random: &HashSet<u64>,
        (first, rows): (u64, u64),
        native: bool,
    ) -> u64 {
        let device = self.device;
        let mut bytes = 0;
        for leaf in &region.leaves {
            let (start, end) = match () {
                _ if leaf.meta.constant => (0, 1),
                _ if random.contains(&leaf.id) => (0, stored(leaf)),
                _ => (first.min(stored(leaf)), (first + rows).min(stored(leaf))),
            };
            if self.copied_per_task(leaf) {
                bytes += range_bytes(device, leaf, start, end);
            }
            if !self.stored_whole(leaf, start, end) && !native {
                bytes += bytes_of(device, leaf, end - start);
            }
        }
        bytes
    }

    /// `bytes`, the projection of `tasks` of a pass run as other ops' passes, raised to
    /// what those passes' own schedule holds at most (`inner_peak`) beside `extra` and the
    /// task's inputs.
    pub fn composed_bytes(
        &self,
        region: &Region,
        tasks: &[(u64, u32)],
        extra: u64,
        inner_peak: u64,
        bytes: Vec<u64>,
    ) -> Vec<u64> {
        let random = region.random_access_inputs();
        (tasks.iter().zip(bytes))
            .map(|(&(first, rows), projected)| {
                let inputs = self.input_bytes(region, &random, (first, rows as u64), false);
                projected.max(extra.saturating_add(inputs).saturating_add(inner_peak))
            })
            .collect()
    }

    /// A view's chunk tasks: each chunk's uploaded pieces, its copy (none for a whole stored
    /// chunk), and its read-back copy; chunks made before stay on the device until the pass
    /// ends, unless read back.
    fn assembly_bytes(&self, region: &Region, extra: u64) -> Vec<u64> {
        let streamed = self.streamed.contains(&region.root.id);
        let mut done = 0u64;
        (self.assembly_chunks(region).into_iter())
            .map(|(made, _, output)| {
                let read_back = if streamed { output } else { 0 };
                let bytes = made + read_back + done + extra;
                if !streamed {
                    done += made;
                }
                bytes
            })
            .collect()
    }

    /// For each chunk of an assembly pass's output: the device bytes making it adds (its
    /// inputs' parts brought a task at a time, and its copy, unless it is a whole stored
    /// chunk, which is shared), the bytes it holds once made, and its own.
    fn assembly_chunks(&self, region: &Region) -> Vec<(u64, u64, u64)> {
        let device = self.device;
        let root = &region.root;
        let offsets = root.chunk_offsets();
        (0..root.chunks.len())
            .map(|c| {
                let ranges = assembly_ranges(root, offsets[c], offsets[c + 1]);
                // An empty chunk is made on the device (there is nothing to share).
                let empty = offsets[c] == offsets[c + 1];
                let shared = !empty && ranges.len() == 1 && {
                    let (i, a, b) = ranges[0];
                    whole_chunk(&root.inputs[i], a, b)
                };
                let uploads: u64 = (ranges.iter())
                    .filter(|(i, _, _)| self.copied_per_task(&root.inputs[*i]))
                    .map(|&(i, a, b)| range_bytes(device, &root.inputs[i], a, b))
                    .sum();
                let output = bytes_of(device, root, offsets[c + 1] - offsets[c]);
                // A whole stored chunk is shared (or its upload is the chunk): no copy. Once
                // made, a chunk holds its bytes, unless it shares an input's stored chunk: a
                // plan input's is the caller's; an output of this plan outlives its last
                // read, held by the view from then on.
                let copy = if shared { 0 } else { output };
                let of_a_plan_input =
                    shared && !self.computed.contains_key(&root.inputs[ranges[0].0].id);
                let held = match of_a_plan_input {
                    true => uploads,
                    false => output,
                };
                (uploads + copy, held, output)
            })
            .collect()
    }

    /// Bytes of the working arrays of `region`'s pass (over `tasks`) besides its inputs and
    /// output, which a device keeping them until its batch is submitted holds after the
    /// pass: a native sort's, or a reduction's partial states (every set a combine round
    /// reads or writes, and each task's row-group states).
    pub fn scratch_bytes(&self, region: &Region, tasks: &[(u64, u32)]) -> u64 {
        let device = self.device;
        let root = &region.root;
        if region.is_sort() && sorts_natively(device, region) {
            let scratch = device.sort_scratch_bytes(root.meta.length, root.inputs.len());
            return scratch + self.joined_key_bytes(region);
        }
        if !region.is_reduction() {
            return 0;
        }
        let states = device.reduction_state_bytes(root, tasks.len() as u32);
        let scratch: u64 = (tasks.iter())
            .map(|&(_, rows)| device.reduction_scratch_bytes(root, rows))
            .sum();
        (2 * states).saturating_add(scratch)
    }

    /// Bytes of the copies joining a native sort's keys stored in several values, on a
    /// device whose sort binds each key whole (the executor joins them). A plan input of one
    /// chunk is one value; a computed key may be stored in parts (its pass cut at a
    /// binding's rows for a wider input), so it is counted too.
    fn joined_key_bytes(&self, region: &Region) -> u64 {
        let device = self.device;
        if !sorts_natively(device, region) || device.sorts_keys_in_chunks() {
            return 0;
        }
        self.joined_bytes(region.root.inputs.iter())
    }

    /// Bytes of copies joining each of `inputs` into one value, where it may be stored in
    /// parts (computed, or in several chunks).
    fn joined_bytes<'n>(&self, inputs: impl Iterator<Item = &'n NodeRef>) -> u64 {
        inputs
            .filter(|input| {
                self.computed.contains_key(&input.id)
                    || input.chunks.iter().filter(|&&rows| rows > 0).count() > 1
            })
            .map(|input| output_bytes(self.device, input))
            .sum()
    }
}

/// Device bytes of `rows` rows of `node`'s type and row size on `device`.
fn bytes_of(device: &dyn CostModel, node: &Node, rows: u64) -> u64 {
    device.value_bytes(
        node.meta.dtype,
        node.meta.size,
        rows.min(u32::MAX as u64) as u32,
    )
}

/// Rows `node` stores (a constant's one row).
fn stored(node: &Node) -> u64 {
    if node.meta.constant {
        1
    } else {
        node.meta.length as u64
    }
}

/// Device bytes of `node`'s whole output: each chunk is stored on its own.
pub(super) fn output_bytes(device: &dyn CostModel, node: &Node) -> u64 {
    match node.meta.constant {
        true => bytes_of(device, node, 1),
        false => (node.chunks.iter())
            .map(|&rows| bytes_of(device, node, rows as u64))
            .sum(),
    }
}

/// Device bytes of the parts of `node`'s chunks in rows `start..end`, each stored alone.
fn range_bytes(device: &dyn CostModel, node: &Node, start: u64, end: u64) -> u64 {
    let offsets = node.chunk_offsets();
    let from = offsets[1..].partition_point(|&e| e <= start);
    offsets[from..]
        .windows(2)
        .take_while(|w| w[0] < end)
        .map(|w| (w[0].max(start), w[1].min(end)))
        .filter(|(lo, hi)| lo < hi)
        .map(|(lo, hi)| bytes_of(device, node, hi - lo))
        .sum()
}

/// Whether rows `start..end` of `node` are exactly one of its chunks (no copy needed).
fn whole_chunk(node: &Node, start: u64, end: u64) -> bool {
    let offsets = node.chunk_offsets();
    let at = offsets.partition_point(|&o| o < start);
    // A chunk starts at `start`, and the next offset past it (empty chunks skipped) is `end`.
    start == end
        || (offsets.get(at) == Some(&start)
            && offsets[at..].iter().find(|&&o| o > start) == Some(&end))
}

/// Whether a chunk of `leaf` has more rows than one of the device's bindings holds (it is
/// copied a task's part at a time).
fn past_a_binding(device: &dyn CostModel, leaf: &Node) -> bool {
    (leaf.chunks.iter()).any(|&rows| rows_past_a_binding(device, leaf.meta.size, rows))
}
