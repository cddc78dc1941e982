// The evaluator: a lazy computation over one node of the wasm engine's graph, and how the
// operations turn their arguments into nodes.
import {wasm} from './bindings.js';
import {fail, guard, guardAsync, nameOf} from './errors.js';
import {TYPED_ARRAYS, checkType, isNumberArray, liveView, options, typeOfArray} from './types.js';
import {deviceOf, resolveDevice, withHandles, withHandlesAsync} from './devices.js';
import {GPUVector, viewOf} from './vectors.js';
import {writeIpc} from './ipc.js';

// The method a sparse operand gives its dense form by (sparse.js implements it).
export const AS_DENSE = Symbol('gputable.asDense');

function source(typed, type, size, constant, chunks) {
  return new GPUTableEvaluator(guard(() => wasm.Evaluator.fromTyped(typed, {type, size, constant, chunks})));
}

// A typed array of `type` holding `values`, or OUT_OF_MEMORY where it cannot be made.
export function typed(type, values) {
  try {
    return new TYPED_ARRAYS[type](values);
  } catch (error) {
    return fail('OUT_OF_MEMORY', `could not allocate ${values.length} ${type} values: ${error.message}`);
  }
}

// While a verb runs a user's function of the columns: the evaluators it makes.
let madeByCallback = null;

// `make()` and the evaluators made while it ran (a verb's own: no one else holds them).
export function withMade(make) {
  const outer = madeByCallback;
  madeByCallback = [];
  try {
    return [make(), madeByCallback];
  } finally {
    madeByCallback = outer;
  }
}

export class GPUTableEvaluator {
  // Use the static constructors or the operations.
  constructor(handle) {
    madeByCallback?.push(this);
    this._handle = handle;
    // Per device id: the output vector, and an evaluation under way.
    this._vectors = new Map();
    this._pending = new Map();
    // The values of a dictionary column's codes (api.md "Tables"), kept by the ops that
    // keep values.
    this.dictionary = null;
  }

  static fromArray(array, settings) {
    const {type, size = 1, chunks} = options(settings, 'fromArray', ['type', 'size', 'chunks']);
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

  static fromConstant(value, type = 'float32') {
    checkType(type);
    const row = typeof value === 'number' ? [value] : value;
    if (!isNumberArray(row) || row.length === 0) {
      fail('INVALID_ARGUMENT', 'fromConstant needs a number or a non-empty array of numbers');
    }
    return source(typed(type, row), type, row.length, true);
  }

  static fromVector(vector) {
    if (!(vector instanceof GPUVector)) fail('INVALID_ARGUMENT', 'fromVector needs a GPUVector');
    vector._check();
    let evaluator;
    if (vector._evaluator) {
      // A view of an evaluator's output (api.md: borrowed): destroying it ends the view.
      evaluator = new GPUTableEvaluator(vector._evaluator._live());
      evaluator._borrowed = true;
    } else {
      // One chunk is the chunk's own storage; several are read through a view of them.
      evaluator = new GPUTableEvaluator(guard(() => vector._m.evaluator()));
      evaluator._borrowed = vector._m.chunks.length === 1;
    }
    evaluator.dictionary = vector.dictionary;
    return evaluator;
  }

  get type() {
    return this._handle.type;
  }
  get size() {
    return this._handle.size;
  }
  get length() {
    return this._handle.length ?? null;
  }
  get isConstant() {
    return this._handle.isConstant;
  }
  get evaluated() {
    return this._handle.evaluated;
  }
  get chunks() {
    const chunks = this._live().chunks;
    return chunks === undefined ? null : Array.from(chunks);
  }
  get device() {
    if (this._released || this._handle.destroyed) return null;
    return deviceOf(this._handle.deviceId);
  }

  async evaluate(device) {
    const target = resolveDevice(device);
    this._live();
    let pending = this._pending.get(target.id);
    if (!pending) {
      pending = evaluateTogether(target, [this]).finally(() => this._pending.delete(target.id));
      this._pending.set(target.id, pending);
    }
    await pending;
    return this._outputOn(target);
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

  evaluateSync(device) {
    const target = resolveDevice(device);
    const handle = this._live();
    guard(() => withHandles([handle], list => target._handle.evaluateSync(list)));
    return this._outputOn(target);
  }

  async readValue(startRow, endRow) {
    await Promise.allSettled([...this._pending.values()]);
    const handle = this._live();
    return guardAsync(() => handle.readValue(startRow, endRow));
  }

  readValueSync(startRow, endRow) {
    const handle = this._live();
    return guard(() => handle.readValueSync(startRow, endRow));
  }

  explain(device) {
    const handle = this._live();
    if (device === undefined || device === null) return guard(() => handle.explain());
    const target = resolveDevice(device);
    return guard(() => target._handle.explain(handle));
  }

  destroy() {
    if (this._borrowed) {
      this._released = true; // the storage belongs to the table: only this view ends
    } else {
      this._handle.destroy();
      // Views of the output hold nothing after it: the null flags and count go now.
      for (const vector of this._vectors.values()) vector._m.release();
    }
    this._vectors.clear();
  }

  // Ends an evaluator a verb made for its own use: its handle is freed now, not when
  // collected.
  _discard() {
    if (this._discarded) return;
    this._discarded = true;
    this.destroy();
    if (!this._borrowed) this._handle.free();
  }

  // The wasm handle, or DESTROYED for a destroyed view of a table's storage.
  _live() {
    if (this._released) fail('DESTROYED', 'this evaluator was destroyed');
    return this._handle;
  }

  toArrowIPC(name = 'value') {
    nameOf(name, 'the column name');
    const kind = this.dictionary ? 'dictionary' : 'plain';
    const write = () => writeIpc([[name, kind, [this._live()], [], this.dictionary]]);
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

// The output vector of an evaluated evaluator on `device`: a GPUData borrowing each chunk.
function outputVector(evaluator, device) {
  const vector = viewOf(GPUVector, wasm.VectorModel.ofOutput(evaluator._handle, device.id));
  vector._evaluator = evaluator;
  vector._dictionary = evaluator.dictionary;
  return vector;
}

// The node an operation argument stands for (a sparse operand: its dense matrix).
// The engine evaluates the graphs of `evaluators` in one submission and puts their outputs
// on `target` (no work for those there already).
export function evaluateTogether(target, evaluators) {
  return withHandlesAsync(evaluators.map(e => e._live()), list => target._handle.evaluate(list));
}

export function handleOf(arg) {
  if (arg instanceof GPUTableEvaluator) return arg._live();
  if (arg?.[AS_DENSE]) return arg[AS_DENSE]()._live();
  if (arg instanceof GPUVector) return GPUTableEvaluator.fromVector(arg)._live();
  if (typeof arg === 'number' || (isNumberArray(arg) && arg.length > 0)) {
    return GPUTableEvaluator.fromConstant(arg)._handle;
  }
  return fail('INVALID_ARGUMENT', `expected an evaluator, a GPUVector, a number or an array of numbers, got ${describe(arg)}`);
}

export function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array with non-numbers or no values';
  return typeof value === 'object' ? value.constructor?.name ?? 'object' : typeof value;
}

export function wrap(fn) {
  return new GPUTableEvaluator(guard(fn));
}

export function withList(args, fn) {
  const handles = args.map(handleOf);
  return wrap(() => withHandles(handles, fn));
}

// A dense `op` folded over `args` (at least two, or one that is not an evaluator).
export const denseFold = (op, args) => withList(args, list => wasm.foldBinary(op, list));

// A dense unary `op` of `x`.
export const denseUnary = (op, x) => wrap(() => wasm.unaryOp(op, handleOf(x)));
