// api.md "Selecting rows" and "Results whose length depends on the data" through the built
// package on the CPU device: filter and unique against JS loops (types, NaN, nulls, chunks
// kept, masks keeping none, all, one per chunk), lengths null until evaluation, ops over
// filtered results, and the bad arguments.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {rejectsCode, throwsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;

const same = (a, b) => Object.is(a, b) || a === b || (Number.isNaN(a) && Number.isNaN(b));

// The kept rows of `values` where `keep` is nonzero (and `keepValid` not 0), and per chunk.
function reference(values, keep, chunks, keepValid = null) {
  const kept = [];
  const perChunk = [];
  let at = 0;
  for (const rows of chunks) {
    let count = 0;
    for (let r = at; r < at + rows; r++) {
      if (keep[r] !== 0 && (keepValid === null || keepValid[r] !== 0)) {
        kept.push(values[r]);
        count++;
      }
    }
    perChunk.push(count);
    at += rows;
  }
  return {kept, perChunk};
}

test('filter keeps the rows of every type, chunk by chunk, with lengths known once evaluated', async () => {
  const n = 2000;
  const chunks = [700, 0, 1, 1299];
  const arrays = [
    Float32Array.from({length: n}, (_, i) => (i % 9 === 2 ? NaN : (i % 7 === 3 ? -0 : ((i * 7919) % 101) / 3 - 10))),
    Int8Array.from({length: n}, (_, i) => ((i * 31) % 255) - 127),
    Uint16Array.from({length: n}, (_, i) => (i * 131) % 65536),
    Int32Array.from({length: n}, (_, i) => (i * 2654435761) | 0),
    Uint32Array.from({length: n}, (_, i) => (i * 2654435761) >>> 0)
  ];
  for (const values of arrays) {
    const x = E.fromArray(values, {chunks});
    const keep = Uint8Array.from({length: n}, (_, i) => ((i * 13) % 5 === 1 ? 1 : 0));
    const kept = gt.filter(x, E.fromArray(keep, {chunks: 333}));
    assert.equal(kept.length, null, 'null before evaluation');
    assert.equal(kept.chunks, null);
    assert.equal(kept.type, x.type);
    const vector = await kept.evaluate();
    const expected = reference(values, keep, chunks);
    assert.equal(kept.length, expected.kept.length);
    assert.deepEqual(kept.chunks, expected.perChunk, 'chunk k keeps the rows of chunk k');
    assert.equal(vector.length, expected.kept.length);
    assert.deepEqual(vector.data.map(d => d.length), expected.perChunk);
    const got = kept.readValueSync();
    assert.equal(got.length, expected.kept.length);
    expected.kept.forEach((v, r) => assert.ok(same(got[r], v), `${x.type} row ${r}: ${got[r]} vs ${v}`));
    assert.deepEqual([...vector.readValueSync(1, 4)], [...got.slice(1, 4)]);
  }
  // Masks keeping none, all, one per chunk; constants; a predicate of the column.
  const x = E.fromArray([5, 1, 7, 2, 9, 3], {chunks: [2, 3, 1]});
  for (const [mask, rows, perChunk] of [
    [[0, 0, 0, 0, 0, 0], [], [0, 0, 0]],
    [[1, 1, 1, 1, 1, 1], [5, 1, 7, 2, 9, 3], [2, 3, 1]],
    [[0, 1, 0, 0, 1, 1], [1, 9, 3], [1, 1, 1]]
  ]) {
    const kept = gt.filter(x, E.fromArray(new Uint8Array(mask)));
    assert.deepEqual([...kept.readValueSync()], rows);
    assert.deepEqual(kept.chunks, perChunk);
  }
  assert.deepEqual([...gt.filter(x, 1).readValueSync()], [5, 1, 7, 2, 9, 3]);
  assert.deepEqual([...gt.filter(x, 0).readValueSync()], []);
  assert.deepEqual([...gt.filter(x, gt.greater(x, 4)).readValueSync()], [5, 7, 9]);
  assert.deepEqual([...gt.filter(E.fromArray([]), E.fromArray(new Uint8Array(0))).readValueSync()], []);
});

