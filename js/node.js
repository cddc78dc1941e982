// Node entry point: the wasm module is loaded synchronously on import from beside this file.
// It is the default module (CPU, WebGPU, Arrow IPC): Node has no WebGL2.
// A bundle that moved the code away from the module loads it with `await init(input)`.
import {readFileSync} from 'node:fs';
import * as bindings from '../wasm/gputable.js';
import {useBindings} from '../bindings.js';
import {markWasmLoaded, wasmLoadFailed} from '../errors.js';

export * from '../core.js';

let loaded = false;
// Why the module beside the code did not load, when it is there but failed.
let besideError = null;

function load(module) {
  bindings.initSync({module});
  useBindings(bindings);
  markWasmLoaded();
  loaded = true;
}

try {
  load(readFileSync(new URL('../wasm/gputable_bg.wasm', import.meta.url)));
} catch (error) {
  // Not there (a bundle): left to init(input); until then every call says to call it.
  if (error?.code !== 'ENOENT') besideError = error;
}

async function bytesOf(input) {
  if (input instanceof WebAssembly.Module || ArrayBuffer.isView(input) || input instanceof ArrayBuffer) return input;
  if (typeof Response === 'function' && input instanceof Response) return input.arrayBuffer();
  if (typeof input === 'string' || input instanceof URL) return readFileSync(input);
  throw new TypeError(`init() takes a path, a URL, a Response, bytes or a WebAssembly.Module, got ${typeof input}`);
}

export async function init(input) {
  if (loaded) return;
  try {
    if (input === undefined) {
      throw besideError ?? new Error('it is not beside the code, and init() was given nothing');
    }
    load(await bytesOf(input));
  } catch (error) {
    throw wasmLoadFailed(error,
      "its path or file URL (the package's 'gputable/wasm' export), a Response, its bytes or a compiled WebAssembly.Module");
  }
}
