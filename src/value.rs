//! A node's materialized output on one device: host memory (the CPU devices and data handed
//! in by the user) or a GPU backend's storage (a WebGPU buffer, WebGL2 textures), which only
//! that backend looks inside. Values are reference-counted: a node holds its own, an
//! evaluation holds the ones it reads, and the storage goes back to its device's pool when
//! the last holder lets go.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::column::{Column, ColumnData};
use crate::dtype::DType;
use crate::error::Result;
use crate::memory::{Lease, Resource};

/// Which device holds a value. `HOST` is memory no device owns (user data, IPC loads).
pub type DeviceId = u32;
pub const HOST: DeviceId = 0;

static NEXT_DEVICE_ID: AtomicU32 = AtomicU32::new(1);

pub fn next_device_id() -> DeviceId {
    NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed)
}

impl Resource for Column {
    fn discard(self) {}
}

/// Host storage: a CPU device's pooled output, or unpooled user data.
pub type HostLease = Lease<DType, Column>;

/// A future that reads rows, boxed so backends stay behind `dyn DeviceStorage`.
pub type Reading<'a> = Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

/// A GPU backend's storage of one value. The code above the backends reads it through this
/// trait; the backend that made it downcasts it (`Value::storage_of`).
pub trait DeviceStorage: Any {
    /// Rows `start..end` of `value` (whose storage this is), handed to `sink` a piece at a
    /// time once the device's earlier work is done (its turn).
    fn read<'a, 's: 'a>(
        &'a self,
        value: &'a Value,
        start: u32,
        end: u32,
        sink: &'a mut RowSink<'s>,
    ) -> Reading<'a>;
    fn as_any(&self) -> &dyn Any;
}

pub enum Storage {
    Host(HostLease),
    Device(Box<dyn DeviceStorage>),
    /// Stored values of one device read as one, in row order: a random-access input bound
    /// part by part (each part within one binding), never stored on a node.
    Parts(Vec<Rc<Value>>),
}

pub struct Value {
    pub device: DeviceId,
    pub dtype: DType,
    pub size: u32,
    /// Rows stored: 1 for a constant, which broadcasts.
    pub rows: u32,
    pub storage: Storage,
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let storage = match self.storage {
            Storage::Host(_) => "host",
            Storage::Device(_) => "stored",
            Storage::Parts(_) => "parts",
        };
        write!(
            f,
            "<{} x{}, {} rows, {storage} on device {}>",
            self.dtype.name(),
            self.size,
            self.rows,
            self.device
        )
    }
}

impl Value {
    /// Host data no device owns.
    pub fn host(column: Column) -> Value {
        Value::from_host_lease(HOST, Lease::unpooled(column, DType::U8))
    }

    pub fn from_host_lease(device: DeviceId, lease: HostLease) -> Value {
        Value {
            device,
            dtype: lease.dtype(),
            size: lease.size,
            rows: lease.rows,
            storage: Storage::Host(lease),
        }
    }

    /// `parts` (values of one device, in row order) read as one value.
    pub fn parts(parts: Vec<Rc<Value>>) -> Value {
        let first = &parts[0];
        let (device, dtype, size) = (first.device, first.dtype, first.size);
        Value {
            device,
            dtype,
            size,
            rows: parts.iter().map(|p| p.rows).sum(),
            storage: Storage::Parts(parts),
        }
    }

    /// The host column, when this value lives in host memory (readable by any CPU device).
    pub fn host_column(&self) -> Option<&Column> {
        match &self.storage {
            Storage::Host(lease) => Some(lease),
            _ => None,
        }
    }

    /// The backend storage of type `S`, when this value has it.
    pub fn storage_of<S: DeviceStorage>(&self) -> Option<&S> {
        match &self.storage {
            Storage::Device(storage) => storage.as_any().downcast_ref(),
            _ => None,
        }
    }

    /// Values stored (rows x size).
    pub fn elements(&self) -> u64 {
        self.rows as u64 * self.size as u64
    }
}

/// A node's output on one device: its chunks in row order (one for an unchunked column).
#[derive(Clone, Debug)]
pub struct Output {
    pub device: DeviceId,
    pub chunks: Rc<[Rc<Value>]>,
    /// The first row of each chunk, and the end.
    offsets: Rc<[u64]>,
}

impl Output {
    pub fn new(device: DeviceId, chunks: Vec<Rc<Value>>) -> Output {
        let mut offsets = Vec::with_capacity(chunks.len() + 1);
        let mut at = 0u64;
        offsets.push(0);
        for chunk in &chunks {
            at += chunk.rows as u64;
            offsets.push(at);
        }
        Output {
            device,
            chunks: chunks.into(),
            offsets: offsets.into(),
        }
    }

    /// The first row of each chunk, and the end.
    pub fn offsets(&self) -> Rc<[u64]> {
        self.offsets.clone()
    }

    /// Rows over every chunk.
    pub fn rows(&self) -> u64 {
        self.offsets[self.offsets.len() - 1]
    }

    /// Whether every chunk is in host memory (readable by any CPU device in place).
    pub fn in_host_memory(&self) -> bool {
        self.chunks.iter().all(|c| c.host_column().is_some())
    }

    /// The chunks holding rows `start..end`, each with its rows in that range.
    pub fn pieces(&self, start: u64, end: u64) -> Vec<(Rc<Value>, u32, u32)> {
        let mut pieces = Vec::new();
        // The first chunk ending after `start` (a binary search: tasks look up their rows
        // chunk by chunk, so a scan would make a run quadratic in the chunks).
        let from = self.offsets[1..].partition_point(|&e| e <= start);
        for (chunk, &first) in self.chunks[from..].iter().zip(&self.offsets[from..]) {
            if first >= end {
                break;
            }
            let (lo, hi) = (first.max(start), (first + chunk.rows as u64).min(end));
            if lo < hi {
                pieces.push((chunk.clone(), (lo - first) as u32, (hi - first) as u32));
            }
        }
        pieces
    }
}

/// Packed rows handed out by a read, a piece at a time: `(first element, values)`.
pub type RowSink<'a> = dyn FnMut(u64, ColumnData) -> crate::Result<()> + 'a;
