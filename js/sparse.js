// Sparse matrices (api.md "Sparse arrays"): typed views of the Rust sparse model. The
// components are evaluators; conversions and products are lazy graphs of the IR's
// primitives, run on the matrix's device with no host round trip of the entries.
import {wasm} from './bindings.js';
import {fail, guard, guardAsync, nameOf} from './errors.js';
import {TYPED_ARRAYS, checkType, liveView, options} from './types.js';
import {defaultDevice, resolveDevice, withHandles} from './devices.js';
import {GPUVector} from './vectors.js';
import {AS_DENSE, GPUTableEvaluator, denseFold, denseUnary, typed} from './evaluator.js';

const FIELDS = {
  csr: ['rowPtr', 'colVal', 'nzVal'],
  csc: ['colPtr', 'rowVal', 'nzVal'],
  coo: ['rowInd', 'colInd', 'nzVal']
};

// A component as an evaluator (made here from arrays: the matrix then owns it).
function component(value, indices, what, made) {
  if (value instanceof GPUTableEvaluator) return value;
  if (value instanceof GPUVector) return GPUTableEvaluator.fromVector(value);
  if (ArrayBuffer.isView(value) || Array.isArray(value)) {
    // A Float64Array holds numbers here, as an array does (`fromArray` reads it as uint32
    // word pairs, which a product would take for a second column).
    if (!Array.isArray(value)) liveView(value, what);
    const wide = value instanceof Float64Array;
    const numbers = Array.isArray(value) || wide;
    if (numbers && indices && !allUint32(value)) {
      fail('INVALID_ARGUMENT', `${what} must hold whole numbers from 0 to 2^32-1`);
    }
    // Word pairs whatever the type asked: indices are copied to uint32 first.
    const values = wide && indices ? typed('uint32', value) : value;
    const type = !numbers ? undefined : indices ? 'uint32' : 'float32';
    const evaluator = GPUTableEvaluator.fromArray(values, type && {type});
    made.push(evaluator);
    return evaluator;
  }
  return fail('INVALID_ARGUMENT', `${what} must be a typed array, an array of numbers, an evaluator or a vector`);
}

// Whether every value is a whole number from 0 to 2^32-1 (a loop: `every` is slower).
function allUint32(values) {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!(Number.isInteger(v) && v >= 0 && v <= 0xffffffff)) return false;
  }
  return true;
}

function shapeOf(shape) {
  if (!Array.isArray(shape) || shape.length !== 2 || !allUint32(shape)) {
    fail('INVALID_ARGUMENT', `shape must be [rows, columns] of whole numbers, got ${JSON.stringify(shape)}`);
  }
  return shape;
}

// A matrix from components, validated: at once on the CPU when they are in host memory (or,
// for a matrix on a CPU device, computed from inputs that are), else on the matrix's device
// (a Promise of the matrix then).
function build(format, fields, settings) {
  const {device = null} = options(settings, 'SparseMatrix', ['device']);
  const target = device === null ? null : resolveDevice(device);
  const [m, n] = shapeOf(fields?.shape);
  const made = [];
  const cleanup = error => {
    for (const evaluator of made) evaluator.destroy();
    throw error;
  };
  try {
    const parts = FIELDS[format].map((name, i) => component(fields[name], i < 2, name, made));
    return withHandles(parts.map(p => p._live()), list => {
      const onCpu = target === null || target.type === 'cpu';
      if (wasm.SparseModel.validatesNow(list, onCpu)) {
        const validator = resolveDevice(onCpu ? target : null)._handle;
        return new SparseMatrix(guard(() => wasm.SparseModel.fromComponentsSync(validator, format, list, m, n)), target, made);
      }
      const on = resolveDevice(target);
      return guardAsync(() => wasm.SparseModel.fromComponents(on._handle, format, list, m, n))
        .then(model => new SparseMatrix(model, target, made), cleanup);
    });
  } catch (error) {
    return cleanup(error);
  }
}

// A matrix collected without destroy() still frees its model (and the graph it holds).
const release = new FinalizationRegistry(model => model.free());

export class SparseMatrix {
  // Use the static constructors.
  constructor(model, device, owned) {
    this._m = model;
    release.register(this, model, this);
    this._device = device;
    this._owned = owned;
    this._fields = null;
    this.destroyed = false;
  }

  static fromCSR(fields, settings) {
    return build('csr', fields, settings);
  }
  static fromCSC(fields, settings) {
    return build('csc', fields, settings);
  }
  static fromCOO(fields, settings) {
    return build('coo', fields, settings);
  }

