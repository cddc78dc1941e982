//! The WebGPU backend against the CPU oracle, natively on the Vulkan adapter (lavapipe in
//! CI): the shared suite plus what is WebGPU's own (dispatch grids, bindings, one submit).
//! No adapter is a failure.

mod common;
mod suite;
use common::*;
use suite::{floats, Target, Tolerance};

/// The suite's check, blocking: the tests below run natively only.
fn check<T: Target>(root: NodeRef, tolerance: Tolerance) {
    pollster::block_on(suite::check::<T>(root, tolerance))
}

use std::cell::RefCell;

use gputable::column::ColumnData;
use gputable::engine::{evaluate_blocking, explain, DeviceModel};
use gputable::gpu::GpuDevice;
use gputable::ir::{self, BinaryOp::*, NodeRef, UnaryOp::*};

fn new_device() -> GpuDevice {
    GpuDevice::new_blocking()
        .expect("a WebGPU adapter is required for these tests (install mesa-vulkan-drivers)")
}

/// This thread's device, dropped when its test ends (`Target::release`): a device leaked
/// per test left an H100's driver a hundred devices, and it crashed at exit. One still held
/// when thread locals are torn down (its test panicked) is leaked, as dropping a wgpu device
/// then aborts in debug builds (wgpu-core's lock tracing uses a thread-local of its own).
struct ThreadDevice(RefCell<Option<GpuDevice>>);

impl Drop for ThreadDevice {
    fn drop(&mut self) {
        std::mem::forget(self.0.take());
    }
}

thread_local! {
    static DEVICE: ThreadDevice = const { ThreadDevice(RefCell::new(None)) };
}

struct WebGpu;

impl Target for WebGpu {
    type Device = GpuDevice;
    fn device() -> GpuDevice {
        DEVICE.with(|d| d.0.borrow_mut().get_or_insert_with(new_device).clone())
    }
    fn release() {
        DEVICE.with(|d| d.0.borrow_mut().take());
    }
    async fn fresh() -> GpuDevice {
        new_device()
    }
    async fn capped() -> GpuDevice {
        let mut device = new_device();
        // 1,024 values a binding: chunks of the random graphs are cut into parts.
        device.cap_binding_size(4096).unwrap();
        device
    }
    const TRANSFERS: bool = true;
    const WIDE_ROWS: bool = true;
}

suite!(WebGpu);

