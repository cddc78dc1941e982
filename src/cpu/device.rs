//! The CPU device: host memory, read in place by every CPU device, outputs from a pool of
//! host arrays (so the caching allocator works here as on the GPU devices).

use std::rc::Rc;

use super::CpuStates;
use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::engine::{Backend, DeviceCore, DeviceModel, LostFlag, Written};
use crate::error::Result;
use crate::ir::{Node, NodeRef, Reduction};
use crate::memory::{Home, Pool};
use crate::plan::{Fusion, PlanLimits, Region, SortWrites};
use crate::value::{RowSink, Storage, Value};

pub struct CpuInner {
    core: DeviceCore,
    pool: Rc<Pool<DType, Column>>,
}

/// A CPU device (cheap to clone: clones share the device).
#[derive(Clone)]
pub struct CpuDevice(Rc<CpuInner>);

impl Default for CpuDevice {
    fn default() -> Self {
        let core = DeviceCore::new(LostFlag::default());
        let pool = Pool::new(core.counters.clone(), isize::MAX as u64);
        CpuDevice(Rc::new(CpuInner { core, pool }))
    }
}

thread_local! {
    static SHARED: CpuDevice = CpuDevice::default();
}

impl CpuDevice {
    /// The device `readValue()` of an evaluator never evaluated uses.
    pub fn shared() -> CpuDevice {
        SHARED.with(Clone::clone)
    }

    /// An empty host array for `len` values of `dtype`, from the pool when one fits.
    fn take(&self, home: &Home, dtype: DType, len: usize) -> Result<crate::value::HostLease> {
        let bytes = len as u64 * dtype.byte_width() as u64;
        let mut lease = self.0.pool.take(dtype, bytes, home, |class| {
            let capacity = class as usize / dtype.byte_width();
            Ok(Column {
                size: 1,
                rows: 0,
                data: ColumnData::with_capacity(dtype, capacity)?,
            })
        })?;
        // A pooled array comes back as a new one would: empty and of row size 1 (callers
        // that write wider rows say so). It kept the size of its last use, and the radix
        // sort's permutation, written into one that had held rows of 2, read past its end.
        let column = lease.get_mut();
        crate::column::with_column_data!(&mut column.data, v => v.clear());
        column.rows = 0;
        column.size = 1;
        Ok(lease)
    }
}

impl DeviceModel for CpuDevice {
    fn core(&self) -> &DeviceCore {
        &self.0.core
    }
    fn name(&self) -> String {
        "cpu".to_string()
    }
    fn plan_limits(&self) -> PlanLimits {
        PlanLimits {
            sort_writes_keys: SortWrites::EveryKey,
            ..PlanLimits::unbounded()
        }
    }
    fn value_bytes(&self, dtype: DType, size: u32, rows: u32) -> u64 {
        let bytes = rows as u64 * size as u64 * dtype.byte_width() as u64;
        crate::memory::size_class(bytes, u64::MAX)
    }
    /// A gather source stored in chunks is read chunk by chunk (no joined copy); a leaf
    /// also read at the row is one block of host memory.
    fn binds_parts(&self, read_at_row: bool) -> bool {
        !read_at_row
    }
    fn reads_in_place(&self, value: &Value) -> bool {
        value.host_column().is_some()
    }
    fn sorts(&self, _rows: u32, _keys: usize) -> bool {
        true
    }
    fn sorts_keys_in_chunks(&self) -> bool {
        true
    }
    fn where_read_scratch_bytes(&self, region: &Region) -> u64 {
        super::where_read::scratch_bytes(region)
    }
    fn sort_scratch_bytes(&self, rows: u32, keys: usize) -> u64 {
        // Packed: two arrays of 64-bit words. By digits: the key carried between passes
        // (two arrays) and the rows between passes; by buckets: up to two bucket ends per
        // row and the carried second key.
        // Keys stored in several chunks are copied whole to be read by row.
        (3 + keys as u64) * self.value_bytes(DType::U32, 1, rows)
    }
    fn reduction_tail_kernels(&self, _: &Node) -> (u64, u64) {
        (1, 1)
    }
}

