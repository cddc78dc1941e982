//! `npm run bench` (native part): W1, W2, W4, W5 on the WebGPU backend over Vulkan (lavapipe
//! on machines without a GPU) and the WebGL2 design over GL (llvmpipe), next to the CPU
//! backend, in one process, then W6 (sparse, `native_sparse.rs`). Prints tables.
//! `BENCH_GPU_ROWS`, `BENCH_SPARSE_ROWS` and `BENCH_SPARSE_ENTRIES` size them;
//! `BENCH_SORT_PAIRS` (pair counts, comma-separated; none by default) adds the sort of
//! uint32 key-value pairs that `scripts/gpu-check.sh` times on a real GPU, and `topK(10)` of
//! as many float32 rows beside the first 10 rows of their whole sort.

mod native_sparse;

use std::time::Instant;

use gputable::column::ColumnData;
use gputable::engine::{evaluate_blocking, explain, Backend};
use gputable::evaluator::{evaluate, read_value};
use gputable::gl::GlDevice;
use gputable::gpu::GpuDevice;
use gputable::ir::{self, BinaryOp, NodeRef, UnaryOp};

fn random(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32) * 200.0 - 100.0
        })
        .collect()
}

fn source(values: Vec<f32>, size: u32) -> NodeRef {
    ir::source(ColumnData::F32(values), size, false).expect("valid source")
}

fn constant(values: &[f32]) -> NodeRef {
    ir::source(ColumnData::F32(values.to_vec()), values.len() as u32, true).expect("valid constant")
}

/// `explain()`'s count of kernels ("N dispatches/draws in all"), without "in all".
fn pass_count(explain: &str) -> String {
    explain
        .lines()
        .find(|line| line.ends_with(" in all"))
        .unwrap_or("—")
        .replace(" in all", "")
}

/// Median ms of `reps` runs of `run` after a warm-up run.
fn median(reps: usize, mut run: impl FnMut()) -> f64 {
    run();
    let samples: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    middle(samples)
}

/// The median of `samples`.
fn middle(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// A size from the environment (`1e6` or `1000000`), else `default`.
fn size_from_env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(default, |v| v as usize)
}

/// Median ms of the two halves of `evaluate + read`: building the graph and evaluating it
/// (on a GPU this returns once the work is submitted), and reading it back (which waits for
/// the device), for telling submit overhead from device time.
fn split_ms<B: Backend>(device: &B, build: impl Fn() -> NodeRef) -> (f64, f64) {
    let (mut evaluated, mut read) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        let t = Instant::now();
        let r = build();
        evaluate_blocking(device, std::slice::from_ref(&r)).expect("evaluates");
        let middle = Instant::now();
        read_value(&r, None, None).expect("reads back");
        evaluated.push((middle - t).as_secs_f64() * 1e3);
        read.push(middle.elapsed().as_secs_f64() * 1e3);
    }
    (middle(evaluated), middle(read))
}

