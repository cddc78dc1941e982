//! Chunked columns (api.md "Chunked evaluation"): chunked sources, elementwise work over
//! inputs with any chunk boundaries, chunk tasks compiled once, `extent` over chunks, and the
//! view ops `concat`, `slice` and `rechunk`, against values worked out by hand.

use super::*;
use gputable::engine;
use gputable::memory::Stats;
use gputable::DType;

fn stats<D: Backend>(device: &D) -> Stats {
    device.core().counters.stats()
}

/// The node's output lives on `device` in `chunks` chunks.
fn assert_chunks_on<D: Backend>(node: &NodeRef, device: &D, chunks: &[u32]) {
    assert_eq!(&*node.chunks, chunks, "{node:?}");
    let home = node.home().expect("evaluated");
    assert_eq!(
        home.device,
        device.core().id,
        "{node:?} was computed elsewhere"
    );
    let rows: Vec<u32> = home.chunks.iter().map(|c| c.rows).collect();
    assert_eq!(rows, chunks, "{node:?}: stored chunks");
}

fn f32_chunks(values: &[f32], size: u32, chunks: &[u32]) -> NodeRef {
    chunked(ColumnData::F32(values.to_vec()), size, chunks)
}

pub async fn elementwise_ops_read_across_chunk_boundaries<T: Target>() {
    let device = T::device();
    let a = f32_chunks(&[1., 2., 3., 4., 5., 6.], 1, &[2, 4]);
    let b = f32_chunks(&[10., 20., 30., 40., 50., 60.], 1, &[3, 3]);
    let plain = f32s(&[1.; 6], 1);
    let sum = ir::binary(Add, &a, &b).unwrap();
    // A chunked column plus an unchunked one of the same length is that length (the defect
    // was one output per chunk pairing: 12 rows).
    let shifted = ir::binary(Add, &a, &plain).unwrap();
    let other_first = ir::binary(Add, &plain, &b).unwrap();
    let pairs = ir::interleave(&[a.clone(), b.clone()]).unwrap();
    let picked = ir::select(&ir::binary(Subtract, &a, &lit(&[3.])).unwrap(), &a, &b).unwrap();
    let roots = [
        sum.clone(),
        shifted.clone(),
        other_first.clone(),
        pairs.clone(),
        picked.clone(),
    ];
    evaluate::<T>(&roots).await.unwrap();
    assert_chunks_on(&sum, &device, &[2, 4]);
    assert_eq!(read_f32(&sum).await, vec![11., 22., 33., 44., 55., 66.]);
    assert_chunks_on(&shifted, &device, &[2, 4]);
    assert_eq!(read_f32(&shifted).await, vec![2., 3., 4., 5., 6., 7.]);
    assert_chunks_on(&other_first, &device, &[3, 3]);
    assert_eq!(
        read_f32(&other_first).await,
        vec![11., 21., 31., 41., 51., 61.]
    );
    assert_chunks_on(&pairs, &device, &[2, 4]);
    assert_eq!(
        read_f32(&pairs).await,
        vec![1., 10., 2., 20., 3., 30., 4., 40., 5., 50., 6., 60.]
    );
    assert_eq!(read_f32(&picked).await, vec![1., 2., 30., 4., 5., 6.]);
    // The first chunked input is shorter than the output: its last chunk takes the rest,
    // and its rows past its length read 0.
    let short = f32_chunks(&[1., 2., 3., 4.], 1, &[2, 2]);
    let longer = ir::binary(Add, &short, &plain).unwrap();
    evaluate::<T>(std::slice::from_ref(&longer)).await.unwrap();
    assert_chunks_on(&longer, &device, &[2, 4]);
    assert_eq!(read_f32(&longer).await, vec![2., 3., 4., 5., 1., 1.]);
    // Empty chunks stay.
    let gaps = f32_chunks(&[4., 9., 16.], 1, &[0, 2, 0, 1]);
    let roots = ir::unary(Sqrt, &gaps).unwrap();
    evaluate::<T>(std::slice::from_ref(&roots)).await.unwrap();
    assert_chunks_on(&roots, &device, &[0, 2, 0, 1]);
    assert_eq!(read_f32(&roots).await, vec![2., 3., 4.]);
}

