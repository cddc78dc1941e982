//! Reduction kernels for the WebGL2 backend. States live in textures of 4 lanes per texel,
//! one texture (render target) per state word. A chunk task folds rows into partial-state
//! textures, fold draws shrink them, and a last fold writes the chunk's partial as texel
//! `part * planes + plane` of the states textures; combine rounds and the output read those.

use std::fmt::Write;
use std::rc::Rc;

use super::fragment::{target_type, FULLSCREEN, PARAM_TILE_BASE};
use super::reduce::{state_functions, STATE_FIELDS};
use super::{
    finish, fixed_prelude, start, wgsl_type, zero, Kernel, Storage, TextureLayout, PRELUDE,
};
use crate::dtype::Class;
use crate::error::Result;
use crate::ir::ReduceKind;
use crate::plan::Region;
use crate::value::Value;

/// Rows one fragment folds in the first reduction pass.
pub const REDUCE_FOLD: u32 = 64;
/// Partial states one fragment of a later fold pass combines: a tree of 16-way folds keeps a
/// long float sum as accurate as its first pass.
pub const FOLD_TEXELS: u32 = 16;

/// Partial-state textures are `1 << STATE_WIDTH_SHIFT` texels wide, whatever the layout of
/// the columns: a chunk's partials need a few texels per 256 rows, not rows of the layout's
/// (up to 8192) texels, so a task's scratch stays small under a memory budget.
pub const STATE_WIDTH_SHIFT: u32 = 8;
const STATE_MASK: u32 = (1 << STATE_WIDTH_SHIFT) - 1;

/// The first reduction pass's parameter holding the index of the task's first row.
pub const PARAM_FIRST_ROW: usize = 5;

/// `struct Out`: one render target per state word, 4 lanes each.
fn state_targets(kind: ReduceKind, class: Class) -> String {
    let fields: String = kind
        .state_words(class)
        .iter()
        .zip(STATE_FIELDS)
        .enumerate()
        .map(|(k, (&w, name))| format!("    @location({k}) {name}: vec4<{}>,\n", wgsl_type(w)))
        .collect();
    format!("struct Out {{\n{fields}}}\n")
}

/// `Out` of the four lane states `st[0..4]`.
fn store_states(kind: ReduceKind, class: Class) -> String {
    let fields: Vec<String> = kind
        .state_words(class)
        .iter()
        .zip(STATE_FIELDS)
        .map(|(&w, name)| {
            format!(
                "vec4<{}>(st[0].{name}, st[1].{name}, st[2].{name}, st[3].{name})",
                wgsl_type(w)
            )
        })
        .collect();
    format!("Out({})", fields.join(", "))
}

/// Bindings `first..` of the states textures, one per word, named `<field>_in`.
fn state_inputs(kind: ReduceKind, class: Class, first: u32) -> String {
    kind.state_words(class)
        .iter()
        .zip(STATE_FIELDS)
        .enumerate()
        .map(|(k, (&w, name))| {
            format!(
                "@group(0) @binding({}) var {name}_in: texture_2d<{}>;\n",
                first + k as u32,
                wgsl_type(w)
            )
        })
        .collect()
}

/// Statements loading the 4 lane states of texel `xy` into `loaded` (`array<State, 4>`).
fn load_states(kind: ReduceKind, class: Class) -> String {
    let names: Vec<&str> = STATE_FIELDS[..kind.state_words(class).len()].to_vec();
    let loads: String = names
        .iter()
        .map(|n| format!("let {n} = textureLoad({n}_in, xy, 0);\n        "))
        .collect();
    let states: Vec<String> = (0..4)
        .map(|c| {
            let fields: Vec<String> = names.iter().map(|n| format!("{n}[{c}]")).collect();
            format!("State({})", fields.join(", "))
        })
        .collect();
    format!(
        "{loads}var loaded = array<State, 4>({});\n",
        states.join(", ")
    )
}

const IDENTITIES: &str =
    "var st = array<State, 4>(state_identity(), state_identity(), state_identity(), state_identity());";

