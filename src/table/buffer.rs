//! `Buffer`, the only owner of table storage (the reference's DynamicBuffer): the rows of a
//! node's output, or host rows that grow by `append` (capacity doubles; `generation` counts
//! the replacements). Tracked buffers are counted per device while alive, for leak checks.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::column::{element_count, with_column_data, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, NodeRef};
use crate::value::DeviceId;

use super::next_id;

pub type BufferRef = Rc<RefCell<Buffer>>;

thread_local! {
    /// Live tracked buffers by id, with the device holding each (None: no device).
    static LIVE: RefCell<HashMap<u32, Option<DeviceId>>> = RefCell::new(HashMap::new());
}

/// Tracked buffers alive on `device`; with `unplaced`, also those of no device (what a CPU
/// device reads in place).
pub fn live_buffers_on(device: DeviceId, unplaced: bool) -> usize {
    LIVE.with(|live| {
        live.borrow()
            .values()
            .filter(|d| **d == Some(device) || (unplaced && d.is_none()))
            .count()
    })
}

/// Every tracked buffer alive.
pub fn live_buffers() -> usize {
    LIVE.with(|live| live.borrow().len())
}

#[derive(Debug)]
enum Backing {
    /// Rows `row_offset..row_offset + length` of `node`'s output: the whole of a table
    /// column's batch, or one chunk of an evaluated output (read through a `view`).
    Node {
        node: NodeRef,
        chunk: u32,
        row_offset: u32,
        view: Option<NodeRef>,
    },
    /// Host rows in use (`length` rows) with room for `capacity` rows; `node` is made when
    /// an evaluation reads them. When they change it is destroyed, or, where ops built on it
    /// hold it, kept for them in `superseded` until they drop it or the buffer is destroyed.
    Appendable {
        values: ColumnData,
        capacity: u32,
        node: Option<NodeRef>,
        superseded: Vec<std::rc::Weak<crate::ir::Node>>,
    },
}

#[derive(Debug)]
pub struct Buffer {
    pub id: u32,
    pub dtype: DType,
    pub size: u32,
    /// Rows in use.
    pub length: u32,
    pub generation: u32,
    /// The device holding the storage (None: host memory of no device).
    pub device: Option<DeviceId>,
    backing: Option<Backing>,
    tracked: bool,
}

impl Buffer {
    fn new(backing: Backing, dtype: DType, size: u32, length: u32) -> Buffer {
        Buffer {
            id: next_id(),
            dtype,
            size,
            length,
            generation: 0,
            device: None,
            backing: Some(backing),
            tracked: false,
        }
    }

    /// Storage holding `node`'s rows, counted as live on `device` until destroyed.
    pub fn over_node(node: NodeRef, device: Option<DeviceId>) -> BufferRef {
        let meta = node.meta;
        let backing = Backing::Node {
            node,
            chunk: 0,
            row_offset: 0,
            view: None,
        };
        let mut buffer = Buffer::new(backing, meta.dtype, meta.size, meta.length);
        buffer.track(device);
        Rc::new(RefCell::new(buffer))
    }

    /// Chunk `chunk` (rows `row_offset..row_offset + rows`) of `node`'s output on `device`:
    /// the evaluator owns that storage, so it is not counted here.
    pub fn output_chunk(
        node: NodeRef,
        chunk: u32,
        row_offset: u32,
        rows: u32,
        device: DeviceId,
    ) -> BufferRef {
        let meta = node.meta;
        let backing = Backing::Node {
            node,
            chunk,
            row_offset,
            view: None,
        };
        let mut buffer = Buffer::new(backing, meta.dtype, meta.size, rows);
        buffer.device = Some(device);
        Rc::new(RefCell::new(buffer))
    }

    /// Empty host storage with room for `capacity` rows (at least one).
    pub fn appendable(dtype: DType, size: u32, capacity: u32) -> Result<BufferRef> {
        let capacity = capacity.max(1);
        let values =
            ColumnData::with_capacity(dtype, element_count(capacity as u64, size, dtype)?)?;
        let backing = Backing::Appendable {
            values,
            capacity,
            node: None,
            superseded: Vec::new(),
        };
        let mut buffer = Buffer::new(backing, dtype, size, 0);
        buffer.track(None);
        Ok(Rc::new(RefCell::new(buffer)))
    }

    fn track(&mut self, device: Option<DeviceId>) {
        self.device = device;
        self.tracked = true;
        LIVE.with(|live| live.borrow_mut().insert(self.id, device));
    }

    pub fn destroyed(&self) -> bool {
        self.backing.is_none()
    }

    fn backing(&mut self) -> Result<&mut Backing> {
        self.backing
            .as_mut()
            .ok_or_else(|| GpuTableError::new(ErrorCode::Destroyed, "this buffer was destroyed"))
    }

    /// Rows the backing holds without growing.
    pub fn capacity(&self) -> u32 {
        match &self.backing {
            Some(Backing::Appendable { capacity, .. }) => *capacity,
            _ => self.length,
        }
    }

    pub fn byte_length(&self) -> f64 {
        self.capacity() as f64 * self.size as f64 * self.dtype.byte_width() as f64
    }

