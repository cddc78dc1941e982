//! Helpers shared by the native test suites.
#![allow(dead_code)]

use gputable::column::ColumnData;
#[cfg(not(target_arch = "wasm32"))]
use gputable::evaluator::read_value;
use gputable::ir::{self, BinaryOp, NodeRef, Predicate, UnaryOp};
use gputable::{DType, ErrorCode, Result};

pub fn f32s(values: &[f32], size: u32) -> NodeRef {
    ir::source(ColumnData::F32(values.to_vec()), size, false).unwrap()
}
pub fn u32s(values: &[u32], size: u32) -> NodeRef {
    ir::source(ColumnData::U32(values.to_vec()), size, false).unwrap()
}
pub fn i32s(values: &[i32], size: u32) -> NodeRef {
    ir::source(ColumnData::I32(values.to_vec()), size, false).unwrap()
}
pub fn u8s(values: &[u8], size: u32) -> NodeRef {
    ir::source(ColumnData::U8(values.to_vec()), size, false).unwrap()
}
pub fn i8s(values: &[i8], size: u32) -> NodeRef {
    ir::source(ColumnData::I8(values.to_vec()), size, false).unwrap()
}
pub fn u16s(values: &[u16], size: u32) -> NodeRef {
    ir::source(ColumnData::U16(values.to_vec()), size, false).unwrap()
}
pub fn i16s(values: &[i16], size: u32) -> NodeRef {
    ir::source(ColumnData::I16(values.to_vec()), size, false).unwrap()
}
/// A float32 literal row, as JavaScript number literals become.
pub fn lit(values: &[f32]) -> NodeRef {
    ir::source(ColumnData::F32(values.to_vec()), values.len() as u32, true).unwrap()
}
pub fn konst(data: ColumnData) -> NodeRef {
    let size = data.len() as u32;
    ir::source(data, size, true).unwrap()
}
pub fn f64_words(values: &[f64], size: u32) -> NodeRef {
    let words: Vec<u32> = values
        .iter()
        .flat_map(|v| {
            let bits = v.to_bits();
            [bits as u32, (bits >> 32) as u32]
        })
        .collect();
    ir::source(ColumnData::U32(words), size * 2, false).unwrap()
}

#[cfg(not(target_arch = "wasm32"))]
pub fn read(node: &NodeRef) -> ColumnData {
    read_value(node, None, None).unwrap()
}
#[cfg(not(target_arch = "wasm32"))]
pub fn read_f32(node: &NodeRef) -> Vec<f32> {
    match read(node) {
        ColumnData::F32(v) => v,
        other => panic!("expected float32, got {:?}", other.dtype()),
    }
}
#[cfg(not(target_arch = "wasm32"))]
pub fn read_u32(node: &NodeRef) -> Vec<u32> {
    match read(node) {
        ColumnData::U32(v) => v,
        other => panic!("expected uint32, got {:?}", other.dtype()),
    }
}
#[cfg(not(target_arch = "wasm32"))]
pub fn read_i32(node: &NodeRef) -> Vec<i32> {
    match read(node) {
        ColumnData::I32(v) => v,
        other => panic!("expected sint32, got {:?}", other.dtype()),
    }
}
pub fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code
}
pub fn meta(node: &NodeRef) -> (DType, u32, u32, bool) {
    (
        node.meta.dtype,
        node.meta.size,
        node.meta.length,
        node.meta.constant,
    )
}

/// Bitwise equality that treats every NaN as equal.
pub fn same_f32(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

pub fn assert_close(actual: &[f32], expected: &[f64], rel: f64) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "lengths differ: {actual:?} vs {expected:?}"
    );
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let (a, e) = (*a as f64, *e);
        if e.is_nan() {
            assert!(a.is_nan(), "element {i}: expected NaN, got {a}");
        } else if e.is_infinite() {
            assert_eq!(a, e, "element {i}");
        } else {
            let tolerance = rel * e.abs().max(f32::MIN_POSITIVE as f64);
            assert!(
                (a - e).abs() <= tolerance,
                "element {i}: {a} vs {e} (rel {rel})"
            );
        }
    }
}

/// Small deterministic PRNG (xorshift64*), so tests need no extra crates.
#[derive(Clone)]
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn f32(&mut self) -> f32 {
        (self.below(2001) as f32 - 1000.0) / 8.0
    }
}

/// Bitwise equality of two columns' values, every NaN equal to every NaN.
pub fn same(a: &ColumnData, b: &ColumnData) -> bool {
    match (a, b) {
        (ColumnData::F32(x), ColumnData::F32(y)) => same_f32(x, y),
        _ => a == b,
    }
}

pub fn random_source(rng: &mut Rng, lengths: &[u32]) -> NodeRef {
    random_source_chunked(rng, lengths, false)
}

