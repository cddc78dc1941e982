// The typed, variadic JavaScript API over the wasm exports. Shared by the web and Node
// entry points, which differ only in how they load the wasm module.
import * as wasm from './wasm/gputable.js';

/** Every failure of the library: `name === 'GpuTableError'` and a stable `code`. */
export class GpuTableError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'GpuTableError';
    this.code = code;
  }
}

const fail = (code, message) => {
  throw new GpuTableError(code, message);
};

function asGpuTableError(error) {
  if (error instanceof GpuTableError) return error;
  if (error && error.name === 'GpuTableError') return new GpuTableError(error.code, error.message);
  // A wasm trap or a binding failure: never expected, reported rather than swallowed.
  return new GpuTableError('INTERNAL', String(error && error.message ? error.message : error));
}

/** Runs `fn`, turning anything it throws into a GpuTableError. */
function guard(fn) {
  try {
    return fn();
  } catch (error) {
    throw asGpuTableError(error);
  }
}

/** `guard` for promises. */
async function guardAsync(fn) {
  try {
    return await fn();
  } catch (error) {
    throw asGpuTableError(error);
  }
}

const TYPED_ARRAYS = {
  uint8: Uint8Array,
  sint8: Int8Array,
  uint16: Uint16Array,
  sint16: Int16Array,
  uint32: Uint32Array,
  sint32: Int32Array,
  float32: Float32Array
};

/** The element types of the API. */
export const TYPES = Object.freeze(Object.keys(TYPED_ARRAYS));

function checkType(type) {
  if (!Object.prototype.hasOwnProperty.call(TYPED_ARRAYS, type)) {
    fail('INVALID_ARGUMENT', `unknown type '${type}'; expected one of ${TYPES.join(' ')}`);
  }
  return type;
}

function typeOfArray(array) {
  if (array instanceof Uint8Array || array instanceof Uint8ClampedArray) return 'uint8';
  if (array instanceof Int8Array) return 'sint8';
  if (array instanceof Uint16Array) return 'uint16';
  if (array instanceof Int16Array) return 'sint16';
  if (array instanceof Uint32Array) return 'uint32';
  if (array instanceof Int32Array) return 'sint32';
  if (array instanceof Float32Array) return 'float32';
  return fail('TYPE_MISMATCH', `unsupported array type ${array?.constructor?.name}`);
}

function checkSize(size) {
  if (!Number.isInteger(size) || size < 1 || size > 0xffffffff) {
    fail('INVALID_ARGUMENT', `size must be a positive integer, got ${size}`);
  }
  return size;
}

function bytesOf(typed) {
  return new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
}

function isNumberArray(value) {
  return Array.isArray(value) && value.every(v => typeof v === 'number');
}

function source(typed, type, size, constant) {
  return new GPUTableEvaluator(
    guard(() => wasm.Evaluator.fromBytes(bytesOf(typed), {type, size, constant}))
  );
}

/**
 * A lazy table computation. Operations return new evaluators; nothing runs until
 * `evaluate()` (or `readValue()`).
 *
 * @example
 * const xyz = GPUTableEvaluator.fromArray(new Float32Array([1, 2, 3, 4, 5, 6]), {size: 3});
 * const r = add(xyz, [10, 20, 30], 1);
 * await r.evaluate(device);
 * await r.readValue(); // Float32Array [12, 23, 34, 15, 26, 37]
 */
export class GPUTableEvaluator {
  /** @internal Use the static constructors or the operations. */
  constructor(handle) {
    this._handle = handle;
    this._vector = null;
  }

