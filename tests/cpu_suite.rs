//! The backend-neutral suite on the CPU device: residency, memory and concurrency hold on
//! the CPU too (its values live in host memory, so nothing is uploaded or read back).

#[allow(unused_imports)]
mod common;
mod suite;
use suite::Target;

use gputable::cpu::CpuDevice;

struct Cpu;

impl Target for Cpu {
    type Device = CpuDevice;
    fn device() -> CpuDevice {
        CpuDevice::shared()
    }
    fn fresh() -> CpuDevice {
        CpuDevice::default()
    }
    const TRANSFERS: bool = false;
    const WIDE_ROWS: bool = true;
}

suite!(Cpu);
