// api.md "Joins" and `table.join` through the built package on the CPU device: join against
// a double loop (many-to-many, NaN, nulls, inner and left), a capacity too small, and a
// table join's names, nulls and pairs past the default capacity.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {rejectsCode, throwsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;

// `join`'s pairs by a double loop (null keys: undefined).
function pairsOf(leftKeys, rightKeys, how) {
  const left = [];
  const right = [];
  leftKeys.forEach((k, l) => {
    const before = left.length;
    rightKeys.forEach((r, i) => {
      if (k !== undefined && k === r) { left.push(l); right.push(i); }
    });
    if (how === 'left' && left.length === before) { left.push(l); right.push(-1); }
  });
  return {left, right};
}

test('join pairs equal keys by left row, then right row, as a double loop does', async () => {
  const n = 3000;
  const m = 800;
  const leftKeys = Array.from({length: n}, (_, i) => ((i * 7919) % 450) / 2);
  const rightKeys = Array.from({length: m}, (_, i) => ((i * 104729) % 300) / 2);
  leftKeys[4] = NaN;
  rightKeys[9] = NaN;
  leftKeys[6] = -0;
  const valid = (i) => i % 13 !== 5;
  const left = E.fromArray(Float32Array.from(leftKeys), {chunks: [1000, 2000]});
  const rightValues = arrow.vectorFromArray(rightKeys.map((k, i) => (valid(i) ? k : null)), new arrow.Float32());
  const right = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({k: rightValues}))).getVector('k');
  for (const how of ['inner', 'left']) {
    const pairs = gt.join(left, right, {how});
    assert.equal(pairs.left.type, 'sint32');
    const expected = pairsOf(leftKeys, rightKeys.map((k, i) => (valid(i) ? k : undefined)), how);
    assert.deepEqual([...await pairs.left.readValue()], expected.left, how);
    assert.deepEqual([...await pairs.right.readValue()], expected.right, how);
  }
});

test('a join needing more rows than its capacity fails, naming them', async () => {
  const ones = E.fromArray(new Uint32Array(40).fill(1));
  const {left} = gt.join(ones, ones, {capacity: 1000});
  await rejectsCode(left.evaluate(), 'LIMIT_EXCEEDED');
  const exact = gt.join(ones, ones, {capacity: 1600});
  assert.equal((await exact.right.readValue()).length, 1600);
  throwsCode(() => gt.join(ones, ones, {how: 'outer'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.join(ones, ones, {capacity: -1}), 'INVALID_ARGUMENT');
  assert.equal((await gt.join(ones, 3).left.evaluate()).length, 0);
  throwsCode(() => gt.join(E.fromArray([1, 2, 3, 4], {size: 2}), ones), 'INVALID_ARGUMENT');
});

test('table.join keeps both tables\' columns, nulls for unmatched rows, names by suffix', async () => {
  const trips = arrow.tableFromArrays({
    zone: Int32Array.from([3, 1, 7, 3, 1]),
    fare: Float32Array.from([10, 20, 30, 40, 50]),
  });
  const zones = arrow.tableFromArrays({
    id: Uint32Array.from([1, 3, 3]),
    fare: Float32Array.from([0.5, 1.5, 2.5]),
    area: Float32Array.from([4, 8, 9]),
  });
  const t = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(trips));
  const z = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(zones));
  const joined = await t.join(z, {on: ['zone', 'id'], how: 'left'});
  assert.deepEqual(joined.schema.names, ['zone', 'fare', 'id', 'fare_right', 'area']);
  const back = arrow.tableFromIPC(await joined.toArrowIPC());
  assert.deepEqual([...back.getChild('zone')], [3, 3, 1, 7, 3, 3, 1]);
  assert.deepEqual([...back.getChild('fare')], [10, 10, 20, 30, 40, 40, 50]);
  assert.deepEqual([...back.getChild('area')], [8, 9, 4, null, 8, 9, 4]);
  assert.deepEqual([...back.getChild('fare_right')], [1.5, 2.5, 0.5, null, 1.5, 2.5, 0.5]);
  const inner = await t.join(z.select('id', 'area'), {on: ['zone', 'id'], suffix: '_z'});
  assert.equal(inner.numRows, 6);
  // The same key name: the right key is dropped.
  const renamed = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({zone: Uint32Array.from([7]), area: Float32Array.from([2])})));
  const byName = await t.join(renamed, {on: 'zone'});
  assert.deepEqual(byName.schema.names, ['zone', 'fare', 'area']);
  assert.deepEqual([...byName.getVector('fare').readValueSync()], [30]);
  assert.equal(t.numRows, 5);
  await rejectsCode(t.join(z, {on: 'nope'}), 'INVALID_ARGUMENT');
  await rejectsCode(t.join(z, {on: ['zone', 'id'], how: 'outer'}), 'INVALID_ARGUMENT');
  await rejectsCode(t.join(trips, {on: 'zone'}), 'INVALID_ARGUMENT');
});