fn main() {
    let rows = size_from_env("BENCH_GPU_ROWS", 1_000_000);
    let device = GpuDevice::new_blocking().expect("a WebGPU adapter");
    // Without a GL adapter (NVIDIA's headless EGL refused one), the WebGL2 columns say why.
    let gl_device = GlDevice::new_blocking().map_err(|e| e.message);
    let xyz = source(random(3 * rows, 1), 3);
    let x = source(random(rows, 2), 1);
    let y = source(random(rows, 3), 1);
    type Build = Box<dyn Fn() -> NodeRef>;
    let workloads: Vec<(&str, usize, Build)> = vec![
        ("W1 add(xyz, [10,20,30], 1)", 24, {
            let xyz = xyz.clone();
            Box::new(move || {
                ir::fold_binary(
                    BinaryOp::Add,
                    &[xyz.clone(), constant(&[10., 20., 30.]), constant(&[1.])],
                )
                .unwrap()
            })
        }),
        ("W2 sqrt(x*x + y*y)", 12, {
            let (x, y) = (x.clone(), y.clone());
            Box::new(move || {
                let xx = ir::binary(BinaryOp::Multiply, &x, &x).unwrap();
                let yy = ir::binary(BinaryOp::Multiply, &y, &y).unwrap();
                ir::unary(UnaryOp::Sqrt, &ir::binary(BinaryOp::Add, &xx, &yy).unwrap()).unwrap()
            })
        }),
        ("W4 extent(xyz)", 12, {
            let xyz = xyz.clone();
            Box::new(move || ir::extent(&xyz).unwrap())
        }),
        ("W5 sin(x)", 8, {
            let x = x.clone();
            Box::new(move || ir::unary(UnaryOp::Sin, &x).unwrap())
        }),
    ];
    println!(
        "# gputable GPU benchmark, native: WebGPU on {}, WebGL2 design on {} ({rows} rows)",
        device.adapter_name,
        gl_device
            .as_ref()
            .map_or("no GL adapter", |gl| gl.adapter_name.as_str())
    );
    println!(
        "median ms of evaluate + readback on the device; the native CPU backend beside them\n"
    );
    println!(
        "| workload | webgpu ms | dispatches | webgl ms | draws | cpu (native) ms | GB/s webgpu |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, bytes_per_row, build) in &workloads {
        let dispatches = pass_count(&explain(&device, &build()).expect("plans"));
        let gpu_ms = median(7, || {
            let r = build();
            evaluate_blocking(&device, std::slice::from_ref(&r)).expect("evaluates");
            read_value(&r, None, None).expect("reads back");
        });
        let (evaluate_ms, read_ms) = split_ms(&device, build);
        eprintln!("  {name} on webgpu: build + evaluate {evaluate_ms:.2} ms, read {read_ms:.2} ms");
        let (gl_ms, draws) = match &gl_device {
            Ok(gl) => {
                let ms = median(7, || {
                    let r = build();
                    evaluate_blocking(gl, std::slice::from_ref(&r)).expect("evaluates");
                    read_value(&r, None, None).expect("reads back");
                });
                let draws = pass_count(&explain(gl, &build()).expect("plans"));
                (format!("{ms:.1}"), draws)
            }
            Err(_) => ("—".to_string(), "—".to_string()),
        };
        let cpu_ms = median(7, || {
            evaluate(&build()).expect("evaluates");
        });
        let gbps = (*bytes_per_row * rows) as f64 / gpu_ms / 1e6;
        println!(
            "| {name} | {gpu_ms:.1} | {dispatches} | {gl_ms} | {draws} | {cpu_ms:.1} | {gbps:.2} |"
        );
    }
    if let Ok(counts) = std::env::var("BENCH_SORT_PAIRS") {
        let counts: Vec<usize> = (counts.split(','))
            .filter_map(|c| c.trim().parse::<f64>().ok())
            .map(|c| c as usize)
            .collect();
        sort_pairs(&device, &counts);
        top_k(&device, "webgpu", &counts);
        if let Ok(gl) = &gl_device {
            top_k(gl, "webgl2 (GL)", &counts);
        }
    }
    native_sparse::run(
        &device,
        gl_device.as_ref().ok(),
        size_from_env("BENCH_SPARSE_ROWS", 1_000_000),
        // The 10M entries (BENCH_SPARSE_ENTRIES=1e7) take minutes per conversion on
        // software adapters; 1M by default, as in the browser bench.
        size_from_env("BENCH_SPARSE_ENTRIES", 1_000_000),
    );
}

/// Sorts `n` random uint32 keys with a uint32 payload (the permutation, then the payload
/// gathered by it) on the WebGPU backend, timed to the end of the device's work (one row is
/// read back), beside the CPU backend and `sort_unstable_by_key` on pairs. Keys of all 32
/// bits, and of 10 (a thousand distinct values, as group ids or dictionary codes: the high
/// digits repeat in every row); the WebGPU sort ranks rows by subgroup ballots where the
/// device has subgroups, and is also timed on a device that forgoes them.
fn sort_pairs(device: &GpuDevice, counts: &[usize]) {
    let mut workgroup_ballots = GpuDevice::new_blocking().expect("a second WebGPU device");
    workgroup_ballots.forgo_subgroups().expect("a fresh device");
    let subgroups = match device.limits.subgroup_min_size {
        Some(size) => format!("subgroups of {size}"),
        None => "no subgroups".to_string(),
    };
    println!("\n| sort of uint32 key-value pairs | webgpu ms ({subgroups}) | G pairs/s | dispatches | webgpu ms, workgroup ballots | cpu (native) ms | Rust sort ms |");
    println!("|---|---|---|---|---|---|---|");
    for &n in counts {
        for key_bits in [32, 10] {
            let mut s = 0x9e37_79b9u32;
            let keys: Vec<u32> = (0..n)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 17;
                    s ^= s << 5;
                    s >> (32 - key_bits)
                })
                .collect();
            sort_pairs_of(device, &workgroup_ballots, &keys, key_bits);
        }
    }
}

