//! WGSL generation: one compute kernel per fused region of the plan.
//!
//! One invocation computes one output row. Each node of the region becomes a local array of
//! its lanes, computed from its inputs' lanes with the lane rule of `api.md`; only the root
//! is stored. The source depends only on the region's structure and types: row counts,
//! lengths and sequence parameters come from a uniform array, so new data or row counts
//! reuse the cached pipeline.

use std::collections::HashMap;
use std::fmt::Write;

use crate::dtype::{Class, DType};
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{BinaryOp, NodeRef, Op, UnaryOp};
use crate::plan::Region;

pub const WORKGROUP_SIZE: u32 = 64;

/// Shared helpers: integer division by zero is 0 (WGSL would give the dividend) and `pow`
/// follows the CPU's (C `powf`) rules where WGSL's `pow` is undefined.
pub(crate) const PRELUDE: &str = include_str!("../../shaders/prelude.wgsl");
/// `gt_sin gt_cos gt_tan gt_exp gt_log`: accurate float32 transcendentals.
const MATH: &str = include_str!("../../shaders/math.wgsl");
/// `gt_fround`: float64 word pairs to float32 high and low parts, without f64.
const FROUND: &str = include_str!("../../shaders/fround.wgsl");

/// A generated kernel and its parameter words. Binding 0 holds the parameters; with storage
/// buffers, 1 the output and 2.. the region's leaves in order; with textures, 1.. the
/// textures listed in `textures`.
pub struct Kernel {
    pub source: String,
    pub params: Vec<u32>,
    pub textures: Vec<TextureBinding>,
}

/// Where a kernel's materialized inputs live.
#[derive(Clone, Copy, Debug)]
pub enum Storage {
    /// WebGPU storage buffers: packed rows of 32-bit words.
    Buffers,
    /// WebGL2 data textures (see `crate::gl`).
    Textures(TextureLayout),
}

/// How a column lies in textures: each plane holds 4 lanes of a row per texel (1 when the
/// row has one lane); texel `i` of a tile is at `(i % width, i / width)`; row `r` is texel
/// `r % tile_rows` of tile `r / tile_rows`. Both sizes are powers of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureLayout {
    pub width_shift: u32,
    pub tile_shift: u32,
}

impl TextureLayout {
    pub fn width(self) -> u32 {
        1 << self.width_shift
    }
    pub fn tile_rows(self) -> u32 {
        1 << self.tile_shift
    }
    /// Tiles holding `rows` rows (at least one: empty columns still bind a texture).
    pub fn tiles(self, rows: u32) -> u32 {
        rows.div_ceil(self.tile_rows()).max(1)
    }
    /// Rows of the tile `tile` of a column of `rows` rows.
    pub fn rows_in_tile(self, rows: u32, tile: u32) -> u32 {
        rows.saturating_sub(tile * self.tile_rows())
            .min(self.tile_rows())
    }
}

/// Texture planes of a row of `size` lanes, and the channels of each.
pub fn planes(size: u32) -> u32 {
    size.div_ceil(4)
}
pub fn plane_channels(size: u32) -> u32 {
    if size == 1 {
        1
    } else {
        4
    }
}

/// One texture a fragment kernel binds: a plane of leaf `leaf`, of the draw's own tile
/// (`tile: None`, for rows read at the output row) or of a fixed tile (random access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureBinding {
    pub leaf: usize,
    pub plane: u32,
    pub tile: Option<u32>,
}

/// Parameter slots 0 and 1: rows to compute, and invocations per dispatch row (2D grids);
/// slot 2 always holds 0 (see `zero`).
pub const PARAM_ROWS: usize = 0;
pub const PARAM_ROW_STRIDE: usize = 1;

pub fn wgsl_type(class: Class) -> &'static str {
    match class {
        Class::F => "f32",
        Class::I => "i32",
        Class::U => "u32",
    }
}