pub async fn chunk_tasks_share_one_fused_kernel<T: Target>() {
    let device = T::fresh().await;
    let xs: Vec<f32> = (0..3000).map(|i| i as f32).collect();
    let x = f32_chunks(&xs, 3, &[400, 0, 600]);
    let r = ir::binary(Add, &ir::unary(Sqrt, &x).unwrap(), &lit(&[1.])).unwrap();
    let text = engine::explain(&device, &r).unwrap();
    assert!(text.contains("runs as 3 chunk tasks"), "{text}");
    let before = stats(&device);
    engine::evaluate(&device, std::slice::from_ref(&r))
        .await
        .unwrap();
    let after = stats(&device);
    // One fused pass per chunk with rows (a GPU backend compiles its kernel once).
    assert!(
        after.kernels - before.kernels >= 2,
        "{before:?} -> {after:?}"
    );
    assert!(
        after.pipelines - before.pipelines <= 1,
        "{before:?} -> {after:?}"
    );
    assert_chunks_on(&r, &device, &[400, 0, 600]);
    let expected: Vec<f32> = xs.iter().map(|v| v.sqrt() + 1.0).collect();
    assert_close(
        &read_f32(&r).await,
        &expected.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        1e-6,
    );
}

pub async fn extent_over_chunks_follows_its_rules<T: Target>() {
    let device = T::device();
    let i = |values: &[i32], chunks: &[u32]| chunked(ColumnData::I32(values.to_vec()), 1, chunks);
    // The defects: an integer fold starting from NaN (stored as 0), and an empty batch.
    let up = ir::extent(&i(&[5, 6, 7, 8], &[2, 2])).unwrap();
    let down = ir::extent(&i(&[-5, -6, -7, -8], &[2, 2])).unwrap();
    let gap = ir::extent(&i(&[3, -1, 9, 4], &[2, 0, 2])).unwrap();
    let nan = ir::extent(&f32_chunks(&[f32::NAN, 2., f32::NAN, -1.], 1, &[1, 1, 2])).unwrap();
    // A graph using the whole extent, not a chunk's.
    let shifted = ir::binary(Add, &up, &lit(&[1.])).unwrap();
    evaluate::<T>(&[
        up.clone(),
        down.clone(),
        gap.clone(),
        nan.clone(),
        shifted.clone(),
    ])
    .await
    .unwrap();
    assert_chunks_on(&up, &device, &[1]);
    assert_eq!(read_i32(&up).await, vec![5, 8]);
    assert_eq!(read_i32(&down).await, vec![-8, -5]);
    assert_eq!(read_i32(&gap).await, vec![-1, 9]);
    assert_eq!(read_f32(&nan).await, vec![-1., 2.]);
    assert_eq!(read_f32(&shifted).await, vec![6., 9.]);
    let empty = ir::extent(&i(&[], &[0, 0])).unwrap();
    assert_eq!(code(evaluate::<T>(&[empty]).await), ErrorCode::EmptyInput);
}

