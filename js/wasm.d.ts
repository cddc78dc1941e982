// `gputable/wasm` and `gputable/wasm-webgl`: the wasm modules' files (the default one, and
// the one with WebGL2 too). Bundlers that copy them (esbuild's `file` loader, Vite's `?url`)
// give the URL or path as the default export; pass them to `init()`.
declare const wasmModuleUrl: string;
export default wasmModuleUrl;
