//! Lookups on WebGPU (`Op::Lookup`): a hash table of the table's rows, built by one dispatch
//! of atomic inserts, then probed by a dispatch per chunk of keys (shaders/lookup.wgsl). A
//! key costs a probe or two where a sorted table costs a sort and a search of its rows.
//! Keys of a float and an integer type compare across classes, which the sort and search
//! the executor composes does instead (`ir::compose_lookup`).

use std::rc::Rc;

use super::{bound, internal, Dispatch, GpuBatch, GpuDevice, STORAGE};
use crate::dtype::{Class, DType};
use crate::error::Result;
use crate::ir::{Node, Op};
use crate::value::Value;
use crate::wgsl::compute::{lookup_source, scatter_source, WORKGROUP_SIZE};
use crate::wgsl::FIXED_PARAMS;

/// Slots of the hash table of a table of `rows` rows: a power of two, at most half full.
fn slots(rows: u32) -> u64 {
    (rows as u64 * 2).next_power_of_two().max(64)
}

/// Rows of the lookup `root`'s table.
fn table_rows(root: &Node) -> u32 {
    root.inputs.get(1).map_or(0, |table| table.meta.length)
}

/// Parameter 4 of the lookup kernels: how keys compare as words.
fn key_mode(keys: &Node, table: &Node) -> u32 {
    match (keys.meta.dtype.class(), table.meta.dtype.class()) {
        (Class::F, _) => 1,
        (k, t) if k != t => 2,
        _ => 0,
    }
}

impl GpuDevice {
    /// Whether this device looks the keys of `root` up in a hash table: a lookup whose keys
    /// are both floats or both integers, its table and slots each within one binding, and
    /// each chunk of keys too; under `allowedMem`, where the keys, their rows found, the
    /// table and its slots fit it at once (else the composed lookup streams the keys).
    pub(super) fn looks_up(&self, root: &Node) -> bool {
        let [keys, table, ..] = &root.inputs[..] else {
            return false;
        };
        let binding = self.binding_limit().0;
        let floats = [keys, table].map(|k| k.meta.dtype.class() == Class::F);
        // The slots hold twice the table's rows at least: where they fit, the table does.
        let slot_bytes = GpuDevice::lookup_slot_bytes(root);
        let held = (2 * keys.meta.length as u64 + table.meta.length as u64) * 4 + slot_bytes;
        root.op == Op::Lookup
            && floats[0] == floats[1]
            && slot_bytes <= binding
            && keys.chunks.iter().all(|&rows| rows as u64 * 4 <= binding)
            && self
                .core
                .allowed_mem
                .get()
                .is_none_or(|budget| held <= budget)
    }

    /// Bytes of the hash table of the lookup `root`.
    pub(super) fn lookup_slot_bytes(root: &Node) -> u64 {
        slots(table_rows(root)) * 4
    }

    /// The dispatches of the lookup `root`, and a line saying what they do.
    pub(super) fn describe_lookup(root: &Node) -> (u64, String) {
        let rows = table_rows(root);
        let probes = root.chunks.iter().filter(|&&rows| rows > 0).count() as u64;
        let inserts = u64::from(rows > 0);
        (
            1 + inserts + probes,
            format!(
                "1 dispatch clearing a hash table of {} slots, {inserts} inserting the table's {rows} rows, {probes} probing it per chunk of keys",
                slots(rows)
            ),
        )
    }

    /// Records the lookup `root` over its inputs' stored chunks (the table and its flags
    /// one value each): one output chunk per chunk of keys.
    pub(super) async fn lookup(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        inputs: &[Vec<Rc<Value>>],
    ) -> Result<Vec<Value>> {
        let sources = [
            scatter_source("fill")?,
            lookup_source("insert")?,
            lookup_source("probe")?,
        ];
        let mut pipelines = Vec::with_capacity(sources.len());
        for source in &sources {
            pipelines.push(self.pipeline(source).await?);
        }
        self.record_lookup(batch, root, inputs, pipelines)
    }

    /// `lookup`'s dispatches, with its pipelines: the clear, the inserts, the probes.
    fn record_lookup(
        &self,
        batch: &mut GpuBatch,
        root: &Node,
        inputs: &[Vec<Rc<Value>>],
        pipelines: Vec<Rc<wgpu::ComputePipeline>>,
    ) -> Result<Vec<Value>> {
        let (Some(keys), Some(table), [fill, insert, probe]) = (
            root.inputs.first().zip(inputs.first()),
            (root.inputs.get(1)).zip(inputs.get(1).and_then(|table| table.first())),
            &pipelines[..],
        ) else {
            return Err(internal("a lookup without its keys and table"));
        };
        let flags = match inputs.get(2) {
            Some(flags) => Some(flags.first().ok_or_else(|| internal("no table flags"))?),
            None => None,
        };
        let slot_words = slots(table.1.rows) as u32;
        let slot_bytes = slot_words as u64 * 4;
        let slots = self.take_buffer(slot_bytes, STORAGE, &batch.home)?;
        let slots_bound = (slots.buffer.clone(), slot_bytes);
        let table_bound = bound(table.1)?;
        let mode = key_mode(keys.0, table.0);
        let mut dispatch = |pipeline: &Rc<wgpu::ComputePipeline>, rows, buffers| {
            let (grid, stride) = self.grid(rows, WORKGROUP_SIZE)?;
            let mut params = vec![
                rows,
                stride,
                0,
                slot_words - 1,
                mode,
                u32::from(flags.is_some()),
            ];
            params.resize(FIXED_PARAMS, 0);
            let pipeline = pipeline.clone();
            batch.dispatches.push(Dispatch {
                pipeline,
                params,
                buffers,
                grid,
            });
            Ok::<_, crate::error::GpuTableError>(())
        };
        dispatch(fill, slot_words, vec![slots_bound.clone()])?;
        if table.1.rows > 0 {
            let flags = flags.map_or(Ok(table_bound.clone()), |flags| bound(flags))?;
            let buffers = vec![slots_bound.clone(), table_bound.clone(), flags];
            dispatch(insert, table.1.rows, buffers)?;
        }
        let mut chunks = Vec::with_capacity(keys.1.len());
        for chunk in keys.1 {
            let bytes = chunk.rows as u64 * 4;
            let lease = self.take_buffer(bytes.max(4), STORAGE, &batch.home)?;
            if chunk.rows > 0 {
                let out = (lease.buffer.clone(), bytes);
                let buffers = vec![out, table_bound.clone(), slots_bound.clone(), bound(chunk)?];
                dispatch(probe, chunk.rows, buffers)?;
            }
            chunks.push(self.stored(DType::I32, 1, chunk.rows, lease));
        }
        // The slots stay held until the batch has run.
        batch.keep.push(slots);
        Ok(chunks)
    }
}
