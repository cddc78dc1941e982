//! The WebGL2 backend against the CPU oracle, natively on wgpu's GL backend (EGL on
//! llvmpipe in CI; `.cargo/config.toml` sets the Mesa override float render targets need):
//! the shared suite (`gpu_suite`) plus what is WebGL2's own (tiles, draws, texture limits).
//! No adapter is a failure.

mod common;
mod gpu_suite;
use common::*;
use gpu_suite::{check, check_roots, floats, Backend, Tolerance};

use gputable::column::ColumnData;
use gputable::ir::{self, BinaryOp::*, NodeRef, UnaryOp::*};
use gputable::{gl, ErrorCode};

fn new_device() -> gl::GlDevice {
    gl::GlDevice::new_blocking().expect(
        "a GL adapter with float render targets is required for these tests \
         (apt: libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri)",
    )
}

thread_local! {
    // Leaked, as in gpu_ops.rs: wgpu devices must not drop during thread teardown.
    static DEVICE: &'static gl::GlDevice = Box::leak(Box::new(new_device()));
    // Textures of 64x64 texels: tiles of 4096 rows, so small columns span several tiles.
    static SMALL_TILES: &'static gl::GlDevice = Box::leak(Box::new({
        let mut d = new_device();
        d.cap_texture_side(64);
        d
    }));
}

fn device() -> &'static gl::GlDevice {
    DEVICE.with(|d| *d)
}

struct WebGl;

impl Backend for WebGl {
    fn evaluate(roots: &[NodeRef]) -> gputable::Result<()> {
        gl::evaluate(device(), roots)
    }
}

gpu_suite!(WebGl);

/// The suite's device with 64-texel textures: every column of more than 4096 rows is tiled.
struct WebGlTiled;

impl Backend for WebGlTiled {
    fn evaluate(roots: &[NodeRef]) -> gputable::Result<()> {
        SMALL_TILES.with(|d| gl::evaluate(d, roots))
    }
}

#[test]
fn the_device_reports_its_limits_and_uses_the_fragment_path() {
    let d = device();
    assert!(d.limits.max_texture_dimension_2d >= 2048);
    assert!(d.limits.max_color_attachments >= 4);
    assert!(d.limits.max_sampled_textures_per_shader_stage >= 16);
    assert!(d.layout.width() >= 2048);
    // Native GL has compute shaders; the WebGL2 device must not use them.
    let text = gl::explain(d, &ir::unary(Sqrt, &f32s(&[1.], 1)).unwrap()).unwrap();
    assert!(text.contains("1 draw(s)"), "{text}");
}

#[test]
fn columns_larger_than_one_texture_are_tiled() {
    let n = 3 * 4096 + 77;
    let xyz = f32s(&floats(3 * n), 3);
    let ids = u32s(
        &(0..n as u32)
            .map(|i| (i * 7919) % (n as u32 + 9))
            .collect::<Vec<_>>(),
        1,
    );
    let scaled = ir::binary(Multiply, &xyz, &lit(&[2., -1., 0.5])).unwrap();
    check::<WebGlTiled>(
        ir::binary(Add, &scaled, &f32s(&floats(n / 2), 1)).unwrap(),
        Tolerance::Exact,
    );
    // Gather reads across every tile of its source; extent folds every tile.
    check::<WebGlTiled>(ir::gather(&ids, &scaled).unwrap(), Tolerance::Exact);
    check::<WebGlTiled>(ir::extent(&scaled).unwrap(), Tolerance::Exact);
    check::<WebGlTiled>(ir::sequence(n as f64, -5., 3.).unwrap(), Tolerance::Exact);
    let starts: Vec<u32> = (0..6000).map(|i| i * 3).collect();
    check::<WebGlTiled>(
        ir::segmented_map(&u32s(&starts, 1), 18_010.).unwrap(),
        Tolerance::Exact,
    );
    let mut rng = Rng(77);
    let big: Vec<i32> = (0..20_000).map(|_| rng.next() as i32).collect();
    check::<WebGlTiled>(
        ir::binary(Divide, &i32s(&big, 2), &lit(&[7.])).unwrap(),
        Tolerance::Relative(1e-6),
    );
}

#[test]
fn wide_rows_use_several_render_targets_and_planes() {
    let a = f32s(&floats(7 * 500), 7);
    let b = i32s(&(0..6 * 500).map(|i| i - 1500).collect::<Vec<_>>(), 6);
    let wide = ir::interleave(&[a.clone(), b.clone(), a.clone()]).unwrap();
    check::<WebGl>(wide.clone(), Tolerance::Exact);
    check::<WebGl>(
        ir::swizzle(&wide, &[19., 0., 8., 13., 2.]).unwrap(),
        Tolerance::Exact,
    );
    check::<WebGl>(ir::extent(&wide).unwrap(), Tolerance::Exact);
    check::<WebGl>(ir::dot(&wide, &wide).unwrap(), Tolerance::Relative(1e-5));
}

