//! The backend-neutral suite on the CPU device: residency, memory and concurrency hold on
//! the CPU too (its values live in host memory, so nothing is uploaded or read back).

#[allow(unused_imports)]
mod common;
mod suite;
use suite::Cpu;

use gputable::cpu::CpuDevice;

suite!(Cpu);

/// Every backend-neutral test (an `async fn name<T: Target>()` of `tests/suite/`) is in the
/// suite's list, which every backend's suite runs: one left out would silently run nowhere.
#[test]
fn every_suite_test_is_registered() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let mut defined = Vec::new();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in source.lines() {
            let name = (line.trim().strip_prefix("pub async fn "))
                .and_then(|rest| rest.strip_suffix("<T: Target>() {"));
            defined.extend(name.map(str::to_string));
        }
    }
    defined.sort();
    let mut registered: Vec<String> = REGISTERED_TESTS.iter().map(|s| s.to_string()).collect();
    registered.sort();
    assert!(
        defined.len() >= 90,
        "only {} suite tests found",
        defined.len()
    );
    assert_eq!(defined, registered, "tests/suite/ and suite!'s list differ");
}

/// A gather from a source stored in chunks reads each chunk where it is: no copy joins
/// them (the device holds only the output), and ids in every chunk, past the end and
/// negative are read right.
#[test]
fn a_chunked_gather_source_is_read_chunk_by_chunk() {
    use common::*;
    use gputable::column::ColumnData;
    use gputable::engine::{evaluate_blocking, DeviceModel};
    use gputable::ir;
    let device = CpuDevice::default();
    let rows = 100_000u32;
    let values: Vec<f32> = (0..rows).map(|v| v as f32).collect();
    let source = chunked(ColumnData::F32(values), 1, &[40_000, 0, 35_000, 25_000]);
    let ids = i32s(&[99_999, 0, 39_999, 40_000, 74_999, 75_000, 100_000, -1], 1);
    let gathered = ir::gather(&ids, &source).unwrap();
    device.core().counters.reset_peak();
    evaluate_blocking(&device, std::slice::from_ref(&gathered)).unwrap();
    let peak = device.core().counters.memory().peak_bytes;
    assert!(
        peak < 4096,
        "the device held {peak} bytes: a joined copy of the source"
    );
    assert_eq!(
        read_f32(&gathered),
        vec![99_999., 0., 39_999., 40_000., 74_999., 75_000., 0., 0.]
    );
    // A source also read at the row is bound as one block: the same values.
    let small = chunked(
        ColumnData::F32((0..8).map(|v| v as f32).collect()),
        1,
        &[3, 5],
    );
    let picks = i32s(&[7, 0, 3, 2, 5, 4, 1, 6], 1);
    let both = ir::binary(
        ir::BinaryOp::Add,
        &ir::gather(&picks, &small).unwrap(),
        &small,
    )
    .unwrap();
    evaluate_blocking(&device, std::slice::from_ref(&both)).unwrap();
    assert_eq!(read_f32(&both), vec![7., 1., 5., 5., 9., 9., 7., 13.]);
}
