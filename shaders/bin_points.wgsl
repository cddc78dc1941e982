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