#[test]
fn the_device_reports_its_limits() {
    let d = WebGpu::device();
    assert!(d.limits.max_storage_buffer_binding_size >= 128 << 20);
    assert!(d.limits.max_compute_workgroups_per_dimension >= 65535);
    assert!(d.limits.max_storage_buffers_per_shader_stage >= 8);
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
fn a_plan_of_several_regions_runs_every_dispatch() {
    let d = pollster::block_on(WebGpu::fresh());
    let x = f32s(&floats(4000), 1);
    // A reduction (row groups, their combine into the chunk's partial, the output row),
    // then a gather from it fused with an add (one).
    let build = || {
        let e = ir::extent(&ir::binary(Multiply, &x, &x).unwrap()).unwrap();
        ir::binary(
            Add,
            &ir::gather(&u32s(&[0, 1, 0], 1), &e).unwrap(),
            &lit(&[1.]),
        )
        .unwrap()
    };
    let expected = pollster::block_on(suite::oracle(&[build()])).unwrap();
    let r = build();
    evaluate_blocking(&d, std::slice::from_ref(&r)).unwrap();
    assert_eq!(d.core().counters.stats().kernels, 4);
    assert!(same(&read(&r), &expected[0]));
}

#[test]
fn a_long_float_sum_folds_at_most_64_rows_per_invocation() {
    // 2^24 rows: 1,024 workgroups of 256, 64 rows each, then combine rounds (a sum folded
    // by fewer invocations would run longer in order and drift).
    let x = f32s(&vec![0.1; 1 << 24], 1);
    let sum = ir::reduce(gputable::ir::ReduceKind::Sum, &x, None, 4).unwrap();
    let text = explain(&WebGpu::device(), &sum).unwrap();
    assert!(text.contains("1024 workgroup(s) of 256"), "{text}");
    assert!(text.contains("then 3 combining them"), "{text}");
    evaluate_blocking(&WebGpu::device(), std::slice::from_ref(&sum)).unwrap();
    let exact = 0.1f32 as f64 * (1 << 24) as f64;
    let got = read_f32(&sum)[0] as f64;
    assert!((got - exact).abs() <= exact * 1e-6, "{got} vs {exact}");
}

#[test]
fn explain_lists_kernels_and_dispatches() {
    let x = f32s(&floats(5000), 1);
    let fused = ir::unary(
        Sqrt,
        &ir::binary(Add, &ir::binary(Multiply, &x, &x).unwrap(), &lit(&[1.])).unwrap(),
    )
    .unwrap();
    let d = WebGpu::device();
    let text = explain(&d, &fused).unwrap();
    assert!(text.starts_with("plan on webgpu ("), "{text}");
    assert!(text.contains("fused elementwise, 3 ops"), "{text}");
    assert!(
        text.contains("1 dispatch of 79x1 workgroups of 64"),
        "{text}"
    );
    assert!(text.contains("1 dispatch in all\n"), "{text}");
    assert!(text.contains("projected device memory"), "{text}");
    let reduced = explain(&d, &ir::extent(&fused).unwrap()).unwrap();
    assert!(
        reduced.contains("2 dispatches: 1 workgroup(s) of 256"),
        "{reduced}"
    );
    assert!(
        reduced.contains("a partial per chunk; one partial: the final row straight from it"),
        "{reduced}"
    );
    let wide = ir::unary(Abs, &f32s(&floats(120_000), 12_000)).unwrap();
    let text = explain(&d, &wide).unwrap();
    assert!(
        text.contains(
            "1 dispatch of 1875x1 workgroups of 64 (one invocation per lane of each row)"
        ),
        "{text}"
    );
}

#[test]
fn inputs_are_uploaded_once_and_freed_with_their_node() {
    let d = pollster::block_on(WebGpu::fresh());
    let x = f32s(&floats(1000), 1);
    for c in [1.0, 2.0, 3.0] {
        let r = ir::binary(Add, &x, &lit(&[c])).unwrap();
        evaluate_blocking(&d, std::slice::from_ref(&r)).unwrap();
        r.destroy();
    }
    let stats = d.core().counters.stats();
    assert_eq!(stats.upload_bytes, 4000, "x once; literals are parameters");
    let live = d.core().counters.memory().live_bytes;
    assert!(live >= 4000);
    x.destroy();
    assert_eq!(d.core().counters.memory().live_bytes, 0);
}

#[test]
fn a_column_larger_than_one_binding_is_computed_in_parts() {
    let mut d = new_device();
    d.cap_binding_size(1024).unwrap();
    // 300 rows of 4 bytes: the input and the output are bound 256 rows at a time.
    let xs = floats(300);
    let big = ir::binary(Add, &f32s(&xs, 1), &lit(&[1.])).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&big)).unwrap();
    let home = big.home().unwrap();
    assert_eq!(home.device, d.core().id);
    let stored: Vec<u32> = home.chunks.iter().map(|c| c.rows).collect();
    assert_eq!(stored, vec![256, 44], "the one chunk is stored in parts");
    assert_eq!(&*big.chunks, &[300], "its logical chunks stay");
    let expected: Vec<f32> = xs.iter().map(|v| v + 1.0).collect();
    assert_eq!(read_f32(&big), expected);
    // A part of it feeds the next graph in place.
    let next = ir::binary(Multiply, &big, &lit(&[2.])).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&next)).unwrap();
    let doubled: Vec<f32> = expected.iter().map(|v| v * 2.0).collect();
    assert_eq!(read_f32(&next), doubled);
    // A reduction of it folds each part into a partial of its own; so does one whose
    // fused prologue reads the column.
    let kind = gputable::ir::ReduceKind::Sum;
    let total = ir::reduce(kind, &big, None, 2).unwrap();
    let fused = ir::reduce(kind, &ir::unary(Abs, &f32s(&xs, 1)).unwrap(), None, 2).unwrap();
    let text = explain(&d, &total).unwrap();
    assert!(
        text.contains("each of 2 chunk tasks (chunks cut at this device's binding size)"),
        "{text}"
    );
    let kernels = d.core().counters.stats().kernels;
    evaluate_blocking(&d, std::slice::from_ref(&total)).unwrap();
    let counted = text.lines().find(|l| l.ends_with(" in all")).unwrap();
    let ran = d.core().counters.stats().kernels - kernels;
    assert_eq!(counted, format!("{ran} dispatches in all"), "{text}");
    evaluate_blocking(&d, &[total.clone(), fused.clone()]).unwrap();
    assert_eq!(read_f32(&total), vec![expected.iter().sum::<f32>()]);
    assert_eq!(
        read_f32(&fused),
        vec![xs.iter().map(|v| v.abs()).sum::<f32>()]
    );
    // A gather source too large for one binding is bound a binding's worth of rows at a
    // time: its parts are uploaded on their own, and the kernel picks the part by row.
    let gathered = ir::gather(&i32s(&[0, 299, 256, 255, -1], 1), &f32s(&xs, 1)).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&gathered)).unwrap();
    assert_eq!(
        read_f32(&gathered),
        vec![xs[0], xs[299], xs[256], xs[255], 0.0]
    );
}

