// In a browser: W1, W2, W4, W5 and a chain of three steps on a gputable GPU device
// (`?backend=webgpu|webgl`) and on the matching tfjs backend (@tensorflow/tfjs-backend-webgpu
// or -webgl), on the same adapter; then sum and argmax of `reduceRows` rows in 1 and 64
// chunks beside tfjs and JS loops, a column 8 x larger than allowedMem streamed through
// the device, and W6 (sparse: `sparseRows`, `sparseEntries`). Results land in window.__bench.
import * as gt from '../dist/web/index.js';
import * as tf from '@tensorflow/tfjs-core';
import {streamingRun} from './streaming.js';
import {groupRuns} from './gpu-groups.js';
import {TFJS_MAX_ROWS, convertBytes, cooData, gputableCooToCsr, gputableSpmv, jsCooToCsr, jsSpmv, naiveWgslSpmv, spmvBytes, spmvData, tfSpmv} from './sparse-workloads.js';

const query = new URLSearchParams(location.search);
const rows = Number(query.get('rows') ?? 1e6);
const reduceRows = Number(query.get('reduceRows') ?? 1e7);
const sparseRows = Number(query.get('sparseRows') ?? 1e6);
const sparseEntries = Number(query.get('sparseEntries') ?? 1e7);
const groupRows = Number(query.get('groupRows') ?? 1e6);
// `only=groups`: the G-series alone.
const only = query.get('only');
const backend = query.get('backend') ?? 'webgpu';
await import(`/node_modules/@tensorflow/tfjs-backend-${backend}/dist/tf-backend-${backend}.fesm.js`);

function random(n, seed) {
  const out = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    out[i] = ((s >>> 0) / 4294967296) * 200 - 100;
  }
  return out;
}

/** explain()'s count of kernels: `3 dispatches in all`. */
function kernelLine(plan) {
  return plan.split('\n').find(line => line.endsWith(' in all')) ?? '?';
}

