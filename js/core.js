// The typed, variadic JavaScript API over the wasm exports. Shared by the web and Node
// entry points, which differ only in how they load the wasm module.
import * as wasm from './wasm/gputable.js';
import {GpuTableError, fail, guard, guardAsync} from './errors.js';
import {TYPED_ARRAYS, checkSize, checkType, isNumberArray, liveView, options, typeOfArray} from './types.js';
import {defaultDevice, deviceOf, resolveDevice, withHandles, withHandlesAsync} from './devices.js';
import {DynamicBuffer, GPUData, GPUVector} from './vectors.js';
import {writeIpc} from './ipc.js';

export {GpuTableError, DynamicBuffer, GPUData, GPUVector};
export {TYPES, formatOf} from './types.js';
export {Device, backendRegistry, cpuBackend, createDevice, liveAllocations, webglBackend, webgpuBackend} from './devices.js';

function source(typed, type, size, constant) {
  return new GPUTableEvaluator(guard(() => wasm.Evaluator.fromTyped(typed, {type, size, constant})));
}

/** A typed array of `type` holding `values`, or OUT_OF_MEMORY where it cannot be made. */
function typed(type, values) {
  try {
    return new TYPED_ARRAYS[type](values);
  } catch (error) {
    return fail('OUT_OF_MEMORY', `could not allocate ${values.length} ${type} values: ${error.message}`);
  }
}

