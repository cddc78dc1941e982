//! Fragment kernels for the WebGL2 backend, generated from the same regions and node code
//! as the WebGPU kernels: only the storage (data textures instead of storage buffers) and
//! the entry points differ.
//!
//! A fragment computes one row: its texel position in the draw's tile gives the row, and it
//! writes up to 4 lanes per render target. A reduction folds rows into partial states (two
//! render targets: the states' first and second words, 4 lanes each) over several draws.

use std::fmt::Write;
use std::ops::Range;
use std::rc::Rc;

use super::reduce::{state_functions, ReduceOp};
use super::{
    finish, plane_channels, start, wgsl_type, zero, Kernel, Storage, TextureLayout, PRELUDE,
};
use crate::dtype::Class;
use crate::error::Result;
use crate::plan::Region;
use crate::value::Value;

const FULLSCREEN: &str = include_str!("../../shaders/fullscreen.wgsl");

/// Parameter slot 1: the first row of the draw's tile.
pub const PARAM_TILE_BASE: usize = 1;
/// Rows one fragment folds in the first reduction pass, and texels in each later one.
pub const REDUCE_FOLD: u32 = 256;

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

/// The two render targets of partial states: their first and second words, 4 lanes each.
fn state_targets(ty: &str) -> String {
    format!("struct Out {{\n    @location(0) a: vec4<{ty}>,\n    @location(1) b: vec4<{ty}>,\n}}\n")
}

/// `Out` of four lane states.
fn store_states(ty: &str) -> String {
    format!(
        "Out(vec4<{ty}>(st[0].a, st[1].a, st[2].a, st[3].a), vec4<{ty}>(st[0].b, st[1].b, st[2].b, st[3].b))"
    )
}

/// First reduction pass over one tile, for lanes `4 * plane ..`: the fragment `g` texels
/// after the band start (parameter 3) folds rows `g * REDUCE_FOLD ..` of the tile
/// (parameter 4: rows in it), computing the fused prologue, into partial states.
pub fn reduce_partials_kernel(
    region: &Region,
    leaves: &[Rc<Value>],
    op: ReduceOp,
    layout: TextureLayout,
    plane: u32,
) -> Result<Kernel> {
    let input = &region.root.inputs[0];
    let class = input.meta.dtype.class();
    let (mut g, body) = start(
        region,
        leaves,
        vec![0, 0, 0, 0, 0],
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
        let _ = writeln!(fold, "        st[{c}] = state_add(st[{c}], {value});");
    }
    let ty = wgsl_type(class);
    let _ = write!(
        g.out,
        "{state}\n{FULLSCREEN}\n{targets}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let g = ((u32(pos.y) - param(3u)) << {shift}u) + u32(pos.x);\n    \
         var st = array<State, 4>(state_identity(), state_identity(), state_identity(), state_identity());\n    \
         let end = min(g * {REDUCE_FOLD}u + {REDUCE_FOLD}u, param(4u));\n    \
         for (var i = g * {REDUCE_FOLD}u; i < end; i++) {{\n        let row = param({PARAM_TILE_BASE}u) + i;\n\
         {body}{fold}    }}\n    return {out};\n}}\n",
        state = state_functions(op, class),
        targets = state_targets(ty),
        out = store_states(ty),
        shift = layout.width_shift,
    );
    Ok(finish(g))
}

