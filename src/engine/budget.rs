//! The memory budget (`createDevice({allowedMem})`): before any kernel runs, every chunk
//! task's device memory is projected (its input parts, the copies that assemble them, its
//! output, and what earlier passes of the plan still hold), and a task over the budget is
//! refused. Within the budget, inputs from the host stream through the device a task at a
//! time, and a root output larger than half the budget is read back chunk by chunk and stays
//! on the host.

use std::collections::{HashMap, HashSet};

use super::{rows_past_a_binding, CostModel};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{assembly_ranges, Node, NodeRef};
use crate::plan::{Plan, Region};

/// Parameter blocks and reduction partial states a task may add to its values.
pub const TASK_OVERHEAD_BYTES: u64 = 64 << 10;

/// Projected device bytes of a plan's tasks.
pub struct Projection {
    /// Per region, per chunk task: the bytes it holds while it runs (earlier results
    /// included).
    pub tasks: Vec<Vec<u64>>,
    /// Roots whose outputs stream back to the host.
    pub streamed: HashSet<u64>,
}

impl Projection {
    /// The most any task holds.
    pub fn peak(&self) -> u64 {
        self.tasks.iter().flatten().copied().max().unwrap_or(0)
    }

    /// `LIMIT_EXCEEDED` naming the first task over `budget` and both numbers.
    pub fn check(&self, plan: &Plan, budget: u64) -> Result<()> {
        for (index, (region, tasks)) in plan.regions.iter().zip(&self.tasks).enumerate() {
            if let Some((k, &bytes)) = tasks.iter().enumerate().find(|(_, &b)| b > budget) {
                return Err(GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "chunk task {k} of pass {} (t{}) needs {bytes} bytes of device memory; allowedMem is {budget}",
                        index + 1,
                        region.root.id
                    ),
                ));
            }
        }
        Ok(())
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
fn output_bytes(device: &dyn CostModel, node: &Node) -> u64 {
    match node.meta.constant {
        true => bytes_of(device, node, 1),
        false => node
            .chunks
            .iter()
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

/// The projected bytes of every task of `plan` on `device`. `resident` says which plan inputs
/// are on the device already (they are the caller's, not the evaluation's); `budget` decides
/// which roots stream to the host.
pub fn project(
    device: &dyn CostModel,
    plan: &Plan,
    roots: &HashSet<u64>,
    resident: &dyn Fn(&NodeRef) -> bool,
    budget: Option<u64>,
) -> Projection {
    let streamed: HashSet<u64> = match budget {
        Some(budget) => (plan.regions.iter())
            .flat_map(|r| r.outputs())
            .filter(|output| roots.contains(&output.id))
            .filter(|output| output_bytes(device, output).saturating_mul(2) > budget)
            .map(|output| output.id)
            .collect(),
        None => HashSet::new(),
    };
    let computed: HashMap<u64, usize> = (plan.regions.iter().enumerate())
        .flat_map(|(i, r)| r.outputs().map(move |output| (output.id, i)))
        .collect();
    // When each computed output is last read, so what earlier passes hold at each pass.
    let mut last_read: HashMap<u64, usize> = HashMap::new();
    for (index, region) in plan.regions.iter().enumerate() {
        for leaf in &region.leaves {
            if computed.contains_key(&leaf.id) {
                last_read.insert(leaf.id, index);
            }
        }
    }
    // Residency looks at every stored chunk: asked once per leaf, not once per task.
    let on_device: HashMap<u64, bool> = plan
        .regions
        .iter()
        .flat_map(|r| r.leaves.iter())
        .map(|leaf| (leaf.id, resident(leaf)))
        .collect();
    // Without a budget, inputs not on the device are copied whole before the first pass,
    // and the copies stay (later evaluations read them): every pass holds them. A chunk
    // past one binding is still copied a task's part at a time.
    let copied: Vec<NodeRef> = match budget {
        Some(_) => Vec::new(),
        None => (plan.leaves().into_iter())
            .filter(|leaf| !on_device[&leaf.id] && !past_a_binding(device, leaf))
            .collect(),
    };
    let copies_held: u64 = copied.iter().map(|leaf| output_bytes(device, leaf)).sum();
    let copied_whole: HashSet<u64> = copied.iter().map(|leaf| leaf.id).collect();
    // Working arrays of earlier passes a device keeps until its batch is submitted (at the
    // plan's end at the latest), summed as the passes go.
    let mut kept_scratch = 0u64;
    let mut tasks = Vec::with_capacity(plan.regions.len());
    // Brought to the device a task's part at a time: inputs not on it, and outputs of
    // earlier passes that were streamed to the host.
    let is_input = |leaf: &NodeRef| {
        (!computed.contains_key(&leaf.id)
            && !on_device[&leaf.id]
            && !copied_whole.contains(&leaf.id))
            || streamed.contains(&leaf.id)
    };
    for (index, region) in plan.regions.iter().enumerate() {
        // The executor submits the work recorded so far before a pass that uploads rows
        // (`Run::plan`), which frees the working arrays kept for it.
        if (region.leaves.iter()).any(|leaf| !leaf.meta.constant && is_input(leaf)) {
            kept_scratch = 0;
        }
        let joined_keys = joined_key_bytes(device, region, &computed);
        let held: u64 = (plan.regions[..index].iter())
            .flat_map(|r| r.outputs())
            .filter(|output| {
                !streamed.contains(&output.id)
                    && (roots.contains(&output.id) || last_read.get(&output.id) >= Some(&index))
            })
            .map(|output| output_bytes(device, output))
            .sum();
        let held = held
            .saturating_add(kept_scratch)
            .saturating_add(copies_held);
        if device.keeps_scratch_until_flush() {
            kept_scratch = kept_scratch.saturating_add(scratch_bytes(device, region, joined_keys));
        }
        let own = task_bytes(
            device,
            region,
            &is_input,
            streamed.contains(&region.root.id),
            joined_keys,
        );
        // A sort writing its keys in order holds them too (twice where read back).
        let sorted_keys: u64 = (region.sorted_keys.iter())
            .map(|k| {
                output_bytes(device, &k.node) * if streamed.contains(&k.node.id) { 2 } else { 1 }
            })
            .sum();
        let extra = held.saturating_add(sorted_keys);
        tasks.push(own.into_iter().map(|b| b.saturating_add(extra)).collect());
    }
    Projection { tasks, streamed }
}

/// Whether a chunk of `leaf` has more rows than one of the device's bindings holds (it is
/// copied a task's part at a time).
fn past_a_binding(device: &dyn CostModel, leaf: &Node) -> bool {
    (leaf.chunks.iter()).any(|&rows| rows_past_a_binding(device, leaf.meta.size, rows))
}

/// Bytes of the working arrays of `region`'s pass besides its inputs and output: a native
/// sort's, or a reduction's partial states (every set a combine round reads or writes, and
/// each task's row-group states).
fn scratch_bytes(device: &dyn CostModel, region: &Region, joined_keys: u64) -> u64 {
    let root = &region.root;
    if region.is_sort() && device.sorts(root.meta.length, root.inputs.len()) {
        return device.sort_scratch_bytes(root.meta.length, root.inputs.len()) + joined_keys;
    }
    if !region.is_reduction() {
        return 0;
    }
    let chunks = region.task_chunks();
    let states = device.reduction_state_bytes(root, chunks.len() as u32);
    let tasks: u64 = (chunks.iter())
        .map(|&rows| device.reduction_scratch_bytes(root, rows))
        .sum();
    (2 * states).saturating_add(tasks)
}

/// Bytes of the copies joining a native sort's keys stored in several values, on a device
/// whose sort binds each key whole (the executor joins them). A plan input of one chunk is
/// one value; a computed key may be stored in parts (its pass cut at a binding's rows for a
/// wider input), so it is counted too.
fn joined_key_bytes(
    device: &dyn CostModel,
    region: &Region,
    computed: &HashMap<u64, usize>,
) -> u64 {
    let root = &region.root;
    let native = region.is_sort() && device.sorts(root.meta.length, root.inputs.len());
    if !native || device.sorts_keys_in_chunks() {
        return 0;
    }
    (root.inputs.iter())
        .filter(|key| {
            computed.contains_key(&key.id)
                || key.chunks.iter().filter(|&&rows| rows > 0).count() > 1
        })
        .map(|key| output_bytes(device, key))
        .sum()
}

/// Bytes each task of `region` adds: input parts brought from the host (`from_host`), the
/// copies assembling parts of several chunks, the output chunk (twice when it is read back),
/// and a native sort's working arrays and `joined_keys`.
fn task_bytes(
    device: &dyn CostModel,
    region: &Region,
    from_host: &dyn Fn(&NodeRef) -> bool,
    streamed: bool,
    joined_keys: u64,
) -> Vec<u64> {
    let root = &region.root;
    let offsets = root.chunk_offsets();
    if root.op.is_assembly() {
        return (0..root.chunks.len())
            .map(|c| {
                let ranges = assembly_ranges(root, offsets[c], offsets[c + 1]);
                let shared = ranges.len() == 1 && {
                    let (i, a, b) = ranges[0];
                    whole_chunk(&root.inputs[i], a, b)
                };
                let uploads: u64 = ranges
                    .iter()
                    .filter(|(i, _, _)| from_host(&root.inputs[*i]))
                    .map(|&(i, a, b)| range_bytes(device, &root.inputs[i], a, b))
                    .sum();
                let output = bytes_of(device, root, offsets[c + 1] - offsets[c]);
                // A whole stored chunk is shared (or its upload is the chunk): no copy.
                let copy = if shared { 0 } else { output };
                let read_back = if streamed { output } else { 0 };
                uploads + copy + read_back
            })
            .scan(0u64, |done, bytes| {
                // Chunks made before stay on the device until the pass ends.
                let held = *done;
                if !streamed {
                    *done += bytes;
                }
                Some(held + bytes)
            })
            .collect();
    }
    let random = region.random_access_inputs();
    let mut chunks = region.task_chunks();
    let task_count = chunks.len() as u32;
    let split = chunks.len() > 1 && region.reads_a_leaf_both_ways(&random);
    if split {
        chunks = vec![region.rows];
    }
    let mut tasks = Vec::new();
    let mut first = 0u64;
    let mut done = 0u64;
    for rows in chunks {
        let rows = rows as u64;
        let mut bytes = TASK_OVERHEAD_BYTES + done;
        for leaf in &region.leaves {
            let (start, end) = match () {
                _ if leaf.meta.constant => (0, 1),
                _ if random.contains(&leaf.id) => (0, stored(leaf)),
                _ => (first.min(stored(leaf)), (first + rows).min(stored(leaf))),
            };
            let copied = !whole_chunk(leaf, start, end);
            if from_host(leaf) {
                bytes += range_bytes(device, leaf, start, end);
            }
            // A native sort reads its keys' chunks where they are.
            if copied && !(region.is_sort() && device.sorts(root.meta.length, root.inputs.len())) {
                bytes += bytes_of(device, leaf, end - start);
            }
        }
        if region.is_scatter() {
            // Every task writes into the one output, held from the first task on.
            bytes += bytes_of(device, root, stored(root)) * if streamed { 2 } else { 1 };
            tasks.push(bytes);
            first += rows;
            continue;
        }
        if region.is_sort() {
            // The permutation and the sort's working arrays, beside its keys.
            bytes += device.sort_scratch_bytes(root.meta.length, root.inputs.len());
            bytes += joined_keys;
            bytes += bytes_of(device, root, stored(root)) * if streamed { 2 } else { 1 };
            tasks.push(bytes);
            first += rows;
            continue;
        }
        if region.is_reduction() {
            // Every chunk's partial states (twice: a combine round reads one set, writes
            // the next), this task's scratch states, and the final row.
            let parts = task_count;
            let states = device.reduction_state_bytes(&region.root, parts);
            bytes += 2 * states + device.reduction_scratch_bytes(&region.root, rows as u32);
            bytes += bytes_of(device, root, stored(root)) * if streamed { 2 } else { 1 };
            tasks.push(bytes);
            first += rows;
            continue;
        }
        bytes += device.where_read_scratch_bytes(region);
        let output = bytes_of(device, root, rows);
        bytes += output * if streamed { 2 } else { 1 };
        if split {
            // The whole output, and its chunks copied out of it.
            bytes += output;
        }
        if !streamed {
            // This chunk stays on the device while the pass makes the next ones.
            done += output;
        }
        tasks.push(bytes);
        first += rows;
    }
    tasks
}
