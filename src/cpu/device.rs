//! The CPU device: host memory, read in place by every CPU device, outputs from a pool of
//! host arrays (so the caching allocator works here as on the GPU devices).

use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::engine::{DeviceCore, DeviceModel, LostFlag};
use crate::error::Result;
use crate::ir::NodeRef;
use crate::memory::{Home, Pool};
use crate::plan::{Fusion, PlanLimits, SortWrites};
use crate::value::Value;

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
    pub(super) fn take(
        &self,
        home: &Home,
        dtype: DType,
        len: usize,
    ) -> Result<crate::value::HostLease> {
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
            adds_rows_to_bins: Box::new(|_| true),
            ..PlanLimits::unbounded()
        }
    }
    /// Kernels take their parameters as arguments: a margin only for small values the
    /// projection does not list one by one (an empty value still takes 16 bytes).
    fn task_overhead_bytes(&self) -> u64 {
        1 << 10
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
