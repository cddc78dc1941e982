// Sparse matrices through the built package on the CPU device: constructors and their
// validation, canonical CSR from COO with duplicates, dense forms, products, ownership.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as gt from '../../dist/node/index.js';
import {throwsCode, rejectsCode} from './helpers.js';

const {SparseMatrix, SparseVector, GPUTableEvaluator: E} = gt;

test('CSR from typed arrays: fields, dense form and products', async () => {
  const A = SparseMatrix.fromCSR({rowPtr: [0, 2, 2, 5], colVal: [0, 2, 1, 0, 2], nzVal: new Float32Array([1, 2, 3, 4, 5]), shape: [3, 3]});
  assert.equal(A.format, 'csr');
  assert.deepEqual(A.shape, [3, 3]);
  assert.equal(A.nnz, 5);
  assert.equal(A.type, 'float32');
  assert.equal(A.device.type, 'cpu', 'no device given: the default CPU device runs its operations');
  assert.equal(A.transpose().device, A.device);
  assert.deepEqual([...A.rowPtr.readValueSync()], [0, 2, 2, 5]);
  assert.equal(A.rowInd, undefined, 'CSR has no rowInd');
  assert.deepEqual([...await A.toDense().readValue()], [1, 0, 2, 0, 0, 0, 4, 3, 5]);
  assert.equal(A.toDense().size, 3);
  assert.deepEqual([...await A.multiply(new Float32Array([1, 10, 100])).readValue()], [201, 0, 534]);
  const y = E.fromArray(new Float32Array([1, 2, 3]));
  assert.deepEqual([...await A.multiply(E.fromArray(new Float32Array([1, 10, 100])), {alpha: 2, beta: -1, y}).readValue()], [401, -2, 1065]);
  assert.deepEqual([...await A.multiply([1, 10, 100], {alpha: 2, beta: -1, y: [1, 2, 3]}).readValue()], [401, -2, 1065]);
  const spmm = A.multiply(E.fromArray(new Float32Array([1, -1, 10, -10, 100, -100]), {size: 2}));
  assert.deepEqual([...await spmm.readValue()], [201, -201, 0, 0, 534, -534]);
  const T = A.transpose();
  assert.equal(T.format, 'csc');
  assert.deepEqual(T.shape, [3, 3]);
  assert.deepEqual([...await T.toDense().readValue()], [1, 0, 4, 0, 0, 3, 2, 0, 5]);
  A.destroy();
  throwsCode(() => A.nnz, 'DESTROYED');
  throwsCode(() => A.toDense(), 'DESTROYED');
});