pub async fn views_share_whole_chunks_and_copy_parts<T: Target>() {
    let device = T::fresh().await;
    let values: Vec<i32> = (0..10).collect();
    let x = chunked(ColumnData::I32(values.clone()), 1, &[3, 3, 4]);
    engine::put_on(&device, &x, false).await.unwrap();
    let whole = ir::slice(&x, 3.0, 6.0).unwrap();
    let twice = ir::concat(&[x.clone(), x.clone()]).unwrap();
    let before = stats(&device);
    engine::evaluate(&device, &[whole.clone(), twice.clone()])
        .await
        .unwrap();
    assert_eq!(
        stats(&device).kernels,
        before.kernels,
        "whole chunks are shared"
    );
    assert_chunks_on(&whole, &device, &[3]);
    assert_eq!(read_i32(&whole).await, vec![3, 4, 5]);
    assert_chunks_on(&twice, &device, &[3, 3, 4, 3, 3, 4]);
    assert_eq!(
        read_i32(&twice).await,
        [values.clone(), values.clone()].concat()
    );

    let parts = ir::slice(&x, 2.0, 7.0).unwrap();
    let regrouped = ir::rechunk(&x, vec![5, 5].into()).unwrap();
    let clamped = ir::slice(&x, -4.0, 1e9).unwrap();
    let nothing = ir::slice(&x, 8.0, 2.0).unwrap();
    let before = stats(&device);
    engine::evaluate(&device, std::slice::from_ref(&parts))
        .await
        .unwrap();
    assert_eq!(
        stats(&device).kernels - before.kernels,
        2,
        "one copy per partial chunk"
    );
    engine::evaluate(
        &device,
        &[regrouped.clone(), clamped.clone(), nothing.clone()],
    )
    .await
    .unwrap();
    assert_chunks_on(&parts, &device, &[1, 3, 1]);
    assert_eq!(read_i32(&parts).await, vec![2, 3, 4, 5, 6]);
    assert_chunks_on(&regrouped, &device, &[5, 5]);
    assert_eq!(read_i32(&regrouped).await, values);
    assert_eq!(&*clamped.chunks, &[3, 3, 4]);
    assert_eq!(read_i32(&clamped).await, values);
    assert_eq!(read_i32(&nothing).await, Vec::<i32>::new());
    // Views compose with elementwise work and keep their chunks.
    let r = ir::binary(Multiply, &regrouped, &parts).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&r))
        .await
        .unwrap();
    assert_chunks_on(&r, &device, &[5, 5]);
    assert_eq!(read_i32(&r).await, vec![0, 3, 8, 15, 24, 0, 0, 0, 0, 0]);

    assert_eq!(
        code(ir::rechunk(&x, vec![4, 4].into())),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::concat(&[x.clone(), f32s(&[1.], 1)])),
        ErrorCode::TypeMismatch
    );
    assert_eq!(
        code(ir::concat(&[x.clone(), i32s(&[1, 2], 2)])),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::slice(&x, f64::NAN, 2.0)),
        ErrorCode::InvalidArgument
    );
    // A view borrows its input's storage, through views of views: it ends with it.
    let nested = ir::slice(&ir::slice(&x, 0.0, 8.0).unwrap(), 2.0, 4.0).unwrap();
    engine::evaluate(&device, std::slice::from_ref(&nested))
        .await
        .unwrap();
    assert_eq!(read_i32(&nested).await, vec![2, 3]);
    x.destroy();
    assert_eq!(
        code(gputable::evaluator::read_value_async(&nested, None, None).await),
        ErrorCode::Destroyed
    );
    assert_eq!(
        code(gputable::evaluator::read_value_async(&whole, None, None).await),
        ErrorCode::Destroyed
    );
    assert!(r.home().is_some(), "a computed output is its own");
}

pub async fn gather_reads_chunked_ids_and_sources<T: Target>() {
    let device = T::device();
    let source = chunked(ColumnData::U32((0..12).collect()), 2, &[2, 0, 4]);
    let ids = chunked(ColumnData::I32(vec![5, 0, -1, 3, 9]), 1, &[2, 3]);
    let r = ir::gather(&ids, &source).unwrap();
    evaluate::<T>(std::slice::from_ref(&r)).await.unwrap();
    assert_chunks_on(&r, &device, &[2, 3]);
    assert_eq!(read_u32(&r).await, vec![10, 11, 0, 1, 0, 0, 6, 7, 0, 0]);
}

