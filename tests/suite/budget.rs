//! The memory budget (api.md "Chunked evaluation": `allowedMem`): a task projected over it is
//! refused before any kernel runs; within it, chunks stream through the device and the peak
//! stays within it.

use super::*;
use gputable::engine;
use gputable::ir::ReduceKind;
use gputable::DType;
use std::rc::Rc;

pub async fn a_memory_budget_refuses_or_streams<T: Target>() {
    let device = T::fresh().await;
    let (chunk_rows, chunks) = (32_768u32, 8usize);
    let xs: Vec<f32> = (0..chunk_rows as usize * chunks)
        .map(|i| i as f32)
        .collect();
    let source = || chunked(ColumnData::F32(xs.clone()), 1, &vec![chunk_rows; chunks]);
    let graph = |x: &NodeRef| ir::binary(Add, &ir::unary(Sqrt, x).unwrap(), &lit(&[1.])).unwrap();
    let chunk_bytes = device.value_bytes(DType::F32, 1, chunk_rows);
    // A task holds its input part, its output chunk and the output's read-back copy.
    let allowed = 3 * chunk_bytes + device.task_overhead_bytes();

    // Too small for a task of one row: refused before anything runs, naming both numbers.
    let too_small = device.task_overhead_bytes();
    device.core().allowed_mem.set(Some(too_small));
    let refused = graph(&source());
    let kernels = device.core().counters.stats().kernels;
    let error = engine::evaluate(&device, std::slice::from_ref(&refused))
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
    assert!(
        error
            .message
            .contains(&format!("allowedMem is {too_small}")),
        "{error}"
    );
    assert_eq!(
        device.core().counters.stats().kernels,
        kernels,
        "nothing ran"
    );
    let text = engine::explain(&device, &refused).unwrap();
    assert!(text.contains("refused"), "{text}");

    // Within the budget: eight chunks stream through, and the output stays on the host.
    // Under two chunks' bytes and the overhead (a chunk's task needs three), the row-local
    // pass is cut into row ranges that fit (WebGL2 textures hold half a chunk at least), and
    // the host joins them back into the eight chunks.
    for allowed in [allowed, 2 * chunk_bytes + device.task_overhead_bytes()] {
        device.core().allowed_mem.set(Some(allowed));
        let streamed = graph(&source());
        let text = engine::explain(&device, &streamed).unwrap();
        assert!(
            text.contains(&format!("allowedMem {allowed} bytes: fits")),
            "{text}"
        );
        // The CPU reads its input in place: a chunk's task holds only its output twice.
        let cut = text.contains("row ranges that fit allowedMem");
        assert_eq!(cut, T::TRANSFERS && allowed < 3 * chunk_bytes, "{text}");
        device.core().counters.reset_peak();
        engine::evaluate(&device, std::slice::from_ref(&streamed))
            .await
            .unwrap();
        let peak = device.core().counters.memory().peak_bytes;
        assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
        let home = streamed.home().unwrap();
        assert!(
            home.in_host_memory(),
            "an output past half the budget stays on the host"
        );
        assert_eq!(home.chunks.len(), chunks);
        assert!(device.core().counters.stats().kernels >= kernels + chunks as u64);

        // The same work unbounded, for the values.
        device.core().allowed_mem.set(None);
        let unbounded = graph(&source());
        engine::evaluate(&device, std::slice::from_ref(&unbounded))
            .await
            .unwrap();
        assert_eq!(read_f32(&streamed).await, read_f32(&unbounded).await);
        assert_eq!(
            unbounded.home().unwrap().device,
            device.core().id,
            "unbounded, the output stays on the device"
        );
    }
}

