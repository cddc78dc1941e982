// The wasm bindings every call goes through. The default module has the CPU and WebGPU
// backends and Arrow IPC; the WebGL2 backend (naga's GLSL writer, wgpu's GL layer: most of
// the bytes) is in a second module with everything else too, loaded only for WebGL2. Objects
// of one module cannot be used with the other, so the second replaces the first only while
// nothing has been made with it.
import {GpuTableError, fail} from './errors.js';

let current = null;
// Whether anything was made with `current`, and calls that may still make something.
let touched = false;
let inFlight = 0;
// Set by the entry point: loads the module with WebGL2 and returns its bindings.
let webglLoader = null;
let swapping = null;

// The bindings: reading any export counts as making something with the module.
export const wasm = new Proxy({}, {
  get(_, name) {
    touched = true;
    return current[name];
  }
});

// Calls `fn(bindings)`, which makes something only if it resolves (a device).
export async function probe(fn) {
  inFlight += 1;
  try {
    const made = await fn(current);
    touched = true;
    return made;
  } finally {
    inFlight -= 1;
  }
}

// Read-only calls (counters) that make nothing.
export function peek(name) {
  return current[name];
}

// Called by the entry point with the bindings it instantiated.
export function useBindings(bindings) {
  current = bindings;
  touched = false;
}

// Called by the browser entry point: how to load the module with WebGL2 on demand.
export function setWebGlLoader(loader) {
  webglLoader = loader;
}

// Makes sure the loaded module has the WebGL2 backend: the default module is replaced by
// the WebGL2 one when nothing was made with it yet, and BACKEND_UNAVAILABLE says what to do
// when something was.
export async function needWebGl() {
  if (swapping) await swapping;
  // Before init() the call fails as every other does (errors.js says what to do).
  if (!current || current.createWebGlDevice) return;
  if (!webglLoader) fail('BACKEND_UNAVAILABLE', 'WebGL2 is not available here (this entry point has no WebGL2 module)');
  checkUntouched();
  swapping = webglLoader();
  try {
    const bindings = await swapping;
    // Something may have been made with the default module while this one loaded.
    checkUntouched();
    useBindings(bindings);
  } finally {
    swapping = null;
  }
}

// Marks the refusal below, which `'best'` reports instead of falling back past WebGL2.
export const MODULE_SPLIT = Symbol('WebGL2 refused: objects of the default module exist');

function checkUntouched() {
  if (touched || inFlight > 0) {
    const error = new GpuTableError('BACKEND_UNAVAILABLE',
      'the WebGL2 backend is in its own wasm module, and objects were already made with the default one: ' +
      'call backendRegistry.add(webglBackend) before `await init()`');
    error[MODULE_SPLIT] = true;
    throw error;
  }
}