test('filter keeps nulls and drops rows whose mask is null', async () => {
  const ipc = arrow.tableToIPC(arrow.makeTable({
    v: arrow.vectorFromArray([1, null, 3, 4, null, 6], new arrow.Int32()),
    keep: arrow.vectorFromArray([1, 1, null, 1, 1, 0], new arrow.Uint8())
  }));
  const table = gt.GPUTable.fromArrowIPCSync(ipc);
  const kept = await gt.filter(table.getVector('v'), table.getVector('keep')).evaluate();
  assert.equal(kept.length, 4);
  assert.deepEqual([...kept.validity.readValueSync()], [1, 0, 1, 0]);
  const values = kept.readValueSync();
  assert.deepEqual([values[0], values[2]], [1, 4]);
  table.destroy();
});

test('ops over filtered rows: arithmetic, reductions, order, scans, unique, searchSorted', async () => {
  const n = 5000;
  const fare = Float32Array.from({length: n}, (_, i) => (i % 17 === 3 ? NaN : ((i * 7919) % 997) / 10));
  const f = E.fromArray(fare, {chunks: [1200, 0, 3800]});
  const big = gt.filter(f, gt.greater(f, 50));
  const kept = [...fare].filter(v => v > 50);
  const doubled = gt.multiply(big, 2);
  assert.equal(doubled.length, null);
  assert.deepEqual([...doubled.readValueSync()], kept.map(v => Math.fround(v * 2)));
  assert.equal(doubled.length, kept.length);
  const total = kept.reduce((a, v) => a + v, 0);
  assert.ok(Math.abs(gt.sum(big).readValueSync()[0] - total) <= 1e-6 * total, 'sum (pairwise in float32)');
  assert.deepEqual([...gt.max(big).readValueSync()], [Math.max(...kept)]);
  assert.deepEqual([...gt.argmin(big).readValueSync()], [kept.indexOf(Math.min(...kept))]);
  assert.deepEqual([...gt.count(gt.less(big, 60)).readValueSync()], [kept.filter(v => v < 60).length]);
  const below = kept.filter(v => v < 60).reduce((a, v) => a + v, 0);
  assert.ok(Math.abs(gt.sum(big, {where: gt.less(big, 60)}).readValueSync()[0] - below) <= 1e-6 * below);
  const sorted = [...kept].sort((a, b) => a - b);
  assert.deepEqual([...gt.sort(big).readValueSync()], sorted);
  const top = gt.topK(big, 3);
  assert.deepEqual([...top.values.readValueSync()], [...kept].sort((a, b) => b - a).slice(0, 3));
  assert.equal(top.values.length, 3);
  const running = gt.cumsum(big).readValueSync();
  assert.equal(running.length, kept.length);
  assert.ok(Math.abs(running[running.length - 1] - kept.reduce((a, v) => a + v, 0)) < 1);
  assert.deepEqual([...gt.unique(big).readValueSync()], [...new Set(sorted)]);
  const edges = gt.filter(E.fromArray([10, 20, 30, 40, 99]), E.fromArray(new Uint8Array([1, 1, 1, 0, 0])));
  assert.deepEqual([...gt.searchSorted(edges, E.fromArray([5, 25, 35, 100]), {side: 'right'}).readValueSync()], [0, 2, 3, 3]);
  // A filtered and a full column: the full column's rows, the filtered one's past its count null.
  const both = await gt.add(gt.filter(E.fromArray([1, 2, 3]), E.fromArray(new Uint8Array([1, 0, 1]))), E.fromArray([10, 20, 30])).evaluate();
  assert.equal(both.length, 3);
  assert.deepEqual([...both.validity.readValueSync()], [1, 1, 0]);
  assert.deepEqual([...both.readValueSync()].slice(0, 2), [11, 23]);
  // Views: slice and concat of filtered rows.
  assert.deepEqual([...gt.slice(big, 1, 3).readValueSync()], kept.slice(1, 3));
  const small = gt.filter(f, gt.less(f, 1));
  assert.deepEqual([...gt.concat(small, big).readValueSync()], [...[...fare].filter(v => v < 1), ...kept]);
  // Columns made for the rows a filter keeps are taken before it is evaluated (api.md: the
  // length rules hold with the counts the device decides); they were measured against its
  // capacity.
  const pick = (i) => i % 3 === 0;
  const unevaluated = gt.filter(f, gt.greater(f, 50));
  const mask = E.fromArray(Uint8Array.from(kept, (_, i) => pick(i)));
  assert.deepEqual([...gt.filter(unevaluated, mask).readValueSync()], kept.filter((_, i) => pick(i)));
  const picked = kept.filter((_, i) => pick(i)).reduce((a, v) => Math.max(a, v), -Infinity);
  assert.deepEqual([...gt.max(unevaluated, {where: mask}).readValueSync()], [picked]);
  const ranks = E.fromArray(Uint32Array.from(kept, (_, i) => kept.length - i));
  assert.deepEqual([...gt.argsort([ranks, unevaluated]).readValueSync()], kept.map((_, i) => kept.length - 1 - i));
});