test('Float64Array components and products read numbers (float32 values, uint32 indices), not word pairs', async () => {
  const wide = SparseMatrix.fromCOO({rowInd: new Float64Array([0, 2, 2]), colInd: new Float64Array([1, 0, 2]), nzVal: new Float64Array([0.1, 2, 3]), shape: [3, 3]});
  const narrow = SparseMatrix.fromCOO({rowInd: [0, 2, 2], colInd: [1, 0, 2], nzVal: new Float32Array([0.1, 2, 3]), shape: [3, 3]});
  assert.equal(wide.type, 'float32');
  assert.equal(wide.nzVal.size, 1);
  assert.deepEqual([...await wide.toDense().readValue()], [...await narrow.toDense().readValue()]);
  // SpMV of a Float64Array x (it gave the words of x as a second column).
  const x = new Float64Array([1, 10, 100]);
  const product = wide.multiply(x, {beta: 1, y: new Float64Array([1, 2, 3])});
  assert.equal(product.size, 1);
  assert.deepEqual([...await product.readValue()], [Math.fround(Math.fround(0.1) * 10) + 1, 2, 302 + 3]);
  const vector = SparseVector.fromArrays({nzInd: new Float64Array([2]), nzVal: new Float64Array([7]), length: 3});
  assert.deepEqual([...await vector.toDense().readValue()], [0, 0, 7]);
  assert.equal((await SparseMatrix.fromDense(new Float64Array([0, 1.5, 0]))).nnz, 1);
  throwsCode(() => SparseMatrix.fromCOO({rowInd: new Float64Array([0.5]), colInd: [0], nzVal: [1], shape: [1, 1]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCOO({rowInd: new Float64Array([-1]), colInd: [0], nzVal: [1], shape: [1, 1]}), 'INVALID_ARGUMENT');
  // A transferred (detached) array is a typed error, not a TypeError from reading it.
  const detached = new Float64Array([0]);
  structuredClone(detached.buffer, {transfer: [detached.buffer]});
  throwsCode(() => SparseMatrix.fromCOO({rowInd: detached, colInd: [0], nzVal: [1], shape: [1, 1]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseVector.fromArrays({nzInd: detached, nzVal: [1], length: 1}), 'INVALID_ARGUMENT');
  for (const m of [wide, narrow]) m.destroy();
});

test('a CPU device of its own validates lazy components at once, with its own kernels', async () => {
  const device = await gt.createDevice({type: 'cpu'});
  const rows = gt.add(E.fromArray(new Uint32Array([0, 1])), E.fromArray(new Uint32Array([1, 1])));
  const before = device.stats.kernels;
  const A = SparseMatrix.fromCOO({rowInd: rows, colInd: [0, 1], nzVal: [1, 2], shape: [3, 2]}, {device});
  assert.ok(A instanceof SparseMatrix);
  assert.equal(A.device, device);
  assert.ok(device.stats.kernels > before, 'validated on the given device');
  assert.deepEqual([...await A.toDense().readValue()], [0, 0, 1, 0, 0, 2]);
  device.destroy();
});

test('COO with duplicates: canonical CSR and CSC, row-major COO', async () => {
  const A = SparseMatrix.fromCOO({rowInd: [3, 1, 0, 1, 3, 1, 0], colInd: [0, 3, 1, 0, 3, 3, 0], nzVal: [0, 2, 1.5, -1, 4, 0.5, 7], shape: [4, 5]});
  const csr = await A.toCSR();
  assert.equal(csr.format, 'csr');
  assert.deepEqual([...await csr.rowPtr.readValue()], [0, 2, 4, 4, 6]);
  assert.deepEqual([...await csr.colVal.readValue()], [0, 1, 0, 3, 0, 3]);
  assert.deepEqual([...await csr.nzVal.readValue()], [7, 1.5, -1, 2.5, 0, 4], 'duplicates summed, a stored zero kept');
  const csc = await A.toCSC();
  assert.equal(csc.format, 'csc');
  assert.deepEqual([...await csc.colPtr.readValue()], [0, 3, 4, 4, 6, 6]);
  assert.deepEqual([...await csc.rowVal.readValue()], [0, 1, 3, 0, 1, 3]);
  const coo = A.toCOO();
  assert.deepEqual([...await coo.rowInd.readValue()], [0, 0, 1, 1, 1, 3, 3]);
  assert.deepEqual([...await coo.colInd.readValue()], [0, 1, 0, 3, 3, 0, 3]);
  assert.deepEqual([...await A.toDense().readValue()].slice(5, 10), [-1, 0, 0, 2.5, 0]);
  csr.destroy();
  csc.destroy();
  coo.destroy();
  A.destroy();
});

test('sparse constructors validate their components', () => {
  const nzVal = [1, 2, 3];
  throwsCode(() => SparseMatrix.fromCSR({rowPtr: [1, 2, 3], colVal: [0, 1, 2], nzVal, shape: [2, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCSR({rowPtr: [0, 3, 2, 3], colVal: [0, 1, 2], nzVal, shape: [3, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCSR({rowPtr: [0, 2, 3], colVal: [0, 1, 3], nzVal, shape: [2, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCOO({rowInd: new Int32Array([0, -1, 1]), colInd: [0, 1, 2], nzVal, shape: [2, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCOO({rowInd: [0, 1], colInd: [0, 1, 2], nzVal, shape: [2, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCOO({rowInd: [0], colInd: [0], nzVal: [1], shape: [2]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCOO({rowInd: 'x', colInd: [0], nzVal: [1], shape: [2, 2]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCSR({rowPtr: [0, 1.5, 3], colVal: [0, 1, 2], nzVal, shape: [2, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCOO({rowInd: [0, 2 ** 32, 1], colInd: [0, 1, 2], nzVal, shape: [2, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCOO({rowInd: [0], colInd: [0], nzVal: [1], shape: [2 ** 32 - 1, 1]}), 'LIMIT_EXCEEDED');
  throwsCode(() => SparseMatrix.fromCSR(null), 'INVALID_ARGUMENT');
  // Lazy components over host data are computed and validated at once on a CPU device.
  const lazyRows = gt.add(E.fromArray(new Uint32Array([0, 1, 1])), E.fromArray(new Uint32Array([0, 0, 1])));
  const lazy = SparseMatrix.fromCOO({rowInd: lazyRows, colInd: [0, 1, 2], nzVal, shape: [3, 3]});
  assert.ok(lazy instanceof SparseMatrix, 'no Promise on the CPU');
  assert.equal(lazy.nnz, 3);
  throwsCode(() => SparseMatrix.fromCOO({rowInd: lazyRows, colInd: [0, 1, 2], nzVal, shape: [2, 3]}), 'INVALID_ARGUMENT');
  const A = SparseMatrix.fromCSR({rowPtr: [0, 2, 3], colVal: [0, 1, 2], nzVal, shape: [2, 3]});
  throwsCode(() => A.multiply([1, 2]), 'INVALID_ARGUMENT');
  throwsCode(() => A.multiply([1, 2, 3], {beta: 1, y: [1, 2, 3]}), 'INVALID_ARGUMENT');
  throwsCode(() => A.multiply([1, 2, 3], {beta: 1, y: 'nope'}), 'INVALID_ARGUMENT');
  throwsCode(() => A.multiply([1, 2, 3], {alpha: 'x'}), 'INVALID_ARGUMENT');
  // A misspelt option is refused, never replaced by its default.
  throwsCode(() => A.multiply([1, 2, 3], {Alpha: 2}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCSR({rowPtr: [0, 1], colVal: [0], nzVal: [1], shape: [1, 1]}, {devices: null}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.zeros([2, 2], {formats: 'csc'}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseVector.fromArrays({nzInd: [0], nzVal: [1], length: 1}, {type: 'uint8'}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseVector.zeros(2, {format: 'csr'}), 'INVALID_ARGUMENT');
  A.destroy();
});

test('a graph example: PageRank iterations on a generated graph', async () => {
  // A ring of n pages, each also linking to page 0: column-stochastic link matrix.
  const n = 1000;
  const rowInd = [];
  const colInd = [];
  const nzVal = [];
  for (let j = 0; j < n; j++) {
    const links = j === 0 ? [1] : [(j + 1) % n, 0];
    for (const i of links) {
      rowInd.push(i);
      colInd.push(j);
      nzVal.push(1 / links.length);
    }
  }
  const M = await SparseMatrix.fromCOO({rowInd, colInd, nzVal, shape: [n, n]}).toCSR();
  let rank = E.fromArray(new Float32Array(n).fill(1 / n));
  const teleport = E.fromArray(new Float32Array(n).fill(0.15 / n));
  for (let k = 0; k < 30; k++) rank = M.multiply(rank, {alpha: 0.85, beta: 1, y: teleport});
  const ranks = await rank.readValue();
  const total = ranks.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(total - 1) < 1e-3, `ranks sum to ${total}`);
  assert.ok(ranks[0] > ranks[500] * 10, 'every page links to page 0');
  M.destroy();
});

test('fromDense, zeros, findnz, triu, tril and droptol', async () => {
  const dense = E.fromArray(new Float32Array([0, 2, 0, -1, 5, 0, 0, 0, 0, 0, 0, 3]), {size: 4});
  const A = await SparseMatrix.fromDense(dense);
  assert.equal(A.format, 'csr');
  assert.equal(A.nnz, 4);
  assert.deepEqual([...await A.rowPtr.readValue()], [0, 2, 3, 4]);
  const {rows, cols, values} = A.findnz();
  assert.deepEqual([...await rows.readValue()], [0, 0, 1, 2]);
  assert.deepEqual([...await cols.readValue()], [1, 3, 0, 3]);
  assert.deepEqual([...await values.readValue()], [2, -1, 5, 3]);
  assert.deepEqual([...await (await A.triu(1)).colVal.readValue()], [1, 3, 3]);
  assert.deepEqual([...await (await A.tril()).colVal.readValue()], [0]);
  assert.equal((await A.droptol(2.5)).nnz, 2);
  const coo = await SparseMatrix.fromDense([[1, 0], [0, 2]].flat(), {format: 'coo'});
  assert.equal(coo.format, 'coo');
  assert.deepEqual(coo.shape, [4, 1], 'a flat array is one column');
  await assert.rejects(A.triu(0.5), error => error.code === 'INVALID_ARGUMENT');
  const Z = SparseMatrix.zeros([3, 2], {type: 'uint8', format: 'csc'});
  assert.deepEqual([Z.format, Z.nnz, Z.type], ['csc', 0, 'uint8']);
  assert.deepEqual([...await Z.toDense().readValue()], [0, 0, 0, 0, 0, 0]);
  throwsCode(() => SparseMatrix.zeros([3, 2], {format: 'dia'}), 'INVALID_ARGUMENT');
  await rejectsCode(SparseMatrix.fromDense(dense, {formats: 'coo'}), 'INVALID_ARGUMENT');
  await rejectsCode(SparseVector.fromDense([0, 1], {format: 'coo'}), 'INVALID_ARGUMENT');
  A.destroy();
  Z.destroy();
});

test('norms, symmetry, zero tests and entries resolve to numbers', async () => {
  const A = SparseMatrix.fromCOO({rowInd: [0, 0, 1, 2, 2, 1], colInd: [0, 2, 1, 0, 2, 1], nzVal: [1, -2, 1, -2, 4, 2], shape: [3, 3]});
  assert.equal(await A.norm(), Math.sqrt(34));
  assert.equal(await A.norm(1), 12);
  assert.equal(await A.norm(Infinity), 4);
  assert.equal(await A.opnorm(1), 6);
  assert.equal(await A.opnorm(Infinity), 6);
  await assert.rejects(A.opnorm(2), error => error.code === 'INVALID_ARGUMENT');
  assert.equal(await A.isSymmetric(), true);
  assert.equal(await A.isZero(), false);
  assert.equal(await A.get(1, 1), 3);
  assert.equal(await A.get(1, 0), 0);
  await assert.rejects(A.get(3, 0), error => error.code === 'INVALID_ARGUMENT');
  await assert.rejects(A.get(0.5, 0), error => error.code === 'INVALID_ARGUMENT');
  assert.equal(await SparseMatrix.zeros([2, 2]).isZero(), true);
  A.destroy();
  await assert.rejects(A.norm(), error => error.code === 'DESTROYED');
});

test('a derived matrix owns its components: destroying it or its source leaves the other', async () => {
  const canonicalCsr = () => SparseMatrix.fromCOO({rowInd: [1, 0, 1], colInd: [0, 1, 0], nzVal: [3, 4, 5], shape: [2, 2]}).toCSR();
  const denseOf = async m => [...await m.toDense().readValue()];
  // Lazy results (a scaled matrix, toCOO) read their source when evaluated; those that
  // resolve on the device hold their own data, so they outlive it.
  const lazy = {scaled: M => gt.multiply(M, 2), toCOO: M => M.toCOO()};
  const resolved = {
    toCSR: M => M.toCSR(),
    toCSC: M => M.toCSC(),
    abs: M => gt.abs(M),
    triu: M => M.triu(),
    droptol: M => M.droptol(3.5)
  };
  // The regression: a scaled matrix shared its source's structure, so destroying it
  // destroyed the source's rowPtr and colVal.
  const A = await canonicalCsr();
  for (const [name, make] of Object.entries({...lazy, ...resolved})) {
    const B = await make(A);
    await denseOf(B);
    B.destroy();
    assert.deepEqual(await denseOf(A), [0, 4, 8, 0], `destroying ${name} destroyed its source`);
  }
  A.destroy();
  for (const [name, make] of Object.entries(resolved)) {
    const M = await canonicalCsr();
    const C = await make(M);
    M.destroy();
    const expected = {toCSR: [0, 4, 8, 0], toCSC: [0, 4, 8, 0], abs: [0, 4, 8, 0], triu: [0, 4, 0, 0], droptol: [0, 4, 8, 0]}[name];
    assert.deepEqual(await denseOf(C), expected, `${name} ended with its source`);
    C.destroy();
  }
});