pub(crate) fn zero(class: Class) -> &'static str {
    match class {
        // WGSL lets compilers assume no Inf/NaN, so `x / 0.0` may fold to anything; a zero
        // the compiler cannot see keeps IEEE results (x / 0 = ±Inf) as on the CPU.
        // Integer zeros too: they may be converted to float before a division.
        Class::F => "gt_zero()",
        Class::I => "bitcast<i32>(param(2u))",
        Class::U => "param(2u)",
    }
}

fn convert(expr: &str, from: Class, to: Class) -> String {
    if from == to {
        expr.to_string()
    } else {
        format!("{}({expr})", wgsl_type(to))
    }
}

pub(crate) struct Gen {
    /// Node id -> its index in the region: kernel names must not depend on node ids.
    pub(crate) local: HashMap<u64, usize>,
    pub(crate) out: String,
    pub(crate) params: Vec<u32>,
    /// For leaves: binding index; `param` slot of their row count.
    pub(crate) leaf_slot: HashMap<u64, (usize, usize)>,
    textures: Vec<TextureBinding>,
}

impl Gen {
    pub(crate) fn param(&mut self, value: u32) -> usize {
        self.params.push(value);
        self.params.len() - 1
    }

    /// Lane `lane` (a WGSL u32 expression) of input `node`, for a consumer computing `row`,
    /// converted to `to`.
    pub(crate) fn lane(&self, node: &NodeRef, lane: &str, to: Class) -> String {
        let class = node.meta.dtype.class();
        let size = node.meta.size;
        let raw = if let Some(&(binding, _)) = self.leaf_slot.get(&node.id) {
            format!("load_{binding}(row, {lane})")
        } else if size == 1 {
            format!("v{}[0]", self.local[&node.id])
        } else {
            format!(
                "select({}, v{}[min({lane}, {}u)], {lane} < {size}u)",
                zero(class),
                self.local[&node.id],
                size - 1
            )
        };
        convert(&raw, class, to)
    }

    fn leaf_loader(&mut self, node: &NodeRef, binding: usize, length_slot: usize) {
        let ty = wgsl_type(node.meta.dtype.class());
        let size = node.meta.size;
        let z = zero(node.meta.dtype.class());
        let row = if node.meta.constant { "0u" } else { "row" };
        let lane_rule = match size {
            1 => "let i = 0u;".to_string(),
            s => format!("if (lane >= {s}u) {{ return {z}; }}\n    let i = lane;"),
        };
        let _ = write!(
            self.out,
            "@group(0) @binding({binding}) var<storage, read> in_{binding}: array<{ty}>;\n\
             fn load_{binding}(row: u32, lane: u32) -> {ty} {{\n    {lane_rule}\n    let r = {row};\n    \
             if (r >= param({length_slot}u)) {{ return {z}; }}\n    return in_{binding}[r * {size}u + i];\n}}\n\
             fn fetch_{binding}(r: u32, lane: u32) -> {ty} {{ return in_{binding}[r * {size}u + lane]; }}\n"
        );
    }

