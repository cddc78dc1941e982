//! One evaluation's run of a plan on a device: plan inputs read in place or copied once
//! (a task's part at a time under a memory budget), a task per chunk of each pass, chunks
//! assembled from parts of stored ones, results read back to the host when they are
//! streamed, and each intermediate freed after its last reader.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::{
    internal, leaf_home, reads_in_place, rows_past_a_binding, Backend, CostModel, Written,
};
use crate::column::Column;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{
    self, assembly_ranges, combine_rounds, validate_segments, Node, NodeRef, Op, Reduction,
};
use crate::plan::{Access, Plan, PlanLimits, Region};
use crate::value::{DeviceId, Output, Value};

/// A sort by the keys `keys` (whose outputs are `stored`) composed of split passes
/// (`ir::split_permutation`), the keys `sorted` (indices into `keys`) gathered in its order
/// (as a device's own sort writes them), and its plan on a backend with `limits`.
pub(super) fn split_sort(
    keys: &[NodeRef],
    stored: Vec<Output>,
    bits: &[u32],
    sorted: &[usize],
    limits: &PlanLimits,
) -> Result<(Vec<NodeRef>, Plan)> {
    let keys: Vec<NodeRef> = keys
        .iter()
        .zip(stored)
        .map(|(key, stored)| ir::computed(key.meta, key.chunks.clone(), stored))
        .collect();
    let permutation = ir::split_permutation(&keys, bits)?;
    let mut roots = vec![permutation.clone()];
    for &key in sorted {
        let key = keys
            .get(key)
            .ok_or_else(|| internal("a sorted key the sort does not have"))?;
        roots.push(ir::gather(&permutation, key)?);
    }
    let plan = crate::plan::plan_with(
        &roots,
        &crate::plan::PlanOptions {
            fusion: crate::plan::Fusion::On,
            replan_roots: false,
            limits,
        },
    )?;
    Ok((roots, plan))
}

/// One evaluation's run of a plan on a device.
pub(super) struct Run<'a, B: Backend> {
    pub device: &'a B,
    pub batch: &'a mut B::Batch,
    pub limits: &'a PlanLimits,
    /// Under a memory budget: host inputs are copied a task's part at a time, not whole.
    pub streaming: bool,
    /// Roots whose chunks are read back to the host as they are computed.
    pub streamed: HashSet<u64>,
}

