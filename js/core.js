// The typed, variadic JavaScript API over the wasm exports. Shared by the web and Node
// entry points, which differ only in how they load the wasm module.
import * as wasm from './wasm/gputable.js';
import {GpuTableError, fail, guard, guardAsync} from './errors.js';

export {GpuTableError};

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
    vector._check();
    if (vector._evaluator) return vector._evaluator;
    const chunks = vector.data.map(chunk => {
      const evaluator = new GPUTableEvaluator(chunk.buffer.handle());
      evaluator._borrowed = true;
      return evaluator;
    });
    return chunks.length === 1 ? chunks[0] : new ChunkedEvaluator(chunks);
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
      await guardAsync(() => device._evaluate(this._live()));
      this._vector ??= outputVector(this);
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
    guard(() => this._live().evaluate());
    this._vector ??= outputVector(this);
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
    return guard(() => this._live().readValue(startRow, endRow));
  }

  /** The passes this graph runs: kernels, what was fused, passes per backend. */
  explain(device) {
    checkDevice(device);
    if (device?._explain) return guard(() => device._explain(this._live()));
    return guard(() => this._live().explain());
  }

  /**
   * Releases the materialized output; using this evaluator afterwards is `DESTROYED`. An
   * evaluator over a table's vector (`fromVector`) borrows its storage and leaves it alone.
   */
  destroy() {
    if (this._borrowed) {
      this._released = true; // the storage belongs to the table: only this view ends
    } else {
      this._handle.destroy();
    }
    this._vector = null;
  }

  /** @internal The wasm handle, or DESTROYED for a destroyed view of a table's storage. */
  _live() {
    if (this._released) fail('DESTROYED', 'this evaluator was destroyed');
    return this._handle;
  }

  /** The output as an Arrow IPC stream with one column `name` (one record batch per chunk). */
  toArrowIPC(name = 'value') {
    const vector = this.evaluated ? this._vector ?? this.evaluateSync() : this.evaluateSync();
    const writer = new wasm.IpcWriter();
    const data = new wasm.EvaluatorList();
    const validity = new wasm.EvaluatorList();
    try {
      for (const chunk of vector.data) data.push(chunk.buffer.handle());
      guard(() => writer.addColumn(name, 'plain', data, validity));
      return guard(() => writer.finish());
    } finally {
      data.free();
      validity.free();
      writer.free();
    }
  }

  toString() {
    return `GPUTableEvaluator<${this.type} x${this.size}, ${this.length} rows>`;
  }
}

/**
 * An evaluator over several batches: one evaluator per chunk, evaluated chunk by chunk, whose
 * output vector keeps the chunks.
 */
class ChunkedEvaluator extends GPUTableEvaluator {
  constructor(chunks) {
    super(null);
    this._chunks = chunks;
  }
  get type() {
    return this._chunks[0].type;
  }
  get size() {
    return this._chunks[0].size;
  }
  get length() {
    return this._chunks.reduce((rows, c) => rows + c.length, 0);
  }
  get isConstant() {
    return false;
  }
  get evaluated() {
    return this._chunks.every(c => c.evaluated);
  }
  async evaluate(device) {
    this._live();
    for (const chunk of this._chunks) await chunk.evaluate(device);
    return this._output();
  }
  evaluateSync(device) {
    this._live();
    for (const chunk of this._chunks) chunk.evaluateSync(device);
    return this._output();
  }
  _output() {
    this._vector ??= new GPUVector({type: this.type, size: this.size, data: this._chunks.map(c => c._vector.data[0]), evaluator: this});
    return this._vector;
  }
  readValueSync(startRow = 0, endRow = this.length) {
    this._live();
    if (!this.evaluated || !this._vector) this.evaluateSync();
    return this._output().readValueSync(startRow, endRow);
  }
  explain(device) {
    this._live();
    return `${this._chunks.length} batches, each evaluated as:\n${this._chunks[0].explain(device)}`;
  }
  destroy() {
    for (const chunk of this._chunks) chunk.destroy();
    this._vector = null;
    this._released = true;
  }
}

