// The demo page (www/index.html) in headless Chromium on each GPU backend, with the bundled
// Arrow file: it must finish and print the same numbers as on the CPU.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {launchChromium, serveCheckout} from '../../scripts/browser.js';

test('the demo page runs on WebGPU, WebGL2 and the CPU with the same results', {timeout: 300_000}, async () => {
  const server = await serveCheckout();
  const browser = await launchChromium();
  try {
    const outputs = {};
    for (const device of ['cpu', 'webgpu', 'webgl']) {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${server.address().port}/www/index.html?device=${device}&rows=100000`);
      await page.waitForFunction(() => document.body.dataset.done, null, {timeout: 240_000});
      const text = await page.textContent('#out');
      assert.equal(await page.evaluate(() => document.body.dataset.done), 'ok', text);
      assert.match(text, new RegExp(`on the ${device} device`));
      assert.match(text, /GPUTable of 20,000 rows in 4 batches/);
      // Timings and plans differ by device; results must not.
      outputs[device] = text.split('\n').filter(line => /^(first|pickup extent|stats extent|last fares|segmentedMap|startTime|passenger|equalAll|fare per km|missing)/.test(line)).map(line => line.replace(/ \([\d.]+ ms\)$/, ''));
      await page.close();
    }
    assert.ok(outputs.cpu.length >= 10);
    assert.deepEqual(outputs.webgpu, outputs.cpu);
    assert.deepEqual(outputs.webgl, outputs.cpu);
  } finally {
    await browser.close();
    server.close();
  }
});