  static async fromDense(x, settings) {
    const {format = 'csr', device = null} = options(settings, 'fromDense', ['format', 'device']);
    const target = device === null ? null : resolveDevice(device);
    const made = [];
    const dense = component(x, false, 'x', made);
    try {
      const name = nameOf(format, "fromDense's format");
      const model = await guardAsync(() => wasm.SparseModel.fromDense(resolveDevice(target)._handle, dense._live(), name));
      const matrix = new SparseMatrix(model, target, []);
      matrix._owned = [...Object.values(matrix._components()), ...made];
      return matrix;
    } catch (error) {
      for (const evaluator of made) evaluator.destroy();
      throw error;
    }
  }

  static zeros(shape, settings) {
    const {type = 'float32', format = 'csr', device = null} = options(settings, 'zeros', ['type', 'format', 'device']);
    const [m, n] = shapeOf(shape);
    checkType(type);
    const pointers = lines => {
      try {
        return new Uint32Array(lines + 1);
      } catch (error) {
        return fail('OUT_OF_MEMORY', `could not allocate ${lines + 1} pointers: ${error.message}`);
      }
    };
    if (!Object.hasOwn(FIELDS, format)) fail('INVALID_ARGUMENT', `format must be 'csr', 'csc' or 'coo', got '${format}'`);
    const fields = {
      csr: () => ({rowPtr: pointers(m), colVal: new Uint32Array(0)}),
      csc: () => ({colPtr: pointers(n), rowVal: new Uint32Array(0)}),
      coo: () => ({rowInd: new Uint32Array(0), colInd: new Uint32Array(0)})
    }[format]();
    return build(format, {...fields, nzVal: new TYPED_ARRAYS[type](0), shape}, {device});
  }

  get format() {
    return this._live().format;
  }
  get shape() {
    const model = this._live();
    return [model.rows, model.columns];
  }
  get nnz() {
    return this._live().nnz;
  }
  get type() {
    return this._components().nzVal.type;
  }
  get device() {
    return this._device ?? defaultDevice();
  }

  transpose() {
    return new SparseMatrix(this._live().transpose(), this._device, []);
  }
  toCOO() {
    return this._derived(guard(() => this._live().toCOO()));
  }
  toCSR() {
    return this._derivedOnDevice(device => this._live().toCSR(device));
  }
  async toCSC() {
    const csr = await this.transpose().toCSR();
    const csc = csr.transpose();
    [csc._owned, csr._owned] = [csr._owned, []];
    return csc;
  }
  findnz() {
    const coo = this.toCOO();
    const {rowInd: rows, colInd: cols, nzVal: values} = coo._components();
    return {rows, cols, values};
  }
  triu(k = 0) {
    return this._derivedOnDevice(device => this._live().triangle(device, k, true));
  }
  tril(k = 0) {
    return this._derivedOnDevice(device => this._live().triangle(device, k, false));
  }
  droptol(tol = 0) {
    return this._derivedOnDevice(device => this._live().droptol(device, tol));
  }
  norm(p = 2) {
    return this._resolve(device => this._live().norm(device, p, false));
  }
  opnorm(p) {
    return this._resolve(device => this._live().norm(device, p, true));
  }
  isZero() {
    return this._resolve(device => this._live().test(device, false));
  }
  isSymmetric() {
    return this._resolve(device => this._live().test(device, true));
  }
  get(i, j) {
    return this._resolve(device => this._live().get(device, i, j));
  }
  _resolve(run) {
    return guardAsync(() => run(resolveDevice(this._device)._handle));
  }
  async _derivedOnDevice(run) {
    const model = await guardAsync(() => run(resolveDevice(this._device)._handle));
    return this._derived(model);
  }

  toDense() {
    return new GPUTableEvaluator(guard(() => this._live().toDense()));
  }

  // As an operand of a dense op.
  [AS_DENSE]() {
    return this.toDense();
  }
  multiply(x, settings) {
    const {alpha = 1, beta = 0, y} = options(settings, 'multiply', ['alpha', 'beta', 'y']);
    for (const [name, value] of [['alpha', alpha], ['beta', beta]]) {
      if (typeof value !== 'number' || Number.isNaN(value)) fail('INVALID_ARGUMENT', `${name} must be a number`);
    }
    const model = this._live();
    // Arrays given here are this product's own inputs (the graph holds them).
    const handle = component(x instanceof SparseVector ? x.toDense() : x, false, 'x', [])._live();
    const extra = y === undefined || y === null ? [] : [component(y, false, 'y', [])._live()];
    return new GPUTableEvaluator(guard(() => withHandles(extra, list => model.multiply(handle, alpha, beta, list))));
  }

