// Bin counts on WebGL2 (src/gl/bins.rs): `points` draws one point per row of a tile of
// uint32 ids at the texel of its bin in a float32 target (ids of `bins` and more off the
// target), blended by adding, so each row adds 1.0 to its bin; `counts` then writes the
// totals as uint32, exact while a bin holds at most 2^24 rows. Parameters: 0 bins, 1 texture
// width (texels), 2 the target's height.

// SECTION points
@group(0) @binding(1) var ids: texture_2d<u32>;

fn texel(row: u32) -> vec2<i32> {
    return vec2<i32>(i32(row % param(1u)), i32(row / param(1u)));
}

@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let id = textureLoad(ids, texel(i), 0).r;
    if (id >= param(0u)) {
        return vec4<f32>(2.0, 2.0, 0.0, 1.0);
    }
    let size = vec2<f32>(f32(param(1u)), f32(param(2u)));
    let centre = (vec2<f32>(texel(id)) + vec2<f32>(0.5, 0.5)) / size;
    return vec4<f32>(centre.x * 2.0 - 1.0, 1.0 - centre.y * 2.0, 0.0, 1.0);
}

@fragment
fn main() -> @location(0) f32 {
    return 1.0;
}

// SECTION counts
@group(0) @binding(1) var totals: texture_2d<f32>;

// Texels past the bins (the target's last row) are 0.
@fragment
fn main(@builtin(position) at: vec4<f32>) -> @location(0) u32 {
    let texel = vec2<u32>(at.xy);
    if (texel.y * param(1u) + texel.x >= param(0u)) {
        return 0u;
    }
    return u32(textureLoad(totals, vec2<i32>(texel), 0).r);
}

// SECTION sum_points
// Float32 bin sums: a point per row of a tile of `[id, value]` pairs (float32, ids below
// 2^24) adds its value at its bin's texel of the row's block of BLOCK rows (texel
// `id * blocks + block`), so each texel sums at most BLOCK rows in row order (blending keeps
// a draw's order, and draws go in row order). Parameters: 0 bins, 1 texture width, 2 the
// target's height, 3 the tile's first row among all rows, 4 blocks.
@group(0) @binding(1) var pairs: texture_2d<f32>;

const BLOCK: u32 = #BLOCK#u;

fn texel(row: u32) -> vec2<i32> {
    return vec2<i32>(i32(row % param(1u)), i32(row / param(1u)));
}

struct Point {
    @builtin(position) at: vec4<f32>,
    @location(0) @interpolate(flat) value: f32,
}

@vertex
fn vs(@builtin(vertex_index) i: u32) -> Point {
    let pair = textureLoad(pairs, texel(i), 0);
    var point: Point;
    point.value = pair.y;
    point.at = vec4<f32>(2.0, 2.0, 0.0, 1.0);
    if (pair.x < f32(param(0u))) {
        let slot = u32(pair.x) * param(4u) + (param(3u) + i) / BLOCK;
        let size = vec2<f32>(f32(param(1u)), f32(param(2u)));
        let centre = (vec2<f32>(texel(slot)) + vec2<f32>(0.5, 0.5)) / size;
        point.at = vec4<f32>(centre.x * 2.0 - 1.0, 1.0 - centre.y * 2.0, 0.0, 1.0);
    }
    return point;
}

@fragment
fn main(point: Point) -> @location(0) f32 {
    return point.value;
}

// SECTION block_bins
// Few bins (at most four per render target): a fragment per block of BLOCK rows adds each of
// its rows of this draw's tile into its bins (1.0 for a count, the value for a float sum, in
// row order) and writes the block's partials, four bins a target, added (blended) to what
// other tiles' draws wrote for a block they share. Parameters: 0 bins, 1 texture width,
// 3 the tile's first row among all rows, 4 blocks, 5 the tile's rows.
const BLOCK: u32 = #BLOCK#u;

fn texel(row: u32) -> vec2<i32> {
    return vec2<i32>(i32(row % param(1u)), i32(row / param(1u)));
}

#ROWS#
struct Out {
#OUTS#}

@fragment
fn main(@builtin(position) at: vec4<f32>) -> Out {
    var out: Out;
    let block = u32(at.y) * param(1u) + u32(at.x);
    let first = param(3u);
    let end = first + param(5u);
    let start = max(block * BLOCK, first);
    let stop = min(block * BLOCK + BLOCK, end);
    var partials: array<f32, #BINS#>;
    for (var row = start; row < stop; row++) {
        // The row's bin (-1 for none) and what it adds.
        let entry = bin_entry(row - first);
        if (entry.x >= 0.0) {
            partials[u32(entry.x)] += entry.y;
        }
    }
#STORES#    return out;
}

// SECTION block_totals
// Each bin's total of its blocks' partials (`block_bins`' four bins a texture, or
// `sum_points`' texel per bin and block), added pairwise (a stack of partial sums merged as
// a binary counter carries) as `sum` adds, written as float32 (a sum) or uint32 (a count,
// exact: every partial and sum of them below 2^24). Parameters as the draws' before.
#PARTIALS#
fn texel(row: u32) -> vec2<i32> {
    return vec2<i32>(i32(row % param(1u)), i32(row / param(1u)));
}

@fragment
fn main(@builtin(position) at: vec4<f32>) -> @location(0) #TOTAL# {
    let bin = u32(at.y) * param(1u) + u32(at.x);
    if (bin >= param(0u)) {
        return #TOTAL#(0);
    }
    let blocks = param(4u);
    var stack: array<f32, 32>;
    var depth = 0u;
    for (var b = 0u; b < blocks; b++) {
        var total = partial(bin, b);
        for (var leaves = b + 1u; (leaves & 1u) == 0u; leaves >>= 1u) {
            depth -= 1u;
            total = stack[depth] + total;
        }
        stack[depth] = total;
        depth += 1u;
    }
    var total = 0.0;
    while (depth > 0u) {
        depth -= 1u;
        total = stack[depth] + total;
    }
    return #TOTAL#(total);
}