/// A pass reading a leaf both whole (a gather source) and at the row is never cut into
/// tasks at the binding size: tasks past the first read the leaf at the row from its first
/// row, so the sums came out wrong. Where its output needs more than one binding it now
/// refuses with a typed error; within one binding it runs as one task.
#[test]
fn a_leaf_read_both_ways_is_never_cut_at_the_binding_size() {
    let xs = floats(300);
    let reversed: Vec<u32> = (0..300).rev().collect();
    let both = |x: &gputable::ir::NodeRef| {
        ir::binary(Add, x, &ir::gather(&u32s(&reversed, 1), x).unwrap()).unwrap()
    };
    let mut capped = new_device();
    capped.cap_binding_size(1024).unwrap();
    let refused = both(&f32s(&xs, 1));
    let error = evaluate_blocking(&capped, std::slice::from_ref(&refused)).unwrap_err();
    assert_eq!(error.code, gputable::ErrorCode::LimitExceeded, "{error}");
    let d = pollster::block_on(WebGpu::fresh());
    let summed = both(&f32s(&xs, 1));
    evaluate_blocking(&d, std::slice::from_ref(&summed)).unwrap();
    let expected: Vec<f32> = (0..300).map(|i| xs[i] + xs[299 - i]).collect();
    assert_eq!(read_f32(&summed), expected);
}

#[test]
fn a_chunked_gather_source_is_bound_chunk_by_chunk() {
    let d = pollster::block_on(WebGpu::fresh());
    let values: Vec<f32> = (0..30).map(|v| v as f32).collect();
    let source = chunked(ColumnData::F32(values), 1, &[10, 0, 15, 5]);
    pollster::block_on(gputable::engine::put_on(&d, &source, false)).unwrap();
    let ids = u32s(&[29, 0, 12, 25, 9, 100, 10, 24], 1);
    pollster::block_on(gputable::engine::put_on(&d, &ids, false)).unwrap();
    let gathered = ir::gather(&ids, &source).unwrap();
    let kernels = d.core().counters.stats().kernels;
    evaluate_blocking(&d, std::slice::from_ref(&gathered)).unwrap();
    assert_eq!(
        d.core().counters.stats().kernels - kernels,
        1,
        "the gather alone: no copy joins the source's chunks"
    );
    assert_eq!(
        read_f32(&gathered),
        vec![29., 0., 12., 25., 9., 0., 10., 24.]
    );
}

