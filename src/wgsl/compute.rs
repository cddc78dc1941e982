//! Compute kernels for the WebGPU backend: elementwise regions, and reductions as partial
//! states per row group followed by a combine per lane.

use std::fmt::Write;
use std::rc::Rc;

use super::fixed_prelude;
use super::reduce::state_functions;
use super::{
    finish, internal, start, start_with, wgsl_type, Kernel, Storage, PARAM_ROWS, PARAM_ROW_STRIDE,
};
use crate::dtype::Class;
use crate::error::Result;
use crate::ir::{Op, ReduceKind};
use crate::plan::{Region, NARROW_REDUCTION_LANES, WIDE_ROW_LANES};
use crate::value::Value;

pub const WORKGROUP_SIZE: u32 = 64;

/// Workgroup size of the narrow first reduction pass.
pub const REDUCE_WORKGROUP: u32 = 256;

const REDUCE: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/reduce.wgsl"));
const SCATTER: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/scatter.wgsl"));
const RADIX_SORT: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/radix_sort.wgsl"));
const BINS: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/bins.wgsl"));
const LOOKUP: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/lookup.wgsl"));
const TOP_K: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/top_k.wgsl"));

/// Invocations of a bin count workgroup, and rows each adds in a block.
pub const BIN_THREADS: u32 = 256;
pub const BIN_ITEMS: u32 = 16;
/// Rows of a block, whose adds a workgroup gathers in workgroup memory first.
pub const BIN_BLOCK: u32 = BIN_THREADS * BIN_ITEMS;
/// Words of a float bin sum's integer sums (shaders/bins.wgsl `float`): units of 2^-149 up
/// to 2^32 times the largest float32.
pub const FLOAT_SUM_WORDS: u32 = 10;
/// Words per bin of a float bin sum: its positive and negative sums, then its flags.
pub const FLOAT_BIN_WORDS: u32 = 2 * FLOAT_SUM_WORDS + 1;

/// Most bins a workgroup's table holds, one per invocation (as luma.gl's histogram): more
/// bins spread rows over enough words that each row adds straight into the output, where
/// clearing and flushing a table of them costs about what it saves (and SwiftShader runs
/// workgroup memory and barriers slowly: 1,000 bins 181 ms through a table).
const LOCAL_BINS: u32 = BIN_THREADS;

/// Invocations of a radix sort workgroup (one per digit value), and rows each takes in a
/// block.
pub const SORT_THREADS: u32 = 256;
pub const SORT_ITEMS: u32 = 16;
/// Rows of a block, whose digits a sort pass counts together.
pub const SORT_BLOCK: u32 = SORT_THREADS * SORT_ITEMS;
/// Bits of a radix sort digit: four passes for a 32-bit key. A round's ballot (a bit per
/// thread and digit, 8 kB) fits the 16 kB of workgroup memory every WebGPU device has.
pub const SORT_DIGIT_BITS: u32 = 8;
const _: () = assert!(
    SORT_THREADS == 1 << SORT_DIGIT_BITS,
    "shaders/radix_sort.wgsl"
);

/// Where only a sort's first rows are read (shaders/top_k.wgsl): the rows each invocation
/// reads, the most first rows it keeps of them (in private memory), and the most key words.
pub const TOP_K_RUN: u32 = 256;
pub const TOP_K_MOST: u32 = 16;
pub const TOP_K_WORDS: usize = 4;

/// A compaction of at most `COMPACT_BLOCK` flags runs in one workgroup (shaders/scatter.wgsl
/// `compact`): a run of `COMPACT_ITEMS` flags per invocation.
pub const COMPACT_THREADS: u32 = 256;
pub const COMPACT_ITEMS: u32 = 16;
pub const COMPACT_BLOCK: u32 = COMPACT_THREADS * COMPACT_ITEMS;

/// The shared part of a sectioned template and its section `name`.
pub(super) fn section(template: &str, name: &str) -> Result<String> {
    sections(template, &[name])
}

/// The shared part of a sectioned template and its sections `names`, in that order.
pub(super) fn sections(template: &str, names: &[&str]) -> Result<String> {
    let mut parts = template.split("// SECTION ");
    let mut source = parts.next().unwrap_or_default().to_string();
    let parts: Vec<&str> = parts.collect();
    for name in names {
        let section = (parts.iter())
            .find_map(|part| part.strip_prefix(name)?.strip_prefix('\n'))
            .ok_or_else(|| internal("a shader template has no such section"))?;
        source.push_str(section);
    }
    Ok(source)
}

