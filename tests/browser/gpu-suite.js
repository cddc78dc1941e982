// Runs in headless Chromium: every operation on a GPU device (`?backend=webgpu|webgl`)
// against the CPU device. Results land in window.__results for tests/browser/gpu.test.js.
import * as gt from '../../dist/web/index.js';
import {budgetCheck, budgetJoinCheck, budgetSortCheck, chunkedChecks, subgroupSortCheck} from './gpu-chunked.js';
import {sparseChecks} from './gpu-sparse.js';
import {destroyDuringEvaluation, engineChecks} from './gpu-engine.js';

const backend = new URLSearchParams(location.search).get('backend') ?? 'webgpu';
const label = backend === 'webgl' ? 'WebGL2' : 'WebGPU';

const E = gt.GPUTableEvaluator;
const f32 = (values, size = 1) => E.fromArray(new Float32Array(values), {size});
const random = n => {
  let s = 12345;
  return Array.from({length: n}, () => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return ((s >>> 0) % 2001 - 1000) / 8;
  });
};

// [name, build(), tolerance]: 0 = equal values (NaN equal to NaN), else relative.
const cases = () => [
  ['add api example', () => gt.add(f32([1, 2, 3, 4, 5, 6], 3), [10, 20, 30], 1), 0],
  ['lane broadcasting', () => gt.add(f32(random(300), 3), gt.cos(f32(random(200), 2))), 1e-5],
  ['sint32 wrap and division', () => gt.divide(gt.add(E.fromArray(new Int32Array([2147483647, -7, 7, -2147483648])), E.fromArray(new Int32Array([1, 0, 0, 0]))), E.fromArray(new Int32Array([1, 2, 0, -1]))), 0],
  ['uint8 narrowing', () => gt.add(E.fromArray(new Uint8Array([200, 255, 3])), E.fromArray(new Uint8Array([100, 1, 4]))), 0],
  ['sint8 x uint8', () => gt.multiply(E.fromArray(new Int8Array([-128, 100, 3])), E.fromArray(new Uint8Array([255, 100, 4]))), 0],
  ['division by zero lanes', () => gt.divide([6, 68, -14, 100], gt.sqrt(E.fromArray(new Int8Array([4, -9, 16, 25]), {size: 2}))), 1e-6],
  ['sqrt', () => gt.sqrt(f32(random(1000).map(Math.abs))), 1e-6],
  ['sin cos exp', () => gt.interleave(gt.sin(f32(random(500).map(v => v / 10))), gt.cos(f32(random(500).map(v => v / 10))), gt.exp(f32(random(500).map(v => v / 50)))), 1e-5],
  ['log tan pow', () => gt.interleave(gt.log(f32(random(500).map(v => Math.abs(v) + 0.01))), gt.tan(f32(random(500).map(v => v / 200))), gt.pow(f32([2, 9, -8, 0, -2, 1.5]), f32([10, 0.5, 1 / 3, 0, 3, 2]))), 1e-5],
  ['interleave swizzle select', () => gt.select(E.fromArray(new Uint8Array([1, 0, 1])), gt.swizzle(f32(random(9), 3), [2, 0, 1]), gt.interleave(f32([1, 2, 3]), E.fromArray(new Int8Array([-1, -2, -3])), 7)), 0],
  ['dot length', () => gt.interleave(gt.dot(f32(random(300), 3), f32(random(300).reverse(), 3)), gt.length(f32(random(300), 3))), 1e-5],
  ['equalAll', () => gt.equalAll(E.fromArray(new Uint32Array([16777217, 5, 3])), E.fromArray(new Int32Array([16777216, 5, -3]))), 0],
  ['gather with bad ids', () => gt.gather(E.fromArray(new Int32Array([99, 0, -1, 100, 5])), f32(random(200), 2)), 0],
  ['sequence', () => gt.sequence(1000, 7, -3), 0],
  ['segmentedMap', () => gt.segmentedMap(E.fromArray([0, 3, 3, 6, 10], {type: 'uint32'}), 12), 0],
  ['fround', () => gt.fround(E.fromArray(new Float64Array([Math.PI, -0, 2 ** 24 + 1, Number.MAX_SAFE_INTEGER, 3.5e38, 1e-40, Infinity, NaN, 0.1]))), 0],
  ['extent with NaN', () => gt.extent(f32([NaN, 1, 5, NaN, -2, NaN], 2)), 0],
  ['extent with prologue', () => gt.extent(gt.multiply(f32(random(300000), 3), [2, -1, 0.5])), 0],
  ['extent sint8', () => gt.extent(E.fromArray(new Int8Array([-5, 7, 100, -128]))), 0],
  ['comparisons across types', () => gt.interleave(
    gt.less(E.fromArray(new Uint32Array([4294967295, 0, 16777217, 5, 7])), E.fromArray(new Int32Array([-1, 0, 16777216, 5, 8]))),
    gt.equal(f32([16777216, NaN, -0, Infinity, 1e-45]), E.fromArray(new Int32Array([16777216, 0, 0, 2147483647, 0]))),
    gt.greaterEqual(f32([NaN, 1, -Infinity, 3, 2]), 2),
    gt.notEqual(f32([NaN, 1, 2, 3, 4]), f32([NaN, 1, 0, 3, 4])),
    gt.lessEqual(E.fromArray(new Int8Array([-128, 127, 0, -1, 5])), E.fromArray(new Uint16Array([0, 127, 65535, 0, 4])))), 0],
  ['logic and float tests', () => gt.interleave(
    gt.and(f32([NaN, 0, 1, -0, 1e-45]), E.fromArray(new Uint8Array([1, 1, 0, 1, 3]))),
    gt.or(f32([0, 0, 1, -0, NaN]), 0),
    gt.xor(f32([1, 0, 1, 0, 2]), E.fromArray(new Int16Array([1, 1, 0, 0, -3]))),
    gt.not(f32([NaN, 0, -0, 1e-45, 2])),
    gt.isNaN(f32([NaN, Infinity, 0, -1, 3])),
    gt.isFinite(f32([NaN, Infinity, -Infinity, -1, 3e38]))), 0],
  ['minimum maximum clamp mod', () => gt.interleave(
    gt.minimum(f32([NaN, -0, 1, 5, -3, 1e-45]), f32([1, 0, NaN, 2, -4, 0])),
    gt.maximum(f32([NaN, -0, 1, 5, -3, 1e-45]), f32([1, 0, NaN, 2, -4, 0])),
    gt.clamp(f32([-20, -5, 0, 5, 20, NaN]), -10, 10),
    gt.mod(f32([5.5, -5.5, 5.5, -5.5, 1e30, 7]), f32([2, 2, -2, -2, 3, 0]))), 0],
  ['integer mod and sign', () => gt.interleave(
    gt.mod(E.fromArray(new Int32Array([7, -7, 7, -7, -2147483648])), E.fromArray(new Int32Array([3, 3, -3, 0, -1]))),
    gt.sign(E.fromArray(new Int32Array([-5, 0, 9, -2147483648, 1]))),
    gt.maximum(E.fromArray(new Uint16Array([1, 65535, 3, 0, 9])), E.fromArray(new Uint8Array([2, 0, 3, 255, 8])))), 0],
  ['rounding and sign', () => gt.interleave(
    gt.round(f32([0.5, 1.5, 2.5, -0.5, -2.5])),
    gt.floor(f32([-1.5, 1e-45, -1e-45, 3, NaN])),
    gt.ceil(f32([-1.5, 1e-45, -1e-45, 3, Infinity])),
    gt.trunc(f32([-1.5, 1e-45, -3.7, 3.7, -Infinity])),
    gt.sign(f32([NaN, -0, 3, -2, 1e-45]))), 0],
  ['where reductions and count', () => gt.interleave(
    gt.sum(f32(random(3000)), {where: gt.greater(f32(random(3000).reverse()), 10)}),
    gt.max(f32(random(3000)), {where: gt.greater(f32(random(3000).reverse()), 10)}),
    gt.argmin(f32(random(3000)), {where: gt.less(f32(random(3000).reverse()), 0)}),
    gt.count(gt.less(f32(random(3000)), 0))), 1e-5],
  ['300k rows fused', () => gt.sqrt(gt.add(gt.multiply(f32(random(300000)), f32(random(300000))), 1000)), 1e-6],
];