    /// Declares the textures of leaf `leaf` (binding name `binding`) and its `fetch_` and
    /// `load_` functions. A leaf read at arbitrary rows binds every tile; one read only at
    /// the output row binds the draw's tile.
    fn texture_loader(
        &mut self,
        node: &NodeRef,
        leaf: usize,
        binding: usize,
        length_slot: usize,
        random: bool,
        layout: TextureLayout,
    ) {
        let class = node.meta.dtype.class();
        let ty = wgsl_type(class);
        let size = node.meta.size;
        let z = zero(class);
        let rows = if node.meta.constant {
            1
        } else {
            node.meta.length
        };
        let tiles: Vec<Option<u32>> = if random {
            (0..layout.tiles(rows)).map(Some).collect()
        } else {
            vec![None]
        };
        let component = if plane_channels(size) == 1 {
            ".x"
        } else {
            "[lane & 3u]"
        };
        let mut lookup = String::new();
        for tile in &tiles {
            let mut planes_code = String::new();
            for plane in 0..planes(size) {
                let name = format!("t{binding}_{plane}_{}", tile.map_or(0, |t| t));
                let _ = writeln!(
                    self.out,
                    "@group(0) @binding({}) var {name}: texture_2d<{ty}>;",
                    self.textures.len() + 1
                );
                self.textures.push(TextureBinding {
                    leaf,
                    plane,
                    tile: *tile,
                });
                let _ = write!(
                    planes_code,
                    "if (lane < {}u) {{ return textureLoad({name}, xy, 0){component}; }} ",
                    4 * (plane + 1)
                );
            }
            match tile {
                Some(t) => {
                    let _ = writeln!(lookup, "    if (tile == {t}u) {{ {planes_code}}}");
                }
                None => {
                    let _ = writeln!(lookup, "    {planes_code}");
                }
            }
        }
        let local = if random {
            format!(
                "let tile = r >> {}u;\n    let local = r & {}u;",
                layout.tile_shift,
                layout.tile_rows() - 1
            )
        } else if node.meta.constant {
            "let local = r;".to_string()
        } else {
            // The draw's tile starts at row param(1).
            "let local = r - param(1u);".to_string()
        };
        let row = if node.meta.constant { "0u" } else { "row" };
        // A single lane broadcasts to every lane, as in `leaf_loader`.
        let (lane_rule, lane) = match size {
            1 => (String::new(), "0u"),
            s => (format!("if (lane >= {s}u) {{ return {z}; }}\n    "), "lane"),
        };
        let _ = write!(
            self.out,
            "fn fetch_{binding}(r: u32, lane: u32) -> {ty} {{\n    {local}\n    \
             let xy = vec2<i32>(i32(local & {}u), i32(local >> {}u));\n{lookup}    return {z};\n}}\n\
             fn load_{binding}(row: u32, lane: u32) -> {ty} {{\n    {lane_rule}let r = {row};\n    \
             if (r >= param({length_slot}u)) {{ return {z}; }}\n    return fetch_{binding}(r, {lane});\n}}\n",
            layout.width() - 1,
            layout.width_shift
        );
    }
}

/// Ids of the nodes a region reads at rows other than the row it computes (gather sources,
/// segment starts).
pub fn random_access_inputs(region: &Region) -> std::collections::HashSet<u64> {
    region
        .nodes
        .iter()
        .flat_map(|n| {
            n.inputs
                .iter()
                .enumerate()
                .filter(|(i, _)| !n.op.reads_input_at_row(*i))
                .map(|(_, input)| input.id)
        })
        .collect()
}

/// The generator with the prelude, the output binding of `out_class` (storage buffers) and
/// the region's leaves declared, and `body` computing every non-`extent` node of the region
/// for `row`.
pub(crate) fn start(
    region: &Region,
    params: Vec<u32>,
    out_class: Class,
    storage: Storage,
) -> Result<(Gen, String)> {
    let mut g = Gen {
        local: HashMap::new(),
        out: String::new(),
        params,
        leaf_slot: HashMap::new(),
        textures: Vec::new(),
    };
    let _ = writeln!(g.out, "{PRELUDE}");
    let transcendental =
        |n: &NodeRef| matches!(n.op, Op::Unary(op) if !matches!(op, UnaryOp::Sqrt | UnaryOp::Abs));
    if region.nodes.iter().any(transcendental) {
        let _ = writeln!(g.out, "{MATH}");
    }
    if region.nodes.iter().any(|n| n.op == Op::Fround) {
        let _ = writeln!(g.out, "{FROUND}");
    }
    if let Storage::Buffers = storage {
        let _ = writeln!(
            g.out,
            "@group(0) @binding(1) var<storage, read_write> out: array<{}>;",
            wgsl_type(out_class)
        );
    }
    let random = random_access_inputs(region);
    for (k, leaf) in region.leaves.iter().enumerate() {
        let binding = k + 2;
        let rows = if leaf.meta.constant {
            1
        } else {
            leaf.meta.length
        };
        let slot = g.param(rows);
        g.leaf_slot.insert(leaf.id, (binding, slot));
        match storage {
            Storage::Buffers => g.leaf_loader(leaf, binding, slot),
            Storage::Textures(layout) => {
                g.texture_loader(leaf, k, binding, slot, random.contains(&leaf.id), layout)
            }
        }
    }
    g.local = region
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id, i))
        .collect();
    let mut body = String::new();
    for node in region.nodes.iter().filter(|n| n.op != Op::Extent) {
        node_code(&mut g, node, &mut body)?;
    }
    Ok((g, body))
}

