// api.md "Where results live, memory and concurrency" on the CPU device through the built
// package, and regressions of inputs that used to escape as non-GpuTableErrors or traps.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {throwsCode, rejectsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;

test('outputs stay on their device; stats and memory count them', async () => {
  const device = await gt.createDevice();
  const x = E.fromArray(Float32Array.from({length: 10_000}, (_, i) => i));
  const r = gt.add(x, 1);
  assert.equal(r.device, null, 'no device before evaluation');
  const start = device.memory;
  const vector = await r.evaluate(device);
  assert.equal(r.device, device);
  assert.equal(vector.device, device);
  assert.deepEqual(device.stats, {uploadBytes: 0, readbackBytes: 0, kernels: 1, pipelines: 0, allocations: 1});
  assert.ok(device.memory.liveBytes >= start.liveBytes + 40_000);
  assert.deepEqual([...await r.readValue(9998)], [9999, 10000]);
  // Chained on the same device: read in place.
  const chained = gt.multiply(r, 2);
  await chained.evaluate(device);
  assert.equal(device.stats.kernels, 2);
  assert.equal((await chained.readValue(3, 4))[0], 8);
  r.destroy();
  chained.destroy();
  assert.equal(device.memory.liveBytes, start.liveBytes, 'destroying every value returns liveBytes');
  assert.ok(device.memory.pooledBytes > 0);
  device.trim();
  assert.equal(device.memory.pooledBytes, 0);
  device.resetPeak();
  assert.equal(device.memory.peakBytes, device.memory.liveBytes);
  // No device: the default CPU device.
  const y = gt.sqrt(x);
  await y.evaluate();
  assert.equal(y.device.type, 'cpu');
  assert.notEqual(y.device, device);
});

test('a cached loop allocates nothing after its first pass; uncached frees at once', async () => {
  const device = await gt.createDevice({type: 'cpu'});
  const x = E.fromArray(Float32Array.from({length: 4000}, (_, i) => i % 17), {size: 2});
  let allocations = 0;
  const result = await device.cached('loop', async () => {
    for (let pass = 0; pass < 5; pass++) {
      const r = gt.extent(gt.add(x, [pass, 0]));
      await r.evaluate(device);
      assert.deepEqual([...await r.readValue()], [pass, 16 + pass, 0, 16]);
      r.destroy();
      if (pass === 0) allocations = device.stats.allocations;
    }
    return 'done';
  });
  assert.equal(result, 'done');
  assert.equal(device.stats.allocations, allocations);
  const cached = device.memory.pooledBytes;
  assert.ok(cached > 0);
  device.trim('loop');
  assert.ok(device.memory.pooledBytes < cached);
  await device.uncached(async () => {
    const r = gt.add(x, 1);
    await r.evaluate(device);
    r.destroy();
  });
  assert.equal(device.memory.pooledBytes, 0, 'uncached storage is not pooled');
  await rejectsCode(device.cached('', () => {}), 'INVALID_ARGUMENT');
  await rejectsCode(device.uncached(null), 'INVALID_ARGUMENT');
});

test('Promise.all of evaluations and reads, and destroy during evaluation', async () => {
  const device = await gt.createDevice();
  const builds = Array.from({length: 12}, (_, k) => () => gt.add(gt.sqrt(E.fromArray(Float32Array.from({length: 500 + k}, (_, i) => i))), k));
  const expected = builds.map(b => b().readValueSync());
  const evaluators = builds.map(b => b());
  const results = await Promise.all(evaluators.map(async e => {
    const [vector, values] = await Promise.all([e.evaluate(device), e.readValue()]);
    return {vector, values};
  }));
  results.forEach(({vector, values}, k) => {
    assert.equal(vector.device, device);
    assert.deepEqual([...values], [...expected[k]]);
  });
  const x = E.fromArray(new Float32Array([1, 2, 3]));
  const r = gt.multiply(x, 2);
  const pending = r.evaluate(device);
  x.destroy();
  await pending.then(async () => assert.deepEqual([...await r.readValue()], [2, 4, 6]), error => assert.equal(error.code, 'DESTROYED'));
  const z = gt.add(E.fromArray([1]), 1);
  const evaluating = z.evaluate(device);
  device.destroy();
  await evaluating.catch(error => assert.equal(error.code, 'DESTROYED'));
  await rejectsCode(gt.add(E.fromArray([1]), 1).evaluate(device), 'DESTROYED');
});