test('unique orders distinct values: NaN once and last, -0 and +0 one value, nulls last', () => {
  const x = E.fromArray([3, NaN, -0, 1, 3, 0, NaN, 1], {chunks: [3, 5]});
  const got = [...gt.unique(x).readValueSync()];
  assert.deepEqual(got.slice(0, 3), [0, 1, 3]);
  assert.ok(Object.is(got[0], 0), '+0');
  assert.ok(Number.isNaN(got[3]) && got.length === 4);
  assert.deepEqual([...gt.unique(E.fromArray(new Uint8Array([4, 4, 2, 9, 2]))).readValueSync()], [2, 4, 9]);
  assert.deepEqual([...gt.unique(E.fromArray([])).readValueSync()], []);
});

test('valueCounts counts each distinct value against a Map loop, nulls last', async () => {
  const n = 5000;
  const codes = new Uint16Array(n).map((_, i) => (i * 7919) % 37);
  const x = E.fromArray(codes, {chunks: [1200, 0, 3800]});
  const {values, counts} = gt.valueCounts(x);
  await gt.cleanEvaluate(null, [values, counts]);
  const loop = new Map();
  for (const c of codes) loop.set(c, (loop.get(c) ?? 0) + 1);
  const keys = [...loop.keys()].sort((a, b) => a - b);
  assert.deepEqual([...values.readValueSync()], keys);
  assert.deepEqual([...counts.readValueSync()], keys.map(k => loop.get(k)));
  assert.equal(counts.type, 'uint32');
  // NaN one value after every number, -0 and +0 one value, null rows one group, last.
  const table = arrow.tableFromArrays({v: arrow.vectorFromArray([2, null, NaN, -0, 0, NaN, null, 2], new arrow.Float32())});
  const v = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(table)).getVector('v');
  const grouped = gt.valueCounts(v);
  const got = [...grouped.values.readValueSync()];
  assert.deepEqual(got.slice(0, 2), [0, 2]);
  assert.ok(Number.isNaN(got[2]) && got.length === 4);
  assert.deepEqual([...grouped.counts.readValueSync()], [2, 2, 2, 2]);
  throwsCode(() => gt.valueCounts(E.fromArray([1, 2, 3, 4], {size: 2})), 'INVALID_ARGUMENT');
});

test('bad filter and unique arguments, and ops that need a length before evaluation', async () => {
  const x = E.fromArray([1, 2, 3]);
  throwsCode(() => gt.filter(x, E.fromArray(new Uint8Array([1, 0]))), 'INVALID_ARGUMENT');
  throwsCode(() => gt.filter(x, E.fromArray(new Uint8Array([1, 0, 1, 0, 1, 0]), {size: 2})), 'INVALID_ARGUMENT');
  // A constant is one row (NumPy's scalar), repeated on a column mask's rows.
  assert.deepEqual([...(await gt.filter(E.fromConstant(1), 1).evaluate()).readValueSync()], [1]);
  assert.deepEqual([...(await gt.filter(E.fromConstant(7), gt.greater(x, 1)).evaluate()).readValueSync()], [7, 7]);
  throwsCode(() => gt.filter(x, 'yes'), 'INVALID_ARGUMENT');
  throwsCode(() => gt.unique(E.fromArray([1, 2, 3, 4], {size: 2})), 'INVALID_ARGUMENT');
  const kept = gt.filter(x, gt.greater(x, 1));
  throwsCode(() => gt.rechunk(kept, 1), 'INVALID_ARGUMENT');
  throwsCode(() => gt.mapBlocks(b => b, kept), 'INVALID_ARGUMENT');
  kept.readValueSync();
  assert.deepEqual(gt.rechunk(kept, 1).chunks, [1, 1]);
  assert.deepEqual([...gt.mapBlocks(b => gt.add(b, 1), kept).readValueSync()], [3, 4]);
});

