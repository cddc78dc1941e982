//! The stable sort on WebGPU: an LSD radix sort of 8-bit digits (shaders/radix_sort.wgsl),
//! three dispatches a digit (one a key where the rows are one block), with each key and the
//! permutation in one binding; the last
//! passes carry the first key, so the sort writes it in order too. Rows are ranked by
//! subgroup ballots where the device has subgroups, else by ballots in workgroup memory. A
//! sort too large for one binding runs in runs of this sort and a merge
//! (engine/external_sort.rs); one of rows past a count, as the IR's one-bit split passes,
//! which bind values in parts. Where only its first few rows are read (`topK`), each run of
//! rows keeps its own first few in one pass (shaders/top_k.wgsl) and the radix sort orders
//! those candidates alone.

use std::rc::Rc;

use super::{internal, BufferLease, Dispatch, GpuBatch, GpuDevice, GpuValue, STORAGE};
use crate::dtype::DType;
use crate::engine::{split_sort_scratch_bytes, DeviceModel, SortModel, Sorts};
use crate::error::Result;
use crate::ir::{key_mask, Node};
use crate::value::Value;
use crate::wgsl::compute::{
    sort_lanes, sort_source, top_k_source, SORT_BLOCK, SORT_DIGIT_BITS, SORT_THREADS, TOP_K_MOST,
    TOP_K_RUN, TOP_K_WORDS, WORKGROUP_SIZE,
};
use crate::wgsl::FIXED_PARAMS;

const DIGITS: u32 = 1 << SORT_DIGIT_BITS;

/// How a pass reads its rows (the kernels' parameter 6).
#[derive(Clone, Copy)]
enum Reads {
    /// The first pass: the key in place, rows in order.
    InPlace = 0,
    /// A later digit of the same key: the key as the last pass left it, and the permutation.
    Carried = 1,
    /// The first digit of another key: the permutation, and the key read through it.
    Through = 2,
}

/// Each pass of a sort by keys of `bits` bits: the key (its index) and the digit's shift,
/// from the last key's lowest digit up.
fn passes(bits: &[u32]) -> Vec<(usize, u32)> {
    (bits.iter().enumerate().rev())
        .flat_map(|(key, &bits)| {
            (0..bits)
                .step_by(SORT_DIGIT_BITS as usize)
                .map(move |s| (key, s))
        })
        .collect()
}

/// Whether a sort of `rows` rows is one block: one workgroup sorts it, each key's passes in
/// one dispatch, counting in workgroup memory.
fn fits_one_block(rows: u32) -> bool {
    rows <= SORT_BLOCK
}

/// Words of each block's digit counts in a sort of `rows` rows.
fn digit_counts(rows: u32) -> u32 {
    rows.div_ceil(SORT_BLOCK) * DIGITS
}

/// The rows each run of `TOP_K_RUN` keeps where a sort of `rows` rows is read for its first
/// `ordered_rows` alone: at most `TOP_K_MOST`, by keys whose words a run holds, from four
/// runs on (its arrays are then fewer bytes than a radix sort's of every row).
fn first_rows_per_run(rows: u32, ordered_rows: u32, keys: usize) -> Option<u32> {
    let kept = ordered_rows.min(rows);
    let fits = keys <= TOP_K_WORDS && rows >= 4 * TOP_K_RUN;
    (fits && (1..=TOP_K_MOST).contains(&kept)).then_some(kept)
}

impl GpuDevice {
    /// Whether a sort of `rows` rows runs natively: each array it binds fits one binding.
    fn sorts_natively(&self, rows: u32) -> bool {
        rows as u64 * 4 <= self.binding_limit().0
    }

    /// Invocations of the radix sort's placing workgroup where it ranks rows by subgroup
    /// ballots (`sort_lanes`); None where the device has no subgroups.
    fn sort_lanes(&self) -> Option<u32> {
        self.limits.subgroup_min_size.and_then(sort_lanes)
    }

    /// Device bytes `radix_sort` holds besides its keys (and the executor's copies joining
    /// keys stored in chunks) and its permutation: the other permutation, the key carried
    /// between passes (two; where the sort writes its first key in order, one of them is
    /// that output, counted here too), and each block's digit counts and their totals.
    fn radix_sort_scratch_bytes(&self, rows: u32) -> u64 {
        let arrays = 3 * self.value_bytes(DType::U32, 1, rows);
        match fits_one_block(rows) {
            true => arrays,
            false => {
                arrays
                    + self.value_bytes(DType::U32, 1, digit_counts(rows))
                    + self.value_bytes(DType::U32, 1, DIGITS)
            }
        }
    }