async function median(run, reps = 7) {
  await run();
  await run();
  const samples = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    await run();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

/** Resolves once the device has done the work submitted so far. */
async function deviceIdle(device, probe) {
  if (device.type === 'webgpu') {
    await device.gpuDevice.queue.onSubmittedWorkDone();
  } else {
    // WebGL2 has no fence the page can reach: one row read back waits for the draws.
    await probe.readValue(0, 1);
  }
}

/** Bytes moved between host and device while `run` runs. */
async function bytesMoved(device, run) {
  const before = device.stats;
  await run();
  const after = device.stats;
  return {up: after.uploadBytes - before.uploadBytes, down: after.readbackBytes - before.readbackBytes};
}

async function main() {
  // Registered before init(), so init() loads the module with that backend (WebGL2 has one
  // of its own).
  gt.backendRegistry.add(backend === 'webgl' ? gt.webglBackend : gt.webgpuBackend);
  await gt.init();
  const device = await gt.createDevice({type: backend});
  if (only === 'groups') return {rows, backend, adapter: device.adapterName, ...(await groups(device))};
  if (!(await tf.setBackend(backend))) throw new Error(`tfjs has no ${backend} backend here`);
  await tf.ready();

  const data = {xyz: random(3 * rows, 1), x: random(rows, 2), y: random(rows, 3)};
  const E = gt.GPUTableEvaluator;
  const ours = {xyz: E.fromArray(data.xyz, {size: 3}), x: E.fromArray(data.x), y: E.fromArray(data.y)};
  // Both sides keep their inputs on the device between runs.
  for (const input of Object.values(ours)) await input.evaluate(device);
  const theirs = {xyz: tf.tensor2d(data.xyz, [rows, 3]), x: tf.tensor1d(data.x), y: tf.tensor1d(data.y), offsets: tf.tensor1d([10, 20, 30])};

  const workloads = [
    ['W1', 'add(xyz, [10,20,30], 1)', () => gt.add(ours.xyz, [10, 20, 30], 1), () => tf.add(tf.add(theirs.xyz, theirs.offsets), 1), 2],
    ['W2', 'sqrt(x*x + y*y)', () => gt.sqrt(gt.add(gt.multiply(ours.x, ours.x), gt.multiply(ours.y, ours.y))),
      () => tf.sqrt(tf.add(tf.mul(theirs.x, theirs.x), tf.mul(theirs.y, theirs.y))), 4],
    ['W4', 'extent(xyz)', () => gt.extent(ours.xyz), () => tf.stack([tf.min(theirs.xyz, 0), tf.max(theirs.xyz, 0)]), 3],
    ['W5', 'sin(x)', () => gt.sin(ours.x), () => tf.sin(theirs.x), 1]
  ];
  const results = [];
  for (const [id, name, build, peer, peerOps] of workloads) {
    const passes = kernelLine(build().explain(device));
    const gputableMs = await median(async () => {
      const r = build();
      await r.evaluate(device);
      await r.readValue();
      r.destroy();
    });
    const tfMs = await median(async () => {
      const r = tf.tidy(peer);
      await r.data();
      r.dispose();
    });
    // The output left on the device (until the device is idle), and its readback alone.
    const evaluateMs = await median(async () => {
      const r = build();
      await r.evaluate(device);
      await deviceIdle(device, r);
      r.destroy();
    });
    const kept = build();
    await kept.evaluate(device);
    const readbackMs = await median(() => kept.readValue());
    kept.destroy();
    results.push({id, name, gputableMs, tfMs, evaluateMs, readbackMs, passes, peerOps});
  }

  // A chain of three steps, each evaluated on its own and read by the next; the last is read.
  const chain = async () => {
    const a = gt.add(gt.multiply(ours.x, 2), 1);
    await a.evaluate(device);
    const b = gt.sqrt(gt.abs(a));
    await b.evaluate(device);
    const c = gt.multiply(b, ours.y);
    await c.evaluate(device);
    const values = await c.readValue();
    for (const e of [a, b, c]) e.destroy();
    return values;
  };
  const moved = await bytesMoved(device, chain);
  const chainMs = await median(chain);
  const tfChainMs = await median(async () => {
    const a = tf.tidy(() => tf.add(tf.mul(theirs.x, 2), 1));
    const b = tf.tidy(() => tf.sqrt(tf.abs(a)));
    const c = tf.tidy(() => tf.mul(b, theirs.y));
    await c.data();
    for (const t of [a, b, c]) t.dispose();
  });
  for (const t of Object.values(theirs)) t.dispose();
  for (const e of Object.values(ours)) e.destroy();
  const reductions = await reductionRuns(device);
  const streaming = await streamingRun(gt, backend, reduceRows, median);
  // W6 fails on its own: the other workloads' results still come back.
  const sparse = await sparseRuns(device).catch(error => ({error: `${error.code ?? error.name}: ${error.message}`}));
  return {rows, backend, adapter: device.adapterName, results, chain: {ms: chainMs, tfMs: tfChainMs, moved}, reduceRows, reductions, streaming, sparse, ...(await groups(device))};
}

/** The G-series beside JS loops and, on WebGPU, luma.gl's gpu-core. */
async function groups(device) {
  const luma = backend === 'webgpu' ? await lumaPeer() : {};
  return {groupRows, groups: await groupRuns(gt, device, groupRows, median, luma.module), lumaError: luma.error};
}

/** bench/luma-groups.js, where a luma.gl WebGPU device can be made here. */
async function lumaPeer() {
  try {
    const module = await import('./luma-groups.js');
    return (await module.lumaAvailable()) ? {module} : {error: 'no luma.gl WebGPU device'};
  } catch (error) {
    return {error: `${error.name}: ${error.message}`};
  }
}

/** sum and argmax of one column in 1 and 64 chunks, beside tfjs and JS loops. */
async function reductionRuns(device) {
  const values = random(reduceRows, 9);
  const E = gt.GPUTableEvaluator;
  const one = E.fromArray(values);
  const many = E.fromArray(values, {chunks: Math.ceil(reduceRows / 64)});
  await one.evaluate(device);
  await many.evaluate(device);
  const column = tf.tensor1d(values);
  const loops = {
    sum: () => {
      let sum = 0;
      for (let i = 0; i < values.length; i++) sum += values[i];
      return sum;
    },
    argmax: () => {
      let [best, most] = [-1, -Infinity];
      for (let i = 0; i < values.length; i++) {
        if (values[i] > most) [best, most] = [i, values[i]];
      }
      return best;
    }
  };
  const peers = {sum: x => tf.sum(x), argmax: x => tf.argMax(x)};
  const out = [];
  for (const kind of ['sum', 'argmax']) {
    const tfMs = await median(async () => {
      const r = tf.tidy(() => peers[kind](column));
      await r.data();
      r.dispose();
    });
    const jsMs = await median(async () => loops[kind]());
    for (const [chunks, x] of [[1, one], [64, many]]) {
      const ms = await median(async () => {
        const r = gt[kind](x);
        await r.evaluate(device);
        await r.readValue();
        r.destroy();
      });
      const passes = kernelLine(gt[kind](x).explain(device));
      out.push({name: `${kind}(x), ${chunks} chunk${chunks > 1 ? 's' : ''}`, ms, tfMs, jsMs, passes});
    }
  }
  one.destroy();
  many.destroy();
  column.dispose();
  return out;
}

/**
 * W6: SpMV (evaluated and read back) beside tfjs, a JS loop and, on WebGPU, a one-thread-
 * per-row WGSL kernel on the same adapter; COO to CSR beside a JS conversion.
 */
async function sparseRuns(device) {
  // tfjs also runs at its largest feasible size, beside gputable there (see TFJS_MAX_ROWS).
  const sizes = [...new Set([sparseRows, Math.min(sparseRows, TFJS_MAX_ROWS)])];
  const rows = [];
  for (const m of sizes) rows.push(await spmvRun(device, m));
  const coo = cooData(sparseRows, sparseEntries);
  const convert = await gputableCooToCsr(gt, coo, device);
  const conversion = {name: `S2 COO ${sparseEntries / 1e6}M unsorted, duplicates, to CSR`, bytes: convertBytes(coo), ms: await median(convert.run, 1)};
  convert.dispose();
  conversion.jsMs = await median(async () => jsCooToCsr(coo)(), 1);
  return [...rows, conversion];
}

/** SpMV of an m x m matrix: gputable, a JS loop, tfjs (if feasible), WGSL (on WebGPU). */
async function spmvRun(device, m) {
  const spmv = spmvData(m, 10);
  const ours = await gputableSpmv(gt, spmv, device);
  const row = {name: `S1 CSR SpMV ${m / 1e6}M x ${m / 1e6}M, 10 per row`, bytes: spmvBytes(spmv), passes: kernelLine(ours.explain()), ms: await median(ours.run, 3)};
  ours.dispose();
  if (m <= TFJS_MAX_ROWS) {
    const peer = tfSpmv(tf, spmv);
    row.tfMs = await median(peer.run, 3);
    peer.dispose();
  }
  row.jsMs = await median(async () => jsSpmv(spmv)(), 3);
  if (device.type === 'webgpu') {
    const naive = await naiveWgslSpmv(device.gpuDevice, spmv);
    row.naiveMs = await median(naive.run, 3);
    naive.dispose();
  }
  return row;
}

window.__bench = await main().catch(error => ({error: `${error.code ?? error.name}: ${error.message}`}));
