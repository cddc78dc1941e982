//! Scatter on the CPU: the output is one host array, every row 0, written row by row where
//! the destinations say.

use super::{internal, CpuDevice};
use crate::column::{Column, ColumnData};
use crate::engine::{DeviceModel, ScatterModel, Scatters, Written};
use crate::error::Result;
use crate::ir::Node;
use crate::memory::Home;
use crate::plan::Region;
use crate::value::{Storage, Value};

impl ScatterModel for CpuDevice {}

impl Scatters for CpuDevice {
    async fn scatter_target(&self, home: &mut Home, root: &Node) -> Result<Vec<Value>> {
        let rows = root.meta.length;
        let mut lease = self.take(home, root.meta.dtype, rows as usize)?;
        let column = lease.get_mut();
        // Within the capacity `take` made room for: no allocation.
        crate::column::with_column_data!(&mut column.data, v => v.resize(rows as usize, Default::default()));
        column.rows = rows;
        Ok(vec![Value::from_host_lease(self.core().id, lease)])
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
            return Err(internal(
                "a scatter's inputs or output are not one host column each",
            ));
        };
        match written {
            Written::Rows(values) => {
                let values = (values.host_column())
                    .ok_or_else(|| internal("a scatter's values are not a host column"))?;
                scatter_rows(destinations, values, lease.get_mut())?
            }
            Written::RowNumbers { first } => {
                scatter_row_numbers(destinations, first, lease.get_mut())?
            }
        }
        self.core().counters.add_kernels(1);
        Ok(())
    }
}

/// Row `i` of `values` written to row `destinations[i]` of `target` (host columns of one
/// 32-bit type), where that is one of its rows.
fn scatter_rows(destinations: &Column, values: &Column, target: &mut Column) -> Result<()> {
    fn write<T: Copy>(out: &mut [T], destinations: &[u32], values: &[T]) {
        for (&d, &v) in destinations.iter().zip(values) {
            if let Some(slot) = out.get_mut(d as usize) {
                *slot = v;
            }
        }
    }
    let destinations = scatter_destinations(destinations)?;
    match (&mut target.data, &values.data) {
        (ColumnData::U32(out), ColumnData::U32(v)) => write(out, destinations, v),
        (ColumnData::I32(out), ColumnData::I32(v)) => write(out, destinations, v),
        (ColumnData::F32(out), ColumnData::F32(v)) => write(out, destinations, v),
        _ => return Err(internal("scatter values and output differ in type")),
    }
    Ok(())
}

/// `scatter_rows` of each row's number, `first` being the first row's.
fn scatter_row_numbers(destinations: &Column, first: u32, target: &mut Column) -> Result<()> {
    let ColumnData::U32(out) = &mut target.data else {
        return Err(internal("row numbers are scattered into a uint32 column"));
    };
    for (&d, row) in scatter_destinations(destinations)?.iter().zip(first..) {
        if let Some(slot) = out.get_mut(d as usize) {
            *slot = row;
        }
    }
    Ok(())
}

fn scatter_destinations(destinations: &Column) -> Result<&[u32]> {
    match &destinations.data {
        ColumnData::U32(destinations) => Ok(destinations),
        _ => Err(internal("scatter destinations are not uint32")),
    }
}
