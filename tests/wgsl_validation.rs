//! naga parses and validates every WGSL file in `shaders/` and a set of generated kernels,
//! compute (WebGPU) and fragment (WebGL2) alike.

mod common;
use common::*;

use std::rc::Rc;

use gputable::column::{Column, ColumnData};
use gputable::dtype::{Class, DType};
use gputable::ir::{self, BinaryOp::*, NodeRef, UnaryOp::*};
use gputable::ir::{ReduceKind, Reduction};
use gputable::plan::{plan, Fusion, Region};
use gputable::value::Value;
use gputable::wgsl::compute::{elementwise_kernel, reduce_partials_kernel, reduce_tail_source};
use gputable::wgsl::TextureLayout;
use gputable::wgsl::{fragment, fragment_reduce};

/// The region's leaves' values: their host data (every leaf here is a source).
fn leaves(region: &Region) -> Vec<Rc<Value>> {
    region
        .leaves
        .iter()
        .map(|leaf| {
            leaf.host_output()
                .map(|o| o.chunks[0].clone())
                .unwrap_or_else(|| {
                    let column = Column::empty(leaf.meta.dtype, leaf.meta.size).unwrap();
                    Rc::new(Value::host(column))
                })
        })
        .collect()
}

fn validate(source: &str, what: &str) {
    validate_with(source, what, naga::valid::Capabilities::default());
}

/// Valid as a device with the `subgroups` feature runs it (the radix sort's ballots); every
/// other kernel is validated without, so none uses subgroup operations by mistake.
fn validate_with_subgroups(source: &str, what: &str) {
    validate_with(source, what, naga::valid::Capabilities::SUBGROUP);
}

fn validate_with(source: &str, what: &str, capabilities: naga::valid::Capabilities) {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{what} does not parse:\n{}", e.emit_to_string(source)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities)
        .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
        .subgroup_operations(naga::valid::SubgroupOperationSet::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what} is invalid: {e:?}\n{source}"));
}

#[test]
fn shader_files_are_valid_wgsl() {
    let mut count = 0;
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wgsl") {
            let source = std::fs::read_to_string(&path).unwrap();
            if source.contains("#PROLOGUE#")
                || source.contains("@vertex")
                || source.contains("@compute")
                || source.contains("@fragment")
            {
                continue; // validated through the kernels generated from it
            }
            // Library files use the prelude, whose parameter array is sized per kernel.
            let prelude = include_str!("../shaders/prelude.wgsl");
            let source = if path.ends_with("prelude.wgsl") {
                source
            } else {
                format!("{prelude}\n{source}")
            };
            let source = source.replace("PARAM_VEC4S", "4");
            validate(
                &format!("{source}\n@compute @workgroup_size(1) fn main() {{ _ = param(0u); }}"),
                &path.display().to_string(),
            );
            count += 1;
        }
    }
    assert!(count >= 1);
}

