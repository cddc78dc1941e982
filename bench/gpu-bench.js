// In a browser: W1, W2, W4, W5 on a gputable GPU device (`?backend=webgpu|webgl`) and on the
// matching tfjs backend (@tensorflow/tfjs-backend-webgpu or -webgl), on the same adapter.
// Results land in window.__bench.
import * as gt from '../dist/web/index.js';
import * as tf from '@tensorflow/tfjs-core';

const query = new URLSearchParams(location.search);
const rows = Number(query.get('rows') ?? 1e6);
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

async function median(run, reps = 5) {
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

async function main() {
  await gt.init();
  gt.backendRegistry.add(backend === 'webgl' ? gt.webglBackend : gt.webgpuBackend);
  const device = await gt.createDevice({type: backend});
  if (!(await tf.setBackend(backend))) throw new Error(`tfjs has no ${backend} backend here`);
  await tf.ready();

  const data = {xyz: random(3 * rows, 1), x: random(rows, 2), y: random(rows, 3)};
  const E = gt.GPUTableEvaluator;
  const ours = {xyz: E.fromArray(data.xyz, {size: 3}), x: E.fromArray(data.x), y: E.fromArray(data.y)};
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
    const passes = build().explain(device).trim().split('\n').pop();
    const gputableMs = await median(async () => {
      const r = build();
      await r.evaluate(device);
      r.destroy();
    });
    const tfMs = await median(async () => {
      const r = tf.tidy(peer);
      await r.data();
      r.dispose();
    });
    results.push({id, name, gputableMs, tfMs, passes, peerOps});
  }
  return {rows, backend, adapter: device.adapterName, results};
}

window.__bench = await main().catch(error => ({error: `${error.code ?? error.name}: ${error.message}`}));