pub(crate) fn finish(g: Gen) -> Kernel {
    let vec4s = g.params.len().div_ceil(4).max(1);
    let source = unroll_lane_loops(&g.out.replace("PARAM_VEC4S", &vec4s.to_string()));
    Kernel {
        source,
        params: g.params,
        textures: g.textures,
    }
}

/// Generates the kernel for an elementwise region (every op but `extent`).
pub fn elementwise_kernel(region: &Region, rows: u32, row_stride: u32) -> Result<Kernel> {
    let root = &region.root;
    let (mut g, body) = start(
        region,
        vec![rows, row_stride, 0],
        root.meta.dtype.class(),
        Storage::Buffers,
    )?;
    let size = root.meta.size;
    let _ = write!(
        g.out,
        "\n@compute @workgroup_size({WORKGROUP_SIZE})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>) {{\n    \
         let row = gid.x + gid.y * param({PARAM_ROW_STRIDE}u);\n    if (row >= param({PARAM_ROWS}u)) {{ return; }}\n\
         {body}    for (var l = 0u; l < {size}u; l++) {{ out[row * {size}u + l] = v{}[l]; }}\n}}\n",
        g.local[&root.id]
    );
    Ok(finish(g))
}

/// Workgroup size and the most workgroups of the first `extent` pass.
pub const REDUCE_WORKGROUP: u32 = 256;
pub const REDUCE_GROUPS: u32 = 256;

/// The `extent` template; its `#...#` markers are filled below.
const EXTENT: &str = include_str!("../../shaders/extent.wgsl");

/// First `extent` pass: each workgroup folds a grid-strided share of the rows, computing the
/// fused prologue per row, into `[min, max]` per lane in `out[group][lane]`.
pub fn extent_partials_kernel(region: &Region, rows: u32, groups: u32) -> Result<Kernel> {
    let input = &region.root.inputs[0];
    let class = input.meta.dtype.class();
    let (mut g, body) = start(region, vec![rows, groups, 0], class, Storage::Buffers)?;
    let value = if g.leaf_slot.contains_key(&input.id) {
        // The input is a materialized leaf: no prologue, just loads.
        let size = input.meta.size;
        let ty = wgsl_type(class);
        format!("    var vin: array<{ty}, {size}>;\n    for (var l = 0u; l < {size}u; l++) {{ vin[l] = {}; }}\n", g.lane(input, "l", class))
    } else {
        let size = input.meta.size;
        let ty = wgsl_type(class);
        format!("    var vin: array<{ty}, {size}>;\n    for (var l = 0u; l < {size}u; l++) {{ vin[l] = v{}[l]; }}\n", g.local[&input.id])
    };
    let source = EXTENT
        .replace("#PROLOGUE#", &format!("{body}{value}"))
        .replace("#LANES#", &input.meta.size.to_string())
        .replace("#T#", wgsl_type(class))
        .replace("#IDENTITIES#", identities(class));
    let _ = writeln!(
        g.out,
        "{}",
        source
            .split("// FINAL")
            .next()
            .unwrap_or("")
            .replace("// PARTIALS", "")
    );
    Ok(finish(g))
}

/// Second `extent` pass: one workgroup folds the partial `[min, max]` of `groups` groups.
pub fn extent_final_source(class: Class, lanes: u32) -> String {
    let common = EXTENT.split("// PARTIALS").next().unwrap_or("");
    let template = format!("{common}{}", EXTENT.split("// FINAL").nth(1).unwrap_or(""));
    let source = format!("{PRELUDE}\n@group(0) @binding(1) var<storage, read_write> out: array<#T#>;\n@group(0) @binding(2) var<storage, read> partials: array<#T#>;\n{template}");
    source
        .replace("#LANES#", &lanes.to_string())
        .replace("#T#", wgsl_type(class))
        .replace("#IDENTITIES#", identities(class))
        .replace("PARAM_VEC4S", "1")
}