  /**
   * Wraps packed rows of `size` values. `number[]` is float32 unless `type` is given;
   * `Float64Array` becomes uint32 word pairs (size doubled) for `fround()`.
   */
  static fromArray(array, {type, size = 1} = {}) {
    checkSize(size);
    if (type !== undefined) checkType(type);
    if (Array.isArray(array)) {
      if (!isNumberArray(array)) fail('INVALID_ARGUMENT', 'fromArray needs numbers');
      const resolved = type ?? 'float32';
      return source(new TYPED_ARRAYS[resolved](array), resolved, size, false);
    }
    if (array instanceof Float64Array && (type === undefined || type === 'uint32')) {
      const words = new Uint32Array(array.buffer, array.byteOffset, array.length * 2);
      return source(words, 'uint32', size * 2, false);
    }
    if (!ArrayBuffer.isView(array) || array instanceof DataView) {
      fail('INVALID_ARGUMENT', 'fromArray needs a typed array or an array of numbers');
    }
    if (array instanceof BigInt64Array || array instanceof BigUint64Array) {
      fail('TYPE_MISMATCH', '64-bit integer arrays are not supported');
    }
    const natural = array instanceof Float64Array ? 'float64' : typeOfArray(array);
    const resolved = type ?? natural;
    const typed = resolved === natural ? array : new TYPED_ARRAYS[resolved](array);
    return source(typed, resolved, size, false);
  }

  /** One constant row (a number or a row of numbers) that broadcasts across rows. */
  static fromConstant(value, type = 'float32') {
    checkType(type);
    const row = typeof value === 'number' ? [value] : value;
    if (!isNumberArray(row) || row.length === 0) {
      fail('INVALID_ARGUMENT', 'fromConstant needs a number or a non-empty array of numbers');
    }
    return source(new TYPED_ARRAYS[type](row), type, row.length, true);
  }

  /** Borrows the storage of a `GPUVector` (e.g. the output of another evaluation). */
  static fromVector(vector) {
    if (!(vector instanceof GPUVector)) fail('INVALID_ARGUMENT', 'fromVector needs a GPUVector');
    return vector._evaluator;
  }

  get type() {
    return this._handle.type;
  }
  get size() {
    return this._handle.size;
  }
  get length() {
    return this._handle.length;
  }
  get isConstant() {
    return this._handle.isConstant;
  }
  get evaluated() {
    return this._handle.evaluated;
  }

  /** Runs the computation on `device` (CPU when omitted) and returns its output vector. */
  async evaluate(device) {
    if (device?._evaluate) {
      checkDevice(device);
      await guardAsync(() => device._evaluate(this._handle));
      this._vector ??= new GPUVector(this);
      return this._vector;
    }
    return this.evaluateSync(device);
  }

  /** Synchronous `evaluate()`, for the CPU device. */
  evaluateSync(device) {
    checkDevice(device);
    if (device?._evaluate) {
      fail('INVALID_ARGUMENT', `evaluateSync() is for the CPU device; use await evaluate(device) on ${device.type}`);
    }
    guard(() => this._handle.evaluate());
    this._vector ??= new GPUVector(this);
    return this._vector;
  }

  /** Rows `startRow..endRow` (clamped) as a typed array of this evaluator's type. */
  async readValue(startRow, endRow) {
    return this.readValueSync(startRow, endRow);
  }

  /** Synchronous `readValue()`, for the CPU device. */
  readValueSync(startRow, endRow) {
    for (const row of [startRow, endRow]) {
      if (row !== undefined && typeof row !== 'number') {
        fail('INVALID_ARGUMENT', `row bounds must be numbers, got ${typeof row}`);
      }
    }
    return guard(() => this._handle.readValue(startRow, endRow));
  }

  /** The passes this graph runs: kernels, what was fused, passes per backend. */
  explain(device) {
    checkDevice(device);
    if (device?._explain) return guard(() => device._explain(this._handle));
    return guard(() => this._handle.explain());
  }

  /** Releases the materialized output; using this evaluator afterwards is `DESTROYED`. */
  destroy() {
    this._handle.destroy();
    this._vector = null;
  }

  toString() {
    return `GPUTableEvaluator<${this.type} x${this.size}, ${this.length} rows>`;
  }
}

/**
 * An evaluated column: one chunk of packed rows. Its storage is owned by the evaluator that
 * produced it.
 */