test('table.join makes its pairs again with their number where they are more than its keys\' rows', async () => {
  // 2,100 x 2,100 equal keys: 4,410,000 pairs, more than a join allocates unless told.
  const n = 2100;
  const side = (offset) => gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({
    k: new Uint8Array(n).fill(1),
    v: Float32Array.from({length: n}, (_, i) => i + offset),
  })));
  await rejectsCode(gt.join(side(0).getVector('k'), side(0).getVector('k')).left.evaluate(), 'LIMIT_EXCEEDED');
  const joined = await side(0).join(side(0.5), {on: 'k'});
  assert.equal(joined.numRows, n * n);
  const v = joined.getVector('v').readValueSync();
  const w = joined.getVector('v_right').readValueSync();
  for (const p of [0, 1, n, n * n - 1, 1234567]) {
    assert.equal(v[p], Math.floor(p / n), `left of pair ${p}`);
    assert.equal(w[p], (p % n) + 0.5, `right of pair ${p}`);
  }
});

test("a table join's right columns keep their Arrow types, renamed or not", async () => {
  const left = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(arrow.tableFromArrays({
    id: Int32Array.from([1, 2, 3]),
    flag: arrow.vectorFromArray([true, false, true], new arrow.Bool()),
  })));
  const right = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(arrow.tableFromArrays({
    id: Int32Array.from([3, 1]),
    flag: arrow.vectorFromArray([false, true], new arrow.Bool()),
    ok: arrow.vectorFromArray([true, null], new arrow.Bool()),
    name: arrow.vectorFromArray(['c', 'a'], new arrow.Utf8()),
  })));
  for (const how of ['inner', 'left']) {
    const joined = await left.join(right, {on: 'id', how});
    const back = arrow.tableFromIPC(await joined.toArrowIPC());
    const types = Object.fromEntries(back.schema.fields.map(f => [f.name, String(f.type)]));
    assert.deepEqual(types, {id: 'Int32', flag: 'Bool', flag_right: 'Bool', ok: 'Bool', name: 'Dictionary<Int32, Utf8>'}, how);
    const rows = back.toArray().map(r => r.toJSON());
    const expected = how === 'inner'
      ? [{id: 1, flag: true, flag_right: true, ok: null, name: 'a'}, {id: 3, flag: true, flag_right: false, ok: true, name: 'c'}]
      : [{id: 1, flag: true, flag_right: true, ok: null, name: 'a'}, {id: 2, flag: false, flag_right: null, ok: null, name: null}, {id: 3, flag: true, flag_right: false, ok: true, name: 'c'}];
    assert.deepEqual(rows, expected, how);
    joined.destroy();
  }
  left.destroy();
  right.destroy();
});

