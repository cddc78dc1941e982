// api.md "Predicates and more elementwise ops" through the built package on the CPU device,
// against JavaScript's own comparisons and plain loops: every pair of the seven types, NaN,
// -0, infinities, extremes and integers float32 cannot hold.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as gt from 'gputable';
import {throwsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;
const ARRAYS = {
  uint8: Uint8Array, sint8: Int8Array, uint16: Uint16Array, sint16: Int16Array,
  uint32: Uint32Array, sint32: Int32Array, float32: Float32Array,
};
const CANDIDATES = [0, -0, 1, -1, 0.5, -2.5, 7, -7, 127, -128, 255, -32768, 65535, 16777216, 16777217,
  2147483647, -2147483648, 2147483648, 4294967295, 1e-45, 3.4e38, NaN, Infinity, -Infinity];

// The candidates a type holds exactly (float32: as float32 rounds them).
function edgeValues(type) {
  if (type === 'float32') return [...new Set(CANDIDATES.map(Math.fround))];
  const Typed = ARRAYS[type];
  return [...new Set(CANDIDATES.filter(v => Number.isInteger(v) && new Typed([v])[0] === v).map(v => v + 0))];
}

// Every pair of the two types' edge values, as two columns.
function pairs(a, b) {
  const [av, bv] = [edgeValues(a), edgeValues(b)];
  const left = av.flatMap(x => bv.map(() => x));
  const right = av.flatMap(() => bv);
  return [E.fromArray(ARRAYS[a].from(left)), E.fromArray(ARRAYS[b].from(right)), left, right];
}

const COMPARE = {
  equal: (a, b) => a === b,
  notEqual: (a, b) => a !== b,
  less: (a, b) => a < b,
  lessEqual: (a, b) => a <= b,
  greater: (a, b) => a > b,
  greaterEqual: (a, b) => a >= b,
};

test('comparisons of every pair of types are exact, as JavaScript compares the numbers', () => {
  for (const a of Object.keys(ARRAYS)) {
    for (const b of Object.keys(ARRAYS)) {
      const [x, y, left, right] = pairs(a, b);
      for (const [name, f] of Object.entries(COMPARE)) {
        const r = gt[name](x, y);
        assert.equal(r.type, 'uint8');
        const expected = Uint8Array.from(left, (v, i) => Number(f(v, right[i])));
        assert.deepEqual(r.readValueSync(), expected, `${name}(${a}, ${b})`);
      }
    }
  }
});

test('integer literals compare exactly; other numbers as float32', () => {
  const u = E.fromArray(new Uint32Array([4294967295, 0, 16777217]));
  assert.deepEqual([...gt.equal(u, 4294967295).readValueSync()], [1, 0, 0]);
  assert.deepEqual([...gt.greater(u, -1).readValueSync()], [1, 1, 1]);
  assert.deepEqual([...gt.less(16777216, u).readValueSync()], [1, 0, 1]);
  assert.deepEqual([...gt.equal(E.fromArray([0.1, 0.2]), 0.1).readValueSync()], [1, 0]);
  assert.deepEqual([...gt.less(E.fromArray(new Int32Array([1, 2, 3]), {size: 3}), [2, 2, 2]).readValueSync()], [1, 0, 0]);
});

test('logic treats nonzero (NaN too) as true; isNaN and isFinite test floats', () => {
  const x = E.fromArray([NaN, 0, -0, 2, Infinity, -Infinity]);
  const y = E.fromArray(new Int8Array([1, 1, 0, 0, -1, 0]));
  const truth = [true, false, false, true, true, true];
  const yt = [true, true, false, false, true, false];
  const read = r => [...r.readValueSync()];
  assert.deepEqual(read(gt.and(x, y)), truth.map((t, i) => Number(t && yt[i])));
  assert.deepEqual(read(gt.or(x, y, 0)), truth.map((t, i) => Number(t || yt[i])));
  assert.deepEqual(read(gt.xor(x, y)), truth.map((t, i) => Number(t !== yt[i])));
  assert.deepEqual(read(gt.and(x)), truth.map(Number), 'one argument: its truth');
  assert.deepEqual(read(gt.not(x)), truth.map(t => Number(!t)));
  assert.deepEqual(read(gt.isNaN(x)), [1, 0, 0, 0, 0, 0]);
  assert.deepEqual(read(gt.isFinite(x)), [0, 1, 1, 1, 0, 0]);
  assert.deepEqual(read(gt.isNaN(y)), [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(read(gt.isFinite(y)), [1, 1, 1, 1, 1, 1]);
  for (const r of [gt.and(x, y), gt.not(y), gt.isNaN(x)]) assert.equal(r.type, 'uint8');
});

// NumPy's float mod: fmod, moved by one divisor to take b's sign (a zero takes b's sign).
function floatMod(a, b) {
  const r = Math.fround(a % b);
  if (Number.isNaN(r)) return r;
  if (r === 0) return b < 0 || Object.is(b, -0) ? -0 : 0;
  return (r < 0) !== (b < 0) ? Math.fround(r + b) : r;
}

test('minimum, maximum, clamp and mod follow NaN, -0 and sign rules', () => {
  const a = [NaN, -0, 0, 1, 5.5, -5.5, 5.5, -5.5, 1e30, 7, Infinity, -1e-45];
  const b = [1, 0, -0, NaN, 2, 2, -2, -2, 3, 0, 2, Infinity];
  const [x, y] = [E.fromArray(a), E.fromArray(b)];
  const min = gt.minimum(x, y).readValueSync();
  const max = gt.maximum(x, y).readValueSync();
  a.forEach((v, i) => {
    const w = b[i];
    assert.ok(Object.is(min[i], Math.fround(Math.min(v, w))), `minimum(${v}, ${w}) = ${min[i]}`);
    assert.ok(Object.is(max[i], Math.fround(Math.max(v, w))), `maximum(${v}, ${w}) = ${max[i]}`);
  });
  const mod = gt.mod(x, y).readValueSync();
  a.forEach((v, i) => assert.ok(Object.is(mod[i], floatMod(Math.fround(v), b[i])), `mod(${v}, ${b[i]}) = ${mod[i]}`));
  assert.deepEqual([...gt.clamp(E.fromArray([-3, 0.5, 9, NaN]), 0, 1).readValueSync()], [0, 0.5, 1, NaN]);
  assert.equal(gt.minimum(E.fromArray(new Int8Array([1])), E.fromArray(new Uint8Array([2]))).type, 'sint16', 'the deduction rules');
  const ints = gt.mod(E.fromArray(new Int32Array([7, -7, 7, -7, 7, -2147483648])), E.fromArray(new Int32Array([3, 3, -3, -3, 0, -1])));
  assert.deepEqual([...ints.readValueSync()], [1, 2, -2, -1, 0, 0]);
  assert.deepEqual([...gt.mod(E.fromArray(new Uint8Array([200, 9])), E.fromArray(new Uint8Array([7, 0]))).readValueSync()], [4, 0]);
  assert.equal(gt.minimum(1, 2, E.fromArray([0, 3])).readValueSync()[1], 1, 'folds any number of arguments');
});

test('floor, ceil, trunc, round and sign keep integers and give float32 for floats', () => {
  const values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e-45, -1e-45, 3.7, -3.7, NaN, Infinity, -0];
  const x = E.fromArray(values);
  const rounded = (name, f) => {
    const out = gt[name](x);
    assert.equal(out.type, 'float32');
    const got = out.readValueSync();
    values.forEach((v, i) => assert.ok(Object.is(got[i], Math.fround(f(Math.fround(v)))) || (got[i] === 0 && f(Math.fround(v)) === 0), `${name}(${v}) = ${got[i]}`));
  };
  const halfEven = v => {
    const r = Math.round(v);
    return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
  };
  rounded('floor', Math.floor);
  rounded('ceil', Math.ceil);
  rounded('trunc', Math.trunc);
  rounded('round', halfEven);
  rounded('sign', v => (Number.isNaN(v) ? NaN : v > 0 ? 1 : v < 0 ? -1 : 0));
  for (const [type, Typed] of Object.entries(ARRAYS)) {
    if (type === 'float32') continue;
    const ints = E.fromArray(Typed.from(edgeValues(type)));
    for (const name of ['floor', 'ceil', 'trunc', 'round']) {
      assert.equal(gt[name](ints).type, type);
      assert.deepEqual(gt[name](ints).readValueSync(), Typed.from(edgeValues(type)));
    }
    assert.deepEqual(gt.sign(ints).readValueSync(), Typed.from(edgeValues(type), Math.sign));
  }
});

test('bad predicate arguments are INVALID_ARGUMENT', () => {
  const x = E.fromArray([1, 2]);
  throwsCode(() => gt.less(x), 'INVALID_ARGUMENT');
  throwsCode(() => gt.less(x, 'a'), 'INVALID_ARGUMENT');
  throwsCode(() => gt.and(), 'INVALID_ARGUMENT');
  throwsCode(() => gt.not(true), 'INVALID_ARGUMENT');
  throwsCode(() => gt.clamp(x, 0), 'INVALID_ARGUMENT');
});

test('count and {where} reductions keep the rows whose mask is nonzero and not null', async () => {
  const arrow = await import('apache-arrow');
  const fare = [4.5, 12, NaN, 30, 7, 18, 0, 25];
  const kinds = [1, 2, 2, 3, null, 2, 2, 1];
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table({
    fare: arrow.vectorFromArray(fare, new arrow.Float32()),
    kind: arrow.vectorFromArray(kinds, new arrow.Int32()),
  })));
  const column = table.getVector('fare');
  const kind = table.getVector('kind');
  assert.ok(kind.validity, 'the kind column has a null');
  const mask = gt.equal(kind, 2);
  const kept = kinds.map(k => k === 2);
  assert.deepEqual([...gt.count(mask).readValueSync()], [kept.filter(Boolean).length]);
  assert.deepEqual([...gt.count(kind).readValueSync()], [7], 'a null mask row is not counted');
  const rows = fare.map((v, i) => (kept[i] ? Math.fround(v) : undefined)).filter(v => v !== undefined);
  const numbers = rows.filter(v => !Number.isNaN(v));
  assert.deepEqual([...gt.sum(column, {where: mask}).readValueSync()], [Math.fround(rows.reduce((a, b) => a + b, 0))]);
  assert.deepEqual([...gt.max(column, {where: mask}).readValueSync()], [Math.max(...numbers)]);
  assert.deepEqual([...gt.argmin(column, {where: mask}).readValueSync()], [fare.indexOf(Math.min(...numbers))], 'rows of x');
  assert.deepEqual([...gt.extent(column, {where: gt.greater(column, 10)}).readValueSync()], [12, 30]);
  assert.deepEqual([...gt.mean(column, {where: 1}).readValueSync()], [NaN], 'a constant mask keeps every row (NaN among them)');
  const none = gt.greater(column, 100);
  assert.deepEqual([...gt.sum(column, {where: none}).readValueSync()], [0]);
  assert.deepEqual([...gt.count(none).readValueSync()], [0]);
  for (const kind of ['min', 'max', 'mean', 'argmin', 'argmax', 'extent']) {
    throwsCode(() => gt[kind](column, {where: none}).readValueSync(), 'EMPTY_INPUT');
  }
  await assert.rejects(gt.add(gt.min(column, {where: none}), 1).evaluate(), e => e.code === 'EMPTY_INPUT');
  throwsCode(() => gt.sum(column, {where: E.fromArray([1, 0])}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.sum(column, {wher: mask}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.count(E.fromArray([1, 0], {size: 2})), 'INVALID_ARGUMENT');
});

test('lookup and searchSorted compare integer literals exactly, as equal does', () => {
  const u = gt.GPUTableEvaluator.fromArray(new Uint32Array([4294967294, 4294967295]));
  const s = gt.GPUTableEvaluator.fromArray(new Int32Array([16777216, 16777217, 16777218]));
  assert.deepEqual([...gt.equal(4294967295, u).readValueSync()], [0, 1]);
  assert.deepEqual([...gt.lookup(4294967295, u).readValueSync()], [1]);
  assert.deepEqual([...gt.lookup(16777217, s).readValueSync()], [1]);
  assert.deepEqual([...gt.lookup(5, s).readValueSync()], [-1]);
  assert.deepEqual([...gt.searchSorted(u, 4294967295).readValueSync()], [1]);
  assert.deepEqual([...gt.searchSorted(s, 16777217, {side: 'right'}).readValueSync()], [2]);
});

test('searchSorted finds each side exactly across types, NaN after every number', () => {
  const sorted = E.fromArray([-Infinity, 1, 2, 2, 16777216, 5e9, NaN, NaN]);
  const values = E.fromArray(new Int32Array([2, 16777217, 0, -2147483648, 3]));
  assert.deepEqual([...gt.searchSorted(sorted, values).readValueSync()], [2, 5, 1, 1, 4]);
  assert.deepEqual([...gt.searchSorted(sorted, values, {side: 'right'}).readValueSync()], [4, 5, 1, 1, 4]);
  const special = E.fromArray([NaN, Infinity, -0]);
  assert.deepEqual([...gt.searchSorted(sorted, special).readValueSync()], [6, 6, 1]);
  assert.deepEqual([...gt.searchSorted(sorted, special, {side: 'right'}).readValueSync()], [8, 6, 1]);
  const codes = E.fromArray(new Uint8Array([1, 3, 3, 200]));
  assert.deepEqual([...gt.searchSorted(codes, 2.5).readValueSync()], [1], 'a number literal');
  throwsCode(() => gt.searchSorted(sorted, values, {side: 'middle'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.searchSorted(sorted, values, {sid: 'left'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.searchSorted(E.fromArray([1, 2], {size: 2}), values), 'INVALID_ARGUMENT');
});