    /// The two permutations and two carried keys a radix sort's passes read and write in
    /// turn, and the carried keys' bytes (4 where no pass carries a key).
    fn ping_pong_arrays(
        &self,
        batch: &GpuBatch,
        rows: u32,
        bits: &[u32],
        writes_first_key: bool,
    ) -> Result<([BufferLease; 2], [BufferLease; 2], u64)> {
        let bytes = rows as u64 * 4;
        let carries = writes_first_key || bits.iter().any(|&b| b > SORT_DIGIT_BITS);
        let carried_bytes = if carries { bytes } else { 4 };
        let permutations = [
            self.sort_array(batch, bytes)?,
            self.sort_array(batch, bytes)?,
        ];
        let carried = [
            self.sort_array(batch, carried_bytes)?,
            self.sort_array(batch, carried_bytes)?,
        ];
        Ok((permutations, carried, carried_bytes))
    }

    /// A buffer of `bytes` for a sort's working arrays.
    fn sort_array(&self, batch: &GpuBatch, bytes: u64) -> Result<BufferLease> {
        self.take_buffer(bytes.max(4), STORAGE, &batch.home)
    }
}

/// The buffer of a key the executor joined into one value on this device.
fn key_buffer(device: &GpuDevice, key: &[Rc<Value>], rows: u32) -> Result<(wgpu::Buffer, u64)> {
    match key {
        [value] if value.rows == rows && value.device == device.core.id => {
            match value.storage_of::<GpuValue>() {
                Some(stored) => Ok((stored.buffer().clone(), rows as u64 * 4)),
                None => Err(internal("a sort key is not a WebGPU buffer")),
            }
        }
        _ => Err(internal(
            "a sort key is not one value of the sort's rows on this device",
        )),
    }
}

impl Sorts for GpuDevice {
    /// Records the sort of `keys` (each one value on this device, the most significant key
    /// first) by their low `bits` bits; its last passes carry the first key whole, so it
    /// writes that key in its order where `sorted` asks (WebGPU writes no other).
    async fn sort_permutation_and_keys(
        &self,
        batch: &mut GpuBatch,
        keys: &[&[Rc<Value>]],
        bits: &[u32],
        ordered_rows: u32,
        sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)> {
        if sorted.iter().any(|&key| key != 0) {
            return Err(internal("WebGPU's sort writes only its first key"));
        }
        let writes_first_key = sorted == [0];
        let rows: u32 = keys
            .first()
            .map_or(0, |key| key.iter().map(|c| c.rows).sum());
        self.check_binding(rows as u64 * 4, "a sort's permutation")?;
        let joined = (keys.iter())
            .map(|key| key_buffer(self, key, rows))
            .collect::<Result<Vec<_>>>()?;
        let value = |lease| self.stored(DType::U32, 1, rows, lease);
        // Where only the first rows are read, the candidates each run keeps are sorted alone.
        let first_rows = match first_rows_per_run(rows, ordered_rows, keys.len()) {
            Some(kept) if !writes_first_key => {
                let pipelines = self.top_k_pipelines(joined.len()).await?;
                Some(self.candidates(batch, pipelines, &joined, bits, rows, kept)?)
            }
            _ => None,
        };
        let sorting = first_rows.as_ref().map_or(&joined, |c| &c.keys);
        let sorted_rows = first_rows.as_ref().map_or(rows, |c| c.count);
        let (permutation, first_key) = self
            .radix_sort(batch, sorting, bits, sorted_rows, writes_first_key)
            .await?;
        if let Some(candidates) = first_rows {
            let permutation = self.first_rows(batch, candidates, permutation, rows)?;
            batch.keep.push(first_key);
            return Ok((value(permutation), Vec::new()));
        }
        let sorted_keys = match writes_first_key {
            true => vec![value(first_key)],
            false => {
                batch.keep.push(first_key);
                Vec::new()
            }
        };
        Ok((value(permutation), sorted_keys))
    }
}

