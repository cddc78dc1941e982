// CPU benchmark: gputable vs hand-written JS loops, TensorFlow.js (cpu and wasm backends) and
// luma.gl gpgpu's CPU backend, in one process on the same data. Prints a markdown table.
//
// Timed: building the lazy graph plus evaluating it to a materialized output on the device
// (for gputable: the wasm heap; for tfjs: a tensor; for luma.gl: its evaluator value; for
// JS: a fresh typed array). Inputs are created once, outside the timings.
//
// BENCH_ROWS=1e6,1e7 (default) picks the row counts; BENCH_PEERS=js,tfjs-cpu,... the peers.
import {createRequire} from 'node:module';
import {dirname, join} from 'node:path';
import os from 'node:os';
import * as gt from 'gputable';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import {setWasmPaths} from '@tensorflow/tfjs-backend-wasm';
import * as luma from '@luma.gl/gpgpu';
import * as lumaCpu from '@luma.gl/gpgpu/cpu';
import {NullDevice} from '@luma.gl/test-utils';
import {sortStreamingRun, streamingReport, streamingRun} from './streaming.js';
import {runSeries} from './series.js';
import {time} from './timing.js';

const require = createRequire(import.meta.url);
setWasmPaths(join(dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + '/');
luma.backendRegistry.add('null', lumaCpu);
const lumaDevice = new NullDevice({});

const ROWS = (process.env.BENCH_ROWS ?? '1e6,1e7').split(',').map(Number);
const PEERS = (process.env.BENCH_PEERS ?? 'js,tfjs-cpu,tfjs-wasm,luma').split(',').filter(p => p && p !== 'none');
// Deterministic data (xorshift32).
function random(n, seed) {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    out[i] = ((s >>> 0) / 4294967296) * 200 - 100;
  }
  return out;
}
function permutation(n, seed) {
  const ids = new Uint32Array(n);
  for (let i = 0; i < n; i++) ids[i] = i;
  let s = seed;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    const j = (s >>> 0) % (i + 1);
    const t = ids[i]; ids[i] = ids[j]; ids[j] = t;
  }
  return ids;
}

function makeData(n) {
  return {n, xyz: random(3 * n, 1), x: random(n, 2), y: random(n, 3), ids: permutation(n, 4), values: random(2 * n, 5)};
}

const WORKLOADS = [
  {id: 'W1', name: 'add(xyz, [10,20,30], 1)', bytes: n => 24 * n},
  {id: 'W2', name: 'sqrt(x*x + y*y)', bytes: n => 12 * n},
  {id: 'W3', name: 'gather(perm, values x2)', bytes: n => 20 * n},
  {id: 'W4', name: 'extent(xyz)', bytes: n => 12 * n},
  {id: 'W5', name: 'sin(x)', bytes: n => 8 * n},
  {id: 'R1', name: 'sum(x)', bytes: n => 4 * n},
  {id: 'R2', name: 'sum(x), 64 chunks', bytes: n => 4 * n},
  {id: 'R3', name: 'argmax(x)', bytes: n => 4 * n},
  {id: 'R4', name: 'argmax(x), 64 chunks', bytes: n => 4 * n}
];

function gputableRunner(d) {
  const E = gt.GPUTableEvaluator;
  const xyz = E.fromArray(d.xyz, {size: 3}), x = E.fromArray(d.x), y = E.fromArray(d.y);
  const ids = E.fromArray(d.ids), values = E.fromArray(d.values, {size: 2});
  const chunked = E.fromArray(d.x, {chunks: Math.ceil(d.n / 64)});
  const run = build => () => {
    const r = build();
    r.evaluateSync();
    r.destroy();
  };
  return {
    W1: run(() => gt.add(xyz, [10, 20, 30], 1)),
    W2: run(() => gt.sqrt(gt.add(gt.multiply(x, x), gt.multiply(y, y)))),
    W3: run(() => gt.gather(ids, values)),
    W4: run(() => gt.extent(xyz)),
    W5: run(() => gt.sin(x)),
    R1: run(() => gt.sum(x)),
    R2: run(() => gt.sum(chunked)),
    R3: run(() => gt.argmax(x)),
    R4: run(() => gt.argmax(chunked)),
    dispose: () => [xyz, x, y, ids, values, chunked].forEach(e => e.destroy()),
    explain: {W1: gt.add(xyz, [10, 20, 30], 1), W2: gt.sqrt(gt.add(gt.multiply(x, x), gt.multiply(y, y))), W3: gt.gather(ids, values), W4: gt.extent(xyz), W5: gt.sin(x),
      R1: gt.sum(x), R2: gt.sum(chunked), R3: gt.argmax(x), R4: gt.argmax(chunked)}
  };
}

