// Sparse vectors, arithmetic with sparse operands, sums along an axis, min/max with implicit
// zeros and kron through the built package on the CPU device, against dense references.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as gt from '../../dist/node/index.js';
import {throwsCode, rejectsCode} from './helpers.js';

const {SparseMatrix, SparseVector, kron, GPUTableEvaluator: E} = gt;

const dense = async x => [...(await x.toDense().readValue())];

// A: duplicates at (0, 1), a stored zero at (1, 0); B shares (0, 1) and (2, 0).
const A = () => SparseMatrix.fromCOO({rowInd: [0, 2, 0, 1, 2], colInd: [1, 3, 1, 0, 0], nzVal: [2, -1, 1, 0, 4], shape: [3, 4]});
const B = () => SparseMatrix.fromCSR({rowPtr: [0, 1, 2, 3], colVal: [1, 2, 0], nzVal: [5, 3, -4], shape: [3, 4]});
const DA = [0, 3, 0, 0, 0, 0, 0, 0, 4, 0, 0, -1];
const DB = [0, 5, 0, 0, 0, 0, 3, 0, -4, 0, 0, 0];

test('sparse vectors: constructors, fields, dense form, products', async () => {
  const v = SparseVector.fromArrays({nzInd: [4, 1, 4], nzVal: new Float32Array([2, -3, 1]), length: 6});
  assert.equal(v.format, 'vector');
  assert.deepEqual(v.shape, [6]);
  assert.equal(v.length, 6);
  assert.equal(v.nnz, 3);
  assert.equal(v.type, 'float32');
  assert.deepEqual([...v.nzInd.readValueSync()], [4, 1, 4]);
  assert.deepEqual(await dense(v), [0, -3, 0, 0, 3, 0], 'duplicates add up');
  assert.equal(await v.get(4), 3);
  assert.equal(await v.norm(1), 6);
  const {indices, values} = v.findnz();
  assert.deepEqual([...await indices.readValue()], [1, 4, 4]);
  assert.deepEqual([...await values.readValue()], [-3, 2, 1]);
  const w = await SparseVector.fromDense(new Float32Array([0, 7, 0, -1]));
  assert.deepEqual([w.nnz, w.length], [2, 4]);
  assert.deepEqual([...await w.nzInd.readValue()], [1, 3]);
  // A sparse vector as the operand of a product: x of length n.
  const M = SparseMatrix.fromCSR({rowPtr: [0, 2, 3], colVal: [1, 3, 0], nzVal: [1, 10, 5], shape: [2, 4]});
  assert.deepEqual([...await M.multiply(w).readValue()], [-3, 0]);
  const z = SparseVector.zeros(3, {type: 'sint32'});
  assert.deepEqual([z.nnz, z.type], [0, 'sint32']);
  assert.deepEqual(await dense(z), [0, 0, 0]);
  // Arithmetic keeps vectors vectors.
  const sum = await gt.add(v, SparseVector.fromArrays({nzInd: [0], nzVal: [1], length: 6}));
  assert.ok(sum instanceof SparseVector);
  assert.deepEqual(await dense(sum), [1, -3, 0, 0, 3, 0]);
  const doubled = gt.multiply(v, 2);
  assert.ok(doubled instanceof SparseVector);
  assert.deepEqual(await dense(doubled), [0, -6, 0, 0, 6, 0]);
  assert.deepEqual([...await gt.sum(v).readValue()], [0]);
  assert.deepEqual([...await gt.min(v).readValue()], [-3]);
  const vk = await kron(SparseVector.fromArrays({nzInd: [1], nzVal: [2], length: 2}), w);
  assert.ok(vk instanceof SparseVector);
  assert.deepEqual(await dense(vk), [0, 0, 0, 0, 0, 14, 0, -2]);
  // Validation and destroy.
  throwsCode(() => SparseVector.fromArrays({nzInd: [1, 2], nzVal: [1], length: 3}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseVector.fromArrays({nzInd: [3], nzVal: [1], length: 3}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseVector.fromArrays({nzInd: [0], nzVal: [1], length: -1}), 'INVALID_ARGUMENT');
  throwsCode(() => SparseVector.fromArrays({nzInd: 'x', nzVal: [1], length: 3}), 'INVALID_ARGUMENT');
  await rejectsCode(SparseVector.fromDense(E.fromArray(new Float32Array(4), {size: 2})), 'INVALID_ARGUMENT');
  v.destroy();
  assert.equal(v.destroyed, true);
  throwsCode(() => v.toDense(), 'DESTROYED');
  throwsCode(() => gt.multiply(v, 2), 'DESTROYED');
});

test('arithmetic with sparse operands keeps or merges their structure', async () => {
  const [a, b] = [A(), B()];
  const each = f => DA.map((x, i) => f(x, DB[i]) + 0);
  for (const [op, f, nnz] of [['add', (x, y) => x + y, 5], ['subtract', (x, y) => x - y, 5], ['multiply', (x, y) => x * y, 2]]) {
    const c = await gt[op](a, b);
    assert.ok(c instanceof SparseMatrix, op);
    assert.equal(c.format, 'coo', `${op}: the left operand's format`);
    assert.equal(c.nnz, nnz, `${op}: union or intersection, stored zeros kept`);
    assert.deepEqual(await dense(c), each(f), op);
  }
  // Three operands fold left to right; a number scales with the same structure.
  const three = await gt.add(b, a, b);
  assert.deepEqual(await dense(three), DA.map((x, i) => x + 2 * DB[i]));
  const scaled = gt.multiply(0.5, a);
  assert.ok(scaled instanceof SparseMatrix, 'no device round trip: a matrix at once');
  assert.equal(scaled.nnz, 5);
  assert.deepEqual(await dense(scaled), DA.map(x => x / 2));
  assert.deepEqual(await dense(gt.divide(a, 4)), DA.map(x => x / 4));
  // JS numbers are float32: an integer matrix's quotient is float32, at once, and linear in
  // each duplicate (3 / 2 + 4 / 2 is 7 / 2).
  const ints = SparseMatrix.fromCOO({rowInd: [0, 0, 1], colInd: [0, 0, 1], nzVal: new Int32Array([3, 4, -5]), shape: [2, 2]});
  const half = gt.divide(ints, 2);
  assert.ok(half instanceof SparseMatrix, 'a matrix at once');
  assert.equal(half.type, 'float32');
  assert.deepEqual(await dense(half), [3.5, 0, 0, -2.5]);
  // Unary ops with f(0) = 0 stay sparse and see each cell's sum.
  const absolute = await gt.abs(a);
  assert.equal(absolute.nnz, 4, 'duplicates summed first');
  assert.deepEqual(await dense(absolute), DA.map(Math.abs));
  const root = await gt.sqrt(b);
  assert.deepEqual((await dense(root)).map(Number.isNaN), DB.map(x => x < 0));
  for (const [op, f] of [['sin', Math.sin], ['tan', Math.tan]]) {
    const result = await gt[op](a);
    assert.ok(result instanceof SparseMatrix, op);
    assert.equal(result.nnz, 4, `${op}: duplicates summed first, the stored zero kept`);
    (await dense(result)).forEach((x, i) => assert.ok(Math.abs(x - f(DA[i])) <= 1e-5 * Math.max(1, Math.abs(f(DA[i]))), `${op} cell ${i}: ${x}`));
  }
  // Anything else is the dense result.
  const shifted = gt.add(a, 1);
  assert.ok(shifted instanceof E);
  assert.deepEqual([...await shifted.readValue()], DA.map(x => x + 1));
  const cosine = gt.cos(b);
  assert.ok(cosine instanceof E);
  assert.deepEqual([...await cosine.readValue()], DB.map(x => Math.fround(Math.cos(x))));
  const withDense = gt.multiply(a, E.fromArray(new Float32Array(12).fill(2), {size: 4}));
  assert.deepEqual([...await withDense.readValue()], DA.map(x => 2 * x));
  const quotient = gt.divide(a, b);
  assert.ok(quotient instanceof E);
  assert.ok(Number.isNaN((await quotient.readValue())[0]), '0 / 0 in a dense cell');
  // An empty operand: the union is the other one, the intersection empty.
  const none = SparseMatrix.zeros([3, 4]);
  assert.deepEqual(await dense(await gt.add(none, b)), DB);
  const nothing = await gt.multiply(a, none);
  assert.equal(nothing.nnz, 0);
  assert.deepEqual(await dense(nothing), new Array(12).fill(0));
  // Value types join; uint32 differences wrap.
  const u = SparseMatrix.fromCOO({rowInd: [0], colInd: [0], nzVal: new Uint32Array([1]), shape: [1, 2]});
  const w = SparseMatrix.fromCOO({rowInd: [0], colInd: [1], nzVal: new Uint32Array([2]), shape: [1, 2]});
  const wrapped = await gt.subtract(u, w);
  assert.equal(wrapped.type, 'uint32');
  assert.deepEqual(await dense(wrapped), [1, 2 ** 32 - 2]);
  await rejectsCode(gt.add(a, SparseMatrix.zeros([4, 3])), 'INVALID_ARGUMENT');
  // A dense result takes sparse operands of one shape too (dense rules would broadcast).
  throwsCode(() => gt.divide(a, SparseMatrix.zeros([3, 1])), 'INVALID_ARGUMENT');
  throwsCode(() => gt.pow(SparseMatrix.zeros([1, 4]), a), 'INVALID_ARGUMENT');
  // Joining rows or columns takes dense forms of any shape.
  assert.equal(gt.concat(a, SparseMatrix.zeros([2, 4])).length, 5);
  assert.equal(gt.interleave(a, SparseMatrix.zeros([3, 2])).size, 6);
  a.destroy();
  // Arithmetic of two sparse operands gives a Promise, which rejects (never throws) on failure.
  const added = gt.add(a, b);
  assert.ok(added instanceof Promise);
  await rejectsCode(added, 'DESTROYED');
  await rejectsCode(gt.multiply(b, a), 'DESTROYED');
  await rejectsCode(gt.sqrt(a), 'DESTROYED');
});

test('sum along an axis, min and max count implicit zeros', async () => {
  const a = A();
  assert.deepEqual([...await gt.sum(a).readValue()], [6]);
  assert.deepEqual([...await gt.sum(a, {axis: 0}).readValue()], [4, 3, 0, -1]);
  assert.deepEqual([...await gt.sum(a, {axis: 1}).readValue()], [3, 0, 3]);
  assert.deepEqual([...await gt.min(a).readValue()], [-1]);
  assert.deepEqual([...await gt.max(a).readValue()], [4]);
  const positive = SparseMatrix.fromCOO({rowInd: [0, 1], colInd: [0, 1], nzVal: [2, 3], shape: [2, 2]});
  assert.deepEqual([...await gt.min(positive).readValue()], [0], 'an implicit zero');
  const full = SparseMatrix.fromDense(E.fromArray(new Int32Array([5, 6, 7, 8]), {size: 2}));
  assert.deepEqual([...await gt.min(await full).readValue()], [5], 'every cell stored');
  throwsCode(() => gt.sum(a, {axis: 2}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.sum(a, {axes: 1}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.min(a, {axis: 0}), 'INVALID_ARGUMENT');
  for (const splitEvery of [1, 2.5, 'two']) {
    for (const kind of ['sum', 'min', 'max']) throwsCode(() => gt[kind](a, {splitEvery}), 'INVALID_ARGUMENT');
  }
  // splitEvery shapes the tree over the values' chunks, as for a dense column.
  const chunked = SparseMatrix.fromCOO({
    rowInd: [0, 1, 2, 3, 0, 1, 2, 3], colInd: [0, 1, 2, 3, 1, 2, 3, 0],
    nzVal: E.fromArray(new Float32Array([1, 2, 3, 4, 5, 6, 7, -8]), {chunks: 2}), shape: [4, 4]
  });
  assert.match(gt.sum(chunked, {splitEvery: 2}).explain(), /tree of 2 combine rounds of at most 2 partials \(4 -> 2 -> 1\)/);
  assert.deepEqual([...await gt.sum(chunked, {splitEvery: 2}).readValue()], [20]);
  assert.deepEqual([...await gt.min(chunked, {splitEvery: 3}).readValue()], [-8]);
  assert.deepEqual([...await gt.max(chunked, {splitEvery: 2}).readValue()], [7]);
  // Other reductions see the dense matrix.
  assert.deepEqual([...await gt.mean(positive).readValue()], [1, 1.5]);
});

test('kron places every pair of entries', async () => {
  const a = SparseMatrix.fromCSR({rowPtr: [0, 1, 3], colVal: [0, 2, 2], nzVal: [3, 2, 1], shape: [2, 3]});
  const b = SparseMatrix.fromCOO({rowInd: [0, 1], colInd: [1, 0], nzVal: [5, -1], shape: [2, 2]});
  const k = await kron(a, b);
  assert.equal(k.format, 'csr');
  assert.deepEqual(k.shape, [4, 6]);
  const [da, db] = [await dense(a), await dense(b)];
  const expected = new Array(24).fill(0);
  for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let p = 0; p < 2; p++) for (let q = 0; q < 2; q++) {
    expected[(i * 2 + p) * 6 + j * 2 + q] = da[i * 3 + j] * db[p * 2 + q] + 0;
  }
  assert.deepEqual(await dense(k), expected);
  assert.equal(k.nnz, 4, 'canonical CSR: the duplicate (1, 2) entries summed');
  const byCoo = await kron(b, a);
  assert.equal(byCoo.format, 'coo');
  await rejectsCode(kron(a, 2), 'INVALID_ARGUMENT');
  const destroyed = SparseMatrix.zeros([2, 2]);
  destroyed.destroy();
  await rejectsCode(kron(a, destroyed), 'DESTROYED');
  await rejectsCode(kron(SparseMatrix.zeros([70000, 1]), SparseMatrix.zeros([70000, 1])), 'LIMIT_EXCEEDED');
});
