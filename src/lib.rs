//! gputable: columnar tables with lazy, fused computations on WebGPU, WebGL2 or the CPU.
//!
//! Everything here is plain Rust that runs natively under `cargo test`; only `wasm/`
//! touches JavaScript. `engine` is the one executor; `cpu`, `gpu` (WebGPU) and `gl`
//! (WebGL2) are its backends; `wgsl` generates the GPU kernels both GPU backends run and
//! `wgpu_shared` holds the rest of what those two share.

pub mod column;
pub mod cpu;
pub mod dtype;
pub mod dynamic;
pub mod engine;
pub mod error;
pub mod evaluator;
#[cfg(gl_backend)]
pub mod gl;
pub mod gpu;
pub mod heap_sort;
pub mod ipc;
pub mod ir;
pub mod memory;
pub mod plan;
pub mod sparse;
pub mod table;
pub mod value;
#[cfg(target_arch = "wasm32")]
mod wasm;
pub mod wgpu_shared;
pub mod wgsl;

pub use column::{Column, ColumnData};
pub use dtype::DType;
pub use error::{ErrorCode, GpuTableError, Result};