function jsRunner(d) {
  const {n, xyz, x, y, ids, values} = d;
  return {
    W1: () => {
      const out = new Float32Array(3 * n);
      for (let i = 0; i < 3 * n; i += 3) {
        out[i] = xyz[i] + 10 + 1;
        out[i + 1] = xyz[i + 1] + 20 + 1;
        out[i + 2] = xyz[i + 2] + 30 + 1;
      }
      return out;
    },
    W2: () => {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = Math.sqrt(x[i] * x[i] + y[i] * y[i]);
      return out;
    },
    W3: () => {
      const out = new Float32Array(2 * n);
      for (let i = 0; i < n; i++) {
        const id = ids[i];
        if (id < n) {
          out[2 * i] = values[2 * id];
          out[2 * i + 1] = values[2 * id + 1];
        }
      }
      return out;
    },
    W4: () => {
      const out = new Float32Array([Infinity, -Infinity, Infinity, -Infinity, Infinity, -Infinity]);
      for (let i = 0; i < 3 * n; i += 3) {
        for (let c = 0; c < 3; c++) {
          const v = xyz[i + c];
          if (v < out[2 * c]) out[2 * c] = v;
          if (v > out[2 * c + 1]) out[2 * c + 1] = v;
        }
      }
      return out;
    },
    W5: () => {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = Math.sin(x[i]);
      return out;
    },
    // One loop over the rows, as a JS user would write it (chunks change nothing for a loop).
    R1: () => {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += x[i];
      return sum;
    },
    R3: () => {
      let best = -1;
      let most = -Infinity;
      for (let i = 0; i < n; i++) {
        if (x[i] > most) {
          most = x[i];
          best = i;
        }
      }
      return best;
    },
    dispose() {}
  };
}

async function tfjsRunner(d, backend) {
  await tf.setBackend(backend);
  await tf.ready();
  const {n} = d;
  const xyz = tf.tensor2d(d.xyz, [n, 3]), x = tf.tensor1d(d.x), y = tf.tensor1d(d.y);
  const ids = tf.tensor1d(Int32Array.from(d.ids), 'int32'), values = tf.tensor2d(d.values, [n, 2]);
  const offsets = tf.tensor1d([10, 20, 30]);
  const run = build => () => tf.dispose(tf.tidy(build));
  return {
    W1: run(() => tf.add(tf.add(xyz, offsets), 1)),
    W2: run(() => tf.sqrt(tf.add(tf.mul(x, x), tf.mul(y, y)))),
    W3: run(() => tf.gather(values, ids)),
    W4: run(() => [tf.min(xyz, 0), tf.max(xyz, 0)]),
    W5: run(() => tf.sin(x)),
    R1: run(() => tf.sum(x)),
    R3: run(() => tf.argMax(x)),
    dispose: () => tf.dispose([xyz, x, y, ids, values, offsets])
  };
}

function lumaRunner(d) {
  const E = luma.GPUDataEvaluator;
  const xyz = E.fromArray(d.xyz, {size: 3}), x = E.fromArray(d.x, {}), y = E.fromArray(d.y, {});
  const ids = E.fromArray(d.ids, {type: 'uint32'}), values = E.fromArray(d.values, {size: 2});
  const run = build => async () => {
    const r = build();
    await r.evaluate(lumaDevice);
    r.destroy();
  };
  return {
    W1: run(() => luma.add(xyz, [10, 20, 30], 1)),
    W2: run(() => luma.sqrt(luma.add(luma.multiply(x, x), luma.multiply(y, y)))),
    W3: run(() => luma.gather(ids, values)),
    W4: run(() => luma.extent(xyz)),
    W5: run(() => luma.sin(x)),
    dispose() {}
  };
}

const PEER_RUNNERS = {
  js: {label: 'JS typed-array loops', make: d => jsRunner(d)},
  'tfjs-cpu': {label: 'tfjs-core 4.22 cpu', make: d => tfjsRunner(d, 'cpu')},
  'tfjs-wasm': {label: 'tfjs-core 4.22 wasm', make: d => tfjsRunner(d, 'wasm')},
  luma: {label: '@luma.gl/gpgpu 9.4.2 cpu', make: d => lumaRunner(d)}
};

console.log(`# gputable CPU benchmark`);
console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown cpu'}, ${os.cpus().length} cores, one thread per engine`);
console.log(`median ms of graph build + evaluate (output materialized, no readback); GB/s = bytes read+written / time\n`);

await runSeries({
  rows: ROWS,
  workloads: WORKLOADS,
  makeData,
  ours: data => {
    const runner = gputableRunner(data);
    return {...runner, passes: id => runner.explain[id].explain().split('\n')[0].replace('plan on cpu: ', '')};
  },
  peers: PEERS,
  runners: PEER_RUNNERS,
  // A peer without chunked columns runs the same work unchunked (R2 is R1's work).
  fallback: id => id.replace('R2', 'R1').replace('R4', 'R3'),
  rate: (w, n, ms) => (w.bytes(n) / ms / 1e6).toFixed(1),
  rateLabel: 'GB/s'
});

const streamedRows = ROWS[ROWS.length - 1];
console.log(`\n## A column 8 x larger than allowedMem streamed through the device\n`);
console.log('median ms of fromArray (64 chunks) + sqrt(x*x + 1) + readValue(); the same work on a device with no budget\n');
console.log(streamingReport('cpu', await streamingRun(gt, 'cpu', streamedRows, time)));
console.log(`\n## A sort of a column 8 x larger than allowedMem: runs that fit, then a merge\n`);
console.log('median ms of fromArray (64 chunks) + sort(x, {descending: true}) + readValue(); the same work with no budget\n');
console.log(streamingReport('cpu sort', await sortStreamingRun(gt, 'cpu', streamedRows, time)));