impl<B: Backend> Run<'_, B> {
    pub async fn plan(
        &mut self,
        plan: &Plan,
        pending: &[NodeRef],
        mut fetched: HashMap<u64, Vec<Column>>,
    ) -> Result<HashMap<u64, Output>> {
        let mut values: HashMap<u64, Output> = HashMap::new();
        for leaf in plan.leaves() {
            let value = self.leaf(&leaf, fetched.remove(&leaf.id))?;
            values.insert(leaf.id, value);
        }
        let keep: HashSet<u64> = pending.iter().map(|r| r.id).collect();
        let freed_after = last_uses(plan, &keep);
        for (index, region) in plan.regions.iter().enumerate() {
            // A pass that copies host rows first submits the work recorded so far (as
            // `assemble` would at its first host piece), freeing the working arrays earlier
            // passes keep before this one allocates: the budget's projection counts on it.
            let copies_host_rows = (region.leaves.iter())
                .filter(|leaf| !leaf.meta.constant)
                .filter_map(|leaf| values.get(&leaf.id))
                .any(|output| !reads_in_place(self.device, output));
            if copies_host_rows {
                self.device.flush(self.batch).await?;
            }
            let output = match () {
                _ if region.root.op.is_assembly() => self.assembly(region, &values).await?,
                _ if region.is_reduction() => self.reduction(region, &values).await?,
                _ if region.is_scatter() => self.scatter(region, &values).await?,
                _ if region.is_sort() => {
                    let (permutation, sorted_keys) = self.sort(region, &values).await?;
                    let keys = region.sorted_keys.iter().map(|k| k.node.id);
                    values.extend(keys.zip(sorted_keys));
                    permutation
                }
                _ => self.region(region, &values).await?,
            };
            values.insert(region.root.id, output);
            // An intermediate is freed (back to the pool) after its last reader.
            for id in &freed_after[index] {
                values.remove(id);
            }
        }
        Ok(values)
    }

    /// A plan input on this device: read in place, or copied here once (later evaluations
    /// on this device read the copy).
    fn leaf(&mut self, leaf: &NodeRef, fetched: Option<Vec<Column>>) -> Result<Output> {
        let device = self.device;
        let host = match device.takes_from_host(leaf) {
            true => leaf.host_output(),
            false => None,
        };
        if let Some(output) = host.or_else(|| leaf.output_on(device.core().id)) {
            return Ok(output);
        }
        let home = leaf_home(leaf)?;
        if reads_in_place(device, &home) {
            return Ok(home);
        }
        let too_big = (home.chunks.iter()).any(|c| rows_past_a_binding(device, c.size, c.rows));
        if self.streaming || too_big {
            // Each task copies the rows it reads (see `assemble`).
            return Ok(match fetched {
                Some(columns) => Output::new(
                    crate::value::HOST,
                    columns
                        .into_iter()
                        .map(|c| Rc::new(Value::host(c)))
                        .collect(),
                ),
                None => home,
            });
        }
        let mut chunks = Vec::with_capacity(home.chunks.len());
        match fetched {
            Some(columns) => {
                for column in &columns {
                    chunks.push(Rc::new(device.upload(self.batch, column)?));
                }
            }
            None => {
                for chunk in home.chunks.iter() {
                    let column = chunk
                        .host_column()
                        .ok_or_else(|| internal(format!("t{} was not fetched", leaf.id)))?;
                    chunks.push(Rc::new(device.upload(self.batch, column)?));
                }
            }
        }
        let copy = Output::new(device.core().id, chunks);
        if !leaf.is_destroyed() {
            leaf.add_output(copy.clone());
        }
        Ok(copy)
    }

    /// A kernel region, one task per chunk of its output.
    async fn region(&mut self, region: &Region, values: &HashMap<u64, Output>) -> Result<Output> {
        let random = region.random_access_inputs();
        let (tasks, split) = planned_tasks(self.device, region, &random);
        let mut chunks = Vec::new();
        let mut first = 0u64;
        for rows in tasks {
            let task = region.task_at(first, rows);
            let leaves = self.task_leaves(&task, values, &random, first).await?;
            let value = self.device.run_region(self.batch, &task, &leaves).await?;
            drop(leaves);
            chunks.push(Rc::new(
                match self.streamed.contains(&region.root.id) && !split {
                    true => self.read_back(&value).await?,
                    false => value,
                },
            ));
            first += rows as u64;
        }
        let output = Output::new(self.home_of(&region.root), chunks);
        if !split {
            return Ok(output);
        }
        let offsets = region.root.chunk_offsets();
        let mut parts = Vec::with_capacity(region.root.chunks.len());
        for c in 0..region.root.chunks.len() {
            let pieces = output.pieces(offsets[c], offsets[c + 1]);
            let part = self.assemble(pieces, &region.root).await?;
            parts.push(match self.streamed.contains(&region.root.id) {
                true => Rc::new(self.read_back(&part).await?),
                false => part,
            });
        }
        Ok(Output::new(self.home_of(&region.root), parts))
    }

    /// A reduction: a partial per chunk task, combine rounds of at most `splitEvery`
    /// partials, then the final row.
    async fn reduction(
        &mut self,
        region: &Region,
        values: &HashMap<u64, Output>,
    ) -> Result<Output> {
        let root = &region.root;
        let reduction =
            Reduction::of(root).ok_or_else(|| internal("a reduction pass without a reduction"))?;
        let random = region.random_access_inputs();
        let (tasks, _) = planned_tasks(self.device, region, &random);
        let parts = u32::try_from(tasks.len())
            .map_err(|_| internal("more chunk tasks than a u32 counts"))?;
        let mut states = self.device.reduction_states(self.batch, root, parts)?;
        let mut first = 0u64;
        for (part, rows) in tasks.into_iter().enumerate() {
            let task = region.task_at(first, rows);
            let leaves = self.task_leaves(&task, values, &random, first).await?;
            self.device
                .reduce_chunk(self.batch, &task, &leaves, first, &mut states, part as u32)
                .await?;
            first += rows as u64;
        }
        let mut parts = parts;
        for next in combine_rounds(parts, reduction.split_every) {
            states = self
                .device
                .combine_states(self.batch, root, states, parts, reduction.split_every)
                .await?;
            parts = next;
        }
        let value = self
            .device
            .finish_reduction(self.batch, region, states)
            .await?;
        let value = match self.streamed.contains(&root.id) {
            true => self.read_back(&value).await?,
            false => value,
        };
        Ok(Output::new(self.home_of(root), vec![Rc::new(value)]))
    }

    /// A scatter: one output, written by a task per chunk of its inputs.
    async fn scatter(&mut self, region: &Region, values: &HashMap<u64, Output>) -> Result<Output> {
        let root = &region.root;
        let mut parts = self.device.scatter_target(self.batch, root).await?;
        // Both inputs are read at the row: no random-access leaves.
        let random = region.random_access_inputs();
        let (tasks, _) = planned_tasks(self.device, region, &random);
        let leaf_of = |id: u64| {
            region
                .leaves
                .iter()
                .position(|l| l.id == id)
                .ok_or_else(|| internal("a scatter input is not a leaf of its pass"))
        };
        let destinations = leaf_of(root.inputs[0].id)?;
        // Without a second input, each row's number is written (`ir::scatter`).
        let written = root.inputs.get(1).map(|v| leaf_of(v.id)).transpose()?;
        let mut first = 0u64;
        for rows in tasks {
            let task = region.task_at(first, rows);
            let leaves = self.task_leaves(&task, values, &random, first).await?;
            let written = match written {
                Some(leaf) => Written::Rows(&leaves[leaf]),
                None => Written::RowNumbers {
                    first: u32::try_from(first)
                        .map_err(|_| internal("a scatter's rows pass 2^32"))?,
                },
            };
            self.device
                .scatter_rows(
                    self.batch,
                    &task,
                    &leaves[destinations],
                    written,
                    &mut parts,
                )
                .await?;
            first += rows as u64;
        }
        let mut chunks = Vec::with_capacity(parts.len());
        for part in parts {
            chunks.push(Rc::new(match self.streamed.contains(&root.id) {
                true => self.read_back(&part).await?,
                false => part,
            }));
        }
        Ok(Output::new(self.home_of(root), chunks))
    }

    /// A sort's pass: the device's own, or the one-bit split passes planned and run here.
    /// Returns the permutation and the region's sorted keys.
    async fn sort(
        &mut self,
        region: &Region,
        values: &HashMap<u64, Output>,
    ) -> Result<(Output, Vec<Output>)> {
        let root = &region.root;
        let Op::SortPermutation { bits } = &root.op else {
            return Err(internal("a sort pass without a sort"));
        };
        let stored = root
            .inputs
            .iter()
            .map(|key| {
                values
                    .get(&key.id)
                    .cloned()
                    .ok_or_else(|| internal(format!("t{} has no value", key.id)))
            })
            .collect::<Result<Vec<Output>>>()?;
        let home = self.device.core().id;
        self.device.core().counters.add_sort();
        let sorted = region.sorted_key_indices();
        let (permutation, sorted_keys) =
            match self.device.sorts(root.meta.length, root.inputs.len()) {
                true => {
                    let mut keys = Vec::with_capacity(stored.len());
                    for (key, output) in root.inputs.iter().zip(&stored) {
                        keys.push(match self.device.sorts_keys_in_chunks() {
                            true => output.chunks.clone(),
                            // One value per key, as the device's sort binds it; the executor
                            // holds it until the sort is recorded.
                            false => {
                                let pieces = (output.chunks.iter())
                                    .filter(|chunk| chunk.rows > 0)
                                    .map(|chunk| (chunk.clone(), 0, chunk.rows))
                                    .collect();
                                Rc::from([self.assemble(pieces, key).await?])
                            }
                        });
                    }
                    let chunks: Vec<&[Rc<Value>]> = keys.iter().map(|k| &k[..]).collect();
                    let (permutation, sorted_keys) = self
                        .device
                        .sort_permutation_and_keys(self.batch, &chunks, bits, &sorted)
                        .await?;
                    let one = |value| Output::new(home, vec![Rc::new(value)]);
                    (one(permutation), sorted_keys.into_iter().map(one).collect())
                }
                false => {
                    let (roots, plan) =
                        split_sort(&root.inputs, stored, bits, &sorted, self.limits)?;
                    let mut outputs = Box::pin(self.plan(&plan, &roots, HashMap::new())).await?;
                    let mut take = |node: &NodeRef| {
                        outputs
                            .remove(&node.id)
                            .ok_or_else(|| internal("a composed sort left no output"))
                    };
                    let permutation = take(&roots[0])?;
                    let sorted_keys = roots[1..].iter().map(take).collect::<Result<Vec<_>>>()?;
                    (permutation, sorted_keys)
                }
            };
        let mut outputs = Vec::with_capacity(1 + sorted_keys.len());
        for (node, output) in region
            .outputs()
            .zip([permutation].into_iter().chain(sorted_keys))
        {
            outputs.push(match self.streamed.contains(&node.id) {
                true => {
                    let mut chunks = Vec::with_capacity(output.chunks.len());
                    for chunk in output.chunks.iter() {
                        chunks.push(Rc::new(self.read_back(chunk).await?));
                    }
                    Output::new(self.home_of(node), chunks)
                }
                false => output,
            });
        }
        let permutation = outputs.remove(0);
        Ok((permutation, outputs))
    }

    /// The values a chunk task over rows `first..` reads, in the order of its leaves: row
    /// inputs' parts for those rows, random-access inputs whole.
    async fn task_leaves(
        &mut self,
        task: &Region,
        values: &HashMap<u64, Output>,
        random: &HashSet<u64>,
        first: u64,
    ) -> Result<Vec<Rc<Value>>> {
        let mut leaves = Vec::with_capacity(task.leaves.len());
        let bound = task
            .leaves
            .iter()
            .filter(|l| !(l.meta.constant && self.device.takes_from_host(l)))
            .count();
        // Bindings left for binding random-access inputs as several parts.
        let mut spare = self.limits.max_bindings.saturating_sub(bound);
        for leaf in &task.leaves {
            let output = values
                .get(&leaf.id)
                .ok_or_else(|| internal(format!("t{} has no value", leaf.id)))?;
            if leaf.meta.constant && self.device.takes_from_host(leaf) {
                leaves.push(output.chunks[0].clone());
                continue;
            }
            let pieces = match () {
                _ if leaf.meta.constant => output.pieces(0, 1),
                _ if random.contains(&leaf.id) => {
                    let pieces = output.pieces(0, output.rows());
                    match self.as_parts(task, leaf, &pieces, &mut spare).await? {
                        Some(parts) => {
                            leaves.push(parts);
                            continue;
                        }
                        None => pieces,
                    }
                }
                _ => output.pieces(first, first + task.rows as u64),
            };
            leaves.push(self.assemble(pieces, leaf).await?);
        }
        check_segments(task, &leaves, self.device, self.batch).await?;
        Ok(leaves)
    }

    /// A gather source stored in several chunks (or too large for one binding) bound part by
    /// part, each part a stored chunk or a binding's worth of rows uploaded on its own: no
    /// copy joining them. `None` where the device binds inputs whole or the parts would need
    /// more than the `spare` bindings (the caller assembles one value then).
    async fn as_parts(
        &mut self,
        task: &Region,
        leaf: &NodeRef,
        pieces: &[(Rc<Value>, u32, u32)],
        spare: &mut usize,
    ) -> Result<Option<Rc<Value>>> {
        let segments = task
            .nodes
            .iter()
            .any(|n| n.op == Op::SegmentedMap && n.inputs[0].id == leaf.id);
        let at_row = task.reads_at_row(leaf.id) || task.reads_where_read_at_row(leaf.id);
        if !self.device.binds_parts(at_row) || segments {
            return Ok(None);
        }
        let most = self
            .device
            .max_binding_rows(leaf.meta.size)
            .unwrap_or(u32::MAX)
            .max(1);
        let mut cut = Vec::new();
        for (value, from, to) in pieces {
            let mut at = *from;
            while at < *to {
                let end = (*to).min(at.saturating_add(most));
                cut.push((value.clone(), at, end));
                at = end;
            }
        }
        if cut.len() < 2 || cut.len() - 1 > *spare {
            return Ok(None);
        }
        *spare -= cut.len() - 1;
        let mut parts = Vec::with_capacity(cut.len());
        for piece in cut {
            parts.push(self.assemble(vec![piece], leaf).await?);
        }
        Ok(Some(Rc::new(Value::parts(parts))))
    }

    /// Where `root`'s output lives: this device, or the host for an output streamed there.
    fn home_of(&self, root: &Node) -> DeviceId {
        match self.streamed.contains(&root.id) {
            true => crate::value::HOST,
            false => self.device.core().id,
        }
    }

    /// A host copy of `value`, read once the device has done the work recorded so far.
    async fn read_back(&mut self, value: &Value) -> Result<Value> {
        self.device.flush(self.batch).await?;
        let mut column = Column::empty(value.dtype, value.size)?;
        column.reserve_rows(value.rows)?;
        self.device
            .read_rows(value, 0, value.rows, &mut |_, data| column.append(data))
            .await?;
        Ok(Value::host(column))
    }

    /// A view op's chunks from its inputs' stored rows.
    async fn assembly(&mut self, region: &Region, values: &HashMap<u64, Output>) -> Result<Output> {
        let node = &region.root;
        let offsets = node.chunk_offsets();
        let mut chunks = Vec::with_capacity(node.chunks.len());
        for c in 0..node.chunks.len() {
            let mut pieces = Vec::new();
            for (input, lo, hi) in assembly_ranges(node, offsets[c], offsets[c + 1]) {
                let output = values
                    .get(&node.inputs[input].id)
                    .ok_or_else(|| internal("an assembled input has no value"))?;
                pieces.extend(output.pieces(lo, hi));
            }
            let chunk = self.assemble(pieces, node).await?;
            chunks.push(match self.streamed.contains(&node.id) {
                true => Rc::new(self.read_back(&chunk).await?),
                false => chunk,
            });
        }
        Ok(Output::new(self.home_of(node), chunks))
    }

    /// One value of the rows `pieces` hold, in order: a whole stored chunk as it is, else a
    /// copy (in as few kernels as the device's bindings allow).
    async fn assemble(
        &mut self,
        mut pieces: Vec<(Rc<Value>, u32, u32)>,
        like: &Node,
    ) -> Result<Rc<Value>> {
        // Rows in host memory (literals a view passes on, inputs streamed under a budget)
        // are copied here: only the part a task reads. Work recorded so far is submitted
        // first: a queued copy lands before the next submit's kernels, and the storage it
        // reuses may be an input of kernels recorded before.
        if pieces.iter().any(|p| !self.device.reads_in_place(&p.0)) {
            self.device.flush(self.batch).await?;
        }
        for piece in pieces.iter_mut() {
            if !self.device.reads_in_place(&piece.0) {
                let column = piece.0.host_column().ok_or_else(|| {
                    internal("a piece is neither on this device nor in host memory")
                })?;
                let part = Column::new(column.slice_rows(piece.1, piece.2)?, column.size)?;
                *piece = (
                    Rc::new(self.device.upload(self.batch, &part)?),
                    0,
                    piece.2 - piece.1,
                );
            }
        }
        loop {
            match pieces.as_slice() {
                [] => {
                    let empty = Column::empty(like.meta.dtype, like.meta.size)?;
                    return Ok(Rc::new(self.device.upload(self.batch, &empty)?));
                }
                [(value, 0, end)] if *end == value.rows => return Ok(value.clone()),
                _ => {}
            }
            let mut inputs: Vec<NodeRef> = (pieces.iter())
                .map(|(value, _, _)| ir::resident(value.clone()))
                .collect();
            inputs.truncate(pieces_per_copy(self.limits, &inputs));
            let rest = pieces.split_off(inputs.len());
            let (first, from, to) = &pieces[0];
            if inputs.len() == 1 && !rest.is_empty() && *from == 0 && *to == first.rows {
                // Two whole pieces already exceed one kernel's bindings: no copy can join them.
                return Err(GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "a chunk made of parts of {} stored chunks needs more than {} {} in one kernel",
                        rest.len() + 1,
                        self.limits.max_bindings,
                        self.limits.binding_limit_name
                    ),
                ));
            }
            let ranges = pieces.iter().map(|&(_, a, b)| (a, b)).collect();
            let values: Vec<Rc<Value>> = pieces.into_iter().map(|(v, _, _)| v).collect();
            let node = ir::rows(inputs.clone(), ranges)?;
            let region = Region::new(node.clone(), vec![node.clone()], inputs);
            let copy = Rc::new(self.device.run_region(self.batch, &region, &values).await?);
            let rows = copy.rows;
            pieces = std::iter::once((copy, 0, rows)).chain(rest).collect();
        }
    }
}

