// `gputable/wasm`: the wasm module's file. Bundlers that copy it (esbuild's `file` loader,
// Vite's `?url`) give its URL or path as the default export; pass that to `init()`.
declare const wasmModuleUrl: string;
export default wasmModuleUrl;
