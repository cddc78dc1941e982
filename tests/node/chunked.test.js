// api.md "Chunked evaluation" through the built package on the CPU device: chunked inputs,
// elementwise work over any chunk boundaries, the view ops, outputs and IPC per chunk.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {throwsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;

/** A table of one int32 column `x` in batches of `sizes` rows, values 1, 2, ... */
function batched(sizes) {
  const total = sizes.reduce((a, b) => a + b, 0);
  const whole = arrow.tableFromArrays({x: Int32Array.from({length: total}, (_, i) => i + 1)});
  const batches = [];
  let at = 0;
  for (const rows of sizes) {
    batches.push(...whole.slice(at, at + rows).batches);
    at += rows;
  }
  return gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table(batches)));
}

test('fromArray makes chunked columns; chunks are reported everywhere', async () => {
  const regular = E.fromArray(new Float32Array(10), {chunks: 4});
  assert.deepEqual(regular.chunks, [4, 4, 2]);
  const listed = E.fromArray([1, 2, 3, 4, 5, 6], {size: 2, chunks: [1, 0, 2]});
  assert.deepEqual(listed.chunks, [1, 0, 2]);
  assert.deepEqual(E.fromArray([1, 2, 3]).chunks, [3]);
  const out = await gt.add(listed, 1).evaluate();
  assert.deepEqual(out.chunks, [1, 0, 2]);
  assert.equal(out.data.length, 3);
  assert.deepEqual([...await out.readValue()], [2, 3, 4, 5, 6, 7]);
  assert.deepEqual([...await out.readValue(1, 3)], [4, 5, 6, 7], 'a row range across chunks');
  throwsCode(() => E.fromArray([1, 2, 3], {chunks: [1, 1]}), 'INVALID_ARGUMENT');
  throwsCode(() => E.fromArray([1, 2, 3], {chunks: 0}), 'INVALID_ARGUMENT');
  throwsCode(() => E.fromArray([1, 2, 3], {chunks: 'two'}), 'INVALID_ARGUMENT');
});

test('a table column in batches combines with any other column row by row', async () => {
  const table = batched([2, 4]);
  const x = table.getVector('x');
  assert.deepEqual(x.chunks, [2, 4]);
  // The defect: one output per batch pairing, 12 rows instead of 6.
  const sum = gt.add(x, E.fromArray([1, 1, 1, 1, 1, 1]));
  assert.equal(sum.length, 6);
  assert.deepEqual(sum.chunks, [2, 4]);
  assert.deepEqual([...await sum.readValue()], [2, 3, 4, 5, 6, 7]);
  const other = E.fromArray(new Int32Array([10, 20, 30, 40, 50, 60]), {chunks: 3});
  assert.deepEqual([...await gt.interleave(other, x).readValue()], [10, 1, 20, 2, 30, 3, 40, 4, 50, 5, 60, 6]);
  assert.deepEqual(gt.interleave(other, x).chunks, [3, 3], 'the first chunked input sets the chunks');
  assert.deepEqual([...await gt.select(gt.subtract(x, 3), x, other).readValue()], [1, 2, 30, 4, 5, 6]);
  // extent over the batches is the extent of the column, also inside a graph.
  assert.deepEqual([...await gt.extent(x).readValue()], [1, 6]);
  assert.deepEqual([...await gt.add(gt.extent(x), 1).readValue()], [2, 7]);
  table.destroy();
  const gaps = batched([2, 0, 2]);
  assert.deepEqual([...await gt.extent(gaps.getVector('x')).readValue()], [1, 4], 'an empty batch adds nothing');
  gaps.destroy();
});