/// api.md's memory rule: row-local work over a chunk too large for `allowedMem` is cut into
/// row ranges that fit, host inputs copied a range at a time. A one-chunk 4 MB column summed
/// (and scaled) under a 1 MiB budget was `LIMIT_EXCEEDED` on WebGPU and WebGL2; it runs in
/// row ranges, within the budget, and matches the unbounded results. A gather source that
/// must be bound whole cannot be cut: it is still refused, naming both numbers.
pub async fn row_local_work_is_cut_into_row_ranges_that_fit<T: Target>() {
    let device = T::fresh().await;
    let rows = 1usize << 20;
    let values: Vec<f32> = (0..rows).map(|i| (i % 7) as f32).collect();
    let budget = 1u64 << 20;
    let build = || {
        let column = f32s(&values, 1);
        let sum = ir::reduce(ReduceKind::Sum, &column, None, 4).unwrap();
        let scaled = ir::binary(Multiply, &column, &lit(&[3.])).unwrap();
        (sum, scaled)
    };
    let (sum, scaled) = build();
    device.core().allowed_mem.set(Some(budget));
    for root in [&sum, &scaled] {
        let text = engine::explain(&device, root).unwrap();
        assert!(
            text.contains(&format!("allowedMem {budget} bytes: fits")),
            "{text}"
        );
        device.core().counters.reset_peak();
        let before = device.core().counters.memory().live_bytes;
        let listed = engine::evaluate_listed(&device, std::slice::from_ref(root))
            .await
            .unwrap();
        let peak = device.core().counters.memory().peak_bytes - before;
        assert!(
            peak <= budget,
            "peak {peak} over allowedMem {budget}:\n{text}"
        );
        assert!(
            peak <= listed.projected_peak,
            "peak {peak} over the projection:\n{text}"
        );
        assert_eq!(listed.ran, listed.listed);
        let tasks = (listed.ran.iter())
            .filter(|s| matches!(s, engine::Step::Task { .. }))
            .count();
        // A GPU device copies the column a range at a time; the CPU reads it in place, and
        // only the scaled column's output (read back as it is made) needs cutting there.
        match T::TRANSFERS || Rc::ptr_eq(root, &scaled) {
            true => assert!(
                tasks > 1 && text.contains("row ranges that fit allowedMem"),
                "{tasks} tasks:\n{text}"
            ),
            false => assert_eq!(tasks, 1, "{text}"),
        }
    }
    // The scaled column (4 MB) stays on the host, in its one chunk.
    let home = scaled.home().unwrap();
    assert!(home.in_host_memory() && home.chunks.len() == 1);
    device.core().allowed_mem.set(None);
    let (unbounded_sum, unbounded_scaled) = build();
    engine::evaluate(&device, &[unbounded_sum.clone(), unbounded_scaled.clone()])
        .await
        .unwrap();
    assert_eq!(read_f32(&sum).await, read_f32(&unbounded_sum).await);
    assert_eq!(read_f32(&scaled).await, read_f32(&unbounded_scaled).await);

    // A gather from the whole column (its source bound whole) cannot be cut to fit.
    device.core().allowed_mem.set(Some(budget));
    let ids = u32s(&[5, 0, 3], 1);
    let gathered = ir::gather(
        &ids,
        &ir::binary(Add, &f32s(&values, 1), &lit(&[1.])).unwrap(),
    );
    let error = engine::evaluate(&device, std::slice::from_ref(&gathered.unwrap()))
        .await
        .unwrap_err();
    device.core().allowed_mem.set(None);
    assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
    assert!(
        error.message.contains(&format!("allowedMem is {budget}")),
        "{error}"
    );
}