impl GpuDevice {
    /// Records the radix sort of the keys `joined` (`rows` rows each) by their low `bits`
    /// bits: the permutation, and the first key carried by the last passes (in its order
    /// where `writes_first_key`).
    async fn radix_sort(
        &self,
        batch: &mut GpuBatch,
        joined: &[(wgpu::Buffer, u64)],
        bits: &[u32],
        rows: u32,
        writes_first_key: bool,
    ) -> Result<(BufferLease, BufferLease)> {
        // Its kernels, compiled once each (one await: each await of a pipeline is code).
        let lanes = self.sort_lanes();
        let one_block = fits_one_block(rows);
        let kinds = match one_block {
            true => vec![("block", None)],
            false => vec![("count", lanes), ("scan", None), ("place", lanes)],
        };
        let mut pipelines = Vec::with_capacity(kinds.len());
        for (kind, lanes) in kinds {
            pipelines.push(self.pipeline(&sort_source(kind, lanes)?).await?);
        }
        if one_block {
            let pipeline = pipelines.pop().ok_or_else(|| internal("no sort kernel"))?;
            return self.block_radix_sort(batch, pipeline, joined, bits, rows, writes_first_key);
        }
        let [count, scan, place] =
            <[_; 3]>::try_from(pipelines).map_err(|_| internal("no sort kernel"))?;
        let bytes = rows as u64 * 4;
        let blocks = rows.div_ceil(SORT_BLOCK);
        let (grid, stride) = self.grid(blocks.max(1) * SORT_THREADS, SORT_THREADS)?;
        let bound = |lease: &BufferLease, bytes: u64| (lease.buffer.clone(), bytes);
        let (counts_bytes, totals_bytes) = (digit_counts(rows) as u64 * 4, DIGITS as u64 * 4);
        let counts = self.sort_array(batch, counts_bytes)?;
        let totals = self.sort_array(batch, totals_bytes)?;
        let (counts_bound, totals_bound) =
            (bound(&counts, counts_bytes), bound(&totals, totals_bytes));
        let last_pass = passes(bits).len().saturating_sub(1);
        let (mut permutations, mut carried, carried_bytes) =
            self.ping_pong_arrays(batch, rows, bits, writes_first_key)?;
        for (pass, (key, shift)) in passes(bits).into_iter().enumerate() {
            let reads = match (pass, shift) {
                (0, _) => Reads::InPlace,
                (_, 0) => Reads::Through,
                _ => Reads::Carried,
            };
            let digit_bits = (bits[key] - shift).min(SORT_DIGIT_BITS);
            let carries_on =
                shift + SORT_DIGIT_BITS < bits[key] || (writes_first_key && pass == last_pass);
            let params = vec![
                rows,
                stride / SORT_THREADS,
                0,
                blocks,
                shift,
                (1 << digit_bits) - 1,
                reads as u32,
                u32::from(carries_on),
            ];
            let key_in = joined[key].clone();
            let (carried_in, permutation_in) = match reads {
                Reads::InPlace => (key_in.clone(), key_in.clone()),
                Reads::Carried => (
                    bound(&carried[0], carried_bytes),
                    bound(&permutations[0], bytes),
                ),
                Reads::Through => (
                    bound(&permutations[0], bytes),
                    bound(&permutations[0], bytes),
                ),
            };
            let reading = [key_in, carried_in, permutation_in];
            batch.dispatches.push(Dispatch {
                pipeline: count.clone(),
                params: params.clone(),
                buffers: [&reading[..], std::slice::from_ref(&counts_bound)].concat(),
                grid,
            });
            batch.dispatches.push(Dispatch {
                pipeline: scan.clone(),
                params: params.clone(),
                buffers: vec![counts_bound.clone(), totals_bound.clone()],
                grid: (DIGITS, 1),
            });
            let writing = [
                counts_bound.clone(),
                totals_bound.clone(),
                bound(&carried[1], carried_bytes),
                bound(&permutations[1], bytes),
            ];
            batch.dispatches.push(Dispatch {
                pipeline: place.clone(),
                params,
                buffers: [&reading[..], &writing[..]].concat(),
                grid,
            });
            permutations.swap(0, 1);
            carried.swap(0, 1);
        }
        let [permutation, spare] = permutations;
        let [first_key, spare_key] = carried;
        batch.keep.extend([spare, counts, totals, spare_key]);
        Ok((permutation, first_key))
    }

