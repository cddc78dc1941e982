//! WGSL generation shared by the WebGPU (compute) and WebGL2 (fragment) backends: one
//! kernel per fused region of the plan.
//!
//! One invocation (or fragment) computes one output row. Each node of the region becomes a
//! local array of its lanes, computed from its inputs' lanes with the lane rule of `api.md`
//! (`nodes`); only the root is stored. Compute kernels of rows wider than `WIDE_ROW_LANES`
//! run an invocation per lane instead (`wide`). The source depends only on the region's structure and types:
//! row counts, lengths, literals and sequence parameters come from a uniform array, so new
//! data or row counts reuse the cached pipeline.

pub mod compute;
pub mod fragment;
pub mod fragment_reduce;
mod nodes;
pub mod reduce;
mod segment;
mod wide;

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::rc::Rc;

use crate::column::ColumnData;
use crate::dtype::Class;
use crate::error::{ErrorCode, GpuTableError, Result};
use crate::ir::{BinaryOp, Node, NodeRef, Op, ScanFold, UnaryOp};
use crate::plan::{Region, WIDE_ROW_LANES};
use crate::value::Value;

pub const WORKGROUP_SIZE: u32 = 64;

/// Shared helpers: parameters, run-time 0 and 1, integer division (by zero is 0).
pub(crate) const PRELUDE: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/prelude.wgsl"));
/// `gt_sin gt_cos gt_tan gt_exp gt_log gt_pow`: accurate float32 transcendentals.
const MATH: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/math.wgsl"));
/// `gt_ord_* gt_min_f gt_max_f gt_mod_* gt_sign_f`: exact comparisons and the NaN rules.
const COMPARE: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/compare.wgsl"));
/// `gt_fround`: float64 word pairs to float32 high and low parts, without f64.
const FROUND: &str = include_str!(concat!(env!("OUT_DIR"), "/shaders/fround.wgsl"));

/// A generated kernel and its parameter words. Binding 0 holds the parameters; with storage
/// buffers, 1 the output and 2.. the leaves listed in `buffers`; with textures, 1.. the
/// textures listed in `textures`. Literal leaves are in the parameters, not bound.
pub struct Kernel {
    pub source: String,
    pub params: Vec<u32>,
    /// `(leaf index, part)` bound as storage buffers, in binding order (from binding 2): part
    /// 0 of a leaf stored whole, part p of a leaf bound as parts.
    pub buffers: Vec<(usize, usize)>,
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
/// Parameter words of the hand-written kernels (shaders/*.wgsl: scatters, sorts, bins,
/// lookups; WebGPU's and WebGL2's): two vec4 blocks, the unused ones 0.
pub const FIXED_PARAMS: usize = 8;

/// The prelude of a hand-written kernel: its parameters `FIXED_PARAMS` words.
pub(crate) fn fixed_prelude() -> String {
    PRELUDE.replace("PARAM_VEC4S", &(FIXED_PARAMS / 4).to_string())
}
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
    match (from, to) {
        _ if from == to => expr.to_string(),
        (Class::U, Class::F) => format!("gt_f32_u({expr})"),
        (Class::I, Class::F) => format!("gt_f32_i({expr})"),
        _ => format!("{}({expr})", wgsl_type(to)),
    }
}

/// Lanes a constant source may have to be passed in the parameters rather than bound.
pub const MAX_LITERAL_LANES: u32 = 16;

/// A small constant handed in by the user (a number literal, `fromConstant`): its values go
/// into the kernel's parameters, so it takes no binding and new values reuse the pipeline.
pub fn is_literal(node: &Node) -> bool {
    node.is_source() && node.meta.constant && node.meta.size <= MAX_LITERAL_LANES
}

pub(crate) struct Gen {
    /// Node id -> its index in the region: kernel names must not depend on node ids.
    pub(crate) local: HashMap<u64, usize>,
    pub(crate) out: String,
    pub(crate) params: Vec<u32>,
    /// For leaves: their index in the region's leaves; `param` slot of their row count.
    pub(crate) leaf_slot: HashMap<u64, (usize, usize)>,
    /// Rows the kernel computes: nodes and leaves at least this long need no bound check.
    rows: u32,
    buffers: Vec<(usize, usize)>,
    textures: Vec<TextureBinding>,
    /// Nodes computed one lane per invocation (see `wide`): scalars, not arrays.
    pub(crate) wide: HashSet<u64>,
    /// Rows each leaf's value stores (a chunk task's part of a column may be shorter than
    /// the column, and a constant stores one).
    leaf_rows: HashMap<u64, u32>,
    /// The `param` slot of the task's first row, for ops that compute from the row index.
    first_row_slot: Option<usize>,
    /// Nodes computed where read, by a function `at_{local}(row)` of their lanes.
    pub(crate) where_read: HashSet<u64>,
}

