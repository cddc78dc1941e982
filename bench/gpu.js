// `npm run bench:gpu`: the GPU workloads in headless Chromium (SwiftShader here; a real
// adapter where the browser has one): gputable on WebGPU vs @tensorflow/tfjs-backend-webgpu,
// then gputable on WebGL2 vs @tensorflow/tfjs-backend-webgl. `node bench/gpu.js webgl` runs one.
import {launchChromium, serveCheckout} from '../scripts/browser.js';
import {streamingReport} from './streaming.js';

const rows = process.env.BENCH_GPU_ROWS ?? '1000000';
// W6's sizes: the issue's 1M x 1M SpMV; a 1M-entry conversion (the issue's 10M,
// BENCH_SPARSE_ENTRIES=1e7, takes minutes per run on a software adapter).
const groups = `groupRows=${process.env.BENCH_GROUP_ROWS ?? 1e6}`;
const sparse = `sparseRows=${process.env.BENCH_SPARSE_ROWS ?? 1e6}&sparseEntries=${process.env.BENCH_SPARSE_ENTRIES ?? 1e6}`;
const backends = process.argv.length > 2 ? process.argv.slice(2) : ['webgpu', 'webgl'];
const names = {webgpu: ['WebGPU', 'dispatches'], webgl: ['WebGL2', 'draws']};

function ratio(ours, theirs) {
  const r = theirs / ours;
  return r >= 1 ? `${r.toFixed(2)}x faster` : `${(1 / r).toFixed(2)}x slower`;
}

const server = await serveCheckout();
const browser = await launchChromium();
try {
  for (const backend of backends) {
    const [label, passes] = names[backend];
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/bench/gpu.html?rows=${rows}&backend=${backend}&${sparse}&${groups}${process.env.BENCH_GPU_ONLY ? `&only=${process.env.BENCH_GPU_ONLY}` : ''}`);
    await page.waitForFunction(() => window.__bench !== undefined, null, {timeout: 600_000});
    const report = await page.evaluate(() => window.__bench);
    await page.close();
    if (report.error) throw new Error(report.error);
    console.log(`# gputable ${label} benchmark: headless Chromium, adapter "${report.adapter || 'unnamed (SwiftShader)'}", ${report.rows.toLocaleString('en-US')} rows`);
    if (report.results === undefined) {
      console.log(groupsReport(label, passes, report));
      continue;
    }
    console.log('median ms; inputs stay on the device between runs on both sides. "evaluate + read": gputable evaluate() and readValue() of every row,');
    console.log('tfjs the ops and data(); "evaluate": the output left on the device (until it is idle); "read": readValue() of an evaluated output\n');
    console.log(`| workload | gputable evaluate + read ms | tfjs-backend-${backend} 4.22 ms | ratio | gputable evaluate ms | gputable read ms | gputable ${passes} | tfjs ops |`);
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of report.results) {
      console.log(`| ${r.id} ${r.name} | ${r.gputableMs.toFixed(1)} | ${r.tfMs.toFixed(1)} | ${ratio(r.gputableMs, r.tfMs)} | ${r.evaluateMs.toFixed(1)} | ${r.readbackMs.toFixed(1)} | ${r.passes.replace(' in all', '')} | ${r.peerOps} |`);
    }
    const {ms, tfMs, moved} = report.chain;
    console.log(`| chain: a = x*2+1, b = sqrt(abs(a)), c = b*y, each evaluated, then read c | ${ms.toFixed(1)} | ${tfMs.toFixed(1)} | ${ratio(ms, tfMs)} | | | | 6 |`);
    console.log(`\nbytes moved per chain: ${moved.up.toLocaleString('en-US')} up, ${moved.down.toLocaleString('en-US')} down (the ${(report.rows * 4).toLocaleString('en-US')} bytes of c, read once; nothing between steps)`);
    console.log(`\n## ${label} reductions of ${report.reduceRows.toLocaleString('en-US')} float32 rows\n`);
    console.log('median ms; gputable evaluate() + readValue() of the result (the column stays on the device), tfjs the op + data(), JS one loop\n');
    console.log(`| workload | gputable ms | tfjs-backend-${backend} 4.22 ms | JS loop ms | vs best peer | gputable ${passes} |`);
    console.log('|---|---|---|---|---|---|');
    for (const r of report.reductions) {
      console.log(`| ${r.name} | ${r.ms.toFixed(1)} | ${r.tfMs.toFixed(1)} | ${r.jsMs.toFixed(1)} | ${ratio(r.ms, Math.min(r.tfMs, r.jsMs))} | ${r.passes.replace(' in all', '')} |`);
    }
    console.log(`\n## ${label}: a column 8 x larger than allowedMem streamed through the device\n`);
    console.log('median ms of fromArray (64 chunks) + sqrt(x*x + 1) + readValue(); the same work on a device with no budget\n');
    console.log(streamingReport(backend, report.streaming));
    console.log(`\n## ${label} sparse (W6)\n`);
    console.log('median ms of the product evaluated and read back (tfjs: gather + unsortedSegmentSum and data(); WGSL: one thread per row, mapped and read); GB/s = bytes the workload must move / time\n');
    console.log(`| workload | gputable ms | GB/s | tfjs-backend-${backend} 4.22 ms | JS loop ms | one-thread-per-row WGSL ms | vs best peer | gputable ${passes} |`);
    console.log('|---|---|---|---|---|---|---|---|');
    if (report.sparse.error) console.log(`W6 failed: ${report.sparse.error}`);
    for (const r of report.sparse.error ? [] : report.sparse) {
      const peers = [r.tfMs, r.jsMs, r.naiveMs].filter(ms => ms !== undefined);
      const show = ms => (ms === undefined ? '-' : ms.toFixed(1));
      console.log(`| ${r.name} | ${r.ms.toFixed(1)} | ${(r.bytes / r.ms / 1e6).toFixed(2)} | ${show(r.tfMs)} | ${show(r.jsMs)} | ${show(r.naiveMs)} | ${ratio(r.ms, Math.min(...peers))} | ${(r.passes ?? '').replace(' in all', '')} |`);
    }
    console.log(groupsReport(label, passes, report));
    console.log();
  }
} finally {
  await browser.close();
  server.close();
}