/// First reduction pass over one tile, for lanes `4 * plane ..`: the fragment `g` texels
/// after the band start (parameter 3) folds rows `g * REDUCE_FOLD ..` of the tile
/// (parameter 4: rows in it), computing the fused prologue, into partial states. Parameter
/// `PARAM_FIRST_ROW`: the index of the task's first row in the reduced column.
pub fn reduce_partials_kernel(
    region: &Region,
    leaves: &[Rc<Value>],
    kind: ReduceKind,
    layout: TextureLayout,
    plane: u32,
) -> Result<Kernel> {
    let root = &region.root;
    let input = &root.inputs[0];
    let class = input.meta.dtype.class();
    let (mut g, body) = start(
        region,
        leaves,
        vec![0; PARAM_FIRST_ROW + 1],
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
        let valid = match root.inputs.get(1) {
            Some(validity) => format!("{} != 0u", g.lane(validity, &format!("{lane}u"), Class::U)),
            None => "true".to_string(),
        };
        let _ = writeln!(
            fold,
            "        if ({valid}) {{ st[{c}] = state_add(st[{c}], {value}, i32(row + param({PARAM_FIRST_ROW}u))); }}"
        );
    }
    let _ = write!(
        g.out,
        "{state}\n{FULLSCREEN}\n{targets}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let g = ((u32(pos.y) - param(3u)) << {STATE_WIDTH_SHIFT}u) + u32(pos.x);\n    {IDENTITIES}\n    \
         let end = min(g * {REDUCE_FOLD}u + {REDUCE_FOLD}u, param(4u));\n    \
         for (var i = g * {REDUCE_FOLD}u; i < end; i++) {{\n        let row = param({PARAM_TILE_BASE}u) + i;\n\
         {body}{fold}    }}\n    return {out};\n}}\n",
        state = state_functions(kind, class),
        targets = state_targets(kind, class),
        out = store_states(kind, class),
    );
    Ok(finish(g))
}

/// First reduction pass over one tile of a materialized input, one plane (4 lanes) per
/// draw, so a row of any width needs one texture per draw: the fragment `g` texels after the
/// band start (parameter 3) folds rows `g * REDUCE_FOLD ..` of the tile (parameter 0: rows in
/// it) of the plane texture bound at 1, whose width is `1 << parameter 1` texels. Parameter
/// 4: the index of the tile's first row in the reduced column.
pub fn reduce_plane_partials_source(kind: ReduceKind, class: Class) -> String {
    let ty = wgsl_type(class);
    let add: String = (0..4)
        .map(|c| format!("        st[{c}] = state_add(st[{c}], v[{c}], at);\n"))
        .collect();
    format!(
        "{prelude}\n{state}\n{FULLSCREEN}\n@group(0) @binding(1) var plane_in: texture_2d<{ty}>;\n{targets}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    \
         let g = ((u32(pos.y) - param(3u)) << {STATE_WIDTH_SHIFT}u) + u32(pos.x);\n    \
         let mask = (1u << param(1u)) - 1u;\n    {IDENTITIES}\n    \
         let end = min(g * {REDUCE_FOLD}u + {REDUCE_FOLD}u, param(0u));\n    \
         for (var i = g * {REDUCE_FOLD}u; i < end; i++) {{\n        \
         let v = textureLoad(plane_in, vec2<i32>(i32(i & mask), i32(i >> param(1u))), 0);\n        \
         let at = i32(i + param(4u));\n\
         {add}    }}\n    return {out};\n}}\n",
        prelude = fixed_prelude(),
        state = state_functions(kind, class),
        targets = state_targets(kind, class),
        out = store_states(kind, class),
    )
}

/// A fragment kernel that combines, in order, the states of the texels `index` names for
/// `k` in `first..end`, after `setup` (which computes `first` and `end`).
fn combining_source(kind: ReduceKind, class: Class, setup: &str, index: &str) -> String {
    let (shift, mask) = (STATE_WIDTH_SHIFT, STATE_MASK);
    format!(
        "{prelude}\n{state}\n{FULLSCREEN}\n{inputs}{targets}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> Out {{\n    {setup}\n    {IDENTITIES}\n    \
         for (var k = first; k < end; k++) {{\n        let i = {index};\n        \
         let xy = vec2<i32>(i32(i & {mask}u), i32(i >> {shift}u));\n        {load}        \
         for (var c = 0; c < 4; c++) {{ st[c] = state_combine(st[c], loaded[c]); }}\n    }}\n    \
         return {out};\n}}\n",
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        state = state_functions(kind, class),
        inputs = state_inputs(kind, class, 1),
        targets = state_targets(kind, class),
        load = load_states(kind, class),
        out = store_states(kind, class),
    )
}

