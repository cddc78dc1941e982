// The typed, variadic JavaScript API over the wasm exports. Shared by the web and Node
// entry points, which differ only in how they load the wasm module.
import {sparseOps} from './sparse-ops.js';
import {wasm} from './bindings.js';
import {GpuTableError, fail, guard, guardAsync} from './errors.js';
import {TYPED_ARRAYS, checkSize, checkType, isNumberArray, liveView, options, splitEveryOf, typeOfArray} from './types.js';
import {deviceOf, resolveDevice, withHandles, withHandlesAsync} from './devices.js';
import {DynamicBuffer, GPUData, GPUVector, viewOf} from './vectors.js';
import {writeIpc} from './ipc.js';

export {GpuTableError, DynamicBuffer, GPUData, GPUVector};
export {TYPES, formatOf} from './types.js';
export {Device, backendRegistry, cpuBackend, createDevice, liveAllocations, webglBackend, webgpuBackend} from './devices.js';

function source(typed, type, size, constant, chunks) {
  return new GPUTableEvaluator(guard(() => wasm.Evaluator.fromTyped(typed, {type, size, constant, chunks})));
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
    // Per device id: the output vector, and an evaluation under way.
    this._vectors = new Map();
    this._pending = new Map();
  }

  /**
   * Wraps packed rows of `size` values. `number[]` is float32 unless `type` is given;
   * `Float64Array` becomes uint32 word pairs (size doubled) for `fround()`. `chunks` makes a
   * chunked column: rows per chunk (the last shorter), or each chunk's row count.
   */
  static fromArray(array, settings) {
    const {type, size = 1, chunks} = options(settings, 'fromArray');
    checkSize(size);
    if (type !== undefined) checkType(type);
    if (Array.isArray(array)) {
      if (!isNumberArray(array)) fail('INVALID_ARGUMENT', 'fromArray needs numbers');
      const resolved = type ?? 'float32';
      return source(typed(resolved, array), resolved, size, false, chunks);
    }
    liveView(array, 'fromArray');
    if (array instanceof Float64Array && (type === undefined || type === 'uint32')) {
      const words = new Uint32Array(array.buffer, array.byteOffset, array.length * 2);
      return source(words, 'uint32', size * 2, false, chunks);
    }
    if (array instanceof BigInt64Array || array instanceof BigUint64Array) {
      fail('TYPE_MISMATCH', '64-bit integer arrays are not supported');
    }
    const natural = array instanceof Float64Array ? 'float64' : typeOfArray(array);
    const resolved = type ?? natural;
    const values = resolved === natural && !(array instanceof Uint8ClampedArray) ? array : typed(resolved, array);
    return source(values, resolved, size, false, chunks);
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
    // One chunk is the chunk's own storage; several are read through a view of them.
    const evaluator = new GPUTableEvaluator(guard(() => vector._m.evaluator()));
    evaluator._borrowed = vector._m.chunks.length === 1;
    return evaluator;
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
  /** Row counts of the chunks, in order (`[length]` for one chunk). */
  get chunks() {
    return Array.from(this._live().chunks);
  }
  /** The device holding the materialized output (see `evaluated`), or null. */
  get device() {
    if (this._released || this._handle.destroyed) return null;
    return deviceOf(this._handle.deviceId);
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
    // The engine evaluates the graph and puts the output on `target` (no work if it is).
    await withHandlesAsync([handle], list => target._handle.evaluate(list));
  }

  _outputOn(target) {
    this._live();
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
    guard(() => withHandles([handle], list => target._handle.evaluateSync(list)));
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
    return guardAsync(() => handle.readValue(startRow, endRow));
  }

  /** Synchronous `readValue()`, for outputs in host memory (the CPU devices). */
  readValueSync(startRow, endRow) {
    checkRow(startRow);
    checkRow(endRow);
    const handle = this._live();
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
    const write = () => writeIpc([[name, 'plain', [this._live()], []]]);
    if (!this.evaluated) {
      try {
        this.evaluateSync();
      } catch (error) {
        // Inputs on a GPU device: evaluating has to wait for them.
        if (error.code !== 'INVALID_ARGUMENT') throw error;
        return this.evaluate().then(write);
      }
    }
    return write();
  }

  toString() {
    return `GPUTableEvaluator<${this.type} x${this.size}, ${this.length} rows>`;
  }
}

/** The output vector of an evaluated evaluator on `device`: a GPUData borrowing each chunk. */
function outputVector(evaluator, device) {
  const vector = viewOf(GPUVector, wasm.VectorModel.ofOutput(evaluator._handle, device.id));
  vector._evaluator = evaluator;
  return vector;
}

// A sparse operand follows the sparse rules of its op, or else is its dense matrix.
const isSparse = arg => sparseOps.is(arg);