export class GPUVector {
  /** @internal */
  constructor(evaluator) {
    this._evaluator = evaluator;
    const bytes = TYPED_ARRAYS[evaluator.type].BYTES_PER_ELEMENT;
    this.name = '';
    this.type = evaluator.type;
    this.length = evaluator.length;
    this.size = evaluator.size;
    this.valueLength = evaluator.size;
    this.stride = evaluator.size;
    this.byteStride = evaluator.size * bytes;
    this.data = [
      new GPUData({
        type: this.type,
        length: this.length,
        valueLength: this.size,
        byteStride: this.byteStride
      })
    ];
  }

  /** Rows of this vector as a typed array. */
  async readValue(startRow, endRow) {
    return this._evaluator.readValue(startRow, endRow);
  }
}

/** One chunk of a vector's storage with its row layout. */
export class GPUData {
  constructor({type, length, valueLength, byteStride}) {
    this.type = type;
    this.length = length;
    this.valueLength = valueLength;
    this.byteOffset = 0;
    this.byteStride = byteStride;
    this.rowByteLength = byteStride;
    this.ownsBuffer = false;
  }
}

function handleOf(arg) {
  if (arg instanceof GPUTableEvaluator) return arg._handle;
  if (arg instanceof GPUVector) return arg._evaluator._handle;
  if (typeof arg === 'number' || (isNumberArray(arg) && arg.length > 0)) {
    return GPUTableEvaluator.fromConstant(arg)._handle;
  }
  return fail('INVALID_ARGUMENT', `expected an evaluator, a GPUVector, a number or an array of numbers, got ${describe(arg)}`);
}

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array with non-numbers or no values';
  return typeof value === 'object' ? value.constructor?.name ?? 'object' : typeof value;
}

function wrap(fn) {
  return new GPUTableEvaluator(guard(fn));
}

function withList(args, fn) {
  const handles = args.map(handleOf);
  const list = new wasm.EvaluatorList();
  try {
    for (const handle of handles) list.push(handle);
    return wrap(() => fn(list));
  } finally {
    list.free();
  }
}

function fold(op, args) {
  if (args.length === 0) fail('INVALID_ARGUMENT', `${op} needs at least one argument`);
  if (args.length === 1 && args[0] instanceof GPUTableEvaluator) return args[0];
  return withList(args, list => wasm.foldBinary(op, list));
}

function unary(op, x) {
  return wrap(() => wasm.unaryOp(op, handleOf(x)));
}

/** Elementwise sum, folded left to right. @example add(xyz, [10, 20, 30], 1) */
export const add = (...args) => fold('add', args);
/** Elementwise difference, folded left to right. */
export const subtract = (...args) => fold('subtract', args);
/** Elementwise product, folded left to right. */
export const multiply = (...args) => fold('multiply', args);
/** Elementwise quotient, folded left to right; integer division by zero is 0. */
export const divide = (...args) => fold('divide', args);
/** `base ** exponent`, float32. */
export const pow = (base, exponent) => withList([base, exponent], list => wasm.foldBinary('pow', list));
export const sqrt = x => unary('sqrt', x);
/** Absolute value; keeps the input type. */
export const abs = x => unary('abs', x);
export const sin = x => unary('sin', x);
export const cos = x => unary('cos', x);
export const tan = x => unary('tan', x);
export const exp = x => unary('exp', x);
export const log = x => unary('log', x);

/** Concatenates each row of the inputs: size = sum of sizes. @example interleave(xyz, id) */
export function interleave(...args) {
  if (args.length === 0) fail('INVALID_ARGUMENT', 'interleave needs at least one input');
  if (args.length === 1 && args[0] instanceof GPUTableEvaluator) return args[0];
  return withList(args, list => wasm.interleave(list));
}

/** Rows of `source` at `ids` (one integer per row); bad ids give zero rows. */
export const gather = (ids, source) => wrap(() => wasm.gather(handleOf(ids), handleOf(source)));

/** Per channel `[min, max]` over all rows (NaN ignored): length = x.size, size 2. */
export const extent = x => wrap(() => wasm.extent(handleOf(x)));

