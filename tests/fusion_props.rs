//! Property test: fused and unfused evaluation of random graphs give identical results.

mod common;
use common::*;

use gputable::column::ColumnData;
use gputable::cpu;
use gputable::ir::{self, all_nodes, BinaryOp, NodeRef, UnaryOp};
use gputable::plan::{plan, Fusion};
use gputable::DType;

fn random_source(rng: &mut Rng, lengths: &[u32]) -> NodeRef {
    let dtype = DType::ALL[rng.below(7) as usize];
    let size = 1 + rng.below(4) as u32;
    let constant = rng.below(5) == 0;
    let rows = if constant {
        1
    } else {
        lengths[rng.below(lengths.len() as u64) as usize]
    };
    let n = (rows * size) as usize;
    let mut ints = || (0..n).map(|_| rng.next()).collect::<Vec<u64>>();
    let data = match dtype {
        DType::U8 => ColumnData::U8(ints().into_iter().map(|v| v as u8).collect()),
        DType::I8 => ColumnData::I8(ints().into_iter().map(|v| v as i8).collect()),
        DType::U16 => ColumnData::U16(ints().into_iter().map(|v| v as u16).collect()),
        DType::I16 => ColumnData::I16(ints().into_iter().map(|v| v as i16).collect()),
        // Small magnitudes sometimes, so division and gather ids see in-range values.
        DType::U32 => ColumnData::U32(
            ints()
                .into_iter()
                .map(|v| {
                    if v % 2 == 0 {
                        (v >> 8) as u32 % 50
                    } else {
                        v as u32
                    }
                })
                .collect(),
        ),
        DType::I32 => ColumnData::I32(
            ints()
                .into_iter()
                .map(|v| {
                    if v % 2 == 0 {
                        (v >> 8) as i32 % 50
                    } else {
                        v as i32
                    }
                })
                .collect(),
        ),
        DType::F32 => ColumnData::F32(
            (0..n)
                .map(|_| match rng.below(20) {
                    0 => f32::NAN,
                    1 => f32::INFINITY,
                    2 => -0.0,
                    _ => rng.f32(),
                })
                .collect(),
        ),
    };
    ir::source(data, size, constant).unwrap()
}

fn random_op(rng: &mut Rng, nodes: &[NodeRef]) -> Option<NodeRef> {
    let mut pick = || nodes[rng.below(nodes.len() as u64) as usize].clone();
    let (a, b, c) = (pick(), pick(), pick());
    const BINARY: [BinaryOp; 5] = [
        BinaryOp::Add,
        BinaryOp::Subtract,
        BinaryOp::Multiply,
        BinaryOp::Divide,
        BinaryOp::Pow,
    ];
    const UNARY: [UnaryOp; 7] = [
        UnaryOp::Sqrt,
        UnaryOp::Abs,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Exp,
        UnaryOp::Log,
    ];
    let result = match rng.below(13) {
        0..=2 => ir::binary(BINARY[rng.below(5) as usize], &a, &b),
        3 | 4 => ir::unary(UNARY[rng.below(7) as usize], &a),
        5 => ir::interleave(&[a, b, c]),
        6 => {
            let channels: Vec<f64> = (0..1 + rng.below(4))
                .map(|_| rng.below(a.meta.size as u64) as f64)
                .collect();
            ir::swizzle(&a, &channels)
        }
        7 => ir::select(&a, &b, &c),
        8 => ir::dot(&a, &b),
        9 => ir::length(&a),
        10 => ir::equal_all(&a, &b),
        11 => ir::gather(&ir::swizzle(&a, &[0.]).ok()?, &b),
        _ => ir::extent(&a),
    };
    result.ok()
}

fn outputs(roots: &[NodeRef]) -> Vec<ColumnData> {
    roots
        .iter()
        .map(|r| r.output().expect("evaluated").data.clone())
        .collect()
}

fn same(a: &ColumnData, b: &ColumnData) -> bool {
    match (a, b) {
        (ColumnData::F32(x), ColumnData::F32(y)) => same_f32(x, y),
        _ => a == b,
    }
}

#[test]
fn fused_and_unfused_evaluation_agree_on_random_graphs() {
    let mut rng = Rng(0x5eed_1234_abcd);
    let (mut checked, mut fused_passes, mut unfused_passes) = (0, 0, 0);
    for graph in 0..300 {
        // Lengths straddle the block size so fused passes cross block boundaries.
        let lengths = [0, 1, 3, 7, 1500, 5000];
        let chosen: Vec<u32> = (0..2).map(|_| lengths[rng.below(6) as usize]).collect();
        let mut nodes: Vec<NodeRef> = (0..2 + rng.below(3))
            .map(|_| random_source(&mut rng, &chosen))
            .collect();
        for _ in 0..2 + rng.below(10) {
            if let Some(node) = random_op(&mut rng, &nodes) {
                nodes.push(node);
            }
        }
        let roots: Vec<NodeRef> = nodes
            .iter()
            .rev()
            .take(2)
            .filter(|n| !n.is_source())
            .cloned()
            .collect();
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
    assert!(
        fused_passes * 3 < unfused_passes * 2,
        "fusion saved too little: {fused_passes} vs {unfused_passes} passes"
    );
    println!("{checked} graphs agree; {fused_passes} fused passes vs {unfused_passes} unfused");
}