/// Ids ending in one id repeated (a filter's kept rows past their count): the CPU computes
/// up to the first of them and repeats its row; every backend gives the rows a gather does.
pub async fn gathers_whose_last_ids_repeat_give_that_row_again<T: Target>() {
    let source = chunked(ColumnData::U32((0..12).collect()), 2, &[2, 0, 4]);
    let narrow = ir::source(ColumnData::U8((10..16).collect()), 1, false).unwrap();
    let cases: [(&[u32], &[u32], &[u32]); 5] = [
        (
            &[3, 1, 0, 0, 0, 0],
            &[6, 7, 2, 3, 0, 1, 0, 1, 0, 1, 0, 1],
            &[13, 11, 10, 10, 10, 10],
        ),
        (&[2, 9, 9, 9], &[4, 5, 0, 0, 0, 0, 0, 0], &[12, 0, 0, 0]),
        (&[5, 5, 5], &[10, 11, 10, 11, 10, 11], &[15, 15, 15]),
        (&[4], &[8, 9], &[14]),
        (&[0, 1, 2, 3], &[0, 1, 2, 3, 4, 5, 6, 7], &[10, 11, 12, 13]),
    ];
    for (ids, wide, narrow_rows) in cases {
        let ids = ir::source(ColumnData::U32(ids.to_vec()), 1, false).unwrap();
        let a = ir::gather(&ids, &source).unwrap();
        let b = ir::gather(&ids, &narrow).unwrap();
        evaluate::<T>(&[a.clone(), b.clone()]).await.unwrap();
        assert_eq!(read_u32(&a).await, wide.to_vec());
        assert_eq!(
            read(&b).await,
            ColumnData::U8(narrow_rows.iter().map(|&v| v as u8).collect())
        );
    }
    // Past STEP ids, a repeated run crossing steps.
    let n = 1000u32;
    let ids: Vec<u32> = (0..n).map(|i| if i < 300 { 2 * i } else { 77 }).collect();
    let long = ir::source(
        ColumnData::U32((0..2 * n).map(|v| v * 3).collect()),
        1,
        false,
    )
    .unwrap();
    let r = ir::gather(
        &ir::source(ColumnData::U32(ids.clone()), 1, false).unwrap(),
        &long,
    )
    .unwrap();
    evaluate::<T>(std::slice::from_ref(&r)).await.unwrap();
    assert_eq!(
        read_u32(&r).await,
        ids.iter().map(|&i| i * 3).collect::<Vec<_>>()
    );
}

pub async fn chunked_sources_validate_their_chunks<T: Target>() {
    let data = || ColumnData::F32(vec![1., 2., 3.]);
    assert_eq!(
        code(ir::source_chunked(data(), 1, vec![1, 1].into())),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::source_chunked(data(), 1, Vec::<u32>::new().into())),
        ErrorCode::InvalidArgument
    );
    assert_eq!(&*ir::regular_chunks(2.0, 5).unwrap(), &[2, 2, 1]);
    assert_eq!(&*ir::regular_chunks(2.0, 0).unwrap(), &[0]);
    assert_eq!(code(ir::regular_chunks(0.0, 5)), ErrorCode::InvalidArgument);
    assert_eq!(code(ir::regular_chunks(1.5, 5)), ErrorCode::InvalidArgument);
    assert_eq!(
        &*ir::explicit_chunks(&[2.0, 0.0, 3.0], 5).unwrap(),
        &[2, 0, 3]
    );
    assert_eq!(
        code(ir::explicit_chunks(&[2.0, 2.0], 5)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(ir::explicit_chunks(&[-1.0, 6.0], 5)),
        ErrorCode::InvalidArgument
    );
    // A chunk list sized by a careless argument is refused, not allocated.
    assert_eq!(
        code(ir::regular_chunks(1.0, u32::MAX)),
        ErrorCode::LimitExceeded
    );
    // A chunked source reads back whole, and its chunks are its own.
    let x = ir::source_chunked(data(), 1, vec![2, 1].into()).unwrap();
    evaluate::<T>(std::slice::from_ref(&x)).await.unwrap();
    assert_eq!(read_f32(&x).await, vec![1., 2., 3.]);
    assert_eq!(x.home().unwrap().chunks.len(), 2);
}

/// `cast` by api.md's rules, worked out in f64: float to integer truncates, NaN and values
/// outside the type are 0; integers wrap to the type's width; to float32 rounds.
fn cast_reference(v: f64, from_float: bool, to: DType) -> f64 {
    if to == DType::F32 {
        return v as f32 as f64;
    }
    let (lo, end) = to.int_bounds();
    if from_float {
        let t = v.trunc();
        return if v.is_nan() || t < lo || t >= end {
            0.0
        } else {
            t
        };
    }
    let width = 2f64.powi(to.bits() as i32);
    let wrapped = v.rem_euclid(width);
    if lo < 0.0 && wrapped >= width / 2.0 {
        wrapped - width
    } else {
        wrapped
    }
}

