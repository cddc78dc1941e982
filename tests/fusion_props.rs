//! Property test: fused and unfused evaluation of random graphs give identical results.

mod common;
use common::*;

use gputable::column::ColumnData;
use gputable::cpu;
use gputable::ir::{all_nodes, NodeRef};
use gputable::plan::{plan, Fusion};

fn outputs(roots: &[NodeRef]) -> Vec<ColumnData> {
    roots.iter().map(read).collect()
}

#[test]
fn fused_and_unfused_evaluation_agree_on_random_graphs() {
    let mut rng = Rng(0x5eed_1234_abcd);
    let (mut checked, mut fused_passes, mut unfused_passes) = (0, 0, 0);
    for graph in 0..300 {
        let roots = random_graph(&mut rng, true);
        if roots.is_empty() {
            continue;
        }
        fused_passes += plan(&roots, Fusion::On).map_or(0, |p| p.regions.len());
        unfused_passes += plan(&roots, Fusion::Off).map_or(0, |p| p.regions.len());
        let unfused = cpu::evaluate(&roots, Fusion::Off).map(|_| outputs(&roots));
        for node in all_nodes(&roots) {
            node.release_output();
        }
        let fused = cpu::evaluate(&roots, Fusion::On).map(|_| outputs(&roots));
        match (unfused, fused) {
            (Ok(u), Ok(f)) => {
                for (i, (u, f)) in u.iter().zip(&f).enumerate() {
                    assert!(
                        same(u, f),
                        "graph {graph} root {i} ({:?}) differs",
                        roots[i]
                    );
                }
                checked += 1;
            }
            (Err(u), Err(f)) => assert_eq!(u.code, f.code, "graph {graph}"),
            (u, f) => panic!(
                "graph {graph}: unfused {:?} vs fused {:?}",
                u.err(),
                f.err()
            ),
        }
    }
    assert!(checked > 200, "only {checked} graphs evaluated");
    // Wide rows (an eighth of the sources) materialize what their reductions and cross-lane
    // reads need, so a quarter of the passes saved is the floor.
    assert!(
        fused_passes * 4 < unfused_passes * 3,
        "fusion saved too little: {fused_passes} vs {unfused_passes} passes"
    );
    println!("{checked} graphs agree; {fused_passes} fused passes vs {unfused_passes} unfused");
}

/// A segmented sum's computed values are computed where read both by its pass and by the
/// pass summing its long segments' blocks (never stored); two sums of the same values store
/// them once instead of computing them twice.
#[test]
fn segmented_values_are_stored_only_when_two_sums_read_them() {
    use gputable::ir::{binary, segment_sum, BinaryOp, SEGMENT_BLOCK_ROWS};
    let rows = 3 * SEGMENT_BLOCK_ROWS as usize;
    let values = binary(
        BinaryOp::Add,
        &f32s(&vec![1.0; rows], 1),
        &konst(ColumnData::F32(vec![0.5])),
    )
    .unwrap();
    let offsets = u32s(&[0, rows as u32], 1);
    let stored = |roots: &[NodeRef]| {
        let plan = plan(roots, Fusion::On).unwrap();
        let where_read = (plan.regions.iter())
            .filter(|r| r.where_read.iter().any(|w| w.producer.id == values.id))
            .count();
        let root = plan.regions.iter().any(|r| r.root.id == values.id);
        (root, where_read)
    };
    let sum = segment_sum(&values, &offsets).unwrap();
    assert_eq!(sum.inputs.len(), 3, "no blocks for {rows} rows");
    assert_eq!(stored(std::slice::from_ref(&sum)), (false, 2));
    let other = segment_sum(&values, &u32s(&[0, 5, rows as u32], 1)).unwrap();
    assert_eq!(stored(&[sum, other]), (true, 0));
}
