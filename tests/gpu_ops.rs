//! The WebGPU backend against the CPU oracle, natively on the Vulkan adapter (lavapipe in
//! CI): the shared suite (`gpu_suite`) plus what is WebGPU's own (dispatch grids, bindings).
//! No adapter is a failure.

mod common;
mod gpu_suite;
use common::*;
use gpu_suite::{check, floats, Backend, Tolerance};

use gputable::column::ColumnData;
use gputable::ir::{self, BinaryOp::*, NodeRef, UnaryOp::*};
use gputable::{gpu, ErrorCode};

thread_local! {
    // Leaked: dropping a wgpu device while its thread's locals are torn down aborts in
    // debug builds (wgpu-core's lock tracing uses a thread-local of its own).
    static DEVICE: &'static gpu::GpuDevice = Box::leak(Box::new(
        pollster::block_on(gpu::GpuDevice::new()).expect("a WebGPU adapter is required for these tests (install mesa-vulkan-drivers)"),
    ));
}

fn device() -> &'static gpu::GpuDevice {
    DEVICE.with(|d| *d)
}

struct WebGpu;

impl Backend for WebGpu {
    fn evaluate(roots: &[NodeRef]) -> gputable::Result<()> {
        gpu::evaluate(device(), roots)
    }
}

gpu_suite!(WebGpu);

#[test]
fn the_device_reports_its_limits() {
    let d = device();
    assert!(d.limits.max_storage_buffer_binding_size >= 128 << 20);
    assert!(d.limits.max_compute_workgroups_per_dimension >= 65535);
    assert!(!d.adapter_name.is_empty());
}

#[test]
fn more_than_65535_workgroups_split_across_dimensions() {
    let n = 65_536 * 64 + 5;
    let x = u32s(&(0..n as u32).collect::<Vec<_>>(), 1);
    check::<WebGpu>(
        ir::binary(Multiply, &x, &konst(ColumnData::U32(vec![3]))).unwrap(),
        Tolerance::Exact,
    );
}

#[test]
fn kernels_are_cached_by_structure_not_data() {
    let d = device();
    let run = |n: usize, c: f32| {
        let r = ir::binary(Add, &f32s(&floats(n), 1), &lit(&[c])).unwrap();
        gpu::evaluate(d, std::slice::from_ref(&r)).unwrap();
    };
    run(10, 1.0);
    let before = d.cached_pipelines();
    run(5000, 2.0);
    run(77, -4.0);
    assert_eq!(
        d.cached_pipelines(),
        before,
        "new row counts and constants reuse the pipeline"
    );
}

#[test]
fn explain_lists_kernels_and_dispatches() {
    let x = f32s(&floats(5000), 1);
    let fused = ir::unary(
        Sqrt,
        &ir::binary(Add, &ir::binary(Multiply, &x, &x).unwrap(), &lit(&[1.])).unwrap(),
    )
    .unwrap();
    let text = gpu::explain(device(), &fused).unwrap();
    assert!(text.starts_with("plan on webgpu ("), "{text}");
    assert!(text.contains("fused elementwise, 3 ops"), "{text}");
    assert!(
        text.contains("1 dispatch of 79x1 workgroups of 64"),
        "{text}"
    );
    assert!(text.ends_with("1 dispatch in all\n"), "{text}");
    let reduced = gpu::explain(device(), &ir::extent(&fused).unwrap()).unwrap();
    assert!(
        reduced.contains("2 dispatches: 20 workgroups of 256"),
        "{reduced}"
    );
}

#[test]
fn columns_are_uploaded_once_and_freed_with_their_node() {
    let d = gpu::GpuDevice::new_blocking();
    let x = f32s(&floats(1000), 1);
    for c in [1.0, 2.0, 3.0] {
        let r = ir::binary(Add, &x, &lit(&[c])).unwrap();
        gpu::evaluate(&d, std::slice::from_ref(&r)).unwrap();
    }
    // x once; each loop's literal was dropped with its graph and freed by the next call.
    assert_eq!(d.resident_uploads(), 2);
    x.destroy();
    let y = f32s(&[1.], 1);
    gpu::evaluate(&d, &[ir::unary(Sqrt, &y).unwrap()]).unwrap();
    // Destroyed x and the dropped literals are gone; y is new.
    assert_eq!(d.resident_uploads(), 1);
}

#[test]
fn a_column_larger_than_one_binding_is_limit_exceeded() {
    let mut d = gpu::GpuDevice::new_blocking();
    d.cap_binding_size(1024);
    let big = ir::binary(Add, &f32s(&floats(300), 1), &lit(&[1.])).unwrap();
    let error = gpu::evaluate(&d, &[big]).unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitExceeded);
    assert!(
        error.message.contains("maxStorageBufferBindingSize"),
        "{}",
        error.message
    );
    let small = ir::binary(Add, &f32s(&floats(200), 1), &lit(&[1.])).unwrap();
    gpu::evaluate(&d, &[small]).unwrap();
}

#[test]
fn a_destroyed_device_reports_device_lost() {
    let d = gpu::GpuDevice::new_blocking();
    let r = ir::unary(Sqrt, &f32s(&[4.], 1)).unwrap();
    gpu::evaluate(&d, std::slice::from_ref(&r)).unwrap();
    d.destroy();
    let again = ir::unary(Sqrt, &f32s(&[9.], 1)).unwrap();
    assert_eq!(code(gpu::evaluate(&d, &[again])), ErrorCode::DeviceLost);
}