fn sort_pairs_of(device: &GpuDevice, workgroup_ballots: &GpuDevice, keys: &[u32], key_bits: u32) {
    let n = keys.len();
    let values: Vec<u32> = (0..n as u32).collect();
    let (key_node, value_node) = (
        ir::source(ColumnData::U32(keys.to_vec()), 1, false).expect("keys"),
        ir::source(ColumnData::U32(values.clone()), 1, false).expect("values"),
    );
    let build = || {
        let (perm, sorted) = ir::sort_permutation(&key_node).expect("sorts");
        (ir::gather(&perm, &value_node).expect("gathers"), sorted)
    };
    let run_on = |on: &dyn Fn(&[NodeRef])| {
        median(3, || {
            let (payload, sorted) = build();
            on(&[payload.clone(), sorted]);
            // One row read: waits for the device's work, moves 4 bytes.
            read_value(&payload, Some(0.0), Some(1.0)).expect("reads");
        })
    };
    let gpu_ms = run_on(&|roots| evaluate_blocking(device, roots).expect("evaluates"));
    let ballots_ms =
        run_on(&|roots| evaluate_blocking(workgroup_ballots, roots).expect("evaluates"));
    let dispatches = pass_count(&explain(device, &build().0).expect("plans"));
    let cpu = gputable::cpu::CpuDevice::default();
    let cpu_ms = run_on(&|roots| evaluate_blocking(&cpu, roots).expect("evaluates"));
    let rust_ms = median(3, || {
        let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
        pairs.sort_by_key(|p| p.0);
        std::hint::black_box(&pairs);
    });
    // The order is checked once on each device: keys ascending, each payload the row of its
    // key, ties in row order.
    for on in [device, workgroup_ballots] {
        let (payload, sorted) = build();
        evaluate_blocking(on, &[payload.clone(), sorted.clone()]).expect("evaluates");
        let (ColumnData::U32(p), ColumnData::U32(k)) = (
            read_value(&payload, None, None).expect("reads"),
            read_value(&sorted, None, None).expect("reads"),
        ) else {
            panic!("uint32 outputs");
        };
        let stable = p
            .windows(2)
            .zip(k.windows(2))
            .all(|(p, k)| k[0] < k[1] || (k[0] == k[1] && p[0] < p[1]));
        let ordered = stable
            && p.iter()
                .zip(&k)
                .all(|(&row, &key)| keys[row as usize] == key);
        assert!(ordered, "the WebGPU sort of {n} pairs is not in order");
    }
    println!(
        "| {n} pairs, {key_bits}-bit keys | {gpu_ms:.1} | {:.3} | {dispatches} | {ballots_ms:.1} | {cpu_ms:.1} | {rust_ms:.1} |",
        n as f64 / gpu_ms / 1e6
    );
}

/// `topK(x, 10)` of `n` float32 rows on `device` (`name`: each run's first rows kept in one
/// pass, then those alone sorted), beside the first 10 rows of the whole sort, timed to the
/// end of the device's work (the 10 rows read back); the rows are checked to agree.
fn top_k<B: Backend>(device: &B, name: &str, counts: &[usize]) {
    println!("\n| topK(10) of float32 rows | {name} topK ms | passes | whole sort's first 10 ms | passes |");
    println!("|---|---|---|---|---|");
    for &n in counts {
        let x = source(random(n, 7), 1);
        let top = || ir::top_k(&x, 10.0, true).expect("topK").1;
        let whole = || {
            let order = ir::argsort(std::slice::from_ref(&x), &[true], ir::Nulls::Last);
            ir::slice(&order.expect("argsort"), 0.0, 10.0).expect("slices")
        };
        let time = |build: &dyn Fn() -> NodeRef| {
            median(3, || {
                let rows = build();
                evaluate_blocking(device, std::slice::from_ref(&rows)).expect("evaluates");
                read_value(&rows, None, None).expect("reads");
            })
        };
        let passes =
            |build: &dyn Fn() -> NodeRef| pass_count(&explain(device, &build()).expect("plans"));
        let (top_ms, whole_ms) = (time(&top), time(&whole));
        let (a, b) = (top(), whole());
        evaluate_blocking(device, &[a.clone(), b.clone()]).expect("evaluates");
        let same = read_value(&a, None, None).expect("reads")
            == read_value(&b, None, None).expect("reads");
        assert!(
            same,
            "topK(10) of {n} rows differs from the sort's first 10"
        );
        println!(
            "| {n} rows | {top_ms:.1} | {} | {whole_ms:.1} | {} |",
            passes(&top),
            passes(&whole)
        );
    }
}