function compare(actual, expected, tolerance) {
  if (actual.constructor !== expected.constructor) return `type ${actual.constructor.name} vs ${expected.constructor.name}`;
  if (actual.length !== expected.length) return `length ${actual.length} vs ${expected.length}`;
  for (let i = 0; i < actual.length; i++) {
    const [a, e] = [actual[i], expected[i]];
    const same = a === e || (Number.isNaN(a) && Number.isNaN(e));
    const close = tolerance > 0 && Number.isFinite(e) && Math.abs(a - e) <= tolerance * Math.max(Math.abs(e), 1e-30);
    if (!same && !close) return `element ${i}: ${label} ${a} vs CPU ${e}`;
  }
  return null;
}

// Random graphs over random typed sources, built identically twice (CPU and GPU).
function randomGraphs(count, seed) {
  let s = seed;
  const next = () => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return s >>> 0;
  };
  const below = n => next() % n;
  const types = ['uint8', 'sint8', 'uint16', 'sint16', 'uint32', 'sint32', 'float32'];
  const graphs = [];
  for (let g = 0; g < count; g++) {
    const graphSeed = next();
    graphs.push(() => {
      s = graphSeed;
      const lengths = [1, 7, 300, 1000];
      const sources = Array.from({length: 2 + below(3)}, () => {
        const type = types[below(7)];
        const size = 1 + below(3);
        if (below(5) === 0) return E.fromConstant(Array.from({length: size}, () => below(50)), type);
        const rows = lengths[below(4)];
        const values = Array.from({length: rows * size}, () => (type === 'float32' ? (below(2001) - 1000) / 8 : below(100000) - (type[0] === 's' ? 50000 : 0)));
        return E.fromArray(values, {type, size});
      });
      const nodes = [...sources];
      const pick = () => nodes[below(nodes.length)];
      for (let k = 0; k < 2 + below(6); k++) {
        const [a, b, c] = [pick(), pick(), pick()];
        const ops = [
          () => [gt.add, gt.subtract, gt.multiply, gt.divide][below(4)](a, b),
          () => (below(2) ? gt.abs(a) : gt.sqrt(a)),
          // Rows stay within 16 lanes: WebGL2 reads at most 64 lanes of a row per draw.
          () => (a.size + b.size <= 16 ? gt.interleave(a, b) : gt.abs(a)),
          () => gt.swizzle(a, Array.from({length: 1 + below(3)}, () => below(a.size))),
          () => gt.select(a, b, c),
          () => gt.dot(a, b),
          () => gt.length(a),
          () => gt.equalAll(a, b),
          () => gt.gather(gt.swizzle(a, [0]), b),
          () => gt.extent(a),
          () => [gt.equal, gt.notEqual, gt.less, gt.lessEqual, gt.greater, gt.greaterEqual][below(6)](a, b),
          () => [gt.and, gt.or, gt.xor][below(3)](a, b, c),
          () => [gt.minimum, gt.maximum, gt.mod][below(3)](a, b),
          () => [gt.floor, gt.ceil, gt.trunc, gt.round, gt.sign, gt.not, gt.isNaN][below(7)](a)
        ];
        try {
          nodes.push(ops[below(ops.length)]());
        } catch (error) {
          // What the contract forbids (rows of different sizes for dot, equalAll, select) the
          // builders refuse on every device alike; anything else is a failure.
          if (error.code !== 'INVALID_ARGUMENT') throw error;
        }
      }
      return nodes[nodes.length - 1];
    });
  }
  return graphs;
}