/** Per-lane [min, max] over several batches: each batch's extent, folded on the host. */
class ChunkedExtent extends ChunkedEvaluator {
  get length() {
    return this._chunks[0].length;
  }
  _output() {
    if (!this._combined) {
      const size = this._chunks[0].length;
      const folded = new TYPED_ARRAYS[this.type](size * 2).fill(NaN);
      for (const chunk of this._chunks) {
        const part = chunk.readValueSync();
        for (let lane = 0; lane < size; lane++) {
          const [lo, hi] = [part[2 * lane], part[2 * lane + 1]];
          if (Number.isNaN(lo)) continue;
          if (!(folded[2 * lane] <= lo)) folded[2 * lane] = lo;
          if (!(folded[2 * lane + 1] >= hi)) folded[2 * lane + 1] = hi;
        }
      }
      this._combined = GPUTableEvaluator.fromArray(folded, {type: this.type, size: 2});
      this._combined.evaluateSync();
    }
    return this._combined._vector;
  }
  destroy() {
    super.destroy();
    this._combined?.destroy();
  }
}

function chunkCount(arg) {
  if (arg instanceof GPUVector) return arg.data.length;
  if (arg instanceof ChunkedEvaluator) return arg._chunks.length;
  return 1;
}

function chunkOf(arg, k) {
  if (arg instanceof GPUVector && arg.data.length > 1) {
    return GPUTableEvaluator.fromVector(new GPUVector({name: arg.name, type: arg.type, size: arg.size, data: [arg.data[k]]}));
  }
  if (arg instanceof ChunkedEvaluator) return arg._chunks[k];
  return arg;
}

/** `fn` applied batch by batch when an argument spans several batches. */
function chunkwise(fn) {
  return (...args) => {
    const counts = args.map(chunkCount).filter(n => n > 1);
    if (counts.length === 0) return fn(...args);
    if (counts.some(n => n !== counts[0])) fail('INVALID_ARGUMENT', 'the arguments span different numbers of batches');
    const chunks = Array.from({length: counts[0]}, (_, k) => {
      const parts = args.map(a => chunkOf(a, k));
      const lengths = new Set(parts.filter((p, i) => chunkCount(args[i]) > 1).map(p => p.length));
      if (lengths.size > 1) fail('INVALID_ARGUMENT', `batch ${k} of the arguments has different row counts`);
      return fn(...parts);
    });
    return new ChunkedEvaluator(chunks);
  };
}

const liveBuffers = new Set();

/** Storage a table owns that is still alive (every device of this module instance). */
export function liveAllocations() {
  return liveBuffers.size;
}

/**
 * A stable handle to one column chunk's storage. The backing is replaced when it grows
 * (`generation` counts replacements); `destroy()` frees it. Storage lives in the wasm heap
 * and is uploaded to a GPU device once, on the first evaluation there.
 */
