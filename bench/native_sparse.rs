//! W6 natively (issue 11): CSR SpMV of an m x m float32 matrix with 10 entries per row, and
//! COO (unsorted, one entry in ten a duplicate) to canonical CSR, on the WebGPU backend, the
//! WebGL2 design and the CPU backend; beside them a plain Rust loop (the native stand-in for
//! the JS loops) and, on the WebGPU adapter, a one-thread-per-row WGSL SpMV. The data match
//! `bench/sparse-workloads.js`.

use std::time::Instant;

use gputable::column::ColumnData;
use gputable::engine::{evaluate_blocking, explain, put_on, Backend};
use gputable::evaluator::read_value;
use gputable::gpu::GpuDevice;
use gputable::ir::{self, NodeRef};
use gputable::sparse::{Format, SparseMatrix};

fn xorshift(seed: u32) -> impl FnMut() -> f64 {
    let mut s = seed.max(1);
    move || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        s as f64 / 4294967296.0
    }
}

pub struct Csr {
    m: usize,
    row_ptr: Vec<u32>,
    col_val: Vec<u32>,
    nz_val: Vec<f32>,
    x: Vec<f32>,
}

pub struct Coo {
    m: usize,
    row_ind: Vec<u32>,
    col_ind: Vec<u32>,
    nz_val: Vec<f32>,
}

pub fn spmv_data(m: usize, per_row: usize) -> Csr {
    let mut next = xorshift(1);
    let nnz = m * per_row;
    let row_ptr = (0..=m).map(|i| (i * per_row) as u32).collect();
    let mut col_val = vec![0u32; nnz];
    for row in col_val.chunks_mut(per_row) {
        row.iter_mut().for_each(|c| *c = (next() * m as f64) as u32);
        row.sort_unstable();
    }
    let nz_val = (0..nnz).map(|_| (next() * 2.0 - 1.0) as f32).collect();
    let x = (0..m).map(|_| (next() * 2.0 - 1.0) as f32).collect();
    Csr {
        m,
        row_ptr,
        col_val,
        nz_val,
        x,
    }
}

pub fn coo_data(m: usize, entries: usize) -> Coo {
    let mut next = xorshift(2);
    let (mut row_ind, mut col_ind) = (vec![0u32; entries], vec![0u32; entries]);
    let mut nz_val = vec![0f32; entries];
    for k in 0..entries {
        if k % 10 == 9 {
            let from = (next() * k as f64) as usize;
            row_ind[k] = row_ind[from];
            col_ind[k] = col_ind[from];
        } else {
            row_ind[k] = (next() * m as f64) as u32;
            col_ind[k] = (next() * m as f64) as u32;
        }
        nz_val[k] = (next() * 2.0 - 1.0) as f32;
    }
    Coo {
        m,
        row_ind,
        col_ind,
        nz_val,
    }
}

/// Bytes an SpMV must move: pointers, indices, values, one x per entry, y.
fn spmv_bytes(d: &Csr) -> f64 {
    (4 * (d.m + 1) + 12 * d.col_val.len() + 4 * d.m) as f64
}

/// Bytes a conversion must move: the entries read, the CSR written.
fn convert_bytes(d: &Coo) -> f64 {
    (24 * d.row_ind.len() + 4 * (d.m + 1)) as f64
}

fn host_spmv(d: &Csr) -> Vec<f32> {
    (0..d.m)
        .map(|i| {
            let (start, end) = (d.row_ptr[i] as usize, d.row_ptr[i + 1] as usize);
            (start..end).fold(0f32, |sum, k| {
                sum + d.nz_val[k] * d.x[d.col_val[k] as usize]
            })
        })
        .collect()
}

/// COO to canonical CSR as `jsCooToCsr` does it: a counting sort by row, an insertion sort
/// of each row's columns, duplicates summed in place.
fn host_coo_to_csr(d: &Coo) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let mut row_ptr = vec![0u32; d.m + 1];
    for &r in &d.row_ind {
        row_ptr[r as usize + 1] += 1;
    }
    for i in 0..d.m {
        row_ptr[i + 1] += row_ptr[i];
    }
    let mut next = row_ptr[..d.m].to_vec();
    let (mut cols, mut vals) = (vec![0u32; d.row_ind.len()], vec![0f32; d.row_ind.len()]);
    for k in 0..d.row_ind.len() {
        let at = &mut next[d.row_ind[k] as usize];
        cols[*at as usize] = d.col_ind[k];
        vals[*at as usize] = d.nz_val[k];
        *at += 1;
    }
    let mut out = 0usize;
    for i in 0..d.m {
        let (start, end) = (row_ptr[i] as usize, row_ptr[i + 1] as usize);
        // In place, as the JS loop does (no allocation per row).
        for k in start + 1..end {
            let (c, v) = (cols[k], vals[k]);
            let mut j = k;
            while j > start && cols[j - 1] > c {
                cols[j] = cols[j - 1];
                vals[j] = vals[j - 1];
                j -= 1;
            }
            cols[j] = c;
            vals[j] = v;
        }
        row_ptr[i] = out as u32;
        for k in start..end {
            if k > start && cols[out - 1] == cols[k] {
                vals[out - 1] += vals[k];
            } else {
                cols[out] = cols[k];
                vals[out] = vals[k];
                out += 1;
            }
        }
    }
    row_ptr[d.m] = out as u32;
    cols.truncate(out);
    vals.truncate(out);
    (row_ptr, cols, vals)
}