function checkRow(row) {
  if (row !== undefined && (typeof row !== 'number' || Number.isNaN(row))) {
    fail('INVALID_ARGUMENT', `row bounds must be numbers, got ${typeof row === 'number' ? row : typeof row}`);
  }
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
    this._device = null;
    // Per device id: the output vector, and an evaluation under way.
    this._vectors = new Map();
    this._pending = new Map();
  }

  /**
   * Wraps packed rows of `size` values. `number[]` is float32 unless `type` is given;
   * `Float64Array` becomes uint32 word pairs (size doubled) for `fround()`.
   */
  static fromArray(array, settings) {
    const {type, size = 1} = options(settings, 'fromArray');
    checkSize(size);
    if (type !== undefined) checkType(type);
    if (Array.isArray(array)) {
      if (!isNumberArray(array)) fail('INVALID_ARGUMENT', 'fromArray needs numbers');
      const resolved = type ?? 'float32';
      return source(typed(resolved, array), resolved, size, false);
    }
    liveView(array, 'fromArray');
    if (array instanceof Float64Array && (type === undefined || type === 'uint32')) {
      const words = new Uint32Array(array.buffer, array.byteOffset, array.length * 2);
      return source(words, 'uint32', size * 2, false);
    }
    if (array instanceof BigInt64Array || array instanceof BigUint64Array) {
      fail('TYPE_MISMATCH', '64-bit integer arrays are not supported');
    }
    const natural = array instanceof Float64Array ? 'float64' : typeOfArray(array);
    const resolved = type ?? natural;
    const values = resolved === natural && !(array instanceof Uint8ClampedArray) ? array : typed(resolved, array);
    return source(values, resolved, size, false);
  }

  /** One constant row (a number or a row of numbers) that broadcasts across rows. */
  static fromConstant(value, type = 'float32') {
    checkType(type);
    const row = typeof value === 'number' ? [value] : value;
    if (!isNumberArray(row) || row.length === 0) {
      fail('INVALID_ARGUMENT', 'fromConstant needs a number or a non-empty array of numbers');
    }
    return source(typed(type, row), type, row.length, true);
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
  /** The device holding the output: where it was last evaluated, or null before. */
  get device() {
    if (this._released || this._handle.destroyed) return null;
    return this._device ?? deviceOf(this._handle.deviceId);
  }

  /**
   * Runs the computation on `device` (the CPU when omitted) and leaves the output there;
   * an output computed on another device is copied there once. A second call does no work.
   */
  async evaluate(device) {
    const target = resolveDevice(device);
    const handle = this._live();
    let pending = this._pending.get(target.id);
    if (!pending) {
      pending = this._evaluateOn(target, handle).finally(() => this._pending.delete(target.id));
      this._pending.set(target.id, pending);
    }
    await pending;
    return this._outputOn(target);
  }

  async _evaluateOn(target, handle) {
    if (this._vectors.has(target.id)) return;
    await withHandlesAsync([handle], list => target._handle.evaluate(list));
    if (!onDevice(handle, target)) await guardAsync(() => target._handle.putHere(handle, false));
  }

  _outputOn(target) {
    this._live();
    this._device = target;
    let vector = this._vectors.get(target.id);
    if (!vector) {
      vector = outputVector(this, target);
      this._vectors.set(target.id, vector);
    }
    return vector;
  }

  /** Synchronous `evaluate()`, for the CPU device. */
  evaluateSync(device) {
    const target = resolveDevice(device);
    const handle = this._live();
    if (target.type !== 'cpu') {
      fail('INVALID_ARGUMENT', `evaluateSync() is for the CPU device; use await evaluate(device) on ${target.type}`);
    }
    if (!this._vectors.has(target.id)) {
      guard(() => withHandles([handle], list => target._handle.evaluateSync(list)));
      if (!onDevice(handle, target)) {
        fail('INVALID_ARGUMENT', 'this output lives on a GPU device: copy it with await evaluate(cpuDevice)');
      }
    }
    return this._outputOn(target);
  }

  /**
   * Rows `startRow..endRow` (clamped) as a typed array of this evaluator's type, copied from
   * the device holding them (only those rows). An evaluator never evaluated is evaluated on
   * the CPU first; one being evaluated is read once that is done.
   */
  async readValue(startRow, endRow) {
    checkRow(startRow);
    checkRow(endRow);
    await Promise.allSettled([...this._pending.values()]);
    const handle = this._live();
    if (!handle.evaluated) this._device = defaultDevice();
    return guardAsync(() => handle.readValue(startRow, endRow));
  }

  /** Synchronous `readValue()`, for outputs in host memory (the CPU devices). */
  readValueSync(startRow, endRow) {
    checkRow(startRow);
    checkRow(endRow);
    const handle = this._live();
    if (!handle.evaluated) this._device = defaultDevice();
    return guard(() => handle.readValueSync(startRow, endRow));
  }

  /** The passes this graph runs: kernels, what was fused, passes per backend. */
  explain(device) {
    const handle = this._live();
    if (device === undefined || device === null) return guard(() => handle.explain());
    const target = resolveDevice(device);
    return guard(() => target._handle.explain(handle));
  }

  /**
   * Releases the output (on every device, at once); using this evaluator afterwards is
   * `DESTROYED`. An evaluator over a table's vector (`fromVector`) borrows its storage and
   * leaves it alone.
   */
  destroy() {
    if (this._borrowed) {
      this._released = true; // the storage belongs to the table: only this view ends
    } else {
      this._handle.destroy();
    }
    this._vectors.clear();
  }

  /** @internal The wasm handle, or DESTROYED for a destroyed view of a table's storage. */
  _live() {
    if (this._released) fail('DESTROYED', 'this evaluator was destroyed');
    return this._handle;
  }

  /**
   * The output as an Arrow IPC stream with one column `name` (one record batch per chunk):
   * the bytes, or a promise of them when the output lives on a GPU device. An evaluator
   * never evaluated is evaluated on the CPU first.
   */
  toArrowIPC(name = 'value') {
    if (typeof name !== 'string') fail('INVALID_ARGUMENT', `the column name must be a string, got ${typeof name}`);
    const chunks = this._chunks ?? [this];
    const write = () => writeIpc([[name, 'plain', chunks.map(c => c._live()), []]]);
    const unevaluated = chunks.filter(c => !c.evaluated);
    try {
      for (const chunk of unevaluated) chunk.evaluateSync();
    } catch (error) {
      // Inputs on a GPU device: evaluating has to wait for them.
      if (error.code !== 'INVALID_ARGUMENT') throw error;
      return Promise.all(unevaluated.map(c => c.evaluate())).then(write);
    }
    return write();
  }

  toString() {
    return `GPUTableEvaluator<${this.type} x${this.size}, ${this.length} rows>`;
  }
}

