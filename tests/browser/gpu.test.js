// The GPU backends in headless Chromium: WebGPU (SwiftShader) and WebGL2 (ANGLE on
// SwiftShader), driven by playwright-core with the system Chromium. No adapter is a failure,
// not a skip.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {launchChromium, serveCheckout} from '../../scripts/browser.js';

async function runSuite(backend) {
  const server = await serveCheckout();
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', error => errors.push(String(error)));
    await page.goto(`http://127.0.0.1:${server.address().port}/tests/browser/gpu.html?backend=${backend}`);
    // A page that fails to load (a syntax error) fails now, not at the timeout.
    const broken = new Promise((_, reject) => page.on('pageerror', reject));
    broken.catch(() => {}); // a later page error is reported through `errors` below
    await Promise.race([page.waitForFunction(() => window.__results !== undefined, null, {timeout: 280_000}), broken]);
    const report = await page.evaluate(() => window.__results);
    assert.deepEqual(errors, []);
    assert.equal(report.error, undefined, report.error);
    console.log(`${backend} adapter: ${report.adapter}`);
    const failed = report.results.filter(r => r.problem);
    assert.deepEqual(failed, [], JSON.stringify(failed, null, 1));
    assert.ok(report.results.length >= 20, `only ${report.results.length} cases ran`);
    assert.ok(report.results.length >= 36, `only ${report.results.length} checks ran`);
    assert.ok(report.results.some(r => r.name.startsWith('every reduction of every type')), 'the reduction checks ran');
    assert.ok(report.randomChecked >= 40, `only ${report.randomChecked} random graphs compared`);
    assert.ok(report.randomChecked + report.randomRefused === 60, 'every random graph was compared or refused alike');
    assert.equal(report.emptyExtent, 'EMPTY_INPUT');
    assert.equal(report.destroyedWhileEvaluating, null, 'destroying the device during an evaluation');
    assert.equal(report.afterDestroy, 'DESTROYED');
    assert.equal(report.arrowRoundTrip, null, 'apache-arrow IPC round trip through the device');
    assert.equal(report.budget, null, 'a column 8 x larger than allowedMem streams through the device, cut to fit');
    assert.equal(report.budgetJoin, null, 'a table join over allowedMem is joined a range of rows at a time within it');
    return report;
  } finally {
    await browser.close();
    server.close();
  }
}

test('every op on WebGPU in headless Chromium matches the CPU device', {timeout: 300_000}, async () => {
  const report = await runSuite('webgpu');
  assert.match(report.plan, /^plan on webgpu[ :]/);
  assert.match(report.plan, /1 dispatch in all/);
  assert.ok(report.limits.maxStorageBufferBindingSize > 0);
  assert.equal(report.budgetSort, null, 'a sort over twice allowedMem runs in runs and a merge within it');
  assert.equal(report.subgroupSort, null, 'the radix sort ranks rows by subgroup ballots (SwiftShader offers them)');
});

test('every op on WebGL2 in headless Chromium matches the CPU device, in a page and a worker', {timeout: 300_000}, async () => {
  const report = await runSuite('webgl');
  assert.match(report.plan, /^plan on webgl[ :]/);
  assert.match(report.plan, /1 draw in all/);
  assert.ok(report.limits.maxTextureDimension2D >= 2048);
  assert.deepEqual(report.worker, {type: 'webgl', fused: [1.5, 2.5, 3.5, 4.5], extent: [-32, -2]});
});
