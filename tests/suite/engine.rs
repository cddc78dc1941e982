//! Where results live, what devices count, and how overlapping work behaves (api.md: "Where
//! results live, memory and concurrency").

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::*;
use gputable::engine;
use gputable::evaluator::read_value_async;
use gputable::memory::{Home, MemoryUse, Stats};

fn stats<D: Backend>(device: &D) -> Stats {
    device.core().counters.stats()
}

fn memory<D: Backend>(device: &D) -> MemoryUse {
    device.core().counters.memory()
}

/// Every future's output, in order, once all are done (each polled with the caller's
/// waker, so a browser's event loop wakes them).
pub async fn join_all<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + '_>>>) -> Vec<T> {
    let mut outputs: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|context| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(context) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(Option::unwrap).collect()
}

/// Polls a future once: it has started and now waits for its turn.
fn start<T>(future: &mut Pin<Box<dyn Future<Output = T> + '_>>) {
    let mut context = Context::from_waker(Waker::noop());
    assert!(
        future.as_mut().poll(&mut context).is_pending(),
        "the work waits while another holds the device"
    );
}

pub async fn results_stay_on_the_device_until_read<T: Target>() {
    let device = T::fresh().await;
    let n = 100_000;
    let xs = floats(n);
    let x = f32s(&xs, 1);
    let r = ir::binary(Add, &x, &lit(&[1.])).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&r))
        .await
        .unwrap();
    assert_eq!(r.home().unwrap().device, device.core().id);
    let after = stats(&device);
    assert_eq!(
        after.readback_bytes, 0,
        "nothing comes back until it is read"
    );
    assert_eq!(after.kernels, 1);
    if T::TRANSFERS {
        assert!(after.upload_bytes >= n as u64 * 4, "{after:?}");
    } else {
        assert_eq!(after.upload_bytes, 0);
    }
    // A range reads back its rows (WebGL2: the texel rows holding them), not the column.
    let part = read_value_async(&r, Some(10.), Some(20.)).await.unwrap();
    let expected: Vec<f32> = xs[10..20].iter().map(|v| v + 1.0).collect();
    assert_eq!(part, ColumnData::F32(expected));
    let read = stats(&device).readback_bytes;
    if T::TRANSFERS {
        assert!(
            (40..=64 * 1024).contains(&read),
            "read {read} bytes for 10 rows"
        );
    } else {
        assert_eq!(read, 0);
    }
    let all: Vec<f32> = xs.iter().map(|v| v + 1.0).collect();
    assert_eq!(read_f32(&r).await, all);
    assert_eq!(stats(&device).kernels, 1, "reading runs no kernel");
}

pub async fn pipelines_are_cached_by_structure_not_data<T: Target>() {
    let device = T::fresh().await;
    let run = async |n: usize, c: f32| {
        let r = ir::binary(Add, &f32s(&floats(n), 1), &lit(&[c])).unwrap();
        engine::evaluate(&device, std::slice::from_ref(&r))
            .await
            .unwrap();
    };
    run(10, 1.0).await;
    let compiled = stats(&device).pipelines;
    run(5000, 2.0).await;
    run(77, -4.0).await;
    assert_eq!(
        stats(&device).pipelines,
        compiled,
        "new row counts and constants reuse the pipeline"
    );
    assert_eq!(stats(&device).kernels, 3);
}

pub async fn an_evaluated_output_feeds_the_next_graph_in_place<T: Target>() {
    let device = T::fresh().await;
    let x = f32s(&floats(5000), 2);
    let steps = |x: &NodeRef| {
        let a = ir::binary(Add, x, &lit(&[1.])).unwrap();
        let b = ir::binary(Multiply, &a, &lit(&[2., 3.])).unwrap();
        let c = ir::unary(Sqrt, &ir::unary(Abs, &b).unwrap()).unwrap();
        (a, b, c)
    };
    let expected = {
        let (_, _, c) = steps(&x);
        oracle(&[c]).await.unwrap()
    };
    let (a, b, c) = steps(&x);
    engine::evaluate(&device, std::slice::from_ref(&a))
        .await
        .unwrap();
    let uploaded = stats(&device).upload_bytes;
    engine::evaluate(&device, std::slice::from_ref(&b))
        .await
        .unwrap();
    engine::evaluate(&device, std::slice::from_ref(&c))
        .await
        .unwrap();
    let after = stats(&device);
    assert_eq!(
        after.upload_bytes, uploaded,
        "no transfer between chained steps"
    );
    assert_eq!(after.readback_bytes, 0);
    assert_eq!(after.kernels, 3);
    assert!(same(&read(&c).await, &expected[0]));
}

