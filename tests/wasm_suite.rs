//! The backend-neutral suite in a browser: the CPU, WebGPU and WebGL2 backends compiled to
//! wasm, in headless Chromium through wasm-bindgen-test (`scripts/wasm-test.sh`, part of
//! `npm test`). Natively the same suite runs in `cpu_suite.rs`, `webgpu_suite.rs` and
//! `webgl_suite.rs`. A browser without WebGPU or WebGL2 fails these tests.
#![cfg(target_arch = "wasm32")]

mod common;
mod suite;

use std::cell::RefCell;
use std::future::Future;
use std::thread::LocalKey;

use gputable::gl::GlDevice;
use gputable::gpu::GpuDevice;
use suite::Cpu;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// One device per GPU backend for the page, made by the first test (making one waits).
type Slot<D> = &'static LocalKey<RefCell<Option<D>>>;

thread_local! {
    static WEBGPU: RefCell<Option<GpuDevice>> = const { RefCell::new(None) };
    static WEBGL: RefCell<Option<GlDevice>> = const { RefCell::new(None) };
}

async fn fill<D>(slot: Slot<D>, make: impl Future<Output = D>) {
    if slot.with(|d| d.borrow().is_none()) {
        let device = make.await;
        slot.with(|d| *d.borrow_mut() = Some(device));
    }
}

fn held<D: Clone>(slot: Slot<D>) -> D {
    slot.with(|d| d.borrow().clone().expect("prepare() makes the device"))
}

struct WebGpu;

impl suite::Target for WebGpu {
    type Device = GpuDevice;
    async fn prepare() {
        fill(&WEBGPU, Self::fresh()).await;
    }
    fn device() -> GpuDevice {
        held(&WEBGPU)
    }
    async fn fresh() -> GpuDevice {
        GpuDevice::new()
            .await
            .expect("these tests need WebGPU (navigator.gpu)")
    }
    async fn capped() -> GpuDevice {
        let mut device = Self::fresh().await;
        // 1,024 values a binding: chunks of the random graphs are cut into parts.
        device.cap_binding_size(4096).unwrap();
        device
    }
    const TRANSFERS: bool = true;
    const WIDE_ROWS: bool = true;
}

struct WebGl;

impl suite::Target for WebGl {
    type Device = GlDevice;
    async fn prepare() {
        fill(&WEBGL, Self::fresh()).await;
    }
    fn device() -> GlDevice {
        held(&WEBGL)
    }
    async fn fresh() -> GlDevice {
        GlDevice::new()
            .await
            .expect("these tests need WebGL2 (OffscreenCanvas)")
    }
    async fn capped() -> GlDevice {
        let mut device = Self::fresh().await;
        // Tiles of 4,096 rows.
        device.cap_texture_side(64).unwrap();
        device
    }
    const TRANSFERS: bool = true;
    const WIDE_ROWS: bool = false;
}

mod cpu {
    use super::*;
    suite!(Cpu);
}

mod webgpu {
    use super::*;
    suite!(WebGpu);
}

mod webgl {
    use super::*;
    suite!(WebGl);
}
