use std::{env, fs, path::Path};

fn main() {
    // `gl_backend`: the WebGL2 backend is compiled natively (wgpu's GLES layer, tested on
    // llvmpipe) and on wasm32 only with the `webgl` feature, so the default module leaves it out.
    println!("cargo::rustc-check-cfg=cfg(gl_backend)");
    let wasm = env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32");
    if !wasm || env::var_os("CARGO_FEATURE_WEBGL").is_some() {
        println!("cargo::rustc-cfg=gl_backend");
    }
    strip_shader_comments();
}

/// shaders/*.wgsl without their comments, for `include_str!`: the comments explain the
/// kernels to readers and would be a quarter of the shaders' bytes in the wasm module.
/// `// SECTION name` lines stay (templates are split on them). Indentation goes too: WGSL
/// reads no whitespace.
fn strip_shader_comments() {
    println!("cargo::rerun-if-changed=shaders");
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("shaders");
    fs::create_dir_all(&out).expect("OUT_DIR is writable");
    for entry in fs::read_dir("shaders").expect("shaders/ exists") {
        let path = entry.expect("shaders/ is readable").path();
        if path.extension().is_none_or(|ext| ext != "wgsl") {
            continue;
        }
        // Each file named: cargo reruns a script for a directory only when its entries
        // change, not when a file in it is edited in place.
        println!("cargo::rerun-if-changed={}", path.display());
        let source = fs::read_to_string(&path).expect("a shader is UTF-8");
        let mut stripped = String::with_capacity(source.len());
        for line in source.lines() {
            // WGSL has no string literals, so `//` always starts a comment.
            assert!(
                !line.contains("/*"),
                "{}: use line comments, not block comments",
                path.display()
            );
            let code = match line.find("//") {
                Some(_) if line.trim_start().starts_with("// SECTION ") => line.trim_start(),
                Some(start) => line[..start].trim(),
                None => line.trim(),
            };
            if !code.is_empty() {
                stripped.push_str(code);
                stripped.push('\n');
            }
        }
        fs::write(out.join(path.file_name().expect("a file")), stripped)
            .expect("OUT_DIR is writable");
    }
}