/// `fn lo_identity()` and `fn hi_identity()`: values every real value replaces. The float
/// infinities come from run-time bits so a no-Inf compiler cannot fold the comparisons.
pub(crate) fn identities(class: Class) -> &'static str {
    match class {
        Class::F => "fn lo_identity() -> f32 { return bitcast<f32>(param(2u) | 0x7f800000u); }\nfn hi_identity() -> f32 { return bitcast<f32>(param(2u) | 0xff800000u); }\nfn is_nan_value(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }\nfn nan_or_zero() -> f32 { return bitcast<f32>(param(2u) | 0x7fc00000u); }",
        Class::I => "fn lo_identity() -> i32 { return 2147483647i; }\nfn hi_identity() -> i32 { return -2147483647i - 1i; }\nfn is_nan_value(v: i32) -> bool { return false; }\nfn nan_or_zero() -> i32 { return 0i; }",
        Class::U => "fn lo_identity() -> u32 { return 4294967295u; }\nfn hi_identity() -> u32 { return 0u; }\nfn is_nan_value(v: u32) -> bool { return false; }\nfn nan_or_zero() -> u32 { return 0u; }",
    }
}

pub(crate) fn node_code(g: &mut Gen, node: &NodeRef, body: &mut String) -> Result<()> {
    let class = node.meta.dtype.class();
    let ty = wgsl_type(class);
    let size = node.meta.size;
    let id = g.local[&node.id];
    let _ = writeln!(body, "    var v{id}: array<{ty}, {size}>;");
    let each = |body: &mut String, expr: String| {
        let _ = writeln!(
            body,
            "    for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = {expr}; }}"
        );
    };
    let inputs = &node.inputs;
    match &node.op {
        Op::Binary(op) => {
            let (a, b) = (
                g.lane(&inputs[0], "l", class),
                g.lane(&inputs[1], "l", class),
            );
            let expr = match (op, class) {
                (BinaryOp::Add, _) => format!("{a} + {b}"),
                (BinaryOp::Subtract, _) => format!("{a} - {b}"),
                (BinaryOp::Multiply, _) => format!("{a} * {b}"),
                (BinaryOp::Divide, Class::F) => format!("{a} / {b}"),
                (BinaryOp::Divide, Class::I) => format!("gt_div_i({a}, {b})"),
                (BinaryOp::Divide, Class::U) => format!("gt_div_u({a}, {b})"),
                (BinaryOp::Pow, _) => format!("gt_pow({a}, {b})"),
            };
            each(body, expr);
        }
        Op::Unary(op) => {
            let a = g.lane(&inputs[0], "l", class);
            let f = match op {
                UnaryOp::Sqrt => "sqrt",
                UnaryOp::Abs => "abs",
                UnaryOp::Sin => "gt_sin",
                UnaryOp::Cos => "gt_cos",
                UnaryOp::Tan => "gt_tan",
                UnaryOp::Exp => "gt_exp",
                UnaryOp::Log => "gt_log",
            };
            if (*op, class) == (UnaryOp::Abs, Class::U) {
                // Unsigned abs is the value; GLSL has no abs(uint) and naga's GLSL output
                // would take it as signed.
                each(body, a);
            } else {
                each(body, format!("{f}({a})"));
            }
        }
        Op::Interleave => {
            let mut offset = 0;
            for input in inputs {
                let width = input.meta.size;
                let value = g.lane(input, "l", class);
                let _ = writeln!(
                    body,
                    "    for (var l = 0u; l < {width}u; l++) {{ v{id}[{offset}u + l] = {value}; }}"
                );
                offset += width;
            }
        }
        Op::Swizzle(channels) => {
            for (j, c) in channels.iter().enumerate() {
                let value = g.lane(&inputs[0], &format!("{c}u"), class);
                let _ = writeln!(body, "    v{id}[{j}] = {value};");
            }
        }
        Op::Select => {
            let cond_class = inputs[0].meta.dtype.class();
            let c = g.lane(&inputs[0], "l", cond_class);
            let (a, b) = (
                g.lane(&inputs[1], "l", class),
                g.lane(&inputs[2], "l", class),
            );
            // `!(c == 0)`: WGSL's `!=` is an ordered compare, false for NaN; the CPU's is true.
            each(
                body,
                format!("select({b}, {a}, !({c} == {}))", zero(cond_class)),
            );
        }
        Op::Dot | Op::Length => {
            let width = inputs[0].meta.size;
            let a = g.lane(&inputs[0], "l", Class::F);
            let b = g.lane(inputs.last().unwrap_or(&inputs[0]), "l", Class::F);
            let finish = if node.op == Op::Length {
                format!("sqrt(s{id})")
            } else {
                format!("s{id}")
            };
            let _ = writeln!(
                body,
                "    var s{id} = 0.0;\n    for (var l = 0u; l < {width}u; l++) {{ s{id} = s{id} + {a} * {b}; }}\n    v{id}[0] = {finish};"
            );
        }
        Op::EqualAll => {
            let width = inputs[0].meta.size;
            let (ca, cb) = (inputs[0].meta.dtype.class(), inputs[1].meta.dtype.class());
            let (a, b) = (g.lane(&inputs[0], "l", ca), g.lane(&inputs[1], "l", cb));
            let test = equal_exact(&a, ca, &b, cb);
            let _ = writeln!(
                body,
                "    var e{id} = true;\n    for (var l = 0u; l < {width}u; l++) {{ e{id} = e{id} && ({test}); }}\n    v{id}[0] = select(0u, 1u, e{id});"
            );
        }
        Op::Sequence { start, step } => {
            // Two's complement wrap: the i32 result is exact modulo 2^32.
            let (s, t) = (g.param(*start as i32 as u32), g.param(*step as i32 as u32));
            let _ = writeln!(body, "    v{id}[0] = bitcast<i32>(param({s}u)) + bitcast<i32>(row) * bitcast<i32>(param({t}u));");
        }
        Op::Gather => {
            let ids_class = inputs[0].meta.dtype.class();
            let id_value = g.lane(&inputs[0], "0u", ids_class);
            let &(binding, len_slot) = g
                .leaf_slot
                .get(&inputs[1].id)
                .ok_or_else(|| internal("gather source is not bound"))?;
            let valid = match ids_class {
                Class::U => format!("i{id} < param({len_slot}u)"),
                Class::I => format!("i{id} >= 0i && u32(i{id}) < param({len_slot}u)"),
                Class::F => format!(
                    "i{id} >= 0.0 && i{id} < f32(param({len_slot}u)) && fract(i{id}) == 0.0"
                ),
            };
            let src_rows = if inputs[1].meta.constant {
                "1u".to_string()
            } else {
                format!("param({len_slot}u)")
            };
            let _ = writeln!(
                body,
                "    let i{id} = {id_value};\n    let ok{id} = {valid};\n    let r{id} = select(0u, u32(i{id}), ok{id} && {src_rows} > 0u);\n    \
                 for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = select({z}, fetch_{binding}(r{id}, l), ok{id}); }}",
                z = zero(class)
            );
        }
        Op::SegmentedMap => {
            let &(binding, len_slot) = g
                .leaf_slot
                .get(&inputs[0].id)
                .ok_or_else(|| internal("segments are not bound"))?;
            // Starts were validated on the host: non-negative, non-decreasing, starts[0] = 0.
            let _ = writeln!(
                body,
                "    var lo{id} = 0u;\n    var hi{id} = param({len_slot}u);\n    while (hi{id} - lo{id} > 1u) {{\n        \
                 let mid = (lo{id} + hi{id}) / 2u;\n        if (u32(fetch_{binding}(mid, 0u)) <= row) {{ lo{id} = mid; }} else {{ hi{id} = mid; }}\n    }}\n    \
                 v{id}[0] = lo{id};\n    v{id}[1] = row - u32(fetch_{binding}(lo{id}, 0u));"
            );
        }
        Op::Fround => {
            let half = size / 2;
            let lo = g.lane(&inputs[0], "2u * i", Class::U);
            let hi = g.lane(&inputs[0], "2u * i + 1u", Class::U);
            let _ = writeln!(
                body,
                "    for (var i = 0u; i < {half}u; i++) {{ let f = gt_fround({lo}, {hi}); v{id}[i] = f.high; v{id}[{half}u + i] = f.low; }}"
            );
        }
        Op::Extent | Op::Source => {
            return Err(GpuTableError::new(
                ErrorCode::BackendUnavailable,
                format!(
                    "{} is not implemented on the WebGPU backend yet",
                    node.op.name()
                ),
            ))
        }
    }
    narrow(body, node, id);
    if !node.meta.constant {
        let slot = g.param(node.meta.length);
        let _ = writeln!(body, "    if (row >= param({slot}u)) {{ for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = {}; }} }}", zero(class));
    }
    Ok(())
}