/// The shared part of the reduction template and one of its sections.
fn reduce_section(name: &str) -> Result<String> {
    section(REDUCE, name)
}

/// A scatter kernel: `fill` (the output set to 0), `scatter` (a value's rows written),
/// `row_numbers` (each row's number written) or `compact` (one block's flagged rows'
/// numbers, in order; see shaders/scatter.wgsl).
pub fn scatter_source(kind: &str) -> Result<String> {
    let template = match kind {
        "fill" => section(SCATTER, kind)?,
        "compact" => section(SCATTER, kind)?
            .replace("#WORKGROUP#", &COMPACT_THREADS.to_string())
            .replace("#ITEMS#", &COMPACT_ITEMS.to_string()),
        _ => sections(SCATTER, &[kind, "write"])?,
    };
    let template = template.replace("#WORKGROUP#", &WORKGROUP_SIZE.to_string());
    Ok(format!("{}\n{template}", fixed_prelude()))
}

/// A lookup kernel: `insert` (the table's rows into the hash table) or `probe` (each key's
/// row found; see shaders/lookup.wgsl).
pub fn lookup_source(kind: &str) -> Result<String> {
    let template = section(LOOKUP, kind)?.replace("#WORKGROUP#", &WORKGROUP_SIZE.to_string());
    Ok(format!("{}\n{template}", fixed_prelude()))
}

/// A kernel of a sort read for its first rows (see shaders/top_k.wgsl): `select` (each
/// run's first rows by `words` key words), `gather` or `finish`.
pub fn top_k_source(kind: &str, words: usize) -> Result<String> {
    let mut template = section(TOP_K, kind)?.replace("#WORKGROUP#", &WORKGROUP_SIZE.to_string());
    if kind == "select" {
        let mut keys = String::new();
        for w in 0..words {
            let _ = writeln!(
                keys,
                "@group(0) @binding({}) var<storage, read> key{w}: array<u32>;",
                w + 1
            );
        }
        keys.push_str("fn key_word(w: u32, row: u32) -> u32 {\nswitch w {\n");
        for w in 0..words {
            let _ = writeln!(keys, "case {w}u: {{ return key{w}[row]; }}");
        }
        keys.push_str("default: { return 0u; }\n}\n}\n");
        template = template
            .replace("#KEYS#", &keys)
            .replace("#WORDS#", &words.to_string())
            .replace("#MOST#", &TOP_K_MOST.to_string())
            .replace("#RUN#", &TOP_K_RUN.to_string())
            .replace("#KEY_SLOTS#", &(TOP_K_MOST as usize * words).to_string())
            .replace("#CANDIDATES#", &(words + 1).to_string());
    }
    Ok(format!("{}\n{template}", fixed_prelude()))
}

/// A radix sort kernel: `count`, `scan`, `place` or `block` (see shaders/radix_sort.wgsl);
/// `count` and `place` by subgroup ballots where `lanes` (`sort_lanes`) is given.
pub fn sort_source(kind: &str, lanes: Option<u32>) -> Result<String> {
    // `count` and `place` read rows through the `load` section.
    let template = match (kind, lanes) {
        ("count", None) => sections(RADIX_SORT, &["load", kind])?,
        ("place", None) => sections(RADIX_SORT, &["load", "ballots", kind])?,
        ("block", _) => sections(RADIX_SORT, &["ballots", kind])?,
        ("count", Some(_)) => sections(RADIX_SORT, &["load", "lanes", "count_lanes"])?,
        ("place", Some(_)) => sections(RADIX_SORT, &["load", "lanes", "place_lanes"])?,
        _ => section(RADIX_SORT, kind)?,
    };
    let template = template
        .replace("#ITEMS#", &SORT_ITEMS.to_string())
        .replace("#LANES#", &lanes.unwrap_or(SORT_THREADS).to_string())
        .replace(
            "#BALLOTS#",
            &((SORT_THREADS / 32) << SORT_DIGIT_BITS).to_string(),
        );
    // A browser compiles subgroup operations only where the shader enables them; naga
    // (natively) has them without and rejects the directive.
    let enable = match lanes.is_some() && cfg!(target_arch = "wasm32") {
        true => "enable subgroups;\n",
        false => "",
    };
    Ok(format!("{enable}{}\n{template}", fixed_prelude()))
}

