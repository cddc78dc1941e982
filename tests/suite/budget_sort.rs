//! A sort larger than `allowedMem` (api.md "Memory"): runs that fit are sorted on the
//! device, then merged; the order is the plain stable one and the peak stays within the
//! budget. `explain` shows the runs and the merge before anything runs.

use super::order::{float_keys, key_column, present, reference, Key};
use super::*;
use gputable::engine::{self, SortModel};
use gputable::ir::Nulls;
use gputable::DType;

pub async fn a_sort_larger_than_the_budget_runs_and_merges<T: Target>() {
    let device = T::fresh().await;
    // A budget of a quarter of the key column, and at least some rows of textures (WebGL2
    // stores a value in whole rows of its texture width): the column is over twice it.
    let floor = 32 * device.value_bytes(DType::U32, 1, 1);
    let column_bytes = |n: usize| device.value_bytes(DType::F32, 1, n as u32);
    let budget = |n: usize| device.task_overhead_bytes() + (column_bytes(n) / 4).max(floor);
    // Fewer rows on the GPUs, whose software drivers take the suite's time: the runs are
    // as many (the budget is a part of the column).
    let mut n = match T::TRANSFERS {
        true => 50_000usize,
        false => 200_000,
    };
    while column_bytes(n) <= 2 * budget(n) {
        n *= 2;
    }
    let (allowed, column_bytes) = (budget(n), column_bytes(n));
    let mut rng = Rng(83);
    // Ties, NaN, ±0 and infinities; a tenth null; uneven and empty chunks.
    let values = float_keys(n, &mut rng);
    let valid: Vec<u8> = (0..n).map(|_| (rng.below(10) != 0) as u8).collect();
    let vendors: Vec<f64> = (0..n).map(|_| rng.below(4) as f64).collect();
    let part = n as u32 / 20;
    let chunks = [9 * part, 0, 4 * part, n as u32 - 13 * part];
    let x = key_column(DType::F32, &values, Some(&valid), &chunks);
    let vendor = key_column(DType::U8, &vendors, None, &chunks);
    device.core().allowed_mem.set(Some(allowed));

    let sorted = ir::sort(&x, true, Nulls::First).unwrap();
    let order = ir::argsort(&[vendor.clone(), x.clone()], &[false, true], Nulls::Last).unwrap();
    let (top_values, top_rows) = ir::top_k(&x, 10.0, false).unwrap();
    // A gather through one large sort of a gather through another: the inner one sorts first.
    let by_x = ir::argsort(std::slice::from_ref(&x), &[false], Nulls::Last).unwrap();
    let by_vendor = ir::argsort(std::slice::from_ref(&vendor), &[true], Nulls::Last).unwrap();
    let nested = ir::gather(&by_x, &ir::gather(&by_vendor, &vendor).unwrap()).unwrap();
    let text = engine::explain(&device, &sorted).unwrap();
    for shown in ["external sort", "runs of up to", "one merge pass", "fits"] {
        assert!(text.contains(shown), "{shown}: {text}");
    }
    // Each run and merge block is an evaluation read back, which the GPUs' software drivers
    // in a browser take most of a second for: there one sort and the topK; the CPU runs every
    // case (the host's cutting and merging of runs is the same code on every device).
    let every_case = !T::TRANSFERS;
    let mut evaluations = vec![
        vec![sorted.clone()],
        vec![top_values.clone(), top_rows.clone()],
    ];
    if every_case {
        evaluations.extend([vec![order.clone()], vec![nested.clone()]]);
    }
    device.core().counters.reset_peak();
    for roots in &evaluations {
        engine::evaluate(&device, roots).await.unwrap();
    }
    let peak = device.core().counters.memory().peak_bytes;
    assert!(peak <= allowed, "peak {peak} over allowedMem {allowed}");
    assert!(
        column_bytes > 2 * allowed,
        "the key column is over twice the budget"
    );
    // Computed here, kept on the host (as any root over half the budget is).
    assert_eq!(sorted.materialized_on(), Some(device.core().id));
    assert_eq!(stored_on(&sorted), Some(gputable::value::HOST));
    device.core().allowed_mem.set(None);

    let key = |values: &[f64], valid: Option<&[u8]>, descending| Key {
        values: present(values, valid),
        descending,
    };
    // sort(x) descending, nulls first: the values in that order, their null flags with them.
    let want = reference(&[key(&values, Some(&valid), true)], Nulls::First);
    let got = super::reduce::as_f64(&read(&sorted).await);
    let flags = read(sorted.validity().expect("sorted nulls")).await;
    for (row, &i) in want.iter().enumerate() {
        let i = i as usize;
        assert_eq!(flags.get_f64(row), valid[i] as f64, "row {row}: null flag");
        if valid[i] != 0 {
            let (g, e) = (got[row], values[i]);
            assert!(
                g == e || (g.is_nan() && e.is_nan()),
                "row {row}: {g} vs {e}"
            );
        }
    }
    // Two keys, the second descending, nulls last.
    if every_case {
        let want = reference(
            &[key(&vendors, None, false), key(&values, Some(&valid), true)],
            Nulls::Last,
        );
        assert!(read_u32(&order).await == want, "argsort [vendor, x desc]");
    }
    // topK(10) ascending: the first rows of the stable order, nulls last.
    let want = reference(&[key(&values, Some(&valid), false)], Nulls::Last);
    assert_eq!(read_u32(&top_rows).await, &want[..10]);
    let got = super::reduce::as_f64(&read(&top_values).await);
    let expected: Vec<f64> = want[..10].iter().map(|&i| values[i as usize]).collect();
    assert_eq!(got, expected);
    if !every_case {
        return;
    }
    let inner = reference(&[key(&vendors, None, true)], Nulls::Last);
    let expected: Vec<f64> = (want.iter())
        .map(|&r| vendors[inner[r as usize] as usize])
        .collect();
    assert_eq!(
        super::reduce::as_f64(&read(&nested).await),
        expected,
        "nested sorts"
    );
}

