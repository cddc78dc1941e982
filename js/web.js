// Browser entry point: call `await init()` once before using the API.
import initWasm from '../wasm/gputable.js';
import {markWasmLoaded, wasmLoadFailed} from '../errors.js';

export * from '../core.js';

let ready = null;

/**
 * Loads the wasm module (once); `input` may be its URL, a Response, its bytes or a compiled
 * module. A failed load rejects with BACKEND_UNAVAILABLE and may be retried.
 */
export function init(input) {
  ready ??= initWasm(input === undefined ? undefined : {module_or_path: input}).then(
    () => markWasmLoaded(),
    error => {
      ready = null;
      throw wasmLoadFailed(error,
        "its URL (the package's 'gputable/wasm' export), a Response, its bytes or a compiled WebAssembly.Module");
    });
  return ready;
}
