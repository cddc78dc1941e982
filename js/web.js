// Browser entry point: call `await init()` once before using the API.
import initWasm from '../wasm/gputable.js';

export * from '../core.js';

let ready = null;

/** Loads the wasm module (once); `input` may be a URL, a Response or wasm bytes. */
export function init(input) {
  ready ??= initWasm(input === undefined ? undefined : {module_or_path: input});
  return ready.then(() => undefined);
}