/// Ops computing from the row index number rows from the whole pass, not from their task:
/// a sequence and a scan cut into tasks at the binding size give the values of one task.
#[test]
fn row_numbered_ops_continue_across_tasks_cut_at_the_binding_size() {
    let mut d = new_device();
    d.cap_binding_size(1024).unwrap();
    let sequence = ir::sequence(600.0, 5.0, 3.0).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&sequence)).unwrap();
    let stored: Vec<u32> = sequence
        .home()
        .unwrap()
        .chunks
        .iter()
        .map(|c| c.rows)
        .collect();
    assert_eq!(stored, vec![256, 256, 88], "three tasks");
    let expected: Vec<i32> = (0..600).map(|i| 5 + 3 * i).collect();
    assert_eq!(read_i32(&sequence), expected);
    let ones = u32s(&[1; 600], 1);
    let scan = gputable::ir::exclusive_scan(&ones).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&scan)).unwrap();
    assert_eq!(read_u32(&scan), (0..600).collect::<Vec<u32>>());
    // So do a sort's radix passes (scatters into outputs cut at the binding size) and a
    // segmented sum over 600 segments.
    let keys: Vec<u32> = (0..600).map(|i| (i * 7919) % 600).collect();
    let (_, sorted) = gputable::ir::sort_permutation(&u32s(&keys, 1)).unwrap();
    let offsets = u32s(&(0..=600).collect::<Vec<u32>>(), 1);
    let per_row = gputable::ir::segment_sum(&sorted, &offsets).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&per_row)).unwrap();
    assert_eq!(read_u32(&per_row), (0..600).collect::<Vec<u32>>());
    // A scatter into 600 rows writes three parts of 256, 256 and 88 rows, from each of
    // three chunk tasks: explain counts the dispatches that run.
    let reversed: Vec<u32> = (0..600).rev().collect();
    let scattered = ir::scatter(&u32s(&reversed, 1), &u32s(&keys, 1), 600).unwrap();
    let text = explain(&d, &scattered).unwrap();
    let kernels = d.core().counters.stats().kernels;
    evaluate_blocking(&d, std::slice::from_ref(&scattered)).unwrap();
    let counted = text.lines().find(|l| l.ends_with(" in all")).unwrap();
    let ran = d.core().counters.stats().kernels - kernels;
    assert_eq!(counted, format!("{ran} dispatches in all"), "{text}");
    let backwards: Vec<u32> = keys.iter().rev().copied().collect();
    assert_eq!(read_u32(&scattered), backwards);
    let pairs = gputable::ir::reshape(&u32s(&(0..600).collect::<Vec<_>>(), 1), 2).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&pairs)).unwrap();
    assert_eq!(read_u32(&pairs), (0..600).collect::<Vec<u32>>());
}

/// A read's staging buffer was as large as the read, so past the pool's cap (or after the pool
/// dropped its largest buffers) it was made afresh for every read: an H100 spent 40 ms of
/// first-touch mapping on 32 MB. Reads go through pieces of at most 8 MB, and a second read
/// of 16 MB allocates nothing.
#[test]
fn large_reads_reuse_one_staging_buffer() {
    let d = pollster::block_on(WebGpu::fresh());
    d.set_pool_cap(12 << 20);
    let rows = 4 << 20;
    let r = ir::binary(Add, &f32s(&vec![1.5; rows], 1), &lit(&[1.0])).unwrap();
    evaluate_blocking(&d, std::slice::from_ref(&r)).unwrap();
    assert_eq!(read_f32(&r), vec![2.5; rows]);
    let allocations = d.core().counters.stats().allocations;
    assert_eq!(read_f32(&r), vec![2.5; rows]);
    assert_eq!(
        d.core().counters.stats().allocations,
        allocations,
        "the second read reused the staging buffer"
    );
}

