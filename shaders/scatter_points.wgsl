// Scatter on WebGL2 (src/gl/scatter.rs): one point per input row of one tile, drawn into
// one tile of the output at the texel of the row its destination names (points outside
// that tile are clipped). GL writes a pixel's fragments in draw order, so of colliding
// destinations the later row lands, as on the CPU. The shared part, then `values` (a
// value's rows; src/wgsl/fragment.rs fills in #T#, their type) or `row_numbers` (each
// row's number in the scatter's input, uint32), then `points`. Parameters: 0 the output
// tile's first row, 1 its rows, 2 the input tile's first row in the scatter's input, 3
// texture width (texels, every texture here is as wide), 4 the output texture's height.

@group(0) @binding(1) var destinations: texture_2d<u32>;

fn texel(row: u32) -> vec2<i32> {
    return vec2<i32>(i32(row % param(3u)), i32(row / param(3u)));
}

// SECTION values
@group(0) @binding(2) var values: texture_2d<#T#>;

fn value(i: u32) -> #T# {
    return textureLoad(values, texel(i), 0).r;
}

// SECTION row_numbers
fn value(i: u32) -> #T# {
    return param(2u) + i;
}

// SECTION points
struct Point {
    @builtin(position) position: vec4<f32>,
    @location(0) @interpolate(flat) value: #T#,
}

@vertex
fn vs(@builtin(vertex_index) i: u32) -> Point {
    let d = textureLoad(destinations, texel(i), 0).r;
    var point: Point;
    point.value = value(i);
    point.position = vec4<f32>(2.0, 2.0, 0.0, 1.0);
    if (d >= param(0u) && d - param(0u) < param(1u)) {
        let at = texel(d - param(0u));
        let size = vec2<f32>(f32(param(3u)), f32(param(4u)));
        let centre = (vec2<f32>(at) + vec2<f32>(0.5, 0.5)) / size;
        point.position = vec4<f32>(centre.x * 2.0 - 1.0, 1.0 - centre.y * 2.0, 0.0, 1.0);
    }
    return point;
}

@fragment
fn main(point: Point) -> @location(0) #T# {
    return point.value;
}
