// `npm run bench:gpu`: the GPU workloads in headless Chromium (SwiftShader here; a real
// adapter where the browser has one): gputable on WebGPU vs @tensorflow/tfjs-backend-webgpu,
// then gputable on WebGL2 vs @tensorflow/tfjs-backend-webgl. `node bench/gpu.js webgl` runs one.
import {launchChromium, serveCheckout} from '../scripts/browser.js';

const rows = process.env.BENCH_GPU_ROWS ?? '1000000';
const backends = process.argv.length > 2 ? process.argv.slice(2) : ['webgpu', 'webgl'];
const names = {webgpu: ['WebGPU', 'dispatches'], webgl: ['WebGL2', 'draws']};

const server = await serveCheckout();
const browser = await launchChromium();
try {
  for (const backend of backends) {
    const [label, passes] = names[backend];
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/bench/gpu.html?rows=${rows}&backend=${backend}`);
    await page.waitForFunction(() => window.__bench !== undefined, null, {timeout: 600_000});
    const report = await page.evaluate(() => window.__bench);
    await page.close();
    if (report.error) throw new Error(report.error);
    console.log(`# gputable ${label} benchmark: headless Chromium, adapter "${report.adapter || 'unnamed (SwiftShader)'}", ${report.rows.toLocaleString('en-US')} rows`);
    console.log('median ms of evaluate + readback (inputs stay on the device between runs, as tfjs tensors do); tfjs: ops + data()\n');
    console.log(`| workload | gputable ms | gputable ${passes} | tfjs-backend-${backend} 4.22 ms | tfjs ops | ratio |`);
    console.log('|---|---|---|---|---|---|');
    for (const r of report.results) {
      const ratio = r.tfMs / r.gputableMs;
      const verdict = ratio >= 1 ? `${ratio.toFixed(2)}x faster` : `${(1 / ratio).toFixed(2)}x slower`;
      console.log(`| ${r.id} ${r.name} | ${r.gputableMs.toFixed(1)} | ${r.passes.replace(' in all', '')} | ${r.tfMs.toFixed(1)} | ${r.peerOps} | ${verdict} |`);
    }
    console.log();
  }
} finally {
  await browser.close();
  server.close();
}
