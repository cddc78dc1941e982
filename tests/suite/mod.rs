//! The backend-neutral suite: every op of `api.md` against the CPU oracle, residency,
//! memory, concurrency and the regressions of past defects, instantiated by `cpu_suite.rs`,
//! `webgpu_suite.rs` (Vulkan/lavapipe) and `webgl_suite.rs` (the WebGL2 design on
//! GL/llvmpipe), and by `wasm_suite.rs` compiled to wasm in headless Chromium. Every test is
//! async so it runs in both. Every compared result is checked to live on the device under
//! test.
//! Tolerances: exact for integers and `+ - *` on float32, 1e-6 relative for `/` and `sqrt`,
//! 1e-5 relative for transcendental functions.

// Every check is async: one left un-awaited would pass without running.
#![deny(unused_must_use)]

mod budget;
mod budget_group;
mod budget_sort;
mod chunked;
mod cumulative;
mod engine;
mod filter;
mod group;
mod histogram;
mod join;
mod nulls;
mod order;
mod predicates;
mod reduce;
mod regressions;
mod scan;
mod scatter;
mod sparse;
mod sparse_ops;
mod sparse_passes;
mod table;

use super::common::*;

use gputable::column::ColumnData;
use gputable::cpu::CpuDevice;
use gputable::engine::{Backend, DeviceModel};
use gputable::evaluator::read_value_async;
use gputable::ir::{self, all_nodes, BinaryOp::*, NodeRef, UnaryOp::*};
use gputable::plan::WIDE_ROW_LANES;
use gputable::ErrorCode;

pub use budget::*;
pub use budget_group::*;
pub use budget_sort::*;
pub use chunked::*;
pub use cumulative::*;
pub use engine::*;
pub use filter::*;
pub use group::*;
pub use histogram::*;
pub use join::*;
pub use nulls::*;
pub use order::*;
pub use predicates::*;
pub use reduce::*;
pub use regressions::*;
pub use scan::*;
pub use scatter::*;
pub use sparse::*;
pub use sparse_ops::*;
pub use sparse_passes::*;
pub use table::*;

/// A device type under test. The suite's tests are async, so the same tests run natively
/// (blocking on each) and in a browser (wasm-bindgen-test, where nothing may block).
#[allow(async_fn_in_trait)]
pub trait Target {
    type Device: Backend + Clone;
    /// Makes this thread's shared device, where making one needs to wait (a browser).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    async fn prepare() {}
    /// This thread's shared device.
    fn device() -> Self::Device;
    /// A device of its own, for tests that read its counters.
    async fn fresh() -> Self::Device;
    /// A device of its own whose bindings (WebGPU) or textures (WebGL2) hold few rows, so
    /// chunks are cut into parts and tiles.
    async fn capped() -> Self::Device {
        Self::fresh().await
    }
    /// Drops this thread's shared device, if the target keeps one per test.
    fn release() {}
    /// Held for a whole native test where the target's driver must not run two at once.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    fn exclusive() -> Option<std::sync::MutexGuard<'static, ()>> {
        None
    }
    /// Whether values cross between host and device (uploads and readbacks are counted).
    const TRANSFERS: bool;
    /// Whether elementwise work on rows of any width works (a WebGL2 draw samples at most
    /// 64 lanes of a row; reductions read any width).
    const WIDE_ROWS: bool;
}

/// The CPU device, the oracle's backend: the same target natively and in a browser.
#[allow(dead_code)] // the GPU suites include the suite without running it on the CPU
pub struct Cpu;

impl Target for Cpu {
    type Device = CpuDevice;
    fn device() -> CpuDevice {
        CpuDevice::shared()
    }
    async fn fresh() -> CpuDevice {
        CpuDevice::default()
    }
    const TRANSFERS: bool = false;
    const WIDE_ROWS: bool = true;
}

/// Evaluates `roots` on the target's shared device as `evaluate(device)` does (a result
/// computed elsewhere is put there) and checks that the device computed each.
pub async fn evaluate_here<T: Target>(roots: &[NodeRef]) {
    let device = T::device();
    gputable::evaluator::evaluate_on(&device, roots)
        .await
        .unwrap();
    for root in roots {
        let home = root.home().expect("evaluated").device;
        assert_eq!(home, device.core().id, "{root:?} was computed elsewhere");
    }
}

/// Evaluates on the target's shared device.
pub async fn evaluate<T: Target>(roots: &[NodeRef]) -> gputable::Result<()> {
    gputable::engine::evaluate(&T::device(), roots).await
}

#[derive(Clone, Copy)]
pub enum Tolerance {
    Exact,
    Relative(f64),
    /// Relative to the largest magnitude in the column: for random graphs, where a GPU's
    /// fused multiply-adds and cancellation leave absolute, not relative, differences.
    Scaled(f64),
}