/// A budget too small for a run of one row: LIMIT_EXCEEDED before any kernel runs.
pub async fn a_sort_too_large_for_runs_of_one_row_is_refused<T: Target>() {
    let device = T::fresh().await;
    let n = 50_000u32;
    let keys: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let x = u32s(&keys, 1);
    let allowed = device.task_overhead_bytes();
    device.core().allowed_mem.set(Some(allowed));
    let sorted = ir::sort(&x, false, Nulls::Last).unwrap();
    let kernels = device.core().counters.stats().kernels;
    let error = engine::evaluate(&device, std::slice::from_ref(&sorted))
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitExceeded, "{error}");
    assert_eq!(
        device.core().counters.stats().kernels,
        kernels,
        "nothing ran"
    );
    let text = engine::explain(&device, &sorted).unwrap_err();
    assert_eq!(text.code, ErrorCode::LimitExceeded);
    device.core().allowed_mem.set(None);
}

/// A sort of more rows than one binding (WebGPU) or texture tile (WebGL2) holds runs as runs
/// the device sorts natively and a merge pass, not as one-bit split passes.
pub async fn a_sort_past_one_binding_runs_in_runs_of_native_sorts<T: Target>() {
    let device = T::capped().await;
    let mut rng = Rng(89);
    // Past the capped devices' 1,024-value binding and 4,096-row texture tile.
    let n = 6_000usize;
    let values = float_keys(n, &mut rng);
    let valid: Vec<u8> = (0..n).map(|_| (rng.below(8) != 0) as u8).collect();
    let x = key_column(DType::F32, &values, Some(&valid), &[2_000, 4_000]);
    let order = ir::argsort(std::slice::from_ref(&x), &[true], Nulls::Last).unwrap();
    let text = engine::explain(&device, &order).unwrap();
    // A nullable key sorts by two keys: its null flag, then its value.
    match device.sorts(n as u32, 2) {
        true => assert!(!text.contains("external sort"), "{text}"),
        false => assert!(
            text.contains("more than this device sorts in one pass")
                && !text.contains("one-bit split"),
            "{text}"
        ),
    }
    let sorted = ir::sort(&x, true, Nulls::Last).unwrap();
    engine::evaluate(&device, &[order.clone(), sorted.clone()])
        .await
        .unwrap();
    let want = reference(
        &[Key {
            values: present(&values, Some(&valid)),
            descending: true,
        }],
        Nulls::Last,
    );
    assert!(read_u32(&order).await == want, "argsort past one binding");
    let got = super::reduce::as_f64(&read(&sorted).await);
    for (row, &i) in want.iter().enumerate() {
        let (g, e) = (got[row], values[i as usize]);
        if valid[i as usize] != 0 {
            assert!(
                g == e || (g.is_nan() && e.is_nan()),
                "row {row}: {g} vs {e}"
            );
        }
    }
}
