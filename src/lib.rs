//! gputable: columnar tables with lazy, fused computations on WebGPU, WebGL2 or the CPU.
//!
//! Everything here is plain Rust that runs natively under `cargo test`; only `wasm.rs`
//! touches JavaScript.

pub mod column;
pub mod cpu;
pub mod dtype;
pub mod error;
pub mod evaluator;
pub mod gl;
pub mod gpu;
pub mod ipc;
pub mod ir;
pub mod plan;
#[cfg(target_arch = "wasm32")]
mod wasm;

pub use column::{Column, ColumnData};
pub use dtype::DType;
pub use error::{ErrorCode, GpuTableError, Result};
