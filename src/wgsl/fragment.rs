//! Fragment kernels for the WebGL2 backend, generated from the same regions and node code
//! as the WebGPU kernels: only the storage (data textures instead of storage buffers) and
//! the entry points differ.
//!
//! A fragment computes one row: its texel position in the draw's tile gives the row, and it
//! writes up to 4 lanes per render target. Reductions are in `fragment_reduce`.

use std::fmt::Write;
use std::ops::Range;
use std::rc::Rc;

use super::{finish, plane_channels, start, wgsl_type, Kernel, Storage, TextureLayout};
use crate::dtype::Class;
use crate::error::Result;
use crate::plan::Region;
use crate::value::Value;

pub(super) const FULLSCREEN: &str = include_str!("../../shaders/fullscreen.wgsl");
const SCATTER_POINTS: &str = include_str!("../../shaders/scatter_points.wgsl");

/// The point-list draw of a scatter of values of `class` (see shaders/scatter_points.wgsl).
pub fn scatter_points_source(class: Class) -> String {
    format!(
        "{}\n{}",
        super::PRELUDE.replace("PARAM_VEC4S", "2"),
        SCATTER_POINTS.replace("#T#", wgsl_type(class))
    )
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