  destroy() {
    if (this.destroyed) return;
    for (const evaluator of this._owned) evaluator.destroy();
    this._owned = [];
    this._fields = null;
    // The model holds the graph that made the components (a conversion's intermediates).
    release.unregister(this);
    this._m.free();
    this.destroyed = true;
  }

  _live() {
    if (this.destroyed) fail('DESTROYED', 'this sparse matrix was destroyed');
    return this._m;
  }
  _components() {
    const model = this._live();
    if (!this._fields) {
      const [major, minor, values] = FIELDS[model.format];
      this._fields = {
        [major]: new GPUTableEvaluator(model.major()),
        [minor]: new GPUTableEvaluator(model.minor()),
        [values]: new GPUTableEvaluator(model.values())
      };
    }
    return this._fields;
  }
  _derived(model) {
    const matrix = new SparseMatrix(model, this._device, []);
    matrix._owned = Object.values(matrix._components());
    return matrix;
  }
}

// The components under their conventional names, for the formats that have them.
for (const name of new Set(Object.values(FIELDS).flat())) {
  Object.defineProperty(SparseMatrix.prototype, name, {
    get() {
      return this._components()[name];
    },
    configurable: true
  });
}

export class SparseVector {
  // Use the static constructors.
  constructor(matrix) {
    this._matrix = matrix;
  }

  static fromArrays(fields, settings) {
    const {nzInd, nzVal, length} = fields ?? {};
    if (!Number.isInteger(length) || length < 0 || length >= 0xffffffff) {
      fail('INVALID_ARGUMENT', `length must be a whole number below 2^32-1, got ${length}`);
    }
    const count = entriesIn(nzVal, 'nzVal');
    if (entriesIn(nzInd, 'nzInd') !== count) {
      fail('INVALID_ARGUMENT', `nzInd and nzVal need equal lengths, got ${entriesIn(nzInd, 'nzInd')} and ${count}`);
    }
    return asVector(build('csc', {colPtr: [0, count], rowVal: nzInd, nzVal, shape: [length, 1]}, settings));
  }

  static async fromDense(x, settings) {
    const {device = null} = options(settings, 'fromDense', ['device']);
    const matrix = await SparseMatrix.fromDense(x, {device, format: 'csc'});
    const size = matrix.shape[1];
    if (size !== 1) {
      matrix.destroy();
      fail('INVALID_ARGUMENT', `a sparse vector comes from rows of size 1, got size ${size}`);
    }
    return new SparseVector(matrix);
  }

  static zeros(length, settings) {
    const {type = 'float32', device = null} = options(settings, 'zeros', ['type', 'device']);
    return asVector(SparseMatrix.zeros([length, 1], {type, device, format: 'csc'}));
  }

  get format() {
    return 'vector';
  }
  get shape() {
    return [this.length];
  }
  get length() {
    return this._matrix.shape[0];
  }
  get nnz() {
    return this._matrix.nnz;
  }
  get type() {
    return this._matrix.type;
  }
  get device() {
    return this._matrix.device;
  }
  get destroyed() {
    return this._matrix.destroyed;
  }
  get nzInd() {
    return this._matrix.rowVal;
  }
  get nzVal() {
    return this._matrix.nzVal;
  }

  toDense() {
    return this._matrix.toDense();
  }

  // As an operand of a dense op.
  [AS_DENSE]() {
    return this.toDense();
  }
  findnz() {
    const {rows, values} = this._matrix.findnz();
    return {indices: rows, values};
  }
  async droptol(tol = 0) {
    return new SparseVector(await this._matrix.droptol(tol));
  }
  norm(p = 2) {
    return this._matrix.norm(p);
  }
  isZero() {
    return this._matrix.isZero();
  }
  get(i) {
    return this._matrix.get(i, 0);
  }
  destroy() {
    this._matrix.destroy();
  }
}

// Entries of a component given to `SparseVector.fromArrays`.
function entriesIn(value, what) {
  if (ArrayBuffer.isView(value) || Array.isArray(value) || value instanceof GPUTableEvaluator || value instanceof GPUVector) {
    return value.length;
  }
  return fail('INVALID_ARGUMENT', `${what} must be a typed array, an array of numbers, an evaluator or a vector`);
}