// Values equal, or within 1e-4 of the column's largest magnitude (GPUs fuse multiply-adds);
// NaN where the CPU has NaN.
function compareScaled(actual, expected) {
  if (actual.constructor !== expected.constructor) return `type ${actual.constructor.name} vs ${expected.constructor.name}`;
  if (actual.length !== expected.length) return `length ${actual.length} vs ${expected.length}`;
  let scale = 1;
  for (const e of expected) if (Number.isFinite(e)) scale = Math.max(scale, Math.abs(e));
  for (let i = 0; i < actual.length; i++) {
    const [a, e] = [actual[i], expected[i]];
    if (Number.isNaN(e) ? !Number.isNaN(a) : !Number.isFinite(e) ? a !== e : Math.abs(a - e) > 1e-4 * scale) return `element ${i}: ${label} ${a} vs CPU ${e}`;
  }
  return null;
}

/** Problems of `evaluator`'s result on the device: it must be there, and kernels ran. */
async function evaluatedHere(device, evaluator) {
  const kernels = device.stats.kernels;
  const vector = await evaluator.evaluate(device);
  if (evaluator.device !== device || vector.device !== device) return 'the output is not on the device';
  if (device.stats.kernels <= kernels && evaluator.length > 0) return 'no kernel ran on the device';
  return null;
}