/// Random graphs over chunked sources, on a device whose bindings (or textures) hold few
/// rows, under budgets from none to too small: the executor takes exactly the steps its
/// schedule lists (passes, chunk tasks, frees), the device's peak stays within the projected
/// peak, and the values match the CPU's; a graph the projection refuses is refused before
/// any kernel runs.
pub async fn the_executor_runs_the_schedule_it_lists<T: Target>() {
    let device = T::capped().await;
    let counters = device.core().counters.clone();
    let mut rng = Rng(0x5c4e_d01e);
    let (mut ran, mut refused, mut cut, mut fitted) = (0, 0, 0, 0);
    for graph in 0..200 {
        let roots = random_graph_chunked(&mut rng.clone(), false, true);
        let whole = random_graph_chunked(&mut rng, false, false);
        if roots.is_empty() {
            continue;
        }
        // Graphs the contract refuses are `random_graphs_match_the_cpu`'s.
        let Ok(expected) = oracle(&whole).await else {
            continue;
        };
        device.core().allowed_mem.set(None);
        let ample = engine::schedule_of(&device, &roots).unwrap().peak();
        // Every task holds its overhead: budgets cut into what the graph needs past it.
        let needed = ample.saturating_sub(device.task_overhead_bytes());
        let budget = match graph % 4 {
            0 => None,
            k => Some(device.task_overhead_bytes() + needed * (4 - k) / 3),
        };
        device.core().allowed_mem.set(budget);
        let schedule = engine::schedule_of(&device, &roots).unwrap();
        // Shown only if this graph fails.
        for root in &roots {
            let text = engine::explain(&device, root).unwrap_or_default();
            eprintln!("graph {graph} under {budget:?}: {text}");
        }
        let cut_to_fit = (schedule.passes.iter()).any(|p| p.cut == Some(engine::Cut::Budget));
        drop(schedule);
        let kernels = counters.stats().kernels;
        counters.reset_peak();
        let before = counters.memory().live_bytes;
        match engine::evaluate_listed(&device, &roots).await {
            Ok(listed) => {
                let peak = counters.memory().peak_bytes - before;
                assert_eq!(listed.ran, listed.listed, "graph {graph} under {budget:?}");
                assert!(
                    peak <= listed.projected_peak,
                    "graph {graph} under {budget:?}: peak {peak} over the projected {}",
                    listed.projected_peak
                );
                if let Some(budget) = budget {
                    assert!(peak <= budget, "graph {graph}: peak {peak} over {budget}");
                }
                device.core().allowed_mem.set(None);
                assert_values(&roots, &expected, Tolerance::Scaled(1e-4)).await;
                let tasks = (listed.ran.iter())
                    .filter(|s| matches!(s, engine::Step::Task { .. }))
                    .count();
                let passes = (listed.ran.iter())
                    .filter(|s| matches!(s, engine::Step::Pass(_)))
                    .count();
                cut += usize::from(tasks > passes);
                fitted += usize::from(cut_to_fit);
                ran += 1;
            }
            Err(error) => {
                assert_eq!(
                    error.code,
                    ErrorCode::LimitExceeded,
                    "graph {graph}: {error}"
                );
                // Over the budget is projected; a value past the capped binding (a view's
                // chunk joined from parts, say) is found where it is made.
                if error.message.contains("allowedMem") {
                    assert_eq!(counters.stats().kernels, kernels, "graph {graph}: {error}");
                    refused += 1;
                }
            }
        }
        device.core().allowed_mem.set(None);
    }
    assert!(ran >= 50, "only {ran} graphs ran");
    assert!(cut >= 20, "only {cut} graphs ran more tasks than passes");
    assert!(
        fitted >= 3,
        "only {fitted} graphs were cut to fit the budget"
    );
    assert!(refused > 0, "no graph was refused");
}

/// A pass's earlier chunks stay on the device while it makes the next: each task's
/// projection counts them.
pub async fn the_projection_counts_a_pass_s_earlier_chunks<T: Target>() {
    let device = T::fresh().await;
    let x = chunked(ColumnData::F32(vec![1.; 4096]), 1, &[1024; 4]);
    let r = ir::unary(Sqrt, &x).unwrap();
    let schedule = engine::schedule_of(&device, std::slice::from_ref(&r)).unwrap();
    let tasks: Vec<u64> = schedule.passes[0].tasks.iter().map(|t| t.bytes).collect();
    assert_eq!(tasks.len(), 4);
    let chunk = device.value_bytes(DType::F32, 1, 1024);
    for pair in tasks.windows(2) {
        assert_eq!(pair[1] - pair[0], chunk, "{tasks:?}");
    }
}

