// `npm run bench:webgpu`: the WebGPU workloads in headless Chromium (SwiftShader here; a real
// adapter where the browser has one), gputable vs @tensorflow/tfjs-backend-webgpu.
import {launchChromium, serveCheckout} from '../scripts/browser.js';

const rows = process.env.BENCH_GPU_ROWS ?? '1000000';
const server = await serveCheckout();
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/bench/webgpu.html?rows=${rows}`);
  await page.waitForFunction(() => window.__bench !== undefined, null, {timeout: 600_000});
  const report = await page.evaluate(() => window.__bench);
  if (report.error) throw new Error(report.error);
  console.log(`# gputable WebGPU benchmark: headless Chromium, adapter "${report.adapter || 'unnamed (SwiftShader)'}", ${report.rows.toLocaleString('en-US')} rows`);
  console.log('median ms of evaluate + readback (gputable also uploads its inputs on every evaluation); tfjs: ops + data()\n');
  console.log('| workload | gputable ms | gputable dispatches | tfjs-backend-webgpu 4.22 ms | tfjs ops | ratio |');
  console.log('|---|---|---|---|---|---|');
  for (const r of report.results) {
    const ratio = r.tfMs / r.gputableMs;
    const verdict = ratio >= 1 ? `${ratio.toFixed(2)}x faster` : `${(1 / ratio).toFixed(2)}x slower`;
    console.log(`| ${r.id} ${r.name} | ${r.gputableMs.toFixed(1)} | ${r.dispatches.replace(' in all', '')} | ${r.tfMs.toFixed(1)} | ${r.peerOps} | ${verdict} |`);
  }
} finally {
  await browser.close();
  server.close();
}
