//! Fragment kernels for the WebGL2 backend, generated from the same regions and node code
//! as the WebGPU kernels: only the storage (data textures instead of storage buffers) and
//! the entry points differ.
//!
//! A fragment computes one row: its texel position in the draw's tile gives the row, and it
//! writes up to 4 lanes per render target. Reductions are in `fragment_reduce`.

use std::fmt::Write;
use std::ops::Range;
use std::rc::Rc;

use super::compute::{TOP_K_MOST, TOP_K_RUN};
use super::{finish, plane_channels, start, wgsl_type, Kernel, Storage, TextureLayout};
use crate::dtype::Class;
use crate::error::Result;
use crate::plan::Region;
use crate::value::Value;

pub(super) const FULLSCREEN: &str =
    include_str!(concat!(env!("OUT_DIR"), "/shaders/fullscreen.wgsl"));
const SCATTER_POINTS: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/scatter_points.wgsl"));
const MERGE_SORT: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/merge_sort.wgsl"));
const BIN_POINTS: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/bin_points.wgsl"));

/// Keys a WebGL2 merge pass carries: one render target each besides the permutation's, in
/// the 4 every WebGL2 device has.
pub const MERGE_SORT_MAX_KEYS: usize = 3;
/// The merge pass's parameter slots: the run width, 1 on the first pass, the first key's
/// mask.
pub const MERGE_PARAM_RUN: usize = 1;
pub const MERGE_PARAM_FIRST_PASS: usize = 4;
pub const MERGE_PARAM_MASKS: usize = 5;

/// The point-list draw of a scatter of values of `class`, or of each row's number where
/// `class` is `None` (see shaders/scatter_points.wgsl).
pub fn scatter_points_source(class: Option<Class>) -> Result<String> {
    let (written, class) = match class {
        Some(class) => ("values", class),
        None => ("row_numbers", Class::U),
    };
    let template = super::compute::sections(SCATTER_POINTS, &[written, "points"])?;
    Ok(format!(
        "{}\n{}",
        super::fixed_prelude(),
        template.replace("#T#", wgsl_type(class))
    ))
}

/// Rows whose values a WebGL2 float bin sum adds in one texel (blended, in row order) before
/// the texels' sums are added pairwise: a bin's total is as accurate as `sum`'s.
pub const BLENDED_SUM_BLOCK: u32 = 64;

/// Rows a fragment of WebGL2's few-bins draw adds into its bins' partials.
pub const BIN_BLOCK: u32 = 128;

/// WebGL2's bin kernels drawing a point per row (shaders/bin_points.wgsl): `points` (each
/// row's 1.0 added at its bin), `counts` (those totals as uint32, over the full-target
/// triangle) or `sum_points` (each row's value added at its bin's block).
pub fn bin_points_source(kind: &str) -> Result<String> {
    let template = super::compute::section(BIN_POINTS, kind)?
        .replace("#BLOCK#", &BLENDED_SUM_BLOCK.to_string());
    let vertex = if kind == "counts" { FULLSCREEN } else { "" };
    Ok(format!("{}\n{vertex}\n{template}", super::fixed_prelude()))
}

/// WebGL2's draw adding each block of `BIN_BLOCK` rows into its bins' partials, four bins to
/// each of `targets` float32 targets: the rows' ids counted (`sums`: `[id, value]` pairs'
/// values summed). See shaders/bin_points.wgsl `block_bins`.
pub fn block_bins_source(sums: bool, targets: u32) -> Result<String> {
    let rows = match sums {
        true => "@group(0) @binding(1) var pairs: texture_2d<f32>;\n\
                 fn bin_entry(row: u32) -> vec2<f32> {\n    let pair = textureLoad(pairs, texel(row), 0);\n    \
                 return vec2<f32>(select(-1.0, pair.x, pair.x < f32(param(0u))), pair.y);\n}",
        false => "@group(0) @binding(1) var ids: texture_2d<u32>;\n\
                  fn bin_entry(row: u32) -> vec2<f32> {\n    let id = textureLoad(ids, texel(row), 0).r;\n    \
                  return vec2<f32>(select(-1.0, f32(id), id < param(0u)), 1.0);\n}",
    };
    let (mut outs, mut stores) = (String::new(), String::new());
    for t in 0..targets {
        let _ = writeln!(outs, "    @location({t}) o{t}: vec4<f32>,");
        let lanes: Vec<String> = (0..4).map(|c| format!("partials[{}]", 4 * t + c)).collect();
        let _ = writeln!(stores, "    out.o{t} = vec4<f32>({});", lanes.join(", "));
    }
    let template = super::compute::section(BIN_POINTS, "block_bins")?
        .replace("#BLOCK#", &BIN_BLOCK.to_string())
        .replace("#ROWS#", rows)
        .replace("#OUTS#", &outs)
        .replace("#STORES#", &stores)
        .replace("#BINS#", &(4 * targets).to_string());
    Ok(format!(
        "{}\n{FULLSCREEN}\n{template}",
        super::fixed_prelude()
    ))
}