/// A reduction of a column larger than the budget streams it a chunk at a time: each task
/// holds one chunk's part and the small partial states, and the peak stays within it.
pub async fn a_reduction_streams_a_column_larger_than_the_budget<T: Target>() {
    let device = T::fresh().await;
    let (chunk_rows, chunks) = (32_768u32, 8usize);
    let xs: Vec<f32> = (0..chunk_rows as usize * chunks)
        .map(|i| (i % 8) as f32)
        .collect();
    let source = || chunked(ColumnData::F32(xs.clone()), 1, &vec![chunk_rows; chunks]);
    let graph = |x: &NodeRef| {
        let kind = gputable::ir::ReduceKind::Sum;
        ir::reduce(
            kind,
            &ir::binary(Multiply, x, &lit(&[2.])).unwrap(),
            None,
            4,
        )
        .unwrap()
    };
    let chunk_bytes = device.value_bytes(DType::F32, 1, chunk_rows);
    let allowed = 2 * chunk_bytes + device.task_overhead_bytes();
    device.core().allowed_mem.set(Some(allowed));
    let streamed = graph(&source());
    let text = engine::explain(&device, &streamed).unwrap();
    assert!(text.contains("fits"), "{text}");
    device.core().counters.reset_peak();
    engine::evaluate(&device, std::slice::from_ref(&streamed))
        .await
        .unwrap();
    let peak = device.core().counters.memory().peak_bytes;
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    assert!(
        chunk_bytes as usize * chunks > 3 * allowed as usize,
        "the column is over three times the budget"
    );
    let expected: f64 = xs.iter().map(|&v| 2.0 * v as f64).sum();
    assert_eq!(read_f32(&streamed).await, vec![expected as f32]);
    assert_eq!(streamed.home().unwrap().device, device.core().id);
}

/// api.md "Memory": masked reductions stream chunk by chunk like elementwise work. Every
/// reduction with a `where` over a column several times `allowedMem` runs within it and
/// matches the unbounded one; all but `sum` stored their kept-row flags whole (read by the
/// reduction and by the count that finds no kept row) and were `LIMIT_EXCEEDED`.
pub async fn every_masked_reduction_streams_under_the_budget<T: Target>() {
    let device = T::fresh().await;
    let rows = 1_500_000usize;
    // Small integers: every order of a float sum is exact.
    let xs: Vec<f32> = (0..rows).map(|i| (i % 5) as f32).collect();
    let ys: Vec<u32> = (0..rows).map(|i| (i * 13 % 7) as u32).collect();
    let build = |kind| {
        let mask = ir::predicate(ir::Predicate::Greater, &[u32s(&ys, 1), lit(&[3.])]).unwrap();
        ir::reduce_where(kind, &f32s(&xs, 1), None, &mask, None, 4).unwrap()
    };
    // Room for ranges of 16,384 rows, WebGL2's texture rows, and their partial states.
    let budget = 16 * device.value_bytes(DType::F32, 1, 16_384) + device.task_overhead_bytes();
    let flags_bytes = device.value_bytes(DType::U8, 1, rows as u32);
    assert!(
        flags_bytes > budget,
        "the kept-row flags alone are over the budget"
    );
    for kind in ReduceKind::ALL {
        device.core().allowed_mem.set(Some(budget));
        let root = build(kind);
        device.core().counters.reset_peak();
        let before = device.core().counters.memory().live_bytes;
        engine::evaluate(&device, std::slice::from_ref(&root))
            .await
            .unwrap_or_else(|e| panic!("{} where: {e}", kind.name()));
        let peak = device.core().counters.memory().peak_bytes - before;
        assert!(peak <= budget, "{}: peak {peak} over {budget}", kind.name());
        device.core().allowed_mem.set(None);
        let unbounded = build(kind);
        engine::evaluate(&device, std::slice::from_ref(&unbounded))
            .await
            .unwrap();
        assert_eq!(
            reduce::as_f64(&read(&root).await),
            reduce::as_f64(&read(&unbounded).await),
            "{} where",
            kind.name()
        );
    }
}