fn assert_close_scaled(actual: &[f32], expected: &[f32], rel: f64) {
    assert_eq!(actual.len(), expected.len());
    let scale = expected
        .iter()
        .filter(|v| v.is_finite())
        .fold(1.0f64, |m, v| m.max(v.abs() as f64));
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let ok = if e.is_nan() {
            a.is_nan()
        } else if !e.is_finite() {
            a == e
        } else {
            ((*a as f64) - (*e as f64)).abs() <= rel * scale
        };
        assert!(ok, "element {i}: device {a} vs CPU {e} (scale {scale})");
    }
}

/// The roots' outputs on a CPU device of its own (the oracle), then forgotten.
pub async fn oracle(roots: &[NodeRef]) -> gputable::Result<Vec<ColumnData>> {
    gputable::engine::evaluate(&CpuDevice::default(), roots).await?;
    let mut expected = Vec::with_capacity(roots.len());
    for root in roots {
        expected.push(read(root).await);
    }
    for node in all_nodes(roots) {
        node.release_output();
    }
    Ok(expected)
}

/// Evaluates `roots` on the CPU oracle, then on the target, checks that the target's device
/// holds each output, and compares the values.
pub async fn check_roots<T: Target>(
    roots: &[NodeRef],
    tolerance: Tolerance,
) -> gputable::Result<()> {
    let expected = oracle(roots).await?;
    compare_roots::<T>(roots, &expected, tolerance).await
}

/// Evaluates `roots` on the target, checks that its device holds each output, and compares
/// the values with `expected`.
pub async fn compare_roots<T: Target>(
    roots: &[NodeRef],
    expected: &[ColumnData],
    tolerance: Tolerance,
) -> gputable::Result<()> {
    let device = T::device();
    gputable::engine::evaluate(&device, roots).await?;
    for root in roots {
        let home = root
            .home()
            .expect("the backend leaves the output on the node");
        assert_eq!(
            home.device,
            device.core().id,
            "{root:?} was computed elsewhere"
        );
    }
    assert_values(roots, expected, tolerance).await;
    Ok(())
}

/// Compares the evaluated `roots`' values with `expected`.
pub async fn assert_values(roots: &[NodeRef], expected: &[ColumnData], tolerance: Tolerance) {
    for (root, expected) in roots.iter().zip(expected) {
        let actual = &read(root).await;
        assert_eq!(actual.dtype(), expected.dtype());
        match (actual, expected, tolerance) {
            (ColumnData::F32(a), ColumnData::F32(e), Tolerance::Relative(rel)) => {
                let e64: Vec<f64> = e.iter().map(|v| *v as f64).collect();
                assert_close(a, &e64, rel)
            }
            (ColumnData::F32(a), ColumnData::F32(e), Tolerance::Scaled(rel)) => {
                assert_close_scaled(a, e, rel)
            }
            // GPUs do not keep the sign of zero, and may flush a subnormal result to zero
            // (WGSL allows it; llvmpipe's GL does on some hosts): exact means equal values
            // (NaN equal to NaN).
            (ColumnData::F32(a), ColumnData::F32(e), Tolerance::Exact) => {
                assert_eq!(a.len(), e.len(), "{root:?}");
                let differs = a.iter().zip(e).position(|(x, y)| {
                    !(x == y || (x.is_nan() && y.is_nan()) || (*x == 0.0 && y.is_subnormal()))
                });
                if let Some(i) = differs {
                    panic!("{root:?}: element {i}: device {:e} vs CPU {:e}", a[i], e[i]);
                }
            }
            _ => assert!(
                same(actual, expected),
                "{root:?}: device {actual:?}\nCPU {expected:?}"
            ),
        }
    }
}

/// The CPU oracle's float32 output of `root`.
pub async fn oracle_f32(root: &NodeRef) -> Vec<f32> {
    match oracle(std::slice::from_ref(root)).await.unwrap().remove(0) {
        ColumnData::F32(values) => values,
        other => panic!("expected float32, got {:?}", other.dtype()),
    }
}

/// A node's whole output (common's `read`, without blocking).
pub async fn read(node: &NodeRef) -> ColumnData {
    read_value_async(node, None, None).await.unwrap()
}
pub async fn read_f32(node: &NodeRef) -> Vec<f32> {
    match read(node).await {
        ColumnData::F32(v) => v,
        other => panic!("expected float32, got {:?}", other.dtype()),
    }
}
/// The device holding `node`'s rows: its own output, or for a view of a counted result's
/// rows (a slice, rechunked) the result's.
pub fn stored_on(node: &NodeRef) -> Option<gputable::value::DeviceId> {
    match (node.home(), &node.op) {
        (Some(output), _) => Some(output.device),
        (None, ir::Op::Slice { .. } | ir::Op::Rechunk) => stored_on(&node.inputs[0]),
        (None, _) => None,
    }
}