/// WebGL2's draw of each bin's total of its blocks' partials, as float32 (`counts`: as
/// uint32): from `block_bins`' `targets` textures of four bins, or (`targets` 0) from
/// `sum_points`' one texture of a texel per bin and block. See `block_totals`.
pub fn block_totals_source(counts: bool, targets: u32) -> Result<String> {
    let mut partials = String::new();
    match targets {
        0 => partials.push_str(
            "@group(0) @binding(1) var partials0: texture_2d<f32>;\n\
             fn partial(bin: u32, b: u32) -> f32 {\n    \
             return textureLoad(partials0, texel(bin * param(4u) + b), 0).r;\n}\n",
        ),
        _ => {
            for t in 0..targets {
                let _ = writeln!(
                    partials,
                    "@group(0) @binding({}) var partials{t}: texture_2d<f32>;",
                    t + 1
                );
            }
            partials.push_str("fn partial(bin: u32, b: u32) -> f32 {\n    switch bin / 4u {\n");
            for t in 0..targets {
                let _ = writeln!(
                    partials,
                    "        case {t}u: {{ return textureLoad(partials{t}, texel(b), 0)[bin % 4u]; }}"
                );
            }
            partials.push_str("        default: { return 0.0; }\n    }\n}\n");
        }
    }
    let template = super::compute::section(BIN_POINTS, "block_totals")?
        .replace("#PARTIALS#", &partials)
        .replace("#TOTAL#", if counts { "u32" } else { "f32" });
    Ok(format!(
        "{}\n{FULLSCREEN}\n{template}",
        super::fixed_prelude()
    ))
}

/// A merge pass of the WebGL2 sort by `keys` uint32 keys (see shaders/merge_sort.wgsl).
pub fn merge_sort_source(keys: usize) -> Result<String> {
    sort_pass_source("merge", keys, 2)
}

/// The pass keeping each run's first rows of a WebGL2 sort by `keys` uint32 keys read for
/// its first rows alone (see shaders/merge_sort.wgsl `first_rows`).
pub fn first_rows_source(keys: usize) -> Result<String> {
    sort_pass_source("first_rows", keys, 1)
}

/// The sort pass `section` by `keys` keys, bound from `first_binding` on: their loads, the
/// lexicographic comparison, and the render targets carrying them.
fn sort_pass_source(section: &str, keys: usize, first_binding: usize) -> Result<String> {
    let (mut bindings, mut before, mut outs, mut stores) =
        (String::new(), String::new(), String::new(), String::new());
    for key in 0..keys {
        let mask = MERGE_PARAM_MASKS + key;
        let _ = writeln!(
            bindings,
            "@group(0) @binding({binding}) var key{key}_in: texture_2d<u32>;\n\
             fn key{key}(i: u32) -> u32 {{ return textureLoad(key{key}_in, texel(i), 0).r & param({mask}u); }}",
            binding = key + first_binding,
        );
        let _ = match key + 1 == keys {
            true => writeln!(before, "    return key{key}(p) < key{key}(q);"),
            false => writeln!(
                before,
                "    let p{key} = key{key}(p);\n    let q{key} = key{key}(q);\n    \
                 if (p{key} != q{key}) {{ return p{key} < q{key}; }}"
            ),
        };
        let _ = writeln!(outs, "    @location({}) key{key}: u32,", key + 1);
        // Carried whole (compared masked): the last pass's are the keys in sorted order.
        let _ = writeln!(
            stores,
            "    out.key{key} = textureLoad(key{key}_in, texel(source), 0).r;"
        );
    }
    let template = super::compute::section(MERGE_SORT, section)?
        .replace("#KEYS#", &bindings)
        .replace("#BEFORE#", &before)
        .replace("#OUTS#", &outs)
        .replace("#STORES#", &stores)
        .replace("#RUN#", &TOP_K_RUN.to_string())
        .replace("#MOST#", &TOP_K_MOST.to_string());
    Ok(format!(
        "{}\n{FULLSCREEN}\n{template}",
        super::fixed_prelude()
    ))
}

/// Parameter slot 1: the first row of the draw's tile.
pub const PARAM_TILE_BASE: usize = 1;

/// The WGSL type of a render target with `channels` channels of `class`.
pub(super) fn target_type(class: Class, channels: u32) -> String {
    match channels {
        1 => wgsl_type(class).to_string(),
        n => format!("vec{n}<{}>", wgsl_type(class)),
    }
}

/// The kernel writing planes `planes` of an elementwise region's root, one render target per
/// plane.
pub fn elementwise_kernel(
    region: &Region,
    leaves: &[Rc<Value>],
    layout: TextureLayout,
    rows: u32,
    planes: Range<u32>,
) -> Result<Kernel> {
    let root = &region.root;
    let class = root.meta.dtype.class();
    let size = root.meta.size;
    let (mut g, body) = start(region, leaves, vec![rows, 0, 0], Storage::Textures(layout))?;
    let channels = plane_channels(size);
    let ty = target_type(class, channels);
    let mut fields = String::new();
    let mut stores = String::new();
    let root_local = g.local[&root.id];
    for (location, plane) in planes.enumerate() {
        let _ = writeln!(fields, "    @location({location}) o{location}: {ty},");
        let lanes: Vec<String> = (0..channels)
            .map(|c| {
                let lane = plane * 4 + c;
                if lane < size {
                    format!("v{root_local}[{lane}]")
                } else {
                    format!("{}(0)", wgsl_type(class))
                }
            })
            .collect();
        let _ = writeln!(stores, "    out.o{location} = {ty}({});", lanes.join(", "));
    }
    let _ = write!(
        g.out,
        "{FULLSCREEN}\nstruct Out {{\n{fields}}}\n\n@fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let row = param({PARAM_TILE_BASE}u) + (u32(pos.y) << {shift}u) + u32(pos.x);\n    var out: Out;\n    \
         if (row >= param(0u)) {{ return out; }}\n{body}{stores}    return out;\n}}\n",
        shift = layout.width_shift,
    );
    Ok(finish(g))
}
