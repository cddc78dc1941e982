// W6 on the CPU device (Node): CSR SpMV of a 1M x 1M float32 matrix with 10 entries per row,
// and 10M COO entries (unsorted, duplicates) to canonical CSR; hand-written JS loops and
// tfjs (cpu: SpMV as gather + unsortedSegmentSum; its wasm backend lacks the kernel) on the same arrays. GB/s = the
// bytes each workload must move / time; a typed-array copy measures the memory bound.
//
// BENCH_SPARSE_ROWS (default 1e6) and BENCH_SPARSE_ENTRIES (default 1e7) scale it down.
// tfjs runs SpMV at TFJS_MAX_ROWS at most (see sparse-workloads.js), beside gputable there.
import * as gt from 'gputable';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import {time} from './timing.js';
import {TFJS_MAX_ROWS, convertBytes, cooData, gputableCooToCsr, gputableSpmv, jsCooToCsr, jsSpmv, spmvBytes, spmvData, tfSpmv} from './sparse-workloads.js';


const rows = Number(process.env.BENCH_SPARSE_ROWS ?? 1e6);
const entries = Number(process.env.BENCH_SPARSE_ENTRIES ?? 1e7);
const device = await gt.createDevice({type: 'cpu'});

const spmv = spmvData(rows, 10);
const coo = cooData(rows, entries);
const results = [];

const ours = await gputableSpmv(gt, spmv, device);
const spmvRow = {name: `S1 CSR SpMV ${rows / 1e6}M x ${rows / 1e6}M, 10 per row`, bytes: spmvBytes(spmv), gputable: await time(ours.run), js: await time(jsSpmv(spmv))};
console.log(`S1 plan: ${ours.explain().split('\n')[0]}`);
ours.dispose();
results.push(spmvRow);
// tfjs at its largest feasible size, beside gputable at the same size.
const small = spmvData(Math.min(rows, TFJS_MAX_ROWS), 10);
const smallRow = {name: `S1 at ${small.m / 1e3}k x ${small.m / 1e3}k (tfjs's largest), 10 per row`, bytes: spmvBytes(small), js: await time(jsSpmv(small))};
const oursSmall = await gputableSpmv(gt, small, device);
smallRow.gputable = await time(oursSmall.run);
oursSmall.dispose();
// tfjs's wasm backend has no UnsortedSegmentSum kernel: its cpu backend is the peer.
await tf.setBackend('cpu');
await tf.ready();
const peer = tfSpmv(tf, small);
smallRow['tfjs-cpu'] = await time(peer.run);
peer.dispose();
results.push(smallRow);

const convert = await gputableCooToCsr(gt, coo, device);
results.push({name: `S2 COO ${entries / 1e6}M unsorted, duplicates, to CSR`, bytes: convertBytes(coo), gputable: await time(convert.run), js: await time(jsCooToCsr(coo))});
convert.dispose();

// The memory bound: one large typed-array copy (read + write), the fastest a pass can go.
const big = new Float32Array(32 * 1024 * 1024);
const copy = new Float32Array(big.length);
const copyMs = await time(() => copy.set(big));
const bound = (2 * big.byteLength) / copyMs / 1e6;

const peers = ['js', 'tfjs-cpu'];
const labels = {js: 'JS loops', 'tfjs-cpu': 'tfjs-core 4.22 cpu'};
const fmt = ms => (ms === undefined ? '-' : ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
console.log(`\n# gputable sparse benchmark (W6), CPU device, node ${process.version}\n`);
console.log(`median ms (output materialized and read); GB/s = bytes the workload must move / time; memory bound (typed-array copy): ${bound.toFixed(1)} GB/s\n`);
console.log(`| workload | gputable ms | GB/s | ${peers.map(p => `${labels[p]} ms`).join(' | ')} | vs best peer | of the memory bound |`);
console.log(`|---|---|---|${peers.map(() => '---').join('|')}|---|---|`);
for (const r of results) {
  const best = Math.min(...peers.map(p => r[p] ?? Infinity));
  const ratio = best >= r.gputable ? `${(best / r.gputable).toFixed(2)}x faster` : `${(r.gputable / best).toFixed(2)}x slower`;
  const rate = r.bytes / r.gputable / 1e6;
  console.log(`| ${r.name} | ${fmt(r.gputable)} | ${rate.toFixed(2)} | ${peers.map(p => fmt(r[p])).join(' | ')} | ${ratio} | ${(100 * rate / bound).toFixed(0)}% |`);
}
