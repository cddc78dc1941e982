// The WebGPU backend in headless Chromium (SwiftShader), driven by playwright-core with the
// system Chromium. No adapter is a failure, not a skip.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {createServer} from 'node:http';
import {readFile} from 'node:fs/promises';
import {extname, join, normalize} from 'node:path';
import {chromium} from 'playwright-core';

const root = new URL('../..', import.meta.url).pathname;
const types = {'.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm'};

function serve() {
  const server = createServer(async (request, response) => {
    const file = join(root, normalize(decodeURIComponent(new URL(request.url, 'http://x').pathname)));
    let body;
    try {
      body = await readFile(file);
    } catch {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, {'content-type': types[extname(file)] ?? 'application/octet-stream'}).end(body);
  });
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('every op on WebGPU in headless Chromium matches the CPU device', {timeout: 240_000}, async () => {
  const server = await serve();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--enable-unsafe-webgpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--disable-quic', '--no-first-run']
  });
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
    assert.match(report.plan, /^plan on webgpu[ :]/);
    assert.match(report.plan, /1 dispatch in all/);
    assert.equal(report.emptyExtent, 'EMPTY_INPUT');
    assert.ok(report.limits.maxStorageBufferBindingSize > 0);
  } finally {
    await browser.close();
    server.close();
  }
});
