//! One evaluation's run of its schedule on a device: plan inputs read in place or copied
//! once (a task's rows at a time where the schedule says so), the listed chunk tasks of each
//! pass, chunks assembled from parts of stored ones, results read back to the host when they
//! are streamed, and each intermediate freed after its last reader.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::schedule::{Composed, Pass, Schedule, Step, Task};
use super::{internal, leaf_home, reads_in_place, Backend, Erased, Written};
use crate::column::Column;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, assembly_ranges, validate_segments, Node, NodeRef, Op, Reduction};
use crate::plan::{Access, PlanLimits, Region};
use crate::value::{DeviceId, Output, Value};

/// One evaluation's run of a schedule on a device.
pub(super) struct Run<'a> {
    pub device: &'a dyn Backend,
    pub batch: &'a mut Erased,
    pub limits: &'a PlanLimits,
    /// What ran, where the caller asked to see it.
    pub steps: Option<Vec<Step>>,
}

/// The chunks of an output streamed to the host, each joined there from its tasks' rows
/// (a pass cut at a binding's or the budget's rows keeps its root's chunks on the host).
struct HostChunks {
    /// The end row of each chunk.
    ends: Vec<u64>,
    chunks: Vec<Rc<Value>>,
    pending: Option<Column>,
}

impl HostChunks {
    fn new(root: &Node) -> HostChunks {
        HostChunks {
            ends: root.chunk_offsets()[1..].to_vec(),
            chunks: Vec::with_capacity(root.chunks.len()),
            pending: None,
        }
    }

    /// The column task `task`'s rows are read into.
    fn column_for(&mut self, root: &Node, task: &Task) -> Result<&mut Column> {
        if self.pending.is_none() {
            let at = self.chunks.len();
            let start = match at {
                0 => 0,
                _ => self.ends[at - 1],
            };
            let rows = self
                .ends
                .get(at)
                .map_or(task.rows as u64, |&end| end - start);
            let mut column = Column::empty(root.meta.dtype, root.meta.size)?;
            column.reserve_rows(rows as u32)?;
            self.pending = Some(column);
        }
        self.pending
            .as_mut()
            .ok_or_else(|| internal("a streamed chunk without its column"))
    }

    /// Task `task`'s rows are in: its chunk is done when the task ends it.
    fn read(&mut self, task: &Task) {
        let end = task.first + task.rows as u64;
        if self.ends.get(self.chunks.len()).is_none_or(|&e| e <= end) {
            if let Some(column) = self.pending.take() {
                self.chunks.push(Rc::new(Value::host(column)));
            }
        }
    }
}