/// How many of `pieces` (in order) one copy kernel binds: the longest prefix within the
/// device's bindings, at least one.
pub(super) fn pieces_per_copy(limits: &PlanLimits, pieces: &[NodeRef]) -> usize {
    let mut cost = 0;
    for (bound, piece) in pieces.iter().enumerate() {
        cost += (limits.binding_cost)(piece, Access::Random);
        if cost > limits.max_bindings && bound > 0 {
            return bound;
        }
    }
    pieces.len()
}

/// The rows of each task a pass runs on `device`, and whether it runs as one task whose
/// output is cut into its chunks after (a leaf read both whole and at the row). Chunks too
/// large for one binding of the device are cut into parts that fit (stored as separate
/// chunks of the output; a reduction folds each into a partial of its own).
pub(super) fn planned_tasks(
    device: &dyn CostModel,
    region: &Region,
    random: &HashSet<u64>,
) -> (Vec<u32>, bool) {
    let tasks = region.task_chunks();
    // A leaf bound whole is read at the row from its first row: tasks past the first would
    // read the wrong rows, so such a pass is never cut (not even at the binding size).
    if region.reads_a_leaf_both_ways(random) {
        return (vec![region.rows], tasks.len() > 1);
    }
    let widest = region
        .leaves
        .iter()
        .filter(|l| !l.meta.constant && !random.contains(&l.id))
        .map(|l| l.meta.size)
        .chain([region.root.meta.size])
        .max()
        .unwrap_or(1);
    let Some(most) = device.max_binding_rows(widest) else {
        return (tasks, false);
    };
    let most = most.max(1);
    let mut parts = Vec::with_capacity(tasks.len());
    for rows in tasks {
        // An empty chunk is still one (empty) task.
        for k in 0..rows.div_ceil(most).max(1) {
            parts.push((rows - k * most).min(most));
        }
    }
    (parts, false)
}