// A one-column matrix (or a Promise of one) as a vector.
function asVector(matrix) {
  return matrix instanceof Promise ? matrix.then(m => new SparseVector(m)) : new SparseVector(matrix);
}

const matrixOf = x => (x instanceof SparseVector ? x._matrix : x);
// `result` as the kind of `like` (a vector stays a vector).
const kindOf = (like, result) => (like instanceof SparseVector ? asVector(result) : result);

const KEEPS_ZERO = new Set(['abs', 'sqrt', 'sin', 'tan']);

// Sparse operands of an op need one shape, also where the result is dense (whose rules
// would broadcast rows of other sizes).
function oneShape(args) {
  const shapes = args.map(matrixOf).filter(x => x instanceof SparseMatrix).map(x => x.shape);
  const other = shapes.find(([m, n]) => m !== shapes[0][0] || n !== shapes[0][1]);
  if (other) fail('INVALID_ARGUMENT', `sparse operands need one shape, got ${shapes[0].join(' x ')} and ${other.join(' x ')}`);
}

// `op` of two operands, one of them sparse: a sparse result where api.md's rules keep
// zeros.
function binary(op, a, b) {
  const [A, B] = [matrixOf(a), matrixOf(b)];
  const sparseA = A instanceof SparseMatrix;
  const sparseB = B instanceof SparseMatrix;
  if (sparseA && sparseB && ['add', 'subtract', 'multiply'].includes(op)) {
    // A Promise either way: a destroyed operand rejects it rather than throwing.
    return kindOf(a, A._derivedOnDevice(device => A._live().combine(device, op, B._live())));
  }
  const scale = (matrix, number, numberFirst, like) => {
    const factor = GPUTableEvaluator.fromConstant(number)._live();
    const model = matrix._live();
    return kindOf(like, matrix._derived(guard(() => model.scaled(op, factor, numberFirst))));
  };
  if (sparseA && typeof b === 'number' && (op === 'multiply' || op === 'divide')) return scale(A, b, false, a);
  if (sparseB && typeof a === 'number' && op === 'multiply') return scale(B, a, true, b);
  oneShape([A, B]);
  const denseOf = x => (matrixOf(x) instanceof SparseMatrix ? x.toDense() : x);
  return denseFold(op, [denseOf(a), denseOf(b)]);
}

// `op` folded left to right; a step that resolves on the device makes the rest wait for it.
function fold(op, args) {
  let result = args[0];
  for (let i = 1; i < args.length; i++) {
    if (result instanceof Promise) {
      const rest = args.slice(i);
      return result.then(value => fold(op, [value, ...rest]));
    }
    result = binary(op, result, args[i]);
  }
  return result;
}

// Whether `x` is a sparse operand, which follows the sparse rules of an op.
export const isSparse = x => x instanceof SparseMatrix || x instanceof SparseVector;

export {oneShape, fold as sparseFold};

// A unary `op` of a sparse operand: sparse where it keeps zeros, else dense.
export function sparseUnary(op, x) {
  if (!KEEPS_ZERO.has(op)) return denseUnary(op, x.toDense());
  const matrix = matrixOf(x);
  return kindOf(x, matrix._derivedOnDevice(device => matrix._live().unary(device, op)));
}

// `sum`, `min` or `max` of a sparse operand, with dense semantics.
export function sparseReduce(kind, x, settings) {
  const known = kind === 'sum' ? ['axis', 'splitEvery'] : ['splitEvery'];
  const given = options(settings, `${kind} of a sparse operand`, known);
  const {axis = null} = given;
  if (axis !== null && typeof axis !== 'number') fail('INVALID_ARGUMENT', `axis must be 0 or 1, got ${axis}`);
  const {splitEvery} = given;
  const model = matrixOf(x)._live();
  return new GPUTableEvaluator(
    guard(() => (kind === 'sum' ? model.sum(axis ?? undefined, splitEvery) : model.extreme(kind === 'max', splitEvery)))
  );
}

export async function kron(a, b) {
  const [A, B] = [matrixOf(a), matrixOf(b)];
  if (!(A instanceof SparseMatrix) || !(B instanceof SparseMatrix)) {
    fail('INVALID_ARGUMENT', 'kron takes two sparse matrices or two sparse vectors');
  }
  const product = A._derivedOnDevice(device => A._live().kron(device, B._live()));
  return a instanceof SparseVector && b instanceof SparseVector ? asVector(product) : product;
}
