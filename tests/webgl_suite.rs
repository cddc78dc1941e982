//! The WebGL2 backend against the CPU oracle, natively on wgpu's GL backend (EGL on
//! llvmpipe in CI; `.cargo/config.toml` sets the Mesa override float render targets need):
//! the shared suite plus what is WebGL2's own (tiles, draws, texture limits).
//! No adapter is a failure.

mod common;
mod suite;
use common::*;
use suite::{floats, Target, Tolerance};

/// The suite's checks, blocking: the tests below run natively only.
fn check<T: Target>(root: NodeRef, tolerance: Tolerance) {
    pollster::block_on(suite::check::<T>(root, tolerance))
}
fn check_roots<T: Target>(roots: &[NodeRef], tolerance: Tolerance) -> gputable::Result<()> {
    pollster::block_on(suite::check_roots::<T>(roots, tolerance))
}

use gputable::column::ColumnData;
use gputable::engine::{evaluate_blocking, explain, DeviceModel};
use gputable::gl::GlDevice;
use gputable::ir::{self, BinaryOp::*, NodeRef, UnaryOp::*};

fn new_device() -> GlDevice {
    GlDevice::new_blocking().expect(
        "a GL adapter with float render targets is required for these tests \
         (apt: libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri)",
    )
}

thread_local! {
    // Leaked, as in webgpu_suite.rs: wgpu devices must not drop during thread teardown.
    static DEVICE: &'static GlDevice = Box::leak(Box::new(new_device()));
    // Textures of 64x64 texels: tiles of 4096 rows, so small columns span several tiles.
    static SMALL_TILES: &'static GlDevice = Box::leak(Box::new({
        let mut d = new_device();
        d.cap_texture_side(64).unwrap();
        d
    }));
}

/// llvmpipe deadlocks when one thread's GL device drops while another's submits (seen as
/// a suite idle for minutes): the suite's tests run one at a time.
static GL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    GL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct WebGl;

impl Target for WebGl {
    type Device = GlDevice;
    fn device() -> GlDevice {
        DEVICE.with(|d| (*d).clone())
    }
    async fn fresh() -> GlDevice {
        new_device()
    }
    async fn capped() -> GlDevice {
        let mut device = new_device();
        // Tiles of 4,096 rows.
        device.cap_texture_side(64).unwrap();
        device
    }
    fn exclusive() -> Option<std::sync::MutexGuard<'static, ()>> {
        Some(exclusive())
    }
    const TRANSFERS: bool = true;
    const WIDE_ROWS: bool = false;
}

suite!(WebGl);

/// The suite's device with 64-texel textures: every column of more than 4096 rows is tiled.
struct WebGlTiled;

impl Target for WebGlTiled {
    type Device = GlDevice;
    fn device() -> GlDevice {
        SMALL_TILES.with(|d| (*d).clone())
    }
    async fn fresh() -> GlDevice {
        let mut d = new_device();
        d.cap_texture_side(64).unwrap();
        d
    }
    fn exclusive() -> Option<std::sync::MutexGuard<'static, ()>> {
        Some(exclusive())
    }
    const TRANSFERS: bool = true;
    const WIDE_ROWS: bool = false;
}

#[test]
fn the_device_reports_its_limits_and_uses_the_fragment_path() {
    let _exclusive = exclusive();
    let d = WebGl::device();
    assert!(d.limits.max_texture_dimension_2d >= 2048);
    assert!(d.limits.max_color_attachments >= 4);
    assert!(d.limits.max_sampled_textures_per_shader_stage >= 16);
    assert!(d.layout.width() >= 2048);
    // Native GL has compute shaders; the WebGL2 device must not use them.
    let text = explain(&d, &ir::unary(Sqrt, &f32s(&[1.], 1)).unwrap()).unwrap();
    assert!(text.contains("1 draw(s)"), "{text}");
}