#[test]
fn kernels_are_cached_by_structure_not_data() {
    let d = device();
    let run = |n: usize, c: f32| {
        let r = ir::binary(Add, &f32s(&floats(n), 1), &lit(&[c])).unwrap();
        gl::evaluate(d, std::slice::from_ref(&r)).unwrap();
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
fn explain_lists_passes_and_draws() {
    let x = f32s(&floats(5000), 1);
    let fused = ir::unary(
        Sqrt,
        &ir::binary(Add, &ir::binary(Multiply, &x, &x).unwrap(), &lit(&[1.])).unwrap(),
    )
    .unwrap();
    let d = device();
    let text = gl::explain(d, &fused).unwrap();
    assert!(text.starts_with("plan on webgl ("), "{text}");
    assert!(text.contains("fused elementwise, 3 ops"), "{text}");
    assert!(text.ends_with("1 draw in all\n"), "{text}");
    let reduced = gl::explain(d, &ir::extent(&fused).unwrap()).unwrap();
    assert!(
        reduced.contains("3 draws: per 4 lanes, 1 draw(s) folding 256 rows"),
        "{reduced}"
    );
}

#[test]
fn textures_are_uploaded_once_and_freed_with_their_node() {
    let d = new_device();
    let x = f32s(&floats(999), 3);
    for c in [1.0, 2.0, 3.0] {
        let r = ir::binary(Add, &x, &lit(&[c])).unwrap();
        gl::evaluate(&d, std::slice::from_ref(&r)).unwrap();
    }
    assert_eq!(d.resident_uploads(), 2);
    x.destroy();
    let y = f32s(&[1.], 1);
    let root = ir::unary(Sqrt, &y).unwrap();
    gl::evaluate(&d, std::slice::from_ref(&root)).unwrap();
    assert_eq!(d.resident_uploads(), 1);
    // Only y's texture is left: outputs and intermediates were freed after reading back.
    assert_eq!(d.live_textures(), 1);
    y.destroy();
    drop(root);
    gl::evaluate(&d, &[ir::sequence(3., 0., 1.).unwrap()]).unwrap();
    assert_eq!(d.live_textures(), 0);
}

#[test]
fn a_draw_reading_too_many_textures_is_split_or_limit_exceeded() {
    let d = device();
    let max = d.limits.max_sampled_textures_per_shader_stage as usize;
    // A fused chain over more leaves than one draw may sample runs unfused instead.
    let columns: Vec<NodeRef> = (0..max + 3).map(|k| f32s(&floats(50 + k), 1)).collect();
    let sum = ir::fold_binary(Add, &columns).unwrap();
    check_roots::<WebGl>(&[sum], Tolerance::Relative(1e-6)).unwrap();
    // One interleave of more columns than that cannot be one draw.
    let wide = ir::interleave(&columns).unwrap();
    let error = gl::evaluate(d, &[wide]).unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitExceeded);
    assert!(
        error.message.contains("maxSampledTexturesPerShaderStage"),
        "{}",
        error.message
    );
}

#[test]
fn a_destroyed_device_reports_device_lost() {
    let d = new_device();
    let r = ir::unary(Sqrt, &f32s(&[4.], 1)).unwrap();
    gl::evaluate(&d, std::slice::from_ref(&r)).unwrap();
    d.destroy();
    let again = ir::unary(Sqrt, &f32s(&[9.], 1)).unwrap();
    assert_eq!(code(gl::evaluate(&d, &[again])), ErrorCode::DeviceLost);
}

#[test]
fn narrow_integer_columns_stay_exact_through_integer_textures() {
    let u = u16s(&[65535, 0, 1234, 40000], 1);
    let i = i16s(&[-32768, 32767, -1, 5], 1);
    check::<WebGl>(ir::binary(Add, &u, &i).unwrap(), Tolerance::Exact);
    check::<WebGl>(
        ir::interleave(&[u.clone(), konst(ColumnData::U16(vec![9]))]).unwrap(),
        Tolerance::Exact,
    );
    check::<WebGl>(
        ir::binary(Multiply, &u32s(&[u32::MAX, 16777217], 1), &lit(&[3.])).unwrap(),
        Tolerance::Exact,
    );
}