// A table of two record batches with nulls, for the table verbs.
function tripTable() {
  const first = arrow.makeTable({
    fare: arrow.vectorFromArray([12, 3, null, 40, 8], new arrow.Float32()),
    vendor: arrow.vectorFromArray([1, 2, 1, 2, 2], new arrow.Uint8()),
    id: arrow.vectorFromArray([0, 1, 2, 3, 4], new arrow.Int32())
  });
  const second = arrow.makeTable({
    fare: arrow.vectorFromArray([7, 25, 30], new arrow.Float32()),
    vendor: arrow.vectorFromArray([2, 1, 1], new arrow.Uint8()),
    id: arrow.vectorFromArray([5, 6, 7], new arrow.Int32())
  });
  const ipc = arrow.tableToIPC(new arrow.Table([...first.batches, ...second.batches]));
  return gt.GPUTable.fromArrowIPCSync(ipc);
}

const rowsOf = table => {
  const columns = Object.fromEntries(table.schema.names.map(n => [n, table.getVector(n)]));
  const n = table.numRows;
  return Array.from({length: n}, (_, r) => Object.fromEntries(Object.entries(columns).map(([name, v]) => {
    const valid = v.validity ? v.validity.readValueSync(r, r + 1)[0] : 1;
    return [name, valid ? v.readValueSync(r, r + 1)[0] : null];
  })));
};

test('table verbs resolve to new tables: filter keeps batches, derive appends and replaces, orderBy and topK order', async () => {
  const table = tripTable();
  const rows = rowsOf(table);
  const big = await table.filter(t => gt.greater(t.fare, 10));
  assert.deepEqual(big.batches.map(b => b.numRows), [2, 2], 'each batch keeps its kept rows');
  assert.deepEqual(rowsOf(big), rows.filter(r => r.fare !== null && r.fare > 10));
  const none = await table.filter(() => 0);
  assert.equal(none.numRows, 0);
  const derived = await table.derive({double: t => gt.multiply(t.fare, 2), id: t => gt.add(t.id, 100)});
  assert.deepEqual(derived.schema.names, ['fare', 'vendor', 'id', 'double']);
  assert.deepEqual(derived.batches.map(b => b.numRows), [5, 3]);
  assert.deepEqual(rowsOf(derived), rows.map(r => ({...r, id: r.id + 100, double: r.fare === null ? null : r.fare * 2})));
  const ordered = await table.orderBy(['vendor', 'fare'], {descending: [false, true]});
  const expected = [...rows].sort((a, b) => a.vendor - b.vendor || (a.fare === null) - (b.fare === null) || b.fare - a.fare);
  assert.deepEqual(rowsOf(ordered), expected);
  const top = await table.topK('fare', 3);
  assert.deepEqual(rowsOf(top).map(r => r.id), [3, 7, 6]);
  // The new tables outlive the input, and write Arrow IPC.
  table.destroy();
  assert.deepEqual(rowsOf(big).map(r => r.id), [0, 3, 6, 7]);
  const back = arrow.tableFromIPC(await big.toArrowIPC());
  assert.deepEqual(back.getChild('id').toArray(), Int32Array.from([0, 3, 6, 7]));
  for (const t of [big, none, derived, ordered, top]) t.destroy();
});

test('a derived table frees the columns its functions made when destroyed, not when collected', async () => {
  const device = await gt.createDevice();
  const host = tripTable();
  const table = await gt.GPUTable.fromArrowIPC(await host.toArrowIPC(), {device});
  host.destroy();
  const rows = rowsOf(table);
  const before = device.memory.liveBytes;
  // Held by the caller: derive leaves it evaluated.
  const held = gt.multiply(table.getVector('id'), 3);
  await held.evaluate(device);
  const heldBytes = device.memory.liveBytes - before;
  let stashed = null;
  const derived = await table.derive({
    double: t => gt.multiply(t.fare, 2),
    running: t => (stashed = gt.cumsum(t.id)),
    tripled: () => held
  });
  assert.deepEqual(rowsOf(derived).map(r => [r.double, r.running, r.tripled]), rows.map((r, i) => [
    r.fare === null ? null : r.fare * 2, rows.slice(0, i + 1).reduce((s, q) => s + q.id, 0), r.id * 3]));
  assert.ok(held.evaluated, "the caller's evaluator keeps its output");
  derived.destroy();
  assert.equal(device.memory.liveBytes - before, heldBytes, 'the made columns are freed with the table');
  // One kept past the function is computed again when read.
  assert.deepEqual([...await stashed.readValue()], rows.map((_, i) => rows.slice(0, i + 1).reduce((s, q) => s + q.id, 0)));
  stashed.destroy();
  held.destroy();
  assert.equal(device.memory.liveBytes, before);
  table.destroy();
});

