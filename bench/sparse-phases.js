// The phases of W6's COO-to-CSR conversion in headless Chromium (not part of `npm run
// bench`): the sort alone, the conversion up to its count and after it, and toCOO of the
// canonical result, which sorts nothing. `node bench/sparse-phases.js webgpu,webgl 1e6`.
import {launchChromium, serveCheckout} from '../scripts/browser.js';
const server = await serveCheckout();
const browser = await launchChromium();
for (const backend of (process.argv[2] ?? 'webgpu').split(',')) {
  const page = await browser.newPage();
  page.on('pageerror', e => console.log('pageerror', e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/bench/sparse-phases.html?backend=${backend}&entries=${process.argv[3] ?? 1e6}`);
  await page.waitForFunction(() => window.result, null, {timeout: 590000});
  const {adapter, out} = await page.evaluate(() => window.result);
  console.log(`${backend} (${adapter})`);
  for (const {name, ms, kernels} of out) console.log(`  ${name}: ${ms} ms, ${kernels} kernels`);
  await page.close();
}
await browser.close();
server.close();