fn resident<B: Backend>(device: &B, data: ColumnData) -> NodeRef {
    let node = ir::source(data, 1, false).expect("valid source");
    pollster::block_on(put_on(device, &node, true)).expect("uploads");
    node
}

fn f32_values(data: ColumnData) -> Vec<f32> {
    match data {
        ColumnData::F32(v) => v,
        other => panic!("expected float32, got {:?}", other.dtype()),
    }
}

/// Largest |a - b| relative to the largest |b| (SpMV sums in another order on a GPU).
fn relative_error(a: &[f32], b: &[f32]) -> f64 {
    let scale = b.iter().fold(1e-30f64, |m, v| m.max(v.abs() as f64));
    a.iter()
        .zip(b)
        .fold(0f64, |m, (x, y)| m.max((x - y).abs() as f64))
        / scale
}

/// gputable's SpMV and conversion on `device`: (SpMV ms, kernels, conversion ms), each
/// result checked against the host loops.
pub fn gputable_w6<B: Backend>(
    device: &B,
    csr: &Csr,
    coo: &Coo,
    reference: (&[f32], usize),
) -> (f64, String, f64) {
    let row_ptr = resident(device, ColumnData::U32(csr.row_ptr.clone()));
    let col_val = resident(device, ColumnData::U32(csr.col_val.clone()));
    let nz_val = resident(device, ColumnData::F32(csr.nz_val.clone()));
    let x = resident(device, ColumnData::F32(csr.x.clone()));
    let m = csr.m as u32;
    let a = pollster::block_on(SparseMatrix::compressed(
        device,
        Format::Csr,
        &row_ptr,
        &col_val,
        &nz_val,
        (m, m),
    ))
    .expect("a valid CSR matrix");
    let kernels =
        super::pass_count(&explain(device, &a.multiply(&x).expect("multiplies")).expect("plans"));
    let spmv = || {
        let y = a.multiply(&x).expect("multiplies");
        evaluate_blocking(device, std::slice::from_ref(&y)).expect("evaluates");
        f32_values(read_value(&y, None, None).expect("reads back"))
    };
    let error = relative_error(&spmv(), reference.0);
    assert!(error < 1e-4, "SpMV differs from the host loop by {error}");
    let spmv_ms = super::median(7, || {
        spmv();
    });
    let (evaluate_ms, read_ms) = super::split_ms(device, || a.multiply(&x).expect("multiplies"));
    eprintln!(
        "  SpMV on {}: build + evaluate {evaluate_ms:.2} ms, read {read_ms:.2} ms",
        device.name()
    );

    let rows = resident(device, ColumnData::U32(coo.row_ind.clone()));
    let cols = resident(device, ColumnData::U32(coo.col_ind.clone()));
    let values = resident(device, ColumnData::F32(coo.nz_val.clone()));
    let m = coo.m as u32;
    let a = pollster::block_on(SparseMatrix::coo(device, &rows, &cols, &values, (m, m)))
        .expect("a valid COO matrix");
    let convert = || {
        let csr = pollster::block_on(a.to_csr(device)).expect("converts");
        let parts = [csr.major.clone(), csr.minor.clone(), csr.values.clone()];
        evaluate_blocking(device, &parts).expect("evaluates");
        read_value(&csr.values, Some(0.0), Some(1.0)).expect("reads back");
        csr
    };
    let converted = convert();
    assert_eq!(
        converted.nnz() as usize,
        reference.1,
        "COO to CSR kept another count of distinct entries"
    );
    let convert_ms = super::median(3, || {
        convert();
    });
    describe_conversion(device, &a);
    (spmv_ms, kernels, convert_ms)
}

/// Where one conversion's time goes: `to_csr` (one evaluation, its count read back at the
/// end), then its components evaluated as roots (views of the counted rows), and the
/// device's counters over both.
fn describe_conversion<B: Backend>(device: &B, a: &SparseMatrix) {
    let before = device.core().counters.stats();
    let t = Instant::now();
    let csr = pollster::block_on(a.to_csr(device)).expect("converts");
    let counted_ms = t.elapsed().as_secs_f64() * 1e3;
    let parts = [csr.major.clone(), csr.minor.clone(), csr.values.clone()];
    evaluate_blocking(device, &parts).expect("evaluates");
    let total_ms = t.elapsed().as_secs_f64() * 1e3;
    let after = device.core().counters.stats();
    eprintln!(
        "  conversion on {}: {counted_ms:.1} ms in toCSR, {:.1} ms evaluating its components; {} kernels, {} allocations, {} new pipelines, {} bytes read back",
        device.name(),
        total_ms - counted_ms,
        after.kernels - before.kernels,
        after.allocations - before.allocations,
        after.pipelines - before.pipelines,
        after.readback_bytes - before.readback_bytes
    );
}