impl Gen {
    /// The row being computed, counted from the whole pass's first row (WGSL u32).
    pub(crate) fn pass_row(&self) -> String {
        match self.first_row_slot {
            Some(slot) => format!("(row + param({slot}u))"),
            None => "row".to_string(),
        }
    }

    /// Leaf `node`'s index and the `param` slot of its row count; `missing` names the
    /// input for the internal error where it is not a leaf of the kernel.
    pub(crate) fn bound_leaf(&self, node: &NodeRef, missing: &str) -> Result<(usize, usize)> {
        self.leaf_slot
            .get(&node.id)
            .copied()
            .ok_or_else(|| internal(missing))
    }

    /// Rows leaf `node`'s value stores.
    fn stored_rows(&self, node: &Node) -> u32 {
        self.leaf_rows
            .get(&node.id)
            .copied()
            .unwrap_or(node.meta.length)
    }

    pub(crate) fn param(&mut self, value: u32) -> usize {
        self.params.push(value);
        self.params.len() - 1
    }

    /// Lane `lane` (a WGSL u32 expression) of input `node`, for a consumer computing `row`,
    /// converted to `to`.
    pub(crate) fn lane(&self, node: &NodeRef, lane: &str, to: Class) -> String {
        let class = node.meta.dtype.class();
        let size = node.meta.size;
        let raw = if let Some(&(leaf, _)) = self.leaf_slot.get(&node.id) {
            format!("load_{leaf}(row, {lane})")
        } else if self.wide.contains(&node.id) {
            // Computed at this invocation's lane, the only one its consumers read.
            format!(
                "select({}, v{}, {lane} < {size}u)",
                zero(class),
                self.local[&node.id]
            )
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

    /// `load_k(row, lane)`: lane `lane` of leaf k at `row` with the lane rule (and 0 past its
    /// rows); `fetch_k(r, lane)`: the stored value, for random access.
    fn loaders(&mut self, node: &NodeRef, leaf: usize, length_slot: usize, read: &str) {
        let class = node.meta.dtype.class();
        let ty = wgsl_type(class);
        let size = node.meta.size;
        let z = zero(class);
        let lane_rule = match size {
            1 => "let i = 0u;".to_string(),
            s => format!("if (lane >= {s}u) {{ return {z}; }}\n    let i = lane;"),
        };
        let row = if node.meta.constant { "0u" } else { "row" };
        let bound = if node.meta.constant || self.stored_rows(node) >= self.rows {
            String::new()
        } else {
            format!("if (r >= param({length_slot}u)) {{ return {z}; }}\n    ")
        };
        let _ = write!(
            self.out,
            "fn fetch_{leaf}(r: u32, lane: u32) -> {ty} {{ {read} }}\n\
             fn load_{leaf}(row: u32, lane: u32) -> {ty} {{\n    {lane_rule}\n    let r = {row};\n    \
             {bound}return fetch_{leaf}(r, i);\n}}\n"
        );
    }

    /// A leaf in storage buffers (bound at the next bindings): one, or one per part of rows
    /// `parts` (each part's first row a parameter, so other splits reuse the pipeline).
    fn buffer_leaf(&mut self, node: &NodeRef, leaf: usize, length_slot: usize, parts: &[u32]) {
        let ty = wgsl_type(node.meta.dtype.class());
        let size = node.meta.size;
        if parts.len() == 1 {
            let binding = self.buffers.len() + 2;
            self.buffers.push((leaf, 0));
            let _ = writeln!(
                self.out,
                "@group(0) @binding({binding}) var<storage, read> in_{leaf}: array<{ty}>;"
            );
            let read = format!("return in_{leaf}[r * {size}u + lane];");
            self.loaders(node, leaf, length_slot, &read);
            return;
        }
        let mut read = String::new();
        let mut first_row = 0u32;
        for (p, rows) in parts.iter().enumerate() {
            let binding = self.buffers.len() + 2;
            self.buffers.push((leaf, p));
            let name = format!("in_{leaf}_{p}");
            let _ = writeln!(
                self.out,
                "@group(0) @binding({binding}) var<storage, read> {name}: array<{ty}>;"
            );
            let slot = self.param(first_row);
            let index = format!("(r - param({slot}u)) * {size}u + lane");
            let _ = match p + 1 == parts.len() {
                true => write!(read, "return {name}[{index}];"),
                false => write!(
                    read,
                    "if (r < param({}u)) {{ return {name}[{index}]; }}\n    ",
                    slot + 1
                ),
            };
            first_row += rows;
        }
        self.loaders(node, leaf, length_slot, &read);
    }

    /// A literal leaf: its lanes are parameters from slot `first`.
    fn literal_leaf(&mut self, node: &NodeRef, leaf: usize, length_slot: usize, first: usize) {
        let class = node.meta.dtype.class();
        let read = match class {
            Class::U => format!("return param({first}u + lane);"),
            _ => format!(
                "return bitcast<{}>(param({first}u + lane));",
                wgsl_type(class)
            ),
        };
        self.loaders(node, leaf, length_slot, &read);
    }

    /// Declares the textures of leaf `leaf` and its `fetch_`/`load_` functions. A leaf read
    /// at arbitrary rows binds every tile; one read only at the output row binds the draw's.
    fn texture_leaf(
        &mut self,
        node: &NodeRef,
        leaf: usize,
        length_slot: usize,
        random: bool,
        layout: TextureLayout,
    ) {
        let class = node.meta.dtype.class();
        let ty = wgsl_type(class);
        let size = node.meta.size;
        let z = zero(class);
        let tiles: Vec<Option<u32>> = if random {
            (0..layout.tiles(self.stored_rows(node)))
                .map(Some)
                .collect()
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
                let name = format!("t{leaf}_{plane}_{}", tile.map_or(0, |t| t));
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
        let read = format!(
            "\n    {local}\n    let xy = vec2<i32>(i32(local & {}u), i32(local >> {}u));\n{lookup}    return {z};\n",
            layout.width() - 1,
            layout.width_shift
        );
        self.loaders(node, leaf, length_slot, &read);
    }
}

/// The generator with the prelude and the region's leaves declared (`leaves`: their values,
/// in order), and `body` computing every node of the region but a reduction root for `row`.
/// Callers declare their outputs.
pub(crate) fn start(
    region: &Region,
    leaves: &[Rc<Value>],
    params: Vec<u32>,
    storage: Storage,
) -> Result<(Gen, String)> {
    start_with(region, leaves, params, storage, false)
}

/// `start`, with `per_lane`: nodes wider than `WIDE_ROW_LANES` computed for `lane` only.
pub(crate) fn start_with(
    region: &Region,
    leaves: &[Rc<Value>],
    params: Vec<u32>,
    storage: Storage,
    per_lane: bool,
) -> Result<(Gen, String)> {
    let mut g = Gen {
        local: HashMap::new(),
        out: String::new(),
        params,
        leaf_slot: HashMap::new(),
        rows: region.rows,
        buffers: Vec::new(),
        textures: Vec::new(),
        wide: HashSet::new(),
        leaf_rows: HashMap::new(),
        first_row_slot: None,
        where_read: HashSet::new(),
    };
    if region.numbers_rows() {
        let first = u32::try_from(region.first_row)
            .map_err(|_| internal("a task starting past row 2^32"))?;
        g.first_row_slot = Some(g.param(first));
    }
    let _ = writeln!(g.out, "{PRELUDE}");
    let transcendental = |n: &NodeRef| match n.op {
        Op::Unary(op) => matches!(
            op,
            UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tan | UnaryOp::Exp | UnaryOp::Log
        ),
        Op::Binary(op) => op == BinaryOp::Pow,
        _ => false,
    };
    if region.computed().any(transcendental) {
        let _ = writeln!(g.out, "{MATH}");
    }
    let compares = |n: &NodeRef| match n.op {
        Op::Predicate(_) | Op::SearchSorted { .. } | Op::SortKey { .. } => true,
        Op::GroupFold(fold) | Op::ScanApply { fold, .. } => {
            matches!(fold, ScanFold::Min | ScanFold::Max)
        }
        Op::Unary(op) => matches!(op, UnaryOp::Sign | UnaryOp::Floor | UnaryOp::Ceil),
        Op::Binary(op) => matches!(op, BinaryOp::Minimum | BinaryOp::Maximum | BinaryOp::Mod),
        _ => false,
    };
    if region.computed().any(compares) {
        let _ = writeln!(g.out, "{COMPARE}");
    }
    if region.computed().any(|n| n.op == Op::Fround) {
        let _ = writeln!(g.out, "{FROUND}");
    }
    let random = region.random_access_inputs();
    // Leaves read where a node is computed may be read past the pass's rows.
    let read_rows = (region.where_read.iter())
        .map(|w| w.producer.meta.length)
        .fold(region.rows, u32::max);
    g.rows = read_rows;
    for (k, (leaf, value)) in region.leaves.iter().zip(leaves).enumerate() {
        g.leaf_rows.insert(leaf.id, value.rows);
        let slot = g.param(value.rows);
        g.leaf_slot.insert(leaf.id, (k, slot));
        if is_literal(leaf) {
            let column = value
                .host_column()
                .ok_or_else(|| internal("a literal is not in host memory"))?;
            let first = g.params.len();
            g.params.extend(literal_words(&column.data));
            g.literal_leaf(leaf, k, slot, first);
            continue;
        }
        match storage {
            Storage::Buffers => {
                let parts: Vec<u32> = match &value.storage {
                    crate::value::Storage::Parts(parts) => parts.iter().map(|p| p.rows).collect(),
                    _ => vec![value.rows],
                };
                g.buffer_leaf(leaf, k, slot, &parts)
            }
            Storage::Textures(layout) => {
                g.texture_leaf(leaf, k, slot, random.contains(&leaf.id), layout)
            }
        }
    }
    g.rows = region.rows;
    // A node computed in both places has one name: each place is its own scope.
    let where_read = (region.where_read.iter())
        .flat_map(|w| &w.nodes)
        .map(|n| (n.id, region.nodes.len()));
    g.local = (where_read.enumerate())
        .map(|(i, (id, base))| (id, base + i))
        .chain(region.nodes.iter().enumerate().map(|(i, n)| (n.id, i)))
        .collect();
    where_read_functions(&mut g, region)?;
    if per_lane {
        g.wide = region
            .nodes
            .iter()
            .filter(|n| n.meta.size > WIDE_ROW_LANES && !matches!(n.op, Op::Reduce(_)))
            .map(|n| n.id)
            .collect();
    }
    let mut body = String::new();
    // A reduction's root folds, a bin pass's adds: their kernels' templates do it.
    let own_kernel =
        |op: &Op| matches!(op, Op::Reduce(_) | Op::BinCount { .. } | Op::BinSum { .. });
    for node in region.nodes.iter().filter(|n| !own_kernel(&n.op)) {
        if g.wide.contains(&node.id) {
            wide::node_code(&mut g, node, &mut body)?;
        } else {
            nodes::node_code(&mut g, node, &mut body)?;
        }
    }
    Ok((g, body))
}

/// Declares `fn at_{local}(row: u32) -> array<ty, size>` for each node a consumer computes
/// where it reads it, computing it and the nodes it fuses at that row.
fn where_read_functions(g: &mut Gen, region: &Region) -> Result<()> {
    for where_read in &region.where_read {
        let (producer, members) = (&where_read.producer, &where_read.nodes);
        g.where_read.insert(producer.id);
        let mut body = String::new();
        // Rows past a shorter member's length are counted against the producer's rows.
        let pass_rows = std::mem::replace(&mut g.rows, producer.meta.length);
        for node in members {
            nodes::node_code(g, node, &mut body)?;
        }
        g.rows = pass_rows;
        let id = g.local[&producer.id];
        let ty = wgsl_type(producer.meta.dtype.class());
        let size = producer.meta.size;
        let _ = writeln!(
            g.out,
            "fn at_{id}(row: u32) -> array<{ty}, {size}> {{\n{body}    return v{id};\n}}"
        );
    }
    Ok(())
}

/// A literal's values as parameter words (8/16-bit values widened, as on the device).
fn literal_words(data: &ColumnData) -> Vec<u32> {
    (0..data.len())
        .map(|i| match data {
            ColumnData::F32(v) => v[i].to_bits(),
            ColumnData::I32(v) => v[i] as u32,
            ColumnData::I16(v) => v[i] as i32 as u32,
            ColumnData::I8(v) => v[i] as i32 as u32,
            ColumnData::U32(v) => v[i],
            ColumnData::U16(v) => v[i] as u32,
            ColumnData::U8(v) => v[i] as u32,
        })
        .collect()
}

pub(crate) fn finish(g: Gen) -> Kernel {
    let vec4s = g.params.len().div_ceil(4).max(1);
    let source = nodes::unroll_lane_loops(&g.out.replace("PARAM_VEC4S", &vec4s.to_string()));
    Kernel {
        source,
        params: g.params,
        buffers: g.buffers,
        textures: g.textures,
    }
}

fn internal(message: &str) -> GpuTableError {
    GpuTableError::new(ErrorCode::Internal, message)
}
