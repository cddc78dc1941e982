// The demo page (www/index.html) in headless Chromium on each backend: it must stream the
// Arrow file and group it by its text column, filter, summarise and draw the generated trips
// by the verbs, show the same answers as on the CPU (and as its own JavaScript loop) before
// and after a slider moves, and draw points (a screenshot of the plot has lit pixels, kept in
// target/demo-<device>.png; on WebGPU drawn from the device's count, none of the points read
// back). On WebGPU the benchmark panel runs the peers' benchmark at a small size and charts
// its ratios.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {mkdirSync, writeFileSync} from 'node:fs';
import {checkoutRoot, launchChromium, serveCheckout} from '../../scripts/browser.js';
import {decodePng} from './png.js';

const BENCH = 'bench-rows=20000&bench-reduceRows=1000000&bench-sparseRows=2000&bench-sparseEntries=4000';

async function shownNumbers(page) {
  return page.evaluate(() => ({
    shown: document.getElementById('shown').textContent,
    histogram: JSON.parse(document.getElementById('histogram').dataset.counts),
    vendors: JSON.parse(document.getElementById('vendors').dataset.groups),
    dearest: JSON.parse(document.getElementById('dearest').dataset.rows),
    kernels: document.getElementById('kernels').textContent,
    check: document.getElementById('check').textContent,
    arrow: document.getElementById('arrow').textContent
  }));
}

const close = (a, b) => Math.abs(a - b) <= 1e-5 * Math.abs(b);

/** The numbers a GPU showed are the CPU's: counts exactly, means and prices up to rounding. */
function sameAsCpu(numbers, cpu, device) {
  for (const key of ['shown', 'histogram', 'check', 'arrow']) assert.deepEqual(numbers[key], cpu[key], `${device}: ${key}`);
  assert.deepEqual(numbers.vendors.map(g => [g.vendor, g.trips]), cpu.vendors.map(g => [g.vendor, g.trips]), device);
  numbers.vendors.forEach((g, i) => assert.ok(close(g.meanFare, cpu.vendors[i].meanFare), `${device}: ${g.vendor}'s mean fare`));
  assert.deepEqual(numbers.dearest.map(r => [r.vendor, r.fare]), cpu.dearest.map(r => [r.vendor, r.fare]), device);
  numbers.dearest.forEach((r, i) => assert.ok(close(r.km, cpu.dearest[i].km) && close(r.perKm, cpu.dearest[i].perKm), `${device}: top row ${i}`));
}

async function waitForRender(page, renders) {
  await page.waitForFunction(n => document.body.dataset.state === 'error' || Number(document.body.dataset.renders ?? 0) >= n,
    renders, {timeout: 240_000});
  const state = await page.evaluate(() => document.body.dataset.state);
  assert.equal(state, 'ready', await page.textContent('#status'));
}

/** Pixels of the plot that are not its background. */
async function litPixels(page, device) {
  const png = await page.locator('#plot').screenshot();
  mkdirSync(`${checkoutRoot}target`, {recursive: true});
  writeFileSync(`${checkoutRoot}target/demo-${device}.png`, png);
  const {pixels, channels} = decodePng(png);
  // The plot's background is rgb(18, 20, 26) (views.js).
  let lit = 0;
  for (let i = 0; i < pixels.length; i += channels) {
    if (Math.abs(pixels[i] - 18) + Math.abs(pixels[i + 1] - 20) + Math.abs(pixels[i + 2] - 26) > 24) lit++;
  }
  return lit;
}

test('the demo page filters, draws and reports the same numbers on WebGPU, WebGL2 and the CPU', {timeout: 900_000}, async () => {
  const server = await serveCheckout();
  const browser = await launchChromium({canvas: true});
  try {
    const seen = {};
    for (const device of ['cpu', 'webgpu', 'webgl']) {
      const page = await browser.newPage({viewport: {width: 1400, height: 1000}});
      const errors = [];
      page.on('pageerror', error => errors.push(error.message));
      await page.goto(`http://127.0.0.1:${server.address().port}/www/index.html?device=${device}&rows=100000&${BENCH}`);
      await waitForRender(page, 1);
      assert.equal(await page.evaluate(() => document.body.dataset.device), device);
      const first = await shownNumbers(page);
      assert.match(first.arrow, /trips\.arrow: 20,000 rows in 4 batches/);
      assert.match(first.arrow, /missing fares: 400\n/);
      for (const vendor of ['CMT', 'DDS', 'VTS']) assert.match(first.arrow, new RegExp(`  ${vendor}: 6,66[67] trips, mean fare \\$\\d+\\.\\d\\d`));
      assert.equal(await page.evaluate(() => document.getElementById('progress-text').textContent), '673 of 673 kB, 4 record batches on the device');
      assert.ok(await litPixels(page, device) > 5000, `${device}: the plot drew too few points`);
      // A slider moves: the graph is rebuilt and evaluated again.
      await page.locator('#min-fare').fill('12');
      await waitForRender(page, 2);
      const second = await shownNumbers(page);
      for (const numbers of [first, second]) {
        assert.equal(numbers.check, 'the same answers', device);
        assert.equal(numbers.vendors.length, 5);
        assert.equal(numbers.dearest.length, 10);
        assert.equal(numbers.vendors.reduce((sum, g) => sum + g.trips, 0), Number(numbers.shown.replaceAll(',', '')));
        assert.equal(numbers.histogram.reduce((sum, n) => sum + n, 0), Number(numbers.shown.replaceAll(',', '')));
        const [, kernels, bytes] = numbers.kernels.match(/^(\d+) \w+ in one evaluation, (\d+) bytes read back/);
        assert.ok(Number(kernels) > 0, numbers.kernels);
        // The answers (counts, 24 bins, 5 groups, 10 rows) and no point: far below 100,000 x 12 bytes.
        if (device === 'webgpu') assert.ok(Number(bytes) < 2048, numbers.kernels);
      }
      assert.notEqual(second.shown, first.shown);
      assert.match(await page.textContent('#explain'), /fused elementwise/);
      seen[device] = [first, second];
      if (device === 'webgpu') {
        await page.click('#bench-run');
        await page.waitForFunction(() => document.getElementById('bench-chart').dataset.ratios || document.body.dataset.state === 'error',
          null, {timeout: 300_000});
        const ratios = JSON.parse(await page.evaluate(() => document.getElementById('bench-chart').dataset.ratios ?? '{}'));
        assert.ok(Object.keys(ratios).length >= 5, JSON.stringify(ratios));
        for (const [workload, ratio] of Object.entries(ratios)) assert.ok(Number.isFinite(ratio) && ratio > 0, `${workload}: ${ratio}`);
      }
      assert.deepEqual(errors, [], device);
      await page.close();
    }
    for (const device of ['webgpu', 'webgl']) seen[device].forEach((numbers, i) => sameAsCpu(numbers, seen.cpu[i], device));
  } finally {
    await browser.close();
    server.close();
  }
});
