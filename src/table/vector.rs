//! `Data` (one chunk: a buffer it owns or borrows) and `Vector` (one logical column over
//! chunks, with optional validity). Destroying frees only what is owned.

use std::cell::RefCell;
use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{self, NodeRef};
use crate::value::DeviceId;

use super::buffer::{Buffer, BufferRef};
use super::next_id;

pub type DataRef = Rc<RefCell<Data>>;
pub type VectorRef = Rc<RefCell<Vector>>;

#[derive(Debug)]
pub struct Data {
    pub id: u32,
    pub buffer: BufferRef,
    pub owns_buffer: bool,
    pub destroyed: bool,
}

impl Data {
    /// Whether it, or the buffer it reads, was destroyed.
    pub fn gone(&self) -> bool {
        self.destroyed || self.buffer.borrow().destroyed()
    }

    pub fn new(buffer: BufferRef, owns_buffer: bool) -> DataRef {
        Rc::new(RefCell::new(Data {
            id: next_id(),
            buffer,
            owns_buffer,
            destroyed: false,
        }))
    }

    pub fn length(&self) -> u32 {
        self.buffer.borrow().length
    }

    /// Destroys the chunk; a borrowed buffer lets go of the output it reads.
    fn release(&mut self) {
        self.destroy();
        if !self.owns_buffer {
            self.buffer.borrow_mut().let_go();
        }
    }

    /// Frees the buffer if this chunk owns it; a borrowed buffer is left alone.
    pub fn destroy(&mut self) {
        if self.owns_buffer && !self.destroyed {
            self.buffer.borrow_mut().destroy();
        }
        self.destroyed = true;
    }
}

#[derive(Debug)]
pub struct Vector {
    pub id: u32,
    pub name: String,
    pub dtype: DType,
    pub size: u32,
    pub data: Vec<DataRef>,
    /// uint8 flags (1 valid, 0 null), chunked like `data`, or None.
    pub validity: Option<VectorRef>,
    /// Whether `validity` is all-valid flags a table made: they follow appends and resets.
    pub validity_made: bool,
    pub destroyed: bool,
    /// Set where the vector is an output or a table column; else its first buffer's.
    device: Option<DeviceId>,
    /// For an output whose rows were counted on a device that draws indirect: its draw
    /// arguments `[rows, 1, 0, 0]` there.
    pub draw_args: Option<NodeRef>,
}

impl Vector {
    pub fn new(name: &str, dtype: DType, size: u32, data: Vec<DataRef>) -> Vector {
        Vector {
            id: next_id(),
            name: name.to_string(),
            dtype,
            size,
            data,
            validity: None,
            validity_made: false,
            destroyed: false,
            device: None,
            draw_args: None,
        }
    }

    pub fn shared(self) -> VectorRef {
        Rc::new(RefCell::new(self))
    }

    /// One chunk that owns storage over `node` (counted as live on `device`).
    pub fn owning(name: &str, node: NodeRef, device: Option<DeviceId>) -> Vector {
        let meta = node.meta;
        let data = Data::new(Buffer::over_node(node, device), true);
        Vector::new(name, meta.dtype, meta.size, vec![data])
    }

    /// An empty vector that grows by `append`.
    pub fn appendable(name: &str, dtype: DType, size: u32, capacity: u32) -> Result<Vector> {
        if size == 0 {
            return Err(GpuTableError::invalid("size must be at least 1"));
        }
        let data = Data::new(Buffer::appendable(dtype, size, capacity)?, true);
        Ok(Vector::new(name, dtype, size, vec![data]))
    }

    /// The output of evaluated `node` on `device`: one borrowed chunk per stored chunk.
    pub fn of_output(node: &NodeRef, device: DeviceId) -> Vector {
        let ranges = Vector::output_ranges(node, device);
        let mut vector = Vector::of_ranges(node, device, &ranges);
        vector.validity = node
            .validity()
            .map(|v| Vector::of_ranges(v, device, &ranges).shared());
        vector.draw_args = (node.counted())
            .and_then(|c| c.made_draw_args())
            .filter(|args| args.output_on(device).is_some());
        vector
    }