/// Up to three chunks (some empty) over `rows` rows when `chunked`, else one; the same draws
/// either way, so a graph built twice from one seed differs only in its chunks.
fn random_chunks(rng: &mut Rng, rows: u32, chunked: bool) -> Vec<u32> {
    let split = rng.below(2) == 0;
    let (x, y) = (
        rng.below(rows as u64 + 1) as u32,
        rng.below(rows as u64 + 1) as u32,
    );
    let (lo, hi) = (x.min(y), x.max(y));
    match chunked && split {
        true => vec![lo, hi - lo, rows - hi],
        false => vec![rows],
    }
}

/// `random_source`, split into random chunks when `chunked`.
pub fn random_source_chunked(rng: &mut Rng, lengths: &[u32], chunked: bool) -> NodeRef {
    let dtype = DType::ALL[rng.below(7) as usize];
    // Now and then a row wider than WIDE_ROW_LANES (16).
    let size = match rng.below(8) {
        0 => 17 + rng.below(4) as u32,
        _ => 1 + rng.below(4) as u32,
    };
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
    let chunks = random_chunks(rng, rows, chunked);
    // A third of the columns have null rows (a tenth to all of them).
    let nulls = match (constant, rng.below(3)) {
        (false, 0) => Some(1 + rng.below(10)),
        _ => None,
    };
    if constant {
        return ir::source(data, size, true).unwrap();
    }
    let x = ir::source_chunked(data, size, chunks.clone().into()).unwrap();
    let Some(every) = nulls else {
        return x;
    };
    let flags: Vec<u8> = (0..rows).map(|_| u8::from(rng.below(every) != 0)).collect();
    let flags = ir::source_chunked(ColumnData::U8(flags), 1, chunks.into()).unwrap();
    ir::with_validity(&x, Some(&flags)).unwrap()
}

/// A random op over `nodes`; `transcendental` allows pow, sin, cos, tan, exp and log.
pub fn random_op(rng: &mut Rng, nodes: &[NodeRef], transcendental: bool) -> Option<NodeRef> {
    random_op_chunked(rng, nodes, transcendental, false)
}

/// `random_op`, whose `rechunk`s split rows when `chunked` (and keep one chunk otherwise).
pub fn random_op_chunked(
    rng: &mut Rng,
    nodes: &[NodeRef],
    transcendental: bool,
    chunked: bool,
) -> Option<NodeRef> {
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
    let (start, end) = (rng.f32() as f64 * 8.0, rng.f32() as f64 * 6000.0);
    let chunks = random_chunks(
        rng,
        if a.meta.constant { 1 } else { a.meta.length },
        chunked,
    );
    // Segment bounds over `a`'s rows (non-decreasing, some segments empty).
    let mut bounds: Vec<u32> = (0..2 + rng.below(6))
        .map(|_| rng.below(a.meta.length as u64 + 1) as u32)
        .collect();
    bounds.sort_unstable();
    const ROUNDING: [UnaryOp; 5] = [
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Trunc,
        UnaryOp::Round,
        UnaryOp::Sign,
    ];
    const LOGIC: [Predicate; 3] = [Predicate::And, Predicate::Or, Predicate::Xor];
    let pick_of = |rng: &mut Rng, n: usize| rng.below(n as u64) as usize;
    let result = match rng.below(25) {
        22 => {
            let third = ir::source(ColumnData::F32(vec![0.3]), 1, true).unwrap();
            let first = ir::swizzle(&a, &[0.]).unwrap();
            let mask = ir::predicate(Predicate::Greater, &[first, third]).unwrap();
            ir::filter(&a, &mask)
        }
        23 => ir::swizzle(&a, &[0.]).and_then(|first| ir::unique(&first)),
        17 => ir::predicate(Predicate::COMPARISONS[pick_of(rng, 6)], &[a, b]),
        18 if rng.below(2) == 0 => ir::fold_logic(LOGIC[pick_of(rng, 3)], &[a, b, c]),
        18 => ir::predicate(
            [Predicate::Not, Predicate::IsNaN, Predicate::IsFinite][pick_of(rng, 3)],
            &[a],
        ),
        19 => ir::binary(
            [BinaryOp::Minimum, BinaryOp::Maximum, BinaryOp::Mod][pick_of(rng, 3)],
            &a,
            &b,
        ),
        20 => ir::unary(ROUNDING[pick_of(rng, 5)], &a),
        21 => match pick_of(rng, 3) {
            0 => ir::is_null(&a),
            1 => ir::is_valid(&a),
            _ => ir::fill_null(&a, &b),
        },
        0..=2 => ir::binary(
            BINARY[rng.below(if transcendental { 5 } else { 4 }) as usize],
            &a,
            &b,
        ),
        3 | 4 if transcendental => ir::unary(UNARY[rng.below(7) as usize], &a),
        3 | 4 => ir::unary(UNARY[rng.below(2) as usize], &a),
        // Rows reach 20 lanes: past 16, WebGPU computes a lane per invocation; three rows of
        // 20 lanes are 15 textures, within one WebGL2 draw's 16.
        5 if a.meta.size + b.meta.size + c.meta.size <= 20 => ir::interleave(&[a, b, c]),
        5 if a.meta.size + b.meta.size <= 20 => ir::interleave(&[a, b]),
        5 => return None,
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
        11 => ir::swizzle(&a, &[0.]).and_then(|ids| ir::gather(&ids, &b)),
        12 => ir::slice_counted(&a, start, end),
        13 if a.meta.dtype == b.meta.dtype && a.meta.size == b.meta.size => {
            ir::concat_counted(&[a, b])
        }
        13 => return None,
        14 => ir::rechunk_counted(&a, chunks.into()),
        15 => ir::cast(&a, DType::ALL[rng.below(7) as usize]),
        16 if a.meta.constant || a.counted().is_some() => return None,
        16 => ir::segment_sum(&a, &ir::source(ColumnData::U32(bounds), 1, false).unwrap()),
        _ => ir::extent(&a),
    };
    match result {
        Ok(node) => Some(node),
        // What the contract forbids (rows of different sizes for dot, equalAll, select)
        // is refused by the builders, on every backend alike: not a node of the graph.
        Err(e) if e.code == ErrorCode::InvalidArgument => None,
        Err(e) => panic!("unexpected builder error: {e}"),
    }
}