/** The G-series table of one backend's report. */
function groupsReport(label, passes, report) {
  const lines = [];
  lines.push(`\n## ${label} grouping and histograms (G-series, ${report.groupRows.toLocaleString('en-US')} rows)\n`);
  lines.push(`median ms of the work and every output read back; inputs on the device. luma.gl 9.4.2 gpu-core on the same adapter (WebGPU only${report.lumaError ? `; here: ${report.lumaError}` : ''})\n`);
  lines.push(`| workload | gputable ms | JS loop ms | luma.gl ms | vs JS loop | vs luma.gl | counts equal the loop's (gputable, luma.gl) | gputable ${passes} |`);
  lines.push('|---|---|---|---|---|---|---|---|');
  for (const r of report.groups) {
    if (r.error) {
      lines.push(`| ${r.id} ${r.name} | failed: ${r.error} | | | | | | |`);
      continue;
    }
    const luma = r.lumaMs === undefined ? (r.lumaError ? 'failed' : '-') : r.lumaMs.toFixed(1);
    const vsLuma = r.lumaMs === undefined ? '-' : ratio(r.ms, r.lumaMs);
    lines.push(`| ${r.id} ${r.name} | ${r.ms.toFixed(1)} | ${r.jsMs.toFixed(1)} | ${luma} | ${ratio(r.ms, r.jsMs)} | ${vsLuma} | ${r.agrees ? 'yes' : 'NO'}${r.lumaAgrees === undefined ? '' : r.lumaAgrees ? ', yes' : ', NO'} | ${r.passes.replace(' in all', '')} |`);
  }
  for (const r of report.groups.filter(r => r.lumaError)) lines.push(`\nluma.gl ${r.id} failed: ${r.lumaError}`);
  return lines.join('\n');
}