#[test]
fn generated_kernels_are_valid_wgsl() {
    let x = f32s(&[1., 2., 3., 4., 5., 6.], 3);
    let ids = i32s(&[1, 0], 1);
    let wide = f32s(&[0.; 40], 20);
    let wide_sum = ir::binary(Add, &wide, &wide).unwrap();
    let graphs: Vec<NodeRef> = vec![
        ir::fold_binary(Add, &[x.clone(), lit(&[10., 20., 30.]), lit(&[1.])]).unwrap(),
        ir::unary(
            Sqrt,
            &ir::binary(Add, &ir::binary(Multiply, &x, &x).unwrap(), &lit(&[1.])).unwrap(),
        )
        .unwrap(),
        ir::interleave(&[x.clone(), u8s(&[1, 2], 1), i8s(&[-1, 2], 1)]).unwrap(),
        ir::select(
            &u8s(&[1, 0], 1),
            &x,
            &ir::swizzle(&x, &[2., 1., 0.]).unwrap(),
        )
        .unwrap(),
        ir::dot(&x, &x).unwrap(),
        ir::length(&x).unwrap(),
        ir::equal_all(&x, &i32s(&[1, 2, 3, 4, 5, 6], 3)).unwrap(),
        ir::gather(&ids, &x).unwrap(),
        ir::gather(&f32s(&[1., 0.], 1), &u8s(&[1, 2], 1)).unwrap(),
        ir::binary(Divide, &i32s(&[1, 2], 1), &i16(&[0, 1])).unwrap(),
        ir::binary(Pow, &x, &lit(&[2.])).unwrap(),
        ir::unary(Abs, &i8s(&[-1, 1], 1)).unwrap(),
        ir::sequence(10., 3., -2.).unwrap(),
        ir::segmented_map(&u32s(&[0, 2], 1), 5.).unwrap(),
        ir::fround(&u32s(&[0, 1072693248, 0, 1073741824], 2)).unwrap(),
        ir::extent(&x).unwrap(),
        ir::extent(&ir::binary(Multiply, &x, &lit(&[2.])).unwrap()).unwrap(),
        ir::extent(&i8s(&[1, 2], 2)).unwrap(),
        ir::reduce(ReduceKind::ArgMax, &x, None, 3).unwrap(),
        ir::reduce(ReduceKind::Mean, &i8s(&[1, 2], 2), Some(&u8s(&[1], 1)), 2).unwrap(),
        ir::reduce(ReduceKind::Sum, &wide, Some(&u8s(&[1; 40], 20)), 4).unwrap(),
        // Rows wider than WIDE_ROW_LANES: a lane per invocation on WebGPU.
        ir::unary(Sqrt, &ir::binary(Add, &wide, &lit(&[1.])).unwrap()).unwrap(),
        ir::interleave(&[
            ir::unary(Abs, &f32s(&[0.; 20], 10)).unwrap(),
            ir::unary(Abs, &f32s(&[0.; 20], 10)).unwrap(),
        ])
        .unwrap(),
        ir::swizzle(
            &wide_sum,
            &[
                19., 18., 17., 0., 0., 0., 2., 4., 6., 8., 10., 12., 14., 16., 18., 1., 2., 3.,
            ],
        )
        .unwrap(),
        ir::fround(&u32s(&[0; 40], 20)).unwrap(),
        ir::binary(Add, &ir::gather(&ids, &wide).unwrap(), &lit(&[1.])).unwrap(),
        ir::binary(Multiply, &u8s(&[3; 40], 20), &u8s(&[200; 40], 20)).unwrap(),
        ir::dot(&wide_sum, &wide).unwrap(),
        ir::cast(&x, DType::U8).unwrap(),
        ir::cast(&x, DType::I32).unwrap(),
        ir::cast(&i32s(&[1, 2], 1), DType::F32).unwrap(),
        ir::cast(&u32s(&[1, 2], 1), DType::I16).unwrap(),
        ir::cast(&wide_sum, DType::U32).unwrap(),
        // Scans: every level of GroupSum and the ScanApply, narrow and wide rows.
        ir::exclusive_scan(&floats_of(300)).unwrap(),
        ir::exclusive_scan(&i8s(&[1, -2, 3, 4], 2)).unwrap(),
        ir::exclusive_scan(&ir::binary(Add, &wide, &lit(&[1.])).unwrap()).unwrap(),
        // A compaction: composed of a scan, a scatter and a select.
        ir::filter(
            &floats_of(300),
            &ir::predicate(
                gputable::ir::Predicate::Greater,
                &[floats_of(300), lit(&[3.])],
            )
            .unwrap(),
        )
        .unwrap(),
        ir::search_sorted(&floats_of(300), &f32s(&[1.5, 7.], 1), true).unwrap(),
        ir::search_sorted(&i32s(&[1, 2], 1), &i8s(&[1, 2], 1), false).unwrap(),
        // A sort's own pass has no generated kernel: GPU backends run it composed.
        ir::split_permutation(&[u32s(&[3, 1, 2, 0, 5], 1)], &[3]).unwrap(),
        ir::segment_sum(&f32s(&[1., 2., 3., 4.], 2), &u32s(&[0, 1, 2], 1)).unwrap(),
        ir::segment_sum(&wide, &u32s(&[0, 2], 1)).unwrap(),
        ir::reshape(&u32s(&[0; 12], 3), 4).unwrap(),
        ir::reshape(&u32s(&[0; 40], 1), 20).unwrap(),
    ];
    for (i, root) in graphs.iter().enumerate() {
        for region in regions_composed(root) {
            if region.is_scatter() {
                continue; // fixed kernels, validated below
            }
            let values = leaves(&region);
            let reduction = Reduction::of(&region.root).map(|r| r.kind);
            let kernel = match reduction {
                Some(kind) => reduce_partials_kernel(&region, &values, kind, 100, 4, 7).unwrap(),
                None => elementwise_kernel(&region, &values, 100, 6400).unwrap(),
            };
            validate(&kernel.source, &format!("kernel {i}"));
            // The WebGL2 kernels of the same region, with tiles of 4096 rows.
            let layout = TextureLayout {
                width_shift: 6,
                tile_shift: 12,
            };
            let kernel = match reduction {
                Some(kind) => {
                    fragment_reduce::reduce_partials_kernel(&region, &values, kind, layout, 0)
                        .unwrap()
                }
                None => fragment::elementwise_kernel(&region, &values, layout, 100, 0..1).unwrap(),
            };
            validate(&kernel.source, &format!("fragment kernel {i}"));
        }
    }
    // The scatter kernels: WebGPU's fill, scatter, row numbers and one block's compaction,
    // WebGL2's point draw of each type and of row numbers.
    for kind in ["fill", "scatter", "row_numbers", "compact"] {
        validate(
            &gputable::wgsl::compute::scatter_source(kind).unwrap(),
            &format!("the {kind} kernel"),
        );
    }
    // WebGPU's radix sort: a pass's three kernels.
    // With subgroups, each size WebGPU allows.
    use gputable::wgsl::compute::{sort_lanes, sort_source};
    for kind in ["count", "scan", "place"] {
        validate(
            &sort_source(kind, None).unwrap(),
            &format!("the sort's {kind} kernel"),
        );
        for size in [4, 8, 16, 32, 64, 128] {
            validate_with_subgroups(
                &sort_source(kind, sort_lanes(size)).unwrap(),
                &format!("the sort's {kind} kernel by subgroups of {size}"),
            );
        }
    }
    // One block's sort: every pass of a key in one kernel.
    validate(
        &sort_source("block", None).unwrap(),
        "the sort's one-block kernel",
    );
    // WebGPU's sort read for its first rows: each block's select by 1 to 4 key words, the
    // candidates' keys gathered, their order mapped back.
    use gputable::wgsl::compute::{top_k_source, TOP_K_WORDS};
    for words in 1..=TOP_K_WORDS {
        validate(
            &top_k_source("select", words).unwrap(),
            &format!("the select kernel by {words} key words"),
        );
    }
    for kind in ["gather", "finish"] {
        validate(
            &top_k_source(kind, 0).unwrap(),
            &format!("the first rows' {kind} kernel"),
        );
    }
    // WebGPU's lookup: the hash table's inserts and probes.
    for kind in ["insert", "probe"] {
        validate(
            &gputable::wgsl::compute::lookup_source(kind).unwrap(),
            &format!("the lookup's {kind} kernel"),
        );
    }
    // WebGL2's sort: a merge pass by each number of keys it carries.
    for keys in 1..=fragment::MERGE_SORT_MAX_KEYS {
        validate(
            &fragment::merge_sort_source(keys).unwrap(),
            &format!("the merge pass by {keys} keys"),
        );
    }
    // WebGL2's sort read for its first rows: each run's first rows kept by each number of keys.
    for keys in 1..=fragment::MERGE_SORT_MAX_KEYS {
        validate(
            &fragment::first_rows_source(keys).unwrap(),
            &format!("the first rows pass by {keys} keys"),
        );
    }
    // WebGL2's bin counts: the blended points and the totals written as uint32.
    for kind in ["points", "counts", "sum_points"] {
        validate(
            &fragment::bin_points_source(kind).unwrap(),
            &format!("the bin count's {kind} draw"),
        );
    }
    // Few bins: each block's partials in 1 to 8 targets, then their totals.
    for targets in 0..=8 {
        for counts in [false, true] {
            if targets > 0 {
                validate(
                    &fragment::block_bins_source(!counts, targets).unwrap(),
                    &format!("the block bins draw into {targets} targets (counts {counts})"),
                );
            }
            validate(
                &fragment::block_totals_source(counts, targets).unwrap(),
                &format!("the block totals draw from {targets} targets (counts {counts})"),
            );
        }
    }
    for class in [Class::F, Class::I, Class::U] {
        validate(
            &fragment::scatter_points_source(Some(class)).unwrap(),
            &format!("the point scatter of {class:?}"),
        );
    }
    validate(
        &fragment::scatter_points_source(None).unwrap(),
        "the point scatter of row numbers",
    );
    // A gather source bound as two parts (a chunked or binding-split source).
    let source = f32s(&[1., 2., 3., 4., 5., 6.], 2);
    let root = ir::gather(&u32s(&[2, 0], 1), &source).unwrap();
    let region = &plan(std::slice::from_ref(&root), Fusion::On)
        .unwrap()
        .regions[0];
    let at = region
        .leaves
        .iter()
        .position(|l| l.id == source.id)
        .unwrap();
    let part = |v: &[f32]| {
        Rc::new(Value::host(
            Column::new(ColumnData::F32(v.to_vec()), 2).unwrap(),
        ))
    };
    let mut values = leaves(region);
    values[at] = Rc::new(Value::parts(vec![part(&[1., 2.]), part(&[3., 4., 5., 6.])]));
    let kernel = elementwise_kernel(region, &values, 2, 64).unwrap();
    assert!(kernel.buffers.contains(&(at, 0)) && kernel.buffers.contains(&(at, 1)));
    validate(&kernel.source, "a gather from a source bound as parts");
    // The executor's copies of rows spanning stored chunks, narrow and wide rows.
    for (values, size) in [
        (ColumnData::F32(vec![0.; 12]), 3),
        (ColumnData::U8(vec![0; 12]), 1),
        (ColumnData::I32(vec![0; 40]), 20),
    ] {
        let pieces: Vec<Rc<Value>> = (0..2)
            .map(|_| Rc::new(Value::host(Column::new(values.clone(), size).unwrap())))
            .collect();
        let inputs: Vec<NodeRef> = pieces.iter().cloned().map(ir::resident).collect();
        let root = ir::rows(inputs.clone(), vec![(1, 2), (0, 1)]).unwrap();
        let region = Region::new(root.clone(), vec![root], inputs);
        let kernel = elementwise_kernel(&region, &pieces, 2, 64).unwrap();
        validate(&kernel.source, &format!("row copy of size {size}"));
        let layout = TextureLayout {
            width_shift: 6,
            tile_shift: 12,
        };
        let kernel = fragment::elementwise_kernel(&region, &pieces, layout, 2, 0..1).unwrap();
        validate(&kernel.source, &format!("fragment row copy of size {size}"));
    }
    let layout = TextureLayout {
        width_shift: 13,
        tile_shift: 26,
    };
    for class in [Class::F, Class::I, Class::U] {
        for kind in ReduceKind::ALL {
            let what = format!("{} of {class:?}", kind.name());
            let out =
                kind.output_type(DType::ALL.into_iter().find(|t| t.class() == class).unwrap());
            validate(
                &fragment_reduce::reduce_fold_source(kind, class),
                &format!("fragment fold of {what}"),
            );
            validate(
                &fragment_reduce::reduce_combine_source(kind, class),
                &format!("fragment combine of {what}"),
            );
            validate(
                &fragment_reduce::reduce_plane_partials_source(kind, class),
                &format!("fragment reduction of a stored plane, {what}"),
            );
            if kind == ReduceKind::Extent {
                validate(
                    &fragment_reduce::reduce_output_rows_source(kind, class, layout),
                    &format!("fragment output rows of {what}"),
                );
            }
            for channels in [1, 4] {
                validate(
                    &fragment_reduce::reduce_output_plane_source(
                        kind,
                        class,
                        out.class(),
                        channels,
                    ),
                    &format!("fragment output plane of {what}"),
                );
            }
            for section in ["combine", "final"] {
                validate(
                    &reduce_tail_source(section, kind, class, 3, out.class()).unwrap(),
                    &format!("{section} pass of {what}"),
                );
            }
        }
    }
    // A reduction over rows wider than the narrow path folds lane by lane.
    let wide = f32s(&[0.; 40], 20);
    let root = ir::extent(&wide).unwrap();
    let region = &plan(std::slice::from_ref(&root), Fusion::On)
        .unwrap()
        .regions[0];
    let kernel =
        reduce_partials_kernel(region, &leaves(region), ReduceKind::Extent, 2, 1, 0).unwrap();
    validate(&kernel.source, "wide reduction");
}

/// The regions of `root`'s plan, a walk's (a scan's, a compaction's) replaced by the regions
/// of the ops GPU backends compose it of.
fn regions_composed(root: &NodeRef) -> Vec<Region> {
    let mut regions = Vec::new();
    for region in plan(std::slice::from_ref(root), Fusion::On)
        .unwrap()
        .regions
    {
        match region.is_walk() {
            true => regions.extend(regions_composed(
                &ir::compose_walk(&region.root.op, &region.root.inputs).unwrap(),
            )),
            false => regions.push(region),
        }
    }
    regions
}

fn floats_of(rows: usize) -> NodeRef {
    f32s(&(0..rows).map(|v| v as f32).collect::<Vec<_>>(), 1)
}

fn i16(values: &[i16]) -> NodeRef {
    ir::source(ColumnData::I16(values.to_vec()), 1, false).unwrap()
}