#[test]
fn columns_larger_than_one_texture_are_tiled() {
    let _exclusive = exclusive();
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
    let _exclusive = exclusive();
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
fn explain_lists_passes_and_draws() {
    let _exclusive = exclusive();
    let x = f32s(&floats(5000), 1);
    let fused = ir::unary(
        Sqrt,
        &ir::binary(Add, &ir::binary(Multiply, &x, &x).unwrap(), &lit(&[1.])).unwrap(),
    )
    .unwrap();
    let d = WebGl::device();
    let text = explain(&d, &fused).unwrap();
    assert!(text.starts_with("plan on webgl ("), "{text}");
    assert!(text.contains("fused elementwise, 3 ops"), "{text}");
    assert!(text.contains("1 draw in all\n"), "{text}");
    assert!(text.contains("projected device memory"), "{text}");
    let reduced = explain(&d, &ir::extent(&fused).unwrap()).unwrap();
    assert!(
        reduced.contains("3 draws: per 4 lanes, 1 draw(s) folding 64 rows"),
        "{reduced}"
    );
    assert!(reduced.contains("4 draws in all"), "{reduced}");
}

#[test]
fn textures_are_uploaded_once_and_freed_with_their_node() {
    let _exclusive = exclusive();
    let d = pollster::block_on(WebGl::fresh());
    let x = f32s(&floats(999), 3);
    for c in [1.0, 2.0, 3.0] {
        let r = ir::binary(Add, &x, &lit(&[c])).unwrap();
        evaluate_blocking(&d, std::slice::from_ref(&r)).unwrap();
        r.destroy();
    }
    let uploaded = d.core().counters.stats().upload_bytes;
    // One RGBA32 texel row of the layout's width holds x's 999 rows; literals are parameters.
    assert_eq!(uploaded, d.layout.width() as u64 * 16);
    x.destroy();
    assert_eq!(d.core().counters.memory().live_bytes, 0);
}

#[test]
fn a_draw_reading_too_many_textures_is_split() {
    let _exclusive = exclusive();
    let d = WebGl::device();
    let max = d.limits.max_sampled_textures_per_shader_stage as usize;
    // A fused chain over more leaves than one draw may sample is split into several draws.
    let columns: Vec<NodeRef> = (0..max + 3).map(|k| f32s(&floats(50 + k), 1)).collect();
    let sum = ir::fold_binary(Add, &columns).unwrap();
    check_roots::<WebGl>(&[sum], Tolerance::Relative(1e-6)).unwrap();
    // An interleave of more columns than that nests, and so fits too.
    check::<WebGl>(ir::interleave(&columns).unwrap(), Tolerance::Exact);
}

#[test]
fn narrow_integer_columns_stay_exact_through_integer_textures() {
    let _exclusive = exclusive();
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

/// The merge sort past a million rows: two keys (32 and 10 bits; the first in two chunks of
/// rows and two empty ones, joined by one draw before the sort), 21 merge passes, one draw
/// each, on the device, as `explain` counts them.
#[test]
fn a_merge_sort_of_over_a_million_rows_carries_both_keys() {
    let _exclusive = exclusive();
    check_a_two_key_sort_of_1_3m_rows(
        &pollster::block_on(WebGl::fresh()),
        "21 draws: 21 merge passes (runs of 1, 2, 4, ... rows merged in pairs, a fragment per row), after 1 draw joining keys stored in chunks",
        22,
    );
}

/// `topK` of 70,001 float rows merges only candidates: one draw keeps the first 10 rows of
/// each run of 256 (a fragment per row kept), and 12 merge passes order those 2,740 alone
/// (where the whole sort is 17 passes over every row), as `explain` says and the device
/// counts; the rows are the stable sort's first 10.
#[test]
fn top_k_merges_each_runs_first_rows_alone() {
    let _exclusive = exclusive();
    let d = pollster::block_on(WebGl::fresh());
    let mut rng = Rng(5);
    let values: Vec<f32> = (0..70_001).map(|_| rng.below(300) as f32 - 150.0).collect();
    let x = f32s(&values, 1);
    let (_, indices) = ir::top_k(&x, 10.0, true).unwrap();
    let text = explain(&d, &indices).unwrap();
    let line = "13 draws: the first 10 rows of each of 274 runs of 256 rows kept (a fragment per row kept), then 12 merge passes (runs of 1, 2, 4, ... rows merged in pairs, a fragment per row) over their 2740 rows";
    assert!(text.contains(line), "{text}");
    let before = d.core().counters.stats().kernels;
    evaluate_blocking(&d, std::slice::from_ref(&indices)).unwrap();
    // The sort key made, the sort's 13 draws, the first 10 rows copied out of the
    // permutation, as `explain` counts them.
    assert_eq!(d.core().counters.stats().kernels - before, 15, "{text}");
    assert!(text.contains("\n15 draws in all\n"), "{text}");
    let mut order: Vec<u32> = (0..values.len() as u32).collect();
    order.sort_by(|&i, &j| values[j as usize].total_cmp(&values[i as usize]));
    assert_eq!(read_u32(&indices), &order[..10]);
}

/// Float32 sums and counts grouped by a key of few values are blended draws here (SwiftShader
/// and llvmpipe blend float32 targets), no sort. An 8-bit key's 256 bins: a point per row
/// adding its value at its bin's texel of its block of 64 rows, then each bin's blocks added
/// pairwise. A key of 20 values (uint32 in host memory, a bin per value of its range): a
/// fragment per block of 128 rows adding them into its bins' partials (four bins a target),
/// then each bin's blocks added pairwise, on 64-texel textures (tiles of 4,096 rows: blocks
/// straddle chunks and tiles). Uneven chunks, NaN and -0: the CPU's sums and counts
/// (quarters: every order of adding them is exact).
#[test]
fn few_group_sums_and_counts_are_blended_draws() {
    let _exclusive = exclusive();
    let mut rng = Rng(77);
    let n = 14_001;
    let keys: Vec<u32> = (0..n).map(|_| rng.below(20) as u32).collect();
    let values: Vec<f32> = (0..n)
        .map(|r| match (keys[r], r % 89) {
            (3, 0) => f32::NAN,
            (5, _) => -0.0,
            _ => (rng.below(2_001) as f32 - 1_000.0) / 4.0,
        })
        .collect();
    let chunks = [9_000, 0, 5_001];
    let grouped = |small: bool| {
        let key = match small {
            true => chunked(
                ColumnData::U8(keys.iter().map(|&k| k as u8).collect()),
                1,
                &chunks,
            ),
            false => chunked(ColumnData::U32(keys.clone()), 1, &chunks),
        };
        let value = chunked(ColumnData::F32(values.clone()), 1, &chunks);
        let aggregates = [ir::GroupOp::Sum, ir::GroupOp::Count].map(|op| ir::Aggregate {
            op,
            value: Some(value.clone()),
        });
        ir::group_by(&[key], &aggregates).unwrap().1
    };
    for (small, lines) in [
        (true, ["kernels: 2 point-list draw(s) adding each row's value at its bin's texel of its block of 64 rows (blended), one per tile of pairs, and 1 draw adding each bin's 219 blocks pairwise", "adding each row's 1 at its bin's texel (blended)"]),
        (false, ["kernels: 5 draw(s) adding each block of 128 rows into its 20 bins' partials (blended), one per tile of rows, and 1 draw adding each bin's 110 blocks pairwise", "into its 20 bins' partials (blended), one per tile of rows, and 1 draw adding each bin's 110 blocks pairwise, as uint32"]),
    ] {
        // The 256 bins' blocks fit a full tile alone.
        let d = match small {
            true => pollster::block_on(WebGl::fresh()),
            false => pollster::block_on(WebGl::capped()),
        };
        let on_gl = grouped(small);
        let text = explain(&d, &on_gl[0]).unwrap() + &explain(&d, &on_gl[1]).unwrap();
        for line in lines {
            assert!(text.contains(line), "{line}: {text}");
        }
        assert!(!text.contains("merge passes"), "no sort: {text}");
        evaluate_blocking(&d, &on_gl).unwrap();
        let on_cpu = grouped(small);
        evaluate_blocking(&gputable::cpu::CpuDevice::default(), &on_cpu).unwrap();
        let (gl, cpu) = (read_f32(&on_gl[0]), read_f32(&on_cpu[0]));
        assert_eq!(gl.len(), 20);
        let same = gl.iter().zip(&cpu).all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
        assert!(same, "small {small}: {gl:?} vs {cpu:?}");
        assert!(gl[3].is_nan() && gl[5] == 0.0);
        assert_eq!(read_u32(&on_gl[1]), read_u32(&on_cpu[1]), "small {small}: counts");
    }
}

/// Sorts the merge passes cannot draw whole, in the same stable order: keys over several
/// tiles (64-texel textures) as runs of one tile merge-sorted and a merge pass, and four keys
/// (one more than the render targets carry besides the permutation) as one-bit split passes.
#[test]
fn sorts_past_one_tile_run_in_runs_and_past_three_keys_as_split_passes() {
    let _exclusive = exclusive();
    let mut rng = Rng(43);
    let rows = 10_000u32;
    let keys: Vec<Vec<u32>> = (0..4)
        .map(|_| (0..rows).map(|_| rng.below(7) as u32).collect())
        .collect();
    let nodes: Vec<NodeRef> = keys.iter().map(|k| u32s(k, 1)).collect();
    let expected = |count: usize| {
        let mut order: Vec<u32> = (0..rows).collect();
        order.sort_by_key(|&i| {
            keys[..count]
                .iter()
                .map(|k| k[i as usize])
                .collect::<Vec<_>>()
        });
        order
    };
    let two: Vec<(&NodeRef, u64)> = nodes[..2].iter().map(|n| (n, 7)).collect();
    let four: Vec<(&NodeRef, u64)> = nodes.iter().map(|n| (n, 7)).collect();
    for (device, keyed, count) in [
        (pollster::block_on(WebGlTiled::fresh()), &two, 2),
        (pollster::block_on(WebGl::fresh()), &four, 4),
    ] {
        let perm = ir::lexsort_permutation(keyed).unwrap();
        let text = explain(&device, &perm).unwrap();
        let shown = match count {
            2 => "runs of up to 4096 rows".to_string(),
            _ => format!("{} one-bit split passes", 3 * count),
        };
        assert!(text.contains(&shown), "{text}");
        evaluate_blocking(&device, std::slice::from_ref(&perm)).unwrap();
        assert_eq!(read_u32(&perm), expected(count), "{count} keys");
    }
}

/// A read copies only the texels of the rows asked (issue 37: `readValue(10, 20)` of a 100k
/// row result read back 32 kB, a texture row): ten rows of a one-lane column are 40 bytes,
/// rows across texel rows and tiles (64-texel textures) read back their texels alone, and
/// every range reads the values a whole read does.
#[test]
fn a_read_copies_only_the_texels_of_its_rows() {
    let _exclusive = exclusive();
    use gputable::evaluator::read_value;
    let devices = [
        (pollster::block_on(WebGl::fresh()), 100_000u32),
        (pollster::block_on(WebGlTiled::fresh()), 3 * 4096 + 77),
    ];
    for (device, n) in devices {
        let counters = device.core().counters.clone();
        for size in [1u32, 2, 6] {
            let values: Vec<f32> = (0..n * size).map(|i| i as f32).collect();
            let x = ir::binary(Add, &f32s(&values, size), &lit(&[0.5])).unwrap();
            evaluate_blocking(&device, std::slice::from_ref(&x)).unwrap();
            let whole = read_value(&x, None, None).unwrap();
            // A texel holds one lane of a one-lane column, four of a wider one.
            let texel_bytes = match size {
                1 => 4,
                _ => 16 * (size as u64).div_ceil(4),
            };
            let width = device.layout.width();
            for (start, end) in [
                (10, 20),
                (width - 3, width + 5),
                (0, 3 * width + 1),
                (4090, 4110),
                (n - 7, n),
            ] {
                let before = counters.stats().readback_bytes;
                let part = read_value(&x, Some(start as f64), Some(end as f64)).unwrap();
                let read = counters.stats().readback_bytes - before;
                assert_eq!(
                    read,
                    (end - start) as u64 * texel_bytes,
                    "rows {start}..{end} of {size} lanes"
                );
                let lanes = |c: &ColumnData| match c {
                    ColumnData::F32(v) => v.clone(),
                    _ => unreachable!(),
                };
                let expected =
                    lanes(&whole)[(start * size) as usize..(end * size) as usize].to_vec();
                assert_eq!(
                    lanes(&part),
                    expected,
                    "rows {start}..{end} of {size} lanes"
                );
            }
        }
    }
}