    /// `radix_sort` of one block's rows: one dispatch per key, running all of its passes
    /// in one workgroup (shaders/radix_sort.wgsl's `block`), where three dispatches a digit
    /// would each run one workgroup of that work.
    fn block_radix_sort(
        &self,
        batch: &mut GpuBatch,
        pipeline: Rc<wgpu::ComputePipeline>,
        joined: &[(wgpu::Buffer, u64)],
        bits: &[u32],
        rows: u32,
        writes_first_key: bool,
    ) -> Result<(BufferLease, BufferLease)> {
        let bytes = rows as u64 * 4;
        let bound = |lease: &BufferLease, bytes: u64| (lease.buffer.clone(), bytes);
        let (mut permutations, mut carried, carried_bytes) =
            self.ping_pong_arrays(batch, rows, bits, writes_first_key)?;
        // The last key's passes first; the first key with bits writes it in order.
        let sorted_keys: Vec<usize> = (0..bits.len()).rev().filter(|&k| bits[k] > 0).collect();
        for (n, &key) in sorted_keys.iter().enumerate() {
            let passes = bits[key].div_ceil(SORT_DIGIT_BITS);
            let reads = match n {
                0 => Reads::InPlace,
                _ => Reads::Through,
            };
            let last = n + 1 == sorted_keys.len();
            let params = vec![
                rows,
                reads as u32,
                passes,
                bits[key],
                u32::from(writes_first_key && last),
            ];
            batch.dispatches.push(Dispatch {
                pipeline: pipeline.clone(),
                params: padded(params),
                buffers: vec![
                    joined[key].clone(),
                    bound(&permutations[0], bytes),
                    bound(&carried[0], carried_bytes),
                    bound(&permutations[1], bytes),
                    bound(&carried[1], carried_bytes),
                ],
                grid: (1, 1),
            });
            // An odd number of passes leaves the arrays in side b.
            if passes % 2 == 1 {
                permutations.swap(0, 1);
                carried.swap(0, 1);
            }
        }
        let [permutation, spare] = permutations;
        let [first_key, spare_key] = carried;
        batch.keep.extend([spare, spare_key]);
        Ok((permutation, first_key))
    }

    /// The kernels keeping each run's first rows by `words` key words, gathering their keys,
    /// and mapping them back (shaders/top_k.wgsl).
    async fn top_k_pipelines(&self, words: usize) -> Result<[Rc<wgpu::ComputePipeline>; 3]> {
        let mut made = Vec::with_capacity(3);
        for (kind, words) in [("select", words), ("gather", 0), ("finish", 0)] {
            made.push(self.pipeline(&top_k_source(kind, words)?).await?);
        }
        made.try_into()
            .map_err(|_| internal("a top-k kernel is missing"))
    }

    /// Records the candidates for the first `kept` rows of the stable sort of `joined` (by
    /// their low `bits` bits): each run of `TOP_K_RUN` rows keeps its first `kept`, laid out
    /// by run, each run's in order, so that a stable sort of them keeps ties in row order.
    fn candidates(
        &self,
        batch: &mut GpuBatch,
        [select, gather, finish]: [Rc<wgpu::ComputePipeline>; 3],
        joined: &[(wgpu::Buffer, u64)],
        bits: &[u32],
        rows: u32,
        kept: u32,
    ) -> Result<Candidates> {
        let count = rows.div_ceil(TOP_K_RUN) * kept;
        let bytes = count as u64 * 4;
        let rows_lease = self.sort_array(batch, bytes)?;
        let rows_bound = (rows_lease.buffer.clone(), bytes);
        let (grid, stride) = self.grid(rows.div_ceil(TOP_K_RUN), WORKGROUP_SIZE)?;
        let mut params = vec![rows, stride, 0, kept];
        params.extend(bits.iter().map(|&b| key_mask(b)));
        batch.dispatches.push(Dispatch {
            pipeline: select,
            params: padded(params),
            buffers: [joined, std::slice::from_ref(&rows_bound)].concat(),
            grid,
        });
        let (grid, stride) = self.grid(count, WORKGROUP_SIZE)?;
        let mut keys = Vec::with_capacity(joined.len());
        for (key, &b) in joined.iter().zip(bits) {
            let lease = self.sort_array(batch, bytes)?;
            let bound = (lease.buffer.clone(), bytes);
            batch.dispatches.push(Dispatch {
                pipeline: gather.clone(),
                params: padded(vec![count, stride, 0, key_mask(b)]),
                buffers: vec![key.clone(), rows_bound.clone(), bound.clone()],
                grid,
            });
            keys.push(bound);
            batch.keep.push(lease);
        }
        Ok(Candidates {
            rows: rows_lease,
            keys,
            count,
            kept,
            finish,
        })
    }