const NAIVE_SPMV: &str = include_str!("naive-spmv.wgsl");

/// The one-thread-per-row WGSL SpMV a user would write, on gputable's own wgpu device: one
/// dispatch, y copied to a mappable buffer and read. Median ms, checked against `reference`.
pub fn naive_wgsl_spmv(gpu: &GpuDevice, d: &Csr, reference: &[f32]) -> f64 {
    use wgpu::util::DeviceExt;
    let device = &gpu.device;
    let upload = |bytes: &[u8]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytes,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let bytes = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let inputs = [
        upload(&bytes(&d.row_ptr)),
        upload(&bytes(&d.col_val)),
        upload(&floats(&d.nz_val)),
        upload(&floats(&d.x)),
    ];
    let size = 4 * d.m as u64;
    let y = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(NAIVE_SPMV.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let entries: Vec<wgpu::BindGroupEntry> = inputs
        .iter()
        .chain([&y])
        .enumerate()
        .map(|(binding, buffer)| wgpu::BindGroupEntry {
            binding: binding as u32,
            resource: buffer.as_entire_binding(),
        })
        .collect();
    let bindings = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let groups = d.m.div_ceil(64) as u32;
    let (gx, gy) = match groups > 65535 {
        true => (65535, groups.div_ceil(65535)),
        false => (groups, 1),
    };
    let run = || {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bindings, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        }
        encoder.copy_buffer_to_buffer(&y, 0, &read, 0, size);
        gpu.queue.submit([encoder.finish()]);
        read.slice(..)
            .map_async(wgpu::MapMode::Read, |r| r.expect("maps"));
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("waits");
        let out: Vec<f32> = read
            .slice(..)
            .get_mapped_range()
            .expect("a mapped range")
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        read.unmap();
        out
    };
    let error = relative_error(&run(), reference);
    assert!(error < 1e-4, "the naive WGSL SpMV differs by {error}");
    let ms = super::median(7, || {
        run();
    });
    inputs.iter().chain([&y, &read]).for_each(|b| b.destroy());
    ms
}

/// Prints W6's table: gputable on each device beside the host loops and the naive WGSL SpMV.
pub fn run(gpu: &GpuDevice, gl: Option<&gputable::gl::GlDevice>, m: usize, entries: usize) {
    let csr = spmv_data(m, 10);
    let coo = coo_data(m, entries);
    let host_spmv_ms = super::median(7, || {
        host_spmv(&csr);
    });
    let reference = host_spmv(&csr);
    let host_convert_ms = super::median(3, || {
        host_coo_to_csr(&coo);
    });
    let distinct = host_coo_to_csr(&coo).1.len();
    let naive_ms = naive_wgsl_spmv(gpu, &csr, &reference);
    let (sb, cb) = (spmv_bytes(&csr), convert_bytes(&coo));
    let gbps = |bytes: f64, ms: f64| bytes / ms / 1e6;
    println!(
        "\n# W6 sparse, native: SpMV {m} x {m} (10 per row), COO of {entries} entries to CSR\n"
    );
    println!("| engine | SpMV ms | SpMV GB/s | kernels | COO to CSR ms | conversion GB/s |");
    println!("|---|---|---|---|---|---|");
    let row = |name: &str, (spmv, kernels, convert): (f64, String, f64)| {
        println!(
            "| {name} | {spmv:.2} | {:.1} | {kernels} | {convert:.1} | {:.2} |",
            gbps(sb, spmv),
            gbps(cb, convert)
        );
    };
    println!(
        "| one-thread-per-row WGSL (same adapter) | {naive_ms:.2} | {:.1} | 1 dispatch | — | — |",
        gbps(sb, naive_ms)
    );
    println!(
        "| Rust loop (host; the JS loops' native stand-in) | {host_spmv_ms:.2} | {:.1} | — | {host_convert_ms:.1} | {:.2} |",
        gbps(sb, host_spmv_ms),
        gbps(cb, host_convert_ms)
    );
    row(
        &format!("gputable WebGPU ({})", gpu.adapter_name),
        gputable_w6(gpu, &csr, &coo, (&reference, distinct)),
    );
    row(
        "gputable CPU backend",
        gputable_w6(
            &gputable::cpu::CpuDevice::shared(),
            &csr,
            &coo,
            (&reference, distinct),
        ),
    );
    match gl {
        Some(gl) => row(
            &format!("gputable WebGL2 design ({})", gl.adapter_name),
            gputable_w6(gl, &csr, &coo, (&reference, distinct)),
        ),
        None => println!("| gputable WebGL2 design | no GL adapter | | | | |"),
    }
}