/// Invocations of a radix sort's placing workgroup with subgroups whose smallest size is
/// `subgroup_min_size`: 16 subgroups (the slots its workgroup memory counts), at most
/// `SORT_THREADS`. None where the size is not a power of two from 4 (WebGPU's least) on.
pub fn sort_lanes(subgroup_min_size: u32) -> Option<u32> {
    (subgroup_min_size >= 4 && subgroup_min_size.is_power_of_two())
        .then(|| (16 * subgroup_min_size).min(SORT_THREADS))
}

/// Whether a bin kernel over `bins` bins adds a workgroup's rows in a table of its own first.
pub fn adds_in_workgroup(bins: u32) -> bool {
    bins <= LOCAL_BINS
}

/// The kernel of one chunk task of the bin pass `region` (shaders/bins.wgsl): each row the
/// pass computes added to its bin, through a workgroup table where the bins fit one, else
/// by an atomic add per row into the output. `row_stride`: invocations per grid row.
pub fn bins_kernel(region: &Region, leaves: &[Rc<Value>], row_stride: u32) -> Result<Kernel> {
    let root = &region.root;
    let bins = root.meta.length;
    let params = vec![region.rows, row_stride, 0, bins];
    let (mut g, body) = start(region, leaves, params, Storage::Buffers)?;
    let input = &root.inputs[0];
    let class = input.meta.dtype.class();
    let lane = |l: u32| match g.local.get(&input.id) {
        Some(local) => format!("v{local}[{l}u]"),
        None => g.lane(input, &format!("{l}u"), class),
    };
    let float = class == Class::F;
    let entry = match root.op {
        Op::BinCount { .. } => format!("vec2<u32>({}, 1u)", lane(0)),
        // Float ids are below 2^24, exact.
        Op::BinSum { .. } if float => {
            format!("vec2<u32>(u32({}), bitcast<u32>({}))", lane(0), lane(1))
        }
        Op::BinSum { .. } => format!(
            "vec2<u32>(bitcast<u32>({}), bitcast<u32>({}))",
            lane(0),
            lane(1)
        ),
        _ => return Err(internal("a bin kernel of another op")),
    };
    let adds = match () {
        _ if float => "float",
        _ if adds_in_workgroup(bins) => "local",
        _ => "global",
    };
    let template = bins_template(&["adds", adds])?;
    let _ = write!(
        g.out,
        "{template}\nfn entry(row: u32) -> vec2<u32> {{\n{body}    return {entry};\n}}\n"
    );
    Ok(finish(g))
}

/// Sections of shaders/bins.wgsl with their constants filled in.
fn bins_template(names: &[&str]) -> Result<String> {
    Ok(sections(BINS, names)?
        .replace("#THREADS#", &BIN_THREADS.to_string())
        .replace("#ITEMS#", &BIN_ITEMS.to_string())
        .replace("#BLOCK#", &BIN_BLOCK.to_string())
        .replace("#LOCAL_BINS#", &LOCAL_BINS.to_string())
        .replace("#FLOAT_WORDS#", &FLOAT_SUM_WORDS.to_string())
        .replace("#BIN_WORDS#", &FLOAT_BIN_WORDS.to_string()))
}

/// The kernel rounding a float bin sum's integer sums to float32 (shaders/bins.wgsl
/// `float_finish`): parameter 0 the bins, 1 invocations per grid row.
pub fn float_bins_finish_source() -> Result<String> {
    Ok(format!(
        "{}\n{}",
        fixed_prelude(),
        bins_template(&["float_finish"])?
    ))
}

/// Whether an elementwise region with a root of `lanes` lanes runs one invocation per lane
/// of each row rather than per row.
pub fn computes_per_lane(lanes: u32) -> bool {
    lanes > WIDE_ROW_LANES
}