/// `explain` counts the copies a view's chunks take as the device runs them: a slice of a
/// host column (copied here whole, then its rows copied out), a slice across two parts of a
/// column computed in the same evaluation and stored in parts of 256 rows (joined by one
/// copy), a concat of host and computed rows, and a slice of whole stored chunks (no copy).
#[test]
fn explain_counts_the_copies_views_take() {
    let mut d = pollster::block_on(WebGpu::fresh());
    d.cap_binding_size(1024).unwrap();
    let xs = floats(300);
    let views = |x: &NodeRef| {
        let big = ir::binary(Add, x, &lit(&[1.])).unwrap();
        [
            ir::slice(x, 10., 20.).unwrap(),
            ir::slice(&big, 200., 300.).unwrap(),
            ir::concat(&[ir::slice(x, 0., 5.).unwrap(), big.clone()]).unwrap(),
            ir::slice(
                &chunked(ColumnData::F32(xs.clone()), 1, &[100, 200]),
                100.,
                300.,
            )
            .unwrap(),
        ]
    };
    let host = chunked(ColumnData::F32(xs.clone()), 1, &[150, 150]);
    for (case, view) in views(&host).into_iter().enumerate() {
        let text = explain(&d, &view).unwrap();
        let total: u64 = (text.lines())
            .find_map(|l| {
                l.strip_suffix(" dispatches in all")
                    .or(l.strip_suffix(" dispatch in all"))
            })
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("case {case}: {text}"));
        let before = d.core().counters.stats().kernels;
        evaluate_blocking(&d, std::slice::from_ref(&view)).unwrap();
        let ran = d.core().counters.stats().kernels - before;
        assert_eq!(ran, total, "case {case}: {text}");
    }
}

/// The native radix sort past 256 blocks of 4096 rows, where the scan of each digit's block
/// counts runs over several tiles with a carry between them: two keys (32 and 10 bits, 6
/// passes of three dispatches; the first in two chunks of rows and two empty ones, joined by
/// one copy before the sort), on the device, as `explain` counts them.
#[test]
fn a_radix_sort_of_over_a_million_rows_carries_its_counts_across_tiles() {
    let d = pollster::block_on(WebGpu::fresh());
    let line = format!("18 dispatches: 6 passes of an 8-bit radix sort (a count, a scan and a placing dispatch each, over 318 blocks of 4096 rows{}), after 1 dispatch joining keys stored in chunks", ranked(&d));
    check_a_two_key_sort_of_1_3m_rows(&d, &line, 19);
}

/// The same sort where the device forgoes subgroup operations: each round of a block's rows
/// ranked by ballots in workgroup memory. (Where the device has them, every sort above and
/// in the suite ranks by subgroup ballots: lavapipe's subgroups are 8 wide, SwiftShader's in
/// Chromium 4, so a block is placed in two and four parts there.)
#[test]
fn a_radix_sort_without_subgroups_ranks_rows_in_workgroup_memory() {
    let mut d = pollster::block_on(WebGpu::fresh());
    d.forgo_subgroups().unwrap();
    check_a_two_key_sort_of_1_3m_rows(
        &d,
        "18 dispatches: 6 passes of an 8-bit radix sort (a count, a scan and a placing dispatch each, over 318 blocks of 4096 rows), after 1 dispatch joining keys stored in chunks",
        19,
    );
}

/// The device is opened with subgroup operations exactly where its adapter offers them, and
/// knows their smallest size (lavapipe: 8 wide, so the sorts above rank rows by subgroup
/// ballots here).
#[test]
fn the_device_has_subgroups_where_its_adapter_offers_them() {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = wgpu::Backends::VULKAN;
    let instance = wgpu::Instance::new(descriptor.with_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default())).unwrap();
    let offered = (adapter.features().contains(wgpu::Features::SUBGROUP))
        .then(|| adapter.get_info().subgroup_min_size);
    let d = WebGpu::device();
    assert_eq!(d.limits.subgroup_min_size, offered);
    assert_eq!(
        d.device.features().contains(wgpu::Features::SUBGROUP),
        offered.is_some()
    );
}