test("a table join under allowedMem holds no more than it allows", async () => {
  // Regression: 30,000 trips x 3,000 zones at 1.15 MB held 1.25 MB: the pairs, made by an
  // evaluation before the columns', were held outside the columns' budget. Now they are
  // made again among the columns' work, and the columns the budget cannot hold together are
  // read back as they are computed.
  const n = 30_000;
  const m = 3_000;
  const trips = arrow.tableFromArrays({
    zone: Int32Array.from({length: n}, (_, i) => (i * 7919) % 4000),
    fare: Float32Array.from({length: n}, (_, i) => i / 4),
  });
  const zones = arrow.tableFromArrays({
    zone: Int32Array.from({length: m}, (_, i) => i),
    area: Float32Array.from({length: m}, (_, i) => i * 2),
  });
  const joinOn = async (device) => {
    const t = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(trips), {device});
    const z = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(zones), {device});
    const before = device.memory.liveBytes;
    device.resetPeak();
    const joined = await t.join(z, {on: 'zone', how: 'left'});
    return {joined, held: device.memory.peakBytes - before};
  };
  const allowedMem = 1_150_000;
  const {joined, held} = await joinOn(await gt.createDevice({type: 'cpu', allowedMem}));
  assert.ok(held <= allowedMem, `held ${held} over allowedMem ${allowedMem}`);
  const {joined: unbounded} = await joinOn(await gt.createDevice({type: 'cpu'}));
  assert.equal(joined.numRows, n);
  for (const name of ['zone', 'fare', 'area']) {
    assert.deepEqual(joined.getVector(name).readValueSync(), unbounded.getVector(name).readValueSync(), name);
  }
  const area = arrow.tableFromIPC(await joined.toArrowIPC()).getChild('area');
  for (const row of [0, 1, 2, 4321, n - 1]) {
    const zone = (row * 7919) % 4000;
    assert.equal(area.get(row), zone < m ? zone * 2 : null, `row ${row}`);
  }
});

// A join with an empty side had its length before evaluation; every join's length is
// decided on the device (null until evaluated), as a filter's is.
test('a table join larger than allowedMem is joined a range of rows at a time', async () => {
  // Regression: 200,000 trips joined to 260 zones under 1 MB was LIMIT_EXCEEDED (the pairs'
  // pass needs about 1.8 MB); and every table join left its pairs' count and null flags on
  // the device until the collector ran (28 kB a part here).
  const n = 200_000;
  const zoneOf = i => (i * 7919) % 300;
  const trips = arrow.tableFromArrays({zone: Int32Array.from({length: n}, (_, i) => zoneOf(i)), fare: Float32Array.from({length: n}, (_, i) => i / 4)});
  // Zone 5 twice (many-to-many), 260-299 missing.
  const rightZones = [...Array.from({length: 260}, (_, i) => i), 5];
  const names = rightZones.map((z, j) => `zone ${z}${j === 260 ? ' again' : ''}`);
  const zones = arrow.tableFromArrays({
    zone: Int32Array.from(rightZones),
    area: Float32Array.from(rightZones, (_, j) => j * 2),
    name: arrow.vectorFromArray(names, new arrow.Utf8()),
  });
  const rightRows = new Map();
  rightZones.forEach((z, j) => rightRows.set(z, [...(rightRows.get(z) ?? []), j]));
  const allowedMem = 1_000_000;
  for (const how of ['inner', 'left']) {
    const device = await gt.createDevice({type: 'cpu', allowedMem});
    const t = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(trips), {device});
    const z = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(zones), {device});
    const before = device.memory.liveBytes;
    device.resetPeak();
    const joined = await t.join(z, {on: 'zone', how});
    assert.ok(device.memory.peakBytes - before <= allowedMem, `${how}: held ${device.memory.peakBytes - before} over ${allowedMem}`);
    assert.ok(joined.batches.length > 1, `${how}: joined in ${joined.batches.length} part`);
    assert.ok(joined.batches.every(b => b.numRows > 0), `${how}: a range's empty batch kept`);
    const [lefts, rights] = [[], []];
    for (let i = 0; i < n; i++) {
      const found = rightRows.get(zoneOf(i)) ?? (how === 'left' ? [null] : []);
      for (const j of found) { lefts.push(i); rights.push(j); }
    }
    const back = arrow.tableFromIPC(await joined.toArrowIPC());
    assert.equal(back.numRows, lefts.length, how);
    const [fare, area, name] = ['fare', 'area', 'name'].map(c => back.getChild(c).toArray());
    const nameOf = back.getChild('name');
    const wrong = lefts.findIndex((i, p) => fare[p] !== i / 4 || (rights[p] === null
      ? nameOf.get(p) !== null || back.getChild('area').get(p) !== null
      : area[p] !== rights[p] * 2 || nameOf.get(p) !== names[rights[p]]));
    assert.equal(wrong, -1, `${how}: pair ${wrong}: ${fare[wrong]}, ${area[wrong]}, ${nameOf.get(wrong)}`);
    assert.ok(name.length === lefts.length);
    joined.destroy();
    assert.equal(device.memory.liveBytes, before, `${how}: nothing left on the device`);
    // A budget no row's join fits is refused, holding nothing after.
    const tiny = await gt.createDevice({type: 'cpu', allowedMem: 2_048});
    const small = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(trips), {device: tiny});
    const smallZones = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(zones), {device: tiny});
    const held = tiny.memory.liveBytes;
    await rejectsCode(small.join(smallZones, {on: 'zone', how}), 'LIMIT_EXCEEDED');
    assert.equal(tiny.memory.liveBytes, held, `${how}: a refused join holds nothing`);
  }
});

