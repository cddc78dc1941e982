// api.md "Order" through the built package on the CPU device: cumsum, cumprod, cummin and
// cummax against plain running loops (types, NaN, nulls, exclusive, reverse, chunks kept).
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {throwsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;

// The running fold of `values` (null: skipped) as api.md words it; `none` before any row.
function running(values, step, none, {exclusive = false, reverse = false} = {}) {
  const order = reverse ? [...values].reverse() : values;
  let acc = none;
  const out = order.map(v => {
    const before = acc;
    if (v !== null) acc = step(acc, v);
    return exclusive ? before : acc;
  });
  return reverse ? out.reverse() : out;
}
const skipNaN = pick => (acc, v) => (Number.isNaN(v) ? acc : Number.isNaN(acc) ? v : pick(acc, v));

test('cumulative ops match running loops across chunks, with exclusive and reverse', () => {
  const values = Array.from({length: 500}, (_, i) => (i % 13 === 4 ? NaN : ((i * 37) % 17) - 8));
  const x = E.fromArray(values, {chunks: [120, 0, 380]});
  const ints = Int32Array.from({length: 500}, (_, i) => ((i * 37) % 17) - 8);
  const xi = E.fromArray(ints, {chunks: 64});
  for (const settings of [{}, {exclusive: true}, {reverse: true}, {exclusive: true, reverse: true}]) {
    const sum = gt.cumsum(xi, settings);
    assert.equal(sum.type, 'sint32');
    assert.deepEqual(sum.chunks, xi.chunks, 'chunks kept');
    assert.deepEqual([...sum.readValueSync()], running([...ints], (a, v) => (a + v) | 0, 0, settings));
    const float = gt.cumsum(x, settings).readValueSync();
    running(values, (a, v) => a + v, 0, settings).forEach((e, i) => assert.ok(Object.is(float[i], e) || float[i] === e, `cumsum row ${i}`));
    assert.deepEqual([...gt.cummin(x, settings).readValueSync()], running(values, skipNaN(Math.min), NaN, settings));
    assert.deepEqual([...gt.cummax(x, settings).readValueSync()], running(values, skipNaN(Math.max), NaN, settings));
    assert.deepEqual([...gt.cummin(xi, settings).readValueSync()], running([...ints], Math.min, 2147483647, settings));
  }
  // Products: sum's types, integers wrap.
  const bytes = Uint8Array.from({length: 40}, (_, i) => (i % 5) + 1);
  assert.equal(gt.cumprod(E.fromArray(bytes)).type, 'uint32');
  assert.deepEqual([...gt.cumprod(E.fromArray(bytes)).readValueSync()], running([...bytes], (a, v) => Number((BigInt(a) * BigInt(v)) % 4294967296n), 1));
  // cummin keeps the type: a uint8 row before any number is 255.
  assert.deepEqual([...gt.cummin(E.fromArray(new Uint8Array([7, 3, 9])), {exclusive: true}).readValueSync()], [255, 7, 3]);
});

test('cumulative ops skip null rows, which stay null', async () => {
  const ipc = arrow.tableToIPC(arrow.makeTable({v: arrow.vectorFromArray([2, null, 5, null, 1], new arrow.Int16())}));
  const table = gt.GPUTable.fromArrowIPCSync(ipc);
  const v = table.getVector('v');
  const sum = await gt.cumsum(v).evaluate();
  assert.deepEqual([...sum.validity.readValueSync()], [1, 0, 1, 0, 1]);
  const got = sum.readValueSync();
  assert.deepEqual([got[0], got[2], got[4]], [2, 7, 8]);
  const max = gt.cummax(v, {exclusive: true}).readValueSync();
  assert.deepEqual([max[2], max[4]], [2, 5]);
  table.destroy();
});

test('bad cumulative arguments are INVALID_ARGUMENT', () => {
  const x = E.fromArray([1, 2]);
  throwsCode(() => gt.cumsum(x, {exclusive: 1}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.cumsum(x, {reversed: true}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.cumsum(E.fromConstant(1)), 'INVALID_ARGUMENT');
  throwsCode(() => gt.cummax('x'), 'INVALID_ARGUMENT');
});
