// api.md "Grouping and histograms" through the built package on the CPU device: groupBy
// against a Map loop (two keys, nulls, NaN, every aggregate), the result object's shape and
// types, and the bad arguments.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {rejectsCode, throwsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;

test('groupBy of two keys matches a Map loop for every aggregate', async () => {
  const n = 20000;
  const vendor = new Uint8Array(n).map((_, i) => (i * 7) % 5);
  const hour = new Int16Array(n).map((_, i) => ((i * 7919) % 24) - 3);
  const fare = new Float32Array(n).map((_, i) => ((i * 104729) % 4001) / 8 - 100);
  const fareValid = (i) => i % 17 !== 3;
  const table = arrow.tableFromArrays({
    vendor, hour,
    fare: arrow.vectorFromArray(Array.from(fare, (v, i) => (fareValid(i) ? v : null)), new arrow.Float32()),
  });
  const t = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(table));
  // Uneven chunks: 6000 rows each, the last 2000.
  const column = name => gt.rechunk(t.getVector(name), 6000);
  const grouped = gt.groupBy([column('vendor'), column('hour')], {
    trips: 'count',
    fares: ['count', column('fare')],
    total: ['sum', column('fare')],
    mean: ['mean', column('fare')],
    low: ['min', column('fare')],
    high: ['max', column('fare')],
    cheapest: ['argmin', column('fare')],
    first: ['first', column('fare')],
    last: ['last', column('fare')],
  });
  assert.equal(grouped.keys.length, 2);
  const roots = [...grouped.keys, grouped.trips, grouped.fares, grouped.total, grouped.mean,
    grouped.low, grouped.high, grouped.cheapest, grouped.first, grouped.last];
  await gt.cleanEvaluate(null, roots);
  assert.deepEqual(roots.slice(2).map(r => r.type),
    ['uint32', 'uint32', 'float32', 'float32', 'float32', 'float32', 'sint32', 'sint32', 'sint32']);

  const loop = new Map();
  for (let i = 0; i < n; i++) {
    const key = vendor[i] * 100 + hour[i];
    let g = loop.get(key);
    if (!g) loop.set(key, g = {vendor: vendor[i], hour: hour[i], trips: 0, fares: 0, total: 0, low: Infinity, high: -Infinity, cheapest: -1, first: -1, last: -1});
    g.trips++;
    if (!fareValid(i)) continue;
    const v = fare[i];
    g.fares++;
    g.total += v;
    if (v < g.low) { g.low = v; g.cheapest = i; }
    g.high = Math.max(g.high, v);
    if (g.first < 0) g.first = i;
    g.last = i;
  }
  const groups = [...loop.values()].sort((a, b) => a.vendor - b.vendor || a.hour - b.hour);
  const read = r => [...r.readValueSync()];
  assert.deepEqual(read(grouped.keys[0]), groups.map(g => g.vendor));
  assert.deepEqual(read(grouped.keys[1]), groups.map(g => g.hour));
  for (const name of ['trips', 'fares', 'low', 'high', 'cheapest', 'first', 'last']) {
    assert.deepEqual(read(grouped[name]), groups.map(g => g[name]), name);
  }
  // Sums of eighths: exact in float32 at these sizes.
  assert.deepEqual(read(grouped.total), groups.map(g => Math.fround(g.total)));
  read(grouped.mean).forEach((m, k) => {
    const expected = groups[k].total / groups[k].fares;
    assert.ok(Math.abs(m - expected) <= 1e-6 * Math.abs(expected) + 1e-6, `mean ${k}: ${m} vs ${expected}`);
  });
});

test('groupBy puts NaN, then null keys last and gives null where a group has no value', async () => {
  const table = arrow.tableFromArrays({
    k: arrow.vectorFromArray([2, null, NaN, -0, 0, NaN, null, 2], new arrow.Float32()),
    v: arrow.vectorFromArray([1, 5, null, 3, 4, null, 6, 7], new arrow.Int32()),
  });
  const t = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(table));
  const {keys: [k], n, sum, high, first} = gt.groupBy(t.getVector('k'), {
    n: 'count', sum: ['sum', t.getVector('v')], high: ['max', t.getVector('v')], first: ['first', t.getVector('v')],
  });
  await gt.cleanEvaluate(null, [k, n, sum, high, first]);
  const keys = [...k.readValueSync()];
  assert.ok(Object.is(keys[0], 0) && keys[1] === 2 && Number.isNaN(keys[2]) && keys.length === 4);
  assert.deepEqual([...n.readValueSync()], [2, 2, 2, 2]);
  assert.deepEqual([...sum.readValueSync()], [7, 8, 0, 11]);
  assert.equal(sum.type, 'sint32');
  // The NaN group's values are all null: no maximum, no first row.
  const [highs, firsts] = [await high.evaluate(), await first.evaluate()];
  assert.deepEqual([...highs.validity.readValueSync()], [1, 1, 0, 1]);
  assert.deepEqual([...firsts.validity.readValueSync()], [1, 1, 0, 1]);
  assert.deepEqual([...highs.readValueSync()].filter((_, g) => g !== 2), [4, 7, 6]);
  assert.deepEqual([...firsts.readValueSync()].filter((_, g) => g !== 2), [3, 0, 1]);
});