function handleOf(arg) {
  if (arg instanceof GPUTableEvaluator) return arg._live();
  if (isSparse(arg)) return arg.toDense()._live();
  if (arg instanceof GPUVector) return GPUTableEvaluator.fromVector(arg)._live();
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
  if (args.some(isSparse)) return sparseOps.fold(op, args);
  return withList(args, list => wasm.foldBinary(op, list));
}

const unary = (op, x) => (isSparse(x) ? sparseOps.unary(op, x) : wrap(() => wasm.unaryOp(op, handleOf(x))));

/** Elementwise sum, folded left to right. @example add(xyz, [10, 20, 30], 1) */
export const add = (...args) => fold('add', args);
/** Elementwise difference, folded left to right. */
export const subtract = (...args) => fold('subtract', args);
/** Elementwise product, folded left to right. */
export const multiply = (...args) => fold('multiply', args);
/** Elementwise quotient, folded left to right; integer division by zero is 0. */
export const divide = (...args) => fold('divide', args);
/** `base ** exponent`, float32. */
export const pow = (base, exponent) => {
  // Arithmetic: sparse operands need one shape (concat and interleave join any).
  if (isSparse(base) && isSparse(exponent)) sparseOps.oneShape([base, exponent]);
  return withList([base, exponent], list => wasm.foldBinary('pow', list));
};
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
export function gather(ids, source) {
  return wrap(() => wasm.gather(handleOf(ids), handleOf(source)));
}

/**
 * A reduction over every row, skipping a vector's null slots: a partial per chunk, then
 * combines of at most `splitEvery` partials, then the final row.
 */
function reduction(kind, x, settings) {
  if (isSparse(x) && ['sum', 'min', 'max'].includes(kind)) return sparseOps.reduce(kind, x, settings);
  const splitEvery = splitEveryOf(options(settings, kind, ['splitEvery']), kind);
  // Null slots are known where `x` is a vector with validity; a graph over it (add(vector,
  // 1)) carries no validity of its own.
  const input = handleOf(x);
  const validity = x instanceof GPUVector && x.validity ? [handleOf(x.validity)] : [];
  return wrap(() => withHandles(validity, list => wasm.reduce(kind, input, list, splitEvery)));
}

/** Per channel `[min, max]` over all rows (NaN ignored): length = x.size, size 2. */
export const extent = (x, settings) => reduction('extent', x, settings);
/** Per lane sum over all rows: float32, sint32 or uint32 (integers wrap); one constant row. */
export const sum = (x, settings) => reduction('sum', x, settings);
/** Per lane least value (NaN ignored), in the input's type; one constant row. */
export const min = (x, settings) => reduction('min', x, settings);
/** Per lane greatest value (NaN ignored), in the input's type; one constant row. */
export const max = (x, settings) => reduction('max', x, settings);
/** Per lane mean, float32; one constant row. */
export const mean = (x, settings) => reduction('mean', x, settings);
/** Per lane row of the first least value (NaN ignored; -1 if none), sint32; one constant row. */
export const argmin = (x, settings) => reduction('argmin', x, settings);
/** Per lane row of the first greatest value (NaN ignored; -1 if none), sint32; one constant row. */
export const argmax = (x, settings) => reduction('argmax', x, settings);

/**
 * Every lane converted to `type`: float to integer truncates toward zero (NaN and values out
 * of range give 0), integers wrap. @example cast(x, 'uint8')
 */
export function cast(x, type) {
  checkType(type);
  return wrap(() => wasm.cast(handleOf(x), type));
}

/** Rows of each input in order, chunks concatenated; one type and row size. */
export function concat(...inputs) {
  if (inputs.length === 0) fail('INVALID_ARGUMENT', 'concat needs at least one input');
  return withList(inputs, list => wasm.concat(list));
}

/** Rows `[start, end)` of `x` (clamped); reads only the chunks it touches. */
export function slice(x, start = 0, end = Infinity) {
  for (const [name, v] of [['start', start], ['end', end]]) {
    if (typeof v !== 'number') fail('INVALID_ARGUMENT', `slice ${name} must be a number`);
  }
  return wrap(() => wasm.slice(handleOf(x), start, end));
}

/** The same rows with new chunk boundaries: rows per chunk, or each chunk's row count. */
export function rechunk(x, chunks) {
  return wrap(() => wasm.rechunk(handleOf(x), chunks));
}

/** Row offset of each chunk of `counts`, and the end. */
function offsetsOf(counts) {
  const offsets = [0];
  for (const rows of counts) offsets.push(offsets[offsets.length - 1] + rows);
  return offsets;
}