/** `count` sint32 values `start, start + step, ...`. @example sequence(4, 10, 2) // 10 12 14 16 */
export function sequence(count, start = 0, step = 1) {
  for (const [name, v] of [['count', count], ['start', start], ['step', step]]) {
    if (typeof v !== 'number') fail('INVALID_ARGUMENT', `sequence ${name} must be a number`);
  }
  return wrap(() => wasm.sequence(count, start, step));
}

/** `[segmentIndex, indexInSegment]` for each of `vertexCount` vertices. */
export function segmentedMap(segments, vertexCount) {
  if (typeof vertexCount !== 'number') fail('INVALID_ARGUMENT', 'segmentedMap vertexCount must be a number');
  return wrap(() => wasm.segmentedMap(handleOf(segments), vertexCount));
}

/** Float64 word pairs to float32 `[high..., low...]` rows. */
export const fround = x => wrap(() => wasm.fround(handleOf(x)));

/** Reorders or duplicates lanes. @example swizzle(xyz, [2, 1, 0]) */
export function swizzle(x, channels) {
  if (!isNumberArray(channels)) fail('INVALID_ARGUMENT', 'swizzle channels must be an array of numbers');
  return wrap(() => wasm.swizzle(handleOf(x), Float64Array.from(channels)));
}

/** Lane-wise `cond != 0 ? whenTrue : whenFalse`. */
export const select = (cond, whenTrue, whenFalse) =>
  wrap(() => wasm.select(handleOf(cond), handleOf(whenTrue), handleOf(whenFalse)));

/** Row dot product, float32 size 1. */
export const dot = (a, b) => wrap(() => wasm.dot(handleOf(a), handleOf(b)));
/** Row Euclidean length, float32 size 1. */
export const length = x => wrap(() => wasm.length(handleOf(x)));
/** 1 where every lane of the rows is equal, else 0 (uint32). */
export const equalAll = (a, b) => wrap(() => wasm.equalAll(handleOf(a), handleOf(b)));

function collectEvaluators(value, found, seen) {
  if (value instanceof GPUTableEvaluator) {
    found.add(value);
  } else if (value && typeof value === 'object' && !seen.has(value)) {
    seen.add(value);
    const items = Array.isArray(value) ? value : Object.getPrototypeOf(value) === Object.prototype ? Object.values(value) : [];
    for (const item of items) collectEvaluators(item, found, seen);
  }
  return found;
}

/**
 * Evaluates every evaluator in `roots` (an evaluator, or arrays and plain objects of them)
 * and releases every intermediate. Returns `roots`.
 */
export async function cleanEvaluate(device, roots) {
  checkDevice(device);
  const evaluators = [...collectEvaluators(roots, new Set(), new Set())];
  if (device?._evaluate) {
    // GPU evaluations keep no intermediates: each root reads back only itself.
    for (const evaluator of evaluators) await evaluator.evaluate(device);
    return roots;
  }
  const list = new wasm.EvaluatorList();
  try {
    for (const evaluator of evaluators) list.push(evaluator._handle);
    guard(() => wasm.cleanEvaluate(list));
  } finally {
    list.free();
  }
  return roots;
}

// ---- devices and backends ----

class CPUDevice {
  constructor() {
    this.type = 'cpu';
    this.limits = Object.freeze({maxRows: 0xffffffff, maxBufferSize: 2 ** 31});
    this.destroyed = false;
  }
  /** Evaluating on this device afterwards is `DESTROYED`. */
  destroy() {
    this.destroyed = true;
  }
}

function checkDevice(device) {
  if (device === undefined || device === null) return;
  if (device.destroyed) fail('DESTROYED', `the ${device.type} device was destroyed`);
  if (device.type !== 'cpu' && !device._evaluate) {
    fail('BACKEND_UNAVAILABLE', `evaluation on '${device.type}' devices is not available in this build`);
  }
}

