//! Any bytes given to the Arrow IPC reader give a table or a typed error, never a panic.
//! Run (bounded, not in CI): `RUSTC_BOOTSTRAP=1 cargo fuzz run ipc_reader -- -max_total_time=120`
#![no_main]

use gputable::ipc::{read_ipc, Float64As, Int64As, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = read_ipc(bytes, &ReadOptions::default());
    let converting = ReadOptions {
        columns: None,
        float64: Float64As::Float32,
        int64: Int64As::Int32,
    };
    let _ = read_ipc(bytes, &converting);
});