impl Backend for CpuDevice {
    type Batch = Home;
    fn begin(&self, home: Home) -> Result<Home> {
        Ok(home)
    }
    fn upload(&self, home: &mut Home, column: &Column) -> Result<Value> {
        let mut lease = self.take(home, column.dtype(), column.data.len())?;
        let copy = lease.get_mut();
        copy.size = column.size;
        copy.append(column.slice_rows(0, column.rows)?)?;
        Ok(Value::from_host_lease(self.0.core.id, lease))
    }
    async fn run_region(
        &self,
        home: &mut Home,
        region: &Region,
        leaves: &[Rc<Value>],
    ) -> Result<Value> {
        let lease = super::run_region(region, leaves, |dtype, len| self.take(home, dtype, len))?;
        self.0.core.counters.add_kernels(1);
        Ok(Value::from_host_lease(self.0.core.id, lease))
    }
    async fn scatter_target(&self, home: &mut Home, root: &Node) -> Result<Vec<Value>> {
        let rows = root.meta.length;
        let mut lease = self.take(home, root.meta.dtype, rows as usize)?;
        let column = lease.get_mut();
        // Within the capacity `take` made room for: no allocation.
        crate::column::with_column_data!(&mut column.data, v => v.resize(rows as usize, Default::default()));
        column.rows = rows;
        Ok(vec![Value::from_host_lease(self.0.core.id, lease)])
    }
    async fn scatter_rows(
        &self,
        _: &mut Home,
        _: &Region,
        destinations: &Value,
        written: Written<'_>,
        parts: &mut [Value],
    ) -> Result<()> {
        let (
            Some(destinations),
            [Value {
                storage: Storage::Host(lease),
                ..
            }],
        ) = (destinations.host_column(), parts)
        else {
            return Err(super::internal(
                "a scatter's inputs or output are not one host column each",
            ));
        };
        match written {
            Written::Rows(values) => {
                let values = (values.host_column())
                    .ok_or_else(|| super::internal("a scatter's values are not a host column"))?;
                super::kernels::scatter_rows(destinations, values, lease.get_mut())?
            }
            Written::RowNumbers { first } => {
                super::kernels::scatter_row_numbers(destinations, first, lease.get_mut())?
            }
        }
        self.0.core.counters.add_kernels(1);
        Ok(())
    }
    async fn sort_permutation_and_keys(
        &self,
        home: &mut Home,
        keys: &[&[Rc<Value>]],
        bits: &[u32],
        sorted: &[usize],
    ) -> Result<(Value, Vec<Value>)> {
        let mut chunks: Vec<Vec<&[u32]>> = Vec::with_capacity(keys.len());
        for key in keys {
            let mut parts = Vec::with_capacity(key.len());
            for value in key.iter() {
                match value.host_column().map(|c| &c.data) {
                    Some(ColumnData::U32(keys)) => parts.push(keys.as_slice()),
                    _ => return Err(super::internal("sort keys are not uint32 host columns")),
                }
            }
            chunks.push(parts);
        }
        let chunks: Vec<&[&[u32]]> = chunks.iter().map(|c| &c[..]).collect();
        let rows: usize = chunks
            .first()
            .map_or(0, |c| c.iter().map(|p| p.len()).sum());
        if sorted.iter().any(|&k| k >= chunks.len()) {
            return Err(super::internal("a sorted key the sort does not have"));
        }
        let mut leases = Vec::with_capacity(1 + sorted.len());
        for _ in 0..=sorted.len() {
            leases.push(self.take(home, DType::U32, rows)?);
        }
        let mut lists = Vec::with_capacity(leases.len());
        for lease in leases.iter_mut() {
            let column = lease.get_mut();
            column.rows = rows as u32;
            match &mut column.data {
                ColumnData::U32(list) => lists.push(list),
                _ => return Err(super::internal("a uint32 lease holds another type")),
            }
        }
        let Some((out, keys_out)) = lists.split_first_mut() else {
            return Err(super::internal("a sort without its permutation's list"));
        };
        let mut sorted_out: Vec<(usize, &mut Vec<u32>)> = sorted
            .iter()
            .copied()
            .zip(keys_out.iter_mut().map(|l| &mut **l))
            .collect();
        let passes = super::sort::sort_permutation(&chunks, bits, out, &mut sorted_out)?;
        self.0.core.counters.add_kernels(passes);
        let id = self.0.core.id;
        let mut values = (leases.into_iter()).map(|lease| Value::from_host_lease(id, lease));
        let permutation = values
            .next()
            .ok_or_else(|| super::internal("a sort without its permutation"))?;
        Ok((permutation, values.collect()))
    }
    type States = super::CpuStates;
    fn reduction_states(&self, _: &mut Home, root: &Node, parts: u32) -> Result<CpuStates> {
        CpuStates::new(root.inputs[0].meta.size, parts)
    }
    async fn reduce_chunk(
        &self,
        _: &mut Home,
        task: &Region,
        leaves: &[Rc<Value>],
        first_row: u64,
        states: &mut CpuStates,
        part: u32,
    ) -> Result<()> {
        let words = super::reduce_region(task, leaves, first_row)?;
        self.0.core.counters.add_kernels(1);
        super::reduce::store_part(states, part, &words)
    }
    async fn combine_states(
        &self,
        _: &mut Home,
        root: &Node,
        states: CpuStates,
        parts: u32,
        every: u32,
    ) -> Result<CpuStates> {
        let kind = Reduction::kind_of(root)?;
        self.0.core.counters.add_kernels(1);
        super::reduce::combine(
            kind,
            root.inputs[0].meta.dtype.class(),
            &states,
            parts,
            every,
        )
    }
    async fn finish_reduction(
        &self,
        home: &mut Home,
        region: &Region,
        states: CpuStates,
    ) -> Result<Value> {
        let root = &region.root;
        let column = super::reduce::finish(
            Reduction::kind_of(root)?,
            root.inputs[0].meta.dtype,
            &states,
        )?;
        self.0.core.counters.add_kernels(1);
        self.upload(home, &column)
    }
    async fn flush(&self, _: &mut Home) -> Result<()> {
        Ok(())
    }
    async fn finish(&self, _: Home) -> Result<()> {
        Ok(())
    }
    async fn read_rows(
        &self,
        value: &Value,
        start: u32,
        end: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<()> {
        let column = value
            .host_column()
            .ok_or_else(|| crate::engine::internal("not a host value"))?;
        sink(
            start as u64 * value.size as u64,
            column.slice_rows(start, end)?,
        )
    }
    fn trim(&self, cache: Option<&str>) {
        self.0.pool.trim(cache);
    }
    fn set_pool_cap(&self, bytes: u64) {
        self.0.pool.set_cap(bytes);
    }
    fn destroy(&self) {
        self.0.pool.trim(None);
        self.0.core.lost.set_destroyed("cpu");
    }
}

/// Evaluates `roots` on the shared CPU device, now (CPU work never waits).
pub fn evaluate(roots: &[NodeRef], fusion: Fusion) -> Result<()> {
    crate::engine::now(crate::engine::evaluate_with(
        &CpuDevice::shared(),
        roots,
        fusion,
    ))?
}
