// `gl_backend`: the WebGL2 backend is compiled natively (wgpu's GLES layer, tested on
// llvmpipe) and on wasm32 only with the `webgl` feature, so the default module leaves it out.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(gl_backend)");
    let wasm = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32");
    if !wasm || std::env::var_os("CARGO_FEATURE_WEBGL").is_some() {
        println!("cargo::rustc-cfg=gl_backend");
    }
}
