// Errors of the JavaScript layer, shared by the API (core.js) and the table model (table.js).

export class GpuTableError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'GpuTableError';
    this.code = code;
  }
}

export const fail = (code, message) => {
  throw new GpuTableError(code, message);
};

// A name given to wasm as a string: anything else read as one would be read out of bounds.
export const nameOf = (value, what) =>
  typeof value === 'string' ? value : fail('INVALID_ARGUMENT', `${what} must be a string, got ${typeof value}`);

// Before the wasm module is loaded every call into it fails reading an export of no module
// (bindings.js): say what to do instead.
let wasmLoaded = false;

// Called by the entry points once the wasm module is instantiated.
export function markWasmLoaded() {
  wasmLoaded = true;
}

// A failed load of the wasm module: what failed and what `init()` takes (`forms`).
export function wasmLoadFailed(error, forms) {
  return new GpuTableError('BACKEND_UNAVAILABLE',
    `loading the gputable wasm module failed (${error?.message ?? error}); give init() the module: ${forms}`);
}

function asGpuTableError(error) {
  if (error instanceof GpuTableError) return error;
  if (error && error.name === 'GpuTableError') return new GpuTableError(error.code, error.message);
  if (!wasmLoaded) {
    return new GpuTableError('BACKEND_UNAVAILABLE',
      'the gputable wasm module is not loaded: call `await init()` once before using the API');
  }
  // A wasm trap or a binding failure: never expected, reported rather than swallowed.
  return new GpuTableError('INTERNAL', String(error && error.message ? error.message : error));
}

// Runs `fn`, turning anything it throws into a GpuTableError.
export function guard(fn) {
  try {
    return fn();
  } catch (error) {
    throw asGpuTableError(error);
  }
}

// `guard` for promises.
export async function guardAsync(fn) {
  try {
    return await fn();
  } catch (error) {
    throw asGpuTableError(error);
  }
}