test('concat, slice and rechunk keep values and report their chunks', async () => {
  const x = E.fromArray(new Int32Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), {chunks: [3, 3, 4]});
  const part = gt.slice(x, 2, 7);
  assert.deepEqual(part.chunks, [1, 3, 1]);
  assert.deepEqual([...await part.readValue()], [2, 3, 4, 5, 6]);
  assert.deepEqual([...await gt.slice(x, 8).readValue()], [8, 9]);
  const both = gt.concat(x, part);
  assert.deepEqual(both.chunks, [3, 3, 4, 1, 3, 1]);
  assert.deepEqual([...await both.readValue()], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6]);
  const even = gt.rechunk(x, 5);
  assert.deepEqual(even.chunks, [5, 5]);
  assert.deepEqual([...await even.readValue()], [...await x.readValue()]);
  throwsCode(() => gt.rechunk(x, [4, 4]), 'INVALID_ARGUMENT');
  throwsCode(() => gt.concat(x, E.fromArray([1])), 'TYPE_MISMATCH');
  throwsCode(() => gt.slice(x, 'a'), 'INVALID_ARGUMENT');
  throwsCode(() => gt.concat(), 'INVALID_ARGUMENT');
});

test('a chunked output writes one IPC record batch per chunk and reads back as a table', async () => {
  const x = E.fromArray(new Float32Array([1, 2, 3, 4, 5]), {chunks: [2, 3]});
  const doubled = gt.multiply(x, 2);
  const back = arrow.tableFromIPC(doubled.toArrowIPC('y'));
  assert.equal(back.batches.length, 2);
  assert.deepEqual([...back.getChild('y').toArray()], [2, 4, 6, 8, 10]);
  const table = gt.GPUTable.fromArrowIPCSync(doubled.toArrowIPC('y'));
  assert.deepEqual(table.getVector('y').chunks, [2, 3]);
  // A table vector in several batches as an evaluator: a view of the batches.
  const view = E.fromVector(table.getVector('y'));
  assert.deepEqual(view.chunks, [2, 3]);
  assert.deepEqual([...await view.readValue()], [2, 4, 6, 8, 10]);
  table.destroy();
  throwsCode(() => view.readValueSync(), 'DESTROYED');
});

test('mapBlocks builds each output chunk from the same chunk of every input', async () => {
  const x = E.fromArray(new Float32Array([1, 2, 3, 4, 5, 6]), {chunks: [2, 4]});
  const y = E.fromArray(new Float32Array([10, 20, 30, 40, 50, 60]), {chunks: [3, 3]});
  const seen = [];
  const out = gt.mapBlocks((a, b, {blockId, rowOffset}) => {
    seen.push([blockId, rowOffset, a.length, b.length]);
    return gt.add(a, rowOffset);
  }, x, y);
  assert.deepEqual(seen, [[0, 0, 2, 3], [1, 2, 4, 3]]);
  assert.deepEqual(out.chunks, [2, 4]);
  assert.deepEqual([...await out.readValue()], [1, 2, 5, 6, 7, 8]);
  // A reduction per block: one row per chunk.
  const perBlock = gt.mapBlocks(a => gt.extent(a), x);
  assert.deepEqual([...await perBlock.readValue()], [1, 2, 3, 6]);
  throwsCode(() => gt.mapBlocks(a => a, x, E.fromArray([1, 2, 3, 4, 5, 6])), 'INVALID_ARGUMENT');
  throwsCode(() => gt.mapBlocks(() => 3, x), 'INVALID_ARGUMENT');
});