/** An evaluator argument (or a GPUVector, as one), checked alive. */
function evaluatorOf(arg, what) {
  if (arg instanceof GPUVector) return GPUTableEvaluator.fromVector(arg);
  if (arg instanceof GPUTableEvaluator) {
    arg._live();
    return arg;
  }
  return fail('INVALID_ARGUMENT', `${what} must be an evaluator or a GPUVector, got ${describe(arg)}`);
}

/** `fn`'s result for one block, checked to be an evaluator of `rows` rows (when given). */
function blockResult(result, k, rows) {
  if (!(result instanceof GPUTableEvaluator)) fail('INVALID_ARGUMENT', `the block function returned ${describe(result)} for block ${k}, not an evaluator`);
  if (rows !== undefined && result.length !== rows) {
    fail('INVALID_ARGUMENT', `block ${k} has ${result.length} rows; its chunk has ${rows}`);
  }
  return result;
}

/**
 * Output chunk k is `fn(...blocksK, {blockId: k, rowOffset})`: block k of every input (the
 * inputs need the same number of chunks). The blocks are views, so `fn` builds one graph per
 * chunk that reads only that chunk.
 * @example mapBlocks((x, {rowOffset}) => add(x, rowOffset), column)
 */
export function mapBlocks(fn, ...inputs) {
  if (typeof fn !== 'function') fail('INVALID_ARGUMENT', 'mapBlocks needs a function');
  if (inputs.length === 0) fail('INVALID_ARGUMENT', 'mapBlocks needs at least one input');
  const evaluators = inputs.map(x => evaluatorOf(x, 'a mapBlocks input'));
  const counts = evaluators.map(e => e.chunks);
  if (counts.some(c => c.length !== counts[0].length)) {
    fail('INVALID_ARGUMENT', `mapBlocks inputs need the same number of chunks, got ${counts.map(c => c.length).join(' and ')}`);
  }
  const offsets = counts.map(offsetsOf);
  const blocks = counts[0].map((_, k) => {
    const block = evaluators.map((e, i) => slice(e, offsets[i][k], offsets[i][k + 1]));
    return blockResult(fn(...block, {blockId: k, rowOffset: offsets[0][k]}), k);
  });
  return concat(...blocks);
}

/**
 * Output chunk k is `fn(k, ...lists)`, where list i holds the chunks `keys(k)[i]` of input i
 * (views), and must have `chunks[k]` rows.
 * @example blockwise((k, [a, b]) => add(a, b), [x], {chunks: [2, 2], keys: k => [[k, k + 2]]})
 */
export function blockwise(fn, inputs, settings) {
  if (typeof fn !== 'function') fail('INVALID_ARGUMENT', 'blockwise needs a function');
  if (!Array.isArray(inputs)) fail('INVALID_ARGUMENT', 'blockwise inputs must be an array');
  const {chunks, keys} = options(settings, 'blockwise');
  if (!Array.isArray(chunks) || chunks.length === 0 || !chunks.every(n => Number.isInteger(n) && n >= 0)) {
    fail('INVALID_ARGUMENT', 'blockwise chunks must be a non-empty array of row counts');
  }
  if (typeof keys !== 'function') fail('INVALID_ARGUMENT', 'blockwise keys must be a function of the output chunk');
  const evaluators = inputs.map(x => evaluatorOf(x, 'a blockwise input'));
  const offsets = evaluators.map(e => offsetsOf(e.chunks));
  const blocks = chunks.map((rows, k) => {
    const wanted = keys(k);
    if (!Array.isArray(wanted) || wanted.length !== evaluators.length) {
      fail('INVALID_ARGUMENT', `keys(${k}) must give one list of chunk indices per input`);
    }
    const lists = wanted.map((indices, i) => {
      const count = evaluators[i].chunks.length;
      if (!Array.isArray(indices)) fail('INVALID_ARGUMENT', `keys(${k})[${i}] must be an array of chunk indices`);
      return indices.map(j => {
        if (!Number.isInteger(j) || j < 0 || j >= count) fail('INVALID_ARGUMENT', `keys(${k})[${i}] names chunk ${j}; input ${i} has ${count}`);
        return slice(evaluators[i], offsets[i][j], offsets[i][j + 1]);
      });
    });
    return blockResult(fn(k, ...lists), k, rows);
  });
  return rechunk(concat(...blocks), chunks);
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
 * in one plan on `device`, and releases every intermediate. Returns `roots`.
 */
export async function cleanEvaluate(device, roots) {
  const target = resolveDevice(device);
  const evaluators = [...collectEvaluators(roots, new Set(), new Set())];
  await withHandlesAsync(evaluators.map(e => e._live()), list => target._handle.cleanEvaluate(list));
  return roots;
}

export {GPUTable, GPURecordBatch, GPUSchema, GPUField} from './table.js';
export {SparseMatrix, SparseVector, kron} from './sparse.js';