pub async fn read_u32(node: &NodeRef) -> Vec<u32> {
    match read(node).await {
        ColumnData::U32(v) => v,
        other => panic!("expected uint32, got {:?}", other.dtype()),
    }
}
pub async fn read_i32(node: &NodeRef) -> Vec<i32> {
    match read(node).await {
        ColumnData::I32(v) => v,
        other => panic!("expected sint32, got {:?}", other.dtype()),
    }
}

pub async fn check<T: Target>(root: NodeRef, tolerance: Tolerance) {
    check_roots::<T>(&[root], tolerance).await.unwrap();
}

pub fn floats(n: usize) -> Vec<f32> {
    let mut rng = Rng(7);
    (0..n).map(|_| rng.f32()).collect()
}

pub async fn arithmetic_with_literals_and_lane_broadcasting<T: Target>() {
    let xyz = f32s(&floats(3000), 3);
    check::<T>(
        ir::fold_binary(Add, &[xyz.clone(), lit(&[10., 20., 30.]), lit(&[1.])]).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::fold_binary(Subtract, &[xyz.clone(), f32s(&floats(1000), 1)]).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::fold_binary(Multiply, &[xyz.clone(), f32s(&floats(2000), 2)]).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::binary(Divide, &xyz, &lit(&[3., 0., -7.])).unwrap(),
        Tolerance::Relative(1e-6),
    )
    .await;
    // Lane 2 adds 0, not cos(0).
    check::<T>(
        ir::binary(Add, &xyz, &ir::unary(Cos, &f32s(&floats(2000), 2)).unwrap()).unwrap(),
        Tolerance::Relative(1e-5),
    )
    .await;
}