class WebGPUDevice {
  constructor(handle) {
    this._handle = handle;
    this.type = 'webgpu';
    this.adapterName = handle.adapterName;
    this.limits = Object.freeze({
      maxRows: 0xffffffff,
      maxBufferSize: handle.maxBufferSize,
      maxStorageBufferBindingSize: handle.maxStorageBufferBindingSize,
      maxComputeWorkgroupsPerDimension: handle.maxComputeWorkgroupsPerDimension
    });
    this.destroyed = false;
  }
  /** Frees the device's buffers and pipelines; evaluating on it afterwards is `DESTROYED`. */
  destroy() {
    if (!this.destroyed) this._handle.destroy();
    this.destroyed = true;
  }
  /** @internal */
  _evaluate(handle) {
    return handle.evaluateWebGpu(this._handle);
  }
  /** @internal */
  _explain(handle) {
    return handle.explainWebGpu(this._handle);
  }
}

class WebGLDevice {
  constructor(handle) {
    this._handle = handle;
    this.type = 'webgl';
    this.adapterName = handle.adapterName;
    this.limits = Object.freeze({
      maxRows: 0xffffffff,
      maxTextureDimension2D: handle.maxTextureDimension2D,
      maxColorAttachments: handle.maxColorAttachments,
      maxSampledTexturesPerShaderStage: handle.maxSampledTexturesPerShaderStage,
      tileRows: handle.tileRows
    });
    this.destroyed = false;
  }
  /** Frees the device's textures and pipelines; evaluating on it afterwards is `DESTROYED`. */
  destroy() {
    if (!this.destroyed) this._handle.destroy();
    this.destroyed = true;
  }
  /** @internal */
  _evaluate(handle) {
    return handle.evaluateWebGl(this._handle);
  }
  /** @internal */
  _explain(handle) {
    return handle.explainWebGl(this._handle);
  }
}

/** The CPU backend, registered by default. */
export const cpuBackend = Object.freeze({
  type: 'cpu',
  async createDevice() {
    return new CPUDevice();
  }
});

/** The WebGPU backend (register it with `backendRegistry.add`): WGSL compute through wgpu. */
export const webgpuBackend = Object.freeze({
  type: 'webgpu',
  async createDevice() {
    if (typeof navigator === 'undefined' || !navigator.gpu) {
      fail('BACKEND_UNAVAILABLE', 'WebGPU is not available here (no navigator.gpu)');
    }
    return new WebGPUDevice(await guardAsync(() => wasm.createWebGpuDevice()));
  }
});
/**
 * The WebGL2 backend (register it with `backendRegistry.add`): fragment-shader kernels over
 * data textures through wgpu's GL backend, on an OffscreenCanvas (pages and workers).
 */
export const webglBackend = Object.freeze({
  type: 'webgl',
  async createDevice() {
    if (typeof OffscreenCanvas === 'undefined') {
      fail('BACKEND_UNAVAILABLE', 'WebGL2 is not available here (no OffscreenCanvas)');
    }
    return new WebGLDevice(await guardAsync(() => wasm.createWebGlDevice()));
  }
});

const backends = new Map([['cpu', cpuBackend]]);

/** The backends `createDevice()` can use; `cpu` is registered by default. */
export const backendRegistry = Object.freeze({
  add(backend) {
    if (!backend || typeof backend.type !== 'string' || typeof backend.createDevice !== 'function') {
      fail('INVALID_ARGUMENT', 'backendRegistry.add needs a backend with a type and createDevice()');
    }
    backends.set(backend.type, backend);
  },
  has: type => backends.has(type),
  get: type => backends.get(type),
  types: () => [...backends.keys()]
});

/**
 * A device of `type` ('cpu' by default, 'webgpu', 'webgl', or 'best' for the first of
 * those that works). Rejects with `BACKEND_UNAVAILABLE`, never falls back silently.
 */
export async function createDevice({type = 'cpu'} = {}) {
  if (type === 'best') {
    for (const candidate of ['webgpu', 'webgl', 'cpu']) {
      if (!backends.has(candidate)) continue;
      try {
        return await backends.get(candidate).createDevice();
      } catch (error) {
        if (error?.code !== 'BACKEND_UNAVAILABLE') throw error;
      }
    }
  }
  const backend = backends.get(type);
  if (!backend) {
    fail('BACKEND_UNAVAILABLE', `no '${type}' backend is registered; call backendRegistry.add() first`);
  }
  return backend.createDevice();
}
