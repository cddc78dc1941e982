// One triangle covering the whole render target: every fragment kernel draws it, and each
// fragment computes the texel under it (scissor rects limit a draw to some rows).
@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    return vec4<f32>(f32((i << 1u) & 2u) * 2.0 - 1.0, f32(i & 2u) * 2.0 - 1.0, 0.0, 1.0);
}