pub async fn integer_wrap_division_and_narrowing_match_exactly<T: Target>() {
    let i = i32s(&[i32::MAX, -7, 7, i32::MIN, 0, 100], 1);
    let j = i32s(&[1, 2, 0, -1, 0, -3], 1);
    for op in [Add, Subtract, Multiply, Divide] {
        check::<T>(ir::binary(op, &i, &j).unwrap(), Tolerance::Exact).await;
    }
    let u = u32s(&[0, 5, u32::MAX, 9], 1);
    let v = u32s(&[1, 0, 2, 3], 1);
    for op in [Add, Subtract, Multiply, Divide] {
        check::<T>(ir::binary(op, &u, &v).unwrap(), Tolerance::Exact).await;
    }
    check::<T>(
        ir::binary(Add, &u8s(&[200, 255, 3], 1), &u8s(&[100, 1, 4], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::binary(Multiply, &i8s(&[-128, 100, 3], 1), &u8s(&[255, 100, 4], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::unary(Abs, &i8s(&[-128, -5, 7], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::unary(Abs, &i32s(&[i32::MIN, -3], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
}

pub async fn math_functions_within_tolerance<T: Target>() {
    let xs: Vec<f32> = (0..2000).map(|i| (i as f32 - 1000.0) * 0.0137).collect();
    let x = f32s(&xs, 1);
    check::<T>(ir::unary(Sqrt, &x).unwrap(), Tolerance::Relative(1e-6)).await;
    for op in [Sin, Cos, Exp] {
        check::<T>(ir::unary(op, &x).unwrap(), Tolerance::Relative(1e-5)).await;
    }
    let positive = f32s(&xs.iter().map(|v| v.abs() + 0.01).collect::<Vec<_>>(), 1);
    check::<T>(
        ir::unary(Log, &positive).unwrap(),
        Tolerance::Relative(1e-5),
    )
    .await;
    let small = f32s(
        &(0..500)
            .map(|i| (i as f32 - 250.0) * 0.005)
            .collect::<Vec<_>>(),
        1,
    );
    check::<T>(ir::unary(Tan, &small).unwrap(), Tolerance::Relative(1e-5)).await;
    let bases = f32s(&[2., 9., -8., 0., -0., 0., -2., 1.5], 1);
    let exps = f32s(&[10., 0.5, 1. / 3., 0., 3., -1., 3., 2.], 1);
    check::<T>(
        ir::binary(Pow, &bases, &exps).unwrap(),
        Tolerance::Relative(1e-5),
    )
    .await;
}

pub async fn nan_and_infinity_behave_the_same<T: Target>() {
    let special = f32s(
        &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0., -0., 1.],
        1,
    );
    check::<T>(
        ir::binary(Divide, &lit(&[1.]), &special).unwrap(),
        Tolerance::Relative(1e-6),
    )
    .await;
    check::<T>(
        ir::binary(Add, &special, &special).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::unary(Sqrt, &special).unwrap(),
        Tolerance::Relative(1e-6),
    )
    .await;
}

pub async fn row_ops_interleave_swizzle_select_dot_length_equal_all<T: Target>() {
    let xyz = f32s(&floats(300), 3);
    let id = u8s(&(0..100).map(|i| i as u8).collect::<Vec<_>>(), 1);
    check::<T>(
        ir::interleave(&[xyz.clone(), id.clone(), lit(&[7.])]).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::interleave(&[u8s(&[1, 2], 1), i8s(&[-1, -2], 1)]).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::swizzle(&xyz, &[2., 0., 0., 1.]).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::select(&id, &xyz, &lit(&[-1.])).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::select(
            &f32s(&[1., 0., f32::NAN, 0.], 1),
            &i8s(&[1, 2, 3, 4], 1),
            &u8s(&[9, 9, 9, 9], 1),
        )
        .unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::dot(&xyz, &f32s(&floats(300), 3)).unwrap(),
        Tolerance::Relative(1e-5),
    )
    .await;
    check::<T>(ir::length(&xyz).unwrap(), Tolerance::Relative(1e-6)).await;
    check::<T>(ir::equal_all(&xyz, &xyz).unwrap(), Tolerance::Exact).await;
    check::<T>(
        ir::equal_all(&u32s(&[16777217, 5, 3], 1), &i32s(&[16777216, 5, -3], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::equal_all(
            &f32s(&[5., 0.5, -1., f32::NAN], 1),
            &i32s(&[5, 0, -1, 0], 1),
        )
        .unwrap(),
        Tolerance::Exact,
    )
    .await;
}

pub async fn gather_sequence_and_segmented_map<T: Target>() {
    let values = f32s(&floats(200), 2);
    check::<T>(
        ir::gather(&i32s(&[99, 0, -1, 100, 5, i32::MIN], 1), &values).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::gather(&f32s(&[1.5, 2., f32::NAN, 3.], 1), &values).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::gather(&u32s(&[1, 0], 1), &u8s(&[7, 8, 9, 10], 2)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::gather(&konst(ColumnData::U32(vec![3])), &values).unwrap(),
        Tolerance::Exact,
    )
    .await;
    let doubled = ir::binary(Multiply, &values, &lit(&[2.])).unwrap();
    check::<T>(
        ir::gather(&u32s(&[2, 2, 7], 1), &doubled).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(ir::sequence(1000., 7., -3.).unwrap(), Tolerance::Exact).await;
    check::<T>(
        ir::sequence(3., i32::MAX as f64, 1.).unwrap(),
        Tolerance::Exact,
    )
    .await;
    let starts = generated_segments(&mut Rng(42));
    let count = starts.last().unwrap() + 17;
    check::<T>(
        ir::segmented_map(&u32s(&starts, 1), count as f64).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::segmented_map(&i32s(&[0, 0, 2, 2], 1), 2.).unwrap(),
        Tolerance::Exact,
    )
    .await;
    // Every number of segments to 9 (each halving pattern of the search), some empty.
    for segments in 1..=9u32 {
        let starts: Vec<u32> = (0..segments).map(|s| s / 2 * 3).collect();
        let rows = starts[starts.len() - 1] + 2;
        check::<T>(
            ir::segmented_map(&u32s(&starts, 1), rows as f64).unwrap(),
            Tolerance::Exact,
        )
        .await;
    }
    let computed = ir::binary(
        Subtract,
        &u32s(&[1, 2], 1),
        &konst(ColumnData::U32(vec![0])),
    )
    .unwrap();
    let bad = ir::segmented_map(&computed, 4.).unwrap();
    assert_eq!(
        code(evaluate::<T>(&[bad]).await),
        ErrorCode::InvalidArgument
    );
}

pub async fn lengths_constants_and_empty_inputs<T: Target>() {
    let long = f32s(&[1., 2., 3., 4.], 1);
    check::<T>(
        ir::binary(Add, &long, &ir::unary(Cos, &f32s(&[10., 20.], 1)).unwrap()).unwrap(),
        Tolerance::Relative(1e-5),
    )
    .await;
    check::<T>(
        ir::binary(Add, &lit(&[1., 2.]), &lit(&[3.])).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::binary(Add, &f32s(&[], 3), &lit(&[1.])).unwrap(),
        Tolerance::Exact,
    )
    .await;
}

/// Random graphs whose sources and `rechunk`s are split into chunks, against the same graph
/// in one chunk on the CPU (chunking never changes a value).
pub async fn random_graphs_match_the_cpu<T: Target>() {
    let mut rng = Rng(0x5eed_1234_abcd);
    let (mut checked, mut refused, mut wide, mut chunked, mut nullable) = (0, 0, 0, 0, 0);
    let mut counted = 0;
    for graph in 0..200 {
        // WGSL bounds sin/cos error only inside [-pi, pi], and the random sources reach
        // 2^31: transcendental functions are compared in `math_functions_within_tolerance`.
        // Null flags computed are roots too: the same on every backend (a source's, which
        // the one-chunk graph may read as it is stored, are not computed).
        let roots = ir::with_null_flags(&random_graph_chunked(&mut rng.clone(), false, true));
        let whole = ir::with_null_flags(&random_graph_chunked(&mut rng, false, false));
        let (roots, whole): (Vec<NodeRef>, Vec<NodeRef>) = (roots.into_iter().zip(whole))
            .filter(|(r, w)| !r.is_source() && !w.is_source())
            .unzip();
        if roots.is_empty() {
            continue;
        }
        nullable += usize::from(roots.iter().any(|r| r.validity().is_some()));
        counted += usize::from(all_nodes(&roots).iter().any(|n| n.counted().is_some()));
        chunked += usize::from(all_nodes(&roots).iter().any(|n| n.chunks.len() > 1));

        // Shown only if this graph fails.
        for root in &roots {
            eprintln!(
                "graph {graph}: {}",
                gputable::evaluator::explain(root).unwrap_or_default()
            );
        }
        match oracle(&whole).await {
            // A graph the contract refuses (an extent of no rows): every backend refuses it
            // with the same code.
            Err(expected) => {
                assert_eq!(
                    expected.code,
                    ErrorCode::EmptyInput,
                    "graph {graph}: {expected}"
                );
                let error = evaluate::<T>(&roots)
                    .await
                    .expect_err("the device refuses it too");
                assert_eq!(error.code, expected.code, "graph {graph}: {error}");
                refused += 1;
            }
            Ok(expected) => {
                compare_roots::<T>(&roots, &expected, Tolerance::Scaled(1e-4))
                    .await
                    .unwrap_or_else(|e| panic!("graph {graph}: {e}"));
                checked += 1;
                let lanes = all_nodes(&roots).iter().map(|n| n.meta.size).max();
                wide += usize::from(lanes > Some(WIDE_ROW_LANES));
            }
        }
    }
    assert!(checked > 100, "only {checked} graphs ran on the device");
    assert!(
        wide >= 5,
        "only {wide} graphs had rows computed lane by lane"
    );
    assert!(refused > 0, "no refused graph was compared");
    assert!(chunked >= 50, "only {chunked} graphs had chunks");
    assert!(nullable >= 30, "only {nullable} graphs had null rows");
    assert!(
        counted >= 20,
        "only {counted} graphs had rows counted on the device"
    );
}

pub async fn division_by_a_zero_lane_is_infinite_as_on_the_cpu<T: Target>() {
    // The zero of the lane rule must not be a constant the compiler can fold.
    let x = i8s(&[4, -9, 16, 25], 2);
    check::<T>(
        ir::binary(
            Divide,
            &lit(&[6., 68., -14., 100.]),
            &ir::unary(Sqrt, &x).unwrap(),
        )
        .unwrap(),
        Tolerance::Relative(1e-6),
    )
    .await;
    check::<T>(
        ir::unary(
            Log,
            &ir::binary(Multiply, &f32s(&[1., 2.], 1), &f32s(&[0., 3.], 2)).unwrap(),
        )
        .unwrap(),
        Tolerance::Relative(1e-5),
    )
    .await;
}

pub async fn extent_reduces_with_a_fused_prologue<T: Target>() {
    let points = f32s(&[4., 9., -1., 8., 7., 3., 2., 12.], 2);
    check::<T>(ir::extent(&points).unwrap(), Tolerance::Exact).await;
    let with_nan = f32s(&[f32::NAN, 1., 5., f32::NAN, -2., f32::NAN], 2);
    check::<T>(ir::extent(&with_nan).unwrap(), Tolerance::Exact).await;
    check::<T>(
        ir::extent(&f32s(&[f32::NAN, f32::NAN], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::extent(&f32s(&[f32::INFINITY, f32::NEG_INFINITY, 3.], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::extent(&i8s(&[-5, 7, 100, -128], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::extent(&u32s(&[u32::MAX, 3, 0], 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(ir::extent(&lit(&[3., 4.])).unwrap(), Tolerance::Exact).await;
    // More rows than 256 workgroups of 256 cover in one sweep, and a fused prologue.
    let n: usize = 256 * 256 * 3 + 17;
    let xs: Vec<f32> = (0..n * 3)
        .map(|i| ((i as u64 * 7919) % 100_003) as f32 - 50_000.0)
        .collect();
    let x = f32s(&xs, 3);
    check::<T>(
        ir::extent(&ir::binary(Multiply, &x, &lit(&[2., -1., 0.5])).unwrap()).unwrap(),
        Tolerance::Exact,
    )
    .await;
    let empty = ir::extent(&f32s(&[], 2)).unwrap();
    assert_eq!(code(evaluate::<T>(&[empty]).await), ErrorCode::EmptyInput);
}

pub async fn fround_rounds_like_the_cpu_without_f64<T: Target>() {
    let pi = std::f64::consts::PI;
    let mut values = vec![
        pi,
        -pi,
        0.0,
        -0.0,
        16777217.0,
        16777215.0,
        16777219.0,
        -16777219.0,
        9007199254740991.0,
        3.5e38,
        -3.5e38,
        f32::MAX as f64,
        3.4028235677973366e38,
        1e-40,
        -1e-40,
        1.5e-45,
        7e-46,
        5e-324,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0 + f64::EPSILON,
        0.1,
        1e10 + 0.5,
        123456789.123,
        1.17549435e-38,
    ];
    let mut rng = Rng(99);
    for _ in 0..2000 {
        // Random bit patterns across the float32 range and beyond.
        let exponent = 1023 - 150 + rng.below(300);
        let bits = (rng.next() & 0x800F_FFFF_FFFF_FFFF) | (exponent << 52);
        values.push(f64::from_bits(bits));
    }
    check::<T>(
        ir::fround(&f64_words(&values, 1)).unwrap(),
        Tolerance::Exact,
    )
    .await;
    check::<T>(
        ir::fround(&f64_words(&[1.5, 2.25, 1e10 + 0.5, -3.0], 2)).unwrap(),
        Tolerance::Exact,
    )
    .await;
}

pub async fn transcendental_special_values_match_the_cpu<T: Target>() {
    let special = f32s(
        &[
            0.,
            -0.,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-30,
            -1e-30,
            88.7,
            89.,
            -104.,
            -87.,
            1.,
            -1.,
        ],
        1,
    );
    for op in [Sin, Cos, Tan, Exp, Log] {
        check::<T>(ir::unary(op, &special).unwrap(), Tolerance::Relative(1e-5)).await;
    }
    // Arguments far from the origin (the reduction is exact enough up to 8192).
    let far: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 16.37).collect();
    check::<T>(
        ir::unary(Sin, &f32s(&far, 1)).unwrap(),
        Tolerance::Relative(1e-4),
    )
    .await;
    check::<T>(
        ir::unary(Cos, &f32s(&far, 1)).unwrap(),
        Tolerance::Relative(1e-4),
    )
    .await;
}

/// Names every test of the suite for the `$target` of the including file.
#[macro_export]
macro_rules! suite {
    ($target:ty; $($name:ident),* $(,)?) => {
        /// The suite's tests this file runs (`every_suite_test_is_registered` holds them
        /// against the suite's sources).
        #[allow(dead_code)]
        const REGISTERED_TESTS: &[&str] = &[$(stringify!($name)),*];
        $(
            #[cfg(not(target_arch = "wasm32"))]
            #[test]
            fn $name() {
                let _exclusive = <$target as suite::Target>::exclusive();
                pollster::block_on(suite::$name::<$target>());
                <$target as suite::Target>::release();
            }
            #[cfg(target_arch = "wasm32")]
            #[wasm_bindgen_test::wasm_bindgen_test]
            async fn $name() {
                <$target as suite::Target>::prepare().await;
                suite::$name::<$target>().await;
                <$target as suite::Target>::release();
            }
        )*
    };
    ($target:ty) => {
        suite!($target;
            arithmetic_with_literals_and_lane_broadcasting,
            integer_wrap_division_and_narrowing_match_exactly,
            math_functions_within_tolerance,
            nan_and_infinity_behave_the_same,
            row_ops_interleave_swizzle_select_dot_length_equal_all,
            gather_sequence_and_segmented_map,
            lengths_constants_and_empty_inputs,
            random_graphs_match_the_cpu,
            division_by_a_zero_lane_is_infinite_as_on_the_cpu,
            extent_reduces_with_a_fused_prologue,
            fround_rounds_like_the_cpu_without_f64,
            transcendental_special_values_match_the_cpu,
            // predicates.rs: comparisons, logic, minimum/maximum, mod, rounding
            comparisons_are_exact_for_every_pair_of_types,
            comparisons_with_constants_of_other_types_are_exact,
            where_reductions_and_count_keep_only_masked_rows,
            nulls_follow_elementwise_ops_and_reductions_skip_them,
            null_masks_and_fill_null,
            reductions_of_nulls_alone_are_empty_input,
            select_is_null_where_its_condition_or_the_branch_taken_is,
            views_and_gathers_move_nulls_with_their_rows,
            reversed_folds_of_a_filter_start_at_its_last_kept_row,
            cumulative_ops_match_a_running_fold,
            cumulative_ops_over_a_million_rows,
            a_cumulative_op_larger_than_the_budget_scans_in_parts,
            argsort_orders_every_type_stably_with_nan_and_nulls,
            argsort_by_several_keys_and_top_k,
            top_k_of_many_rows_keeps_ties_in_row_order,
            top_k_keeps_every_tied_row_of_each_run,
            argsort_of_a_million_float_keys,
            a_sort_by_a_32_bit_key_then_another_counts_its_buckets_in_64_bits,
            logic_and_float_tests_follow_truth_and_nan,
            minimum_maximum_mod_follow_their_rules_for_every_type,
            float_mod_is_exact_for_large_quotients,
            rounding_and_sign_keep_integers_and_halve_to_even,
            predicates_fuse_broadcast_and_clamp,
            search_sorted_compares_exactly_with_nan_last,
            // filter.rs: results whose length depends on the data
            columns_filtered_by_one_mask_share_its_compaction,
            filter_keeps_the_rows_and_chunks_of_every_type,
            filter_keeps_none_all_one_per_chunk_and_constant_masks,
            ops_over_a_filter_read_only_the_roots_counts,
            filtered_and_full_columns_and_empty_results,
            an_evaluated_filter_meets_columns_of_its_kept_rows,
            an_unevaluated_filter_meets_columns_of_its_kept_rows,
            value_counts_count_each_distinct_value,
            a_filter_of_row_numbers_leaves_the_shared_compaction_alone,
            unique_orders_distinct_values_of_every_type,
            a_counted_result_keeps_its_draw_arguments_on_the_device,
            // group.rs: grouping
            group_by_matches_a_reference_for_every_type,
            group_by_of_small_keys_counts_and_sums_without_a_sort,
            small_key_integer_sums_wrap_on_every_device,
            float_sums_per_small_key_round_the_exact_sums_once,
            group_by_counted_empty_and_wide_inputs,
            group_by_refuses_bad_arguments,
            // histogram.rs: histograms
            histogram_counts_every_type_against_a_reference,
            histogram_over_the_extent_of_large_integers_is_exact,
            histogram_over_a_float_extent_counts_values_on_its_edges,
            histogram_over_an_infinite_extent_is_refused,
            device_edges_out_of_order_are_refused,
            histogram_of_device_edges_counted_and_empty_inputs,
            histogram_refuses_bad_arguments,
            bin_passes_compute_their_ids_where_the_device_adds_them,
            histogram_bins_are_blended_point_draws_on_webgl2,
            // join.rs: lookups and joins
            lookup_finds_the_lowest_equal_row_for_every_pair_of_types,
            lookup_of_counted_empty_and_large_inputs,
            lookup_keeps_the_lowest_of_many_equal_rows,
            lookup_of_keys_larger_than_the_budget,
            join_pairs_equal_keys_of_every_pair_of_types,
            join_of_all_none_counted_empty_and_too_many_pairs,
            // engine.rs: residency, memory, concurrency
            results_stay_on_the_device_until_read,
            pipelines_are_cached_by_structure_not_data,
            an_evaluated_output_feeds_the_next_graph_in_place,
            inputs_from_another_device_are_copied_once,
            live_bytes_return_after_ten_thousand_cycles,
            the_pool_is_bounded_and_trim_frees_it,
            a_cache_serves_a_loop_without_new_allocations,
            overlapping_evaluations_wait_their_turn,
            destroying_an_input_or_the_device_during_an_evaluation,
            // regressions.rs: past defects
            literals_take_no_bindings,
            long_chains_are_split_into_bounded_kernels,
            pow_special_values_match_the_cpu,
            sin_cos_tan_of_large_arguments_match_the_cpu,
            extent_of_wide_rows,
            wide_rows_compute_lane_by_lane,
            a_destroyed_input_is_destroyed_not_internal,
            square_roots_of_negative_numbers_are_nan,
            square_roots_are_correctly_rounded,
            a_pooled_array_forgets_its_row_size,
            verbs_take_a_constant_as_one_row_or_repeated,
            search_sorted_into_a_counted_column_with_nulls,
            select_dot_and_equal_all_follow_the_lane_rule,
            // chunked.rs: chunked columns
            elementwise_ops_read_across_chunk_boundaries,
            chunk_tasks_share_one_fused_kernel,
            extent_over_chunks_follows_its_rules,
            views_share_whole_chunks_and_copy_parts,
            gather_reads_chunked_ids_and_sources,
            gathers_whose_last_ids_repeat_give_that_row_again,
            chunked_sources_validate_their_chunks,
            cast_converts_by_the_rules,
            packing_batches_joins_them_on_the_device,
            // scan.rs: the exclusive scan
            exclusive_scans_match_a_plain_reference,
            exclusive_scans_of_chunked_and_fused_columns,
            search_sorted_finds_left_and_right_sides,
            kept_rows_read_back_only_the_count,
            kept_rows_count_the_kept_rows_before_any_row,
            stable_sort_permutations_match_a_reference,
            a_sort_is_one_pass_native_or_composed,
            a_sort_by_several_keys_orders_by_each_in_turn,
            a_sorts_keys_gathered_through_it_are_written_by_its_pass,
            row_numbers_gathered_are_the_ids,
            primitives_at_scale_match_the_cpu,
            segment_sums_add_each_range,
            long_segments_are_summed_in_blocks_in_one_order,
            // scatter.rs: scatter, and the radix sort built on it
            scatter_writes_each_row_where_it_says,
            scatter_of_a_million_rows_matches_a_reference,
            row_numbers_are_scattered_without_a_column_of_them,
            radix_sorts_use_every_bit_of_the_keys,
            // sparse.rs: sparse matrices
            coo_with_duplicates_becomes_canonical_csr,
            to_csr_sorts_the_entries_once,
            to_csr_is_one_evaluation_counted_on_the_device,
            row_pointers_count_the_kept_entries_before_each_row,
            canonical_matrices_are_not_sorted_again,
            filters_and_products_sort_their_entries_once,
            spmv_and_spmm_match_the_dense_product,
            sparse_constructors_validate_their_components,
            random_coo_to_csr_and_spmv_match_the_reference,
            to_dense_sums_duplicates_in_every_format,
            dense_nonzeros_triangles_and_droptol,
            norms_symmetry_and_entries,
            measures_of_twenty_thousand_entries_match_the_cpu,
            // sparse_ops.rs: sparse arithmetic, sums, kron, a million entries
            sparse_arithmetic_keeps_or_merges_structure,
            sparse_sums_and_extremes_count_implicit_zeros,
            kron_places_every_pair_of_entries,
            a_million_random_entries_convert_and_multiply,
            products_are_computed_where_the_row_sums_read_them,
            a_long_row_is_summed_where_read_a_piece_at_a_time,
            measures_see_the_least_integer_and_nan,
            droptol_compares_the_sums_of_duplicates,
            integer_droptol_compares_exactly,
            // table.rs: the table model
            tables_own_align_validity_and_pack_on_the_device,
            verbs_resolve_to_a_table_of_batches_on_the_device,
            all_valid_flags_are_made_on_the_device,
            table_misuse_is_a_typed_error,
            appendable_vectors_grow_and_reset,
            // reduce.rs: reductions over chunks
            every_reduction_of_every_type_matches_the_reference,
            reductions_keep_their_rules_at_the_edges,
            reductions_skip_null_slots,
            long_float_sums_stay_accurate,
            wide_rows_reduce_per_lane_over_chunks,
            explain_shows_the_tree_of_combine_rounds,
            // budget.rs: allowedMem
            a_memory_budget_refuses_or_streams,
            row_local_work_is_cut_into_row_ranges_that_fit,
            the_executor_runs_the_schedule_it_lists,
            a_reduction_of_a_pass_cut_to_fit_counts_the_copy_joining_it,
            a_reduction_streams_a_column_larger_than_the_budget,
            every_masked_reduction_streams_under_the_budget,
            a_slice_of_row_local_work_computes_only_its_rows,
            the_projection_counts_a_pass_s_earlier_chunks,
            a_sort_of_host_keys_stays_within_the_budget,
            a_sort_larger_than_the_budget_runs_and_merges,
            a_group_by_larger_than_the_budget_groups_in_parts,
            a_small_key_with_nulls_groups_in_parts,
            many_groups_are_made_a_key_range_at_a_time,
            a_filter_larger_than_the_budget_filters_in_parts,
            a_range_in_parts_reads_its_columns_back_together,
            a_table_column_with_made_null_flags_filters_in_parts,
            an_auto_histogram_streams_under_the_budget,
            a_sort_too_large_for_runs_of_one_row_is_refused,
            a_sort_past_one_binding_runs_in_runs_of_native_sorts,
            a_conversion_fits_a_budget_near_its_peak,
            roots_held_together_past_the_budget_are_read_back,
            a_pass_copying_host_rows_after_a_sort_frees_its_arrays_first,
            a_permutation_nobody_reads_is_freed_after_its_pass,
            a_reduction_s_partial_states_count_until_they_are_freed,
            joining_wide_parts_ends,
        );
    };
}
