// api.md "Order" through the built package on the CPU device: argsort, sort and topK against
// a plain stable sort, and cumsum, cumprod, cummin and cummax against running loops (types,
// NaN, nulls, directions, several keys, exclusive, reverse, chunks kept).
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

test('bad cumulative arguments are INVALID_ARGUMENT; a constant is one row', async () => {
  const x = E.fromArray([1, 2]);
  throwsCode(() => gt.cumsum(x, {exclusive: 1}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.cumsum(x, {reversed: true}), 'INVALID_ARGUMENT');
  assert.deepEqual([...(await gt.cumsum(E.fromConstant(2)).evaluate()).readValueSync()], [2]);
  throwsCode(() => gt.cummax('x'), 'INVALID_ARGUMENT');
});

// The stable order of `rows` by `keys` ({values, descending}) as api.md words it.
function reference(keys, rows, nulls = 'last') {
  const rank = (v, descending) => (v === null ? null : Number.isNaN(v) ? Infinity : descending ? -v : v);
  const order = Array.from({length: rows}, (_, i) => i);
  return order.sort((i, j) => {
    for (const {values, descending} of keys) {
      const [a, b] = [values[i], values[j]];
      if (a === null || b === null) {
        if (a === b) continue;
        return (a === null) === (nulls === 'last') ? 1 : -1;
      }
      const [ra, rb] = [rank(a, descending), rank(b, descending)];
      if (Number.isNaN(a) && Number.isNaN(b)) continue;
      if (Number.isNaN(a) !== Number.isNaN(b)) return Number.isNaN(a) ? 1 : -1;
      if (ra !== rb) return ra < rb ? -1 : 1;
    }
    return 0;
  });
}

test('argsort, sort and topK follow api.md order across types, directions and keys', async () => {
  const n = 3000;
  const fare = Float32Array.from({length: n}, (_, i) => [NaN, -0, 0, Infinity, -Infinity][i % 17] ?? ((i * 7919) % 23) / 4 - 2);
  const vendor = Uint8Array.from({length: n}, (_, i) => (i * 31) % 4);
  const f = E.fromArray(fare, {chunks: [1000, 0, 2000]});
  const v = E.fromArray(vendor, {chunks: 700});
  const vals = [...fare];
  for (const descending of [false, true]) {
    assert.deepEqual([...gt.argsort(f, {descending}).readValueSync()], reference([{values: vals, descending}], n), `fare descending ${descending}`);
  }
  const two = gt.argsort([v, f], {descending: [true, false]});
  assert.equal(two.type, 'uint32');
  assert.deepEqual([...two.readValueSync()], reference([{values: [...vendor], descending: true}, {values: vals, descending: false}], n));
  const sorted = gt.sort(f).readValueSync();
  reference([{values: vals, descending: false}], n).forEach((i, r) => assert.ok(Object.is(sorted[r], fare[i]) || sorted[r] === fare[i], `sort row ${r}`));
  // sort takes argsort's options: one flag per key, of its one key (it refused [true]).
  assert.deepEqual([...gt.sort(E.fromArray([2, 3, 1]), {descending: [true]}).readValueSync()], [3, 2, 1]);
  const top = gt.topK(f, 5);
  const expected = reference([{values: vals, descending: true}], n).slice(0, 5);
  assert.deepEqual([...top.indices.readValueSync()], expected);
  assert.deepEqual([...top.values.readValueSync()], expected.map(i => fare[i]));
  assert.equal(gt.topK(f, 0).values.readValueSync().length, 0);
  assert.equal(gt.topK(f, n + 10).indices.readValueSync().length, n);
  assert.deepEqual([...gt.topK(E.fromArray([3, 1, 2]), 2, {descending: false}).values.readValueSync()], [1, 2]);
});

test('argsort puts nulls last or first, keeping their order', () => {
  const ipc = arrow.tableToIPC(arrow.makeTable({v: arrow.vectorFromArray([3, null, 1, null, 2], new arrow.Int32())}));
  const table = gt.GPUTable.fromArrowIPCSync(ipc);
  const v = table.getVector('v');
  assert.deepEqual([...gt.argsort(v).readValueSync()], [2, 4, 0, 1, 3]);
  assert.deepEqual([...gt.argsort(v, {nulls: 'first'}).readValueSync()], [1, 3, 2, 4, 0]);
  assert.deepEqual([...gt.argsort(v, {descending: true}).readValueSync()], [0, 4, 2, 1, 3]);
  table.destroy();
});

test('bad order arguments are INVALID_ARGUMENT', () => {
  const x = E.fromArray([1, 2, 3]);
  throwsCode(() => gt.argsort(x, {nulls: 'middle'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.argsort(x, {descending: 'yes'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.argsort([x, x], {descending: [true, false, true]}), 'INVALID_ARGUMENT');
  // One boolean, or one per key: an array of one for two keys is neither.
  throwsCode(() => gt.argsort([x, x], {descending: [true]}), 'INVALID_ARGUMENT');
  assert.deepEqual([...gt.argsort(x, {descending: [true]}).readValueSync()], [2, 1, 0]);
  throwsCode(() => gt.argsort(E.fromArray([1, 2, 3, 4], {size: 2})), 'INVALID_ARGUMENT');
  throwsCode(() => gt.argsort([]), 'INVALID_ARGUMENT');
  throwsCode(() => gt.sort(x, {descending: 1}), 'INVALID_ARGUMENT');
  for (const k of [-1, 1.5, NaN, '2']) throwsCode(() => gt.topK(x, k), 'INVALID_ARGUMENT');
  throwsCode(() => gt.topK(x, 2, {order: 'asc'}), 'INVALID_ARGUMENT');
});

test('a sort larger than allowedMem sorts runs that fit and merges them, within the budget', async () => {
  const n = 200_000;
  const fare = Float32Array.from({length: n}, (_, i) => [NaN, -0, 0, Infinity, -Infinity][i % 17] ?? ((i * 7919) % 1023) / 4 - 100);
  const vendor = Uint8Array.from({length: n}, (_, i) => (i * 31) % 4);
  // A quarter of the float column's bytes.
  const allowed = n;
  const device = await gt.createDevice({allowedMem: allowed});
  const f = E.fromArray(fare, {chunks: [90_000, 0, 110_000]});
  const v = E.fromArray(vendor, {chunks: 50_000});
  const order = gt.argsort([v, f], {descending: [false, true]});
  const text = order.explain(device);
  assert.match(text, /external sort t\d+ \(200000 rows.*\d+ runs of up to \d+ rows.*one merge pass of \d+ blocks/, text);
  assert.match(text, new RegExp(`allowedMem ${allowed} bytes: fits`), text);
  device.resetPeak();
  await order.evaluate(device);
  const sorted = gt.sort(f, {descending: true});
  await sorted.evaluate(device);
  const top = gt.topK(f, 10);
  await top.indices.evaluate(device);
  assert.ok(device.memory.peakBytes <= allowed, `peak ${device.memory.peakBytes} over ${allowed}`);
  const vals = [...fare];
  assert.deepEqual([...await order.readValue()], reference([{values: [...vendor], descending: false}, {values: vals, descending: true}], n));
  const want = reference([{values: vals, descending: true}], n);
  const got = await sorted.readValue();
  want.forEach((i, r) => assert.ok(Object.is(got[r], fare[i]) || got[r] === fare[i], `sort row ${r}`));
  assert.deepEqual([...await top.indices.readValue()], want.slice(0, 10));
  // Too small for a run of one row: refused before anything runs.
  const tiny = await gt.createDevice({allowedMem: 16});
  const kernels = tiny.stats.kernels;
  await assert.rejects(gt.sort(f).evaluate(tiny), {code: 'LIMIT_EXCEEDED'});
  assert.equal(tiny.stats.kernels, kernels);
});
