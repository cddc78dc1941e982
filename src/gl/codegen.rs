//! Fragment kernels for the WebGL2 backend, generated from the same regions and node code
//! as the WebGPU kernels (`crate::gpu::codegen`): only the storage (data textures instead of
//! storage buffers) and the entry points differ.
//!
//! A fragment computes one row: its texel position in the draw's tile gives the row, and it
//! writes up to 4 lanes per render target. `extent` folds rows into `[min, max]` textures
//! over several draws.

use std::fmt::Write;
use std::ops::Range;

use crate::dtype::Class;
use crate::error::Result;
use crate::gpu::codegen::{
    finish, identities, plane_channels, start, wgsl_type, zero, Kernel, Storage, TextureLayout,
    PRELUDE,
};
use crate::plan::Region;

const FULLSCREEN: &str = include_str!("../../shaders/fullscreen.wgsl");

/// Parameter slot 1: the first row of the draw's tile.
pub const PARAM_TILE_BASE: usize = 1;
/// Rows one fragment folds in the first `extent` pass, and texels in each later one.
pub const EXTENT_FOLD: u32 = 256;

/// The WGSL type of a render target with `channels` channels of `class`.
fn target_type(class: Class, channels: u32) -> String {
    match channels {
        1 => wgsl_type(class).to_string(),
        n => format!("vec{n}<{}>", wgsl_type(class)),
    }
}

/// The kernel writing planes `planes` of an elementwise region's root, one render target per
/// plane.
pub fn elementwise_kernel(
    region: &Region,
    layout: TextureLayout,
    rows: u32,
    planes: Range<u32>,
) -> Result<Kernel> {
    let root = &region.root;
    let class = root.meta.dtype.class();
    let size = root.meta.size;
    let (mut g, body) = start(region, vec![rows, 0, 0], class, Storage::Textures(layout))?;
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

/// First `extent` pass over one tile, for lanes `4 * plane ..`: the fragment `g` texels
/// after the band start (parameter 3) folds rows `g * EXTENT_FOLD ..` of the tile (parameter
/// 4: rows in it), computing the fused prologue, into `[min, max]` targets (NaN skipped).
pub fn extent_partials_kernel(
    region: &Region,
    layout: TextureLayout,
    plane: u32,
) -> Result<Kernel> {
    let input = &region.root.inputs[0];
    let class = input.meta.dtype.class();
    let (mut g, body) = start(
        region,
        vec![0, 0, 0, 0, 0],
        class,
        Storage::Textures(layout),
    )?;
    let mut fold = String::new();
    for c in 0..4 {
        let lane = plane * 4 + c;
        if lane >= input.meta.size {
            break;
        }
        let value = match g.local.get(&input.id) {
            Some(local) => format!("v{local}[{lane}]"),
            None => g.lane(input, &format!("{lane}u"), class),
        };
        let _ = writeln!(
            fold,
            "        {{ let v = {value}; if (!is_nan_value(v)) {{ if (v < lo[{c}]) {{ lo[{c}] = v; }} if (v > hi[{c}]) {{ hi[{c}] = v; }} }} }}"
        );
    }
    let ty = wgsl_type(class);
    let _ = write!(
        g.out,
        "{ids}\n{FULLSCREEN}\nstruct Out {{\n    @location(0) lo: vec4<{ty}>,\n    @location(1) hi: vec4<{ty}>,\n}}\n\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let g = ((u32(pos.y) - param(3u)) << {shift}u) + u32(pos.x);\n    \
         var lo = vec4<{ty}>(lo_identity());\n    var hi = vec4<{ty}>(hi_identity());\n    \
         let end = min(g * {EXTENT_FOLD}u + {EXTENT_FOLD}u, param(4u));\n    \
         for (var i = g * {EXTENT_FOLD}u; i < end; i++) {{\n        let row = param({PARAM_TILE_BASE}u) + i;\n\
         {body}{fold}    }}\n    return Out(lo, hi);\n}}\n",
        ids = identities(class),
        shift = layout.width_shift,
    );
    Ok(finish(g))
}

/// Later `extent` passes: fragment `g` folds texels `g * EXTENT_FOLD ..` of the `[min, max]`
/// textures (parameter 0: texels in them). Partials hold no NaN, so `min`/`max` are exact
/// (and GLSL ES 3.0 has no vector select for integers).
pub fn extent_fold_source(class: Class, layout: TextureLayout) -> String {
    let ty = wgsl_type(class);
    let shift = layout.width_shift;
    let mask = layout.width() - 1;
    format!(
        "{prelude}\n{ids}\n{FULLSCREEN}\n@group(0) @binding(1) var lo_in: texture_2d<{ty}>;\n\
         @group(0) @binding(2) var hi_in: texture_2d<{ty}>;\n\
         struct Out {{\n    @location(0) lo: vec4<{ty}>,\n    @location(1) hi: vec4<{ty}>,\n}}\n\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let g = (u32(pos.y) << {shift}u) + u32(pos.x);\n    \
         var lo = vec4<{ty}>(lo_identity());\n    var hi = vec4<{ty}>(hi_identity());\n    \
         let end = min(g * {EXTENT_FOLD}u + {EXTENT_FOLD}u, param(0u));\n    \
         for (var i = g * {EXTENT_FOLD}u; i < end; i++) {{\n        \
         let xy = vec2<i32>(i32(i & {mask}u), i32(i >> {shift}u));\n        \
         let a = textureLoad(lo_in, xy, 0);\n        let b = textureLoad(hi_in, xy, 0);\n        \
         lo = min(lo, a);\n        hi = max(hi, b);\n    }}\n    return Out(lo, hi);\n}}\n",
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        ids = identities(class),
    )
}

/// The last `extent` pass, for the lanes of one plane: the fragment of output row `lane`
/// (a scissor rect selects the plane's rows) folds the remaining texels (parameter 0) of
/// channel `lane % 4` and writes `[min, max]`, NaN for a lane that had only NaN.
pub fn extent_final_source(class: Class, layout: TextureLayout) -> String {
    let ty = wgsl_type(class);
    let shift = layout.width_shift;
    let mask = layout.width() - 1;
    format!(
        "{prelude}\n{ids}\n{FULLSCREEN}\n@group(0) @binding(1) var lo_in: texture_2d<{ty}>;\n\
         @group(0) @binding(2) var hi_in: texture_2d<{ty}>;\n\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<{ty}> {{\n    \
         let c = u32(pos.x) & 3u;\n    var lo = lo_identity();\n    var hi = hi_identity();\n    \
         for (var i = 0u; i < param(0u); i++) {{\n        \
         let xy = vec2<i32>(i32(i & {mask}u), i32(i >> {shift}u));\n        \
         let a = textureLoad(lo_in, xy, 0)[c];\n        let b = textureLoad(hi_in, xy, 0)[c];\n        \
         if (a < lo) {{ lo = a; }}\n        if (b > hi) {{ hi = b; }}\n    }}\n    \
         let empty = lo > hi;\n    \
         return vec4<{ty}>(select(lo, nan_or_zero(), empty), select(hi, nan_or_zero(), empty), {z}, {z});\n}}\n",
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        ids = identities(class),
        z = zero(class),
    )
}