/** Whether `handle`'s output is on `device` (CPU devices read host memory in place). */
function onDevice(handle, device) {
  return handle.isOn(device.id) || (device.type === 'cpu' && handle.inHostMemory);
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
  get device() {
    return this._released ? null : this._device ?? this._chunks[0].device;
  }
  async evaluate(device) {
    this._live();
    const target = resolveDevice(device);
    for (const chunk of this._chunks) await chunk.evaluate(target);
    return this._output(target);
  }
  evaluateSync(device) {
    this._live();
    const target = resolveDevice(device);
    for (const chunk of this._chunks) chunk.evaluateSync(target);
    return this._output(target);
  }
  _output(target) {
    this._device = target;
    let vector = this._vectors.get(target.id);
    if (!vector) {
      const data = this._chunks.map(c => c._vectors.get(target.id).data[0]);
      vector = new GPUVector({type: this.type, size: this.size, data, evaluator: this, device: target});
      this._vectors.set(target.id, vector);
    }
    return vector;
  }
  async readValue(startRow, endRow) {
    checkRow(startRow);
    checkRow(endRow);
    this._live();
    const vector = this._readable() ?? await this.evaluate(this._device ?? undefined);
    return vector.readValue(startRow ?? 0, endRow ?? this.length);
  }
  readValueSync(startRow, endRow) {
    checkRow(startRow);
    checkRow(endRow);
    this._live();
    const vector = this._readable() ?? this.evaluateSync();
    return vector.readValueSync(startRow ?? 0, endRow ?? this.length);
  }
  /** The vector of the device the chunks were last evaluated on, if any. */
  _readable() {
    return this._device ? this._vectors.get(this._device.id) : undefined;
  }
  explain(device) {
    this._live();
    return `${this._chunks.length} batches, each evaluated as:\n${this._chunks[0].explain(device)}`;
  }
  destroy() {
    for (const chunk of this._chunks) chunk.destroy();
    this._vectors.clear();
    this._released = true;
  }
  _live() {
    if (this._released) fail('DESTROYED', 'this evaluator was destroyed');
    return null;
  }
}

/**
 * Per-lane [min, max] over several batches: each batch with rows reduces on the device, and
 * the partial extents are combined by extent's rules (every type, NaN ignored).
 */
class ChunkedExtent extends ChunkedEvaluator {
  get length() {
    return this._chunks[0].length;
  }
  get size() {
    return 2;
  }
  async evaluate(device) {
    this._live();
    const target = resolveDevice(device);
    for (const chunk of this._chunks) await chunk.evaluate(target);
    this._combined ??= new GPUTableEvaluator(await withHandlesAsync(this._chunks.map(c => c._live()), list => wasm.combineExtents(list)));
    const vector = await this._combined.evaluate(target);
    this._device = target;
    return vector;
  }
  evaluateSync(device) {
    this._live();
    const target = resolveDevice(device);
    for (const chunk of this._chunks) chunk.evaluateSync(target);
    this._combined ??= new GPUTableEvaluator(guard(() => withHandles(this._chunks.map(c => c._live()), list => wasm.combineExtentsSync(list))));
    this._device = target;
    return this._combined.evaluateSync(target);
  }
  async readValue(startRow, endRow) {
    if (!this._combined) await this.evaluate(this._device ?? undefined);
    return this._combined.readValue(startRow, endRow);
  }
  readValueSync(startRow, endRow) {
    if (!this._combined) this.evaluateSync();
    return this._combined.readValueSync(startRow, endRow);
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

/** The output vector of an evaluated evaluator on `device`: one chunk borrowing its storage. */
function outputVector(evaluator, device) {
  const buffer = new DynamicBuffer({handle: evaluator._handle, type: evaluator.type, size: evaluator.size, length: evaluator.length, tracked: false, device});
  const data = [new GPUData({buffer, type: evaluator.type, valueLength: evaluator.size, ownsBuffer: false})];
  return new GPUVector({type: evaluator.type, size: evaluator.size, data, evaluator, device});
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
  return wrap(() => withHandles(handles, fn));
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
    const inputs = Array.from({length: chunkCount(x)}, (_, k) => chunkOf(x, k));
    // Batches without rows add nothing; with none left, the first one's EMPTY_INPUT stands.
    const withRows = inputs.filter(input => input.length > 0);
    const parts = (withRows.length ? withRows : inputs.slice(0, 1)).map(input => wrap(() => wasm.extent(handleOf(input))));
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
 * in one plan on `device`, and releases every intermediate. Returns `roots`.
 */
export async function cleanEvaluate(device, roots) {
  const target = resolveDevice(device);
  const evaluators = [...collectEvaluators(roots, new Set(), new Set())];
  const plain = evaluators.flatMap(e => e._chunks ?? [e]);
  await withHandlesAsync(plain.map(e => e._live()), list => target._handle.cleanEvaluate(list));
  for (const evaluator of evaluators) await evaluator.evaluate(target);
  return roots;
}

export {GPUTable, GPURecordBatch, GPUSchema, GPUField} from './table.js';