/// A sort of host keys (one stored in chunks) under a budget: the keys stay on the host
/// until the sort reads them (WebGPU uploads them and joins the chunked one for its native
/// sort), the peak stays within the budget, and the order is the unbounded one.
pub async fn a_sort_of_host_keys_stays_within_the_budget<T: Target>() {
    let device = T::fresh().await;
    let rows = 30_000u32;
    let first = hashed_keys(rows, 20);
    let second: Vec<u32> = (0..rows).map(|i| (i * 7) % 11).collect();
    let first_node = chunked(ColumnData::U32(first.clone()), 1, &[10_000, 5_000, 15_000]);
    let second_node = u32s(&second, 1);
    let perm = ir::lexsort_permutation(&[(&first_node, 1 << 12), (&second_node, 11)]).unwrap();
    let allowed = 16 * device.value_bytes(DType::U32, 1, rows) + device.task_overhead_bytes();
    device.core().allowed_mem.set(Some(allowed));
    let text = engine::explain(&device, &perm).unwrap();
    assert!(text.contains("fits"), "{text}");
    device.core().counters.reset_peak();
    engine::evaluate(&device, std::slice::from_ref(&perm))
        .await
        .unwrap();
    let peak = device.core().counters.memory().peak_bytes;
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    device.core().allowed_mem.set(None);
    let mut expected: Vec<u32> = (0..rows).collect();
    expected.sort_by_key(|&i| (first[i as usize], second[i as usize]));
    assert_eq!(read_u32(&perm).await, expected);
}

/// `rows` keys scattered over `32 - shift` bits (Knuth's multiplicative hash of the row).
fn hashed_keys(rows: u32, shift: u32) -> Vec<u32> {
    (0..rows)
        .map(|i| i.wrapping_mul(2_654_435_761) >> shift)
        .collect()
}