/// The kernel of an elementwise region (every op but a reduction): one invocation per row,
/// or per lane of each row for wide rows (parameter 3: rows times lanes).
pub fn elementwise_kernel(
    region: &Region,
    leaves: &[Rc<Value>],
    rows: u32,
    row_stride: u32,
) -> Result<Kernel> {
    let root = &region.root;
    let size = root.meta.size;
    let per_lane = computes_per_lane(size);
    let invocations = rows.checked_mul(size).filter(|_| per_lane).unwrap_or(rows);
    let params = vec![rows, row_stride, 0, invocations];
    let (mut g, body) = start_with(region, leaves, params, Storage::Buffers, per_lane)?;
    let ty = wgsl_type(root.meta.dtype.class());
    let root_local = g.local[&root.id];
    let (locate, store) = if per_lane {
        (
            format!(
                "let index = gid.x + gid.y * param({PARAM_ROW_STRIDE}u);\n    if (index >= param(3u)) {{ return; }}\n    \
                 let row = index / {size}u;\n    let lane = index % {size}u;\n"
            ),
            format!("    out[index] = v{root_local};\n"),
        )
    } else {
        (
            format!(
                "let row = gid.x + gid.y * param({PARAM_ROW_STRIDE}u);\n    if (row >= param({PARAM_ROWS}u)) {{ return; }}\n"
            ),
            format!("    for (var l = 0u; l < {size}u; l++) {{ out[row * {size}u + l] = v{root_local}[l]; }}\n"),
        )
    };
    let _ = write!(
        g.out,
        "@group(0) @binding(1) var<storage, read_write> out: array<{ty}>;\n\n\
         @compute @workgroup_size({WORKGROUP_SIZE})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>) {{\n    \
         {locate}{body}{store}}}\n"
    );
    Ok(finish(g))
}

/// Whether a reduction over rows of `lanes` lanes folds rows in workgroups (with its
/// prologue fused) rather than lanes in parallel.
pub fn is_narrow(lanes: u32) -> bool {
    lanes <= NARROW_REDUCTION_LANES
}

/// The first pass of a reduction region over `rows` rows (the first being row `first_row`
/// of the reduced column): partial states, `groups` per lane (`[group][lane]`).
pub fn reduce_partials_kernel(
    region: &Region,
    leaves: &[Rc<Value>],
    kind: ReduceKind,
    rows: u32,
    groups: u32,
    first_row: u32,
) -> Result<Kernel> {
    let root = &region.root;
    let input = &root.inputs[0];
    let class = input.meta.dtype.class();
    let lanes = input.meta.size;
    let params = vec![rows, groups, 0, first_row];
    let (mut g, body) = start(region, leaves, params, Storage::Buffers)?;
    let _ = writeln!(
        g.out,
        "@group(0) @binding(1) var<storage, read_write> partials: array<State>;"
    );
    let lane_var = if is_narrow(lanes) { "l" } else { "lane" };
    let valid = match root.inputs.get(1) {
        Some(validity) => format!("{} != 0u", g.lane(validity, lane_var, Class::U)),
        None => "true".to_string(),
    };
    let template = if is_narrow(lanes) {
        let ty = wgsl_type(class);
        let value = match g.local.get(&input.id) {
            Some(local) => format!("v{local}[l]"),
            None => g.lane(input, "l", class),
        };
        let prologue = format!(
            "{body}    var vin: array<{ty}, {lanes}>;\n    for (var l = 0u; l < {lanes}u; l++) {{ vin[l] = {value}; }}\n"
        );
        reduce_section("rows")?
            .replace("#PROLOGUE#", &prologue)
            .replace("#SHARED#", &(REDUCE_WORKGROUP * lanes).to_string())
    } else {
        // Wide rows read a materialized input (the planner makes sure of it).
        let load = g.lane(input, "lane", class);
        reduce_section("lanes")?.replace("#LOAD#", &load)
    };
    let source = template
        .replace("#VALID#", &valid)
        .replace("#STATE#", &state_functions(kind, class))
        .replace("#LANES#", &lanes.to_string())
        .replace("#OUTS#", &kind.outputs().to_string());
    let _ = writeln!(g.out, "{source}");
    Ok(finish(g))
}

/// A standalone reduction kernel (`combine` or `final`) for `lanes` lanes of inputs of
/// `class`: states read from binding 2, written to binding 1 (`out` of `out_type`, or
/// `states_out`).
pub fn reduce_tail_source(
    section: &str,
    kind: ReduceKind,
    class: Class,
    lanes: u32,
    out_type: Class,
) -> Result<String> {
    let template = reduce_section(section)?
        .replace("#STATE#", &state_functions(kind, class))
        .replace("#LANES#", &lanes.to_string())
        .replace("#OUTS#", &kind.outputs().to_string());
    let target = match section {
        "final" => format!("out: array<{}>", wgsl_type(out_type)),
        _ => "states_out: array<State>".to_string(),
    };
    Ok(format!(
        "{}\n@group(0) @binding(1) var<storage, read_write> {target};\n\
         @group(0) @binding(2) var<storage, read> states_in: array<State>;\n{template}",
        fixed_prelude(),
    ))
}