async function run() {
  gt.backendRegistry.add(backend === 'webgl' ? gt.webglBackend : gt.webgpuBackend);
  await gt.init();
  let device;
  try {
    device = await gt.createDevice({type: backend});
  } catch (error) {
    return {error: `no ${label} device: ${error.code} ${error.message}`};
  }
  const results = [];
  const cpuCases = cases();
  const gpuCases = cases();
  for (let i = 0; i < cpuCases.length; i++) {
    const [name, build, tolerance] = cpuCases[i];
    try {
      const expected = await build().readValue();
      const evaluator = gpuCases[i][1]();
      const problem = await evaluatedHere(device, evaluator) ?? compare(await evaluator.readValue(), expected, tolerance);
      results.push({name, problem});
    } catch (error) {
      results.push({name, problem: `${error.code ?? error.name}: ${error.message}`});
    }
  }
  const graphs = randomGraphs(60, 0x5eed);
  let [randomChecked, randomRefused] = [0, 0];
  for (const [i, build] of graphs.entries()) {
    try {
      let expected;
      try {
        expected = await build().readValue();
      } catch (error) {
        // A graph the contract refuses (an extent of no rows) is refused on the device too.
        if (error.code !== 'EMPTY_INPUT') throw error;
        const code = await build().evaluate(device).then(() => 'no error', e => e.code);
        if (code !== error.code) results.push({name: `random graph ${i}`, problem: `the device gave ${code}, the CPU ${error.code}`});
        randomRefused++;
        continue;
      }
      const evaluator = build();
      const problem = await evaluatedHere(device, evaluator) ?? compareScaled(await evaluator.readValue(), expected);
      if (problem) results.push({name: `random graph ${i}`, problem});
      randomChecked++;
    } catch (error) {
      results.push({name: `random graph ${i}`, problem: `${error.code ?? error.name}: ${error.message}`});
    }
  }
  results.push(...await engineChecks(gt, device));
  results.push(...await chunkedChecks(gt, device));
  results.push(...await sparseChecks(gt, device));
  // A device of its own: the collector freeing earlier checks' garbage would move the
  // shared device's counters while the round trip measures them.
  const roundTripDevice = await gt.createDevice({type: backend});
  const arrowRoundTrip = await arrowRoundTripOn(roundTripDevice).catch(error => `${error.code ?? error.name}: ${error.message}`);
  roundTripDevice.destroy();
  const budget = await budgetCheck(gt, backend).catch(error => `${error.code ?? error.name}: ${error.message}`);
  const budgetSort = backend === 'webgpu'
    ? await budgetSortCheck(gt, backend).catch(error => `${error.code ?? error.name}: ${error.message}`)
    : 'not run';
  const budgetJoin = await budgetJoinCheck(gt, backend).catch(error => `${error.code ?? error.name}: ${error.message}`);
  const subgroupSort = backend === 'webgpu'
    ? await subgroupSortCheck(gt).catch(error => `${error.code ?? error.name}: ${error.message}`)
    : 'not run';
  const plan = gt.sqrt(gt.add(f32([1, 2]), 1)).explain(device);
  let emptyExtent = null;
  try {
    await gt.extent(f32([], 2)).evaluate(device);
  } catch (error) {
    emptyExtent = error.code;
  }
  const destroyedWhileEvaluating = await destroyDuringEvaluation(gt, device);
  let afterDestroy = null;
  try {
    await gt.add(f32([1]), 1).evaluate(device);
  } catch (error) {
    afterDestroy = error.code;
  }
  const worker = backend === 'webgl' ? await inWorker() : null;
  return {adapter: device.adapterName, limits: device.limits, results, plan, emptyExtent, afterDestroy, destroyedWhileEvaluating, randomChecked, randomRefused, worker, arrowRoundTrip, budget, budgetSort, budgetJoin, subgroupSort};
}