    /// A permutation of `rows` rows whose first rows are the candidates' in `order` (the
    /// rest are not written).
    fn first_rows(
        &self,
        batch: &mut GpuBatch,
        candidates: Candidates,
        order: BufferLease,
        rows: u32,
    ) -> Result<BufferLease> {
        let permutation = self.sort_array(batch, rows as u64 * 4)?;
        let (grid, stride) = self.grid(candidates.kept, WORKGROUP_SIZE)?;
        let bytes = candidates.count as u64 * 4;
        batch.dispatches.push(Dispatch {
            pipeline: candidates.finish,
            params: padded(vec![candidates.kept, stride]),
            buffers: vec![
                (order.buffer.clone(), bytes),
                (candidates.rows.buffer.clone(), bytes),
                (permutation.buffer.clone(), rows as u64 * 4),
            ],
            grid,
        });
        batch.keep.extend([order, candidates.rows]);
        Ok(permutation)
    }
}

/// The rows each run keeps for a sort's first `kept` rows, and their keys.
struct Candidates {
    rows: BufferLease,
    keys: Vec<(wgpu::Buffer, u64)>,
    count: u32,
    kept: u32,
    /// The kernel mapping the sorted candidates back to rows.
    finish: Rc<wgpu::ComputePipeline>,
}

/// A kernel's parameters as its two vec4s hold them, the unused ones 0.
fn padded(mut params: Vec<u32>) -> Vec<u32> {
    params.resize(FIXED_PARAMS, 0);
    params
}

impl SortModel for GpuDevice {
    fn sorts(&self, rows: u32, _keys: usize) -> bool {
        self.sorts_natively(rows)
    }
    fn sort_scratch_bytes(&self, rows: u32, _keys: usize) -> u64 {
        match self.sorts_natively(rows) {
            true => self.radix_sort_scratch_bytes(rows),
            false => split_sort_scratch_bytes(self, rows),
        }
    }
    /// The dispatches of the native sort `sort` (three per digit; where only its first rows
    /// are read, a pass keeping each run's first rows and one gathering each of their keys
    /// first), and `explain`'s line.
    fn describe_sort(&self, sort: &Node, writes_first_key: bool) -> (u64, String) {
        let crate::ir::Op::SortPermutation { bits, ordered_rows } = &sort.op else {
            return (0, String::new());
        };
        let rows = sort.meta.length;
        let digits = passes(bits).len() as u64;
        let ranked = match self.sort_lanes() {
            Some(_) => ", ranking rows by subgroup ballots",
            None => "",
        };
        let sorted_keys = bits.iter().filter(|&&b| b > 0).count() as u64;
        // The radix sort of `rows` rows: its dispatches and what they do.
        let radix = |rows: u32| match fits_one_block(rows) {
            true => (
                sorted_keys,
                format!(
                    "{digits} passes of an 8-bit radix sort of one block (at most {SORT_BLOCK} \
                     rows), each key's passes in one dispatch of one workgroup"
                ),
            ),
            false => (
                3 * digits,
                format!(
                    "{digits} passes of an 8-bit radix sort (a count, a scan and a placing \
                     dispatch each, over {} blocks of {SORT_BLOCK} rows{ranked})",
                    rows.div_ceil(SORT_BLOCK)
                ),
            ),
        };
        match first_rows_per_run(rows, *ordered_rows, bits.len()) {
            Some(kept) if !writes_first_key => {
                let runs = rows.div_ceil(TOP_K_RUN);
                let (sorting, line) = radix(runs * kept);
                let dispatches = sorting + bits.len() as u64 + 2;
                (
                    dispatches,
                    format!(
                        "{dispatches} dispatches: the first {kept} rows of each of {runs} runs of {TOP_K_RUN} rows kept, their {} keys gathered, then {line}, and their first {kept} mapped back",
                        runs * kept,
                    ),
                )
            }
            _ => {
                let (dispatches, line) = radix(rows);
                (dispatches, format!("{dispatches} dispatches: {line}"))
            }
        }
    }
}