pub async fn inputs_from_another_device_are_copied_once<T: Target>() {
    let cpu = CpuDevice::default();
    let x = f32s(&floats(3000), 1);
    let a = ir::unary(Sqrt, &ir::unary(Abs, &x).unwrap()).unwrap();
    engine::evaluate(&cpu, std::slice::from_ref(&a))
        .await
        .unwrap();
    let device = T::fresh().await;
    let r1 = ir::binary(Add, &a, &lit(&[1.])).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&r1))
        .await
        .unwrap();
    let uploaded = stats(&device).upload_bytes;
    let r2 = ir::binary(Multiply, &a, &lit(&[2.])).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&r2))
        .await
        .unwrap();
    assert_eq!(stats(&device).upload_bytes, uploaded, "the copy is reused");
    if T::TRANSFERS {
        assert!(uploaded >= 3000 * 4);
    }
    // And back: a device output feeding a graph on the CPU is read back once.
    let r3 = ir::binary(Subtract, &r1, &r2).unwrap();
    engine::evaluate(&cpu, std::slice::from_ref(&r3))
        .await
        .unwrap();
    let a_values = read_f32(&a).await;
    let expected: Vec<f32> = a_values.iter().map(|v| (v + 1.0) - v * 2.0).collect();
    assert_eq!(read_f32(&r3).await, expected);
}

pub async fn live_bytes_return_after_ten_thousand_cycles<T: Target>() {
    let device = T::fresh().await;
    let start = memory(&device).live_bytes;
    let x = f32s(&floats(256), 1);
    let cycle = async |c: f32| {
        let r = ir::binary(Add, &x, &lit(&[c])).unwrap();
        engine::evaluate(&device, std::slice::from_ref(&r))
            .await
            .unwrap();
        r.destroy();
    };
    cycle(0.0).await;
    let (live, allocations) = (memory(&device).live_bytes, stats(&device).allocations);
    for c in 1..10_000 {
        cycle(c as f32).await;
    }
    assert_eq!(memory(&device).live_bytes, live, "every output went back");
    assert_eq!(
        stats(&device).allocations,
        allocations,
        "the pool served every cycle after the first"
    );
    x.destroy();
    assert_eq!(memory(&device).live_bytes, start);
}

pub async fn the_pool_is_bounded_and_trim_frees_it<T: Target>() {
    let device = T::fresh().await;
    let cap = 1 << 20;
    device.set_pool_cap(cap);
    for k in 0..60u32 {
        let x = f32s(&floats(1000 + 997 * k as usize), 1);
        let r = ir::binary(Add, &x, &lit(&[1.])).unwrap();
        engine::evaluate(&device, std::slice::from_ref(&r))
            .await
            .unwrap();
        assert_eq!(read_f32(&r).await.len(), 1000 + 997 * k as usize);
        r.destroy();
        x.destroy();
        assert!(memory(&device).pooled_bytes <= cap, "{:?}", memory(&device));
    }
    assert_eq!(memory(&device).live_bytes, 0);
    assert!(memory(&device).pooled_bytes > 0);
    device.trim(None);
    assert_eq!(memory(&device).pooled_bytes, 0);
    let peak = memory(&device).peak_bytes;
    assert!(peak > 0);
    device.core().counters.reset_peak();
    assert_eq!(memory(&device).peak_bytes, 0);
}

pub async fn a_cache_serves_a_loop_without_new_allocations<T: Target>() {
    let device = T::fresh().await;
    let x = f32s(&floats(4000), 2);
    let home = Home::Cache("loop".into());
    device.core().homes.enter(home.clone());
    let mut allocations = 0;
    for pass in 0..5 {
        let shifted = ir::binary(Add, &x, &lit(&[pass as f32, 1.])).unwrap();
        let r = ir::extent(&ir::binary(Multiply, &shifted, &shifted).unwrap()).unwrap();
        engine::evaluate(&device, std::slice::from_ref(&r))
            .await
            .unwrap();
        assert_eq!(read_f32(&r).await.len(), 4);
        r.destroy();
        if pass == 0 {
            allocations = stats(&device).allocations;
        }
    }
    device.core().homes.leave(&home);
    assert_eq!(
        stats(&device).allocations,
        allocations,
        "later passes reuse the cache"
    );
    let cached = memory(&device).pooled_bytes;
    assert!(cached > 0);
    device.trim(Some("loop"));
    assert!(memory(&device).pooled_bytes < cached);
    // Outside the cache, storage comes from the pool again.
    let r = ir::binary(Add, &x, &lit(&[1., 1.])).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&r))
        .await
        .unwrap();
    assert_eq!(read_f32(&r).await.len(), 4000);
}