impl Run<'_> {
    fn step(&mut self, step: Step) {
        if let Some(steps) = &mut self.steps {
            steps.push(step);
        }
    }

    /// Records that `task` ran.
    fn ran(&mut self, task: &Task) {
        self.step(Step::Task {
            first: task.first,
            rows: task.rows,
        });
    }

    /// `task` of `region`'s pass, and the values it reads (`random`: the pass's
    /// random-access inputs).
    async fn task(
        &mut self,
        region: &Region,
        task: &Task,
        values: &HashMap<u64, Output>,
        random: &HashSet<u64>,
    ) -> Result<(Region, Vec<Rc<Value>>)> {
        let work = region.task_at(task.first, task.rows);
        let leaves = self.task_leaves(&work, values, random, task.first).await?;
        Ok((work, leaves))
    }

    /// `value` as the output keeps it: where it is, or copied to the host when `streamed`.
    async fn kept(&mut self, value: Rc<Value>, streamed: bool) -> Result<Rc<Value>> {
        // A composed pass's own schedule may have read its output back already (a CPU
        // device's values are host columns too, but its own).
        Ok(match streamed && value.device != crate::value::HOST {
            true => Rc::new(self.read_back(&value).await?),
            false => value,
        })
    }

    /// Runs `schedule`: `fetched` holds the host copies of inputs that live on another GPU
    /// device. Returns the output of every pass not freed.
    pub async fn schedule(
        &mut self,
        schedule: &Schedule,
        mut fetched: HashMap<u64, Vec<Column>>,
    ) -> Result<HashMap<u64, Output>> {
        let mut values: HashMap<u64, Output> = HashMap::new();
        for leaf in schedule.plan.leaves() {
            let whole = schedule.copied_whole.contains(&leaf.id);
            let value = self.leaf(&leaf, whole, fetched.remove(&leaf.id))?;
            values.insert(leaf.id, value);
        }
        let streamed = &schedule.streamed;
        for (index, (region, pass)) in schedule
            .plan
            .regions
            .iter()
            .zip(&schedule.passes)
            .enumerate()
        {
            self.step(Step::Pass(index));
            if pass.submit_before {
                self.device.flush(self.batch).await?;
            }
            let root = &region.root;
            let output = match () {
                _ if root.op.is_assembly() => {
                    self.assembly(region, pass, &values, streamed).await?
                }
                _ if region.is_reduction() => {
                    self.reduction(region, pass, &values, streamed).await?
                }
                _ if region.is_scatter() => self.scatter(region, pass, &values, streamed).await?,
                _ if region.adds_to_bins => self.bins(region, pass, &values, streamed).await?,
                _ if region.is_walk() => self.walk(region, pass, &values, streamed).await?,
                _ if region.is_sort() => {
                    let (permutation, sorted_keys) =
                        self.sort(region, pass, &values, streamed).await?;
                    let keys = region.sorted_keys.iter().map(|k| k.node.id);
                    values.extend(keys.zip(sorted_keys));
                    permutation
                }
                _ => self.region(region, pass, &values, streamed).await?,
            };
            values.insert(root.id, output);
            // An intermediate is freed (back to the pool) after its last reader.
            for &id in &pass.frees {
                values.remove(&id);
                self.step(Step::Free(id));
            }
        }
        Ok(values)
    }

    /// A plan input on this device: read in place, copied here whole once (`whole`: later
    /// evaluations on this device read the copy), or left where it is for each task to copy
    /// the rows it reads (see `assemble`).
    fn leaf(
        &mut self,
        leaf: &NodeRef,
        whole: bool,
        fetched: Option<Vec<Column>>,
    ) -> Result<Output> {
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
        if !whole {
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
            leaf.materialize_copy_on(device.core().id);
        }
        Ok(copy)
    }

    /// A kernel region: its listed tasks, one output chunk each (or, for a pass cut after,
    /// the one task's output cut into the root's chunks).
    async fn region(
        &mut self,
        region: &Region,
        pass: &Pass,
        values: &HashMap<u64, Output>,
        streamed: &HashSet<u64>,
    ) -> Result<Output> {
        let root = &region.root;
        let random = region.random_access_inputs();
        let read_back = streamed.contains(&root.id) && !pass.cut_after;
        let mut host = HostChunks::new(root);
        let mut chunks = Vec::with_capacity(pass.tasks.len());
        for task in &pass.tasks {
            let (work, leaves) = self.task(region, task, values, &random).await?;
            let value = self.device.run_region(self.batch, &work, &leaves).await?;
            self.ran(task);
            drop(leaves);
            match read_back {
                true => {
                    self.read_into(&value, host.column_for(root, task)?).await?;
                    host.read(task);
                }
                false => chunks.push(Rc::new(value)),
            }
        }
        if read_back {
            return Ok(Output::new(crate::value::HOST, host.chunks));
        }
        let output = Output::new(self.device.core().id, chunks);
        if !pass.cut_after {
            return Ok(output);
        }
        let offsets = root.chunk_offsets();
        let mut parts = Vec::with_capacity(root.chunks.len());
        for c in 0..root.chunks.len() {
            let pieces = output.pieces(offsets[c], offsets[c + 1]);
            let part = self.assemble(pieces, root).await?;
            parts.push(self.kept(part, streamed.contains(&root.id)).await?);
        }
        Ok(Output::new(
            home_of(self.device.core().id, root, streamed),
            parts,
        ))
    }

    /// A reduction: a partial per task, the listed combine rounds of at most `splitEvery`
    /// partials, then the final row.
    async fn reduction(
        &mut self,
        region: &Region,
        pass: &Pass,
        values: &HashMap<u64, Output>,
        streamed: &HashSet<u64>,
    ) -> Result<Output> {
        let root = &region.root;
        let reduction =
            Reduction::of(root).ok_or_else(|| internal("a reduction pass without a reduction"))?;
        let random = region.random_access_inputs();
        let mut parts = u32::try_from(pass.tasks.len())
            .map_err(|_| internal("more chunk tasks than a u32 counts"))?;
        let mut states = self.device.reduction_states(self.batch, root, parts)?;
        for (part, task) in pass.tasks.iter().enumerate() {
            let (work, leaves) = self.task(region, task, values, &random).await?;
            self.device
                .reduce_chunk(
                    self.batch,
                    &work,
                    &leaves,
                    task.first,
                    &mut states,
                    part as u32,
                )
                .await?;
            self.ran(task);
        }
        for &next in &pass.rounds {
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
        let value = self
            .kept(Rc::new(value), streamed.contains(&root.id))
            .await?;
        let home = home_of(self.device.core().id, root, streamed);
        Ok(Output::new(home, vec![value]))
    }

    /// A scatter: one output, written by each listed task of its inputs' rows.
    async fn scatter(
        &mut self,
        region: &Region,
        pass: &Pass,
        values: &HashMap<u64, Output>,
        streamed: &HashSet<u64>,
    ) -> Result<Output> {
        let root = &region.root;
        let mut parts = self.device.scatter_target(self.batch, root).await?;
        // Both inputs are read at the row: no random-access leaves.
        let random = region.random_access_inputs();
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
        for task in &pass.tasks {
            let (work, leaves) = self.task(region, task, values, &random).await?;
            let written = match written {
                Some(leaf) => Written::Rows(&leaves[leaf]),
                None => Written::RowNumbers {
                    first: u32::try_from(task.first)
                        .map_err(|_| internal("a scatter's rows pass 2^32"))?,
                },
            };
            self.device
                .scatter_rows(
                    self.batch,
                    &work,
                    &leaves[destinations],
                    written,
                    &mut parts,
                )
                .await?;
            self.ran(task);
        }
        let mut chunks = Vec::with_capacity(parts.len());
        for part in parts {
            chunks.push(
                self.kept(Rc::new(part), streamed.contains(&root.id))
                    .await?,
            );
        }
        let home = home_of(self.device.core().id, root, streamed);
        Ok(Output::new(home, chunks))
    }

    /// A bin pass: one set of totals, which each listed task adds its computed rows into.
    async fn bins(
        &mut self,
        region: &Region,
        pass: &Pass,
        values: &HashMap<u64, Output>,
        streamed: &HashSet<u64>,
    ) -> Result<Output> {
        let root = &region.root;
        let mut bins = self.device.bins_target(self.batch, root).await?;
        let random = region.random_access_inputs();
        for task in &pass.tasks {
            let (work, leaves) = self.task(region, task, values, &random).await?;
            (self.device)
                .add_to_bins(self.batch, &work, &leaves, &mut bins)
                .await?;
            self.ran(task);
        }
        let value = self.device.finish_bins(self.batch, root, bins).await?;
        let value = self
            .kept(Rc::new(value), streamed.contains(&root.id))
            .await?;
        let home = home_of(self.device.core().id, root, streamed);
        Ok(Output::new(home, vec![value]))
    }

    /// A sort's pass: the device's own, or its schedule of one-bit split passes. Returns the
    /// permutation and the region's sorted keys.
    async fn sort(
        &mut self,
        region: &Region,
        pass: &Pass,
        values: &HashMap<u64, Output>,
        streamed: &HashSet<u64>,
    ) -> Result<(Output, Vec<Output>)> {
        let root = &region.root;
        let Op::SortPermutation { bits, ordered_rows } = &root.op else {
            return Err(internal("a sort pass without a sort"));
        };
        let stored = (root.inputs.iter())
            .map(|key| {
                values
                    .get(&key.id)
                    .cloned()
                    .ok_or_else(|| internal(format!("t{} has no value", key.id)))
            })
            .collect::<Result<Vec<Output>>>()?;
        let home = self.device.core().id;
        self.device.core().counters.add_sort();
        let (permutation, sorted_keys) = match &pass.composed {
            None => {
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
                let sorted = region.sorted_key_indices();
                let (permutation, sorted_keys) = self
                    .device
                    .sort_permutation_and_keys(self.batch, &chunks, bits, *ordered_rows, &sorted)
                    .await?;
                for task in &pass.tasks {
                    self.ran(task);
                }
                let one = |value| Output::new(home, vec![Rc::new(value)]);
                (
                    one(permutation),
                    sorted_keys.into_iter().map(one).collect::<Vec<_>>(),
                )
            }
            Some(split) => {
                let mut outputs = self.composed(split, stored).await?.into_iter();
                let permutation = (outputs.next())
                    .ok_or_else(|| internal("a composed sort left no permutation"))?;
                (permutation, outputs.collect())
            }
        };
        let mut outputs = Vec::with_capacity(1 + sorted_keys.len());
        for (node, output) in region
            .outputs()
            .zip([permutation].into_iter().chain(sorted_keys))
        {
            let mut chunks = Vec::with_capacity(output.chunks.len());
            for chunk in output.chunks.iter() {
                chunks.push(
                    self.kept(chunk.clone(), streamed.contains(&node.id))
                        .await?,
                );
            }
            let home = home_of(output.device, node, streamed);
            outputs.push(Output::new(home, chunks));
        }
        let permutation = outputs.remove(0);
        Ok((permutation, outputs))
    }

    /// A walk's pass: the device's own loop, or its composed passes.
    async fn walk(
        &mut self,
        region: &Region,
        pass: &Pass,
        values: &HashMap<u64, Output>,
        streamed: &HashSet<u64>,
    ) -> Result<Output> {
        let root = &region.root;
        let mut inputs = Vec::with_capacity(root.inputs.len());
        for input in &root.inputs {
            let output = (values.get(&input.id).cloned())
                .ok_or_else(|| internal(format!("t{}'s input has no value", root.id)))?;
            inputs.push(output);
        }
        let output = match &pass.composed {
            None => {
                // A device's own walk reads its inputs where they are stored: rows in host
                // memory (a plan input streamed under a budget) are copied here first, and
                // an input it reads whole (a lookup's table) is joined into one value.
                let mut stored = Vec::with_capacity(inputs.len());
                for (k, (input, node)) in inputs.iter().zip(&root.inputs).enumerate() {
                    let pieces = (input.chunks.iter()).map(|chunk| (chunk.clone(), 0, chunk.rows));
                    let values: Vec<Vec<_>> = match self.device.walk_joins_input(root, k) {
                        true => vec![pieces.filter(|piece| piece.2 > 0).collect()],
                        false => pieces.map(|piece| vec![piece]).collect(),
                    };
                    let mut chunks = Vec::with_capacity(values.len());
                    for pieces in values {
                        chunks.push(self.assemble(pieces, node).await?);
                    }
                    stored.push(chunks);
                }
                let chunks = self.device.walk(self.batch, root, &stored).await?;
                for task in &pass.tasks {
                    self.ran(task);
                }
                Output::new(
                    self.device.core().id,
                    chunks.into_iter().map(Rc::new).collect(),
                )
            }
            Some(composed) => (self.composed(composed, inputs).await?.pop())
                .ok_or_else(|| internal("a composed walk left no output"))?,
        };
        let mut chunks = Vec::with_capacity(output.chunks.len());
        for chunk in output.chunks.iter() {
            chunks.push(
                self.kept(chunk.clone(), streamed.contains(&root.id))
                    .await?,
            );
        }
        Ok(Output::new(home_of(output.device, root, streamed), chunks))
    }

    /// Runs a pass composed of other passes over the `stored` outputs of its inputs (given to
    /// the schedule's stand-ins): the outputs of its roots, in order.
    async fn composed(&mut self, composed: &Composed, stored: Vec<Output>) -> Result<Vec<Output>> {
        for (input, output) in composed.inputs.iter().zip(stored) {
            input.replace_outputs(output);
        }
        let run = Box::pin(self.schedule(&composed.schedule, HashMap::new()));
        let outputs = run.await;
        // The stand-ins let go of the inputs, which the outer schedule frees after this pass.
        for input in &composed.inputs {
            input.replace_outputs(Output::new(self.device.core().id, Vec::new()));
        }
        let mut outputs = outputs?;
        (composed.roots.iter())
            .map(|root| {
                (outputs.remove(&root.id)).ok_or_else(|| internal("a composed pass left no output"))
            })
            .collect()
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

    /// A host copy of `value`, read once the device has done the work recorded so far.
    async fn read_back(&mut self, value: &Value) -> Result<Value> {
        let mut column = Column::empty(value.dtype, value.size)?;
        column.reserve_rows(value.rows)?;
        self.read_into(value, &mut column).await?;
        Ok(Value::host(column))
    }

    /// `value`'s rows appended to `column`, once the device has done the work recorded so
    /// far.
    async fn read_into(&mut self, value: &Value, column: &mut Column) -> Result<()> {
        self.device.flush(self.batch).await?;
        self.device
            .read_rows(value, 0, value.rows, &mut |_, data| column.append(&data))
            .await
    }

    /// A view op's chunks from its inputs' stored rows: a task per chunk.
    async fn assembly(
        &mut self,
        region: &Region,
        pass: &Pass,
        values: &HashMap<u64, Output>,
        streamed: &HashSet<u64>,
    ) -> Result<Output> {
        let node = &region.root;
        let mut chunks = Vec::with_capacity(pass.tasks.len());
        for task in &pass.tasks {
            let end = task.first + task.rows as u64;
            let mut pieces = Vec::new();
            for (input, lo, hi) in assembly_ranges(node, task.first, end) {
                let output = values
                    .get(&node.inputs[input].id)
                    .ok_or_else(|| internal("an assembled input has no value"))?;
                pieces.extend(output.pieces(lo, hi));
            }
            let chunk = self.assemble(pieces, node).await?;
            self.ran(task);
            chunks.push(self.kept(chunk, streamed.contains(&node.id)).await?);
        }
        Ok(Output::new(
            home_of(self.device.core().id, node, streamed),
            chunks,
        ))
    }
}

/// Where `root`'s output lives: `device`, or the host for an output streamed there.
fn home_of(device: DeviceId, root: &Node, streamed: &HashSet<u64>) -> DeviceId {
    match streamed.contains(&root.id) {
        true => crate::value::HOST,
        false => device,
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

/// `segmentedMap` needs valid segment starts; computed ones are read back to check them.
async fn check_segments(
    task: &Region,
    leaves: &[Rc<Value>],
    device: &dyn Backend,
    batch: &mut Erased,
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
                    .read_rows(value, 0, value.rows, &mut |_, data| column.append(&data))
                    .await?;
                validate_segments(&column, node.meta.length)?;
            }
        }
    }
    Ok(())
}