/// Later passes of a chunk task: the fragment `g` texels after parameter 1 combines texels
/// `g * FOLD_TEXELS ..` of the partial-state textures (parameter 0: texels in them), so the
/// last one can write texel `part * planes + plane` of the states textures.
pub fn reduce_fold_source(kind: ReduceKind, class: Class) -> String {
    let setup = format!(
        "let g = (u32(pos.y) << {STATE_WIDTH_SHIFT}u) + u32(pos.x) - param(1u);\n    \
         let first = g * {FOLD_TEXELS}u;\n    let end = min(first + {FOLD_TEXELS}u, param(0u));"
    );
    combining_source(kind, class, &setup, "k")
}

/// A combine round: output texel `j * planes + plane` folds input texels
/// `p * planes + plane` for `p` in `j * every ..` (in order). Parameters: 0 input parts,
/// 1 every, 3 planes.
pub fn reduce_combine_source(kind: ReduceKind, class: Class) -> String {
    let setup = format!(
        "let t = (u32(pos.y) << {STATE_WIDTH_SHIFT}u) + u32(pos.x);\n    \
         let j = t / param(3u);\n    let plane = t % param(3u);\n    \
         let first = j * param(1u);\n    let end = min(first + param(1u), param(0u));"
    );
    combining_source(kind, class, &setup, "k * param(3u) + plane")
}

/// The output of a reduction with one value per lane (one row of `lanes` lanes): the
/// fragment at texel 0 of plane `p`'s texture (parameter 0) writes the outputs of the states
/// in texel `p`, `channels` of them.
pub fn reduce_output_plane_source(
    kind: ReduceKind,
    class: Class,
    out_class: Class,
    channels: u32,
) -> String {
    let (shift, mask) = (STATE_WIDTH_SHIFT, STATE_MASK);
    let outputs: Vec<String> = (0..channels)
        .map(|c| format!("state_output(loaded[{c}], 0u)"))
        .collect();
    format!(
        "{prelude}\n{state}\n{FULLSCREEN}\n{inputs}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> @location(0) {ty} {{\n    \
         let i = param(0u);\n    let xy = vec2<i32>(i32(i & {mask}u), i32(i >> {shift}u));\n    {load}    \
         return {ty}({});\n}}\n",
        outputs.join(", "),
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        state = state_functions(kind, class),
        inputs = state_inputs(kind, class, 1),
        load = load_states(kind, class),
        ty = target_type(out_class, channels),
    )
}

/// The output of `extent` (a row of 2 per lane): the fragment at texel `lane` writes
/// `[min, max, 0, 0]` of the lane's state (channel `lane % 4` of texel `lane / 4`).
pub fn reduce_output_rows_source(kind: ReduceKind, class: Class, layout: TextureLayout) -> String {
    let ty = wgsl_type(class);
    let shift = layout.width_shift;
    let outputs: Vec<String> = (0..4)
        .map(|k| match k < kind.outputs() {
            true => format!("state_output(loaded[lane & 3u], {k}u)"),
            false => zero(class).to_string(),
        })
        .collect();
    format!(
        "{prelude}\n{state}\n{FULLSCREEN}\n{inputs}\n\
         @fragment\nfn main(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<{ty}> {{\n    \
         let lane = (u32(pos.y) << {shift}u) + u32(pos.x);\n    let i = lane >> 2u;\n    \
         let xy = vec2<i32>(i32(i & {STATE_MASK}u), i32(i >> {STATE_WIDTH_SHIFT}u));\n    {load}    \
         return vec4<{ty}>({});\n}}\n",
        outputs.join(", "),
        prelude = PRELUDE.replace("PARAM_VEC4S", "1"),
        state = state_functions(kind, class),
        inputs = state_inputs(kind, class, 1),
        load = load_states(kind, class),
    )
}