    /// Each chunk of `node`'s output on `device` as `(stored chunk, first row, rows)`, the
    /// first row counted over the whole output: its stored chunks, or for a result counted
    /// on the device the rows its count gave each chunk (packed from the first row).
    fn output_ranges(node: &NodeRef, device: DeviceId) -> Vec<(u32, u32, u32)> {
        let stored: Vec<u32> = match node.output_on(device).or_else(|| node.home()) {
            Some(output) => output.chunks.iter().map(|c| c.rows).collect(),
            None => node.chunks.to_vec(),
        };
        let Some(settled) = node.counted().and(node.settled()) else {
            let mut first = 0u32;
            return (stored.iter().enumerate())
                .map(|(chunk, &rows)| {
                    first += rows;
                    (chunk as u32, first - rows, rows)
                })
                .collect();
        };
        // A counted result's rows are packed from the first row, whatever chunks hold them.
        let stored_offsets = ir::chunk_offsets(&stored);
        let mut first = 0u32;
        settled
            .iter()
            .map(|&rows| {
                let at = stored_offsets[1..].partition_point(|&end| end <= first as u64);
                let last = stored_offsets.len().saturating_sub(2);
                let range = (at.min(last) as u32, first, rows);
                first += rows;
                range
            })
            .collect()
    }

    fn of_ranges(node: &NodeRef, device: DeviceId, ranges: &[(u32, u32, u32)]) -> Vector {
        let data = ranges
            .iter()
            .map(|&(chunk, first, rows)| {
                let buffer = Buffer::output_chunk(node.clone(), chunk, first, rows, device);
                Data::new(buffer, false)
            })
            .collect();
        let mut vector = Vector::new("", node.meta.dtype, node.meta.size, data);
        vector.device = Some(device);
        vector
    }

    /// Flags of 1 for `rows` rows of `size` lanes, made where they are used (no host copy
    /// for a table on a GPU device).
    pub fn all_valid(name: &str, rows: u32, size: u32, device: Option<DeviceId>) -> Result<Vector> {
        Ok(Vector::owning(name, ir::valid_rows(rows, size)?, device))
    }

    pub fn with_validity(mut self, validity: Option<Vector>) -> Vector {
        self.validity = validity.map(Vector::shared);
        self
    }

    pub fn with_device(mut self, device: Option<DeviceId>) -> Vector {
        self.device = device;
        self
    }

    /// A vector over the same chunks that owns none of them (validity borrowed too).
    pub fn borrowed(&self) -> Vector {
        let data = self
            .data
            .iter()
            .map(|d| Data::new(d.borrow().buffer.clone(), false))
            .collect();
        let mut vector = Vector::new(&self.name, self.dtype, self.size, data);
        vector.validity = self
            .validity
            .as_ref()
            .map(|v| v.borrow().borrowed().shared());
        vector.validity_made = self.validity_made;
        vector.device = self.device;
        vector
    }

    /// DESTROYED once destroyed or detached, or once storage it borrows is (a table's column
    /// after the table).
    pub fn check(&self) -> Result<()> {
        let gone = self.destroyed || self.data.iter().any(|d| d.borrow().gone());
        match gone {
            true => Err(GpuTableError::new(
                ErrorCode::Destroyed,
                format!("vector '{}' was destroyed or detached", self.name),
            )),
            false => Ok(()),
        }
    }

    pub fn length(&self) -> u64 {
        self.data.iter().map(|d| d.borrow().length() as u64).sum()
    }

    pub fn chunks(&self) -> Vec<u32> {
        self.data.iter().map(|d| d.borrow().length()).collect()
    }

    pub fn device(&self) -> Option<DeviceId> {
        self.device.or_else(|| {
            self.data
                .first()
                .and_then(|d| d.borrow().buffer.borrow().device)
        })
    }