test('bad table verb arguments are INVALID_ARGUMENT', async () => {
  const table = tripTable();
  await rejectsCode(table.filter('fare > 10'), 'INVALID_ARGUMENT');
  await rejectsCode(table.derive({x: 3}), 'INVALID_ARGUMENT');
  await rejectsCode(table.derive(null), 'INVALID_ARGUMENT');
  await rejectsCode(table.orderBy('nope'), 'INVALID_ARGUMENT');
  await rejectsCode(table.orderBy('fare', {nulls: 'middle'}), 'INVALID_ARGUMENT');
  await rejectsCode(table.topK('fare', -1), 'INVALID_ARGUMENT');
  await assert.rejects(table.derive({short: () => E.fromArray([1, 2])}), {code: 'INVALID_ARGUMENT'});
  // A string is no evaluator (its length was taken for rows).
  await assert.rejects(table.derive({text: () => 'abc'}), {code: 'INVALID_ARGUMENT', message: /evaluator/});
  table.destroy();
  await rejectsCode(table.filter(t => t.fare), 'DESTROYED');
});

test('a filtered evaluator writes Arrow IPC of its kept rows, one batch per chunk, nulls kept', async () => {
  const ipc = arrow.tableToIPC(arrow.makeTable({v: arrow.vectorFromArray([5, null, 7, 2, -3], new arrow.Float32())}));
  const table = gt.GPUTable.fromArrowIPCSync(ipc);
  const v = table.getVector('v');
  const kept = gt.filter(gt.rechunk(v, [2, 3]), E.fromArray(new Uint8Array([1, 1, 0, 1, 1])));
  const back = arrow.tableFromIPC(kept.toArrowIPC('k'));
  assert.deepEqual(back.batches.map(b => b.numRows), [2, 2]);
  assert.deepEqual([...back.getChild('k')], [5, null, 2, -3]);
  // A mask that is null where v is drops the row.
  const valid = arrow.tableFromIPC(gt.filter(v, gt.notEqual(v, 7)).toArrowIPC('k'));
  assert.deepEqual([...valid.getChild('k')], [5, 2, -3]);
  table.destroy();
});

test('derive broadcasts a constant or a one-row result across the batches; names that are not strings are typed errors', async () => {
  const batches = [[1, 2], [], [3, 4, 5]].map(k => new arrow.RecordBatch({k: arrow.makeData({type: new arrow.Int32(), data: Int32Array.from(k)})}));
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table(batches)));
  const derived = await table.derive({seven: () => 7, three: () => E.fromConstant(3, 'sint32'), mean: t => gt.mean(t.k)});
  assert.deepEqual(derived.batches.map(b => b.numRows), [2, 0, 3]);
  assert.deepEqual([...await derived.getVector('seven').readValue()], [7, 7, 7, 7, 7]);
  assert.equal(derived.getVector('three').type, 'sint32');
  assert.deepEqual([...await derived.getVector('three').readValue()], [3, 3, 3, 3, 3]);
  assert.deepEqual([...await derived.getVector('mean').readValue()], [3, 3, 3, 3, 3]);
  const written = arrow.tableFromIPC(derived.toArrowIPC());
  assert.deepEqual([...written.getChild('seven')], [7, 7, 7, 7, 7]);
  // A table of one row in two batches (the first empty): the aggregate takes its batches.
  const oneRow = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table([[], [9]].map(k => new arrow.RecordBatch({k: arrow.makeData({type: new arrow.Int32(), data: Int32Array.from(k)})})))));
  const single = await oneRow.derive({mean: t => gt.mean(t.k)});
  assert.deepEqual(single.batches.map(b => b.numRows), [0, 1]);
  assert.deepEqual([...await single.getVector('mean').readValue()], [9]);
  // Longer than the one row: refused, not the table's columns repeated.
  await assert.rejects(async () => oneRow.derive({two: () => E.fromArray([1, 2])}), {code: 'INVALID_ARGUMENT'});
  single.destroy();
  oneRow.destroy();
  // Two rows where the table has five: refused.
  await assert.rejects(table.derive({two: () => E.fromArray([1, 2])}), {code: 'INVALID_ARGUMENT'});
  for (const name of [Symbol('k'), 3, null]) {
    await rejectsCode(table.orderBy(name), 'INVALID_ARGUMENT');
    await rejectsCode(table.topK(name, 1), 'INVALID_ARGUMENT');
  }
  derived.destroy();
  table.destroy();
});