pub async fn cast_converts_by_the_rules<T: Target>() {
    let device = T::device();
    let floats = [
        1.9,
        -1.9,
        255.5,
        256.0,
        -0.5,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        -129.0,
        3e9,
        -2147483648.0,
        2147483648.0,
        65535.9,
        -32768.7,
        127.99,
    ];
    let ints = [-1, 300, -129, i32::MIN, 65536, 127, -32769];
    let uints = [u32::MAX, 128, 40000, 70000];
    let sources = [
        (
            chunked(ColumnData::F32(floats.to_vec()), 1, &[5, 0, 10]),
            true,
        ),
        (i32s(&ints, 1), false),
        (u32s(&uints, 1), false),
        (u8s(&[0, 200, 255], 1), false),
        (i8s(&[-128, -1, 5], 1), false),
    ];
    for (source, from_float) in &sources {
        let input = read(source).await;
        for to in DType::ALL {
            // Fused behind another op, as casts usually are.
            let widened = ir::binary(Add, source, &konst(ColumnData::U8(vec![0]))).unwrap();
            let root = ir::cast(&widened, to).unwrap();
            assert_eq!(root.meta.dtype, to);
            evaluate::<T>(std::slice::from_ref(&root)).await.unwrap();
            assert_chunks_on(&root, &device, &source.chunks);
            let got = read(&root).await;
            for i in 0..input.len() {
                let v = read(&widened).await.get_f64(i);
                let want = cast_reference(v, *from_float, to);
                let have = got.get_f64(i);
                assert!(
                    have == want || (have.is_nan() && want.is_nan()),
                    "cast of {v} ({:?}) to {}: {have}, want {want}",
                    source.meta.dtype,
                    to.name()
                );
            }
        }
    }
}

/// Joining parts of wide rows binds every tile of every part: where two parts exceed one
/// kernel's bindings (WebGL2's sampled textures), it is LIMIT_EXCEEDED, never an endless
/// loop of copies.
pub async fn joining_wide_parts_ends<T: Target>() {
    let values: Vec<f32> = (0..36 * 10).map(|i| i as f32).collect();
    let x = chunked(ColumnData::F32(values.clone()), 36, &[5, 5]);
    let joined = ir::rechunk(&x, vec![10].into()).unwrap();
    match evaluate::<T>(std::slice::from_ref(&joined)).await {
        Ok(()) => assert_eq!(read_f32(&joined).await, values),
        Err(error) => {
            assert!(!T::WIDE_ROWS, "{error}");
            assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
        }
    }
}

/// Packing record batches (`GPUTable.packBatches`) joins a column's batches on the device
/// that holds them: nothing is read back, a batch alone in its group is shared.
pub async fn packing_batches_joins_them_on_the_device<T: Target>() {
    let device = T::fresh().await;
    let parts: Vec<NodeRef> = [&[1, 2][..], &[3, 4, 5], &[], &[6]]
        .iter()
        .map(|values| i32s(values, 1))
        .collect();
    for part in &parts {
        engine::put_on(&device, part, true).await.unwrap();
    }
    let before = stats(&device);
    let packed = gputable::table::pack_column(&device, &parts, &[2, 1, 1])
        .await
        .unwrap();
    let after = stats(&device);
    assert_eq!(
        after.readback_bytes, before.readback_bytes,
        "nothing read back"
    );
    assert_eq!(after.upload_bytes, before.upload_bytes, "nothing uploaded");
    assert_eq!(packed.len(), 3);
    for node in &packed {
        assert_eq!(node.home().unwrap().device, device.core().id, "{node:?}");
    }
    let alone = &packed[2].home().unwrap().chunks[0];
    assert!(
        std::rc::Rc::ptr_eq(alone, &parts[3].home().unwrap().chunks[0]),
        "a batch alone in its group is shared"
    );
    assert_eq!(read_i32(&packed[0]).await, vec![1, 2, 3, 4, 5]);
    assert_eq!(read_i32(&packed[1]).await, Vec::<i32>::new());
    assert_eq!(read_i32(&packed[2]).await, vec![6]);
    let bad = gputable::table::pack_column(&device, &parts, &[2, 1]).await;
    assert_eq!(code(bad), ErrorCode::InvalidArgument);
}
