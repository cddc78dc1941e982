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
        super::PRELUDE.replace("PARAM_VEC4S", "2"),
        template.replace("#T#", wgsl_type(class))
    ))
}

/// Rows whose values a WebGL2 float bin sum adds in one texel (blended, in row order) before
/// the texels' sums are added pairwise: a bin's total is as accurate as `sum`'s.
pub const BLENDED_SUM_BLOCK: u32 = 64;

/// WebGL2's bin kernels (shaders/bin_points.wgsl): `points` (each row's 1.0 added at its
/// bin), `counts` (the totals as uint32), `sum_points` (each row's value added at its bin's
/// block) or `sums` (each bin's blocks added pairwise); the totals over the full-target
/// triangle.
pub fn bin_points_source(kind: &str) -> Result<String> {
    let template = super::compute::section(BIN_POINTS, kind)?
        .replace("#BLOCK#", &BLENDED_SUM_BLOCK.to_string());
    let vertex = if matches!(kind, "counts" | "sums") {
        FULLSCREEN
    } else {
        ""
    };
    Ok(format!(
        "{}\n{vertex}\n{template}",
        super::PRELUDE.replace("PARAM_VEC4S", "2")
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
        super::PRELUDE.replace("PARAM_VEC4S", "2")
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