/// Rewrites `for (var l = 0u; l < Nu; l++) { body }` with N <= 4 as N blocks `{ let l = ku;
/// body }`: with constant indices the per-node lane arrays stay in registers (software
/// GPUs otherwise keep them in memory).
fn unroll_lane_loops(source: &str) -> String {
    const HEAD: &str = "for (var l = 0u; l < ";
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find(HEAD) {
        out.push_str(&rest[..at]);
        let after = &rest[at + HEAD.len()..];
        let count: Option<u32> = after.split("u; l++) {").next().and_then(|n| n.parse().ok());
        let open = after.find('{').map(|i| at + HEAD.len() + i);
        let body = open.and_then(|open| matching_brace(rest, open).map(|close| (open, close)));
        match (count, body) {
            (Some(n), Some((open, close))) if n <= 4 => {
                let inner = &rest[open + 1..close];
                for k in 0..n {
                    let _ = write!(out, "{{ let l = {k}u;{inner}}}");
                }
                rest = &rest[close + 1..];
            }
            _ => {
                out.push_str(HEAD);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Wraps a 32-bit result to an 8- or 16-bit type, as the CPU stores it.
fn narrow(body: &mut String, node: &NodeRef, id: usize) {
    let size = node.meta.size;
    let expr = match node.meta.dtype {
        DType::U8 => format!("v{id}[l] & 0xFFu"),
        DType::U16 => format!("v{id}[l] & 0xFFFFu"),
        DType::I8 => format!("(v{id}[l] << 24u) >> 24u"),
        DType::I16 => format!("(v{id}[l] << 16u) >> 16u"),
        _ => return,
    };
    let _ = writeln!(
        body,
        "    for (var l = 0u; l < {size}u; l++) {{ v{id}[l] = {expr}; }}"
    );
}

/// Exact equality of two values of any classes (the CPU compares them as f64).
fn equal_exact(a: &str, ca: Class, b: &str, cb: Class) -> String {
    match (ca, cb) {
        _ if ca == cb => format!("{a} == {b}"),
        (Class::I, Class::U) => format!("{a} >= 0i && u32({a}) == {b}"),
        (Class::U, Class::I) => format!("{b} >= 0i && u32({b}) == {a}"),
        (Class::F, int) => float_equals_int(a, b, int),
        (int, Class::F) => float_equals_int(b, a, int),
        _ => unreachable!("all class pairs are covered"),
    }
}

fn float_equals_int(f: &str, i: &str, int: Class) -> String {
    // Equal only if the float is integral, in range, and converts back to the same integer.
    let (lo, hi) = if int == Class::I {
        ("-2147483648.0", "2147483647.0")
    } else {
        ("0.0", "4294967295.0")
    };
    format!(
        "({f} == f32({i}) && {f} >= {lo} && {f} <= {hi} && {ty}({f}) == {i})",
        ty = wgsl_type(int)
    )
}

fn internal(message: &str) -> GpuTableError {
    GpuTableError::new(ErrorCode::Internal, message)
}