test('bad groupBy arguments are INVALID_ARGUMENT; a constant key is one group', async () => {
  const x = E.fromArray([1, 2, 3]);
  throwsCode(() => gt.groupBy(x, {m: ['median', x]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.groupBy(x, {m: 'sum'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.groupBy(x, {m: ['sum']}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.groupBy(x, {keys: 'count'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.groupBy(x, null), 'INVALID_ARGUMENT');
  throwsCode(() => gt.groupBy([], {n: 'count'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.groupBy(E.fromArray([1, 2, 3, 4], {size: 2}), {n: 'count'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.groupBy(x, {s: ['sum', E.fromArray([1, 2])]}), 'INVALID_ARGUMENT');
  // A constant key is one row: one group.
  assert.deepEqual([...await gt.groupBy(3, {n: 'count'}).n.readValue()], [1]);
});

test('table.groupBy(names).rollup resolves to a table of the groups on the device', async () => {
  const trips = arrow.tableFromArrays({
    vendor: Uint8Array.from([2, 1, 2, 1, 2, 3]),
    fare: arrow.vectorFromArray([12, 3, 30, null, 6, 9], new arrow.Float32()),
  });
  const t = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(trips));
  const byVendor = await t.groupBy('vendor').rollup({trips: 'count', fares: ['count', 'fare'], mean: ['mean', 'fare'], top: ['argmax', 'fare']});
  assert.deepEqual(byVendor.schema.names, ['vendor', 'trips', 'fares', 'mean', 'top']);
  assert.equal(byVendor.numRows, 3);
  assert.deepEqual([...byVendor.getVector('vendor').readValueSync()], [1, 2, 3]);
  assert.deepEqual([...byVendor.getVector('trips').readValueSync()], [2, 3, 1]);
  assert.deepEqual([...byVendor.getVector('fares').readValueSync()], [1, 3, 1]);
  assert.deepEqual([...byVendor.getVector('mean').readValueSync()], [3, 16, 9]);
  assert.deepEqual([...byVendor.getVector('top').readValueSync()], [1, 2, 5]);
  // The input table is left as it was; bad rollups are INVALID_ARGUMENT.
  assert.equal(t.numRows, 6);
  await rejectsCode(t.groupBy('nope').rollup({n: 'count'}), 'INVALID_ARGUMENT');
  await rejectsCode(t.groupBy('vendor').rollup({n: ['sum', 'nope']}), 'INVALID_ARGUMENT');
  await rejectsCode(t.groupBy('vendor').rollup({vendor: 'count'}), 'INVALID_ARGUMENT');
  await rejectsCode(t.groupBy([]).rollup({n: 'count'}), 'INVALID_ARGUMENT');
  await rejectsCode(t.groupBy('vendor').rollup({n: ['median', 'fare']}), 'INVALID_ARGUMENT');
});

// A rollup's max of a Timestamp column was written back as Int64 (its field was found by the
// aggregate's name), and an aggregate named as another column took that column's field.
test('a rollup keeps the field of the column min and max take, and only theirs', async () => {
  const trips = arrow.makeTable({
    vendor: Uint8Array.from([2, 1, 2]),
    at: arrow.vectorFromArray([1000, 2000, -5], new arrow.TimestampMillisecond()),
    day: arrow.vectorFromArray([new Date(Date.UTC(2026, 0, 2)), null, new Date(Date.UTC(2026, 0, 1))], new arrow.DateDay()),
  });
  const t = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(trips), {int64: 'int32'});
  const rolled = await t.groupBy('vendor').rollup({latest: ['max', 'at'], first: ['min', 'day'], day: ['count', 'at'], at: ['argmax', 'at']});
  const back = arrow.tableFromIPC(rolled.toArrowIPC());
  assert.deepEqual(back.schema.fields.map(f => `${f.name}: ${f.type}`),
    ['vendor: Uint8', 'latest: Timestamp<MILLISECOND>', 'first: Date32<DAY>', 'day: Uint32', 'at: Int32']);
  assert.deepEqual([...back.getChild('latest').toArray()].map(Number), [2000, 1000]);
  assert.deepEqual(back.getChild('first').toArray().map(d => (d === null ? null : Number(d))), [null, Date.UTC(2026, 0, 1)]);
  assert.deepEqual([...back.getChild('day').toArray()], [1, 2]);
  assert.deepEqual([...back.getChild('at').toArray()], [1, 0]);
  rolled.destroy();
  t.destroy();
});

test('lookup finds the lowest equal row of the table keys, or -1, against a Map loop', async () => {
  const n = 30000;
  const m = 5000;
  const table = new Int32Array(m).map((_, i) => ((i * 7919) % 6000) - 500);
  const keys = new Float32Array(n).map((_, i) => ((i * 104729) % 7000) - 600 + (i % 13 === 0 ? 0.5 : 0));
  keys[5] = NaN;
  const first = new Map();
  table.forEach((k, i) => { if (!first.has(k)) first.set(k, i); });
  const rows = gt.lookup(E.fromArray(keys, {chunks: [10000, 20000]}), E.fromArray(table));
  assert.equal(rows.type, 'sint32');
  assert.deepEqual([...await rows.readValue()], Array.from(keys, k => first.get(k) ?? -1));
  assert.deepEqual([...await gt.lookup(E.fromArray([1, 3]), 3).readValue()], [-1, 0]);
  throwsCode(() => gt.lookup(E.fromArray([1, 2, 3, 4], {size: 2}), E.fromArray([1])), 'INVALID_ARGUMENT');
});

test('groupBy and valueCounts of a column several times allowedMem combine per-chunk partial groups within it', async () => {
  const n = 600_000;
  const chunks = [250_000, 0, 100_000, 250_000];
  const zone = Int32Array.from({length: n}, (_, i) => ((i * 7919) % 263) - 40);
  const fare = Float32Array.from({length: n}, (_, i) => ((i * 104729) % 4001) / 8 - 100);
  const allowedMem = 1_000_000;
  const device = await gt.createDevice({type: 'cpu', allowedMem});
  const keys = E.fromArray(zone, {chunks});
  const values = E.fromArray(fare, {chunks});
  const grouped = gt.groupBy(keys, {trips: 'count', total: ['sum', values], low: ['min', values], cheapest: ['argmin', values], last: ['last', values]});
  const counted = gt.valueCounts(keys);
  assert.match(grouped.total.explain(device), /group-by in parts/);
  await gt.cleanEvaluate(device, {grouped, counted});
  assert.ok(device.memory.peakBytes <= allowedMem, `peak ${device.memory.peakBytes} over ${allowedMem}`);
  assert.ok(zone.byteLength > 2 * allowedMem);

  const groups = new Map();
  for (let i = 0; i < n; i++) {
    const g = groups.get(zone[i]) ?? {trips: 0, total: 0, low: Infinity, cheapest: -1, last: -1};
    g.trips++;
    g.total += fare[i];
    if (fare[i] < g.low) [g.low, g.cheapest] = [fare[i], i];
    g.last = i;
    groups.set(zone[i], g);
  }
  const order = [...groups.keys()].sort((a, b) => a - b);
  assert.deepEqual([...await grouped.keys[0].readValue()], order);
  assert.deepEqual([...await counted.values.readValue()], order);
  assert.deepEqual([...await grouped.trips.readValue()], order.map(k => groups.get(k).trips));
  assert.deepEqual([...await counted.counts.readValue()], order.map(k => groups.get(k).trips));
  assert.deepEqual([...await grouped.low.readValue()], order.map(k => groups.get(k).low));
  assert.deepEqual([...await grouped.cheapest.readValue()], order.map(k => groups.get(k).cheapest));
  assert.deepEqual([...await grouped.last.readValue()], order.map(k => groups.get(k).last));
  const totals = await grouped.total.readValue();
  order.forEach((k, i) => assert.ok(Math.abs(totals[i] - groups.get(k).total) <= 1e-4 * Math.max(1, Math.abs(groups.get(k).total)), `zone ${k}`));
  for (const e of [...grouped.keys, grouped.trips, grouped.total, grouped.low, grouped.cheapest, grouped.last, counted.values, counted.counts]) e.destroy();

  device.destroy();
});

test("a table's groupBy().rollup larger than allowedMem groups its batches in parts without copying the column", async () => {
  // Four record batches, nulls in the values: the key column is a view of the batches,
  // and a part reads only its batch's rows of it.
  const batchRows = 150_000;
  const batches = [];
  const all = {zone: [], fare: []};
  for (let b = 0; b < 4; b++) {
    const zone = Int32Array.from({length: batchRows}, (_, i) => (((b * batchRows + i) * 7919) % 263) - 40);
    const fare = Array.from({length: batchRows}, (_, i) => (i % 11 === 3 ? null : (((b * batchRows + i) * 104729) % 4001) / 8 - 100));
    for (let i = 0; i < batchRows; i++) [all.zone[b * batchRows + i], all.fare[b * batchRows + i]] = [zone[i], fare[i]];
    batches.push(new arrow.RecordBatch({
      zone: arrow.makeData({type: new arrow.Int32(), data: zone}),
      fare: arrow.vectorFromArray(fare, new arrow.Float32()).data[0],
    }));
  }
  const bytes = arrow.tableToIPC(new arrow.Table(batches));
  const allowedMem = 1_000_000;
  const device = await gt.createDevice({type: 'cpu', allowedMem});
  const table = await gt.GPUTable.fromArrowIPC(bytes, {device});
  assert.equal(table.batches.length, 4);
  const grouped = await table.groupBy(['zone']).rollup({trips: 'count', total: ['sum', 'fare'], fares: ['count', 'fare']});
  assert.ok(device.memory.peakBytes <= allowedMem, `peak ${device.memory.peakBytes} over ${allowedMem}`);
  assert.ok(4 * batchRows * 4 > 2 * allowedMem, 'the key column is over twice the budget');

  const groups = new Map();
  all.zone.forEach((k, i) => {
    const g = groups.get(k) ?? {trips: 0, total: 0, fares: 0};
    g.trips++;
    if (all.fare[i] !== null) [g.total, g.fares] = [g.total + Math.fround(all.fare[i]), g.fares + 1];
    groups.set(k, g);
  });
  const order = [...groups.keys()].sort((a, b) => a - b);
  const read = async name => [...await grouped.getVector(name).readValue()];
  assert.deepEqual(await read('zone'), order);
  assert.deepEqual(await read('trips'), order.map(k => groups.get(k).trips));
  assert.deepEqual(await read('fares'), order.map(k => groups.get(k).fares));
  const totals = await read('total');
  order.forEach((k, i) => assert.ok(Math.abs(totals[i] - groups.get(k).total) <= 1e-4 * Math.max(1, Math.abs(groups.get(k).total)), `zone ${k}`));
  grouped.destroy();
  table.destroy();
  device.destroy();
});

test('a groupBy of more distinct keys than allowedMem combines at once is made a key range at a time', async () => {
  // A user's trial: 20,000 distinct keys in batches of 5,000 rows under 256 kB were
  // LIMIT_EXCEEDED. Integer and text keys, shuffled so each key range meets every batch.
  const rows = 20_000;
  const ids = Int32Array.from({length: rows}, (_, i) => ((i * 7919) % rows) - 5_000);
  const names = Array.from(ids, id => `k${id}`);
  const fares = Float32Array.from({length: rows}, (_, i) => i % 97);
  const batches = [];
  for (let start = 0; start < rows; start += 5_000) {
    const part = {id: ids.subarray(start, start + 5_000), name: names.slice(start, start + 5_000), fare: fares.subarray(start, start + 5_000)};
    batches.push(arrow.makeTable({id: part.id, name: arrow.vectorFromArray(part.name, new arrow.Utf8()), fare: part.fare}).batches[0]);
  }
  const bytes = arrow.tableToIPC(new arrow.Table(batches));
  const allowedMem = 256 * 1024;
  const device = await gt.createDevice({type: 'cpu', allowedMem});
  const table = await gt.GPUTable.fromArrowIPC(bytes, {device});
  const byId = await table.groupBy(['id']).rollup({trips: 'count', total: ['sum', 'fare']});
  assert.ok(device.memory.peakBytes <= allowedMem, `peak ${device.memory.peakBytes} over ${allowedMem}`);
  const order = [...ids].sort((a, b) => a - b);
  const fareOf = new Map([...ids].map((id, i) => [id, fares[i]]));
  assert.deepEqual([...await byId.getVector('id').readValue()], order);
  assert.deepEqual([...await byId.getVector('trips').readValue()], order.map(() => 1));
  assert.deepEqual([...await byId.getVector('total').readValue()], order.map(id => fareOf.get(id)));
  const byName = await table.groupBy(['name']).rollup({trips: 'count'});
  assert.ok(device.memory.peakBytes <= allowedMem, `peak ${device.memory.peakBytes} over ${allowedMem}`);
  const back = arrow.tableFromIPC(await byName.toArrowIPC());
  assert.deepEqual([...back.getChild('name')], [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  assert.deepEqual([...back.getChild('trips')], names.map(() => 1));
  for (const t of [byId, byName, table]) t.destroy();
  device.destroy();
});