export class DynamicBuffer {
  /** @internal `handle`: a wasm source; `host`: an appendable typed array (capacity rows). */
  constructor({handle = null, host = null, type, size, length, tracked = true, device = null}) {
    this._handle = handle;
    this.device = device;
    this._host = host;
    this.type = type;
    this.size = size;
    this.length = length;
    this.generation = 0;
    this.destroyed = false;
    if (tracked) liveBuffers.add(this);
  }
  /** Rows the current backing holds without growing. */
  get capacity() {
    return this._host ? this._host.length / this.size : this.length;
  }
  get byteLength() {
    return this.capacity * this.size * TYPED_ARRAYS[this.type].BYTES_PER_ELEMENT;
  }
  /** @internal The wasm handle of the rows in use (made on demand for appendable storage). */
  handle() {
    if (this.destroyed) fail('DESTROYED', 'this buffer was destroyed');
    if (!this._handle && this._host) {
      const rows = this._host.subarray(0, this.length * this.size);
      this._handle = guard(() => wasm.Evaluator.fromBytes(bytesOf(rows), {type: this.type, size: this.size, constant: false}));
    }
    return this._handle;
  }
  /** @internal Appends packed rows, doubling the capacity when full. */
  append(values) {
    if (this.destroyed) fail('DESTROYED', 'this buffer was destroyed');
    if (!this._host) fail('INVALID_ARGUMENT', 'only appendable vectors grow');
    const Typed = TYPED_ARRAYS[this.type];
    const rows = Array.isArray(values) ? Typed.from(values) : ArrayBuffer.isView(values) ? values : fail('INVALID_ARGUMENT', 'append needs a typed array or numbers');
    if (rows.length % this.size !== 0) fail('INVALID_ARGUMENT', `${rows.length} values are not whole rows of size ${this.size}`);
    const needed = (this.length * this.size) + rows.length;
    if (needed > this._host.length) {
      let capacity = Math.max(this._host.length, this.size);
      while (capacity < needed) capacity *= 2;
      const grown = new Typed(capacity);
      grown.set(this._host.subarray(0, this.length * this.size));
      this._host = grown;
      this.generation++;
    }
    this._host.set(rows, this.length * this.size);
    this.length += rows.length / this.size;
    this._dropHandle();
  }
  /** @internal Forgets the rows in use; keeps the capacity. */
  reset() {
    if (this.destroyed) fail('DESTROYED', 'this buffer was destroyed');
    this.length = 0;
    this._dropHandle();
  }
  _dropHandle() {
    if (this._handle && this._host) this._handle.destroy();
    if (this._host) this._handle = null;
  }
  destroy() {
    if (this.destroyed) return;
    if (this._handle) this._handle.destroy();
    this._handle = null;
    this._host = null;
    this.destroyed = true;
    liveBuffers.delete(this);
    // A GPU device frees its copy now rather than at its next evaluation.
    if (this.device && !this.device.destroyed) this.device._release?.();
  }
}

const VERTEX_TYPES = {uint8: 'uint8', sint8: 'sint8', uint16: 'uint16', sint16: 'sint16', uint32: 'uint32', sint32: 'sint32', float32: 'float32'};

/** `float32x3` style format of rows of `size` values of `type`. */
export function formatOf(type, size) {
  return size === 1 ? VERTEX_TYPES[type] : `${VERTEX_TYPES[type]}x${size}`;
}

/** One chunk of a vector: a buffer (owned or borrowed) plus its row layout. */
export class GPUData {
  constructor({buffer, type, valueLength, ownsBuffer}) {
    this.buffer = buffer;
    this.type = type;
    this.valueLength = valueLength;
    this.byteOffset = 0;
    this.byteStride = valueLength * TYPED_ARRAYS[type].BYTES_PER_ELEMENT;
    this.rowByteLength = this.byteStride;
    this.ownsBuffer = ownsBuffer;
    this.destroyed = false;
  }
  get format() {
    return formatOf(this.type, this.valueLength);
  }
  get length() {
    return this.buffer.length;
  }
  /** Frees the buffer if this chunk owns it; a borrowed buffer is left alone. */
  destroy() {
    if (this.ownsBuffer && !this.destroyed) this.buffer.destroy();
    this.destroyed = true;
  }
}

/**
 * One logical column over one or more `GPUData` chunks (one per record batch). A vector
 * owns or borrows its chunks as they say; `destroy()` frees only what they own.
 */
export class GPUVector {
  constructor({name = '', type, size, data = [], validity = null, evaluator = null}) {
    this.name = name;
    this.type = type;
    this.size = size;
    this.valueLength = size;
    this.stride = size;
    this.byteStride = size * TYPED_ARRAYS[type].BYTES_PER_ELEMENT;
    this.data = data;
    /** Per-row validity (uint8: 1 valid, 0 null), chunked like `data`, or null. */
    this.validity = validity;
    this.destroyed = false;
    this._evaluator = evaluator;
  }
  get format() {
    return formatOf(this.type, this.size);
  }
  get length() {
    return this.data.reduce((rows, d) => rows + d.length, 0);
  }

  /** An empty vector that grows by `append` (capacity doubles as needed). */
  static appendable({name = '', type = 'float32', size = 1, capacity = 1024} = {}) {
    checkType(type);
    checkSize(size);
    const buffer = new DynamicBuffer({host: new TYPED_ARRAYS[type](Math.max(1, capacity) * size), type, size, length: 0});
    return new GPUVector({name, type, size, data: [new GPUData({buffer, type, valueLength: size, ownsBuffer: true})]});
  }

