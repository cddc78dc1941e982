//! Host data in and out of a CPU device: an upload copies into a pooled host array (the
//! caching allocator works here as on the GPU devices); a read hands rows over in place.

use super::CpuDevice;
use crate::column::{Column, ColumnData};
use crate::engine::{DeviceModel, Transfers};
use crate::error::Result;
use crate::memory::Home;
use crate::value::{RowSink, Value};

impl Transfers for CpuDevice {
    fn upload(&self, home: &mut Home, column: &Column) -> Result<Value> {
        let mut lease = self.take(home, column.dtype(), column.data.len())?;
        let copy = lease.get_mut();
        copy.size = column.size;
        copy.append(&column.data)?;
        Ok(Value::from_host_lease(self.core().id, lease))
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
    /// A CPU value's rows are in host memory: no read waits.
    async fn read_together(&self, reads: &[(&Value, u32, u32)]) -> Result<Vec<ColumnData>> {
        (reads.iter())
            .map(|&(value, start, end)| match value.host_column() {
                Some(column) => column.slice_rows(start, end),
                None => Err(crate::engine::internal("not a host value")),
            })
            .collect()
    }
}
