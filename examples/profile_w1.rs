use gputable::column::ColumnData;
use gputable::evaluator::evaluate;
use gputable::ir::{self, BinaryOp};
use std::time::Instant;
fn main() {
    let n = 1_000_000usize;
    let xyz = ir::source(
        ColumnData::F32((0..3 * n).map(|i| i as f32).collect()),
        3,
        false,
    )
    .unwrap();
    let c1 = ir::source(ColumnData::F32(vec![10., 20., 30.]), 3, true).unwrap();
    let c2 = ir::source(ColumnData::F32(vec![1.]), 1, true).unwrap();
    for _ in 0..40 {
        let t = Instant::now();
        let r = ir::fold_binary(BinaryOp::Add, &[xyz.clone(), c1.clone(), c2.clone()]).unwrap();
        evaluate(&r).unwrap();
        println!("W1 {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let v: Vec<f32> = vec![0.0; 3 * n];
        println!(
            "  zeroed alloc {:.2} ms {}",
            t.elapsed().as_secs_f64() * 1e3,
            v[5]
        );
    }
}