/// First reduction pass over one tile of a materialized input, one plane (4 lanes) per
/// draw, so a row of any width needs one texture per draw: the fragment `g` texels after the
/// band start (parameter 3) folds rows `g * REDUCE_FOLD ..` of the tile (parameter 0: rows in
/// it) of the plane texture bound at 1, whose width is `1 << parameter 1` texels.
pub fn reduce_plane_partials_source(op: ReduceOp, class: Class, layout: TextureLayout) -> String {
    let ty = wgsl_type(class);
    let add: String = (0..4)
        .map(|c| format!("        st[{c}] = state_add(st[{c}], v[{c}]);\n"))
        .collect();
    format!(
        "{prelude}\n{state}\n{FULLSCREEN}\n@group(0) @binding(1) var plane_in: texture_2d<{ty}>;\n{targets}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let g = ((u32(pos.y) - param(3u)) << {shift}u) + u32(pos.x);\n    \
         let mask = (1u << param(1u)) - 1u;\n    \
         var st = array<State, 4>(state_identity(), state_identity(), state_identity(), state_identity());\n    \
         let end = min(g * {REDUCE_FOLD}u + {REDUCE_FOLD}u, param(0u));\n    \
         for (var i = g * {REDUCE_FOLD}u; i < end; i++) {{\n        \
         let v = textureLoad(plane_in, vec2<i32>(i32(i & mask), i32(i >> param(1u))), 0);\n\
         {add}    }}\n    return {out};\n}}\n",
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        state = state_functions(op, class),
        targets = state_targets(ty),
        out = store_states(ty),
        shift = layout.width_shift,
    )
}

/// Later reduction passes: fragment `g` combines texels `g * REDUCE_FOLD ..` of the partial
/// state textures (parameter 0: texels in them).
pub fn reduce_fold_source(op: ReduceOp, class: Class, layout: TextureLayout) -> String {
    let ty = wgsl_type(class);
    let shift = layout.width_shift;
    let mask = layout.width() - 1;
    let combine: String = (0..4)
        .map(|c| format!("        st[{c}] = state_combine(st[{c}], State(a[{c}], b[{c}]));\n"))
        .collect();
    format!(
        "{prelude}\n{state}\n{FULLSCREEN}\n@group(0) @binding(1) var a_in: texture_2d<{ty}>;\n\
         @group(0) @binding(2) var b_in: texture_2d<{ty}>;\n{targets}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let g = (u32(pos.y) << {shift}u) + u32(pos.x);\n    \
         var st = array<State, 4>(state_identity(), state_identity(), state_identity(), state_identity());\n    \
         let end = min(g * {REDUCE_FOLD}u + {REDUCE_FOLD}u, param(0u));\n    \
         for (var i = g * {REDUCE_FOLD}u; i < end; i++) {{\n        \
         let xy = vec2<i32>(i32(i & {mask}u), i32(i >> {shift}u));\n        \
         let a = textureLoad(a_in, xy, 0);\n        let b = textureLoad(b_in, xy, 0);\n\
         {combine}    }}\n    return {out};\n}}\n",
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        state = state_functions(op, class),
        targets = state_targets(ty),
        out = store_states(ty),
    )
}

/// The last reduction pass, for the lanes of one plane: the fragment of output row `lane`
/// (a scissor rect selects the plane's rows) combines the remaining texels (parameter 0) of
/// channel `lane % 4` and writes the lane's outputs.
pub fn reduce_final_source(op: ReduceOp, class: Class, layout: TextureLayout) -> String {
    let ty = wgsl_type(class);
    let shift = layout.width_shift;
    let mask = layout.width() - 1;
    let outputs: Vec<String> = (0..4)
        .map(|k| {
            if k < op.outputs() {
                format!("state_output(st, {k}u)")
            } else {
                zero(class).to_string()
            }
        })
        .collect();
    format!(
        "{prelude}\n{state}\n{FULLSCREEN}\n@group(0) @binding(1) var a_in: texture_2d<{ty}>;\n\
         @group(0) @binding(2) var b_in: texture_2d<{ty}>;\n\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<{ty}> {{\n    \
         let c = u32(pos.x) & 3u;\n    var st = state_identity();\n    \
         for (var i = 0u; i < param(0u); i++) {{\n        \
         let xy = vec2<i32>(i32(i & {mask}u), i32(i >> {shift}u));\n        \
         st = state_combine(st, State(textureLoad(a_in, xy, 0)[c], textureLoad(b_in, xy, 0)[c]));\n    }}\n    \
         return vec4<{ty}>({});\n}}\n",
        outputs.join(", "),
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        state = state_functions(op, class),
    )
}
