// The WebGPU backend in headless Chromium (SwiftShader), driven by playwright-core with the
// system Chromium. No adapter is a failure, not a skip.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {launchChromium, serveCheckout} from '../../scripts/browser.js';

test('every op on WebGPU in headless Chromium matches the CPU device', {timeout: 240_000}, async () => {
  const server = await serveCheckout();
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', error => errors.push(String(error)));
    await page.goto(`http://127.0.0.1:${server.address().port}/tests/browser/webgpu.html`);
    await page.waitForFunction(() => window.__results !== undefined, null, {timeout: 200_000});
    const report = await page.evaluate(() => window.__results);
    assert.deepEqual(errors, []);
    assert.equal(report.error, undefined, report.error);
    console.log(`WebGPU adapter: ${report.adapter}`);
    const failed = report.results.filter(r => r.problem);
    assert.deepEqual(failed, [], JSON.stringify(failed, null, 1));
    assert.ok(report.results.length >= 20, `only ${report.results.length} cases ran`);
    assert.ok(report.randomChecked >= 40, `only ${report.randomChecked} random graphs compared`);
    assert.match(report.plan, /^plan on webgpu[ :]/);
    assert.match(report.plan, /1 dispatch in all/);
    assert.equal(report.emptyExtent, 'EMPTY_INPUT');
    assert.equal(report.afterDestroy, 'DESTROYED');
    assert.ok(report.limits.maxStorageBufferBindingSize > 0);
  } finally {
    await browser.close();
    server.close();
  }
});