/// What `explain` adds to a radix sort's line where `device` ranks rows by subgroup ballots.
fn ranked(device: &gputable::gpu::GpuDevice) -> &'static str {
    match device.limits.subgroup_min_size {
        Some(_) => ", ranking rows by subgroup ballots",
        None => "",
    }
}

/// `topK` of 70,001 float rows sorts only candidates: each run of 256 rows keeps its first
/// 10 in one pass and the radix sort orders those 2,740 alone (one pass keeping them, one
/// gather of their key, one radix dispatch over one block, one mapping back, where the
/// whole sort is 12 over 18 blocks), as `explain` says and the device counts; the rows are
/// the stable sort's first 10.
#[test]
fn top_k_sorts_each_runs_first_rows_alone() {
    let d = pollster::block_on(WebGpu::fresh());
    let mut rng = Rng(5);
    let values: Vec<f32> = (0..70_001).map(|_| rng.below(300) as f32 - 150.0).collect();
    let x = f32s(&values, 1);
    let (_, indices) = ir::top_k(&x, 10.0, true).unwrap();
    let text = explain(&d, &indices).unwrap();
    let line = "4 dispatches: the first 10 rows of each of 274 runs of 256 rows kept, their 2740 keys gathered, then 4 passes of an 8-bit radix sort of one block (at most 4096 rows), each key's passes in one dispatch of one workgroup, and their first 10 mapped back";
    assert!(text.contains(line), "{text}");
    let before = d.core().counters.stats().kernels;
    evaluate_blocking(&d, std::slice::from_ref(&indices)).unwrap();
    // The sort key made, the sort's 4, the first 10 rows copied out of the permutation,
    // as `explain` counts them.
    let ran = d.core().counters.stats().kernels - before;
    assert_eq!(ran, 6, "{text}");
    assert!(text.contains("\n6 dispatches in all\n"), "{text}");
    let mut order: Vec<u32> = (0..values.len() as u32).collect();
    order.sort_by(|&i, &j| values[j as usize].total_cmp(&values[i as usize]));
    assert_eq!(read_u32(&indices), &order[..10]);
}

/// Evaluates `root` on `d` and checks that `text`, its `explain`, counted the dispatches
/// it ran.
fn ran_as_explained(d: &GpuDevice, root: &NodeRef, text: &str, what: &str) {
    let before = d.core().counters.stats().kernels;
    evaluate_blocking(d, std::slice::from_ref(root)).unwrap();
    let ran = d.core().counters.stats().kernels - before;
    assert!(
        text.contains(&format!("\n{ran} dispatches in all\n")),
        "{what}: {ran} ran: {text}"
    );
}

/// `explain` counts every dispatch an evaluation runs: a counted result's draw arguments,
/// the nodes a check reads (a histogram's extent, the rows a maximum of nulls keeps), and
/// no dispatch for a chunk of no rows. It had missed the first two and counted the last.
#[test]
fn explain_counts_the_dispatches_an_evaluation_runs() {
    use gputable::engine::explain;
    use gputable::ir::{Bins, ReduceKind};
    let d = WebGpu::device();
    let xs: Vec<f32> = (0..3000).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
    let chunks = [1000, 0, 2000];
    let x = chunked(ColumnData::F32(xs.clone()), 1, &chunks);
    let valid = chunked(
        ColumnData::U8((0..3000).map(|i| u8::from(i % 3 > 0)).collect()),
        1,
        &chunks,
    );
    let nullable = ir::with_validity(&x, Some(&valid)).unwrap();
    let positive =
        ir::predicate(gputable::ir::Predicate::Greater, &[x.clone(), lit(&[0.])]).unwrap();
    let auto = Bins::Equal {
        bins: 8.0,
        range: None,
    };
    let cases = [
        ("filter", ir::filter(&x, &positive).unwrap()),
        ("histogram", ir::histogram(&x, &auto, None).unwrap()),
        (
            "max",
            ir::reduce(ReduceKind::Max, &nullable, None, 4).unwrap(),
        ),
    ];
    for (name, root) in cases {
        let text = explain(&d, &root).unwrap();
        ran_as_explained(&d, &root, &text, name);
    }
}