/// A random graph over random sources; returns up to two computed roots.
pub fn random_graph(rng: &mut Rng, transcendental: bool) -> Vec<NodeRef> {
    random_graph_chunked(rng, transcendental, false)
}

/// `random_graph` whose sources and `rechunk`s are split into chunks when `chunked`: built
/// twice from one seed, the two graphs have the same values and differ only in chunks.
pub fn random_graph_chunked(rng: &mut Rng, transcendental: bool, chunked: bool) -> Vec<NodeRef> {
    // Lengths straddle the CPU block size so fused passes cross block boundaries.
    let lengths = [0, 1, 3, 7, 1500, 5000];
    let chosen: Vec<u32> = (0..2).map(|_| lengths[rng.below(6) as usize]).collect();
    let mut nodes: Vec<NodeRef> = (0..2 + rng.below(3))
        .map(|_| random_source_chunked(rng, &chosen, chunked))
        .collect();
    for _ in 0..2 + rng.below(10) {
        if let Some(node) = random_op_chunked(rng, &nodes, transcendental, chunked) {
            nodes.push(node);
        }
    }
    nodes
        .iter()
        .rev()
        .take(2)
        .filter(|n| !n.is_source())
        .cloned()
        .collect()
}

/// 1,600 segment starts with random lengths, a quarter of them empty.
pub fn generated_segments(rng: &mut Rng) -> Vec<u32> {
    let mut starts = vec![0u32];
    for _ in 1..1600 {
        let len = if rng.below(4) == 0 {
            0
        } else {
            rng.below(40) as u32
        };
        starts.push(starts.last().unwrap() + len);
    }
    starts
}

/// A source split into chunks of `chunks` rows.
pub fn chunked(data: ColumnData, size: u32, chunks: &[u32]) -> NodeRef {
    ir::source_chunked(data, size, chunks.into()).unwrap()
}

/// Sorts 1.3M rows by two keys (32 and 10 bits; the first stored in chunks of 0, 600k, 0
/// and 700k rows) on `device`, and checks that `explain` shows `line`, that `kernels`
/// kernels run, that the permutation stays on the device, and its order against a stable
/// host sort.
#[cfg(not(target_arch = "wasm32"))]
pub fn check_a_two_key_sort_of_1_3m_rows<B: gputable::engine::Backend>(
    device: &B,
    line: &str,
    kernels: u64,
) {
    use gputable::engine::{evaluate_blocking, explain};
    let rows = 1_300_000u32;
    let mut rng = Rng(41);
    let wide: Vec<u32> = (0..rows)
        .map(|_| rng.next() as u32 >> rng.below(32))
        .collect();
    let narrow: Vec<u32> = (0..rows).map(|_| rng.below(1000) as u32).collect();
    let wide_node = chunked(ColumnData::U32(wide.clone()), 1, &[0, 600_000, 0, 700_000]);
    let perm =
        ir::lexsort_permutation(&[(&wide_node, 1 << 32), (&u32s(&narrow, 1), 1000)]).unwrap();
    let text = explain(device, &perm).unwrap();
    assert!(text.contains(line), "{text}");
    let before = device.core().counters.stats().kernels;
    evaluate_blocking(device, std::slice::from_ref(&perm)).unwrap();
    assert_eq!(device.core().counters.stats().kernels - before, kernels);
    assert_eq!(
        perm.home().unwrap().device,
        device.core().id,
        "the permutation stays on the device"
    );
    let mut expected: Vec<u32> = (0..rows).collect();
    expected.sort_by_key(|&i| (wide[i as usize], narrow[i as usize]));
    assert!(read_u32(&perm) == expected, "the order differs");
}
