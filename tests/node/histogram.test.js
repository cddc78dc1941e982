// api.md "Grouping and histograms" through the built package on the CPU device: histogram
// against a JS loop (equal bins over a range and the extent, irregular edges as numbers and
// as an evaluator, where masks, nulls and NaN) and the bad arguments.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {throwsCode} from './helpers.js';

const E = gt.GPUTableEvaluator;

// Counts per bin of ascending `edges` (the last bin holding its upper edge), skipping NaN
// and the rows `skip` says.
function loop(values, edges, skip = () => false) {
  const bins = edges.length - 1;
  const counts = new Array(bins).fill(0);
  values.forEach((v, i) => {
    if (skip(i) || v === null || Number.isNaN(v) || v < edges[0] || v > edges[bins]) return;
    let reached = 0;
    while (reached < edges.length && edges[reached] <= v) reached++;
    counts[Math.min(reached, bins) - 1]++;
  });
  return counts;
}

test('histogram counts 24 equal bins and 1,000 irregular edges as a JS loop does', async () => {
  const n = 50000;
  const fare = Array.from({length: n}, (_, i) => (i % 97 === 5 ? null : i % 89 === 7 ? NaN : ((i * 104729) % 8001) / 40 - 20));
  const table = arrow.tableFromArrays({fare: arrow.vectorFromArray(fare, new arrow.Float32())});
  const x = gt.rechunk(gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(table)).getVector('fare'), 20000);
  const f32 = fare.map(v => (v === null ? null : Math.fround(v)));
  const equal = Array.from({length: 25}, (_, i) => (i === 24 ? 120 : 0 + (120 / 24) * i));
  const counts = gt.histogram(x, {bins: 24, range: [0, 120]});
  assert.equal(counts.type, 'uint32');
  assert.deepEqual([...await counts.readValue()], loop(f32, equal));
  const edges = Array.from({length: 1001}, (_, i) => (i * i) / 5000 - 20);
  assert.deepEqual([...await gt.histogram(x, {edges}).readValue()], loop(f32, edges));
  const onDevice = E.fromArray(new Float32Array(edges));
  assert.deepEqual([...await gt.histogram(x, {edges: onDevice}).readValue()], loop(f32, Array.from(new Float32Array(edges))));
  const cheap = gt.less(x, 50);
  const masked = await gt.histogram(x, {bins: 24, range: [0, 120]}, {where: cheap}).readValue();
  assert.deepEqual([...masked], loop(f32, equal, i => !(f32[i] < 50)));
  // 'auto': every number counted once, the least in the first bin, the greatest in the last.
  const auto = [...await gt.histogram(x, {bins: 10}).readValue()];
  const numbers = f32.filter(v => v !== null && !Number.isNaN(v));
  assert.equal(auto.reduce((a, b) => a + b), numbers.length);
  const [lo, hi] = [Math.min(...numbers), Math.max(...numbers)];
  assert.deepEqual(auto, loop(f32, exactEdges(lo, hi, 10)));
});

// The edges of `bins` equal bins over [lo, hi] as real numbers (float64 holds these closely).
const exactEdges = (lo, hi, bins) => Array.from({length: bins + 1}, (_, i) => (lo * (bins - i) + hi * i) / bins);

test("'auto' bins count a value on an edge in the bin above it, as the range given does", async () => {
  for (const [values, bins] of [[[1, 7, 10], 3], [[-23, -1.4, 13, 2.2, 5.8, -5], 10], [[-30, -1, 28, 0, 27], 14], [[0, 25, 50, 75, 100, 99.5], 4]]) {
    const f32 = values.map(Math.fround);
    const x = E.fromArray(new Float32Array(values));
    const expected = loop(f32, exactEdges(Math.min(...f32), Math.max(...f32), bins));
    assert.deepEqual([...await gt.histogram(x, {bins}).readValue()], expected, `${values}, ${bins} bins`);
    const range = [Math.min(...f32), Math.max(...f32)];
    assert.deepEqual([...await gt.histogram(x, {bins, range}).readValue()], expected, `${values}, range given`);
  }
  // Under a mask: the extent of the rows kept.
  const where = E.fromArray(new Uint8Array([1, 1, 1, 0]));
  assert.deepEqual([...await gt.histogram(E.fromArray([1, 7, 10, 50]), {bins: 3}, {where}).readValue()], [1, 0, 2]);
});

test('equal bins over the extent of 32-bit integers past 2^24 count as over the range given', async () => {
  const cases = [
    new Uint32Array(10).map((_, i) => 1700000000 + i),
    new Int32Array(10).map((_, i) => -100000000 + 3 * i),
    new Uint32Array([16777216, 16777217, 16777218, 16777219, 16777220]),
  ];
  for (const values of cases) {
    const x = E.fromArray(values, {chunks: [2, values.length - 2]});
    const range = [Math.min(...values), Math.max(...values)];
    for (const bins of [3, 4]) {
      const given = [...await gt.histogram(x, {bins, range}).readValue()];
      assert.deepEqual([...await gt.histogram(x, {bins}).readValue()], given, `${values[0]}.., ${bins} bins`);
      assert.equal(given.reduce((a, b) => a + b), values.length);
    }
  }
  assert.deepEqual([...await gt.histogram(E.fromArray(cases[0]), {bins: 3}).readValue()], [3, 3, 4]);
});

test('bad histogram arguments are INVALID_ARGUMENT', async () => {
  const x = E.fromArray([1, 2, 3]);
  throwsCode(() => gt.histogram(x, {bins: 0}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {bins: 1.5}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {bins: '3'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {bins: 3, range: [2, 1]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {bins: 3, range: 'all'}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {bins: 3, edges: [0, 1]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {edges: [3, 1]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {edges: [1]}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {}), 'INVALID_ARGUMENT');
  throwsCode(() => gt.histogram(x, {bins: 3, width: 2}), 'INVALID_ARGUMENT');
  // Edges on the device are checked once computed (they were used out of order).
  await assert.rejects(gt.histogram(x, {edges: E.fromArray([3, 1, 2])}).readValue(), {code: 'INVALID_ARGUMENT'});
  await assert.rejects(gt.histogram(x, {edges: E.fromArray([0, NaN, 4])}).readValue(), {code: 'INVALID_ARGUMENT'});
  assert.deepEqual([...await gt.histogram(x, {edges: E.fromArray([0, 2, 2, 4])}).readValue()], [1, 0, 2]);
});