    /// A node of exactly these rows: the stored node itself, a view of its chunk, or the
    /// appended rows (made once per change).
    pub fn node(&mut self) -> Result<NodeRef> {
        let (dtype, size, length) = (self.dtype, self.size, self.length);
        match self.backing()? {
            Backing::Node { node, .. } if node.chunks.len() == 1 && node.counted().is_none() => {
                Ok(node.clone())
            }
            Backing::Node {
                node,
                row_offset,
                view,
                ..
            } => {
                if view.is_none() {
                    let from = *row_offset as f64;
                    *view = Some(ir::slice(node, from, from + length as f64)?);
                }
                Ok(view.clone().expect("made above"))
            }
            Backing::Appendable { values, node, .. } => {
                if node.is_none() {
                    let rows = element_count(length as u64, size, dtype)?;
                    let copy = with_column_data!(values, v => {
                        let mut out = crate::column::try_vec(rows, dtype.name())?;
                        out.extend_from_slice(&v[..rows]);
                        crate::column::Elem::wrap_data(out)
                    });
                    *node = Some(ir::source(copy, size, false)?);
                }
                Ok(node.clone().expect("made above"))
            }
        }
    }

    /// The node whose output holds these rows, the first row's place in it and the output
    /// chunk they are (reads and `gpuBuffer` go to the stored output directly).
    pub fn stored(&mut self) -> Result<(NodeRef, u32, u32)> {
        match self.backing()? {
            Backing::Node {
                node,
                chunk,
                row_offset,
                ..
            } => Ok((node.clone(), *row_offset, *chunk)),
            Backing::Appendable { .. } => Ok((self.node()?, 0, 0)),
        }
    }

    /// Appends packed rows of this buffer's type, doubling the capacity when full.
    pub fn append(&mut self, rows: ColumnData) -> Result<()> {
        let (dtype, size, length) = (self.dtype, self.size, self.length);
        let Backing::Appendable {
            values,
            capacity,
            node,
            superseded,
        } = self.backing()?
        else {
            return Err(GpuTableError::invalid("only appendable vectors grow"));
        };
        if rows.dtype() != dtype {
            return Err(GpuTableError::new(
                ErrorCode::TypeMismatch,
                format!(
                    "cannot append {} values to {}",
                    rows.dtype().name(),
                    dtype.name()
                ),
            ));
        }
        if rows.len() % size as usize != 0 {
            return Err(GpuTableError::invalid(format!(
                "{} values are not whole rows of size {size}",
                rows.len()
            )));
        }
        let added = u32::try_from(rows.len() / size as usize)
            .ok()
            .and_then(|n| n.checked_add(length))
            .ok_or_else(|| {
                GpuTableError::new(
                    ErrorCode::LimitExceeded,
                    "an appendable vector holds at most 2^32-1 rows",
                )
            })?;
        let mut grew = false;
        if added > *capacity {
            let mut grown = (*capacity).max(1) as u64;
            while grown < added as u64 {
                grown *= 2;
            }
            let grown = grown.min(u32::MAX as u64) as u32;
            let elements = element_count(grown as u64, size, dtype)?;
            with_column_data!(values, v => v.try_reserve_exact(elements - v.len()).map_err(|_| {
                GpuTableError::new(ErrorCode::OutOfMemory, format!("could not grow to {grown} rows"))
            }))?;
            *capacity = grown;
            grew = true;
        }
        values.extend_from(&rows);
        supersede(node, superseded);
        self.length = added;
        self.generation += grew as u32;
        Ok(())
    }

    /// Forgets the rows in use and keeps the capacity (appendable storage only; other
    /// storage is left as it is).
    pub fn reset(&mut self) -> Result<()> {
        if let Backing::Appendable {
            values,
            node,
            superseded,
            ..
        } = self.backing()?
        {
            with_column_data!(values, v => v.clear());
            supersede(node, superseded);
            self.length = 0;
        }
        Ok(())
    }

    /// Ends a borrowed view of an output (its evaluator destroyed): what it reads is left
    /// to its owner, not held by the view; its rows stay counted, their reads `DESTROYED`.
    pub fn let_go(&mut self) {
        if matches!(self.backing, Some(Backing::Node { .. })) {
            self.backing = None;
        }
    }

    /// Frees the storage at once (on a GPU device too); later use is `DESTROYED`.
    pub fn destroy(&mut self) {
        match self.backing.take() {
            Some(Backing::Node { node, view, .. }) => {
                if let Some(view) = view {
                    view.destroy();
                }
                node.destroy();
            }
            Some(Backing::Appendable {
                node, superseded, ..
            }) => {
                let held = superseded.iter().filter_map(std::rc::Weak::upgrade);
                for node in node.iter().cloned().chain(held) {
                    node.destroy();
                }
            }
            _ => {}
        }
        if self.tracked {
            LIVE.with(|live| live.borrow_mut().remove(&self.id));
            self.tracked = false;
        }
    }
}

/// The node of rows that changed: destroyed at once where nothing else holds it, else left
/// to the ops built on it (destroyed with the buffer if they still hold it then).
fn supersede(node: &mut Option<NodeRef>, superseded: &mut Vec<std::rc::Weak<crate::ir::Node>>) {
    let Some(old) = node.take() else {
        return;
    };
    superseded.retain(|weak| weak.strong_count() > 0);
    match std::rc::Rc::strong_count(&old) {
        1 => old.destroy(),
        _ => superseded.push(std::rc::Rc::downgrade(&old)),
    }
}