/// `explain`'s text for `root` on `device`, its largest per-task projection, and the peak
/// device memory evaluating `root` then took beyond what was live before.
async fn projected_and_peak<B: Backend>(device: &B, root: &NodeRef) -> (String, u64, u64) {
    let text = engine::explain(device, root).unwrap();
    let projected = (text.lines())
        .filter_map(|l| l.split_once("projected device memory: at most "))
        .filter_map(|(_, bytes)| bytes.split(' ').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    let counters = &device.core().counters;
    counters.reset_peak();
    let before = counters.memory().live_bytes;
    engine::evaluate(device, std::slice::from_ref(root))
        .await
        .unwrap();
    let peak = counters.memory().peak_bytes - before;
    (text, projected, peak)
}

/// A sort whose permutation no later pass reads (its pass also wrote the only key read
/// through it, on the CPU) frees the permutation after its pass, and every pass stays
/// within the memory `explain` projects for it (on WebGPU, with the sort's working arrays,
/// which its batch keeps).
pub async fn a_permutation_nobody_reads_is_freed_after_its_pass<T: Target>() {
    let device = T::fresh().await;
    let rows = 40_000u32;
    let keys = hashed_keys(rows, 16);
    let key = u32s(&keys, 1);
    let (_, sorted) = ir::sort_permutation_below(&key, 1 << 16).unwrap();
    // The pass after the sort holds more than the sort's (eight lanes a row), so the
    // permutation held past its pass would take the peak over the projection.
    let lanes: Vec<NodeRef> = (1..=8)
        .map(|k| ir::binary(Multiply, &sorted, &ir::u32_constant(k).unwrap()).unwrap())
        .collect();
    let doubled = ir::interleave(&lanes).unwrap();
    let (text, projected, peak) = projected_and_peak(&device, &doubled).await;
    // On WebGPU the sort's working arrays stay held until the batch is submitted: the
    // projection of the later pass counts them (the peak passed it by 428,608 bytes).
    assert!(
        peak <= projected,
        "peak {peak} over the projected {projected}:\n{text}"
    );
    let mut expected = keys.clone();
    expected.sort();
    let expected: Vec<u32> = expected
        .iter()
        .flat_map(|k| (1..=8).map(move |m| k * m))
        .collect();
    assert_eq!(read_u32(&doubled).await, expected);
}

/// A reduction's partial states stay held as long as the device keeps them (WebGPU: until
/// its batch is submitted), and inputs copied from the host stay on the device: the
/// projection of every later pass counts both, so the peak of a wider pass after a wide
/// reduction stays within `explain`'s projection. With its input on the device already and
/// copied from the host (the copy, 12.8 MB, took the peak 14.4 MB over the projection).
pub async fn a_reduction_s_partial_states_count_until_they_are_freed<T: Target>() {
    let rows = 200_000usize;
    // 16 lanes: 3,125 row groups per lane on WebGPU, a few hundred kB of partial states.
    let values: Vec<f32> = (0..rows * 16).map(|i| (i % 13) as f32).collect();
    for on_device in [true, false] {
        let device = T::fresh().await;
        let mut wide = f32s(&values, 16);
        if on_device {
            wide = ir::binary(Multiply, &wide, &konst(ColumnData::F32(vec![1.0]))).unwrap();
            engine::evaluate(&device, std::slice::from_ref(&wide))
                .await
                .unwrap();
        }
        let total = ir::reduce(ReduceKind::Sum, &wide, None, 4).unwrap();
        // The pass after it: eight products and the totals beside them, 24 lanes a row.
        let column = f32s(&values[..rows], 1);
        let mut lanes: Vec<NodeRef> = (1..=8)
            .map(|k| {
                ir::binary(Multiply, &column, &konst(ColumnData::F32(vec![k as f32]))).unwrap()
            })
            .collect();
        lanes.push(ir::gather(&u32s(&vec![0; rows], 1), &total).unwrap());
        let after = ir::interleave(&lanes).unwrap();
        let (text, projected, peak) = projected_and_peak(&device, &after).await;
        assert!(
            peak <= projected,
            "input on the device {on_device}: peak {peak} over the projected {projected}:\n{text}"
        );
        let row = read_f32(&after).await[24..48].to_vec();
        let lane_0: f32 = (0..rows).map(|r| ((r * 16) % 13) as f32).sum();
        // Row 1 of the products: values[1] = 1 times 1..=8.
        assert_eq!(row[..8], (1..=8).map(|k| k as f32).collect::<Vec<_>>()[..]);
        assert!(
            (row[8] - lane_0).abs() <= 1e-4 * lane_0,
            "{} against {lane_0}",
            row[8]
        );
    }
}

/// A pass that copies host rows after a native sort (a scatter of host values through the
/// sort's permutation, whose whole output is made before its first upload): the executor
/// submits the sort first, so the working arrays WebGPU keeps for it are freed before the
/// scatter allocates, as the projection (which stops counting them there) expects. Before,
/// they were freed at the scatter's first upload, after its output was made.
pub async fn a_pass_copying_host_rows_after_a_sort_frees_its_arrays_first<T: Target>() {
    let device = T::fresh().await;
    let rows = 100_000u32;
    let keys = hashed_keys(rows, 16);
    let key = u32s(&keys, 1);
    engine::put_on(&device, &key, true).await.unwrap();
    let (perm, _) = ir::sort_permutation_below(&key, 1 << 16).unwrap();
    let values: Vec<f32> = (0..rows).map(|i| i as f32).collect();
    let scattered = ir::scatter(&perm, &f32s(&values, 1), rows).unwrap();
    device
        .core()
        .allowed_mem
        .set(Some(64 * device.value_bytes(DType::U32, 1, rows)));
    let (text, projected, peak) = projected_and_peak(&device, &scattered).await;
    device.core().allowed_mem.set(None);
    assert!(
        peak <= projected,
        "peak {peak} over the projected {projected}:\n{text}"
    );
    let mut order: Vec<u32> = (0..rows).collect();
    order.sort_by_key(|&i| keys[i as usize]);
    // Row i's value lands where the permutation sends it: perm[i] = order[i].
    let mut expected = vec![0f32; rows as usize];
    for (i, &at) in order.iter().enumerate() {
        expected[at as usize] = values[i];
    }
    assert_eq!(read_f32(&scattered).await, expected);
}

/// COO to CSR under a budget of twelve columns of its entries (its peak is about eight, and
/// the projection once counted a WebGPU sort's working arrays as held to the end, though
/// the executor submits the sort before the next pass uploads its input, which frees them):
/// it fits, stays within the budget, and matches the unbounded conversion. At four columns
/// the CPU fits with its parts read back as they are computed, the GPUs refuse; at two all
/// refuse.
pub async fn a_conversion_fits_a_budget_near_its_peak<T: Target>() {
    use gputable::sparse::SparseMatrix;
    let device = T::fresh().await;
    let (entries, m) = (100_000u32, 10_000u32);
    let mut rng = Rng(7);
    let mut column = |n: u64| {
        (0..entries)
            .map(|_| rng.below(n) as u32)
            .collect::<Vec<_>>()
    };
    let (rows, cols) = (column(m as u64), column(m as u64));
    let values: Vec<f32> = (0..entries).map(|i| i as f32).collect();
    let convert = |allowed: Option<u64>| {
        let device = device.clone();
        let (rows, cols, values) = (u32s(&rows, 1), u32s(&cols, 1), f32s(&values, 1));
        async move {
            device.core().allowed_mem.set(allowed);
            device.core().counters.reset_peak();
            let before = device.core().counters.memory().live_bytes;
            let a = SparseMatrix::coo(&device, &rows, &cols, &values, (m, m)).await?;
            let csr = a.to_csr(&device).await?;
            let parts = [csr.major.clone(), csr.minor.clone(), csr.values.clone()];
            engine::evaluate(&device, &parts).await?;
            let peak = device.core().counters.memory().peak_bytes - before;
            device.core().allowed_mem.set(None);
            let (major, minor) = (read_u32(&parts[0]).await, read_u32(&parts[1]).await);
            Ok::<_, gputable::GpuTableError>((peak, major, minor, read_f32(&parts[2]).await))
        }
    };
    let column_bytes = device.value_bytes(DType::U32, 1, entries);
    let allowed = 12 * column_bytes + device.task_overhead_bytes();
    let (peak, major, minor, summed) = convert(Some(allowed)).await.unwrap();
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    let (_, unbounded_major, unbounded_minor, unbounded_summed) = convert(None).await.unwrap();
    assert_eq!(major, unbounded_major);
    assert_eq!(minor, unbounded_minor);
    assert_eq!(summed, unbounded_summed);
    // At four columns' bytes the CPU (reading its inputs in place) fits, the parts it
    // returns read back as they are computed; a GPU's sort needs more.
    let allowed = 4 * column_bytes;
    let four = convert(Some(allowed)).await;
    if T::TRANSFERS {
        assert_eq!(four.unwrap_err().code, ErrorCode::LimitExceeded);
    } else {
        let (peak, major, minor, summed) = four.unwrap();
        assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
        assert_eq!(major, unbounded_major);
        assert_eq!(minor, unbounded_minor);
        assert_eq!(summed, unbounded_summed);
    }
    let error = convert(Some(2 * column_bytes)).await.unwrap_err();
    device.core().allowed_mem.set(None);
    assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
}

/// Regression: a pass cut into row ranges to fit stores each range on its own, and a later
/// task reading other rows of it (a reduction of the whole chunk) reads a copy joining
/// them; WebGL2's reduction of 19 lanes also holds every plane's partial-state textures
/// until its batch is submitted. The projection missed both (peak 1.19 MB over a
/// projected 0.6 MB on WebGL2).
pub async fn a_reduction_of_a_pass_cut_to_fit_counts_the_copy_joining_it<T: Target>() {
    let device = T::capped().await;
    let counters = device.core().counters.clone();
    let (rows, size) = (5000u32, 19u32);
    let values: Vec<i8> = (0..rows * size).map(|i| (i % 251) as i8).collect();
    let graph = || {
        let x = chunked(ColumnData::I8(values.clone()), size, &[rows]);
        ir::extent(&ir::unary(Abs, &x).unwrap()).unwrap()
    };
    device.core().allowed_mem.set(None);
    let ample = engine::schedule_of(&device, &[graph()]).unwrap().peak();
    let needed = ample.saturating_sub(device.task_overhead_bytes());
    let (mut cut, mut separate) = (0, 0);
    for share in [3u64, 2, 1] {
        let budget = device.task_overhead_bytes() + needed * share / 3;
        device.core().allowed_mem.set(Some(budget));
        let root = graph();
        let schedule = engine::schedule_of(&device, std::slice::from_ref(&root)).unwrap();
        separate += usize::from(schedule.passes.len() > 1);
        cut += usize::from(schedule.passes.len() > 1 && schedule.passes[0].tasks.len() > 1);
        drop(schedule);
        counters.reset_peak();
        let before = counters.memory().live_bytes;
        match engine::evaluate_listed(&device, std::slice::from_ref(&root)).await {
            Ok(listed) => {
                let peak = counters.memory().peak_bytes - before;
                assert!(
                    peak <= listed.projected_peak && peak <= budget,
                    "peak {peak}: projected {}, budget {budget}",
                    listed.projected_peak
                );
            }
            Err(error) => assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}"),
        }
        root.destroy();
    }
    device.core().allowed_mem.set(None);
    // On the GPUs the budgets cut the elementwise pass (the CPU reads its input in place).
    assert!(
        !T::TRANSFERS || (separate > 0 && cut > 0),
        "no budget cut the elementwise pass"
    );
}