pub async fn overlapping_evaluations_wait_their_turn<T: Target>() {
    let device = T::fresh().await;
    let graphs: Vec<NodeRef> = (0..8)
        .map(|k| {
            let x = f32s(&floats(1000 + k * 100), 1 + (k as u32 % 3));
            ir::unary(
                Sqrt,
                &ir::binary(Add, &ir::unary(Abs, &x).unwrap(), &lit(&[k as f32])).unwrap(),
            )
            .unwrap()
        })
        .collect();
    let expected = oracle(&graphs).await.unwrap();
    let turn = device.core().queue.enter().await;
    let mut work: Vec<Pin<Box<dyn Future<Output = gputable::Result<()>> + '_>>> = graphs
        .iter()
        .map(|g| {
            Box::pin(engine::evaluate(&device, std::slice::from_ref(g)))
                as Pin<Box<dyn Future<Output = _>>>
        })
        .collect();
    for future in work.iter_mut() {
        start(future);
    }
    drop(turn);
    for result in join_all(work).await {
        result.unwrap();
    }
    for (graph, expected) in graphs.iter().zip(&expected) {
        assert_eq!(graph.home().unwrap().device, device.core().id);
        assert!(same(&read(graph).await, expected));
    }
    // Reads wait for evaluations queued before them, and run in order.
    let x = f32s(&floats(500), 1);
    let r = ir::binary(Add, &x, &lit(&[1.])).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&r))
        .await
        .unwrap();
    let turn = device.core().queue.enter().await;
    let reads: Vec<Pin<Box<dyn Future<Output = gputable::Result<ColumnData>> + '_>>> = (0..4)
        .map(|k| {
            Box::pin(read_value_async(&r, Some(k as f64), None)) as Pin<Box<dyn Future<Output = _>>>
        })
        .collect();
    let mut reads = reads;
    if T::TRANSFERS {
        for future in reads.iter_mut() {
            start(future);
        }
    }
    drop(turn);
    for (k, result) in join_all(reads).await.into_iter().enumerate() {
        assert_eq!(result.unwrap().len(), 500 - k);
    }
}

pub async fn destroying_an_input_or_the_device_during_an_evaluation<T: Target>() {
    let device = T::fresh().await;
    // An input destroyed while the evaluation waits: DESTROYED (or the result it had).
    let xs = floats(2000);
    let x = f32s(&xs, 1);
    let r = ir::binary(Multiply, &x, &lit(&[3.])).unwrap();
    let turn = device.core().queue.enter().await;
    let mut work: Pin<Box<dyn Future<Output = gputable::Result<()>> + '_>> =
        Box::pin(engine::evaluate(&device, std::slice::from_ref(&r)));
    start(&mut work);
    x.destroy();
    drop(turn);
    match join_all(vec![work]).await.pop().unwrap() {
        Ok(()) => assert_eq!(
            read_f32(&r).await,
            xs.iter().map(|v| v * 3.0).collect::<Vec<_>>()
        ),
        Err(e) => assert_eq!(e.code, ErrorCode::Destroyed, "{e}"),
    }
    // The root destroyed while it is computed keeps nothing.
    let y = f32s(&xs, 1);
    let root = ir::unary(Abs, &y).unwrap();
    let turn = device.core().queue.enter().await;
    let mut work: Pin<Box<dyn Future<Output = gputable::Result<()>> + '_>> =
        Box::pin(engine::evaluate(&device, std::slice::from_ref(&root)));
    start(&mut work);
    root.destroy();
    drop(turn);
    assert_eq!(
        code(join_all(vec![work]).await.pop().unwrap()),
        ErrorCode::Destroyed
    );
    assert!(!root.has_output());
    // The device destroyed while an evaluation waits: DESTROYED, then and afterwards.
    let z = ir::unary(Sqrt, &y).unwrap();
    let turn = device.core().queue.enter().await;
    let mut work: Pin<Box<dyn Future<Output = gputable::Result<()>> + '_>> =
        Box::pin(engine::evaluate(&device, std::slice::from_ref(&z)));
    start(&mut work);
    device.destroy();
    drop(turn);
    assert_eq!(
        code(join_all(vec![work]).await.pop().unwrap()),
        ErrorCode::Destroyed
    );
    let again = ir::unary(Sqrt, &y).unwrap();
    assert_eq!(
        code(engine::evaluate(&device, &[again]).await),
        ErrorCode::Destroyed
    );
    assert_eq!(memory(&device).pooled_bytes, 0);
}