/// Under `allowedMem`, a pass cut into row ranges stores a chunk per range: `explain`
/// counts the copies joining those chunks where a compaction reads its flags whole (it had
/// counted the flags' one declared chunk, so no copy).
#[test]
fn explain_counts_the_copies_joining_flags_cut_to_fit_the_budget() {
    use gputable::engine::explain;
    let d = new_device();
    let rows = 4000u32;
    let column = |seed: u64| {
        let mut rng = Rng(seed);
        let values: Vec<f32> = (0..rows).map(|_| rng.f32()).collect();
        f32s(&values, 1)
    };
    let (a, b, c) = (column(1), column(2), column(3));
    use gputable::ir::Predicate;
    let positive =
        |x: &NodeRef| ir::predicate(Predicate::Greater, &[x.clone(), lit(&[0.])]).unwrap();
    let both = ir::predicate(Predicate::And, &[positive(&a), positive(&b)]).unwrap();
    let mask = ir::predicate(Predicate::And, &[both, positive(&c)]).unwrap();
    let kept = ir::filter(&a, &mask).unwrap();
    let column_bytes = d.value_bytes(gputable::DType::F32, 1, rows);
    d.core().allowed_mem.set(Some(
        d.task_overhead_bytes() + 3 * column_bytes + column_bytes / 2,
    ));
    let text = explain(&d, &kept).unwrap();
    assert!(
        text.contains("chunks cut into row ranges that fit allowedMem"),
        "{text}"
    );
    assert!(text.contains("joining inputs stored in chunks"), "{text}");
    ran_as_explained(&d, &kept, &text, "cut flags");
    d.core().allowed_mem.set(None);
}

/// A compaction of at most one block of flags (4,096) is one dispatch of one workgroup,
/// its flags joined first where they are stored in chunks; one of more runs as the scan,
/// scatter and fill it is composed of (10 dispatches and more). Filters of none, half and
/// every row keep the rows a loop keeps, in order, and `explain` counts the dispatches run.
#[test]
fn a_compaction_of_one_block_is_one_dispatch() {
    use gputable::engine::explain;
    let d = WebGpu::device();
    for rows in [1u32, 255, 4096, 4097] {
        for chunks in [vec![rows], vec![rows / 3, 0, rows - rows / 3]] {
            for every in [0u64, 2, 1] {
                let mut rng = Rng(rows as u64 + every);
                let keep: Vec<u8> = (0..rows)
                    .map(|_| u8::from(every > 0 && rng.below(every) == 0))
                    .collect();
                let values: Vec<u32> = (0..rows).map(|r| r * 7 + 1).collect();
                let x = chunked(ColumnData::U32(values.clone()), 1, &chunks);
                let mask = chunked(ColumnData::U8(keep.clone()), 1, &chunks);
                let kept = ir::filter(&x, &mask).unwrap();
                let text = explain(&d, &kept).unwrap();
                let line = match rows <= 4096 {
                    true => "kernels: 1 dispatch of one workgroup (a block of at most 4096 rows)",
                    false => " dispatches of other ops",
                };
                assert!(text.contains(line), "{rows} rows: {text}");
                ran_as_explained(&d, &kept, &text, &format!("{rows} rows"));
                assert_eq!(kept.materialized_on(), Some(d.core().id));
                let expected: Vec<u32> = (values.iter().zip(&keep))
                    .filter(|(_, &k)| k != 0)
                    .map(|(&v, _)| v)
                    .collect();
                assert_eq!(read_u32(&kept), expected, "{rows} rows in {chunks:?}");
            }
        }
    }
}