/// Roots each within half the budget but too many to hold together (a table's columns): the
/// schedule reads back the ones held while a later task would not fit, the largest first,
/// and the evaluation fits where it was refused.
pub async fn roots_held_together_past_the_budget_are_read_back<T: Target>() {
    let device = T::fresh().await;
    let rows = 32_768u32;
    let column =
        |k: usize| -> Vec<f32> { (0..rows as usize).map(|i| (i * 7 + k) as f32).collect() };
    let roots: Vec<NodeRef> = (0..4)
        .map(|k| {
            let x = chunked(ColumnData::F32(column(k)), 1, &[rows]);
            ir::unary(Sqrt, &ir::binary(Add, &x, &lit(&[k as f32])).unwrap()).unwrap()
        })
        .collect();
    let bytes = device.value_bytes(DType::F32, 1, rows);
    // Each root twice over is within the budget; the four together are not.
    let allowed = 3 * bytes + device.task_overhead_bytes();
    device.core().allowed_mem.set(Some(allowed));
    let schedule = engine::schedule_of(&device, &roots).unwrap();
    schedule.check().unwrap();
    assert!(!schedule.streamed.is_empty(), "some roots are read back");
    assert!(
        roots.iter().any(|r| !schedule.streamed.contains(&r.id)),
        "only as many as the budget needs: {:?}",
        schedule.streamed
    );
    device.core().counters.reset_peak();
    engine::evaluate(&device, &roots).await.unwrap();
    let peak = device.core().counters.memory().peak_bytes;
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    for (k, root) in roots.iter().enumerate() {
        let expected: Vec<f32> = column(k).iter().map(|v| (v + k as f32).sqrt()).collect();
        assert_eq!(read_f32(root).await, expected, "root {k}");
        // The CPU's outputs are all in host memory.
        if T::TRANSFERS {
            assert_eq!(
                root.home().unwrap().in_host_memory(),
                schedule.streamed.contains(&root.id),
                "root {k} is where the schedule put it"
            );
        }
    }
}

/// A slice of row-local work computes only the rows it keeps: under a budget smaller than
/// the work's one chunk it was `LIMIT_EXCEEDED` (the work stored whole for the view to read).
pub async fn a_slice_of_row_local_work_computes_only_its_rows<T: Target>() {
    let device = T::fresh().await;
    let values: Vec<f32> = (0..200_000).map(|i| i as f32).collect();
    let budget = 4 * device.value_bytes(DType::F32, 1, 16_384) + device.task_overhead_bytes();
    assert!(device.value_bytes(DType::F32, 1, 200_000) > budget);
    device.core().allowed_mem.set(Some(budget));
    let plus_one = ir::binary(Add, &f32s(&values, 1), &lit(&[1.])).unwrap();
    let sliced = ir::slice_counted(&plus_one, 5.0, 10.0).unwrap();
    let result = engine::evaluate(&device, std::slice::from_ref(&sliced)).await;
    device.core().allowed_mem.set(None);
    result.unwrap();
    assert_eq!(read_f32(&sliced).await, vec![6., 7., 8., 9., 10.]);
    assert!(!plus_one.has_output(), "the whole column was not computed");
}