test('a join with an empty side has no length until evaluated', async () => {
  const none = gt.join(E.fromArray([]), E.fromArray([1]));
  const unmatched = gt.join(E.fromArray([4, 5], {chunks: [1, 1]}), E.fromArray([]), {how: 'left'});
  for (const side of [none.left, none.right, unmatched.left, unmatched.right]) assert.equal(side.length, null);
  await Promise.all([none.left, none.right, unmatched.left, unmatched.right].map(side => side.evaluate()));
  assert.deepEqual([none.left.length, none.right.length], [0, 0]);
  assert.deepEqual([...unmatched.left.readValueSync()], [0, 1]);
  assert.deepEqual([...unmatched.right.readValueSync()], [-1, -1]);
  // A filter's rows with no right rows: the pairs (destroyed by join) were its count.
  const x = E.fromArray([4, 5, 6]);
  const kept = gt.join(gt.filter(x, gt.greater(x, 4)), E.fromArray([]), {how: 'left'});
  assert.deepEqual([...await kept.left.readValue()], [0, 1]);
});

// A table join with an empty side: its pairs are counted on the device like any join's.
test('table.join with an empty side keeps the left rows and batches, or none', async () => {
  const batch = (zone, fare) => arrow.tableFromArrays({zone: Int32Array.from(zone), fare: Float32Array.from(fare)});
  const trips = new arrow.Table([...batch([3, 1], [10, 20]).batches, ...batch([7], [30]).batches]);
  const none = arrow.tableFromArrays({id: new Int32Array(0), area: new Float32Array(0)});
  const t = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(trips));
  const z = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(none));
  const left = await t.join(z, {on: ['zone', 'id'], how: 'left'});
  assert.equal(left.batches.length, 2);
  const back = arrow.tableFromIPC(await left.toArrowIPC());
  assert.deepEqual([...back.getChild('zone')], [3, 1, 7]);
  assert.deepEqual([...back.getChild('area')], [null, null, null]);
  assert.equal((await t.join(z, {on: ['zone', 'id']})).numRows, 0);
  assert.equal((await z.join(t, {on: ['id', 'zone'], how: 'left'})).numRows, 0);
});

test('a table join by text columns with different dictionaries leaves nothing on the device', async () => {
  // The keys joinKeys makes (one side's codes mapped to the other's) are the join's own and
  // freed with it, not when collected.
  const device = await gt.createDevice({type: 'cpu'});
  const names = Array.from({length: 5000}, (_, i) => `zone ${i % 700}`);
  const left = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(arrow.tableFromArrays({
    name: arrow.vectorFromArray(names, new arrow.Utf8()),
    fare: Float32Array.from(names, (_, i) => i),
  })), {device});
  const right = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(arrow.tableFromArrays({
    name: arrow.vectorFromArray(Array.from({length: 900}, (_, i) => `zone ${899 - i}`), new arrow.Utf8()),
    area: Float32Array.from({length: 900}, (_, i) => 899 - i),
  })), {device});
  const before = device.memory.liveBytes;
  for (const how of ['inner', 'left']) {
    const joined = await left.join(right, {on: 'name', how});
    assert.equal(joined.numRows, names.length, how);
    const area = joined.getVector('area').readValueSync();
    const fare = joined.getVector('fare').readValueSync();
    const wrong = [...fare].findIndex((i, p) => area[p] !== i % 700);
    assert.equal(wrong, -1, `${how}: row ${wrong}`);
    joined.destroy();
    assert.equal(device.memory.liveBytes, before, `${how}: held after the join was destroyed`);
  }
});