    /// The vector as one node (with its nulls): its chunk, or a view reading each chunk where
    /// it is stored.
    pub fn node(&self) -> Result<NodeRef> {
        let values = self.values_node()?;
        let validity = match &self.validity {
            Some(v) => Some(v.borrow().node()?),
            None => None,
        };
        ir::with_validity(&values, validity.as_ref())
    }

    /// `node` without the nulls.
    fn values_node(&self) -> Result<NodeRef> {
        self.check()?;
        let nodes = self
            .data
            .iter()
            .map(|d| d.borrow().buffer.borrow_mut().node())
            .collect::<Result<Vec<_>>>()?;
        match nodes.len() {
            0 => ir::source(Column::empty(self.dtype, self.size)?.data, self.size, false),
            1 => Ok(nodes[0].clone()),
            _ => ir::concat(&nodes),
        }
    }

    /// Rows `start..end` (clamped) as pieces: the node storing each chunk and the rows of it.
    pub fn pieces(&self, start: u64, end: u64) -> Result<Vec<(NodeRef, u32, u32)>> {
        self.check()?;
        let mut pieces = Vec::new();
        let mut first = 0u64;
        for data in &self.data {
            let length = data.borrow().length() as u64;
            let (from, to) = (
                start.max(first) - first,
                end.min(first + length).saturating_sub(first),
            );
            if from < to {
                let (node, offset, _) = data.borrow().buffer.borrow_mut().stored()?;
                pieces.push((node, offset + from as u32, offset + to as u32));
            }
            first += length;
        }
        Ok(pieces)
    }

    /// Appends packed rows to the last chunk (appendable vectors only).
    pub fn append(&mut self, rows: ColumnData) -> Result<()> {
        self.check()?;
        self.last_buffer()?.borrow_mut().append(rows)?;
        self.remake_validity()
    }

    /// Clears the last chunk's rows, keeping its capacity (appendable vectors only; others
    /// are left as they are).
    pub fn reset_last(&mut self) -> Result<()> {
        self.check()?;
        self.last_buffer()?.borrow_mut().reset()?;
        self.remake_validity()
    }

    /// All-valid flags a table made, remade for the rows the vector has now.
    fn remake_validity(&mut self) -> Result<()> {
        let Some(old) = self.validity.clone().filter(|_| self.validity_made) else {
            return Ok(());
        };
        let rows = u32::try_from(self.length())
            .map_err(|_| GpuTableError::new(ErrorCode::LimitExceeded, "a vector over 2^32 rows"))?;
        let size = old.borrow().size;
        let flags = Vector::all_valid(
            &format!("{}.validity", self.name),
            rows,
            size,
            self.device(),
        )?;
        old.borrow_mut().destroy();
        self.validity = Some(flags.shared());
        Ok(())
    }

    fn last_buffer(&self) -> Result<BufferRef> {
        let last = self.data.last().ok_or_else(|| {
            GpuTableError::new(ErrorCode::EmptyInput, "this vector has no chunks")
        })?;
        let buffer = last.borrow().buffer.clone();
        Ok(buffer)
    }

    /// Destroys the vector and lets go of what it reads (an output's node, its flags and
    /// draw arguments): a view of a destroyed evaluator's output keeps nothing alive. Its
    /// chunks stay, with their rows (a batch may hold it), their reads `DESTROYED`.
    pub fn release(&mut self) {
        self.destroy();
        for data in &self.data {
            data.borrow_mut().release();
        }
        if let Some(validity) = &self.validity {
            validity.borrow_mut().release();
        }
        self.draw_args = None;
    }

    /// Frees the chunks (and validity) this vector owns; later use is `DESTROYED`.
    pub fn destroy(&mut self) {
        if self.destroyed {
            return;
        }
        for data in &self.data {
            data.borrow_mut().destroy();
        }
        if let Some(validity) = &self.validity {
            validity.borrow_mut().destroy();
        }
        self.destroyed = true;
    }
}
