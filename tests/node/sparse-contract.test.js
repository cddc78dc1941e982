// api.md's sparse rules the other sparse tests leave out, on the CPU device: CSC from
// components, products of every format and of transposes, other diagonals, stored zeros
// through findnz, droptol and isSymmetric, NaN and -0 in fromDense, empty matrices.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as gt from '../../dist/node/index.js';
import {throwsCode} from './helpers.js';

const {SparseMatrix, SparseVector, GPUTableEvaluator: E} = gt;
const read = async evaluator => [...await evaluator.readValue()];

test('CSC from components: validated, dense form, canonical CSR', async () => {
  // [[0, 6], [5, 7]]
  const A = SparseMatrix.fromCSC({colPtr: [0, 1, 3], rowVal: [1, 0, 1], nzVal: [5, 6, 7], shape: [2, 2]});
  assert.deepEqual([A.format, A.nnz], ['csc', 3]);
  assert.deepEqual(await read(A.toDense()), [0, 6, 5, 7]);
  assert.deepEqual(await read(A.multiply([1, 10])), [60, 75]);
  const csr = await A.toCSR();
  assert.deepEqual(await read(csr.rowPtr), [0, 1, 3]);
  assert.deepEqual(await read(csr.colVal), [1, 0, 1]);
  assert.deepEqual(await read(csr.nzVal), [6, 5, 7]);
  const nzVal = [5, 6, 7];
  throwsCode(() => SparseMatrix.fromCSC({colPtr: [0, 3], rowVal: [1, 0, 1], nzVal, shape: [2, 2]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCSC({colPtr: [0, 2, 1], rowVal: [1, 0, 1], nzVal, shape: [2, 2]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCSC({colPtr: [0, 1, 3], rowVal: [1, 0, 2], nzVal, shape: [2, 2]}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseMatrix.fromCSC({colPtr: [0, 1, 3], rowVal: [1, 0], nzVal, shape: [2, 2]}), 'INVALID_ARGUMENT');
  A.destroy();
  csr.destroy();
});

test('every format and its transpose multiply alike', async () => {
  // M = [[1, 0, 2], [0, 3, 0]], stored three ways (COO unsorted).
  const forms = [
    SparseMatrix.fromCSR({rowPtr: [0, 2, 3], colVal: [0, 2, 1], nzVal: [1, 2, 3], shape: [2, 3]}),
    SparseMatrix.fromCSC({colPtr: [0, 1, 2, 3], rowVal: [0, 1, 0], nzVal: [1, 3, 2], shape: [2, 3]}),
    SparseMatrix.fromCOO({rowInd: [1, 0, 0], colInd: [1, 2, 0], nzVal: [3, 2, 1], shape: [2, 3]})
  ];
  const x = SparseVector.fromArrays({nzInd: [0, 2], nzVal: [1, 100], length: 3});
  const X = E.fromArray(new Float32Array([1, -1, 10, -10, 100, -100]), {size: 2});
  for (const A of forms) {
    assert.deepEqual(await read(A.multiply([1, 10, 100])), [201, 30], A.format);
    assert.deepEqual(await read(A.transpose().multiply([1, 2])), [1, 6, 2], `${A.format} transposed`);
    assert.deepEqual(await read(A.multiply(x)), [201, 0], `${A.format} times a sparse vector`);
    // A size-1 y adds its row's value to every lane.
    assert.deepEqual(await read(A.multiply(X, {beta: 1, y: [1, 2]})), [202, -200, 32, -28], `${A.format} SpMM`);
  }
  forms.forEach(A => A.destroy());
});

test('triu and tril at other diagonals', async () => {
  const A = await SparseMatrix.fromDense(E.fromArray(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8, 9]), {size: 3}));
  const values = async matrix => read((await matrix).nzVal);
  assert.deepEqual(await values(A.triu(1)), [2, 3, 6]);
  assert.deepEqual(await values(A.triu(-1)), [1, 2, 3, 4, 5, 6, 8, 9]);
  assert.deepEqual(await values(A.tril(-1)), [4, 7, 8]);
  assert.deepEqual(await values(A.tril(1)), [1, 2, 4, 5, 6, 7, 8, 9]);
  assert.equal((await A.triu(3)).nnz, 0);
  assert.equal((await A.tril(-3)).nnz, 0);
  A.destroy();
});

test('stored zeros: findnz keeps them, droptol(0) drops them, isSymmetric sees the dense matrix', async () => {
  // (0, 1) stores 0: equal to the implicit 0 at (1, 0).
  const Z = SparseMatrix.fromCOO({rowInd: [1, 0], colInd: [1, 1], nzVal: [5, 0], shape: [2, 2]});
  const {rows, cols, values} = Z.findnz();
  assert.deepEqual([await read(rows), await read(cols), await read(values)], [[0, 1], [1, 1], [0, 5]]);
  assert.equal((await Z.droptol(0)).nnz, 1);
  assert.equal(await Z.isSymmetric(), true);
  assert.equal(await Z.isZero(), false);
  const lopsided = SparseMatrix.fromCOO({rowInd: [0, 1, 1], colInd: [1, 0, 1], nzVal: [0, 2, 5], shape: [2, 2]});
  assert.equal(await lopsided.isSymmetric(), false);
  // Duplicates summing to 0 leave nothing at (1, 0).
  const cancelled = SparseMatrix.fromCOO({rowInd: [1, 1, 0], colInd: [0, 0, 0], nzVal: [2, -2, 1], shape: [2, 2]});
  assert.equal(await cancelled.isSymmetric(), true);
  assert.equal(await SparseMatrix.fromCOO({rowInd: [0, 1], colInd: [1, 0], nzVal: [0, -0], shape: [2, 2]}).isZero(), true);
});

test('fromDense stores NaN and every nonzero, not -0', async () => {
  const dense = () => E.fromArray(new Float32Array([NaN, -0, 0, 1]), {size: 2});
  const A = await SparseMatrix.fromDense(dense());
  assert.equal(A.nnz, 2);
  assert.deepEqual(await read(A.colVal), [0, 1]);
  const stored = await read(A.nzVal);
  assert.ok(Number.isNaN(stored[0]) && stored[1] === 1, `${stored}`);
  const C = await SparseMatrix.fromDense(dense(), {format: 'csc'});
  assert.deepEqual([C.format, C.nnz], ['csc', 2]);
  assert.deepEqual(await read(C.colPtr), [0, 1, 2]);
});

test('empty matrices: conversions, products and reductions', async () => {
  const A = SparseMatrix.fromCOO({rowInd: [], colInd: [], nzVal: new Float32Array(0), shape: [0, 3]});
  const csr = await A.toCSR();
  assert.deepEqual(await read(csr.rowPtr), [0]);
  assert.equal((await A.multiply([1, 2, 3]).readValue()).length, 0);
  assert.deepEqual(await read(gt.sum(A)), [0]);
  await assert.rejects(async () => gt.min(A).readValue(), error => error.code === 'EMPTY_INPUT');
  const B = SparseMatrix.fromCOO({rowInd: [], colInd: [], nzVal: new Int32Array(0), shape: [2, 2]});
  assert.deepEqual(await read(gt.sum(B, {axis: 0})), [0, 0]);
  assert.deepEqual(await read(gt.max(B)), [0], 'implicit zeros count');
  assert.equal(await B.isSymmetric(), true);
});

test('kron of a matrix and a vector takes the vector as its one-column matrix', async () => {
  const I = SparseMatrix.fromCSR({rowPtr: [0, 1, 2], colVal: [0, 1], nzVal: [1, 1], shape: [2, 2]});
  const v = SparseVector.fromArrays({nzInd: [1], nzVal: [3], length: 2});
  const K = await gt.kron(I, v);
  assert.ok(K instanceof SparseMatrix);
  assert.deepEqual(K.shape, [4, 2]);
  assert.deepEqual(await read(K.toDense()), [0, 0, 3, 0, 0, 0, 0, 3]);
});
