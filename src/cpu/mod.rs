//! The CPU backend: the reference every GPU backend is tested against, and fast in its own
//! right. Values live in host memory, from a pool of host arrays (so the caching allocator
//! works here as on the GPU devices); fused regions run block by block (`region.rs`).

mod bins;
mod device;
mod lane;
mod math;
mod rows;
mod scan;
mod scatter;
mod segment;
mod sort;
mod top_rows;
mod transfer;
mod where_read;

use crate::engine::Batches;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::memory::Home;
pub use device::{evaluate, CpuDevice};
pub use lane::{Buf, Lane};

/// Runs `$body` with `$t` bound to the lane type of a compute class.
macro_rules! dispatch_class {
    ($class:expr, $t:ident => $body:block) => {
        match $class {
            Class::F => {
                type $t = f32;
                $body
            }
            Class::I => {
                type $t = i32;
                $body
            }
            Class::U => {
                type $t = u32;
                $body
            }
        }
    };
}

/// Runs `$body` with `$v` bound to the typed vector of a `Buf`.
macro_rules! with_buf {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            Buf::F($v) => $body,
            Buf::I($v) => $body,
            Buf::U($v) => $body,
        }
    };
}

mod block;
mod kernels;
pub(crate) mod reduce;
mod region;

use block::Block;
pub use reduce::CpuStates;
use region::{append_block, run_blocks, Sink};

fn internal(message: impl Into<String>) -> GpuTableError {
    GpuTableError::new(ErrorCode::Internal, message)
}

/// CPU work runs as it is recorded: a batch is only where its storage goes.
impl Batches for CpuDevice {
    type Batch = Home;
    fn begin(&self, home: Home) -> Result<Home> {
        Ok(home)
    }
    async fn flush(&self, _: &mut Home) -> Result<()> {
        Ok(())
    }
    async fn finish(&self, _: Home) -> Result<()> {
        Ok(())
    }
}