test('blockwise builds output chunk k from the input chunks keys(k)', async () => {
  const x = E.fromArray(new Int32Array([1, 2, 3, 4, 5, 6, 7, 8]), {chunks: 2});
  // Chunk k adds chunks k and 3 - k: a reversal across the column.
  const out = gt.blockwise((k, [a, b]) => gt.add(a, b), [x], {chunks: [2, 2, 2, 2], keys: k => [[k, 3 - k]]});
  assert.deepEqual(out.chunks, [2, 2, 2, 2]);
  assert.deepEqual([...await out.readValue()], [8, 10, 8, 10, 8, 10, 8, 10]);
  // Lists of several chunks, concatenated by the function.
  const pairs = gt.blockwise((k, list) => gt.concat(...list), [x], {chunks: [4, 4], keys: k => [[2 * k, 2 * k + 1]]});
  assert.deepEqual(pairs.chunks, [4, 4]);
  assert.deepEqual([...await pairs.readValue()], [1, 2, 3, 4, 5, 6, 7, 8]);
  throwsCode(() => gt.blockwise((k, [a]) => a, [x], {chunks: [3], keys: () => [[0]]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.blockwise((k, [a]) => a, [x], {chunks: [2], keys: () => [[9]]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.blockwise((k, [a]) => a, [x], {chunks: [2], keys: () => [0]}), 'INVALID_ARGUMENT');
});

test('cast converts lanes by the rules of api.md', async () => {
  const x = E.fromArray(new Float32Array([1.9, -1.9, 255.5, 256, NaN, Infinity, -0.5]), {chunks: [3, 4]});
  const bytes = gt.cast(x, 'uint8');
  assert.equal(bytes.type, 'uint8');
  assert.deepEqual(bytes.chunks, [3, 4]);
  assert.deepEqual([...await bytes.readValue()], [1, 0, 255, 0, 0, 0, 0]);
  assert.deepEqual([...await gt.cast(x, 'sint8').readValue()], [1, -1, 0, 0, 0, 0, 0]);
  assert.deepEqual([...await gt.cast(E.fromArray(new Int32Array([-1, 300])), 'uint8').readValue()], [255, 44]);
  assert.deepEqual([...await gt.cast(E.fromArray(new Uint32Array([4294967295])), 'sint32').readValue()], [-1]);
  throwsCode(() => gt.cast(x, 'float64'), 'INVALID_ARGUMENT');
});

test('allowedMem refuses a task that cannot fit before anything runs, and streams chunks within it', async () => {
  await assert.rejects(gt.createDevice({allowedMem: -5}), error => error.code === 'INVALID_ARGUMENT');
  await assert.rejects(gt.createDevice({allowedMem: 1.5}), error => error.code === 'INVALID_ARGUMENT');
  const rows = 32_768;
  const values = Float32Array.from({length: rows * 8}, (_, i) => i);
  const build = () => gt.add(gt.sqrt(E.fromArray(values, {chunks: rows})), 1);
  // Not even a row fits (its output and the output's read-back copy).
  const tiny = await gt.createDevice({allowedMem: 16});
  assert.equal(tiny.allowedMem, 16);
  const kernels = tiny.stats.kernels;
  await assert.rejects(build().evaluate(tiny),
    error => error.code === 'LIMIT_EXCEEDED' && /needs \d+ bytes.*allowedMem is 16$/.test(error.message));
  assert.equal(tiny.stats.kernels, kernels, 'refused before any kernel ran');
  assert.match(build().explain(tiny), /refused/);
  const unbounded = await build().readValue();
  // Less than a chunk's output and its copy read back: the elementwise pass is cut into row
  // ranges that fit; three chunks' worth: each chunk a task.
  for (const [allowed, cut] of [[100_000, true], [3 * rows * 4, false]]) {
    const device = await gt.createDevice({allowedMem: allowed});
    device.resetPeak();
    const streamed = build();
    const text = streamed.explain(device);
    assert.match(text, new RegExp(`allowedMem ${allowed} bytes: fits`));
    assert.equal(/row ranges that fit allowedMem/.test(text), cut, text);
    const vector = await streamed.evaluate(device);
    assert.ok(device.memory.peakBytes <= allowed, `peak ${device.memory.peakBytes} over ${allowed}`);
    assert.deepEqual(await streamed.readValue(), unbounded);
    assert.deepEqual(streamed.chunks, Array(8).fill(rows));
    assert.equal(vector.data.length, 8, 'the host joins the ranges back into the chunks');
  }
});

test('every masked reduction streams a column larger than allowedMem (api.md "Memory")', async () => {
  const rows = 250_000;
  const x = Float32Array.from({length: rows}, (_, i) => i % 101);
  const y = Uint32Array.from({length: rows}, (_, i) => (i * 13) % 7);
  const device = await gt.createDevice({allowedMem: 64 * 1024});
  for (const op of [gt.sum, gt.mean, gt.min, gt.max, gt.argmin, gt.argmax, gt.extent]) {
    const build = () => op(E.fromArray(x), {where: gt.greater(E.fromArray(y), 3)});
    device.resetPeak();
    const streamed = await build().evaluate(device).then(v => v.readValue());
    assert.ok(device.memory.peakBytes <= 64 * 1024, `${op.name}: peak ${device.memory.peakBytes}`);
    assert.deepEqual(streamed, await build().readValue(), op.name);
  }
});

test('fromArrowIPC reads a stream of byte pieces batch by batch', async () => {
  const whole = arrow.tableFromArrays({x: Float32Array.from({length: 3000}, (_, i) => i), n: Int32Array.from({length: 3000}, (_, i) => -i)});
  const source = new arrow.Table([...whole.slice(0, 1000).batches, ...whole.slice(1000, 1000).batches, ...whole.slice(1000).batches]);
  for (const bytes of [arrow.tableToIPC(source, 'stream'), arrow.tableToIPC(source, 'file')]) {
    // Pieces of 97 bytes, as an async generator and as a ReadableStream.
    async function* pieces() {
      for (let at = 0; at < bytes.length; at += 97) yield bytes.slice(at, at + 97);
    }
    const readable = new ReadableStream({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 1000) controller.enqueue(bytes.slice(at, at + 1000));
        controller.close();
      }
    });
    for (const stream of [pieces(), readable]) {
      const seen = [];
      const table = await gt.GPUTable.fromArrowIPC(stream, {onBatch: (batch, t) => seen.push([batch.numRows, t.numRows])});
      assert.deepEqual(seen, [[1000, 1000], [0, 1000], [2000, 3000]], 'each batch as it arrives');
      assert.deepEqual(table.getVector('x').chunks, [1000, 0, 2000]);
      assert.deepEqual([...await gt.extent(table.getVector('n')).readValue()], [-2999, 0]);
      table.destroy();
    }
  }
  // Cut short inside a message: INVALID_IPC, and nothing is left behind.
  const bytes = arrow.tableToIPC(source, 'stream');
  async function* cut() {
    yield bytes.slice(0, bytes.length - 100);
  }
  await assert.rejects(gt.GPUTable.fromArrowIPC(cut()), error => error.code === 'INVALID_IPC');
  await assert.rejects(gt.GPUTable.fromArrowIPC(new ReadableStream({start: c => c.close()})), error => error.code === 'INVALID_IPC');
});

test('a budget of a few kilobytes streams small work on the CPU, which holds no parameter blocks', async () => {
  const n = 20_000;
  const values = Float32Array.from({length: n}, (_, i) => ((i * 7919) % 1000) - 500);
  const x = () => E.fromArray(values, {chunks: 1000});
  for (const allowedMem of [4096, 16_384]) {
    const device = await gt.createDevice({allowedMem});
    const doubled = gt.multiply(x(), 2);
    await doubled.evaluate(device);
    assert.deepEqual([...await doubled.readValue()], Array.from(values, v => v * 2));
    // A filter's ranges compute their own rows of its mask, not the chunk's.
    const column = x();
    const kept = gt.filter(column, gt.greater(column, 0));
    assert.match(kept.explain(device), /filter in parts/);
    await kept.evaluate(device);
    assert.deepEqual([...await kept.readValue()], [...values.filter(v => v > 0)]);
    const total = gt.sum(x(), {});
    await total.evaluate(device);
    assert.equal((await total.readValue())[0], values.reduce((a, b) => a + b, 0));
    assert.ok(device.memory.peakBytes <= allowedMem, `peak ${device.memory.peakBytes} over ${allowedMem}`);
  }
});

// A user's trial: table.filter of a 200,000-row table under 1 MB was LIMIT_EXCEEDED where
// gt.filter of its column streamed: its columns, filtered in parts and held on the host,
// were copied whole to the device as the table's batches. A rollup and a running sum of
// the same table stream too.
test('table verbs stream a table larger than allowedMem', async () => {
  const n = 200_000;
  const zone = Uint32Array.from({length: n}, (_, i) => (i * 7919) % 260);
  const fare = Float32Array.from({length: n}, (_, i) => i % 50);
  const trips = arrow.tableFromArrays({zone, fare});
  const allowedMem = 1 << 20;
  const device = await gt.createDevice({allowedMem});
  const table = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(trips), {device});
  // The budget bounds what one evaluation holds (each verb's result is destroyed before the
  // next: peakBytes counts what the user holds too).
  const withinBudget = async (verb, check) => {
    device.resetPeak();
    const result = await verb();
    assert.ok(device.memory.peakBytes <= allowedMem, `peak ${device.memory.peakBytes} over ${allowedMem}`);
    await check(result);
    result.destroy();
  };
  // Keeping 68% of the rows (its columns, more than half the budget, stay on the host), and 18%.
  for (const above of [15, 40]) {
    await withinBudget(() => table.filter(t => gt.greater(t.fare, above)), async kept => {
      const expected = Array.from(fare.keys()).filter(i => fare[i] > above);
      assert.equal(kept.numRows, expected.length);
      assert.deepEqual([...await kept.getVector('zone').readValue()], expected.map(i => zone[i]));
    });
  }
  await withinBudget(() => table.derive({total: t => gt.cumsum(t.fare)}), async running => {
    let sum = 0;
    assert.deepEqual([...await running.getVector('total').readValue()], Array.from(fare, v => (sum += v)));
  });
  await withinBudget(() => table.groupBy('zone').rollup({n: 'count'}), byZone => assert.equal(byZone.numRows, 260));
  table.destroy();
});

test('a table whose batches mix null bitmaps and none streams its verbs under allowedMem', async () => {
  // Regression: an IPC stream omits the bitmap of a batch without nulls; the all-valid flags
  // made for those batches were a gather, which every range computed whole, so filtering such
  // a table under a budget was LIMIT_EXCEEDED.
  const n = 200_000;
  const nullAt = i => i >= 60_000 && i < 130_000 && i % 3 === 0;
  const fare = Array.from({length: n}, (_, i) => (nullAt(i) ? null : (i * 7919) % 100));
  const part = (lo, hi) => arrow.makeTable({fare: arrow.vectorFromArray(fare.slice(lo, hi), new arrow.Float32())});
  const mixed = new arrow.Table([...part(0, 60_000).batches, ...part(60_000, 130_000).batches, ...part(130_000, n).batches]);
  assert.deepEqual(mixed.batches.map(b => b.getChild('fare').nullCount > 0), [false, true, false]);
  const allowedMem = 600_000;
  const device = await gt.createDevice({allowedMem});
  const table = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(mixed, 'stream'), {device});
  const before = device.memory.liveBytes;
  device.resetPeak();
  const kept = await table.filter(t => gt.greater(t.fare, 40));
  assert.ok(device.memory.peakBytes - before <= allowedMem, `held ${device.memory.peakBytes - before} over ${allowedMem}`);
  const expected = fare.filter(v => v !== null && v > 40);
  assert.deepEqual([...await kept.getVector('fare').readValue()], expected);
  assert.deepEqual(kept.batches.map(b => b.numRows), [0, 60_000, 130_000, n].slice(1).map((hi, k, ends) => {
    const lo = k === 0 ? 0 : ends[k - 1];
    return fare.slice(lo, hi).filter(v => v !== null && v > 40).length;
  }));
  kept.destroy();
  // A masked reduction reads the made flags a chunk at a time too.
  const total = gt.sum(table.getVector('fare'), {where: gt.greater(table.getVector('fare'), 40)});
  await total.evaluate(device);
  assert.equal((await total.readValue())[0], expected.reduce((a, b) => a + b, 0));
  total.destroy();
  table.destroy();
});
