// Errors of the JavaScript layer, shared by the API (core.js) and the table model (table.js).

/** Every failure of the library: `name === 'GpuTableError'` and a stable `code`. */
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

function asGpuTableError(error) {
  if (error instanceof GpuTableError) return error;
  if (error && error.name === 'GpuTableError') return new GpuTableError(error.code, error.message);
  // A wasm trap or a binding failure: never expected, reported rather than swallowed.
  return new GpuTableError('INTERNAL', String(error && error.message ? error.message : error));
}

/** Runs `fn`, turning anything it throws into a GpuTableError. */
export function guard(fn) {
  try {
    return fn();
  } catch (error) {
    throw asGpuTableError(error);
  }
}

/** `guard` for promises. */
export async function guardAsync(fn) {
  try {
    return await fn();
  } catch (error) {
    throw asGpuTableError(error);
  }
}