test('extent over batches follows extent rules for every type, empty batches included', async () => {
  const batches = values => {
    const whole = arrow.makeTable({n: Int32Array.from(values)});
    return arrow.tableToIPC(new arrow.Table([...whole.slice(0, 2).batches, ...whole.slice(0, 0).batches, ...whole.slice(2).batches]));
  };
  for (const [values, expected] of [[[5, 6, 7, 8], [5, 8]], [[-5, -6, -7, -8], [-8, -5]]]) {
    const table = await gt.GPUTable.fromArrowIPC(batches(values));
    assert.equal(table.batches.length, 3);
    const range = gt.extent(table.getVector('n'));
    assert.deepEqual([...await range.readValue()], expected);
    assert.deepEqual([...gt.extent(table.getVector('n')).readValueSync()], expected);
    table.destroy();
  }
  const floats = arrow.makeTable({f: new Float32Array([NaN, NaN, 2, -1])});
  const table = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(new arrow.Table([...floats.slice(0, 2).batches, ...floats.slice(2).batches])));
  assert.deepEqual([...await gt.extent(table.getVector('f')).readValue()], [-1, 2], 'a batch of only NaN is left out');
  const doubled = gt.multiply(table.getVector('f'), 2);
  await gt.cleanEvaluate(undefined, [doubled]);
  assert.deepEqual([...await doubled.readValue(2)], [4, -2], 'cleanEvaluate takes multi-batch arguments');
  table.destroy();
});

test('a column keeps its validity when only some batches have nulls', async () => {
  const withNulls = arrow.tableFromArrays({x: Float32Array.from([1, 2])});
  const bytes = arrow.tableToIPC(arrow.makeTable({x: arrow.vectorFromArray([1, null], new arrow.Float32())}));
  const table = gt.GPUTable.fromArrowIPCSync(bytes);
  const plain = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(withNulls));
  table.addBatch(plain.detachBatches()[0]);
  const x = table.getVector('x');
  assert.ok(x.validity, 'validity over every batch');
  assert.deepEqual([...x.validity.readValueSync()], [1, 0, 1, 1]);
  const back = arrow.tableFromIPC(table.toArrowIPC());
  assert.deepEqual(back.getChild('x').toArray().length, 4);
  assert.equal(back.getChild('x').nullCount, 1);
  table.destroy();
  plain.destroy();
});