  /** Appends packed rows to the last chunk (appendable vectors only). */
  append(values) {
    this._check();
    this.data[this.data.length - 1].buffer.append(values);
    return this;
  }

  /** Clears the last chunk's rows and keeps its capacity for reuse. */
  resetLastBatch() {
    this._check();
    this.data[this.data.length - 1].buffer.reset();
  }

  /** Rows `startRow..endRow` of all chunks as one typed array. */
  async readValue(startRow, endRow) {
    return this.readValueSync(startRow, endRow);
  }

  readValueSync(startRow = 0, endRow = this.length) {
    this._check();
    const Typed = TYPED_ARRAYS[this.type];
    const parts = [];
    let first = 0;
    for (const chunk of this.data) {
      const [from, to] = [Math.max(startRow - first, 0), Math.min(endRow - first, chunk.length)];
      if (from < to) parts.push(guard(() => chunk.buffer.handle().readValue(from, to)));
      first += chunk.length;
    }
    if (parts.length === 1) return parts[0];
    const out = new Typed(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  /** Frees the chunks (and validity) this vector owns; later use is `DESTROYED`. */
  destroy() {
    if (this.destroyed) return;
    for (const chunk of this.data) chunk.destroy();
    this.validity?.destroy();
    this.destroyed = true;
  }

  _check() {
    if (this.destroyed) fail('DESTROYED', `vector '${this.name}' was destroyed or detached`);
  }
}

/** The output vector of an evaluated evaluator: one chunk borrowing the evaluator's storage. */
function outputVector(evaluator) {
  const buffer = new DynamicBuffer({handle: evaluator._handle, type: evaluator.type, size: evaluator.size, length: evaluator.length, tracked: false});
  const data = [new GPUData({buffer, type: evaluator.type, valueLength: evaluator.size, ownsBuffer: false})];
  return new GPUVector({type: evaluator.type, size: evaluator.size, data, evaluator});
}

function handleOf(arg) {
  if (arg instanceof GPUTableEvaluator) {
    if (arg._chunks) fail('INVALID_ARGUMENT', 'this argument spans several batches; here it must be one');
    return arg._live();
  }
  if (arg instanceof GPUVector) {
    arg._check();
    if (arg.data.length !== 1) fail('INVALID_ARGUMENT', `vector '${arg.name}' has ${arg.data.length} chunks; here it must have one (packBatches() first)`);
    return arg.data[0].buffer.handle();
  }
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

const unary = chunkwise((op, x) => wrap(() => wasm.unaryOp(op, handleOf(x))));

/** Elementwise sum, folded left to right. @example add(xyz, [10, 20, 30], 1) */
export const add = chunkwise((...args) => fold('add', args));
/** Elementwise difference, folded left to right. */
export const subtract = chunkwise((...args) => fold('subtract', args));
/** Elementwise product, folded left to right. */
export const multiply = chunkwise((...args) => fold('multiply', args));
/** Elementwise quotient, folded left to right; integer division by zero is 0. */
export const divide = chunkwise((...args) => fold('divide', args));
/** `base ** exponent`, float32. */
export const pow = chunkwise((base, exponent) => withList([base, exponent], list => wasm.foldBinary('pow', list)));
export const sqrt = x => unary('sqrt', x);
/** Absolute value; keeps the input type. */
export const abs = x => unary('abs', x);
export const sin = x => unary('sin', x);
export const cos = x => unary('cos', x);
export const tan = x => unary('tan', x);
export const exp = x => unary('exp', x);
export const log = x => unary('log', x);

/** Concatenates each row of the inputs: size = sum of sizes. @example interleave(xyz, id) */
export const interleave = chunkwise(interleaveOne);
function interleaveOne(...args) {
  if (args.length === 0) fail('INVALID_ARGUMENT', 'interleave needs at least one input');
  if (args.length === 1 && args[0] instanceof GPUTableEvaluator) return args[0];
  return withList(args, list => wasm.interleave(list));
}

/** Rows of `source` at `ids` (one integer per row); bad ids give zero rows. */
export function gather(ids, source) {
  if (chunkCount(source) > 1) fail('INVALID_ARGUMENT', 'gather needs a source in one batch (packBatches() first)');
  return chunkwise(ids => wrap(() => wasm.gather(handleOf(ids), handleOf(source))))(ids);
}

/** Per channel `[min, max]` over all rows (NaN ignored): length = x.size, size 2. */
export function extent(x) {
  if (chunkCount(x) > 1) {
    const parts = chunkwise(x => wrap(() => wasm.extent(handleOf(x))))(x)._chunks;
    return new ChunkedExtent(parts);
  }
  return wrap(() => wasm.extent(handleOf(x)));
}

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
export const fround = chunkwise(x => wrap(() => wasm.fround(handleOf(x))));

/** Reorders or duplicates lanes. @example swizzle(xyz, [2, 1, 0]) */
export const swizzle = chunkwise(swizzleOne);
function swizzleOne(x, channels) {
  if (!isNumberArray(channels)) fail('INVALID_ARGUMENT', 'swizzle channels must be an array of numbers');
  return wrap(() => wasm.swizzle(handleOf(x), Float64Array.from(channels)));
}

/** Lane-wise `cond != 0 ? whenTrue : whenFalse`. */
export const select = chunkwise((cond, whenTrue, whenFalse) =>
  wrap(() => wasm.select(handleOf(cond), handleOf(whenTrue), handleOf(whenFalse))));

/** Row dot product, float32 size 1. */
export const dot = chunkwise((a, b) => wrap(() => wasm.dot(handleOf(a), handleOf(b))));
/** Row Euclidean length, float32 size 1. */
export const length = chunkwise(x => wrap(() => wasm.length(handleOf(x))));
/** 1 where every lane of the rows is equal, else 0 (uint32). */
export const equalAll = chunkwise((a, b) => wrap(() => wasm.equalAll(handleOf(a), handleOf(b))));

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
  /** Table storage alive on this device (host memory; tables loaded without a device too). */
  get liveAllocations() {
    return [...liveBuffers].filter(b => b.device === this || b.device === null).length;
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

/** What the WebGPU and WebGL2 devices share: a wasm device handle and its resident columns. */
class GPUBackendDevice {
  constructor(handle, type, limits) {
    this._handle = handle;
    this.type = type;
    this.adapterName = handle.adapterName;
    this.limits = Object.freeze({maxRows: 0xffffffff, ...limits});
    this.destroyed = false;
  }
  /** Frees the device's memory and pipelines; evaluating on it afterwards is `DESTROYED`. */
  destroy() {
    if (!this.destroyed) this._handle.destroy();
    this.destroyed = true;
  }
  /** Columns resident on the device: table storage uploaded at load, and evaluation inputs. */
  get liveAllocations() {
    return this._handle.residentColumns();
  }
  /** @internal */
  _upload(handle) {
    this._handle.upload(handle);
  }
  /** @internal Frees the device copies of destroyed storage. */
  _release() {
    this._handle.residentColumns();
  }
}

class WebGPUDevice extends GPUBackendDevice {
  constructor(handle) {
    super(handle, 'webgpu', {
      maxBufferSize: handle.maxBufferSize,
      maxStorageBufferBindingSize: handle.maxStorageBufferBindingSize,
      maxComputeWorkgroupsPerDimension: handle.maxComputeWorkgroupsPerDimension
    });
  }
  /** The browser's `GPUDevice` this device runs on (a renderer binds table buffers on it). */
  get gpuDevice() {
    return this._handle.gpuDevice;
  }
  /** @internal The resident GPUBuffer of a column, or undefined. */
  _gpuBufferOf(handle) {
    return this._handle.gpuBufferOf(handle);
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

class WebGLDevice extends GPUBackendDevice {
  constructor(handle) {
    super(handle, 'webgl', {
      maxTextureDimension2D: handle.maxTextureDimension2D,
      maxColorAttachments: handle.maxColorAttachments,
      maxSampledTexturesPerShaderStage: handle.maxSampledTexturesPerShaderStage,
      tileRows: handle.tileRows
    });
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

export {GPUTable, GPURecordBatch, GPUSchema, GPUField} from './table.js';
