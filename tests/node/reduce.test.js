// api.md's reductions through the built package on the CPU device: every type against a
// plain reference, splitEvery, NaN, ties, null slots of a table's column, empty input, and
// the constant row a reduction gives.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {REDUCTIONS, firstDifference, reduceReference, reductionSample} from '../browser/reduce-reference.js';

const E = gt.GPUTableEvaluator;

async function rejectsWith(promiseOrFn, code) {
  await assert.rejects(async () => (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn),
    error => error.name === 'GpuTableError' && error.code === code, `expected ${code}`);
}

const TYPES = [Uint8Array, Int8Array, Uint16Array, Int16Array, Uint32Array, Int32Array, Float32Array];

test('every reduction of every type matches the reference, for splitEvery 2, 3 and 4', async () => {
  for (const Typed of TYPES) {
    const values = reductionSample(Typed, 3 * 26);
    const x = E.fromArray(values, {size: 3, chunks: [5, 0, 17, 1, 3]});
    for (const kind of REDUCTIONS) {
      const want = reduceReference(kind, x.type, values, 3);
      for (const splitEvery of [2, 3, 4]) {
        const r = gt[kind](x, {splitEvery});
        const got = await r.readValue();
        const problem = firstDifference(got, want, kind === 'mean' ? 1e-6 : 0);
        assert.equal(problem, null, `${kind} of ${x.type}, splitEvery ${splitEvery}: ${problem}`);
        if (kind === 'extent') {
          assert.deepEqual([r.length, r.size], [3, 2]);
        } else {
          assert.deepEqual([r.length, r.size, r.isConstant], [1, 3, true], kind);
        }
      }
    }
  }
});

test('reduction types, ties, NaN lanes, wrapping and broadcasting', async () => {
  assert.equal(gt.sum(E.fromArray(new Int8Array([1]))).type, 'sint32');
  assert.equal(gt.sum(E.fromArray(new Uint16Array([1]))).type, 'uint32');
  assert.equal(gt.sum(E.fromArray([1.5])).type, 'float32');
  assert.equal(gt.min(E.fromArray(new Uint8Array([1]))).type, 'uint8');
  assert.equal(gt.mean(E.fromArray(new Int32Array([1]))).type, 'float32');
  assert.equal(gt.argmax(E.fromArray(new Uint8Array([1]))).type, 'sint32');
  const ties = E.fromArray([1, 5, 0, 5, 5, 0, 0], {chunks: [2, 1, 1, 3]});
  assert.deepEqual([...await gt.argmax(ties, {splitEvery: 2}).readValue()], [1]);
  assert.deepEqual([...await gt.argmin(ties, {splitEvery: 3}).readValue()], [2]);
  const nan = E.fromArray([NaN, 1, NaN, 2], {size: 2, chunks: [1, 1]});
  assert.deepEqual([...await gt.min(nan).readValue()], [NaN, 1]);
  assert.deepEqual([...await gt.argmax(nan).readValue()], [-1, 1]);
  assert.deepEqual([...await gt.sum(nan).readValue()], [NaN, 3]);
  assert.deepEqual([...await gt.sum(E.fromArray(new Int32Array([2 ** 31 - 1, 1, 5]), {chunks: [1, 2]})).readValue()], [-(2 ** 31) + 5]);
  const x = E.fromArray([1, 2, 3, 6], {chunks: [3, 1]});
  const centered = gt.subtract(x, gt.mean(x));
  assert.deepEqual([...await centered.readValue()], [-2, -1, 0, 3]);
  assert.deepEqual(centered.chunks, [3, 1]);
});

test('no rows: sum is 0, the others EMPTY_INPUT; splitEvery is checked', async () => {
  const empty = E.fromArray(new Int16Array(0), {size: 2, chunks: [0, 0]});
  assert.deepEqual([...await gt.sum(empty).readValue()], [0, 0]);
  for (const kind of REDUCTIONS.filter(k => k !== 'sum')) {
    await rejectsWith(gt[kind](empty).evaluate(), 'EMPTY_INPUT');
  }
  for (const splitEvery of [1, 2.5, 'four']) {
    await rejectsWith(() => gt.sum(E.fromArray([1]), {splitEvery}), 'INVALID_ARGUMENT');
  }
  await rejectsWith(() => gt.sum(E.fromArray([1]), {splitevery: 2}), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.mean(E.fromArray([1]), {axis: 0}), 'INVALID_ARGUMENT');
});

test('a column of nulls alone: sum is 0, the others EMPTY_INPUT, as a where keeping no row', async () => {
  for (const type of [new arrow.Int32(), new arrow.Float32()]) {
    const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table({x: arrow.vectorFromArray([null, null, null], type)})));
    const x = table.getVector('x');
    assert.deepEqual([...await gt.sum(x).readValue()], [0]);
    for (const kind of REDUCTIONS.filter(k => k !== 'sum')) {
      await rejectsWith(gt[kind](x).evaluate(), 'EMPTY_INPUT');
      await rejectsWith(gt[kind](x, {where: 1}).evaluate(), 'EMPTY_INPUT');
    }
    table.destroy();
  }
});

test('null slots of a table column are skipped by every reduction', async () => {
  const column = arrow.vectorFromArray([4, null, -2, 7, null, 7], new arrow.Int32());
  const whole = new arrow.Table({x: column});
  const batches = [...whole.slice(0, 2).batches, ...whole.slice(2).batches];
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table(batches)));
  const x = table.getVector('x');
  assert.ok(x.validity, 'the column has validity');
  const values = [4, 0, -2, 7, 0, 7];
  const valid = r => r !== 1 && r !== 4;
  for (const kind of REDUCTIONS) {
    const want = reduceReference(kind, 'sint32', values, 1, valid);
    const problem = firstDifference(await gt[kind](x).readValue(), want, 1e-6);
    assert.equal(problem, null, `${kind}: ${problem}`);
  }
  table.destroy();
});

test('explain shows a partial per chunk and the tree of combine rounds', () => {
  const x = E.fromArray(new Float32Array(64), {chunks: 4});
  const text = gt.sum(x, {splitEvery: 4}).explain();
  assert.match(text, /runs as 16 chunk tasks/);
  assert.match(text, /tree of 2 combine rounds of at most 4 partials \(16 -> 4 -> 1\)/);
});

test('a table column with no batches has no rows: sum 0, the others EMPTY_INPUT', async () => {
  const schema = new arrow.Schema([new arrow.Field('x', new arrow.Float32(), true)]);
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table(schema)));
  const x = table.getVector('x');
  assert.equal(table.batches.length, 0);
  assert.deepEqual([...await gt.sum(x).readValue()], [0]);
  assert.deepEqual([...await gt.add(x, 1).readValue()], []);
  await rejectsWith(gt.argmax(x).evaluate(), 'EMPTY_INPUT');
  assert.equal(table.packBatches(), table, 'nothing to pack');
  table.destroy();
});

test('a column of 20,000 one-row chunks reduces, maps and explains (chunk lookups are not scans)', async () => {
  const x = E.fromArray(new Float32Array(20_000).fill(2), {chunks: 1});
  assert.equal(x.chunks.length, 20_000);
  assert.deepEqual([...await gt.sum(x).readValue()], [40_000]);
  const y = await gt.add(x, 1).evaluate();
  assert.equal(y.chunks.length, 20_000);
  assert.deepEqual([...await y.readValue(19_998, 20_000)], [3, 3]);
  assert.match(gt.sum(x).explain(), /runs as 20000 chunk tasks/);
  x.destroy();
});
