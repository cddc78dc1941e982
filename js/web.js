// Browser entry point: call `await init()` once before using the API.
import * as defaultBindings from '../wasm/gputable.js';
import {setWebGlLoader, useBindings} from '../bindings.js';
import {backendRegistry} from '../devices.js';
import {markWasmLoaded, wasmLoadFailed} from '../errors.js';

export * from '../core.js';

const FORMS = 'a Response, its bytes or a compiled WebAssembly.Module';
let ready = null;
let webglInput;

async function instantiate(bindings, input) {
  await bindings.default(input === undefined ? undefined : {module_or_path: input});
  return bindings;
}

async function loadWebGl() {
  try {
    return await instantiate(await import('../wasm-webgl/gputable.js'), webglInput);
  } catch (error) {
    throw wasmLoadFailed(error,
      `as init()'s second argument, the WebGL2 module's URL ('gputable/wasm-webgl'), ${FORMS}`);
  }
}

setWebGlLoader(loadWebGl);

export function init(input, webglModule) {
  if (webglModule !== undefined) webglInput = webglModule;
  ready ??= (async () => {
    // Given only the default module's location, that one: the WebGL2 module is then
    // loaded on demand, from where its bindings expect it.
    if (backendRegistry.has('webgl') && (input === undefined || webglInput !== undefined)) return loadWebGl();
    try {
      return await instantiate(defaultBindings, input);
    } catch (error) {
      throw wasmLoadFailed(error, `its URL (the package's 'gputable/wasm' export), ${FORMS}`);
    }
  })().then(
    bindings => {
      useBindings(bindings);
      markWasmLoaded();
    },
    error => {
      ready = null;
      throw error;
    });
  return ready;
}
