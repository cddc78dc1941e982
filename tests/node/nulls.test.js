// api.md "Nulls" through the built package on the CPU device: a column read from Arrow with
// nulls keeps them through expressions (the output vector has `validity`), reductions and
// `count` skip them, `isNull`/`isValid`/`fillNull`, and `toArrowIPC` writes them back.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {throwsCode} from './helpers.js';

const {GPUTable} = gt;

// Two batches of fares and tips (tips null on every third row, fares on every fifth).
function trips(rows = 40) {
  const fare = Array.from({length: rows}, (_, i) => (i % 5 === 2 ? null : i * 1.5 - 10));
  const tip = Array.from({length: rows}, (_, i) => (i % 3 === 0 ? null : i % 7));
  const whole = arrow.makeTable({
    fare: arrow.vectorFromArray(fare, new arrow.Float32()),
    tip: arrow.vectorFromArray(tip, new arrow.Int32())
  });
  const split = new arrow.Table([...whole.slice(0, 17).batches, ...whole.slice(17).batches]);
  return {table: GPUTable.fromArrowIPCSync(arrow.tableToIPC(split)), fare, tip};
}

const flags = vector => [...vector.validity.readValueSync()];

test('an expression over a column with nulls is null where a row it reads is', async () => {
  const {table, fare, tip} = trips();
  const [f, t] = [table.getVector('fare'), table.getVector('tip')];
  // The example: mean of [1, null, 3] times 1 is 2, as the mean of the column.
  const small = GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.makeTable({x: arrow.vectorFromArray([1, null, 3], new arrow.Float32())})));
  const x = small.getVector('x');
  assert.equal(gt.mean(x).readValueSync()[0], 2);
  assert.equal(gt.mean(gt.multiply(x, 1)).readValueSync()[0], 2);

  const total = await gt.add(f, t).evaluate();
  assert.ok(total.validity, 'the output carries validity');
  const expected = fare.map((v, i) => (v === null || tip[i] === null ? 0 : 1));
  assert.deepEqual(flags(total), expected);
  const values = total.readValueSync();
  fare.forEach((v, i) => {
    if (expected[i]) assert.equal(values[i], Math.fround(v + tip[i]), `row ${i}`);
  });
  // Comparisons with a null are null; count skips them.
  const big = gt.greater(f, 20);
  const kept = fare.filter(v => v !== null && v > 20).length;
  assert.equal(gt.count(big).readValueSync()[0], kept);
  assert.deepEqual(flags(await big.evaluate()), fare.map(v => (v === null ? 0 : 1)));
  // Reductions of an expression skip its null rows; `where` drops rows whose mask is null.
  const sum = fare.reduce((s, v, i) => (v === null || tip[i] === null ? s : s + Math.fround(v + tip[i])), 0);
  assert.ok(Math.abs(gt.sum(gt.add(f, t)).readValueSync()[0] - sum) < 1e-3);
  const tipped = tip.reduce((s, v, i) => (v === null || fare[i] === null || !(fare[i] > 20) ? s : s + v), 0);
  assert.equal(gt.sum(t, {where: big}).readValueSync()[0], tipped);
  // A column without nulls gives an output without validity.
  const plain = await gt.add(gt.GPUTableEvaluator.fromArray([1, 2]), 1).evaluate();
  assert.equal(plain.validity, null);
  table.destroy();
  small.destroy();
});

test('isNull, isValid and fillNull', async () => {
  const {table, tip} = trips();
  const t = table.getVector('tip');
  assert.deepEqual([...gt.isNull(t).readValueSync()], tip.map(v => (v === null ? 1 : 0)));
  assert.deepEqual([...gt.isValid(t).readValueSync()], tip.map(v => (v === null ? 0 : 1)));
  assert.equal((await gt.isNull(t).evaluate()).validity, null, 'masks are never null');
  const filled = gt.fillNull(t, -1);
  assert.equal(filled.type, 'sint32', "x's type");
  const vector = await filled.evaluate();
  assert.equal(vector.validity, null, 'no nulls');
  assert.deepEqual([...vector.readValueSync()], tip.map(v => v ?? -1));
  // uint32 keeps 4294967295 exact.
  const u = GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.makeTable({u: arrow.vectorFromArray([null, 7], new arrow.Uint32())})));
  assert.deepEqual([...gt.fillNull(u.getVector('u'), 4294967295).readValueSync()], [4294967295, 7]);
  // select(isValid(x), x, 0) has no null row.
  const guarded = await gt.select(gt.isValid(t), t, 0).evaluate();
  assert.ok(flags(guarded).every(v => v === 1));
  throwsCode(() => gt.fillNull(t, [1, 2]), 'INVALID_ARGUMENT');
  throwsCode(() => gt.isNull('x'), 'INVALID_ARGUMENT');
  table.destroy();
  u.destroy();
});

test('toArrowIPC writes an expression\'s nulls, and derived tables read them back', () => {
  const {table, fare} = trips();
  const doubled = gt.multiply(table.getVector('fare'), 2);
  const back = arrow.tableFromIPC(doubled.toArrowIPC('doubled'));
  assert.deepEqual(back.getChild('doubled').toJSON(), fare.map(v => (v === null ? null : Math.fround(v * 2))));
  table.destroy();
});

test('destroy frees an output\'s null flags and count at once, while its vectors are held', async () => {
  const device = await gt.createDevice();
  const {table: host, fare, tip} = trips();
  const table = await GPUTable.fromArrowIPC(host.toArrowIPC(), {device});
  host.destroy();
  const [f, t] = [table.getVector('fare'), table.getVector('tip')];
  const before = device.memory.liveBytes;
  // A filtered sum with nulls: values, their flags and the device count.
  const kept = gt.filter(gt.add(f, t), gt.greater(f, 0));
  const vector = await kept.evaluate(device);
  const validity = vector.validity;
  const rows = fare.filter((v, i) => v !== null && v > 0).length;
  assert.equal(vector.length, rows);
  assert.ok(validity.readValueSync().includes(0), 'some kept rows are null');
  assert.ok(device.memory.liveBytes > before);
  kept.destroy();
  // The vector, its validity and the evaluator are still referenced here: nothing waits
  // for the garbage collector.
  assert.equal(device.memory.liveBytes, before, 'destroy frees values, flags and count');
  assert.equal(kept.evaluated, false);
  assert.equal(vector.destroyed, true);
  assert.equal(validity.destroyed, true);
  assert.equal(kept.type, 'float32');
  await assert.rejects(vector.readValue(), {code: 'DESTROYED'});
  await assert.rejects(kept.readValue(), {code: 'DESTROYED'});
  await assert.rejects(kept.evaluate(device), {code: 'DESTROYED'});
  throwsCode(() => gt.add(kept, 1), 'DESTROYED');
  // A value sharing the destroyed one's flags keeps them (and reads them) while it lives.
  const shifted = gt.add(f, 1);
  const other = gt.add(shifted, 2);
  const otherVector = await other.evaluate(device);
  await shifted.evaluate(device);
  shifted.destroy();
  assert.deepEqual([...otherVector.validity.readValueSync()], fare.map(v => (v === null ? 0 : 1)));
  assert.deepEqual([...await other.readValue()].filter((_, i) => fare[i] !== null), fare.filter(v => v !== null).map(v => Math.fround(Math.fround(v + 1) + 2)));
  other.destroy();
  assert.equal(device.memory.liveBytes, before);
  void tip;
  table.destroy();
});