/// A sort of one block's rows (at most 4,096) runs each key's passes in one dispatch of one
/// workgroup, and one of a row more the three dispatches a digit over two blocks: three
/// keys of 32, 10 and 1 bits (passes of odd and even counts, ties broken by the later keys
/// and then by row), with and without subgroups, as `explain` says and the device counts,
/// in the stable order.
#[test]
fn a_sort_of_one_block_runs_each_keys_passes_in_one_dispatch() {
    use gputable::engine::explain;
    let mut plain = pollster::block_on(WebGpu::fresh());
    plain.forgo_subgroups().unwrap();
    for d in [pollster::block_on(WebGpu::fresh()), plain] {
        for rows in [2u32, 255, 4096, 4097] {
            let mut rng = Rng(rows as u64);
            let wide: Vec<u32> = (0..rows)
                .map(|_| (rng.next() as u32 >> rng.below(32)) % 50_000)
                .collect();
            let narrow: Vec<u32> = (0..rows).map(|_| rng.below(1000) as u32).collect();
            let flag: Vec<u32> = (0..rows).map(|_| rng.below(2) as u32).collect();
            let perm = ir::lexsort_permutation(&[
                (&u32s(&wide, 1), 1 << 32),
                (&u32s(&narrow, 1), 1000),
                (&u32s(&flag, 1), 2),
            ])
            .unwrap();
            let text = explain(&d, &perm).unwrap();
            let line = match rows <= 4096 {
                true => "3 dispatches: 7 passes of an 8-bit radix sort of one block (at most 4096 rows), each key's passes in one dispatch of one workgroup".to_string(),
                false => format!("21 dispatches: 7 passes of an 8-bit radix sort (a count, a scan and a placing dispatch each, over 2 blocks of 4096 rows{})", ranked(&d)),
            };
            assert!(text.contains(&line), "{rows} rows: {text}");
            ran_as_explained(&d, &perm, &text, &format!("{rows} rows"));
            let mut expected: Vec<u32> = (0..rows).collect();
            expected.sort_by_key(|&i| (wide[i as usize], narrow[i as usize], flag[i as usize]));
            assert!(
                read_u32(&perm) == expected,
                "{rows} rows: the order differs"
            );
        }
    }
}

/// Rows read together fill staging buffers of at most 8 MB in order, each mapped once: a
/// small value, one of 12 MB (a full piece and the rest) and a small one take three waits
/// (the small one; 8 MB; the rest with the last), and each keeps its rows in order.
#[test]
fn reads_together_past_one_staging_buffer_fill_it_in_turn() {
    let d = WebGpu::device();
    let rows = 3_000_000u32;
    let large = ir::binary(
        Add,
        &u32s(&(0..rows).collect::<Vec<_>>(), 1),
        &konst(ColumnData::U32(vec![1])),
    )
    .unwrap();
    let small = ir::binary(Multiply, &f32s(&[1.5, -0.0, 3.0], 1), &lit(&[2.0])).unwrap();
    evaluate_blocking(&d, &[large.clone(), small.clone()]).unwrap();
    let (large_home, small_home) = (large.home().unwrap(), small.home().unwrap());
    let before = d.core().counters.readbacks.get();
    let reads = [(&small_home, 3), (&large_home, rows), (&small_home, 2)];
    let read = pollster::block_on(gputable::engine::read_outputs(&d, &reads)).unwrap();
    assert_eq!(d.core().counters.readbacks.get() - before, 3);
    assert_eq!(read[0], ColumnData::F32(vec![3.0, -0.0, 6.0]));
    assert_eq!(read[1], ColumnData::U32((1..=rows).collect()));
    assert_eq!(read[2], ColumnData::F32(vec![3.0, -0.0]));
}