// apache-arrow -> tableToIPC -> GPUTable.fromArrowIPC -> ops on the device -> toArrowIPC ->
// tableFromIPC: returns null when every value matches and the batches are kept.
async function arrowRoundTripOn(device) {
  const {makeTable, tableToIPC, tableFromIPC, Table} = window.Arrow;
  const whole = makeTable({x: Float32Array.from({length: 3000}, (_, i) => i * 0.25 - 100), id: Int32Array.from({length: 3000}, (_, i) => i * 7)});
  const source = new Table([...whole.slice(0, 1000).batches, ...whole.slice(1000).batches]);
  const before = device.liveAllocations;
  const live = device.memory.liveBytes;
  const table = await gt.GPUTable.fromArrowIPC(tableToIPC(source), {device});
  const problems = [];
  if (device.liveAllocations - before !== 4) problems.push(`loading put ${device.liveAllocations - before} columns on the device, not 4`);
  if (device.memory.liveBytes - live < 3000 * 8) problems.push(`loading the table holds ${device.memory.liveBytes - live} bytes on the device`);
  // Storage in host memory would read without waiting: none may be left there.
  const hostReadable = v => {
    try {
      v.readValueSync(0, 1);
      return true;
    } catch (error) {
      return error.code !== 'INVALID_ARGUMENT';
    }
  };
  if (table.batches.some(b => b.gpuVectors.some(hostReadable))) problems.push('the table kept a copy in the wasm heap');
  const y = gt.add(gt.multiply(table.getVector('x'), 2), table.getVector('id'));
  const out = await y.evaluate(device);
  const evaluated = device.liveAllocations;
  if (device.type === 'webgpu') {
    // A renderer on device.gpuDevice can bind a batch's resident buffer.
    const binding = table.batches[1].bindings.x;
    if (!(binding.gpuBuffer instanceof GPUBuffer) || binding.gpuBuffer.size < 2000 * 4 || binding.size !== 2000 * 4) problems.push(`no usable GPUBuffer binding: ${JSON.stringify(binding)}`);
    if (!(binding.gpuBuffer.usage & GPUBufferUsage.VERTEX) || !(device.gpuDevice instanceof GPUDevice)) problems.push('the buffer is not bindable as vertices on device.gpuDevice');
    if (table.batches[1].bufferLayout[1].attributes[0].format !== 'sint32') problems.push('layout format');
  }
  const back = tableFromIPC(await y.toArrowIPC('y'));
  const x = source.getChild('x').toArray();
  const id = source.getChild('id').toArray();
  const values = back.getChild('y').toArray();
  if (out.data.length !== 2 || back.batches.length !== 2) problems.push(`batches: ${out.data.length} out, ${back.batches.length} read back`);
  for (let i = 0; i < x.length; i++) {
    if (values[i] !== Math.fround(Math.fround(x[i] * 2) + id[i])) problems.push(`row ${i}: ${values[i]}`);
    if (problems.length > 3) break;
  }
  const again = tableFromIPC(await table.toArrowIPC());
  if (again.getChild('id').toArray().join() !== id.join()) problems.push('table.toArrowIPC changed id');
  const held = device.memory.liveBytes;
  table.destroy();
  if (evaluated - device.liveAllocations < 4) problems.push('destroying the table left its columns on the device');
  if (held - device.memory.liveBytes < 3000 * 8) problems.push('destroying the table left its storage live');
  return problems.length ? problems.join('; ') : null;
}

// The same backend from a dedicated worker (an OffscreenCanvas there too).
function inWorker() {
  return new Promise(resolve => {
    const worker = new Worker(new URL('./gpu-worker.js', import.meta.url), {type: 'module'});
    worker.onmessage = event => resolve(event.data);
    worker.onerror = event => resolve({error: event.message});
    worker.postMessage(backend);
  });
}

window.__results = await run().catch(error => ({error: String(error)}));