/// Per region, the computed values no later region (and no root) reads.
fn last_uses(plan: &Plan, keep: &HashSet<u64>) -> Vec<Vec<u64>> {
    let computed = plan.computed_ids();
    let mut last: HashMap<u64, usize> = HashMap::new();
    for (index, region) in plan.regions.iter().enumerate() {
        for leaf in &region.leaves {
            if computed.contains(&leaf.id) {
                last.insert(leaf.id, index);
            }
        }
    }
    let mut freed = vec![Vec::new(); plan.regions.len()];
    // An output no later pass reads (a sort's permutation when its pass also wrote the
    // only keys read through it) is freed after its own pass.
    for (index, region) in plan.regions.iter().enumerate() {
        for output in region.outputs() {
            if !last.contains_key(&output.id) && !keep.contains(&output.id) {
                freed[index].push(output.id);
            }
        }
    }
    for (id, index) in last {
        if !keep.contains(&id) {
            freed[index].push(id);
        }
    }
    freed
}

/// `segmentedMap` needs valid segment starts; computed ones are read back to check them.
async fn check_segments<B: Backend>(
    task: &Region,
    leaves: &[Rc<Value>],
    device: &B,
    batch: &mut B::Batch,
) -> Result<()> {
    for node in task.nodes.iter().filter(|n| n.op == Op::SegmentedMap) {
        let segments = &node.inputs[0];
        let index = task
            .leaves
            .iter()
            .position(|l| l.id == segments.id)
            .ok_or_else(|| internal("segment starts are not resident"))?;
        let value = &leaves[index];
        match value.host_column() {
            Some(column) => validate_segments(column, node.meta.length)?,
            None => {
                device.flush(batch).await?;
                let mut column = Column::empty(value.dtype, value.size)?;
                device
                    .read_rows(value, 0, value.rows, &mut |_, data| column.append(data))
                    .await?;
                validate_segments(&column, node.meta.length)?;
            }
        }
    }
    Ok(())
}