test('malformed inputs are GpuTableErrors, never TypeErrors or traps', async () => {
  const transferred = new Float32Array([1, 2, 3]);
  structuredClone(transferred.buffer, {transfer: [transferred.buffer]});
  throwsCode(() => E.fromArray(transferred), 'INVALID_ARGUMENT');
  throwsCode(() => gt.GPUVector.appendable().append(transferred), 'INVALID_ARGUMENT');
  assert.deepEqual([...E.fromArray(new Int8Array([1, 2]), null).readValueSync()], [1, 2]);
  assert.equal((await gt.createDevice(null)).type, 'cpu');
  await rejectsCode(gt.createDevice(5), 'INVALID_ARGUMENT');
  throwsCode(() => E.fromVector({data: [{buffer: {}}]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.add({type: 'float32', size: 1}, 1), 'INVALID_ARGUMENT');
  await rejectsCode(gt.add(E.fromArray([1]), 1).evaluate({type: 'cpu'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.GPUVector.appendable({capacity: 1e12}), 'OUT_OF_MEMORY');
  throwsCode(() => gt.GPUVector.appendable({capacity: -1}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.add(E.fromArray([1]), 1).toArrowIPC({}), 'INVALID_ARGUMENT');
  throwsCode(() => E.fromArray([1]).readValueSync(NaN), 'INVALID_ARGUMENT');
});

test('huge inputs: past the addressable heap is a typed error, a large read needs no heap copy', async () => {
  // 2.4 GB of float32: more than one wasm allocation can hold.
  let huge = new Float32Array(600_000_000);
  assert.throws(() => E.fromArray(huge), error => error.name === 'GpuTableError' && ['LIMIT_EXCEEDED', 'OUT_OF_MEMORY'].includes(error.code));
  huge = null;
  // 1.8 GB of output in the wasm heap: reading it whole must not copy it there again.
  const count = 450_000_000;
  const big = gt.sequence(count);
  await big.evaluate();
  const values = await big.readValue();
  assert.equal(values.length, count);
  assert.equal(values[count - 1], count - 1);
  big.destroy();
});

test('a 30,000-node chain is dropped by the garbage collector without deep recursion', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  let chain = E.fromArray(new Float32Array([1, -2, 3]));
  for (let k = 0; k < 30_000; k++) chain = gt.abs(chain);
  assert.deepEqual([...await chain.readValue()], [1, 2, 3]);
  // Dropped here: wasm-bindgen's finalizers free the nodes, the whole chain at once.
  chain = null;
  for (let i = 0; i < 5; i++) {
    gc();
    await new Promise(resolve => setTimeout(resolve, 20));
  }
  assert.deepEqual([...await gt.add(E.fromArray([1]), 1).readValue()], [2], 'the instance still works');
});

// A reviewer's reading of the wasm entries: a filter under allowedMem remade its column's
// chain a range at a time by recursion, one wasm stack frame per op; a view of views shared
// at every level was walked once per path (2^depth); an array of chunk counts was buffered
// whole before its length was checked.
test('deep chains under a budget, views shared at every level and huge chunk lists', async () => {
  const device = await gt.createDevice({type: 'cpu', allowedMem: 64 * 1024});
  const x = E.fromArray(Float32Array.from({length: 40_000}, (_, i) => (i % 5) - 2), {chunks: 10_000});
  let chain = x;
  for (let k = 0; k < 20_000; k++) chain = gt.abs(chain);
  const kept = gt.filter(chain, gt.greater(x, 0));
  assert.match(kept.explain(device), /filter in parts/);
  await kept.evaluate(device);
  assert.equal(kept.length, 16_000);
  assert.deepEqual([...await gt.unique(kept).readValue()], [1, 2]);
  assert.ok(device.memory.peakBytes <= 64 * 1024);
  const source = Float32Array.from({length: 1000}, (_, i) => i);
  let views = E.fromArray(source, {chunks: 500});
  for (let i = 0; i < 40; i++) views = gt.concat(gt.slice(views, 1), gt.slice(views, 0, 1));
  assert.deepEqual([...await views.readValue()], Array.from(source, (_, i) => source[(i + 40) % 1000]));
  throwsCode(() => E.fromArray([1, 2], {chunks: new Array(2 ** 21).fill(0)}), 'LIMIT_EXCEEDED');
  throwsCode(() => gt.rechunk(E.fromArray([1, 2]), new Array(2 ** 21).fill(0)), 'LIMIT_EXCEEDED');
  throwsCode(() => gt.rechunk(E.fromArray([1, 2]), ['1', '1']), 'INVALID_ARGUMENT');
  assert.deepEqual(E.fromArray([1, 2, 3], {chunks: [2, 1]}).chunks, [2, 1]);
});

// api.md "Memory": a cumulative op over a column the budget does not hold scans a range at a
// time (it was LIMIT_EXCEEDED where a filter of the same rows streamed).
test('a cumulative op larger than allowedMem scans in parts, as a whole scan does', async () => {
  const n = 1 << 18;
  const values = Float32Array.from({length: n}, (_, i) => (i * 7919) % 13 - 6);
  const x = E.fromArray(values, {chunks: n / 8});
  const device = await gt.createDevice({type: 'cpu', allowedMem: 512 * 1024});
  // Reversed (regression: it read its rows through a gather and was LIMIT_EXCEEDED): the
  // ranges from the last.
  const cases = [
    [gt.cumsum(x), (acc, v) => acc + v, 0, false, false],
    [gt.cummax(x, {exclusive: true}), Math.max, NaN, true, false],
    [gt.cumsum(x, {reverse: true}), (acc, v) => acc + v, 0, false, true],
    [gt.cummin(x, {exclusive: true, reverse: true}), Math.min, NaN, true, true],
  ];
  for (const [scan, fold, none, exclusive, reverse] of cases) {
    assert.match(scan.explain(device), reverse ? /cumulative op in parts.*backwards from the last/ : /cumulative op in parts.* in order/);
    await scan.evaluate(device);
    let acc = none;
    const ordered = reverse ? [...values].reverse() : values;
    const expected = Array.from(ordered, v => {
      const before = acc;
      acc = Number.isNaN(acc) ? v : fold(acc, v);
      return exclusive ? before : acc;
    });
    if (reverse) expected.reverse();
    assert.deepEqual([...await scan.readValue()], expected);
    assert.deepEqual(scan.chunks, x.chunks);
  }
  assert.ok(device.memory.peakBytes <= 512 * 1024, `${device.memory.peakBytes}`);
});
