// Element types and the checks every entry point makes on JS values before they reach wasm.
import {fail} from './errors.js';

export const TYPED_ARRAYS = {
  uint8: Uint8Array,
  sint8: Int8Array,
  uint16: Uint16Array,
  sint16: Int16Array,
  uint32: Uint32Array,
  sint32: Int32Array,
  float32: Float32Array
};

export const TYPES = Object.freeze(Object.keys(TYPED_ARRAYS));

export function checkType(type) {
  if (typeof type !== 'string' || !Object.prototype.hasOwnProperty.call(TYPED_ARRAYS, type)) {
    fail('INVALID_ARGUMENT', `unknown type '${String(type)}'; expected one of ${TYPES.join(' ')}`);
  }
  return type;
}

export function typeOfArray(array) {
  if (array instanceof Uint8Array || array instanceof Uint8ClampedArray) return 'uint8';
  if (array instanceof Int8Array) return 'sint8';
  if (array instanceof Uint16Array) return 'uint16';
  if (array instanceof Int16Array) return 'sint16';
  if (array instanceof Uint32Array) return 'uint32';
  if (array instanceof Int32Array) return 'sint32';
  if (array instanceof Float32Array) return 'float32';
  return fail('TYPE_MISMATCH', `unsupported array type ${array?.constructor?.name}`);
}

// An appendable vector's row size (the engine takes it as a uint32, which would wrap).
export function checkSize(size) {
  if (!Number.isInteger(size) || size < 1 || size > 0xffffffff) {
    fail('INVALID_ARGUMENT', `size must be a positive integer, got ${size}`);
  }
  return size;
}

// An options argument: `undefined` and `null` are no options; anything else is an object.
// Where `known` names every option, another key is `INVALID_ARGUMENT`: a misspelt option
// (`splitevery`, `formats`) must not silently fall back to the default.
export function options(value, what, known) {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object') fail('INVALID_ARGUMENT', `${what} options must be an object, got ${typeof value}`);
  const unknown = known ? Object.keys(value).filter(key => !known.includes(key)) : [];
  if (unknown.length) fail('INVALID_ARGUMENT', `${what} takes only {${known.join(', ')}}, got ${unknown.join(', ')}`);
  return value;
}

export function isNumberArray(value) {
  return Array.isArray(value) && value.every(v => typeof v === 'number');
}

// Whether a typed array's buffer was transferred or detached (its views read nothing).
export function isDetached(view) {
  const buffer = view.buffer;
  if (typeof buffer.detached === 'boolean') return buffer.detached;
  try {
    new Uint8Array(buffer, 0, 0);
    return false;
  } catch {
    return true;
  }
}

// A typed array that can be read, or INVALID_ARGUMENT.
export function liveView(view, what) {
  if (!ArrayBuffer.isView(view) || view instanceof DataView) {
    fail('INVALID_ARGUMENT', `${what} needs a typed array or an array of numbers`);
  }
  if (isDetached(view)) fail('INVALID_ARGUMENT', `${what}: the typed array's buffer was detached (transferred)`);
  return view;
}

const VERTEX_TYPES = {uint8: 'uint8', sint8: 'sint8', uint16: 'uint16', sint16: 'sint16', uint32: 'uint32', sint32: 'sint32', float32: 'float32'};

export function formatOf(type, size) {
  return size === 1 ? VERTEX_TYPES[type] : `${VERTEX_TYPES[type]}x${size}`;
}
